"""Every scheduler's learning rates (and OneCycle's momentum) over 25 steps against torch's."""
import math
import warnings

import numpy as np
import pytest
import torch

import ember
from ember.optim import lr_scheduler as ember_sched
from helpers import raises_as_torch
from ember.serialization import load, save

STEPS = 25
LONG = 40   # the schedulers without a fixed length run this many steps against torch


def make_optimizer(lib, kind="SGD"):
    w = lib.tensor([1.0], requires_grad=True)
    b = lib.tensor([2.0], requires_grad=True)
    groups = [{"params": [w]}, {"params": [b], "lr": 0.05}]
    if kind == "Adam":
        return lib.optim.Adam(groups, lr=0.1)
    return lib.optim.SGD(groups, lr=0.1, momentum=0.9)


def lambda_scale(epoch):
    return 0.9 ** epoch


class CycleScale:
    """A callable object as CyclicLR's scale_fn: its attributes are saved in the state dict."""
    def __init__(self, base):
        self.base = base

    def __call__(self, x):
        return self.base ** x


def halving_every_3(S, opt):
    """A user's scheduler: a subclass of the public base class that defines only get_lr."""
    class Halving(S.LRScheduler):
        def get_lr(self):
            return [base * 0.5 ** (self.last_epoch // 3) for base in self.base_lrs]
    return Halving(opt)


SCHEDULERS = {
    "StepLR": lambda S, o: S.StepLR(o, step_size=4, gamma=0.5),
    "MultiStepLR": lambda S, o: S.MultiStepLR(o, milestones=[3, 7, 7, 15], gamma=0.3),
    "ExponentialLR": lambda S, o: S.ExponentialLR(o, gamma=0.9),
    "CosineAnnealingLR": lambda S, o: S.CosineAnnealingLR(o, T_max=8, eta_min=0.001),
    "LinearLR": lambda S, o: S.LinearLR(o, start_factor=0.2, end_factor=0.9, total_iters=6),
    "LambdaLR": lambda S, o: S.LambdaLR(o, lambda_scale),
    "LambdaLR-list": lambda S, o: S.LambdaLR(o, [lambda_scale, lambda e: 1.0 / (1 + e)]),
    "OneCycleLR": lambda S, o: S.OneCycleLR(o, max_lr=[0.5, 0.2], total_steps=STEPS + 1),
    "OneCycleLR-linear-3phase": lambda S, o: S.OneCycleLR(o, max_lr=0.4, epochs=3, steps_per_epoch=9,
                                                          anneal_strategy="linear", three_phase=True),
    "SequentialLR": lambda S, o: S.SequentialLR(
        o, [S.LinearLR(o, start_factor=0.1, total_iters=4), S.CosineAnnealingLR(o, T_max=10)], milestones=[5]),
    "LRScheduler-subclass": halving_every_3,
    "SequentialLR-3": lambda S, o: S.SequentialLR(
        o, [S.ExponentialLR(o, gamma=0.8), S.StepLR(o, step_size=3), S.MultiStepLR(o, milestones=[2, 4])],
        milestones=[6, 14]),
    "MultiplicativeLR": lambda S, o: S.MultiplicativeLR(o, lambda e: 0.95),
    "MultiplicativeLR-list": lambda S, o: S.MultiplicativeLR(o, [lambda_scale, lambda e: 1.0 + 0.01 * (e % 3)]),
    "ConstantLR": lambda S, o: S.ConstantLR(o),
    "ConstantLR-half-7": lambda S, o: S.ConstantLR(o, factor=0.5, total_iters=7),
    "ConstantLR-1": lambda S, o: S.ConstantLR(o, factor=1.0, total_iters=1),
    "PolynomialLR": lambda S, o: S.PolynomialLR(o),
    "PolynomialLR-square": lambda S, o: S.PolynomialLR(o, total_iters=12, power=2.0),
    "PolynomialLR-sqrt": lambda S, o: S.PolynomialLR(o, total_iters=33, power=0.5),
    "CosineAnnealingWarmRestarts": lambda S, o: S.CosineAnnealingWarmRestarts(o, T_0=5),
    "CosineAnnealingWarmRestarts-mult": lambda S, o: S.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2,
                                                                                   eta_min=0.001),
    "CosineAnnealingWarmRestarts-1": lambda S, o: S.CosineAnnealingWarmRestarts(o, T_0=1, T_mult=3, eta_min=0.01),
    "CyclicLR": lambda S, o: S.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=4),
    "CyclicLR-triangular2": lambda S, o: S.CyclicLR(o, base_lr=[0.01, 0.002], max_lr=[0.1, 0.05], step_size_up=3,
                                                    step_size_down=5, mode="triangular2"),
    "CyclicLR-exp_range": lambda S, o: S.CyclicLR(o, base_lr=0.01, max_lr=0.2, step_size_up=5, mode="exp_range",
                                                  gamma=0.95, base_momentum=0.7, max_momentum=0.95),
    "CyclicLR-scale_fn-cycle": lambda S, o: S.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=2,
                                                       step_size_down=4, scale_fn=CycleScale(0.8),
                                                       base_momentum=[0.8, 0.85], max_momentum=[0.9, 0.99]),
    "CyclicLR-scale_fn-iterations": lambda S, o: S.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=3,
                                                            scale_fn=lambda x: 1 / (1 + 0.1 * x),
                                                            scale_mode="iterations", mode="ignored"),
    "CyclicLR-no-momentum": lambda S, o: S.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=6, step_size_down=0,
                                                    cycle_momentum=False),
    "ChainedScheduler": lambda S, o: S.ChainedScheduler([S.ConstantLR(o, factor=0.1, total_iters=6),
                                                         S.ExponentialLR(o, gamma=0.9)], optimizer=o),
    "ChainedScheduler-3": lambda S, o: S.ChainedScheduler([S.MultiplicativeLR(o, lambda e: 0.97),
                                                           S.PolynomialLR(o, total_iters=20, power=1.5),
                                                           S.StepLR(o, step_size=4, gamma=0.5)]),
    "ChainedScheduler-cosine": lambda S, o: S.ChainedScheduler([S.LinearLR(o, start_factor=0.2, total_iters=5),
                                                                S.CosineAnnealingLR(o, T_max=9)]),
    # SequentialLR with the new schedulers (torch's documented warm-up patterns)
    "SequentialLR-constant-poly": lambda S, o: S.SequentialLR(
        o, [S.ConstantLR(o, factor=0.1, total_iters=6), S.PolynomialLR(o, total_iters=20, power=2.0)],
        milestones=[6]),
    "SequentialLR-warm-restarts": lambda S, o: S.SequentialLR(
        o, [S.LinearLR(o, start_factor=0.1, total_iters=4), S.CosineAnnealingWarmRestarts(o, T_0=4, T_mult=2)],
        milestones=[5]),
    "SequentialLR-mult-cyclic": lambda S, o: S.SequentialLR(
        o, [S.MultiplicativeLR(o, lambda e: 0.9), S.CyclicLR(o, base_lr=0.02, max_lr=0.2, step_size_up=3)],
        milestones=[7]),
    "SequentialLR-chained-first": lambda S, o: S.SequentialLR(
        o, [S.ChainedScheduler([S.ConstantLR(o, factor=0.5, total_iters=3), S.ExponentialLR(o, gamma=0.9)]),
            S.ExponentialLR(o, gamma=0.8)], milestones=[8]),
}
NEW = ("MultiplicativeLR", "ConstantLR", "PolynomialLR", "CosineAnnealingWarmRestarts", "CyclicLR",
       "ChainedScheduler", "SequentialLR-")


def lr_history(lib, name, kind="SGD", steps=STEPS):
    opt = make_optimizer(lib, kind)
    sched = SCHEDULERS[name](lib.optim.lr_scheduler, opt)
    rows = [(sched.get_last_lr(), [g["lr"] for g in opt.param_groups], _momenta(opt))]
    for _ in range(steps):
        opt.step()
        sched.step()
        rows.append((sched.get_last_lr(), [g["lr"] for g in opt.param_groups], _momenta(opt)))
    return rows, sched, opt


def _momenta(opt):
    return [g["betas"][0] if "betas" in g else g["momentum"] for g in opt.param_groups]


def assert_rows_close(ours, theirs):
    assert len(ours) == len(theirs)
    for step, (a, b) in enumerate(zip(ours, theirs)):
        for x, y in zip(a, b):
            assert len(x) == len(y)
            assert all(math.isclose(u, v, rel_tol=1e-12, abs_tol=1e-15) for u, v in zip(x, y)), (step, a, b)


@pytest.mark.parametrize("name", list(SCHEDULERS))
def test_lr_sequence_matches_torch(name):
    steps = STEPS if name.startswith("OneCycleLR") else LONG
    ours, _, _ = lr_history(ember, name, steps=steps)
    theirs, _, _ = lr_history(torch, name, steps=steps)
    assert_rows_close(ours, theirs)


@pytest.mark.parametrize("name", [n for n in SCHEDULERS if n.startswith("CyclicLR")])
def test_cyclic_lr_cycles_adam_beta1_like_torch(name):
    ours, _, opt_e = lr_history(ember, name, kind="Adam", steps=LONG)
    theirs, _, opt_t = lr_history(torch, name, kind="Adam", steps=LONG)
    assert_rows_close(ours, theirs)
    assert [g["betas"] for g in opt_e.param_groups] == [g["betas"] for g in opt_t.param_groups]
    for group, group_t in zip(opt_e.param_groups, opt_t.param_groups):
        assert set(group) <= set(group_t)          # no option torch's scheduler would not have added
        assert ("max_momentum" in group) == ("max_momentum" in group_t)


def test_onecycle_cycles_adam_beta1():
    ours, _, opt_e = lr_history(ember, "OneCycleLR", kind="Adam")
    theirs, _, opt_t = lr_history(torch, "OneCycleLR", kind="Adam")
    assert_rows_close(ours, theirs)
    assert [g["betas"][1] for g in opt_e.param_groups] == [g["betas"][1] for g in opt_t.param_groups] == [0.999] * 2
    for group, group_t in zip(opt_e.param_groups, opt_t.param_groups):
        assert set(group) <= set(group_t)          # no option torch's scheduler would not have added


FALLING = [1.0, 0.9, 0.95, 0.95, 0.96, 0.97, 0.89, 0.9, 0.9, 0.9, 0.9, 0.9, 0.5, 0.6, 0.6, 0.6, 0.6, 0.6,
           0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6]
# rises by 1%, 4%, 0.5%, 8%, 2%, then ties: tells a relative threshold from an absolute one and > from >=
RISING = [1.0, 1.01, 1.0504, 1.055652, 1.14010416, 1.1629062432, 1.1629062432, 1.1629062432, 1.0, 1.0, 1.0, 1.0]


def plateau_history(lib, metrics=FALLING, **kwargs):
    opt = make_optimizer(lib)
    sched = lib.optim.lr_scheduler.ReduceLROnPlateau(opt, **kwargs)
    rows = []
    for m in metrics:
        opt.step()
        sched.step(m)
        rows.append((sched.get_last_lr(), [g["lr"] for g in opt.param_groups]))
    return rows


PLATEAU = [dict(patience=2), dict(mode="max", patience=1, factor=0.5), dict(patience=1, cooldown=2, min_lr=0.02),
           dict(threshold=0.05, threshold_mode="abs", patience=1, min_lr=[0.01, 0.001]),
           dict(threshold=0.0, patience=0), dict(threshold=0.1, patience=0), dict(threshold=0.1, patience=1),
           dict(metrics=[-m for m in RISING], threshold=0.03, patience=0),
           dict(metrics=[-m for m in RISING], threshold=0.03, threshold_mode="abs", patience=0),
           dict(metrics=RISING, mode="max", threshold=0.0, patience=0),
           dict(metrics=RISING, mode="max", threshold=0.03, patience=0),
           dict(metrics=RISING, mode="max", threshold=0.03, threshold_mode="abs", patience=0),
           dict(metrics=RISING, mode="max", threshold=0.045, threshold_mode="abs", patience=0),
           dict(patience=0, cooldown=2), dict(patience=1, cooldown=3, factor=0.5),
           dict(patience=0, factor=0.5, eps=0.05),   # 0.1 -> 0.05 changes the lr by exactly eps: not applied
           # around 10 a relative threshold of 3% (0.3) and an absolute one of 0.03 disagree on 10.1
           dict(metrics=[10.0, 10.1, 10.2, 10.5, 11.0, 11.0, 11.02, 12.0], mode="max", threshold=0.03, patience=0),
           dict(metrics=[10.0, 10.1, 10.2, 10.5, 11.0, 11.0, 11.02, 12.0], mode="max", threshold=0.03,
                threshold_mode="abs", patience=0)]


@pytest.mark.parametrize("kwargs", PLATEAU, ids=[str(i) for i in range(len(PLATEAU))])
def test_reduce_lr_on_plateau_matches_torch(kwargs):
    assert_rows_close(plateau_history(ember, **kwargs), plateau_history(torch, **kwargs))


@pytest.mark.parametrize("name", ["StepLR", "MultiStepLR", "CosineAnnealingLR", "OneCycleLR", "SequentialLR",
                                  "LambdaLR", "MultiplicativeLR-list", "ConstantLR-half-7", "PolynomialLR-square",
                                  "CosineAnnealingWarmRestarts-mult", "CyclicLR-triangular2", "CyclicLR-exp_range",
                                  "ChainedScheduler-3", "SequentialLR-warm-restarts", "SequentialLR-mult-cyclic"])
def test_state_dict_round_trip_through_a_checkpoint(name, tmp_path):
    full, _, _ = lr_history(ember, name)
    _, sched, opt = lr_history(ember, name, steps=10)
    path = tmp_path / "sched.safetensors"
    save({"sched": sched.state_dict(), "opt": opt.state_dict()}, path)
    ckpt = load(path)
    opt2 = make_optimizer(ember)
    sched2 = SCHEDULERS[name](ember.optim.lr_scheduler, opt2)
    opt2.load_state_dict(ckpt["opt"])
    sched2.load_state_dict(ckpt["sched"])
    rows = []
    for _ in range(STEPS - 10):
        opt2.step()
        sched2.step()
        rows.append((sched2.get_last_lr(), [g["lr"] for g in opt2.param_groups], _momenta(opt2)))
    assert_rows_close(rows, full[11:])


def test_scheduler_arguments_are_checked():
    opt = make_optimizer(ember)
    with pytest.raises(ValueError, match="step_size must be a positive integer, got 0"):
        ember_sched.StepLR(opt, step_size=0)
    with pytest.raises(ValueError, match="start_factor must be in \\(0, 1\\], got 2"):
        ember_sched.LinearLR(opt, start_factor=2)
    with pytest.raises(ValueError, match="expected 2 lr_lambdas"):
        ember_sched.LambdaLR(opt, [lambda_scale])
    with pytest.raises(ValueError, match="pass total_steps"):
        ember_sched.OneCycleLR(opt, max_lr=0.1)
    with pytest.raises(ValueError, match="factor must be < 1.0, got 2"):
        ember_sched.ReduceLROnPlateau(opt, factor=2)
    with pytest.raises(ValueError, match="expected 1 milestones"):
        ember_sched.SequentialLR(opt, [ember_sched.StepLR(opt, 2), ember_sched.StepLR(opt, 3)], milestones=[])
    with pytest.raises(KeyError, match="initial_lr"):
        ember_sched.StepLR(make_optimizer(ember), step_size=2, last_epoch=3)
    sched = ember_sched.OneCycleLR(opt, max_lr=0.1, total_steps=2)
    sched.step()
    sched.step()
    with pytest.raises(ValueError, match="total_steps is 2"):
        sched.step()


# Resuming: a scheduler built with last_epoch=k (the optimizer's groups already hold "initial_lr", as
# torch requires) must continue as torch's does. Its initial step moves to epoch k + 1 from the groups'
# current lr, so a scheduler that ignores last_epoch restarts at epoch 0 and diverges.
RESUMABLE = {
    "StepLR": lambda S, o, e: S.StepLR(o, step_size=3, gamma=0.5, last_epoch=e),
    "MultiStepLR": lambda S, o, e: S.MultiStepLR(o, milestones=[2, 7, 7, 11], gamma=0.3, last_epoch=e),
    "ExponentialLR": lambda S, o, e: S.ExponentialLR(o, gamma=0.9, last_epoch=e),
    "CosineAnnealingLR": lambda S, o, e: S.CosineAnnealingLR(o, T_max=8, eta_min=0.001, last_epoch=e),
    "LinearLR": lambda S, o, e: S.LinearLR(o, start_factor=0.2, end_factor=0.9, total_iters=9, last_epoch=e),
    "LambdaLR": lambda S, o, e: S.LambdaLR(o, lambda_scale, last_epoch=e),
    "LambdaLR-list": lambda S, o, e: S.LambdaLR(o, [lambda_scale, lambda ep: 1.0 / (1 + ep)], last_epoch=e),
    "OneCycleLR": lambda S, o, e: S.OneCycleLR(o, max_lr=[0.5, 0.2], total_steps=STEPS + 1, last_epoch=e),
    "OneCycleLR-linear-3phase": lambda S, o, e: S.OneCycleLR(o, max_lr=0.4, total_steps=STEPS + 1,
                                                             anneal_strategy="linear", three_phase=True,
                                                             last_epoch=e),
    "SequentialLR": lambda S, o, e: S.SequentialLR(
        o, [S.LinearLR(o, start_factor=0.1, total_iters=4), S.ExponentialLR(o, gamma=0.8)], milestones=[8],
        last_epoch=e),
    "MultiplicativeLR": lambda S, o, e: S.MultiplicativeLR(o, [lambda_scale, lambda ep: 0.95], last_epoch=e),
    # resumed at epoch 5, the initial step reaches total_iters and restores the lr
    "ConstantLR": lambda S, o, e: S.ConstantLR(o, factor=0.25, total_iters=6, last_epoch=e),
    "PolynomialLR": lambda S, o, e: S.PolynomialLR(o, total_iters=9, power=1.5, last_epoch=e),
    "CosineAnnealingWarmRestarts": lambda S, o, e: S.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2, eta_min=0.002,
                                                                                 last_epoch=e),
    "CyclicLR": lambda S, o, e: S.CyclicLR(o, base_lr=[0.01, 0.02], max_lr=0.1, step_size_up=3, step_size_down=2,
                                           mode="triangular2", last_epoch=e),
    "ChainedScheduler": lambda S, o, e: S.ChainedScheduler([S.ConstantLR(o, factor=0.5, total_iters=7, last_epoch=e),
                                                            S.ExponentialLR(o, gamma=0.9, last_epoch=e)]),
}


def test_every_scheduler_is_tested_for_resuming():
    public = {n for n in ember_sched.__all__ if n not in ("LRScheduler", "ReduceLROnPlateau")}
    assert public <= {n.split("-")[0] for n in RESUMABLE}


def _record(opt, sched, steps):
    def row():   # the epoch too: ExponentialLR's lrs do not depend on it (ChainedScheduler has none)
        return sched.get_last_lr(), [g["lr"] for g in opt.param_groups], _momenta(opt), \
            [getattr(sched, "last_epoch", -99)]
    rows = [row()]
    for _ in range(steps):
        opt.step()
        sched.step()
        rows.append(row())
    return rows


def resumed_history(lib, name, epoch):
    """Run `epoch` steps, then build a second scheduler on the same optimizer with last_epoch=epoch."""
    S = lib.optim.lr_scheduler
    opt = make_optimizer(lib)
    first = RESUMABLE[name](S, opt, -1)
    rows = _record(opt, first, epoch)
    return rows + _record(opt, RESUMABLE[name](S, opt, epoch), STEPS - epoch - 1)


@pytest.mark.parametrize("epoch", [1, 5])
@pytest.mark.parametrize("name", list(RESUMABLE))
def test_resuming_with_last_epoch_matches_torch(name, epoch):
    assert_rows_close(resumed_history(ember, name, epoch), resumed_history(torch, name, epoch))


def fresh_resume_history(lib, name, epoch):
    """A new optimizer whose groups carry initial_lr (as after loading a checkpoint), lr already decayed."""
    w, b = lib.tensor([1.0], requires_grad=True), lib.tensor([2.0], requires_grad=True)
    opt = lib.optim.SGD([{"params": [w], "initial_lr": 0.1, "lr": 0.02},
                         {"params": [b], "initial_lr": 0.05, "lr": 0.04}], lr=0.1, momentum=0.9)
    return _record(opt, RESUMABLE[name](lib.optim.lr_scheduler, opt, epoch), 12)


@pytest.mark.parametrize("name", [n for n in RESUMABLE if not n.startswith(("OneCycleLR", "SequentialLR"))])
def test_resuming_a_fresh_optimizer_matches_torch(name):
    assert_rows_close(fresh_resume_history(ember, name, 5), fresh_resume_history(torch, name, 5))


EPOCH_WARNING = "passing an epoch to scheduler.step() is deprecated (as in torch); call step() without arguments"


@pytest.mark.parametrize("name", [n for n in SCHEDULERS
                                  if not n.startswith(("SequentialLR", "ChainedScheduler", "CosineAnnealingWarm"))])
def test_step_with_an_epoch_uses_the_closed_form_like_torch(name):
    """step(epoch) jumps to `epoch` (torch's deprecated form): the closed form where there is one."""
    def history(lib):
        opt = make_optimizer(lib)
        sched = SCHEDULERS[name](lib.optim.lr_scheduler, opt)
        rows = []
        for epoch in [3, 8, 5, 13, 4, 0, 20, 9, 16, 17]:
            opt.step()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                sched.step(epoch)
            assert any(issubclass(w.category, UserWarning) for w in caught)
            if lib is ember:
                assert [str(w.message) for w in caught] == [EPOCH_WARNING]
            rows.append((sched.get_last_lr(), [g["lr"] for g in opt.param_groups], _momenta(opt),
                         [sched.last_epoch]))
        return rows

    assert_rows_close(history(ember), history(torch))


def test_plateau_arguments_are_checked():
    opt = make_optimizer(ember)
    for kwargs, message in [
            (dict(mode="avg"), "ReduceLROnPlateau: mode must be 'min' or 'max', got 'avg'"),
            (dict(threshold_mode="pct"), "ReduceLROnPlateau: threshold_mode must be 'rel' or 'abs', got 'pct'"),
            (dict(factor=1.0), "ReduceLROnPlateau: factor must be < 1.0, got 1.0"),
            (dict(min_lr=[0.1]), "ReduceLROnPlateau: expected 2 min_lrs (one per param group), got 1")]:
        with pytest.raises(ValueError) as info:
            ember_sched.ReduceLROnPlateau(opt, **kwargs)
        assert str(info.value) == message


def test_plateau_step_with_an_epoch_warns_and_sets_it():
    opt = make_optimizer(ember)
    sched = ember_sched.ReduceLROnPlateau(opt)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sched.step(1.0, epoch=7)
    assert [str(w.message) for w in caught] == ["passing an epoch to scheduler.step() is deprecated (as in torch)"]
    assert caught[0].category is UserWarning
    assert sched.last_epoch == 7


class Scale:
    """A callable object as lr_lambda: its attributes are saved in the state dict (a function's are not)."""
    def __init__(self, factor):
        self.factor = factor

    def __call__(self, epoch):
        return self.factor ** epoch


def test_lambda_lr_state_dict_saves_callable_objects_like_torch():
    def build(lib, factor):
        opt = make_optimizer(lib)
        return lib.optim.lr_scheduler.LambdaLR(opt, [lambda_scale, Scale(factor)]), opt

    (ours, _), (theirs, _) = build(ember, 0.5), build(torch, 0.5)
    assert ours.state_dict()["lr_lambdas"] == theirs.state_dict()["lr_lambdas"] == [None, {"factor": 0.5}]
    assert "optimizer" not in ours.state_dict()
    for _ in range(3):
        ours.optimizer.step()
        ours.step()
    resumed, opt = build(ember, 0.9)
    resumed.load_state_dict(ours.state_dict())
    assert resumed.lr_lambdas[1].factor == 0.5 and resumed.lr_lambdas[0] is lambda_scale
    opt.step()
    resumed.step()
    assert resumed.get_last_lr() == [0.1 * 0.9 ** 4, 0.05 * 0.5 ** 4]


def test_plateau_state_dict_round_trip_continues_identically():
    kwargs = dict(mode="max", patience=1, threshold=0.03, threshold_mode="abs", cooldown=1)
    metrics = [10.0, 10.1, 10.2, 10.2, 10.2, 10.5, 10.5, 10.5, 10.5, 11.0, 11.0, 11.0]
    full = plateau_history(ember, metrics, **kwargs)
    opt = make_optimizer(ember)
    sched = ember_sched.ReduceLROnPlateau(opt, **kwargs)
    for m in metrics[:5]:
        sched.step(ember.tensor(m, dtype=ember.float64))   # a 0-dim tensor, as a loss is
    state = sched.state_dict()
    assert state == plateau_state_of_torch(kwargs, metrics[:5])
    opt2 = make_optimizer(ember)
    opt2.load_state_dict(opt.state_dict())
    resumed = ember_sched.ReduceLROnPlateau(opt2)   # built with other options: the state dict restores them
    resumed.load_state_dict(state)
    rows = []
    for m in metrics[5:]:
        resumed.step(m)
        rows.append((resumed.get_last_lr(), [g["lr"] for g in opt2.param_groups]))
    assert_rows_close(rows, full[5:])


def plateau_state_of_torch(kwargs, metrics):
    sched = torch.optim.lr_scheduler.ReduceLROnPlateau(make_optimizer(torch), **kwargs)
    for m in metrics:
        sched.step(torch.tensor(m, dtype=torch.float64))
    return sched.state_dict()


def _sgd(momentum=0.9):
    return ember.optim.SGD([ember.zeros(1, requires_grad=True)], lr=0.1, momentum=momentum)


SCHEDULER_ERRORS = [   # (build, exception type, the exact message)
    (lambda o: ember_sched.StepLR("opt", step_size=2), TypeError, "StepLR: expected an Optimizer, got str"),
    (lambda o: ember_sched.StepLR(o, step_size=0), ValueError, "StepLR: step_size must be a positive integer, got 0"),
    (lambda o: ember_sched.StepLR(o, step_size=True), ValueError,
     "StepLR: step_size must be a positive integer, got True"),
    (lambda o: ember_sched.StepLR(o, step_size=2.0), ValueError,
     "StepLR: step_size must be a positive integer, got 2.0"),
    (lambda o: ember_sched.CosineAnnealingLR(o, T_max=0), ValueError,
     "CosineAnnealingLR: T_max must be a positive integer, got 0"),
    (lambda o: ember_sched.LinearLR(o, start_factor=0), ValueError, "LinearLR: start_factor must be in (0, 1], got 0"),
    (lambda o: ember_sched.LinearLR(o, start_factor=1.5), ValueError,
     "LinearLR: start_factor must be in (0, 1], got 1.5"),
    (lambda o: ember_sched.LinearLR(o, end_factor=-0.1), ValueError, "LinearLR: end_factor must be in [0, 1], got -0.1"),
    (lambda o: ember_sched.LinearLR(o, end_factor=1.5), ValueError, "LinearLR: end_factor must be in [0, 1], got 1.5"),
    (lambda o: ember_sched.LinearLR(o, total_iters=0), ValueError,
     "LinearLR: total_iters must be a positive integer, got 0"),
    (lambda o: ember_sched.LambdaLR(o, [lambda_scale, lambda_scale]), ValueError,
     "LambdaLR: expected 1 lr_lambdas (one per param group), got 2"),
    (lambda o: ember_sched.LambdaLR(o, 0.5), TypeError, "LambdaLR: lr_lambda must be callable, got float"),
    (lambda o: ember_sched.OneCycleLR("opt", max_lr=0.1, total_steps=5), TypeError,
     "OneCycleLR: expected an Optimizer, got str"),
    (lambda o: ember_sched.OneCycleLR(o, max_lr=0.1, total_steps=0), ValueError,
     "OneCycleLR: total_steps must be a positive integer, got 0"),
    (lambda o: ember_sched.OneCycleLR(o, max_lr=0.1, epochs=0, steps_per_epoch=3), ValueError,
     "OneCycleLR: epochs must be a positive integer, got 0"),
    (lambda o: ember_sched.OneCycleLR(o, max_lr=0.1, epochs=2, steps_per_epoch=0), ValueError,
     "OneCycleLR: steps_per_epoch must be a positive integer, got 0"),
    (lambda o: ember_sched.OneCycleLR(o, max_lr=0.1, epochs=2), ValueError,
     "OneCycleLR: pass total_steps, or both epochs and steps_per_epoch"),
    (lambda o: ember_sched.OneCycleLR(o, max_lr=0.1, steps_per_epoch=2), ValueError,
     "OneCycleLR: pass total_steps, or both epochs and steps_per_epoch"),
    (lambda o: ember_sched.OneCycleLR(o, max_lr=0.1, total_steps=5, pct_start=1), ValueError,
     "OneCycleLR: pct_start must be a float in [0, 1], got 1"),
    (lambda o: ember_sched.OneCycleLR(o, max_lr=0.1, total_steps=5, pct_start=-0.1), ValueError,
     "OneCycleLR: pct_start must be a float in [0, 1], got -0.1"),
    (lambda o: ember_sched.OneCycleLR(o, max_lr=0.1, total_steps=5, pct_start=1.5), ValueError,
     "OneCycleLR: pct_start must be a float in [0, 1], got 1.5"),
    (lambda o: ember_sched.OneCycleLR(o, max_lr=0.1, total_steps=5, anneal_strategy="exp"), ValueError,
     "OneCycleLR: anneal_strategy must be 'cos' or 'linear', got 'exp'"),
    (lambda o: ember_sched.OneCycleLR(o, max_lr=[0.1, 0.2], total_steps=5), ValueError,
     "OneCycleLR: expected 1 values for max_lr (one per param group), got 2"),
    (lambda o: ember_sched.OneCycleLR(o, max_lr=0.1, total_steps=5, max_momentum=(0.9, 0.95)), ValueError,
     "OneCycleLR: expected 1 values for max_momentum (one per param group), got 2"),
    (lambda o: ember_sched.OneCycleLR(o, max_lr=0.1, total_steps=5, base_momentum=[]), ValueError,
     "OneCycleLR: expected 1 values for base_momentum (one per param group), got 0"),
    (lambda o: ember_sched.OneCycleLR(ember.optim.Adagrad([ember.zeros(1, requires_grad=True)]), max_lr=0.1,
                                      total_steps=5), ValueError,
     "OneCycleLR: cycle_momentum=True needs an optimizer with momentum or betas, but Adagrad has neither; "
     "pass cycle_momentum=False"),
    (lambda o: ember_sched.ReduceLROnPlateau("opt"), TypeError, "ReduceLROnPlateau: expected an Optimizer, got str"),
    (lambda o: ember_sched.SequentialLR(o, [], milestones=[]), ValueError,
     "SequentialLR: expected at least one scheduler, got none"),
    (lambda o: ember_sched.SequentialLR(o, [ember_sched.StepLR(o, 2), ember_sched.ReduceLROnPlateau(o)], [3]),
     ValueError, "SequentialLR: scheduler 1 is a ReduceLROnPlateau, which needs a metric in step() and so cannot "
                 "be sequenced"),
    (lambda o: ember_sched.SequentialLR(o, [ember_sched.StepLR(o, 2), ember_sched.StepLR(_sgd(), 2)], [3]),
     ValueError, "SequentialLR: scheduler 1 (StepLR) belongs to a different optimizer; all schedulers must share "
                 "the SequentialLR's optimizer"),
    (lambda o: ember_sched.SequentialLR(o, [ember_sched.StepLR(o, 2), lambda_scale], [3]),
     ValueError, "SequentialLR: scheduler 1 (function) belongs to a different optimizer; all schedulers must share "
                 "the SequentialLR's optimizer"),
    (lambda o: ember_sched.SequentialLR(o, [ember_sched.StepLR(o, 2)], [3]), ValueError,
     "SequentialLR: expected 0 milestones for 1 schedulers, got 1"),
]


@pytest.mark.parametrize("build,exc,message", SCHEDULER_ERRORS, ids=[m for _, _, m in SCHEDULER_ERRORS])
def test_scheduler_errors_exact_message(build, exc, message):
    with pytest.raises(exc) as info:
        build(_sgd())
    assert str(info.value) == message


def test_resume_without_initial_lr_names_the_group():
    opt = make_optimizer(ember)
    opt.param_groups[0]["initial_lr"] = 0.1
    with pytest.raises(KeyError) as info:
        ember_sched.StepLR(opt, step_size=2, last_epoch=3)
    assert info.value.args[0] == ("StepLR: param_groups[1] has no 'initial_lr', which resuming with last_epoch=3 "
                                  "needs; load the optimizer's state dict first, or start with last_epoch=-1")


def test_plateau_min_lr_list_must_follow_added_groups():
    opt = make_optimizer(ember)
    sched = ember_sched.ReduceLROnPlateau(opt, patience=0, min_lr=[0.01, 0.001])
    opt.add_param_group({"params": [ember.zeros(1, requires_grad=True)]})
    sched.step(1.0)
    with pytest.raises(RuntimeError) as info:
        sched.step(2.0)
    assert str(info.value) == ("ReduceLROnPlateau: the optimizer now has 3 param groups but min_lr has 2 entries; "
                               "update scheduler.min_lrs")


def test_plateau_with_a_group_added_later_matches_torch():
    def history(lib):
        opt = make_optimizer(lib)
        sched = lib.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=0, min_lr=0.004)
        opt.add_param_group({"params": [lib.zeros(1, requires_grad=True)], "lr": 0.3})
        rows = []
        for m in [1.0, 2.0, 3.0, 0.5, 0.6, 0.7, 0.8]:
            sched.step(m)
            rows.append((sched.get_last_lr(), [g["lr"] for g in opt.param_groups], list(sched.min_lrs)))
        return rows

    assert_rows_close(history(ember), history(torch))


FRESH = {  # every scheduler with its defaults, as built with the fewest arguments
    "StepLR": lambda S, o: S.StepLR(o, step_size=3),
    "MultiStepLR": lambda S, o: S.MultiStepLR(o, milestones=[2, 5]),
    "ExponentialLR": lambda S, o: S.ExponentialLR(o, gamma=0.9),
    "CosineAnnealingLR": lambda S, o: S.CosineAnnealingLR(o, T_max=8),
    "LinearLR": lambda S, o: S.LinearLR(o),
    "LambdaLR": lambda S, o: S.LambdaLR(o, lambda_scale),
    "OneCycleLR": lambda S, o: S.OneCycleLR(o, max_lr=0.5, total_steps=20),
    "OneCycleLR-pct0": lambda S, o: S.OneCycleLR(o, max_lr=0.5, total_steps=20, pct_start=0.0),
    "OneCycleLR-pct1": lambda S, o: S.OneCycleLR(o, max_lr=0.5, total_steps=20, pct_start=1.0),
    "ReduceLROnPlateau": lambda S, o: S.ReduceLROnPlateau(o),
    "SequentialLR-1": lambda S, o: S.SequentialLR(o, [S.ExponentialLR(o, gamma=0.5)], milestones=[]),
    "SequentialLR-early": lambda S, o: S.SequentialLR(o, [S.ExponentialLR(o, gamma=0.5), S.StepLR(o, 2)],
                                                      milestones=[1]),
    "MultiplicativeLR": lambda S, o: S.MultiplicativeLR(o, lambda_scale),
    "ConstantLR": lambda S, o: S.ConstantLR(o),
    "PolynomialLR": lambda S, o: S.PolynomialLR(o),
    "CosineAnnealingWarmRestarts": lambda S, o: S.CosineAnnealingWarmRestarts(o, T_0=4),
    "CyclicLR": lambda S, o: S.CyclicLR(o, base_lr=0.01, max_lr=0.1),
    "ChainedScheduler": lambda S, o: S.ChainedScheduler([S.ExponentialLR(o, gamma=0.5)]),
    # the smallest accepted values
    "StepLR-1": lambda S, o: S.StepLR(o, step_size=1, gamma=0.5),
    "CosineAnnealingLR-1": lambda S, o: S.CosineAnnealingLR(o, T_max=1, eta_min=0.01),
    "LinearLR-1": lambda S, o: S.LinearLR(o, start_factor=1.0, end_factor=0.0, total_iters=1),
    "OneCycleLR-1": lambda S, o: S.OneCycleLR(o, max_lr=0.5, epochs=1, steps_per_epoch=7),
}


@pytest.mark.parametrize("name", list(FRESH))
def test_fresh_scheduler_state_and_lrs_match_torch(name):
    """Defaults, the state a new scheduler saves, get_lr() called directly, and a few steps."""
    def build(lib):
        opt = make_optimizer(lib)
        sched = FRESH[name](lib.optim.lr_scheduler, opt)
        initial_state.append(_plain_state(sched))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")   # torch warns about get_lr() outside step()
            direct = (None if name.startswith(("ReduceLROnPlateau", "SequentialLR", "ChainedScheduler"))
                      else sched.get_lr())
        rows = [(sched.get_last_lr(), [g["lr"] for g in opt.param_groups], _momenta(opt))]
        for _ in range(6):
            opt.step()
            with warnings.catch_warnings():
                if lib is ember:
                    warnings.simplefilter("error")   # only step(epoch) warns
                sched.step(1.0) if name == "ReduceLROnPlateau" else sched.step()
            rows.append((sched.get_last_lr(), [g["lr"] for g in opt.param_groups], _momenta(opt)))
        return sched, opt, direct, rows

    initial_state = []
    (ours, opt, our_direct, our_rows), (theirs, opt_t, their_direct, their_rows) = build(ember), build(torch)
    assert ours.optimizer is opt
    assert_rows_close(our_rows, their_rows)
    if our_direct is not None:
        assert_rows_close([(our_direct,)], [(their_direct,)])
    _assert_common_state_equal(*initial_state)                          # right after construction
    _assert_common_state_equal(_plain_state(ours), _plain_state(theirs))  # and after the steps
    for group, group_t in zip(opt.param_groups, opt_t.param_groups):
        assert set(group) <= set(group_t)          # no option torch's scheduler would not have added


def _plain_state(sched):
    """A scheduler's state dict, with SequentialLR's sub-schedulers' states flattened in."""
    return _flatten_state(sched.state_dict())


def _flatten_state(state):
    state = dict(state)
    for i, sub in enumerate(state.pop("_schedulers", [])):   # a ChainedScheduler in a SequentialLR: nested
        state.update({f"_schedulers[{i}].{k}": v for k, v in _flatten_state(sub).items()})
    state.pop("lr_lambdas", None)
    return state


def _assert_common_state_equal(ours, theirs):
    for key, value in ours.items():
        if key in theirs:
            assert value == theirs[key], key


@pytest.mark.parametrize("epoch", [0, 1, 5])
@pytest.mark.parametrize("name", ["CosineAnnealingLR", "StepLR", "MultiStepLR", "ExponentialLR", "LinearLR",
                                  "LambdaLR"])
def test_get_lr_right_after_resuming_matches_torch(name, epoch):
    # get_lr() called directly before the first step(): CosineAnnealingLR then answers with its closed form
    def direct(lib):
        w, b = lib.tensor([1.0], requires_grad=True), lib.tensor([2.0], requires_grad=True)
        opt = lib.optim.SGD([{"params": [w], "initial_lr": 0.1, "lr": 0.02},
                             {"params": [b], "initial_lr": 0.05, "lr": 0.04}], lr=0.1)
        sched = RESUMABLE[name](lib.optim.lr_scheduler, opt, epoch)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return sched.get_lr()

    assert_rows_close([(direct(ember),)], [(direct(torch),)])


def test_plateau_takes_one_element_arrays_without_warning():
    opt = make_optimizer(ember)
    sched = ember_sched.ReduceLROnPlateau(opt, patience=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")    # float() of a 1-element NumPy array is deprecated; .item() is not
        for m in [np.array([1.0]), np.array([2.0]), ember.tensor([3.0])]:
            sched.step(m)
    assert sched.best == 1.0 and sched.get_last_lr() == [pytest.approx(0.001), pytest.approx(0.0005)]


# ------------------------------------------------------------------ the schedulers added after the first ten
NEW_NAMES = ["MultiplicativeLR", "ConstantLR", "PolynomialLR", "CosineAnnealingWarmRestarts", "CyclicLR",
             "ChainedScheduler"]


@pytest.mark.parametrize("name", NEW_NAMES)
def test_new_scheduler_signatures_match_torch(name):
    import inspect

    def params(cls):
        return [(p.name, p.kind, p.default) for p in inspect.signature(cls).parameters.values()]

    assert params(getattr(ember_sched, name)) == params(getattr(torch.optim.lr_scheduler, name))


@pytest.mark.parametrize("name", [n for n in SCHEDULERS if n.startswith(NEW)])
def test_new_scheduler_state_dict_matches_torch_mid_run(name):
    """Same keys (less torch's internal `_get_lr_called_within_step` flag) and values after 13 steps."""
    _, ours, _ = lr_history(ember, name, steps=13)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, theirs, _ = lr_history(torch, name, steps=13)
    a, b = _plain_state(ours), _plain_state(theirs)
    b = {k: v for k, v in b.items() if not k.endswith("_get_lr_called_within_step")}
    assert set(a) == set(b)
    for key in a:
        if key.endswith("_last_lr") or key.endswith("base_lrs"):
            assert_rows_close([(a[key],)], [(b[key],)])
        elif isinstance(b[key], float):
            assert a[key] == pytest.approx(b[key], rel=1e-12, abs=1e-15), key
        else:
            assert a[key] == b[key], key


def warm_restarts_fractional_history(lib, T_mult):
    """step(epoch + i / iters) per batch, as torch's documentation shows, then plain step()s after a jump."""
    opt = make_optimizer(lib)
    sched = lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=T_mult, eta_min=0.003)
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")    # passing an epoch is supported here: no deprecation warning
        for epoch in range(9):
            for i in range(4):
                opt.step()
                sched.step(epoch + i / 4)
                rows.append((sched.get_last_lr(), [g["lr"] for g in opt.param_groups],
                             [sched.last_epoch, sched.T_cur, sched.T_i]))
        for epoch in [26, None, None, 3.5, None, 0, None, 14.25, None, None]:
            opt.step()
            sched.step(epoch)
            rows.append((sched.get_last_lr(), [g["lr"] for g in opt.param_groups],
                         [sched.last_epoch, sched.T_cur, sched.T_i]))
    return rows


@pytest.mark.parametrize("T_mult", [1, 2, 3])
def test_warm_restarts_fractional_epochs_match_torch(T_mult):
    assert_rows_close(warm_restarts_fractional_history(ember, T_mult), warm_restarts_fractional_history(torch, T_mult))


def test_cyclic_lr_state_dict_saves_a_callable_scale_fn_like_torch():
    def build(lib, base):
        opt = make_optimizer(lib)
        return lib.optim.lr_scheduler.CyclicLR(opt, base_lr=0.01, max_lr=0.1, step_size_up=3,
                                               scale_fn=CycleScale(base)), opt

    (ours, _), (theirs, _) = build(ember, 0.5), build(torch, 0.5)
    assert ours.state_dict()["_scale_fn_custom"] == theirs.state_dict()["_scale_fn_custom"] == {"base": 0.5}
    for _ in range(4):
        ours.optimizer.step()
        ours.step()
    resumed, opt = build(ember, 0.9)
    resumed.load_state_dict(ours.state_dict())
    assert resumed._scale_fn_custom.base == 0.5 and resumed.last_epoch == 4
    # a plain function is not saved, in both
    plain = [lib.optim.lr_scheduler.CyclicLR(make_optimizer(lib), 0.01, 0.1, scale_fn=lambda_scale)
             for lib in (ember, torch)]
    assert [p.state_dict()["_scale_fn_custom"] for p in plain] == [None, None]
    # the built-in modes fix scale_mode again after loading (exp_range scales by iteration)
    exp = ember_sched.CyclicLR(make_optimizer(ember), 0.01, 0.1, mode="exp_range", gamma=0.9)
    state = exp.state_dict()
    exp.scale_mode = "cycle"
    exp.load_state_dict({**state, "scale_mode": "cycle"})
    assert exp.scale_mode == "iterations"


def _lib(S):
    """torch or ember, from its lr_scheduler module (the error table's builders get that module)."""
    return torch if S.__name__.startswith("torch") else ember


NEW_ERRORS = [   # (build, exception, Ember's message, torch's message) where torch rejects the same input
    (lambda S, o: S.MultiplicativeLR(o, [lambda_scale]), ValueError,
     "MultiplicativeLR: expected 2 lr_lambdas (one per param group), got 1", "Expected 2 lr_lambdas, but got 1"),
    (lambda S, o: S.MultiplicativeLR(o, 0.9), TypeError, "MultiplicativeLR: lr_lambda must be callable, got float",
     "lr_lambda should be a function, but got float"),
    (lambda S, o: S.ConstantLR(o, factor=1.5), ValueError, "ConstantLR: factor must be in [0, 1], got 1.5",
     "Constant multiplicative factor expected to be between 0 and 1."),
    (lambda S, o: S.ConstantLR(o, factor=-0.1), ValueError, "ConstantLR: factor must be in [0, 1], got -0.1",
     "Constant multiplicative factor expected to be between 0 and 1."),
    (lambda S, o: S.CosineAnnealingWarmRestarts(o, T_0=0), ValueError,
     "CosineAnnealingWarmRestarts: T_0 must be a positive integer, got 0", "Expected positive integer T_0, but got 0"),
    (lambda S, o: S.CosineAnnealingWarmRestarts(o, T_0=2.0), ValueError,
     "CosineAnnealingWarmRestarts: T_0 must be a positive integer, got 2.0",
     "Expected positive integer T_0, but got 2.0"),
    (lambda S, o: S.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=0), ValueError,
     "CosineAnnealingWarmRestarts: T_mult must be an integer >= 1, got 0", "Expected integer T_mult >= 1, but got 0"),
    (lambda S, o: S.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=1.5), ValueError,
     "CosineAnnealingWarmRestarts: T_mult must be an integer >= 1, got 1.5",
     "Expected integer T_mult >= 1, but got 1.5"),
    (lambda S, o: S.CosineAnnealingWarmRestarts(o, T_0=2, eta_min="0"), ValueError,
     "CosineAnnealingWarmRestarts: eta_min must be a float or an int, got '0' of type str",
     "Expected float or int eta_min, but got 0 of type <class 'str'>"),
    (lambda S, o: S.CosineAnnealingWarmRestarts(o, T_0=2).step(-1), ValueError,
     "CosineAnnealingWarmRestarts: epoch must be non-negative, got -1", "Expected non-negative epoch, but got -1"),
    (lambda S, o: S.CyclicLR("opt", 0.01, 0.1), TypeError, "CyclicLR: expected an Optimizer, got str",
     "str is not an Optimizer"),
    (lambda S, o: S.CyclicLR(o, 0.01, 0.1, mode="cosine"), ValueError,
     "CyclicLR: mode must be 'triangular', 'triangular2' or 'exp_range' (or pass scale_fn), got 'cosine'",
     "mode is invalid and scale_fn is None"),
    (lambda S, o: S.CyclicLR(o, [0.01], 0.1), ValueError,
     "CyclicLR: expected 2 values for base_lr (one per param group), got 1",
     "base_lr must have the same length as optimizer.param_groups. base_lr has 1 values, param_groups has 2."),
    (lambda S, o: S.CyclicLR(o, 0.01, (0.1, 0.2, 0.3)), ValueError,
     "CyclicLR: expected 2 values for max_lr (one per param group), got 3", "max_lr must have the same length"),
    (lambda S, o: S.CyclicLR(o, 0.01, 0.1, base_momentum=[0.8]), ValueError,
     "CyclicLR: expected 2 values for base_momentum (one per param group), got 1",
     "base_momentum must have the same length"),
    (lambda S, o: S.CyclicLR(o, 0.01, 0.1, max_momentum=[0.9, 0.9, 0.9]), ValueError,
     "CyclicLR: expected 2 values for max_momentum (one per param group), got 3", "max_momentum must have the same"),
    (lambda S, o: S.CyclicLR(_lib(S).optim.Adagrad([_lib(S).zeros(1, requires_grad=True)]), 0.01, 0.1), ValueError,
     "CyclicLR: cycle_momentum=True needs an optimizer with momentum or betas, but Adagrad has neither; "
     "pass cycle_momentum=False", "optimizer must support momentum or beta1 with `cycle_momentum` option enabled"),
    (lambda S, o: S.ChainedScheduler([]), ValueError, "ChainedScheduler: expected at least one scheduler, got none",
     "ChainedScheduler expects at least one scheduler to be chained, but got no scheduler."),
    (lambda S, o: S.ChainedScheduler([S.StepLR(o, 2), lambda_scale]), TypeError,
     "ChainedScheduler: scheduler 1 (function) has no optimizer attribute; expected an LRScheduler",
     "ChainedScheduler at index 1 should have `optimizer` as its attribute."),
    (lambda S, o: S.ChainedScheduler([S.StepLR(o, 2), S.ReduceLROnPlateau(o)]), ValueError,
     "ChainedScheduler: scheduler 1 is a ReduceLROnPlateau, which needs a metric in step() and so cannot be chained",
     "ChainedScheduler does not support `ReduceLROnPlateau` scheduler"),
    (lambda S, o: S.ChainedScheduler([S.StepLR(o, 2), S.StepLR(make_optimizer(_lib(S)), 2)]), ValueError,
     "ChainedScheduler: scheduler 1 (StepLR) belongs to a different optimizer; all schedulers must share the "
     "ChainedScheduler's optimizer", "ChainedScheduler expects all schedulers to belong to the same optimizer"),
    (lambda S, o: S.ChainedScheduler([S.StepLR(o, 2)], optimizer=make_optimizer(_lib(S))), ValueError,
     "ChainedScheduler: scheduler 0 (StepLR) belongs to a different optimizer", "at index 0 has"),
]


@pytest.mark.parametrize("build,exc,message,torch_message", NEW_ERRORS, ids=[m for _, _, m, _ in NEW_ERRORS])
def test_new_scheduler_errors_as_torch(build, exc, message, torch_message):
    def call(lib):
        build(lib.optim.lr_scheduler, make_optimizer(lib))
    error = raises_as_torch(call, exc, message, torch_message)
    assert str(error).startswith(message)


def test_constant_lr_with_factor_0_cannot_restore_the_lr_like_torch():
    def call(lib):
        opt = make_optimizer(lib)
        sched = lib.optim.lr_scheduler.ConstantLR(opt, factor=0.0, total_iters=2)
        assert sched.get_last_lr() == [0.0, 0.0]
        opt.step()
        sched.step()
        opt.step()
        sched.step()    # epoch 2 = total_iters: lr / 0
    raises_as_torch(call, ZeroDivisionError, "ConstantLR: cannot restore the lr at epoch 2 after scaling it by "
                    "factor=0; use a factor > 0", "float division by zero")


def test_chained_scheduler_after_a_sequential_milestone_fails_like_torch():
    """SequentialLR restarts a later scheduler from its closed form, which a ChainedScheduler has not."""
    def call(lib):
        S, opt = lib.optim.lr_scheduler, make_optimizer(lib)
        sched = S.SequentialLR(opt, [S.ExponentialLR(opt, gamma=0.9), S.ChainedScheduler([S.ConstantLR(opt)])],
                               milestones=[2])
        for _ in range(2):
            opt.step()
            sched.step()
    with pytest.raises(NotImplementedError):     # torch's has no message
        call(torch)
    with pytest.raises(NotImplementedError) as info:
        call(ember)
    assert str(info.value) == "ChainedScheduler: get_lr() is not implemented (a subclass defines it)"
