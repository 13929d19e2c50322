"""LBFGS against torch on the Rosenbrock function, with and without the strong-Wolfe line search."""
import math

import numpy as np
import pytest
import torch

import ember

START = np.array([-1.5, 2.0, -0.5, 1.2])


def rosenbrock(x):
    # the extended Rosenbrock function over pairs of coordinates
    a, b = x[0::2], x[1::2]
    return ((1 - a) ** 2 + 100 * (b - a ** 2) ** 2).sum()


def lbfgs_run(lib, kwargs, dtype, calls):
    """x and the returned loss after each of `calls` calls of step(closure)."""
    x = lib.tensor(START, dtype=getattr(lib, dtype), requires_grad=True)
    opt = lib.optim.LBFGS([x], **kwargs)

    def closure():
        opt.zero_grad()
        loss = rosenbrock(x)
        loss.backward()
        return loss

    xs, losses = [], []
    for _ in range(calls):
        losses.append(opt.step(closure).item())
        xs.append(x.detach().numpy().copy())
    return np.array(xs), np.array(losses), opt


CASES = [
    (dict(lr=0.1), "float64", 5),
    (dict(lr=1, line_search_fn="strong_wolfe"), "float64", 4),
    (dict(lr=1, max_iter=5, history_size=3, line_search_fn="strong_wolfe"), "float64", 6),
    (dict(lr=0.05, max_iter=7, history_size=2), "float64", 5),
    (dict(lr=1, max_iter=50, max_eval=20, line_search_fn="strong_wolfe"), "float64", 2),
    # float32 Rosenbrock amplifies last-bit differences of reductions, so a short run
    (dict(lr=1, max_iter=5, line_search_fn="strong_wolfe"), "float32", 1),
    (dict(lr=0.1), "float32", 2),
]


@pytest.mark.parametrize("kwargs,dtype,calls", CASES, ids=[str(i) for i in range(len(CASES))])
def test_lbfgs_matches_torch(kwargs, dtype, calls):
    x_t, loss_t, opt_t = lbfgs_run(torch, kwargs, dtype, calls)
    x_e, loss_e, opt_e = lbfgs_run(ember, kwargs, dtype, calls)
    # Rosenbrock's curvature amplifies last-bit differences (another NumPy or BLAS sums in another
    # order): after a few steps float64 trajectories differ by ~1e-8 relative. A wrong two-loop
    # recursion, history or line search moves them by far more than 1e-6.
    tol = dict(rtol=1e-6, atol=1e-9) if dtype == "float64" else dict(rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(x_e, x_t, **tol)
    np.testing.assert_allclose(loss_e, loss_t, **tol)
    (st,), (se,) = opt_t.state.values(), opt_e.state.values()
    assert se["n_iter"] == st["n_iter"] and se["func_evals"] == st["func_evals"]


def test_strong_wolfe_reaches_the_minimum():
    x, losses, _ = lbfgs_run(ember, dict(lr=1, max_iter=100, line_search_fn="strong_wolfe"), "float64", 2)
    np.testing.assert_allclose(x[-1], np.ones(4), atol=1e-4)


def test_lbfgs_needs_a_closure_and_one_group():
    x = ember.tensor([1.0], requires_grad=True)
    with pytest.raises(ValueError, match="closure is required"):
        ember.optim.LBFGS([x]).step()
    with pytest.raises(ValueError, match="parameter groups are not supported"):
        ember.optim.LBFGS([{"params": [x]}, {"params": [ember.tensor([2.0], requires_grad=True)]}])


def test_lbfgs_state_dict_round_trip_continues_identically():
    kwargs = dict(lr=1, max_iter=4, line_search_fn="strong_wolfe")
    full, _, _ = lbfgs_run(ember, kwargs, "float64", 4)
    x = ember.tensor(START, dtype=ember.float64, requires_grad=True)
    opt = ember.optim.LBFGS([x], **kwargs)

    def closure():
        opt.zero_grad()
        loss = rosenbrock(x)
        loss.backward()
        return loss

    opt.step(closure)
    opt.step(closure)
    state = opt.state_dict()
    x2 = ember.tensor(x.detach().numpy().copy(), requires_grad=True)
    opt2 = ember.optim.LBFGS([x2], **kwargs)
    opt2.load_state_dict(state)

    def closure2():
        opt2.zero_grad()
        loss = rosenbrock(x2)
        loss.backward()
        return loss

    opt2.step(closure2)
    opt2.step(closure2)
    np.testing.assert_array_equal(x2.detach().numpy(), full[-1])


RNG = np.random.default_rng(1)
XS = RNG.standard_normal((6, 2))
YS = RNG.standard_normal((6, 3))
W_START = RNG.standard_normal((2, 3))
B_START = RNG.standard_normal(3) * 0.1


def regression_run(lib, kwargs, calls, start=(W_START, B_START)):
    """Two parameters of different shapes and one that never gets a gradient, as one flat vector."""
    w = lib.tensor(start[0], dtype=lib.float64, requires_grad=True)
    b = lib.tensor(start[1], dtype=lib.float64, requires_grad=True)
    unused = lib.tensor([5.0, 6.0], dtype=lib.float64, requires_grad=True)
    opt = lib.optim.LBFGS([w, unused, b], **kwargs)
    x_, y_ = lib.tensor(XS, dtype=lib.float64), lib.tensor(YS, dtype=lib.float64)

    def closure():
        opt.zero_grad()
        r = x_ @ w + b - y_
        loss = (r * r).sum() + 0.1 * (w * w * w * w).sum()
        loss.backward()
        return loss

    rows = []
    for _ in range(calls):
        loss = opt.step(closure).item()
        state = opt.state[w]
        rows.append((np.concatenate([w.detach().numpy().ravel(), unused.detach().numpy(), b.detach().numpy()]),
                     loss, state["n_iter"], state["func_evals"]))
    return rows, opt


REGRESSION_CASES = [
    dict(lr=1),
    dict(lr=1, line_search_fn="strong_wolfe"),
    dict(lr=0.2, max_iter=6, history_size=1),
    dict(lr=1, max_iter=10, history_size=2, line_search_fn="strong_wolfe"),
    dict(lr=8, max_iter=6, line_search_fn="strong_wolfe"),            # too long a first step: the zoom phase
    dict(lr=0.01, max_iter=6, line_search_fn="strong_wolfe"),         # too short: extrapolation
    dict(lr=1, max_iter=40, tolerance_change=1e-3),                   # stops on a small change of the loss
    dict(lr=1, max_iter=40, tolerance_grad=1e-2, line_search_fn="strong_wolfe"),
    dict(lr=1, max_iter=40, max_eval=9, line_search_fn="strong_wolfe"),
    dict(lr=0.5, max_iter=40, max_eval=7),
]


@pytest.mark.parametrize("kwargs", REGRESSION_CASES, ids=[str(i) for i in range(len(REGRESSION_CASES))])
def test_lbfgs_several_parameters_match_torch(kwargs):
    ours, opt_e = regression_run(ember, kwargs, 3)
    theirs, opt_t = regression_run(torch, kwargs, 3)
    for (x_e, loss_e, n_e, f_e), (x_t, loss_t, n_t, f_t) in zip(ours, theirs):
        np.testing.assert_allclose(x_e, x_t, rtol=1e-7, atol=1e-10)
        np.testing.assert_allclose(loss_e, loss_t, rtol=1e-7, atol=1e-12)
        assert (n_e, f_e) == (n_t, f_t)
    se, st = opt_e.state[opt_e.param_groups[0]["params"][0]], opt_t.state[opt_t.param_groups[0]["params"][0]]
    assert len(se["old_dirs"]) == len(st["old_dirs"]) and len(se["ro"]) == len(st["ro"])
    np.testing.assert_allclose(np.array(se["ro"], dtype=float), [float(r) for r in st["ro"]], rtol=1e-6)
    np.testing.assert_allclose(float(se["H_diag"]), float(st["H_diag"]), rtol=1e-6)
    np.testing.assert_allclose(float(se["t"]), float(st["t"]), rtol=1e-6)
    np.testing.assert_allclose(se["prev_loss"], st["prev_loss"], rtol=1e-7)
    np.testing.assert_allclose(se["d"].numpy(), st["d"].numpy(), rtol=1e-5, atol=1e-9)


def test_lbfgs_at_a_minimum_returns_after_one_evaluation():
    for lib in (ember, torch):
        rows, _ = regression_run(lib, dict(lr=1, max_iter=100, line_search_fn="strong_wolfe"), 3)
        x_min = rows[-1][0]                                   # w (6), unused (2), b (3)
        start = (x_min[:6].reshape(2, 3), x_min[8:])
        rows, opt = regression_run(lib, dict(lr=1, tolerance_grad=1e-3), 2, start=start)
        assert [r[2:] for r in rows] == [(0, 1), (0, 2)]     # no iteration, one closure call per step
        np.testing.assert_array_equal(rows[-1][0], x_min)
        assert "d" not in opt.state[opt.param_groups[0]["params"][0]]


# The line search and its cubic interpolation directly against torch's (private, but the algorithm
# Ember follows step by step): every branch of the bracketing and zoom phases, on the same numbers.
from ember.optim.lbfgs import _cubic_interpolate, _strong_wolfe  # noqa: E402
from torch.optim.lbfgs import _cubic_interpolate as torch_cubic, _strong_wolfe as torch_strong_wolfe  # noqa: E402


def _cubic_inputs():
    rng = np.random.default_rng(2)
    cases = []
    for _ in range(300):
        x1, x2 = rng.uniform(-2, 3, size=2)
        f1, f2, g1, g2 = rng.standard_normal(4) * rng.choice([0.1, 1, 10])
        bounds = None if rng.random() < 0.5 else tuple(sorted(rng.uniform(-3, 4, size=2)))
        cases.append((x1, f1, g1, x2, f2, g2, bounds))
    cases += [(1.0, 2.0, -1.0, 1.0 + 2 ** -20, 2.0, 1.0, None),      # nearly equal points
              (2.0, 1.0, 0.5, 0.0, 1.0, -0.5, None), (0.0, 1.0, -0.5, 2.0, 1.0, 0.5, None),   # symmetric: d2 == 0
              (0.0, 1.0, -1.0, 1.0, 0.0, -2.0, (0.5, 3.0)),
              (0.0, 0.0, 1.0, 1.0, 1.0, 4.0, None), (1.0, 1.0, 4.0, 0.0, 0.0, 1.0, None)]   # d2 == 0 exactly
    return cases


def test_cubic_interpolate_matches_torch():
    for x1, f1, g1, x2, f2, g2, bounds in _cubic_inputs():
        ours = _cubic_interpolate(x1, f1, np.float64(g1), x2, f2, np.float64(g2), bounds=bounds)
        theirs = torch_cubic(x1, f1, torch.tensor(g1, dtype=torch.float64), x2, f2,
                             torch.tensor(g2, dtype=torch.float64), bounds=bounds)
        assert math.isclose(float(ours), float(theirs), rel_tol=1e-12, abs_tol=1e-12), (x1, f1, g1, x2, f2, g2, bounds)


def _rosen(z):
    a, b = z[0::2], z[1::2]
    f = ((1 - a) ** 2 + 100 * (b - a ** 2) ** 2).sum()
    g = np.empty_like(z)
    g[0::2] = -2 * (1 - a) - 400 * a * (b - a ** 2)
    g[1::2] = 200 * (b - a ** 2)
    return f, g


def _bowl(z):
    # convex, quartic away from the origin: long steps overshoot, short ones must be extrapolated
    scale = np.arange(1.0, z.size + 1)
    return (scale * z ** 4).sum() + 0.5 * (z ** 2).sum(), 4 * scale * z ** 3 + z


def _walls(z):
    # pseudo-Huber between steep exponential walls: cubic fits land near the ends of the bracket
    root = np.sqrt(1 + z ** 2)
    return (root + 0.1 * np.cosh(3 * z)).sum(), z / root + 0.3 * np.sinh(3 * z)


def _quadratic(z):
    scale = np.arange(1.0, z.size + 1)
    return 0.5 * (scale * z * z).sum(), scale * z


def _wiggly(w, a, p):
    """|z|^p / p plus a sine ripple: slopes change sign often, so the zoom phase runs long and its cubic
    steps land near the ends of the bracket (the insufficient-progress safeguard)."""
    def fn(z):
        return ((np.abs(z) ** p / p + a * np.sin(w * z)).sum(),
                np.sign(z) * np.abs(z) ** (p - 1) + a * w * np.cos(w * z))
    fn.__name__ = f"wiggly_{w}_{a}_{p}"
    return fn


# found by a search over ripples, starts and steps; each case takes the safeguard's branches
WIGGLY = [(_wiggly(3.0, 0.3, 2.0), np.array([0.85, 1.15, 0.85]), 10.0),
          (_wiggly(7.0, 1.0, 2.0), np.array([-0.26, 0.68, -1.69]), 1.0),
          (_wiggly(15.0, 0.3, 4.0), np.array([1.11, 1.14, 1.12]), 10.0),
          (_wiggly(7.0, 1.0, 4.0), np.array([1.21, -0.25, -1.73]), 1.0),
          (_wiggly(15.0, 0.05, 2.0), np.array([-0.92, 0.69, 0.27]), 10.0),
          (_wiggly(3.0, 0.05, 2.0), np.array([-0.25, -0.29, 0.01]), 3.0),
          (_wiggly(3.0, 0.05, 2.0), np.array([-0.17, -0.72, 1.09]), 10.0),
          (_wiggly(3.0, 0.05, 2.0), np.array([-0.72, -0.47, -0.87]), 10.0)]

_QUADRATIC_T = 1.0633080695497101   # -g.d / d.(A d) from [0.3, -0.8, 1.1, 0.9] along d = -g / max|g|

LINE_SEARCHES = [  # (function, start, step t, max_ls, tolerance_change)
    (fn, start, t, max_ls, tol)
    for fn in (_rosen, _bowl, _walls)
    for start in (np.array([-1.5, 2.0, -0.5, 1.2]), np.array([0.3, -0.8, 1.1, 0.9]))
    for t in (1e-4, 1e-2, 0.3, 1.0, 5.0, 100.0)
    for max_ls, tol in ((25, 1e-9), (2, 1e-9), (1, 1e-9), (25, 1e-1), (25, 2.0))
] + [
    # on a quadratic, steps of a multiple of the exact minimiser along d: 1.95 of it lowers f enough but
    # ends on a slope too steep and uphill, so the bracket is [0, t]
    (_quadratic, np.array([0.3, -0.8, 1.1, 0.9]), k * _QUADRATIC_T, 25, 1e-9) for k in (0.3, 1.95, 2.5, 40.0)
] + [(fn, start, t, max_ls, 1e-9) for fn, start, t in WIGGLY for max_ls in (25, 4)] + [
    # found by searching for inputs on which a changed zoom phase (bracket order, the low end's update, the
    # budget's fallback bracket) gives another step than torch's
    (_wiggly(40.0, 1.0, 4.0), np.array([-1.03, 0.85, 0.84]), 1.0, 25, 1e-3),
    (_wiggly(40.0, 0.05, 2.0), np.array([-1.58, 1.95, 1.04]), 0.1, 6, 1e-9),
    (_wiggly(40.0, 0.05, 2.0), np.array([-0.06, 1.94, 0.46]), 1.0, 3, 1e-3),
    (_wiggly(40.0, 1.0, 4.0), np.array([-0.6, -1.94, 1.37]), 1.0, 25, 0.05),
    (_wiggly(15.0, 0.3, 4.0), np.array([-0.98, -0.32, 1.52]), 1.0, 6, 1e-9),
    (_wiggly(40.0, 0.05, 4.0), np.array([-1.08, 0.73, 0.24]), 1.0, 6, 0.05),
    (_wiggly(7.0, 0.05, 2.0), np.array([0.6, -0.8, 0.18]), 0.01, 3, 0.05)]


@pytest.mark.parametrize("fn,start,t,max_ls,tol", LINE_SEARCHES, ids=[str(i) for i in range(len(LINE_SEARCHES))])
def test_strong_wolfe_matches_torch(fn, start, t, max_ls, tol):
    f0, g0 = fn(start)
    _compare_line_search(fn, start, t, max_ls, tol, -g0 / np.abs(g0).max())   # a descent direction of max-norm 1


@pytest.mark.parametrize("t,tol", [(1e-3, 1e-9), (1e-3, 0.05), (0.01, 0.5), (0.01, 5.0)])
def test_strong_wolfe_with_a_long_direction_matches_torch(t, tol):
    # d = -g on Rosenbrock (max-norm ~ 300): the bracket-too-small test scales the bracket by |d|
    f0, g0 = _rosen(START)
    _compare_line_search(_rosen, START, t, 25, tol, -g0)


def _compare_line_search(fn, start, t, max_ls, tol, d):
    f0, g0 = fn(start)
    calls = {"ember": [], "torch": []}

    def ember_obj(x, step, direction):
        calls["ember"].append(step)
        f, g = fn(start + step * direction)
        return float(f), g

    def torch_obj(x, step, direction):
        calls["torch"].append(float(step))
        f, g = fn(start + float(step) * direction.numpy())
        return float(f), torch.from_numpy(g)

    gtd = np.float64(g0 @ d)
    ours = _strong_wolfe(ember_obj, None, t, d, float(f0), g0.copy(), gtd, tolerance_change=tol, max_ls=max_ls)
    theirs = torch_strong_wolfe(torch_obj, None, t, torch.from_numpy(d), float(f0), torch.from_numpy(g0.copy()),
                                torch.tensor(gtd), tolerance_change=tol, max_ls=max_ls)
    np.testing.assert_allclose(calls["ember"], calls["torch"], rtol=1e-10)   # the same trial steps
    assert math.isclose(float(ours[0]), float(theirs[0]), rel_tol=1e-10)     # f at the chosen step
    np.testing.assert_allclose(ours[1], theirs[1].numpy(), rtol=1e-10, atol=1e-12)
    assert math.isclose(float(ours[2]), float(theirs[2]), rel_tol=1e-10)     # the step
    assert ours[3] == theirs[3]                                              # evaluations


def test_lbfgs_errors_exact_message():
    x = ember.tensor([1.0], requires_grad=True)
    with pytest.raises(ValueError) as info:
        ember.optim.LBFGS([x]).step()
    assert str(info.value) == ("LBFGS.step: a closure is required (it re-evaluates the loss and its gradients: "
                               "zero_grad(), loss = ..., loss.backward(), return loss)")
    with pytest.raises(ValueError) as info:
        ember.optim.LBFGS([{"params": [x]}, {"params": [ember.tensor([2.0], requires_grad=True)]}])
    assert str(info.value) == ("LBFGS: parameter groups are not supported (all parameters share one flat vector); "
                               "pass a single list of parameters")


def l1_run(lib, kwargs, calls, float_loss=False, dtype="float64", weights=(0.05, 0.1, 0.15)):
    """A weighted L1 norm: no curvature at all while no coordinate changes sign (every y.s is 0)."""
    x = lib.tensor([1.0, -2.0, 3.0], dtype=getattr(lib, dtype), requires_grad=True)
    unused = lib.tensor([7.0], dtype=getattr(lib, dtype), requires_grad=True)
    weights = lib.tensor(weights, dtype=getattr(lib, dtype))
    opt = lib.optim.LBFGS([unused, x], **kwargs)

    def closure():
        opt.zero_grad()
        loss = (weights * x.abs()).sum()
        loss.backward()
        return loss.item() if float_loss else loss   # torch and Ember accept a Python float too

    rows = []
    for _ in range(calls):
        loss = opt.step(closure)
        state = opt.state[unused]
        rows.append((x.detach().numpy().copy(), float(loss.item() if hasattr(loss, "item") else loss),
                     state["n_iter"], state["func_evals"],
                     float(state["H_diag"]), float(state["t"])))
    return rows, opt


L1_CASES = [dict(lr=0.5, max_iter=4),
            dict(lr=0.05, max_iter=6, tolerance_change=1e-2),   # stops: the parameters move by < 0.01
            dict(lr=0.5, max_iter=6, tolerance_change=0.03),    # stops: the loss changes by < 0.03
            dict(lr=3.0, max_iter=5, tolerance_change=0.3)]     # stops: g.d = -0.035 is no descent by 0.3


@pytest.mark.parametrize("float_loss", [False, True])
@pytest.mark.parametrize("kwargs", L1_CASES, ids=[str(i) for i in range(len(L1_CASES))])
def test_lbfgs_without_curvature_matches_torch(kwargs, float_loss):
    # the gradient's L1 norm is 0.3 < 1: the first step is lr * 1 (not lr / 0.3), H stays the identity
    ours, _ = l1_run(ember, kwargs, 3, float_loss)
    theirs, _ = l1_run(torch, kwargs, 3, float_loss)
    for row_e, row_t in zip(ours, theirs):
        np.testing.assert_allclose(row_e[0], row_t[0], rtol=1e-12)
        assert row_e[1:] == pytest.approx(row_t[1:], rel=1e-12)


def test_lbfgs_stops_on_small_parameter_change_before_the_loss_settles():
    # weights 0.9: the first step t = 0.027 / 2.7 = 0.01 moves each coordinate by 0.009 <= 0.01 while the
    # loss drops by 0.0243 > 0.01, so only the parameter test stops the iterations
    kwargs = dict(lr=0.027, max_iter=6, tolerance_change=0.01)
    ours, _ = l1_run(ember, kwargs, 2, weights=(0.9, 0.9, 0.9))
    theirs, _ = l1_run(torch, kwargs, 2, weights=(0.9, 0.9, 0.9))
    assert [r[2:4] for r in ours] == [r[2:4] for r in theirs] == [(1, 2), (7, 8)]   # then steps of lr: 6 more
    np.testing.assert_allclose(ours[-1][0], theirs[-1][0], rtol=1e-12)


def test_lbfgs_float32_keeps_its_dtype_with_a_parameter_without_gradient():
    _, opt = l1_run(ember, dict(lr=0.5, max_iter=3), 1, dtype="float32")
    state = opt.state[opt.param_groups[0]["params"][0]]
    assert state["d"].dtype == ember.float32 and state["prev_flat_grad"].dtype == ember.float32


def exact_run(lib, start, kwargs):
    """L1 norm of x - 1, from a start where one step of lr lands exactly on the minimum (gradient 0)."""
    x = lib.tensor(start, dtype=lib.float64, requires_grad=True)
    weights = lib.tensor([0.1, 0.2], dtype=lib.float64)
    opt = lib.optim.LBFGS([x], **kwargs)

    def closure():
        opt.zero_grad()
        loss = (weights * (x - 1).abs()).sum()
        loss.backward()
        return loss

    opt.step(closure)
    state = opt.state[x]
    return x.detach().numpy().tolist(), state["n_iter"], state["func_evals"]


@pytest.mark.parametrize("start", [[1.0, 1.0], [1.05, 0.9]], ids=["at-minimum", "one-step-away"])
def test_lbfgs_with_zero_tolerance_stops_on_an_exactly_zero_gradient(start):
    # tolerance_grad=0: a gradient of exactly 0 (at the start, or after a step) still counts as optimal
    kwargs = dict(lr=0.5, max_iter=5, tolerance_grad=0.0, tolerance_change=0.0)
    ours, theirs = exact_run(ember, start, kwargs), exact_run(torch, start, kwargs)
    assert ours == theirs and ours[0] == [1.0, 1.0]
