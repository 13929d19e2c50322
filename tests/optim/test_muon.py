"""Muon against torch.optim.Muon (its Newton-Schulz iteration runs in bfloat16 on both sides), and SparseAdam's
refusal of dense gradients."""
import copy

import numpy as np
import pytest
import torch

import ember

RNG = np.random.default_rng(1)
X = RNG.standard_normal((16, 5))
Y = RNG.standard_normal((16, 3))
TALL = RNG.standard_normal((5, 3))     # rows > cols: orthogonalised through its transpose
WIDE = RNG.standard_normal((3, 5))


def run(lib, dtype, kwargs, w0, steps=10, state=None):
    w = lib.tensor(w0, dtype=getattr(lib, dtype), requires_grad=True)
    opt = lib.optim.Muon([w], **kwargs)
    if state is not None:
        opt.load_state_dict(state)
    x, y = lib.tensor(X, dtype=w.dtype), lib.tensor(Y, dtype=w.dtype)
    out = []
    for _ in range(steps):
        opt.zero_grad()
        r = (x @ w if w.shape[0] == 5 else x @ w.T) - y
        ((r * r).mean() + 0.05 * (w ** 4).sum()).backward()
        opt.step()
        out.append(w.detach().numpy().copy())
    return np.array(out), opt, w


CASES = [dict(), dict(lr=0.02), dict(lr=0.02, nesterov=False, weight_decay=0.0, momentum=0.9),
         dict(lr=0.02, adjust_lr_fn="match_rms_adamw", ns_steps=3, ns_coefficients=(2.0, -1.5, 0.5)),
         dict(lr=0.05, adjust_lr_fn="original", eps=1e-3, weight_decay=0.3)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("w0", [TALL, WIDE], ids=["tall", "wide"])
@pytest.mark.parametrize("kwargs", CASES, ids=[str(i) for i in range(len(CASES))])
def test_muon_trajectory_matches_torch(kwargs, w0, dtype):
    expected, opt_t, _ = run(torch, dtype, kwargs, w0)
    actual, opt_e, _ = run(ember, dtype, kwargs, w0)
    assert actual.dtype == expected.dtype
    assert not np.allclose(expected[-1], w0, atol=1e-3)    # it moved
    # the same bfloat16 rounding as torch's: equal up to float32 reordering, not just bfloat16's 3 digits
    np.testing.assert_allclose(actual, expected, rtol=0, atol=1e-6 if dtype == "float32" else 1e-12)
    buf_e, buf_t = opt_e.state_dict()["state"][0]["momentum_buffer"], opt_t.state_dict()["state"][0]["momentum_buffer"]
    np.testing.assert_allclose(buf_e.numpy(), buf_t.numpy(), rtol=1e-5, atol=1e-7)


def test_muon_state_dict_round_trip_and_torch_state():
    full, _, _ = run(ember, "float64", dict(lr=0.02), TALL, steps=12)
    first, opt, w = run(ember, "float64", dict(lr=0.02), TALL, steps=6)
    rest, _, _ = run(ember, "float64", dict(lr=0.02), w.detach().numpy(), steps=6,
                     state=copy.deepcopy(opt.state_dict()))
    np.testing.assert_array_equal(np.concatenate([first, rest]), full)
    _, opt_t, w_t = run(torch, "float64", dict(lr=0.02), TALL, steps=6)
    sd = opt_t.state_dict()
    sd["state"][0]["momentum_buffer"] = ember.tensor(sd["state"][0]["momentum_buffer"].numpy())
    from_torch, _, _ = run(ember, "float64", dict(lr=0.02), w_t.detach().numpy(), steps=6, state=sd)
    np.testing.assert_allclose(from_torch, full[6:], atol=1e-12)


def test_newton_schulz_orthogonalises():
    from ember.optim.muon import zeropower_via_newtonschulz
    g = ember.tensor(RNG.standard_normal((4, 6)), dtype=ember.float32)
    o = zeropower_via_newtonschulz(g, (3.4445, -4.7750, 2.0315), 5, 1e-7)
    assert o.dtype is ember.bfloat16 and o.shape == (4, 6)
    s = np.linalg.svd(o.float().numpy(), compute_uv=False)
    assert ((s > 0.5) & (s < 1.5)).all(), s          # singular values pushed towards 1 (torch's docstring)


def test_muon_rejects_parameters_that_are_not_matrices():
    for shape in [(3,), (2, 2, 2)]:
        with pytest.raises(ValueError, match="Muon only supports 2D parameters"):
            torch.optim.Muon([torch.zeros(shape, requires_grad=True)])
        with pytest.raises(ValueError, match=r"Muon: only supports 2D parameters, but got a parameter of shape "
                                             + str(shape).replace("(", r"\(").replace(")", r"\)")):
            ember.optim.Muon([ember.zeros(*shape, requires_grad=True)])


def test_sparse_adam_refuses_dense_gradients_like_torch():
    message = "SparseAdam does not support dense gradients, please consider Adam instead"
    for lib in (torch, ember):
        w = lib.ones(3, requires_grad=True)
        opt = lib.optim.SparseAdam([w], lr=0.1)
        opt.step()                               # no gradient yet: nothing to do
        (w * w).sum().backward()
        with pytest.raises(RuntimeError, match=message):
            opt.step()
        assert w.tolist() == [1.0, 1.0, 1.0]
    assert ember.optim.SparseAdam([w], betas=(0.5, 0.9)).defaults == \
        dict(lr=1e-3, betas=(0.5, 0.9), eps=1e-8, maximize=False)
