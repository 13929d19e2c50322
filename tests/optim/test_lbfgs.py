"""LBFGS against torch on the Rosenbrock function, with and without the strong-Wolfe line search."""
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
