"""ember/ops/inplace.py: the no-graph path of add_/sub_/mul_/div_ (`write_direct`: dtype rules, devices,
shapes, as torch), `assign` and the version names that autograd's stale-tensor error reports."""
import numpy as np
import pytest
import torch

import ember
from ember.ops.inplace import assign
from helpers import raises_exactly

OPS = ["add_", "sub_", "mul_", "div_"]


@pytest.mark.parametrize("name", OPS)
def test_other_dtype_is_computed_in_selfs_dtype_when_it_is_the_result_type(name):
    """float32 self, int64 other: the result type is float32, so torch computes in float32 (2**24 + 1
    rounds to 2**24 first); a float64 other makes the result type float64: computed there, then stored."""
    cases = [("float32", [1.0, 3.0], "int64", [2 ** 24 + 1, 7]), ("float16", [1.0, 3.0], "float64", [2049.0, 0.1]),
             ("float16", [1.0, 3.0], "int64", [2049, 3]), ("int32", [5, 9], "int64", [2, 3]),
             ("float32", [1.5, 2.5], "bool", [True, True]), ("uint8", [250, 3], "int64", [10, 2])]
    for sdt, s, odt, o in cases:
        if (name == "div_" and not sdt.startswith("float")) or (name == "sub_" and odt == "bool"):
            continue   # torch refuses these (integer true division in place, subtracting a bool)
        t = torch.tensor(s, dtype=getattr(torch, sdt))
        getattr(t, name)(torch.tensor(o, dtype=getattr(torch, odt)))
        e = ember.tensor(s, dtype=getattr(ember, sdt))
        assert getattr(e, name)(ember.tensor(o, dtype=getattr(ember, odt))) is e
        assert e.dtype.name == sdt and e.tolist() == t.tolist(), (sdt, odt, e.tolist(), t.tolist())


@pytest.mark.parametrize("name", OPS)
def test_result_type_that_does_not_fit_is_refused(name):
    for other, torch_other in [(ember.tensor([0.5, 1.0]), torch.tensor([0.5, 1.0])), (1.5, 1.5)]:
        with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
            getattr(torch.ones(2, dtype=torch.int64), name)(torch_other)
        raises_exactly(lambda: getattr(ember.ones(2, dtype=ember.int64), name)(other), RuntimeError,
                       f"{name}: result type float32 can't be cast to the desired output type int64")
    rt = "float32" if name == "div_" else "int64"
    message = f"{name}: result type {rt} can't be cast to the desired output type bool"
    if name == "sub_":   # torch: bool.sub_(2) is the error of any subtraction with a bool tensor
        message = ("sub: subtraction, the `-` operator, with a bool tensor is not supported; to invert a mask "
                   "use the `~` or `logical_not()` operator instead")
    raises_exactly(lambda: getattr(ember.ones(2, dtype=ember.bool), name)(2), RuntimeError, message)


@pytest.mark.parametrize("name", OPS)
def test_shape_that_does_not_broadcast_into_self(name):
    with pytest.raises(RuntimeError):
        getattr(torch.ones(1, 3), name)(torch.ones(3, 3))
    for other in ((3, 3), (4,)):
        raises_exactly(lambda: getattr(ember.ones(1, 3), name)(ember.ones(*other)), RuntimeError,
                       f"{name}: output with shape (1, 3) doesn't match the broadcast shape of the operands (1, 3) "
                       f"and {other}")


@pytest.mark.parametrize("name", OPS)
def test_other_on_another_device(name, fake_cuda):
    raises_exactly(lambda: getattr(ember.ones(2), name)(ember.ones(2, device="cuda")), RuntimeError,
                   f"{name}: expected all tensors on cpu, got cuda:0")
    raises_exactly(lambda: getattr(ember.ones(2), name)(ember.tensor(2.0, device="cuda")), RuntimeError,
                   f"{name}: expected all tensors on cpu, got cuda:0")
    c, t = ember.ones(2, device="cuda"), torch.ones(2)
    assert getattr(c, name)(ember.tensor(2.0)) is c and c.device.type == "cuda"   # a CPU scalar joins (was refused)
    assert c.tolist() == getattr(t, name)(torch.tensor(2.0)).tolist()


@pytest.mark.parametrize("name,args", [("add_", (1.0,)), ("mul_", (ember.tensor(2.0),)), ("fill_", (0.0,)),
                                       ("zero_", ())])
def test_the_stale_tensor_error_names_the_inplace_op(name, args):
    a = ember.ones(3, requires_grad=True)
    b = a * 1
    c = b * b   # saves b
    with ember.no_grad():
        getattr(b, name)(*args)
    with pytest.raises(RuntimeError, match=rf"modified by an inplace operation \({name}\)"):
        c.sum().backward()


def test_assign_with_an_op_and_a_key():
    x = ember.tensor([1.0, 2.0, 3.0])
    assert assign(x, ember.tensor([10.0, 20.0, 30.0]), op="add") is x and x.tolist() == [11.0, 22.0, 33.0]
    assign(x, value=2.0, op="mul")
    assert x.tolist() == [22.0, 44.0, 66.0]
    assign(x, ember.tensor([1.0]), op="sub", key=(slice(0, 2),))
    assert x.tolist() == [21.0, 43.0, 66.0]
    assign(x, value=5.0, key=(2,))
    assert x.tolist() == [21.0, 43.0, 5.0]
    v = x._version
    assign(x, value=0.0)
    assert x._version == v + 1 and x.tolist() == [0.0, 0.0, 0.0]


def test_a_scalar_is_taken_in_selfs_dtype():
    """2**-24 + 2**-50 is 2**-24 in float32: 1 + it is a tie that rounds to 1 (in float64 it would not)."""
    v = 2 ** -24 + 2 ** -50
    t, e = torch.tensor([1.0]), ember.tensor([1.0])
    t.add_(v)
    assert e.add_(v).tolist() == t.tolist() == [1.0]
    e = ember.tensor([1.0, 2.0, 3.0])
    assign(e, value=v, op="add", key=(slice(0, 2),))
    assert e.tolist() == [1.0, 2.0, 3.0]


LEAF = ("a leaf Variable that requires grad is being used in an in-place operation; wrap it in "
        "`with ember.no_grad():` or use the out-of-place op")


@pytest.mark.parametrize("call,name", [(lambda L, x: x.add_(1), "add_"), (lambda L, x: x.exp_(), "exp_"),
                                       (lambda L, x: x.mul_(L.ones(2)), "mul_")])
def test_an_inplace_op_on_a_leaf_that_requires_grad(call, name):
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        call(torch, torch.ones(2, requires_grad=True))
    raises_exactly(lambda: call(ember, ember.ones(2, requires_grad=True)), RuntimeError, f"{name}: {LEAF}")


def test_inplace_errors_on_the_graph_path():
    a = ember.ones(3, requires_grad=True) * 1
    raises_exactly(lambda: a[0:2].exp_(), NotImplementedError,
                   "exp_: in-place modification of a view of a tensor that requires grad is not supported; use the "
                   "out-of-place op (e.g. `x = x.index_put(...)`)")
    raises_exactly(lambda: ember.ones(1, 3).mul_(ember.ones(3, 3, requires_grad=True)), RuntimeError,
                   "mul_: output with shape (1, 3) doesn't match the broadcast shape (3, 3)")
    raises_exactly(lambda: ember.ones(2, dtype=ember.int64).add_(ember.ones(2, requires_grad=True)), RuntimeError,
                   "add_: result type float32 can't be cast to the desired output type int64")


def test_graph_path_keeps_selfs_dtype_and_records_the_op():
    for sdt, odt in [("float32", "float64"), ("float64", "float32"), ("float16", "float32")]:
        o = torch.tensor([0.1, 2.0], dtype=getattr(torch, odt), requires_grad=True)
        t = torch.tensor([1.0, 3.0], dtype=getattr(torch, sdt)).add_(o)
        oe = ember.tensor([0.1, 2.0], dtype=getattr(ember, odt), requires_grad=True)
        e = ember.tensor([1.0, 3.0], dtype=getattr(ember, sdt)).add_(oe)
        assert e.dtype.name == sdt and e.requires_grad and e.tolist() == t.tolist()
        e.sum().backward()
        t.sum().backward()
        assert oe.grad.dtype.name == odt and oe.grad.tolist() == o.grad.tolist()
    a = ember.ones(3, requires_grad=True)
    b = a * 1
    c = b * b   # saves b
    b.exp_()    # with the graph: the exp node is b's history now
    with pytest.raises(RuntimeError, match=r"modified by an inplace operation \(exp_\)"):
        c.sum().backward()


def test_graph_path_on_the_device(fake_cuda):
    x = ember.ones(3, device="cuda", requires_grad=True)
    y = x * 2
    y.exp_()
    y.sum().backward()
    assert y.device.type == "cuda" and x.grad.device.type == "cuda"
    np.testing.assert_allclose(x.grad.cpu().numpy(), 2 * np.exp(2.0) * np.ones(3), rtol=1e-6)
    raises_exactly(lambda: ember.tensor(1.0).add_(ember.ones((), device="cuda", requires_grad=True)), RuntimeError,
                   "add_: expected all tensors on cpu, got cuda:0")


def test_inplace_on_the_second_output_of_a_node():
    """The in-place op's graph takes the tensor's place among its node's outputs (output 1 here, not 0)."""
    for L in (torch, ember):
        class Two(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2, x * 3

            @staticmethod
            def backward(ctx, g0, g1):
                return g0 * 2 + g1 * 3
        a = L.ones(2, requires_grad=True)
        _, q = Two.apply(a)
        q.mul_(5)
        q.sum().backward()
        assert a.grad.tolist() == [15.0, 15.0], L.__name__
