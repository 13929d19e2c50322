"""ember/optim/swa_utils.py: AveragedModel (SWA, EMA, custom averages, buffers), update_bn and SWALR
against torch.optim.swa_utils, step by step on the same weights and data."""
import numpy as np
import pytest
import torch

import ember
from helpers import raises_as_torch


def _model(L):
    m = L.nn.Sequential(L.nn.Linear(3, 4), L.nn.BatchNorm1d(4), L.nn.ReLU(), L.nn.Linear(4, 2))
    with L.no_grad():
        for k, p in enumerate(m.parameters()):
            p.copy_(L.tensor(np.sin(np.arange(p.numel()) * 0.7 + k).reshape(tuple(p.shape)), dtype=L.float32))
    return m


X = np.cos(np.arange(24 * 3) * 0.3).reshape(24, 3).astype(np.float32)


def _trajectory(L, make_avg, steps=5):
    model = _model(L)
    avg = make_avg(L, model)
    opt = L.optim.SGD(model.parameters(), lr=0.1)
    x = L.tensor(X)
    out = []
    for _ in range(steps):
        loss = model(x).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        avg.update_parameters(model)
        out.append([t.detach().numpy().copy() for t in list(avg.parameters()) + list(avg.buffers())])
    return out, avg


AVERAGES = {
    "swa": lambda L, m: L.optim.swa_utils.AveragedModel(m),
    "ema_multi": lambda L, m: L.optim.swa_utils.AveragedModel(
        m, multi_avg_fn=L.optim.swa_utils.get_ema_multi_avg_fn(0.9)),
    "ema_fn": lambda L, m: L.optim.swa_utils.AveragedModel(m, avg_fn=L.optim.swa_utils.get_ema_avg_fn(0.8)),
    "swa_fn": lambda L, m: L.optim.swa_utils.AveragedModel(m, avg_fn=L.optim.swa_utils.get_swa_avg_fn()),
    # (get_swa_multi_avg_fn with use_buffers: torch's addcdiv raises on BatchNorm's int64 counter)
    "ema_buffers": lambda L, m: L.optim.swa_utils.AveragedModel(
        m, multi_avg_fn=L.optim.swa_utils.get_ema_multi_avg_fn(0.5), use_buffers=True),
    "custom": lambda L, m: L.optim.swa_utils.AveragedModel(m, avg_fn=lambda a, p, n: 0.25 * a + 0.75 * p),
}


@pytest.mark.parametrize("name", list(AVERAGES))
def test_averaged_model_as_torch(name):
    want, t_avg = _trajectory(torch, AVERAGES[name])
    got, e_avg = _trajectory(ember, AVERAGES[name])
    for w_step, g_step in zip(want, got):
        assert len(w_step) == len(g_step)
        for w, g in zip(w_step, g_step):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    assert int(e_avg.n_averaged) == int(t_avg.n_averaged) == 5
    assert list(e_avg.state_dict()) == list(t_avg.state_dict())
    x = X[:4]
    np.testing.assert_allclose(e_avg.eval()(ember.tensor(x)).detach().numpy(),
                               t_avg.eval()(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_update_bn_as_torch():
    batches = [X[:8], X[8:16], X[16:]]
    models = {}
    for L in (torch, ember):
        m = _model(L)
        m[1].momentum = 0.3
        m.eval()
        loader = [(L.tensor(b), L.tensor([0] * len(b))) for b in batches[:2]] + [L.tensor(batches[2])]
        L.optim.swa_utils.update_bn(loader, m)
        assert not m.training and m[1].momentum == 0.3
        models[L] = m
    for name in ("running_mean", "running_var", "num_batches_tracked"):
        np.testing.assert_allclose(getattr(models[ember][1], name).numpy(), getattr(models[torch][1], name).numpy(),
                                   rtol=1e-5, atol=1e-7)
    for L in (torch, ember):     # no BatchNorm (InstanceNorm is not one): nothing runs
        m = L.nn.Sequential(L.nn.InstanceNorm1d(3, track_running_stats=True))
        L.optim.swa_utils.update_bn([L.ones(2, 3, 4)], m)
        assert m[0].running_mean.sum().item() == 0


@pytest.mark.parametrize("strategy", ["cos", "linear"])
@pytest.mark.parametrize("anneal_epochs", [0, 1, 3])
def test_swalr_as_torch(strategy, anneal_epochs):
    lrs = {}
    for L in (torch, ember):
        w = L.zeros(1, requires_grad=True)
        opt = L.optim.SGD([{"params": [w]}, {"params": [L.zeros(1, requires_grad=True)], "lr": 0.5}], lr=0.1)
        sched = L.optim.swa_utils.SWALR(opt, swa_lr=[0.05, 0.2], anneal_epochs=anneal_epochs,
                                        anneal_strategy=strategy)
        got = [sched.get_last_lr()]
        for _ in range(6):
            opt.step()
            sched.step()
            got.append(sched.get_last_lr())
        lrs[L] = got
    np.testing.assert_allclose(lrs[ember], lrs[torch], rtol=1e-12)


def test_swa_utils_errors_as_torch():
    def opt(L):
        return L.optim.SGD([L.zeros(1, requires_grad=True)], lr=0.1)
    raises_as_torch(lambda L: L.optim.swa_utils.get_ema_multi_avg_fn(1.5), ValueError, "Invalid decay value 1.5")
    raises_as_torch(lambda L: L.optim.swa_utils.get_ema_avg_fn(-0.1), ValueError, "Invalid decay value -0.1")
    raises_as_torch(lambda L: L.optim.swa_utils.SWALR(opt(L), 0.1, anneal_strategy="exp"), ValueError,
                    "anneal_strategy must be one of 'cos' or 'linear', instead got exp")
    raises_as_torch(lambda L: L.optim.swa_utils.SWALR(opt(L), 0.1, anneal_epochs=-1), ValueError,
                    "anneal_epochs must be equal or greater than 0, got -1")
    raises_as_torch(lambda L: L.optim.swa_utils.AveragedModel(L.nn.Linear(1, 1), avg_fn=lambda a, b, n: a,
                                                               multi_avg_fn=lambda a, b, n: None),
                    AssertionError, "Only one of avg_fn and multi_avg_fn should be provided")
