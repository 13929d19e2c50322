"""ember/autograd/variable.py: torch's deprecated `Variable`, which makes a Tensor, as torch's."""
import warnings

import numpy as np
import pytest
import torch

import ember
from helpers import check_op, raises_as_torch


@pytest.mark.parametrize("requires_grad", [False, True])
def test_variable_returns_a_leaf_tensor_sharing_memory(requires_grad):
    for L in (torch, ember):
        t = L.tensor([1.0, 2.0])
        v = L.autograd.Variable(t, requires_grad=requires_grad)
        assert type(v) is L.Tensor and v is not t and v.is_leaf
        assert v.requires_grad is requires_grad and not t.requires_grad
        with L.no_grad():
            v[0] = 5.0   # the same memory
        assert t.tolist() == [5.0, 2.0]
        assert isinstance(t, L.autograd.Variable) and not isinstance(3, L.autograd.Variable)


def test_variable_of_a_non_leaf_and_of_a_parameter_is_a_new_leaf():
    for L in (torch, ember):
        a = L.ones(2, requires_grad=True) * 2
        v = L.autograd.Variable(a)
        assert v.grad_fn is None and v.is_leaf and not v.requires_grad
        p = L.nn.Parameter(L.ones(2))
        assert type(L.autograd.Variable(p, True)) is L.Tensor


def test_variable_in_a_computation():
    # gradients flow to the Variable (a leaf), not to the tensor it was made from
    check_op(lambda L, x: (L.autograd.Variable(x.detach() * 2, requires_grad=True) * x).sum(), (3,))


def test_variable_with_no_data_is_empty_and_volatile_warns():
    for L in (torch, ember):
        e = L.autograd.Variable()
        assert tuple(e.shape) == (0,) and e.dtype == L.float32
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            v = L.autograd.Variable(L.ones(2), volatile=True)
        assert "volatile was removed and now has no effect" in str(w[0].message)
        assert np.asarray(v.tolist()).sum() == 2


def test_variable_errors_as_torch():
    raises_as_torch(lambda L: L.autograd.Variable(3), TypeError, "Variable data has to be a tensor, but got int")
    raises_as_torch(lambda L: L.autograd.Variable([1.0]), TypeError,
                    "Variable data has to be a tensor, but got list")
    raises_as_torch(lambda L: L.autograd.Variable(L.ones(2, dtype=L.int64), requires_grad=True), RuntimeError,
                    "only Tensors of floating point dtype can require gradients",
                    "Only Tensors of floating point and complex dtype can require gradients")
