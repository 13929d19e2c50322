"""ember/autograd/functional.py: jacobian, hessian, vjp, jvp, hvp, vhp against torch.autograd.functional:
values, the nesting of the returned tuples, create_graph (the results are differentiated again by
check_op's backward) and strict mode's errors."""
import numpy as np
import pytest
import torch

import ember
from helpers import NoGrad, check_op, raises_as_torch


def scalar_fn(x):
    return (x.exp() * x.sin()).sum()


def vector_fn(x):
    return x.tanh() * x.sum(-1, keepdim=True)   # (2, 3) -> (2, 3)


def tuple_fn(x, y):
    return x * y.sum(), (x ** 2).sum() + y.sin()   # ((2, 3), (3,)) -> ((2, 3), (3,))


def two_input_scalar_fn(x, y):
    return (x.sin() * y.unsqueeze(0)).sum() + (y ** 3).sum()


def unused_input_fn(x, y):
    return x ** 2   # independent of y


def linear_fn(x):
    return 3 * x   # its jacobian does not depend on x


def F(lib):
    return lib.autograd.functional


@pytest.mark.parametrize("create_graph", [False, True])
def test_jacobian_single_tuple_and_nested(create_graph):
    kw = dict(create_graph=create_graph)
    t, e = check_op(lambda L, x: F(L).jacobian(vector_fn, x, **kw), (2, 3))
    assert e.shape == (2, 3, 2, 3) and e.requires_grad == t.requires_grad == create_graph
    t, e = check_op(lambda L, x: F(L).jacobian(scalar_fn, x, **kw), (4,))
    assert e.shape == (4,) and e.requires_grad == create_graph
    # tuple in, tuple out: J[i][j] is output i by input j
    t, e = check_op(lambda L, x, y: F(L).jacobian(tuple_fn, (x, y), **kw), (2, 3), (3,))
    assert isinstance(e, tuple) and all(isinstance(r, tuple) and len(r) == 2 for r in e)
    assert [[tuple(j.shape) for j in r] for r in e] == [[(2, 3, 2, 3), (2, 3, 3)], [(3, 2, 3), (3, 3)]]
    # one input in a tuple, one output: a tuple of one
    t, e = check_op(lambda L, x: F(L).jacobian(vector_fn, (x,), **kw), (2, 3))
    assert isinstance(e, tuple) and len(e) == 1
    # tuple in, single out: a flat tuple; y unused gives zeros
    t, e = check_op(lambda L, x, y: F(L).jacobian(unused_input_fn, (x, y), **kw), (3,), (2,))
    assert isinstance(e, tuple) and len(e) == 2 and not ember.Tensor.any(e[1])


def test_jacobian_vectorize_and_forward_mode():
    check_op(lambda L, x, y: F(L).jacobian(tuple_fn, (x, y), vectorize=True), (2, 3), (3,))
    check_op(lambda L, x, y: F(L).jacobian(tuple_fn, (x, y), vectorize=True, create_graph=True), (2, 3), (3,))
    check_op(lambda L, x, y: F(L).jacobian(tuple_fn, (x, y), vectorize=True, strategy="forward-mode"),
             (2, 3), (3,))
    check_op(lambda L, x: F(L).jacobian(vector_fn, x, vectorize=True, strategy="forward-mode"), (2, 3))
    check_op(lambda L, x, y: F(L).jacobian(unused_input_fn, (x, y), vectorize=True, strategy="forward-mode"),
             (3,), (2,))


def test_jacobian_of_a_function_that_closes_over_the_input():
    # inputs are fresh tensors inside: a function that also captures the caller's x sees a constant
    def run(L, x):
        return F(L).jacobian(lambda z: z * x, x)
    check_op(run, (3,))


@pytest.mark.parametrize("create_graph", [False, True])
def test_hessian(create_graph):
    kw = dict(create_graph=create_graph)
    t, e = check_op(lambda L, x: F(L).hessian(scalar_fn, x, **kw), (2, 2))
    assert e.shape == (2, 2, 2, 2) and e.requires_grad == create_graph
    t, e = check_op(lambda L, x, y: F(L).hessian(two_input_scalar_fn, (x, y), **kw), (2, 3), (3,))
    assert [[tuple(h.shape) for h in r] for r in e] == [[(2, 3, 2, 3), (2, 3, 3)], [(3, 2, 3), (3, 3)]]
    check_op(lambda L, x: F(L).hessian(lambda z: (z ** 4).sum(), x, vectorize=True, **kw), (3,))


def test_hessian_forward_over_reverse():
    check_op(lambda L, x, y: F(L).hessian(two_input_scalar_fn, (x, y), vectorize=True,
                                          outer_jacobian_strategy="forward-mode"), (2, 3), (3,))


@pytest.mark.parametrize("name", ["vjp", "jvp"])
@pytest.mark.parametrize("create_graph", [False, True])
def test_vjp_jvp(name, create_graph):
    kw = dict(create_graph=create_graph)
    t, e = check_op(lambda L, x, v: getattr(F(L), name)(vector_fn, x, v, **kw), (2, 3), (2, 3))
    assert e[0].requires_grad == e[1].requires_grad == create_graph
    # v=None for a one-element output (vjp) or input (jvp)
    if name == "vjp":
        check_op(lambda L, x: F(L).vjp(scalar_fn, x, **kw), (3,))
        t, e = check_op(lambda L, x, y, v, w: F(L).vjp(tuple_fn, (x, y), (v, w), **kw), (2, 3), (3,), (2, 3), (3,))
        assert isinstance(e[0], tuple) and isinstance(e[1], tuple) and e[1][1].shape == (3,)
        check_op(lambda L, x, y, v: F(L).vjp(unused_input_fn, (x, y), v, **kw), (3,), (2,), (3,))
    else:
        check_op(lambda L, x: F(L).jvp(lambda z: z.exp() * 2, x, **kw), (1,))
        t, e = check_op(lambda L, x, y, v, w: F(L).jvp(tuple_fn, (x, y), (v, w), **kw), (2, 3), (3,), (2, 3), (3,))
        assert isinstance(e[0], tuple) and isinstance(e[1], tuple) and e[1][0].shape == (2, 3)
        check_op(lambda L, x, y, v, w: F(L).jvp(unused_input_fn, (x, y), (v, w), **kw), (3,), (2,), (3,), (2,))
    # v that does not require grad
    check_op(lambda L, x, v: getattr(F(L), name)(vector_fn, x, v, **kw), (2, 3), NoGrad((2, 3)))


@pytest.mark.parametrize("name", ["hvp", "vhp"])
@pytest.mark.parametrize("create_graph", [False, True])
def test_hvp_vhp(name, create_graph):
    kw = dict(create_graph=create_graph)
    t, e = check_op(lambda L, x, v: getattr(F(L), name)(scalar_fn, x, v, **kw), (2, 3), (2, 3))
    assert e[0].shape == () and e[1].shape == (2, 3) and e[1].requires_grad == create_graph
    t, e = check_op(lambda L, x, y, v, w: getattr(F(L), name)(two_input_scalar_fn, (x, y), (v, w), **kw),
                    (2, 3), (3,), (2, 3), (3,))
    assert isinstance(e[1], tuple) and len(e[1]) == 2
    check_op(lambda L, x: getattr(F(L), name)(lambda z: z.exp().sum() ** 2, x, **kw), (1,))


def test_hvp_equals_vhp_transposed_on_a_non_symmetric_case():
    # H is symmetric for a smooth function, so hvp == vhp; both equal hessian @ v
    x, v = ember.randn(3, dtype=ember.float64), ember.randn(3, dtype=ember.float64)
    fn = lambda z: (z.exp() * z.roll(1)).sum()
    h = F(ember).hessian(fn, x)
    _, hv = F(ember).hvp(fn, x, v)
    _, vh = F(ember).vhp(fn, x, v)
    np.testing.assert_allclose(hv.numpy(), (h @ v).numpy(), rtol=1e-12)
    np.testing.assert_allclose(vh.numpy(), (v @ h).numpy(), rtol=1e-12)


def test_results_leave_inputs_and_their_grad_alone():
    x = ember.randn(3, requires_grad=True)
    out, g = F(ember).vjp(lambda z: (z ** 2).sum(), x)
    assert x.grad is None and not out.requires_grad and not g.requires_grad
    out, g = F(ember).vjp(lambda z: (z ** 2).sum(), x, create_graph=True)
    (d,) = ember.autograd.grad(g.sum(), x)   # d/dx sum(2x) = 2
    np.testing.assert_allclose(d.numpy(), 2.0)


def _pair(L, shape=(3,)):
    return L.tensor(np.linspace(0.5, 1.5, int(np.prod(shape))).reshape(shape))


STRICT_CASES = [
    ("vjp, output independent of an input",
     lambda L: F(L).vjp(unused_input_fn, (_pair(L), _pair(L, (2,))), _pair(L), strict=True),
     "The output of the user-provided function is independent of input 1. This is not allowed in strict mode."),
    ("vjp, output that does not require grad",
     lambda L: F(L).vjp(lambda z: L.ones(3), _pair(L), _pair(L), strict=True),
     "Output 0 of the user-provided function does not require gradients."),
    ("jvp, output independent of an input",
     lambda L: F(L).jvp(unused_input_fn, (_pair(L), _pair(L, (2,))), (_pair(L), _pair(L, (2,))), strict=True),
     "The output of the user-provided function is independent of input 1. This is not allowed in strict mode."),
    ("jacobian, output independent of an input",
     lambda L: F(L).jacobian(unused_input_fn, (_pair(L), _pair(L, (2,))), strict=True),
     "Output 0 of the user-provided function is independent of input 1. This is not allowed in strict mode."),
    ("jacobian, strict and create_graph on a linear function",
     lambda L: F(L).jacobian(linear_fn, _pair(L), strict=True, create_graph=True),
     "The jacobian of the user-provided function is independent of input 0. This is not allowed in strict "
     "mode when create_graph=True."),
    ("hessian of a linear function",
     lambda L: F(L).hessian(lambda z: (3 * z).sum(), _pair(L), strict=True),
     "While computing the hessian, found that the jacobian of the user-provided function with respect to "
     "input 0 is independent of the input."),
    ("vhp of a linear function",
     lambda L: F(L).vhp(lambda z: (3 * z).sum(), _pair(L), _pair(L), strict=True),
     "While computing the hessian, found that the jacobian of the user-provided function with respect to "
     "input 0 is independent of the input."),
    ("hvp of a quadratic, create_graph",
     lambda L: F(L).hvp(lambda z: (z * z).sum(), _pair(L), _pair(L), strict=True, create_graph=True),
     "The hessian of the user-provided function is independent of input 0. This is not allowed in strict "
     "mode when create_graph=True."),
    ("vhp of a quadratic, create_graph",
     lambda L: F(L).vhp(lambda z: (z * z).sum(), _pair(L), _pair(L), strict=True, create_graph=True),
     "The hessian of the user-provided function is independent of input 0. This is not allowed in strict "
     "mode when create_graph=True."),
    ("jacobian, strict and vectorize",
     lambda L: F(L).jacobian(vector_fn, _pair(L, (2, 3)), strict=True, vectorize=True),
     "`strict=True` and `vectorized=True` are not supported together."),
    ("jacobian, forward-mode and strict",
     lambda L: F(L).jacobian(vector_fn, _pair(L, (2, 3)), strict=True, vectorize=True, strategy="forward-mode"),
     '`strict=True` and `strategy="forward-mode"` are not supported together (yet).'),
]


@pytest.mark.parametrize("case", STRICT_CASES, ids=[c[0] for c in STRICT_CASES])
def test_strict_mode_errors_as_torch(case):
    _, call, message = case
    e = raises_as_torch(call, RuntimeError, message)
    assert "(at test_functional.py:" in str(e)


def test_strict_mode_passes_when_every_input_is_used():
    _, g = F(ember).vjp(scalar_fn, _pair(ember), strict=True)
    assert g.shape == (3,)
    assert F(ember).hessian(lambda z: (z ** 3).sum(), _pair(ember), strict=True).shape == (3, 3)


ERROR_CASES = [
    (lambda L: F(L).vjp(vector_fn, _pair(L, (2, 3))), RuntimeError,
     "The vector v can only be None if the user-provided function returns a single Tensor with a single element."),
    (lambda L: F(L).jvp(vector_fn, _pair(L, (2, 3))), RuntimeError,
     "The vector v can only be None if the input to the user-provided function is a single Tensor with a "
     "single element."),
    (lambda L: F(L).hvp(scalar_fn, _pair(L)), RuntimeError,
     "The vector v can only be None if the input to the user-provided function is a single Tensor with a "
     "single element."),
    (lambda L: F(L).vjp(vector_fn, _pair(L, (2, 3)), L.ones(3)), RuntimeError,
     "v has invalid size: should be (2, 3) but got (3,).", "v has invalid size: should be torch.Size([2, 3])"),
    (lambda L: F(L).jvp(tuple_fn, (_pair(L, (2, 3)), _pair(L)), (L.ones(2, 3), L.ones(2))), RuntimeError,
     "Entry 1 in v has invalid size: should be (3,) but got (2,).",
     "Entry 1 in v has invalid size: should be torch.Size([3])"),
    (lambda L: F(L).jvp(tuple_fn, (_pair(L, (2, 3)), _pair(L)), (L.ones(2, 3),)), RuntimeError,
     "v is a tuple of invalid length: should be 2 but got 1."),
    (lambda L: F(L).vjp(vector_fn, _pair(L, (2, 3)), (L.ones(2, 3), L.ones(2, 3))), RuntimeError,
     "The given v should contain a single Tensor."),
    (lambda L: F(L).jacobian(vector_fn, [1.0, 2.0]), TypeError,
     "The inputs given to jacobian must be either a Tensor or a tuple of Tensors but the given inputs has type"),
    (lambda L: F(L).vjp(vector_fn, (_pair(L), 2.0)), TypeError,
     "The inputs given to vjp must be either a Tensor or a tuple of Tensors but the value at index 1 has type"),
    (lambda L: F(L).jacobian(lambda z: [z], _pair(L)), TypeError,
     "The outputs of the user-provided function given to jacobian must be either a Tensor or a tuple of Tensors"),
    (lambda L: F(L).hessian(vector_fn, _pair(L, (2, 3))), RuntimeError,
     "The Tensor returned by the function given to hessian should contain a single element"),
    (lambda L: F(L).hessian(lambda z: (z.sum(), z.sum()), _pair(L)), RuntimeError,
     "The function given to hessian should return a single Tensor"),
    (lambda L: F(L).vhp(lambda z: (z.sum(),), _pair(L), _pair(L)), RuntimeError,
     "The function given to vhp should return a single Tensor"),
    (lambda L: F(L).hvp(lambda z: z * 2, _pair(L), _pair(L)), RuntimeError,
     "The Tensor returned by the function given to hvp should contain a single element"),
    (lambda L: F(L).jacobian(vector_fn, _pair(L), strategy="middle-out"), AssertionError,
     'Expected strategy to be either "forward-mode" or "reverse-mode"'),
    (lambda L: F(L).hessian(scalar_fn, _pair(L), outer_jacobian_strategy="x"), AssertionError,
     'Expected strategy to be either "forward-mode" or "reverse-mode"'),
    (lambda L: F(L).jacobian(vector_fn, _pair(L), strategy="forward-mode"), NotImplementedError,
     "Computing Jacobian using forward-AD or forward-over-reverse Hessian is"),
    (lambda L: F(L).jacobian(vector_fn, _pair(L), strategy="forward-mode", vectorize=True, create_graph=True),
     NotImplementedError, '`create_graph=True` and `strategy="forward-mode"` are not supported together (yet).'),
]


@pytest.mark.parametrize("case", ERROR_CASES, ids=range(len(ERROR_CASES)))
def test_errors_as_torch(case):
    call, exc, fragment, *torch_fragment = case
    raises_as_torch(call, exc, fragment, *torch_fragment)
