"""A whole training step under PrimitiveLog: forward, backward, optimizer step, zero_grad and an LR
scheduler step are primitive calls (in-place writes are `Assign`), so replaying the log reproduces every
parameter and every optimizer state tensor bit for bit."""
import numpy as np
import pytest

import ember
from ember import nn, optim
import ember.nn.functional as F
from ember.ops.inplace import INDEX, Assign
from ember.utils.dispatch import PrimitiveLog


def mlp_and_batch():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    rng = np.random.default_rng(0)
    x = ember.from_numpy(rng.standard_normal((5, 8)).astype(np.float32))
    y = ember.from_numpy(rng.integers(0, 4, 5))
    return model, x, y


def train_step(model, x, y, opt, sched, zero_to_none=True):
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=zero_to_none)
    sched.step()


def assert_replay_matches(log, model, opt):
    values = log.replay()
    for p in model.parameters():
        assert values[p].tobytes() == p._data.tobytes()
    n = 0
    for state in opt.state.values():
        for v in state.values():
            if isinstance(v, ember.Tensor):
                assert values[v].tobytes() == v._data.tobytes()
                n += 1
    assert n > 0


def test_adamw_step_with_scheduler_replays_bit_for_bit():
    model, x, y = mlp_and_batch()
    before = [p._data.copy() for p in model.parameters()]
    opt = optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)
    sched = optim.lr_scheduler.ExponentialLR(opt, gamma=0.5)
    log = PrimitiveLog()
    with log:
        train_step(model, x, y, opt, sched)
    assert_replay_matches(log, model, opt)
    assert all(not np.array_equal(b, p._data) for b, p in zip(before, model.parameters()))   # it trained
    assert all(opt.state[p]["step"].item() == 1 for p in model.parameters())
    assert log.counts()["AdamStep"] == 4   # one fused update (step, moments, weights) per parameter


def test_two_adam_steps_after_the_scheduler_changed_lr():
    model, x, y = mlp_and_batch()
    opt = optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)
    sched = optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.1)
    train_step(model, x, y, opt, sched)   # state and the lr tensor exist before the log
    log = PrimitiveLog()
    with log:
        train_step(model, x, y, opt, sched)
        train_step(model, x, y, opt, sched)
    assert_replay_matches(log, model, opt)
    # the new rates were written into the lr tensor, in place, inside the logged region
    fills = [c for c in log.calls if c.prim is Assign and c.attrs.get("value") in (1e-3, 1e-4)]
    assert len(fills) == 2
    lr = opt.lr_tensor(opt.param_groups[0], model[0].weight.device)
    assert lr.item() == opt.param_groups[0]["lr"] == pytest.approx(1e-5)


def test_sgd_momentum_two_steps_replay_bit_for_bit():
    model, x, y = mlp_and_batch()
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-3)
    sched = optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    log = PrimitiveLog()
    with log:
        train_step(model, x, y, opt, sched, zero_to_none=False)   # creates the momentum buffers (Clone)
        train_step(model, x, y, opt, sched, zero_to_none=False)   # uses them, at the halved rate
    assert_replay_matches(log, model, opt)
    assert all(p.grad is not None and not p.grad.any().item() for p in model.parameters())


@pytest.mark.parametrize("make", [lambda ps: optim.Adam(ps, lr=1e-2, amsgrad=True),
                                  lambda ps: optim.Adagrad(ps, lr=1e-2, lr_decay=0.1),
                                  lambda ps: optim.Adadelta(ps, lr=1.0),
                                  lambda ps: optim.RMSprop(ps, lr=1e-2, momentum=0.9, centered=True),
                                  lambda ps: optim.NAdam(ps, lr=1e-2, weight_decay=0.1, decoupled_weight_decay=True),
                                  lambda ps: optim.RAdam(ps, lr=1e-2, betas=(0.9, 0.6), weight_decay=0.1),
                                  lambda ps: optim.RAdam(ps, lr=1e-2, betas=(0.9, 0.9)),
                                  lambda ps: optim.Adamax(ps, lr=1e-2, weight_decay=0.1),
                                  lambda ps: optim.ASGD(ps, lr=1e-2, t0=1),
                                  lambda ps: optim.Rprop(ps, lr=1e-2)])
def test_other_optimizers_replay_bit_for_bit(make):
    model, x, y = mlp_and_batch()
    opt = make(model.parameters())
    sched = optim.lr_scheduler.ExponentialLR(opt, gamma=0.9)
    log = PrimitiveLog()
    with log:
        train_step(model, x, y, opt, sched)
        train_step(model, x, y, opt, sched)
    assert_replay_matches(log, model, opt)


def test_in_place_writes_are_one_assign_each():
    x = ember.zeros(4)
    with PrimitiveLog() as log:
        x.add_(1)
        x.mul_(3)
        x[1] = 5.0
        x[ember.tensor([0, 2])] = ember.tensor([7.0, 8.0])
        x.fill_(2)
        x.zero_()
    assert [c.name for c in log.calls].count("Assign") == 6
    assert [c.attrs.get("op") for c in log.calls if c.prim is Assign][:2] == ["add", "mul"]
    index_call = [c for c in log.calls if c.prim is Assign and c.attrs.get("key") == (INDEX,)]
    assert len(index_call) == 1 and len(index_call[0].inputs) == 3   # dst, src, the index array


def test_grad_accumulation_is_clone_then_assign_add():
    w = ember.ones(3, requires_grad=True)
    with PrimitiveLog() as log:
        (w * 2).sum().backward()
        (w * 3).sum().backward()
    names = [c.name for c in log.calls]
    assert "Clone" in names and [c.attrs.get("op") for c in log.calls if c.prim is Assign] == ["add"]
    assert log.replay()[w.grad].tolist() == [5.0, 5.0, 5.0] == w.grad.tolist()


def test_assign_infer_gives_dst_shape_and_dtype():
    class Spec:
        shape, dtype = (2, 3), np.dtype(np.float32)
    assert Assign().infer(Spec(), Spec()) == ((2, 3), np.dtype(np.float32))


def test_batchnorm_running_stats_and_grad_clipping_replay_bit_for_bit():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 4))
    _, x, y = mlp_and_batch()
    opt = optim.AdamW(model.parameters(), lr=1e-2)
    log = PrimitiveLog()
    with log:
        F.cross_entropy(model(x), y).backward()
        nn.utils.clip_grad_norm_(model.parameters(), 0.1)
        nn.utils.clip_grad_value_(model.parameters(), 0.05)
        opt.step()
        opt.zero_grad()
    values = log.replay()
    for t in list(model.parameters()) + list(model.buffers()):   # incl. running_mean/var, num_batches_tracked
        assert values[t].tobytes() == t._data.tobytes()
    assert model[1].num_batches_tracked.item() == 1


def test_load_state_dict_copies_through_assign():
    model, _, _ = mlp_and_batch()
    other, _, _ = mlp_and_batch()
    with ember.no_grad():
        for p in other.parameters():
            p.mul_(2)
    with PrimitiveLog() as log:
        model.load_state_dict(other.state_dict())
    assert log.counts()["Assign"] == 4
    assert all(a.tolist() == b.tolist() for a, b in zip(model.parameters(), other.parameters()))
