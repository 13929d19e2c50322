"""ember/autograd/function.py: custom Functions as in torch (the seeds' MyReLU exactly)."""
import numpy as np
import pytest
import torch

import ember
from ember.autograd import gradcheck


def make_relu(lib):
    class MyReLU(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.clamp(min=0)

        @staticmethod
        def backward(ctx, grad_y):
            x, = ctx.saved_tensors
            grad_input = grad_y.clone()
            grad_input[x < 0] = 0
            return grad_input
    return MyReLU


def test_seed_relu_matches_torch():
    data = np.random.default_rng(0).standard_normal((4, 5))
    out = {}
    for L in (ember, torch):
        relu = make_relu(L)
        x = L.tensor(data, requires_grad=True)
        w = L.tensor(data.T.copy(), requires_grad=True)
        y = relu.apply(x @ w).sum()
        y.backward()
        out[L.__name__] = (y.item(), x.grad.numpy().copy(), w.grad.numpy().copy())
    assert out["ember"][0] == pytest.approx(out["torch"][0])
    np.testing.assert_allclose(out["ember"][1], out["torch"][1], rtol=1e-10)
    np.testing.assert_allclose(out["ember"][2], out["torch"][2], rtol=1e-10)


def test_function_grad_fn_name_and_leaf_output():
    relu = make_relu(ember)
    x = ember.randn(3, requires_grad=True)
    y = relu.apply(x)
    assert y.requires_grad and not y.is_leaf and "MyReLU" in type(y.grad_fn).__name__
    with ember.no_grad():
        assert not relu.apply(x).requires_grad
    assert not relu.apply(ember.randn(3)).requires_grad


def test_ctx_is_a_function_ctx():
    seen = []

    class Square(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            seen.append(ctx)
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            seen.append(ctx)
            (x,) = ctx.saved_tensors
            return 2 * x * g

    x = ember.tensor([1.0, -3.0], requires_grad=True)
    Square.apply(x).sum().backward()
    assert x.grad.tolist() == [2.0, -6.0]
    assert len(seen) == 2 and seen[0] is seen[1] and isinstance(seen[0], ember.autograd.FunctionCtx)


class ScaleBy(ember.autograd.Function):
    """Non-tensor args, needs_input_grad, two outputs, one non-differentiable."""
    seen = None

    @staticmethod
    def forward(ctx, x, y, k):
        ScaleBy.seen = ctx.needs_input_grad
        ctx.save_for_backward(x, y)
        ctx.k = k
        idx = x.argmax()
        ctx.mark_non_differentiable(idx)
        return x * y * k, x + y, idx

    @staticmethod
    def backward(ctx, g_prod, g_sum, g_idx):
        x, y = ctx.saved_tensors
        gx = g_prod * y * ctx.k + g_sum if ctx.needs_input_grad[0] else None
        gy = g_prod * x * ctx.k + g_sum if ctx.needs_input_grad[1] else None
        return gx, gy, None


def test_multiple_outputs_needs_input_grad_mark_non_differentiable():
    x = ember.tensor([1.0, 3.0, 2.0], dtype=ember.float64, requires_grad=True)
    y = ember.tensor([2.0, -1.0, 0.5], dtype=ember.float64)
    p, s, idx = ScaleBy.apply(x, y, 2.0)
    assert ScaleBy.seen == (True, False, False)
    assert idx.item() == 1 and not idx.requires_grad
    assert p.requires_grad and s.requires_grad
    (p.sum() + 3 * s.sum()).backward()
    assert x.grad.tolist() == [4 + 3, -2 + 3, 1 + 3]
    assert y.grad is None


def test_only_one_output_used_gets_zero_grad_for_other():
    x = ember.tensor([1.0, 3.0], dtype=ember.float64, requires_grad=True)
    y = ember.tensor([2.0, -1.0], dtype=ember.float64, requires_grad=True)
    p, s, _ = ScaleBy.apply(x, y, 1.0)
    s.sum().backward()          # g_prod arrives as zeros (materialized), as in torch
    assert x.grad.tolist() == [1.0, 1.0] and y.grad.tolist() == [1.0, 1.0]


def test_custom_function_gradcheck_and_double_backward():
    class Cube(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return 3 * g * x * x          # written in differentiable ops: double backward works

    x = ember.tensor([0.5, -1.2], dtype=ember.float64, requires_grad=True)
    assert gradcheck(Cube.apply, (x,))
    g, = ember.autograd.grad(Cube.apply(x).sum(), x, create_graph=True)
    gg, = ember.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(gg.tolist(), [3.0, -7.2])


def test_backward_wrong_number_of_grads_errors():
    class Bad(ember.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            return a * b

        @staticmethod
        def backward(ctx, g):
            return g

    a = ember.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="Bad.backward returned 1 gradients, expected 2"):
        Bad.apply(a, ember.ones(2)).sum().backward()


def test_saved_tensors_freed_after_backward():
    relu = make_relu(ember)
    x = ember.randn(3, requires_grad=True)
    y = relu.apply(x * 1)
    y.sum().backward()
    with pytest.raises(RuntimeError, match="second time"):
        y.sum().backward()


def test_forward_returning_input_is_wrapped():
    class Ident(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = ember.ones(2, requires_grad=True)
    y = Ident.apply(x)
    assert y is not x and not y.is_leaf
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]
