"""ember/ops/reductions.py against torch: nansum, nanmean, aminmax, diff, median, nanmedian, quantile,
nanquantile, mode, cummax, cummin, logcumsumexp, bincount, histc, renorm, cov, corrcoef and
Tensor.sum_to_size."""
import numpy as np
import pytest
import torch

import ember
from helpers import NoGrad, check_op, raises_as_torch, raises_exactly


def with_nans(L, x):
    """x with NaN wherever x > 1 (inputs are in [-2, 2))."""
    return L.where(x > 1, float("nan"), x)


@pytest.mark.parametrize("kw", [{}, {"dim": 1}, {"dim": (0, 2), "keepdim": True}, {"axis": -1, "keepdims": True}])
def test_nansum_and_nanmean(kw):
    check_op(lambda L, x: L.nansum(with_nans(L, x), **kw), (3, 4, 5))
    check_op(lambda L, x: with_nans(L, x).nansum(**kw), (3, 4, 5))
    check_op(lambda L, x: with_nans(L, x).nanmean(**kw), (3, 4, 5))


def test_nansum_integer_and_nanmean_errors():
    assert ember.nansum(ember.tensor([1, 2])).tolist() == torch.nansum(torch.tensor([1, 2])).tolist() == 3
    assert ember.nansum(ember.tensor([1, 2])).dtype is ember.int64
    for lib in (torch, ember):
        with pytest.raises(RuntimeError, match="nanmean.*expected input to have floating point"):
            lib.nanmean(lib.tensor([1, 2]))
    t = torch.nanmean(torch.tensor([[float("nan")] * 2, [1.0, 3.0]]), 1)
    assert np.allclose(ember.nanmean(ember.tensor([[float("nan")] * 2, [1.0, 3.0]]), 1).numpy(), t.numpy(),
                       equal_nan=True)


@pytest.mark.parametrize("kw", [{}, {"dim": 1}, {"dim": 0, "keepdim": True}])
def test_aminmax(kw):
    check_op(lambda L, x: tuple(L.aminmax(x, **kw)), (3, 4))
    r = ember.tensor([[1.0, 5.0], [-2.0, 0.0]]).aminmax(**kw)
    t = torch.tensor([[1.0, 5.0], [-2.0, 0.0]]).aminmax(**kw)
    assert r.min.tolist() == t.min.tolist() and r.max.tolist() == t.max.tolist()


@pytest.mark.parametrize("kw", [{}, {"n": 2}, {"dim": 0}, {"n": 3, "dim": 1}, {"n": 0}])
def test_diff(kw):
    check_op(lambda L, x: L.diff(x, **kw), (3, 4))
    check_op(lambda L, x: x.diff(**kw), (5, 6))


def test_diff_prepend_append_bool_and_errors():
    check_op(lambda L, x, p, a: L.diff(x, dim=1, prepend=p, append=a), (3, 4), (3, 1), (3, 2))
    b = [True, False, False, True]
    assert ember.diff(ember.tensor(b)).tolist() == torch.diff(torch.tensor(b)).tolist()
    assert ember.diff(ember.tensor([1, 4, 9]), n=5).tolist() == torch.diff(torch.tensor([1, 4, 9]), n=5).tolist()
    for lib in (torch, ember):
        with pytest.raises(RuntimeError, match="diff.*one-dimensional"):
            lib.diff(lib.tensor(1.0))


@pytest.mark.parametrize("shape,dims,keepdim", [((64, 16, 28, 28), (0, 2, 3), False), ((300, 7), 0, False),
                                                ((2, 300, 5), (0, 1), True), ((40, 3, 9, 9), (0, -2, -1), True)])
def test_sum_over_rows_with_the_kept_axis_contiguous(shape, dims, keepdim):
    """Sums whose memory is rows with the kept axis contiguous (bias gradients: channels-last Conv,
    Linear; BatchNorm) run as one BLAS product with ones (backends.cpu.rows_sum): same values as torch,
    in every layout."""
    def channels_last(L, x):
        return x.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2) if x.ndim == 4 else x
    # up to 50,176 float32 terms per sum: a strided (non-pairwise) NumPy sum, as the fake CUDA device runs
    # it, is off by ~1e-2 absolute at magnitudes of ~500 (5e-5 relative)
    check_op(lambda L, x: channels_last(L, x).sum(dims, keepdim=keepdim), shape, atol=2e-2, rtol=2e-4)
    check_op(lambda L, x: x.sum(dims, keepdim=keepdim), shape, atol=2e-2, rtol=2e-4)
    big = np.full(shape, 1e-3, np.float32)
    big.reshape(-1)[::97] = 1e4   # many small terms beside large ones: float32 rounding stays small
    want = torch.from_numpy(big).double().sum(dims, keepdim=keepdim).numpy()
    got = ember.tensor(big).sum(dims, keepdim=keepdim).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_reduction_errors_exactly():
    raises_exactly(lambda: ember.nanmean(ember.tensor([1, 2])), RuntimeError,
                   "nanmean: expected input to have floating point dtype but got (2,) int64 cpu")
    raises_exactly(lambda: ember.diff(ember.tensor(1.0)), RuntimeError,
                   "diff: expects input to be at least one-dimensional")
    with pytest.raises(RuntimeError, match="order must be non-negative but got -1"):
        torch.diff(torch.ones(3), n=-1)
    raises_exactly(lambda: ember.diff(ember.ones(3), n=-1), RuntimeError, "diff: order must be non-negative but got -1")


def test_nanmean_with_dtype_and_nansum_of_bool():
    """nanmean casts to `dtype` after checking the input's own dtype (an integer input is refused even
    with a float `dtype`, as torch)."""
    x = [[1.0, float("nan"), 4.0], [3.0, 5.0, 8.0]]
    for kw in [{"dtype": ember.float64}, {"dim": 1, "dtype": ember.float16}]:
        tkw = {**kw, "dtype": getattr(torch, kw["dtype"].name)}
        e, t = ember.nanmean(ember.tensor(x), **kw), torch.nanmean(torch.tensor(x), **tkw)
        assert e.dtype.name == str(t.dtype).split(".")[1] and e.tolist() == t.tolist()
    with pytest.raises(RuntimeError, match="expected input to have floating point"):
        torch.nanmean(torch.tensor([1, 2]), dtype=torch.float64)
    raises_exactly(lambda: ember.nanmean(ember.tensor([1, 2]), dtype=ember.float64), RuntimeError,
                   "nanmean: expected input to have floating point dtype but got (2,) int64 cpu")
    x = [[1, 2, 4], [3, 5, 8]]
    b = [[True, False, True], [True, True, False]]
    e, t = ember.nansum(ember.tensor(b), 1), torch.nansum(torch.tensor(b), 1)
    assert e.dtype is ember.int64 and e.tolist() == t.tolist()
    e, t = ember.nansum(ember.tensor(x), dtype=ember.float64), torch.nansum(torch.tensor(x), dtype=torch.float64)
    assert e.dtype is ember.float64 and e.tolist() == t.tolist()


def test_aminmax_of_one_row_and_names():
    """dim=None reduces every dim (also of a (1, n) or 0-d input); the result is a named pair."""
    for data in ([[3.0, -1.0, 2.0]], 5.0, [[1, 7], [4, 0]]):
        e, t = ember.aminmax(ember.tensor(data)), torch.aminmax(torch.tensor(data))
        assert tuple(e.min.shape) == tuple(t.min.shape) == () and e.min.tolist() == t.min.tolist()
        assert e.max.tolist() == t.max.tolist() and e.max.dtype.name == str(t.max.dtype).split(".")[1]
        assert type(e).__name__ == "aminmax" and e[0] is e.min and e[1] is e.max
    e = ember.aminmax(ember.tensor([[3.0, -1.0, 2.0]]), dim=-1, keepdim=True)
    t = torch.aminmax(torch.tensor([[3.0, -1.0, 2.0]]), dim=-1, keepdim=True)
    assert e.min.tolist() == t.min.tolist() and e.max.tolist() == t.max.tolist()


def test_diff_of_empty_and_short_inputs():
    for data, kw in [([], {}), ([1.0], {}), ([1.0, 4.0], {"n": 3}), ([[1.0, 2.0]], {"dim": 0}),
                     ([[1.0, 2.0, 7.0]], {"n": 2, "dim": -1}), ([2.0, 5.0], {"prepend": [1.0], "append": [9.0, 0.0]})]:
        ekw = {k: ember.tensor(v) if isinstance(v, list) else v for k, v in kw.items()}
        tkw = {k: torch.tensor(v) if isinstance(v, list) else v for k, v in kw.items()}
        e, t = ember.diff(ember.tensor(data), **ekw), torch.diff(torch.tensor(data), **tkw)
        assert tuple(e.shape) == tuple(t.shape) and e.tolist() == t.tolist()
    check_op(lambda L, x, p: L.diff(x, n=2, dim=0, prepend=p), (3, 4), (2, 4))
    check_op(lambda L, x, a: L.diff(x, append=a), (3, 4), (3, 1))
    b = [[True, False], [True, True]]
    assert ember.diff(ember.tensor(b), dim=0).tolist() == torch.diff(torch.tensor(b), dim=0).tolist()


def test_diff_of_order_zero_is_a_copy():
    t = torch.tensor([1.0, 4.0, 9.0])
    assert torch.diff(t, n=0).data_ptr() != t.data_ptr()
    x = ember.tensor([1.0, 4.0, 9.0])
    d = ember.diff(x, n=0)
    assert d is not x and d.tolist() == [1.0, 4.0, 9.0]
    d.add_(1.0)
    assert x.tolist() == [1.0, 4.0, 9.0]
    check_op(lambda L, x: L.diff(x, n=0, dim=0), (3, 2))


# ------------------------------------------------------------------ median, nanmedian, quantile, mode
def ties(shape, values=3, seed=1):
    """Floats drawn from a few integers: many ties (passed to check_op as fixed values that require grad)."""
    return np.random.default_rng(seed).integers(0, values, shape).astype(np.float64)


@pytest.mark.parametrize("kw", [{}, {"dim": 1}, {"dim": -1, "keepdim": True}, {"dim": 0}, {"axis": 2, "keepdims": True}])
def test_median_and_nanmedian(kw):
    check_op(lambda L, x: L.median(x, **kw), (3, 4, 5))
    check_op(lambda L, x: L.median(x, **kw), (3, 4, 6))   # an even count: the lower of the two middles
    check_op(lambda L, x: with_nans(L, x).median(**kw), (3, 4, 5))
    check_op(lambda L, x: L.nanmedian(with_nans(L, x), **kw), (3, 4, 5))
    check_op(lambda L, x: x.nanmedian(**kw), (3, 4, 6))
    check_op(lambda L, x: L.median(x, **kw), ties((3, 4, 5)))   # the index of the stable sort's middle
    check_op(lambda L, x: L.nanmedian(with_nans(L, x), **kw), ties((3, 4, 5)))


def test_median_without_dim_shares_the_gradient_among_ties_and_nans():
    nan = float("nan")
    for data in ([1.0, 2.0, 2.0, 3.0, 2.0], [1.0, nan, 2.0, nan, 2.0], [nan, nan], [2.0, -1.0], [5.0],
                 [[0.0, 1.0, 1.0], [1.0, 3.0, -2.0]], [1.0, float("inf"), float("inf")]):
        check_op(lambda L, x: L.median(x), np.array(data))
        check_op(lambda L, x: L.nanmedian(x), np.array(data))
    check_op(lambda L, x: L.median(x), ())
    check_op(lambda L, x: x.nanmedian(), (7,))


def test_median_of_0d_empty_and_integer_inputs():
    check_op(lambda L, x: L.median(x, 0), ())
    check_op(lambda L, x: L.nanmedian(x, -1, keepdim=True), ())
    check_op(lambda L, x: L.median(x, 1), (0, 3))
    check_op(lambda L, x: L.median(x, 1, True), (0, 3))
    for lib in (torch, ember):
        assert np.isnan(lib.median(lib.zeros(0)).item()) and np.isnan(lib.nanmedian(lib.zeros(2, 0)).item())
    ints = np.array([[3, 1, 2, 5], [7, 7, 0, 7]])
    check_op(lambda L, x: (L.median(x), L.median(x, 1), L.nanmedian(x, 0, True)), ints)
    for lib in (torch, ember):
        with pytest.raises(IndexError, match=r"median\(?\)?: Expected reduction dim 1 to have non-zero size"):
            lib.median(lib.zeros(2, 0), 1)
        with pytest.raises(NotImplementedError, match="median"):
            lib.median(lib.tensor([True, False]))
        with pytest.raises(NotImplementedError, match="nanmedian|median_out"):
            lib.nanmedian(lib.tensor([True, False]), 0)
    raises_exactly(lambda: ember.nanmedian(ember.zeros(2, 0), -1), IndexError,
                   "nanmedian: Expected reduction dim 1 to have non-zero size (input shape (2, 0))")
    raises_exactly(lambda: ember.median(ember.tensor([True]), 0), NotImplementedError,
                   "median: is not implemented for bool input (1,) bool cpu (as torch); convert it with .int() first")
    raises_exactly(lambda: ember.median(ember.ones(2), 1), IndexError,
                   "median: Dimension out of range (expected to be in range of [-1, 0], but got 1); the tensor has 1 dims")


QS = [0.3, 0.0, 1.0, np.array([0.0, 0.1, 0.5, 2 / 3, 1.0]), np.array(0.25)]


@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint", "nearest"])
@pytest.mark.parametrize("kw", [{}, {"dim": 1}, {"dim": -1, "keepdim": True}, {"keepdim": True}, {"axis": 0}])
def test_quantile_and_nanquantile(interpolation, kw):
    for q in QS:
        check_op(lambda L, x, q: L.quantile(x, q, interpolation=interpolation, **kw), (3, 4, 5), q)
        check_op(lambda L, x, q: x.nanquantile(q, interpolation=interpolation, **kw), (2, 7), q)
        check_op(lambda L, x, q: L.quantile(with_nans(L, x), q, interpolation=interpolation, **kw), (4, 3), q)
        check_op(lambda L, x, q: L.nanquantile(with_nans(L, x), q, interpolation=interpolation, **kw), (4, 5), q)
    # ranks on exact halves: 'nearest' rounds them to even; ties in the data
    check_op(lambda L, x, q: L.quantile(x, q, -1, interpolation=interpolation),
             ties((3, 5)), np.array([0.125, 0.375, 0.5, 0.625, 0.875]))


def test_quantile_of_0d_all_nan_and_empty_q():
    nan = float("nan")
    check_op(lambda L, x: L.quantile(x, 0.4), ())
    check_op(lambda L, x: L.quantile(x, 0.4, dim=0, keepdim=True), ())
    check_op(lambda L, x, q: L.nanquantile(x, q, keepdim=True), (), np.array([0.2, 0.9]))
    check_op(lambda L, x: L.nanquantile(x, 0.5, dim=1), np.array([[nan, nan, nan], [nan, 1.0, 2.0]]))
    check_op(lambda L, x: L.quantile(x, L.tensor([], dtype=x.dtype, device=x.device), dim=0), (3, 2))


def test_quantile_errors():
    x = ember.arange(6.0)
    calls = [  # (call on a library, error torch gives, error Ember gives)
        (lambda L: L.quantile(L.arange(6.0), 1.5), "q must be in the range \\[0, 1\\] but got 1.5"),
        (lambda L: L.quantile(L.arange(6.0), float("nan")), "q must be in the range \\[0, 1\\] but got nan"),
        (lambda L: L.nanquantile(L.arange(6.0), -0.5), "q must be in the range \\[0, 1\\] but got -0.5"),
        (lambda L: L.quantile(L.arange(6.0), L.tensor([0.5, 1.5])), "q values must be in the range \\[0, 1\\]"),
        (lambda L: L.quantile(L.arange(6.0), 0.5, interpolation="cubic"),
         "interpolation must be one of linear, lower, higher, midpoint or nearest, but got '?cubic'?"),
        (lambda L: L.quantile(L.zeros(0), 0.5), "input tensor must be non-empty"),
        (lambda L: L.quantile(L.arange(6.0), L.tensor([[0.5]])), "q must be a scalar or 1D tensor"),
        (lambda L: L.quantile(L.arange(6), 0.5), "input tensor must be either float or double dtype"),
        (lambda L: L.quantile(L.arange(6.0).half(), 0.5), "input tensor must be either float or double dtype"),
        (lambda L: L.quantile(L.arange(6.0), L.tensor([0.5], dtype=L.float64)),
         "q tensor must be same dtype as the input tensor"),
    ]
    for call, message in calls:
        for lib in (torch, ember):
            with pytest.raises(RuntimeError, match=message):
                call(lib)
    for lib in (torch, ember):
        with pytest.raises(IndexError, match="Dimension out of range"):
            lib.quantile(lib.arange(6.0), 0.5, dim=1)
    raises_exactly(lambda: ember.quantile(x, 2.0), RuntimeError, "quantile: q must be in the range [0, 1] but got 2")
    raises_exactly(lambda: ember.nanquantile(x, ember.tensor([0.5, -1.0])), RuntimeError,
                   "nanquantile: q values must be in the range [0, 1], got [0.5, -1.0]")
    raises_exactly(lambda: ember.quantile(ember.arange(3), 0.5), RuntimeError,
                   "quantile: input tensor must be either float or double dtype, got (3,) int64 cpu")
    raises_exactly(lambda: ember.quantile(x, 0.5, interpolation="cubic"), RuntimeError,
                   "quantile: interpolation must be one of linear, lower, higher, midpoint or nearest, but got 'cubic'")


@pytest.mark.parametrize("kw", [{}, {"dim": 0}, {"dim": -2, "keepdim": True}, {"axis": 1, "keepdims": True}])
def test_mode(kw):
    check_op(lambda L, x: L.mode(x, **kw), ties((5, 6, 4)))   # rows of at most 16: torch's index is the last
    check_op(lambda L, x: x.mode(**kw), ties((5, 6, 4), values=6, seed=2))
    check_op(lambda L, x: L.mode(x, **kw), (3, 4, 5))         # no repeats: the smallest value


def test_mode_of_nans_0d_empty_integer_and_bool():
    nan = float("nan")
    check_op(lambda L, x: L.mode(x), np.array([[nan, nan, 1.0, 1.0, nan], [nan, 2.0, 0.0, 2.0, 0.0]]))
    check_op(lambda L, x: L.mode(x), ())
    check_op(lambda L, x: L.mode(x, 0, True), ())
    check_op(lambda L, x: L.mode(x, -1), (0, 2))
    check_op(lambda L, x: L.mode(x, 1), np.array([[3, 1, 3, 1, 7], [5, 5, 5, 0, 0]]))
    check_op(lambda L, x: L.mode(x, 0), np.array([[True, False], [True, True], [False, False]]))
    for lib in (torch, ember):
        with pytest.raises(IndexError, match=r"mode\(?\)?: Expected reduction dim 0 to have non-zero size"):
            lib.mode(lib.zeros(0, 2), 0)
    raises_exactly(lambda: ember.mode(ember.zeros(2, 0)), IndexError,
                   "mode: Expected reduction dim 1 to have non-zero size (input shape (2, 0))")


# ------------------------------------------------------------------ cummax, cummin, logcumsumexp
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cummax_and_cummin(dim):
    for op in ("cummax", "cummin"):
        check_op(lambda L, x: getattr(L, op)(x, dim), (5, 17))
        check_op(lambda L, x: getattr(x, op)(dim), ties((6, 9)))   # among equal values the later index
        check_op(lambda L, x: getattr(L, op)(with_nans(L, x), dim), (9, 6))   # a NaN stays, the latest one's index
        check_op(lambda L, x: getattr(L, op)(x, axis=dim), ties((4, 3), values=2))


def test_cummax_and_cummin_of_special_inputs():
    nan, inf = float("nan"), float("inf")
    data = np.array([1.0, 3.0, 2.0, 3.0, nan, 5.0, nan, 1.0, -inf, inf])
    for op in ("cummax", "cummin"):
        check_op(lambda L, x: getattr(L, op)(x, 0), data)
        check_op(lambda L, x: getattr(L, op)(x, 0), np.array([-inf, -inf, 2.0, inf, inf, -0.0, 0.0]))
        check_op(lambda L, x: getattr(L, op)(x, 0), ())
        check_op(lambda L, x: getattr(L, op)(x, -1), ())
        check_op(lambda L, x: getattr(L, op)(x, 0), (0, 3))
        check_op(lambda L, x: getattr(L, op)(x, 1), (0, 3))
        check_op(lambda L, x: getattr(L, op)(x, 0), np.array([3, 1, 2, 1, 5, 5]))
        check_op(lambda L, x: getattr(L, op)(x, 0), np.array([True, False, True, False]))
        for lib in (torch, ember):
            with pytest.raises(IndexError, match="Dimension out of range"):
                getattr(lib, op)(lib.ones(3), 1)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_logcumsumexp(dim):
    check_op(lambda L, x: L.logcumsumexp(x, dim), (5, 17))
    check_op(lambda L, x: x.logcumsumexp(dim=dim), (33, 2), low=-50, high=50)
    check_op(lambda L, x: L.logcumsumexp(x, axis=dim), ties((3, 4)))   # equal terms


def test_logcumsumexp_of_special_inputs():
    nan, inf = float("nan"), float("inf")
    # far apart (a cumsum of exp(x - max) would underflow to log(0) at the first); infinities; NaN
    check_op(lambda L, x: L.logcumsumexp(x, 0), np.array([-1000.0, 0.0, -30.0, 5.0]))
    check_op(lambda L, x: L.logcumsumexp(x, 0), np.array([-1000.0, 0.0, -inf, inf, nan, 1.0]), grad=False)
    check_op(lambda L, x: L.logcumsumexp(x, 0), np.array([-inf, -inf, 1.0, inf, inf]), grad=False)
    check_op(lambda L, x: L.logcumsumexp(x, 0), ())
    check_op(lambda L, x: L.logcumsumexp(x, 1), (2, 0))
    for lib in (torch, ember):
        with pytest.raises(NotImplementedError, match="logcumsumexp"):
            lib.logcumsumexp(lib.tensor([1, 2]), 0)
    raises_exactly(lambda: ember.logcumsumexp(ember.tensor([1, 2]), 0), NotImplementedError,
                   "logcumsumexp: is not implemented for (2,) int64 cpu (as torch); convert it with .float() first")


def test_order_statistics_double_backward():
    """The composites' gradients are differentiable ops: a second derivative matches torch's."""
    def second(L, x, op):
        y = op(L, x)
        g, = L.autograd.grad((y * y).sum(), x, create_graph=True)
        return (g * g).sum()
    for op in (lambda L, x: L.median(x, 1).values, lambda L, x: L.quantile(x, 0.3, dim=0),
               lambda L, x: L.cummax(x, 1).values, lambda L, x: L.logcumsumexp(x, 1), lambda L, x: L.median(x)):
        check_op(lambda L, x: second(L, x, op), (4, 5))


# ------------------------------------------------------------------ bincount, histc, sum_to_size, renorm
def test_bincount():
    data = np.array([0, 1, 1, 3, 7, 3, 3])
    check_op(lambda L, i: L.bincount(i), data)
    check_op(lambda L, i: i.bincount(minlength=10), data)
    check_op(lambda L, i: L.bincount(i, minlength=3), data.astype(np.int32))
    check_op(lambda L, i: L.bincount(i), data.astype(np.uint8))
    # float32 weights give float32 (float64 weights float64); integer and bool weights float64; torch has no
    # gradient for the weights (its backward raises), so none is compared
    check_op(lambda L, i, w: L.bincount(i, w), data, (7,), grad=False)
    check_op(lambda L, i, w: L.bincount(i, weights=w, minlength=9), data, (7,), grad=False)
    check_op(lambda L, i, w: L.bincount(i, w), data, np.array([1, 5, -2, 0, 3, 3, 9]), grad=False)
    check_op(lambda L, i, w: L.bincount(i, w), data, np.array([True, False, True, True, False, True, True]),
             grad=False)
    check_op(lambda L, i: L.bincount(i, minlength=4), np.zeros(0, np.int64))
    check_op(lambda L, i, w: L.bincount(i, w, minlength=2), np.zeros(0, np.int64), NoGrad((0,)))


def test_bincount_errors():
    for lib in (torch, ember):
        for bad in ([0, -1], [[0, 1]]):
            with pytest.raises(RuntimeError, match="bincount.*only supports 1-d non-negative integral inputs"):
                lib.bincount(lib.tensor(bad))
        with pytest.raises(NotImplementedError, match="bincount"):
            lib.bincount(lib.tensor([0.0, 1.0]))
        with pytest.raises(NotImplementedError, match="bincount"):
            lib.bincount(lib.tensor([True, False]))
        with pytest.raises(RuntimeError, match="minlength should be >= 0"):
            lib.bincount(lib.tensor([0, 1]), minlength=-1)
        with pytest.raises(RuntimeError, match="weights should be 1-d and have the same length as input"):
            lib.bincount(lib.tensor([0, 1]), lib.tensor([1.0, 2.0, 3.0]))
        with pytest.raises(TypeError, match="minlength"):
            lib.bincount(lib.tensor([0, 1]), minlength=True)
    raises_exactly(lambda: ember.bincount(ember.tensor([0, -1])), RuntimeError,
                   "bincount: only supports 1-d non-negative integral inputs, got (2,) int64 cpu")
    raises_exactly(lambda: ember.bincount(ember.tensor([0, 1]), ember.ones(3)), RuntimeError,
                   "bincount: weights should be 1-d and have the same length as input: weights (3,), input (2,)")


def test_histc():
    check_op(lambda L, x: L.histc(x), (50,), grad=False)
    check_op(lambda L, x: x.histc(bins=7), (3, 20), grad=False)
    check_op(lambda L, x: L.histc(x, bins=5, min=-1, max=1.5), (6, 11), grad=False)   # some left out
    check_op(lambda L, x: L.histc(x, 4, 0, 3), np.array([1.0, 2.0, 1.0, 4.0, 2.5, np.nan, 3.0, 0.0]), grad=False)
    check_op(lambda L, x: L.histc(x, bins=4), np.array([1.0, 1.0, 1.0]), grad=False)   # a point: widened by 1
    check_op(lambda L, x: L.histc(x, bins=3, min=2, max=2), np.array([1.0, 5.0, 2.0]), grad=False)
    check_op(lambda L, x: L.histc(x, bins=3, min=0, max=0.3), np.full(10, 0.1), grad=False)   # bins by rounding
    check_op(lambda L, x: L.histc(x, bins=4), np.zeros(0), grad=False)
    for lib in (torch, ember):
        with pytest.raises(RuntimeError, match="bins must be > 0, but got 0"):
            lib.histc(lib.ones(2), bins=0)
        with pytest.raises(RuntimeError, match="max must be larger than min"):
            lib.histc(lib.ones(2), bins=4, min=3, max=1)
        with pytest.raises(RuntimeError, match=r"range of \[1, inf\] is not finite"):
            lib.histc(lib.tensor([1.0, float("inf")]), bins=4)
        with pytest.raises(RuntimeError, match=r"range of \[-?nan, -?nan\] is not finite"):   # the data's range
            lib.histc(lib.tensor([1.0, float("nan")]), bins=4)
        with pytest.raises(NotImplementedError, match="histc|histogram"):
            lib.histc(lib.tensor([1, 2]))
    raises_exactly(lambda: ember.histc(ember.ones(2), bins=4, min=3, max=1), RuntimeError,
                   "histc: max must be larger than min, got min=3, max=1")


@pytest.mark.parametrize("size", [(3, 1), (1, 3, 1), (2, 3, 4), (), (4,), (1, 1, 4), (2, 1, 1)])
def test_sum_to_size(size):
    if size:   # x.sum_to_size() with no size is a TypeError, as torch's
        check_op(lambda L, x: x.sum_to_size(*size), (2, 3, 4))
    check_op(lambda L, x: x.sum_to_size(size), (2, 3, 4))


def test_sum_to_size_dtypes_identity_and_errors():
    check_op(lambda L, x: x.sum_to_size(2, 1), np.array([[1, 2, 3], [4, 5, 6]]))
    check_op(lambda L, x: x.sum_to_size(1, 3), np.array([[True, False, True], [True, True, False]]))
    x = ember.ones(2, 3)
    assert x.sum_to_size(2, 3) is x
    for lib in (torch, ember):
        with pytest.raises(TypeError, match="sum_to_size"):
            lib.ones(2).sum_to_size()
    for lib in (torch, ember):
        for bad in ((5, 3), (1, 2, 3), (0,)):
            with pytest.raises(RuntimeError, match=r"is not expandable to size"):
                lib.ones(2, 3).sum_to_size(*bad)
    raises_exactly(lambda: x.sum_to_size(1, 2, 3), RuntimeError,
                   "sum_to_size: size [1, 2, 3] is not expandable to size [2, 3]")


@pytest.mark.parametrize("p,dim,maxnorm", [(2, 0, 1.0), (1, -1, 2.5), (float("inf"), 1, 0.5), (0.5, 2, 10.0),
                                            (3, 1, 100.0), (2, 0, 0.0)])
def test_renorm(p, dim, maxnorm):
    check_op(lambda L, x: L.renorm(x, p, dim, maxnorm), (3, 4, 2))
    check_op(lambda L, x: x.renorm(p, dim % 2, maxnorm), (5, 3))
    check_op(lambda L, x: (x * 1).renorm_(p, dim % 2, maxnorm), (5, 3))


@pytest.mark.parametrize("p", [1, 2, 3, float("inf")])
def test_renorm_at_nan_and_inf_as_torch(p):
    # a slice with a NaN norm (not > maxnorm) keeps its values and its gradient, as torch's where (was NaN
    # through the unused branch's norm backward); an inf norm scales its slice by 0. (Not matched: a 0
    # in a slice with an inf norm at p = 3: torch's norm_backward gives 0 * NaN, Ember's norm 0.)
    x = np.array([[1.0, np.nan, 2.0], [3.0, -4.0, 0.5], [np.inf, 1.0, -2.0], [0.1, 0.2, 0.1]])
    for dim, maxnorm in ((0, 1.0), (1, 1.0), (0, 0.0), (1, 50.0)):
        check_op(lambda L, a: L.renorm(a, p, dim, maxnorm), x)


def test_renorm_of_empty_and_errors():
    check_op(lambda L, x: L.renorm(x, 2, 0, 1.0), (0, 3))
    x = ember.ones(2, 2)
    assert x.renorm_(2, 0, 1.0) is x and np.allclose(x.numpy(), 0.5 ** 0.5 / (1 + 1e-7 / 2 ** 0.5))
    for lib in (torch, ember):
        for p in (0, -1):
            with pytest.raises(RuntimeError, match="renorm: non-positive-norm not supported"):
                lib.renorm(lib.ones(2, 2), p, 1, 5)
        with pytest.raises(RuntimeError, match="renorm: expected maxnorm to be >= 0 but got -5"):
            lib.renorm(lib.ones(2, 2), 2, 1, -5)
        with pytest.raises(RuntimeError, match="renorm: input needs at least 2 dimensions, got 1 dimensions"):
            lib.renorm(lib.ones(2), 2, 0, 1)
        with pytest.raises(IndexError, match="Dimension out of range"):
            lib.renorm(lib.ones(2, 2), 2, 2, 1)
    raises_exactly(lambda: ember.renorm(ember.ones(2, 2), 0, 1, 5), RuntimeError,
                   "renorm: non-positive-norm not supported, got p=0")
    raises_exactly(lambda: ember.renorm(ember.ones(2, 2, dtype=ember.int64), 2, 0, 1), RuntimeError,
                   "renorm: expected a floating point input, got (2, 2) int64 cpu")


def test_docstring_examples():
    import doctest
    import math
    result = doctest.testmod(ember.ops.reductions, extraglobs={"ember": ember, "math": math})
    assert result.attempted > 10 and result.failed == 0
# ------------------------------------------------------------------ cov, corrcoef
FW = np.array([1, 3, 0, 2, 1])                 # integral frequency weights (one observation weighted 0)
AW = np.array([0.5, 1.0, 2.0, 0.25, 1.5])      # float observation weights


@pytest.mark.parametrize("name,fn,inputs", [
    ("default", lambda L, x: L.cov(x), [(3, 5)]),
    ("one_variable", lambda L, x: L.cov(x), [(5,)]),
    ("correction_0", lambda L, x: L.cov(x, correction=0), [(3, 5)]),
    ("correction_2", lambda L, x: x.cov(correction=2), [(2, 5)]),
    ("fweights", lambda L, x, f: L.cov(x, fweights=f), [(3, 5), FW]),
    ("aweights", lambda L, x, a: L.cov(x, aweights=a), [(3, 5), AW]),
    ("aweights_no_grad", lambda L, x, a: L.cov(x, aweights=a), [(3, 5), NoGrad(AW)]),
    ("both_weights", lambda L, x, f, a: L.cov(x, fweights=f, aweights=a), [(3, 5), FW, AW]),
    ("both_weights_correction_0", lambda L, x, f, a: L.cov(x, correction=0, fweights=f, aweights=a), [(3, 5), FW, AW]),
    ("both_weights_correction_3", lambda L, x, f, a: L.cov(x, correction=3, fweights=f, aweights=a), [(3, 5), FW, AW]),
    ("corrcoef", lambda L, x: L.corrcoef(x), [(3, 5)]),
    ("corrcoef_method", lambda L, x: x.corrcoef(), [(4, 6)]),
    ("corrcoef_one_variable", lambda L, x: L.corrcoef(x), [(5,)]),
], ids=lambda v: v if isinstance(v, str) else "")
def test_cov_and_corrcoef_match_torch(name, fn, inputs):
    check_op(fn, *inputs, atol=1e-5, rtol=1e-5, grad_atol=1e-4, grad_rtol=1e-4)


def test_cov_of_integers_promotes_and_too_few_observations_warn_as_torch():
    check_op(lambda L, x: L.cov(x), np.array([[1, 2, 4], [0, 3, 3]]))
    check_op(lambda L, x: L.corrcoef(x), np.array([[1, 2, 4], [0, 3, 3]]))
    for shape, correction in [((2, 1), 1), ((2, 3), 3), ((2, 3), 5)]:
        with pytest.warns(UserWarning, match=r"cov\(\): degrees of freedom is <= 0"):
            check_op(lambda L, x: L.cov(x, correction=correction), shape)


@pytest.mark.parametrize("call,exc,fragment", [
    (lambda L: L.cov(L.ones(2, 3, 4)), RuntimeError,
     "cov(): expected input to have two or fewer dimensions but got an input with 3 dimensions"),
    (lambda L: L.cov(L.ones(2, 3, dtype=L.bool)), RuntimeError, "cov(): bool dtype is not supported for input"),
    (lambda L: L.cov(L.ones(2, 3), correction=0.5), TypeError, "cov(): argument 'correction' must be int, not float"),
    (lambda L: L.cov(L.ones(2, 3), fweights=L.tensor([1.0, 2, 3])), RuntimeError,
     "cov(): expected fweights to have integral dtype but got fweights with Float dtype"),
    (lambda L: L.cov(L.ones(2, 3), fweights=L.tensor([1, -2, 3])), RuntimeError, "cov(): fweights cannot be negative"),
    (lambda L: L.cov(L.ones(2, 3), fweights=L.tensor([[1, 2, 3]])), RuntimeError,
     "cov(): expected fweights to have one or fewer dimensions but got fweights with 2 dimensions"),
    (lambda L: L.cov(L.ones(2, 3), fweights=L.tensor([1, 2])), RuntimeError,
     "cov(): expected fweights to have the same numel as there are observations in the input but got 2 != 3"),
    (lambda L: L.cov(L.ones(2, 3), aweights=L.tensor([1, 2, 3])), RuntimeError,
     "cov(): expected aweights to have floating point dtype but got aweights with Long dtype"),
    (lambda L: L.cov(L.ones(2, 3), aweights=L.tensor([1.0, -2, 3])), RuntimeError, "cov(): aweights cannot be negative"),
    (lambda L: L.cov(L.ones(2, 3), aweights=L.zeros(3)), RuntimeError, "cov(): weights sum to zero, can't be normalized"),
    (lambda L: L.corrcoef(L.ones(2, 3, 4)), RuntimeError,
     "corrcoef(): expected input to have two or fewer dimensions but got an input with 3 dimensions"),
], ids=lambda v: v[:40] if isinstance(v, str) else "")
def test_cov_errors_as_torch(call, exc, fragment):
    assert "test_reductions.py:" in str(raises_as_torch(call, exc, fragment))


def test_cov_double_backward():
    x = ember.tensor(np.random.default_rng(0).standard_normal((3, 5)), requires_grad=True)
    a = ember.tensor(AW, requires_grad=True)
    fn = lambda x, a: ember.corrcoef(x).sum() + ember.cov(x, aweights=a).sum()   # noqa: E731
    assert ember.autograd.gradcheck(fn, (x, a)) and ember.autograd.gradgradcheck(fn, (x, a))
