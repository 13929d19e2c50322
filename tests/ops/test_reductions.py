"""ember/ops/reductions.py against torch: nansum, nanmean, aminmax, diff, cov, corrcoef."""
import numpy as np
import pytest
import torch

import ember
from helpers import check_op, raises_exactly, NoGrad


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
    import re
    with pytest.raises(exc, match=re.escape(fragment)):
        call(torch)
    with pytest.raises(exc, match=re.escape(fragment)) as e:
        call(ember)
    assert "test_reductions.py:" in str(e.value)


def test_cov_double_backward():
    x = ember.tensor(np.random.default_rng(0).standard_normal((3, 5)), requires_grad=True)
    a = ember.tensor(AW, requires_grad=True)
    fn = lambda x, a: ember.corrcoef(x).sum() + ember.cov(x, aweights=a).sum()   # noqa: E731
    assert ember.autograd.gradcheck(fn, (x, a)) and ember.autograd.gradgradcheck(fn, (x, a))
