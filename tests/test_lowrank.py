"""torch.svd_lowrank and torch.pca_lowrank against torch. The methods are randomized (torch draws its test
matrix from torch's generator, Ember from Ember's), so the checks use inputs of rank <= q, whose result
is determined: singular values and their gradients through check_op, and the sign-free products U S V^T
and U U^T; plus shapes, dtypes, seeding and errors."""
import numpy as np
import pytest
import torch

import ember
from helpers import check_op

TOL = dict(atol=1e-4, rtol=1e-4, grad_atol=1e-3, grad_rtol=1e-3)


def _products(out):
    U, S, V = out
    return S, (U * S.unsqueeze(-2)) @ V.mT, U @ U.mT


@pytest.mark.parametrize("m,n,r,q,niter", [(6, 4, 2, 2, 2), (4, 7, 2, 2, 2), (5, 5, 3, 3, 0), (8, 6, 1, 1, 1)])
def test_svd_lowrank_of_low_rank_input(m, n, r, q, niter):
    # S and its gradient; the reconstruction and the range projector (values only: for an input perturbed off
    # rank r their derivatives depend on the random test matrix)
    check_op(lambda L, x, y: L.svd_lowrank(x @ y, q=q, niter=niter)[1], (m, r), (r, n), **TOL)
    check_op(lambda L, x, y: _products(L.svd_lowrank(x @ y, q=q, niter=niter))[1:], (m, r), (r, n), grad=False,
             **TOL)


def test_svd_lowrank_batched_extra_columns_and_M():
    check_op(lambda L, x, y: _products(L.svd_lowrank(x @ y, q=4))[:2], (2, 7, 2), (2, 2, 5), grad=False, **TOL)
    check_op(lambda L, x, y, mean: L.svd_lowrank(x @ y + mean, q=2, M=mean)[1], (6, 2), (2, 5), (1, 5), **TOL)
    U, S, V = ember.svd_lowrank(ember.randn(3, 9, 7))
    assert (U.shape, S.shape, V.shape) == ((3, 9, 6), (3, 6), (3, 7, 6))
    assert ember.svd_lowrank(ember.randn(5, 4, dtype=ember.float64), q=2)[0].dtype == ember.float64


@pytest.mark.parametrize("center", [True, False])
def test_pca_lowrank(center):
    check_op(lambda L, x, y: L.pca_lowrank(x @ y, q=2, center=center)[1], (7, 2), (2, 5), **TOL)
    check_op(lambda L, x, y: _products(L.pca_lowrank(x @ y, q=2, center=center))[1:], (2, 7, 2), (2, 2, 5),
             grad=False, **TOL)
    U, S, V = ember.pca_lowrank(ember.randn(10, 3))
    assert (U.shape, S.shape, V.shape) == ((10, 3), (3,), (3, 3))     # q = min(6, m, n)


def test_lowrank_follows_embers_seed():
    a = ember.randn(8, 6)
    ember.manual_seed(3)
    first = ember.svd_lowrank(a, q=3, niter=0)[0]
    ember.manual_seed(3)
    assert ember.equal(first, ember.svd_lowrank(a, q=3, niter=0)[0])


def test_lowrank_errors():
    for lib in (torch, ember):
        with pytest.raises(ValueError, match=r"q\(=4\) must be non-negative integer and not greater than min\(m, n\)=3"):
            lib.pca_lowrank(lib.ones(5, 3), q=4)
        with pytest.raises(ValueError, match=r"niter\(=-1\) must be non-negative integer"):
            lib.pca_lowrank(lib.ones(5, 3), niter=-1)
    with pytest.raises(RuntimeError, match=r"svd_lowrank: A must have at least 2 dimensions \(A \(3,\) float32"):
        ember.svd_lowrank(ember.ones(3))
    with pytest.raises(RuntimeError, match=r"pca_lowrank: A must be a floating point tensor"):
        ember.pca_lowrank(ember.ones(3, 3, dtype=ember.int64))


@pytest.mark.parametrize("name", ["ember._lowrank"])
def test_docstring_examples(name):
    import doctest
    import importlib
    result = doctest.testmod(importlib.import_module(name), extraglobs={"ember": ember}, report=True)
    assert result.attempted > 0 and result.failed == 0
