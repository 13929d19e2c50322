"""ember/autograd/function.py: custom Functions as in torch (the seeds' MyReLU exactly)."""
import numpy as np
import pytest
import torch

import ember
from ember.autograd import gradcheck
from helpers import raises_exactly


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


# ------------------------------------------------------------------ ctx features, as torch
def both_libs(fn):
    return {L.__name__: fn(L) for L in (ember, torch)}


def test_mark_dirty_in_place_function():
    def run(L):
        class AddOne_(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                x.add_(1)
                ctx.mark_dirty(x)
                return x

            @staticmethod
            def backward(ctx, g):
                return g * 2

        a = L.tensor([1.0, 2.0], requires_grad=True)
        h = a * 1
        out = AddOne_.apply(h)
        assert out is h and not h.is_leaf and h.requires_grad
        assert "AddOne_" in type(h.grad_fn).__name__ or "AddOne_" in h.grad_fn.name()
        (h * 3).sum().backward()
        return h.tolist(), a.grad.tolist()
    res = both_libs(run)
    assert res["ember"] == res["torch"] == ([2.0, 3.0], [6.0, 6.0])


def test_mark_dirty_output_followed_by_another_output():
    def run(L):
        class Inc_(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                x.add_(1)
                ctx.mark_dirty(x)
                return x, x * 2

            @staticmethod
            def backward(ctx, g1, g2):
                return g1 + g2 * 2

        h = L.tensor([1.0, 2.0], requires_grad=True) * 1
        a, b = Inc_.apply(h)
        return a is h, b.requires_grad, b.tolist()
    res = both_libs(run)
    assert res["ember"] == res["torch"] == (True, True, [4.0, 6.0])


def test_set_materialize_grads_false_passes_none():
    def run(L):
        seen = []

        class Two(L.autograd.Function):
            @staticmethod
            def forward(ctx, x, materialize):
                ctx.set_materialize_grads(materialize)
                return x * 2, x * 3

            @staticmethod
            def backward(ctx, g1, g2):
                seen.append((g1 is None, None if g2 is None else (tuple(g2.shape), str(g2.dtype)[-7:])))
                return (g1 * 2 if g1 is not None else 0) + (g2 * 3 if g2 is not None else 0), None

        x = L.ones(2, dtype=L.float64, requires_grad=True)
        Two.apply(x, False)[1].sum().backward()
        Two.apply(x, True)[1].sum().backward()
        return seen, x.grad.tolist()
    res = both_libs(run)
    assert res["ember"] == res["torch"] == ([(True, ((2,), "float64")), (False, ((2,), "float64"))], [6.0, 6.0])


def test_unused_outputs_get_zeros_of_their_shape_and_dtype():
    def run(L):
        seen = []

        class Split(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2, x.sum(0) * 3

            @staticmethod
            def backward(ctx, g1, g2):
                seen.append([(tuple(g.shape), str(g.dtype)[-7:], g.abs().sum().item()) for g in (g1, g2)])
                return g1 * 2 + g2 * 3

        x = L.ones(2, 3, dtype=L.float64, requires_grad=True)
        a, b = Split.apply(x)
        b.sum().backward()
        a2, _ = Split.apply(x)
        a2.sum().backward()
        return seen, x.grad.tolist()
    res = both_libs(run)
    assert res["ember"] == res["torch"]
    assert res["ember"][0] == [[((2, 3), "float64", 0.0), ((3,), "float64", 3.0)],
                               [((2, 3), "float64", 6.0), ((3,), "float64", 0.0)]]


def test_mark_non_differentiable_float_output_and_integer_outputs():
    def run(L):
        class SortLike(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                mask = (x > 0).to(x.dtype)        # a float output marked non-differentiable
                ctx.mark_non_differentiable(mask)
                return mask, x * 2, x.argmax()   # argmax: integer, never differentiable

            @staticmethod
            def backward(ctx, g_mask, g_y, g_idx):
                return g_y * 2

        x = L.tensor([-1.0, 2.0], requires_grad=True)
        mask, y, idx = SortLike.apply(x)
        flags = (mask.requires_grad, y.requires_grad, idx.requires_grad)
        (y.sum() + mask.sum()).backward()
        return flags, mask.tolist(), idx.item(), x.grad.tolist()
    res = both_libs(run)
    assert res["ember"] == res["torch"] == ((False, True, False), [0.0, 1.0], 1, [2.0, 2.0])


def test_non_tensor_outputs_pass_through():
    def run(L):
        class WithInfo(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2, "info", x * 3

            @staticmethod
            def backward(ctx, g1, g_info, g3):
                return g1 * 2 + g3 * 3

        x = L.ones(2, requires_grad=True)
        a, info, b = WithInfo.apply(x)
        (a + b).sum().backward()
        return info, a.requires_grad, b.requires_grad, x.grad.tolist()
    res = both_libs(run)
    assert res["ember"] == res["torch"] == ("info", True, True, [5.0, 5.0])


def test_forward_runs_without_grad_and_gets_keyword_arguments():
    class Scale(ember.autograd.Function):
        inside = None

        @staticmethod
        def forward(ctx, x, *, k=1.0):
            Scale.inside = ember.is_grad_enabled()
            ctx.k = k
            return x * k

        @staticmethod
        def backward(ctx, g):
            return g * ctx.k

    x = ember.ones(2, requires_grad=True)
    y = Scale.apply(x, k=4.0)
    assert Scale.inside is False and y.tolist() == [4.0, 4.0]
    y.sum().backward()
    assert x.grad.tolist() == [4.0, 4.0]


def test_grad_fn_names_and_repr():
    relu = make_relu(ember)
    y = relu.apply(ember.randn(3, requires_grad=True))
    assert type(y.grad_fn).__name__ == "MyReLUBackward" and y.grad_fn.name == "MyReLU"
    assert repr(y.grad_fn) == "<MyReLUBackward>"
    assert repr((ember.ones(2, requires_grad=True) * 2).grad_fn) == "<MulBackward>"


def test_a_subclass_named_function_works():
    class Function(ember.autograd.Function):     # a user's own class may well be called Function
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = ember.ones(2, requires_grad=True)
    y = Function.apply(x)
    assert type(y.grad_fn).__name__ == "FunctionBackward"
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_missing_forward_or_backward():
    x = ember.ones(2, requires_grad=True)
    with pytest.raises(NotImplementedError, match=r"^a Function subclass must define forward\(ctx, \.\.\.\)$"):
        ember.autograd.Function.apply(x)

    class NoBackward(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

    with pytest.raises(NotImplementedError, match=r"^a Function subclass must define backward\(ctx, \.\.\.\)$"):
        NoBackward.apply(x).sum().backward()


def test_returning_a_tensor_tracked_elsewhere_does_not_rewire_it():
    w = ember.ones(2, requires_grad=True)
    outer = w * 5                                   # has its own graph (MulBackward)

    class ReturnsOuter(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return outer

        @staticmethod
        def backward(ctx, g):
            return g * 7

    x = ember.ones(2, requires_grad=True)
    y = ReturnsOuter.apply(x)
    assert y is not outer and outer.grad_fn.name == "Mul" and y.grad_fn.name == "ReturnsOuter"
    y.sum().backward()
    assert x.grad.tolist() == [7.0, 7.0] and w.grad is None
    outer.sum().backward()
    assert w.grad.tolist() == [5.0, 5.0]


def test_custom_function_nan_in_anomaly_mode_names_it():
    class NanGrad(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g * float("nan")

    x = ember.ones(2, requires_grad=True)
    with ember.autograd.detect_anomaly():
        y = NanGrad.apply(x)
        with pytest.raises(RuntimeError) as e:
            y.sum().backward()
    msg = str(e.value)
    assert msg.startswith("Function 'NanGradBackward' returned nan values in its 0th output (gradient (2,) "
                          "float32); the forward op NanGrad was called at ")
    assert "<unknown" not in msg


# ------------------------------------------------------------------ saved tensors and versions
def test_saved_tensor_changed_by_gradient_accumulation_message():
    # accumulating into .grad changes it in place with no op name: the message then names none
    msgs = {}
    for L in (ember, torch):
        x = L.ones(2, requires_grad=True)
        w = L.ones(2, requires_grad=True)
        (x * 2).sum().backward()
        y = (w * x.grad).sum()           # Mul saves x.grad
        (x * 2).sum().backward()         # ... which accumulation now changes in place
        with pytest.raises(RuntimeError) as e:
            y.backward()
        msgs[L.__name__] = str(e.value)
    assert "is at version 1; expected version 0 instead" in msgs["torch"]
    assert msgs["ember"] == (
        "one of the variables needed for gradient computation has been modified by an inplace operation: "
        "[float32 (2,)], which is output of a leaf, is at version 1; expected version 0 instead (it was saved "
        "by Mul). Hint: replace the in-place op (a method ending in '_', +=, x[...] = ) by its out-of-place form.")


def test_saved_output_changed_in_place_message():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = (x * 2).exp()
    y.mul_(3)
    y.mul_(3)
    with pytest.raises(RuntimeError) as e:
        y.sum().backward()
    assert str(e.value) == (
        "one of the variables needed for gradient computation has been modified by an inplace operation "
        "(mul_): the output of Exp is at version 2; expected version 0. Hint: use the out-of-place form of "
        "that op on this tensor.")


def test_freed_graph_message_is_torchs():
    msgs = {}
    for L in (ember, torch):
        y = (L.ones(2, requires_grad=True) * 2).exp().sum()
        y.backward()
        with pytest.raises(RuntimeError) as e:
            y.backward()
        msgs[L.__name__] = str(e.value)
    assert msgs["ember"] == msgs["torch"]


# ------------------------------------------------------------------ Primitive.apply
from ember.autograd.function import Primitive   # noqa: E402
from ember import _memory                         # noqa: E402


class _ToBFloat16(Primitive):
    def forward(self, a):
        import ml_dtypes
        return a.astype(ml_dtypes.bfloat16)


class _ToHalf(Primitive):
    def forward(self, a):
        return a.astype(np.float16)


class _IsPositive(Primitive):
    def forward(self, a):
        return a > 0


class _Total(Primitive):
    def forward(self, a):
        return a.sum()                   # NumPy returns a scalar here


class _Boom(Primitive):
    def forward(self, a):
        raise MemoryError("no room")


def test_primitive_outputs_keep_the_first_inputs_float_dtype():
    x = ember.ones(3)
    assert _ToBFloat16.apply(x).dtype == ember.float32
    assert _ToHalf.apply(x).dtype == ember.float32
    assert _ToHalf.apply(ember.ones(3, dtype=ember.float64)).dtype == ember.float64
    assert _IsPositive.apply(x).dtype == ember.bool          # not a float: left alone
    t = _Total.apply(x)
    assert isinstance(t._data, np.ndarray) and t.shape == () and t.item() == 3.0


def test_primitive_memory_error_is_embers():
    with pytest.raises(ember.OutOfMemoryError, match=r"^_boom: not enough memory \(no room\); inputs \(3,\) "
                                                     r"float32 \(at \S+:\d+\)$"):
        _Boom.apply(ember.ones(3))


def test_elementwise_output_checked_against_the_memory_limit():
    # primitives flagged `elementwise` work before they allocate (softmax reduces first, a scan walks its
    # input): their output is checked against the limit before any work. A plain ufunc is not: NumPy
    # allocates its output first, and a MemoryError it raises is converted (test above).
    x = ember.ones(1000, 1000, dtype=ember.float64)          # 8 MB, made before the limit goes down
    old = _memory.set_limit(1_000_000)                        # 1 MB
    try:
        with pytest.raises(ember.OutOfMemoryError, match=r"^softmax: not enough memory: you tried to allocate "
                                                         r"8000000 bytes .* float64 tensor of shape \(1000, 1000\)"):
            x.softmax(1)
        with pytest.raises(ember.OutOfMemoryError, match=r"^cumsum: .*4000000 bytes .* float32 tensor of shape"):
            x.float().cumsum(0)
        assert x.sum().item() == 1e6                          # a reduction is not checked as elementwise
        assert (x * 2).shape == (1000, 1000)                  # nor a plain ufunc (it fits in RAM)
        with pytest.raises(RuntimeError) as e:                # shapes that do not broadcast: the op's own error
            ember.ones(3) * ember.ones(4)
        assert not isinstance(e.value, ember.OutOfMemoryError)
    finally:
        _memory.set_limit(old)
    assert x.softmax(1).shape == (1000, 1000)


class _Outer(Primitive):
    """An elementwise primitive of two broadcast inputs; `dtype`, when given, is its output's dtype."""
    elementwise = True

    def forward(self, a, b):
        out = a + b
        return out.astype(self.dtype) if "dtype" in self.__dict__ else out


def test_elementwise_check_uses_the_broadcast_shape_and_the_dtype_attribute():
    # the cheap bound (first input's bytes times the other inputs' sizes) decides whether to check; the check
    # takes the broadcast shape of all inputs and the output dtype an op's `dtype` attribute names
    col = ember.ones(1000, 1)
    row = ember.ones(1, 1000)
    old = _memory.set_limit(1_000_000)
    try:
        raises_exactly(lambda: _Outer.apply(col, row), ember.OutOfMemoryError,
                       "_outer: not enough memory: you tried to allocate 4000000 bytes (3.81 MiB) for a float32 "
                       "tensor of shape (1000, 1000); the limit is 1000000 bytes (976.56 KiB, set "
                       "EMBER_MEMORY_LIMIT to change it)")
        raises_exactly(lambda: _Outer.apply(col, ember.ones(1, 200), dtype=np.float64), ember.OutOfMemoryError,
                       "_outer: not enough memory: you tried to allocate 1600000 bytes (1.53 MiB) for a float64 "
                       "tensor of shape (1000, 200); the limit is 1000000 bytes (976.56 KiB, set "
                       "EMBER_MEMORY_LIMIT to change it)")
        # 800 KB in float32 (the inputs' dtype) and 400 KB in float16 (the attribute's): both fit
        assert _Outer.apply(col, ember.ones(1, 200)).shape == (1000, 200)
        out = _Outer.apply(col.double(), ember.ones(1, 200, dtype=ember.float64), dtype=np.float16)
        assert out.shape == (1000, 200) and out.dtype == ember.float64   # keeps_dtype: float64 again
    finally:
        _memory.set_limit(old)


def test_elementwise_meta_tensors_are_not_checked_against_the_memory_limit():
    t = torch.empty(100_000, 100_000, device="meta").softmax(1)
    old = _memory.set_limit(1_000_000)
    try:
        e = ember.empty(100_000, 100_000, device="meta").softmax(1)
    finally:
        _memory.set_limit(old)
    assert e.shape == tuple(t.shape) and str(e.device) == "meta"


class _Doubled(Primitive):
    def forward(self, a):
        return a * 2


def test_a_registered_cpu_kernel_runs_instead_of_the_forward():
    calls = []

    def kernel(node, a):
        calls.append(type(node).__name__)
        return a * 3

    _Doubled.cpu_kernel = kernel
    try:
        out = _Doubled.apply(ember.ones(2))
    finally:
        _Doubled.cpu_kernel = None
    assert calls == ["_Doubled"]
    np.testing.assert_array_equal(out.numpy(), [3, 3])
    np.testing.assert_array_equal(_Doubled.apply(ember.ones(2)).numpy(), [2, 2])


class _SumDiff(Primitive):
    """Two outputs, a + b and a - b, computed in float64 (keeps_dtype casts them back to a's dtype)."""
    multi_output = True

    def forward(self, a, b):
        return (a + b).astype(np.float64), (a - b).astype(np.float64)

    def backward(self, gs, gd):
        return gs + gd, gs - gd


class _SumDiffWide(_SumDiff):
    keeps_dtype = False


def test_multi_output_primitive_dtypes_graph_and_gradients():
    torch_x = torch.tensor([1.0, 2.0], requires_grad=True)
    torch_s, torch_d = torch_x * 2 + 1, torch_x * 2 - 1
    (torch_s * 3 + torch_d * 5).sum().backward()

    x = ember.tensor([1.0, 2.0], requires_grad=True)
    a = x * 2                                # a non-leaf input: its edge is its node, not a leaf
    b = ember.ones(2)                        # needs no gradient: no edge, no .grad
    s, d = _SumDiff.apply(a, b)
    assert s.dtype == d.dtype == ember.float32          # the first input's float dtype
    assert s.requires_grad and d.requires_grad
    assert s.grad_fn is d.grad_fn and s.grad_fn is not None
    (s * 3 + d * 5).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), torch_x.grad.numpy())
    assert b.grad is None
    w, _ = _SumDiffWide.apply(a, b)
    assert w.dtype == ember.float64
    with ember.no_grad():
        s2, d2 = _SumDiff.apply(a, b)
    assert not s2.requires_grad and s2.grad_fn is None
    x.grad = None
    s, d = _SumDiff.apply(x * 2, b)
    (d * 5).sum().backward()                  # s unused: its gradient is zeros of its shape and dtype
    np.testing.assert_array_equal(x.grad.numpy(), [10.0, 10.0])


class _NanPair(_SumDiff):
    def backward(self, gs, gd):
        return gs * float("nan"), gd


@pytest.mark.parametrize("how", ["anomaly", "debug2"])
def test_multi_output_primitive_records_its_forward_line(how, monkeypatch):
    from ember import _debug
    x = ember.tensor([1.0], requires_grad=True)
    if how == "debug2":
        monkeypatch.setattr(_debug, "LEVEL", 2)
        s, _ = _NanPair.apply(x, x)
        monkeypatch.setattr(_debug, "LEVEL", 0)
        with ember.autograd.detect_anomaly():
            with pytest.raises(RuntimeError) as e:
                s.sum().backward()
    else:
        with ember.autograd.detect_anomaly():
            s, _ = _NanPair.apply(x, x)
            with pytest.raises(RuntimeError) as e:
                s.sum().backward()
    msg = str(e.value)
    assert msg.startswith("Function '_NanPairBackward' returned nan values in its 0th output"), msg
    assert "the forward op _NanPair was called at " in msg and "<unknown" not in msg, msg


def test_eigh_double_backward_matches_torch():
    # Eigh's backward re-wraps its outputs with node.output(i): differentiable again, on the right output
    rng = np.random.default_rng(0)
    m = rng.standard_normal((4, 4))
    m = m + m.T
    res = {}
    for lib in (torch, ember):
        a = lib.tensor(m, requires_grad=True)
        w, v = lib.linalg.eigh(a)
        c = lib.tensor(np.arange(16.0).reshape(4, 4) / 8)
        f = (w * lib.arange(4, dtype=a.dtype)).sum() + (v ** 4 * c).sum()   # even in each column's sign
        g, = (torch.autograd.grad if lib is torch else ember.autograd.grad)(f, a, create_graph=True)
        assert g.requires_grad
        gg, = (torch.autograd.grad if lib is torch else ember.autograd.grad)((g * g).sum(), a)
        res[lib.__name__] = (g.detach().numpy(), gg.numpy())
    np.testing.assert_allclose(res["ember"][0], res["torch"][0], rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(res["ember"][1], res["torch"][1], rtol=1e-6, atol=1e-8)


class _Pass(_SumDiff):
    def backward(self, gs, gd):
        return gs, gd


def test_an_unused_multi_output_gets_zeros_of_its_own_dtype():
    x, y = ember.ones(2, requires_grad=True), ember.ones(2, requires_grad=True)
    s, d = _Pass.apply(x, y)
    d.sum().backward()                       # s unused: its gradient, passed on to x, is float32 zeros
    assert x.grad.dtype == ember.float32 and x.grad.tolist() == [0.0, 0.0]
    assert y.grad.tolist() == [1.0, 1.0]


def _conv_pair():
    """(ember conv, torch conv) with the same weights: a conv's input gradient is channels-last in Ember."""
    t = torch.nn.Conv2d(3, 4, 3, padding=1)
    e = ember.nn.Conv2d(3, 4, 3, padding=1)
    e.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    return e, t


def test_grad_outputs_reach_a_custom_backward_contiguous():
    # torch's kernels give a conv's input gradient contiguous, and a backward written for torch views
    # its grad_output; Ember's is channels-last inside, so the Function receives a contiguous copy
    seen = {}

    def make(mod):
        class Flat(mod.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                seen[mod.__name__] = g.is_contiguous()
                return g.view(g.shape[0], -1).mul(2).view(g.shape)
        return Flat

    e, t = _conv_pair()
    xe, xt = ember.randn(2, 3, 5, 5, requires_grad=True), None
    xt = torch.tensor(xe.detach().numpy(), requires_grad=True)
    e(make(ember).apply(xe)).sum().backward()
    t(make(torch).apply(xt)).sum().backward()
    assert seen == {"torch": True, "ember": True}
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("create_graph", [False, True])
def test_autograd_grad_of_a_contiguous_input_is_contiguous(create_graph):
    # WGAN-GP's gradient penalty: grad of a critic's output w.r.t. its (conv) input, then .view(n, -1)
    e, t = _conv_pair()
    xe = ember.randn(2, 3, 5, 5, requires_grad=True)
    xt = torch.tensor(xe.detach().numpy(), requires_grad=True)
    ge, = ember.autograd.grad(e(xe).pow(2).sum(), xe, create_graph=create_graph)
    gt, = torch.autograd.grad(t(xt).pow(2).sum(), xt, create_graph=create_graph)
    assert ge.is_contiguous() and gt.is_contiguous()
    pe, pt = (ge.view(2, -1).norm(2, dim=1) - 1).pow(2).mean(), (gt.view(2, -1).norm(2, dim=1) - 1).pow(2).mean()
    np.testing.assert_allclose(pe.item(), pt.item(), rtol=1e-5)
    if create_graph:
        pe.backward()
        pt.backward()
        np.testing.assert_allclose(e.weight.grad.numpy(), t.weight.grad.numpy(), rtol=1e-4, atol=1e-5)
    # an input that is not contiguous keeps the gradient's own layout (nothing copied for it)
    xe2 = ember.randn(2, 5, 5, 3).permute(0, 3, 1, 2).requires_grad_()
    ge2, = ember.autograd.grad(e(xe2).sum(), xe2)
    assert ge2.shape == (2, 3, 5, 5)


def test_setup_context_style_as_torch():
    # torch 2's split Function: forward without ctx, setup_context(ctx, inputs, output) saves
    def run(L):
        seen = []

        class Cube(L.autograd.Function):
            @staticmethod
            def forward(x, scale=2.0):
                return x ** 3 * scale, 3 * x ** 2

            @staticmethod
            def setup_context(ctx, inputs, output):
                x, scale = inputs
                seen.append((len(inputs), scale, ctx.needs_input_grad))
                ctx.scale = scale
                ctx.save_for_backward(x, output[1])
                ctx.mark_non_differentiable(output[1])

            @staticmethod
            def backward(ctx, g, g_dx):
                x, dx = ctx.saved_tensors
                return g * dx * ctx.scale, None

        x = L.tensor([1.0, -2.0, 0.5], dtype=L.float64, requires_grad=True)
        y, dy = Cube.apply(x)
        (gx,) = L.autograd.grad(y.sum(), x)
        y3, _ = Cube.apply(x, scale=0.5)
        return seen, y.tolist(), dy.requires_grad, gx.tolist(), y3.tolist(), type(y.grad_fn).__name__
    res = both_libs(run)
    assert res["ember"] == res["torch"]
    assert res["ember"][0][0] == (2, 2.0, (True, False))


def test_once_differentiable_backward_raises_when_differentiated_again():
    def run(L):
        from importlib import import_module
        once_differentiable = import_module(L.__name__ + ".autograd.function").once_differentiable
        grad_modes = []

        class Square(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            @once_differentiable
            def backward(ctx, g):
                grad_modes.append(L.is_grad_enabled())
                x, = ctx.saved_tensors
                return 2 * x * g

        x = L.tensor([1.0, 3.0], dtype=L.float64, requires_grad=True)
        Square.apply(x).sum().backward()
        (g0,) = L.autograd.grad(Square.apply(x).sum(), x, create_graph=True)   # ones(): no error node
        v = L.ones(2, dtype=L.float64, requires_grad=True)
        (g,) = L.autograd.grad(Square.apply(x), x, grad_outputs=v, create_graph=True)
        with pytest.raises(RuntimeError) as e:
            g.sum().backward()
        return x.grad.tolist(), g0.requires_grad, g.tolist(), g.requires_grad, grad_modes, str(e.value)
    res = both_libs(run)
    assert res["ember"] == res["torch"]
    assert res["torch"][-1] == "trying to differentiate twice a function that was marked with @once_differentiable"
