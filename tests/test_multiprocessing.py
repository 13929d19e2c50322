"""ember.multiprocessing (torch.multiprocessing): tensors through Queues and Pipes share memory, share_memory_ and
Module.share_memory under fork and spawn, Hogwild training, spawn()'s contract. torch's behaviour, checked in
torch 2.13, is noted where a test pins it."""
import os
import subprocess
import sys

import numpy as np
import pytest

import ember
import ember.multiprocessing as mp
import ember.nn as nn
from ember.utils.data import _shm

METHODS = ["fork", "spawn"]


# --- children (module level: 'spawn' pickles them by name) -------------------------------------------------------
def _echo(q_in, q_out):
    while True:
        t = q_in.get()
        if t is None:
            return
        q_out.put(t)


def _add_one(q):
    t = q.get()
    t.add_(1)


def _bump_shared(t, p):
    t.add_(1)
    p.data.add_(5)


def _bump_module(lin):
    with ember.no_grad():
        lin.weight.add_(1.0)
        lin.bias.fill_(7.0)


def _hogwild_train(model, steps, seed):
    ember.manual_seed(seed)
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    x = ember.randn(16, 4)
    y = x.sum(1, keepdim=True)
    for _ in range(steps):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()


def _write_index(i, t):
    t[i] = float(i + 1)


def _raise_in_one(i, bad):
    if i == bad:
        raise ValueError(f"child {i} gives up")


def _exit_code(i):
    sys.exit(3)


def _grad_seen(p, q):
    q.put(p.grad is None)


# --- tests -----------------------------------------------------------------------------------------------------
def test_import_ember_does_not_import_multiprocessing():
    code = "import sys, ember; print('ember.multiprocessing' in sys.modules); ember.multiprocessing; " \
           "print('ember.multiprocessing' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]


def test_public_surface_is_the_standard_librarys_plus_torchs():
    import multiprocessing
    for name in multiprocessing.__all__:
        assert getattr(mp, name) is getattr(multiprocessing, name), name
    for name in ["spawn", "start_processes", "ProcessContext", "ProcessRaisedException", "ProcessExitedException",
                 "get_sharing_strategy", "set_sharing_strategy", "get_all_sharing_strategies"]:
        assert name in mp.__all__ and callable(getattr(mp, name))


def test_sharing_strategies_take_torchs_names():
    assert mp.get_all_sharing_strategies() == {"file_descriptor", "file_system"}
    assert mp.get_sharing_strategy() == "file_descriptor"
    try:
        mp.set_sharing_strategy("file_system")
        assert mp.get_sharing_strategy() == "file_system"
        t = ember.ones(3).share_memory_()
        path = _shm.shared_map_of(t._data).path
        assert os.path.exists(path)             # file_system keeps a name ...
        del t
        assert not os.path.exists(path)         # ... until the creator frees the tensor
    finally:
        mp.set_sharing_strategy("file_descriptor")
    with pytest.raises(ValueError, match="set_sharing_strategy: unknown strategy 'bogus'"):
        mp.set_sharing_strategy("bogus")


def test_share_memory_moves_data_in_place_and_keeps_values():
    t = ember.arange(12, dtype=ember.float64).reshape(3, 4).t()   # non-contiguous: strides are kept
    before = t.numpy().copy()
    assert not t.is_shared()
    assert t.share_memory_() is t and t.is_shared()
    np.testing.assert_array_equal(t.numpy(), before)
    assert t.stride() == (1, 4)
    data = t._data
    assert t.share_memory_() is t and t._data is data           # no-op the second time
    assert ember.zeros(0, 3).share_memory_().is_shared()       # empty tensors too
    assert ember.ones(2)[0:1].is_shared() is False


def test_share_memory_of_a_view_moves_its_base_and_follows_it():
    base = ember.zeros(6)
    view = base[2:5]
    view.share_memory_()
    assert base.is_shared() and view.is_shared()
    base.add_(1)
    assert view.tolist() == [1.0, 1.0, 1.0]


def test_module_share_memory_shares_parameters_buffers_and_existing_grads():
    model = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
    model[0].weight.grad = ember.ones(2, 3)
    assert model.share_memory() is model
    assert all(p.is_shared() for p in model.parameters())
    assert all(b.is_shared() for b in model.buffers())
    assert model[0].weight.grad.is_shared()          # as torch's Module.share_memory
    assert model[0].bias.grad is None
    with pytest.raises(RuntimeError, match="Can't share memory on an uninitialized parameter"):
        nn.LazyLinear(3).share_memory()


def test_queue_round_trip_of_tensors_keeps_values_dtypes_and_shares_memory():
    cases = [ember.randn(3, 4), ember.arange(10, dtype=ember.int64), ember.tensor([True, False]),
             ember.randn(2, 3, 4, dtype=ember.float64), ember.tensor(5.0), ember.zeros(0, 2),
             ember.arange(24, dtype=ember.int32).reshape(2, 3, 4).permute(2, 0, 1),
             ember.ones(4, dtype=ember.float16), ember.ones(3, dtype=ember.bfloat16)]
    ctx = mp.get_context("fork")
    q_in, q_out = ctx.Queue(), ctx.Queue()
    child = ctx.Process(target=_echo, args=(q_in, q_out))
    child.start()
    try:
        for t in cases:
            q_in.put(t)
            back = q_out.get(timeout=10)
            assert t.is_shared()                          # the sender's data moved into shared memory (torch)
            assert back.dtype == t.dtype and back.shape == t.shape and back.stride() == t.stride()
            np.testing.assert_array_equal(back.float().numpy(), t.float().numpy())
            assert back.is_shared()
            if t.numel():
                back.fill_(1)                             # the round trip came back to the same memory
                assert (t == 1).all().item()
    finally:
        q_in.put(None)
        child.join(10)
    assert child.exitcode == 0


@pytest.mark.parametrize("method", METHODS)
def test_a_tensor_sent_through_a_queue_is_updated_by_the_child(method):
    ctx = mp.get_context(method)
    q = ctx.Queue()
    t = ember.zeros(2, 3)
    child = ctx.Process(target=_add_one, args=(q,))
    child.start()
    q.put(t)
    child.join(20)
    assert child.exitcode == 0
    assert t.tolist() == [[1.0] * 3] * 2


def test_pipe_sends_shared_tensors_and_parameters_keep_their_type():
    a, b = mp.Pipe()
    p = nn.Parameter(ember.zeros(2))
    p.grad = ember.ones(2)
    a.send(p)
    r = b.recv()
    assert type(r) is nn.Parameter and r.requires_grad and r.grad is None    # torch sends no .grad
    r.data.add_(2)
    assert p.tolist() == [2.0, 2.0]
    frozen = nn.Parameter(ember.zeros(1), requires_grad=False)
    a.send(frozen)
    assert b.recv().requires_grad is False


def test_non_leaf_tensors_that_require_grad_are_refused():
    from multiprocessing.reduction import ForkingPickler
    y = ember.ones(2, requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="Cowardly refusing to serialize non-leaf tensor"):
        ForkingPickler.dumps(y)
    ForkingPickler.dumps(y.detach())


def test_plain_pickle_still_copies():
    import pickle
    t = ember.ones(2)
    r = pickle.loads(pickle.dumps(t))
    assert not t.is_shared() and not r.is_shared()


@pytest.mark.parametrize("method", METHODS)
def test_shared_tensors_passed_to_a_child_are_updated_in_place(method):
    ctx = mp.get_context(method)
    t = ember.zeros(3).share_memory_()
    p = nn.Parameter(ember.zeros(2)).share_memory_()
    child = ctx.Process(target=_bump_shared, args=(t, p))
    child.start()
    child.join(20)
    assert child.exitcode == 0
    assert t.tolist() == [1.0, 1.0, 1.0] and p.tolist() == [5.0, 5.0]


def test_without_share_memory_a_forked_child_writes_its_own_copy():
    ctx = mp.get_context("fork")
    t, p = ember.zeros(3), nn.Parameter(ember.zeros(2))
    child = ctx.Process(target=_bump_shared, args=(t, p))
    child.start()
    child.join(20)
    assert child.exitcode == 0 and t.tolist() == [0.0] * 3


@pytest.mark.parametrize("method", METHODS)
def test_module_share_memory_lets_a_child_update_the_parents_weights(method):
    ctx = mp.get_context(method)
    lin = nn.Linear(3, 2).share_memory()
    w = lin.weight.detach().clone()
    child = ctx.Process(target=_bump_module, args=(lin,))
    child.start()
    child.join(20)
    assert child.exitcode == 0
    np.testing.assert_allclose(lin.weight.detach().numpy(), w.numpy() + 1)
    assert lin.bias.tolist() == [7.0, 7.0]


@pytest.mark.parametrize("method", METHODS)
def test_hogwild_two_processes_train_one_shared_model(method):
    ember.manual_seed(0)
    model = nn.Linear(4, 1).share_memory()
    before = [p.detach().clone() for p in model.parameters()]
    ctx = mp.get_context(method)
    workers = [ctx.Process(target=_hogwild_train, args=(model, 5, rank)) for rank in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(30)
    assert [w.exitcode for w in workers] == [0, 0]
    for p, p0 in zip(model.parameters(), before):
        assert not np.allclose(p.detach().numpy(), p0.numpy())
        assert p.grad is None            # children's gradients were their own
    # the shared weights are what 10 steps of SGD made: the loss fell
    ember.manual_seed(0)
    x = ember.randn(16, 4)
    y = x.sum(1, keepdim=True)
    lin0 = nn.Linear(4, 1)
    with ember.no_grad():
        lin0.weight.copy_(before[0])
        lin0.bias.copy_(before[1])
        assert ((model(x) - y) ** 2).mean().item() < ((lin0(x) - y) ** 2).mean().item()


def test_grad_made_before_sharing_is_shared_and_seen_by_a_forked_child():
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    p = nn.Parameter(ember.zeros(2))
    child = ctx.Process(target=_grad_seen, args=(p, q))
    child.start()
    assert q.get(timeout=10) is True
    child.join(10)


def test_spawn_runs_fn_with_the_index_and_args():
    t = ember.zeros(2).share_memory_()
    assert mp.spawn(_write_index, args=(t,), nprocs=2) is None
    assert t.tolist() == [1.0, 2.0]


def test_spawn_raises_the_childs_error_naming_it():
    with pytest.raises(mp.ProcessRaisedException) as info:
        mp.spawn(_raise_in_one, args=(1,), nprocs=2, start_method="fork")
    e = info.value
    assert e.error_index == 1 and isinstance(e.error_pid, int)
    assert "-- Process 1 terminated with the following error:" in str(e)
    assert "ValueError: child 1 gives up" in str(e) and "Traceback" in str(e)


def test_spawn_reports_a_child_that_exits_with_a_code():
    with pytest.raises(mp.ProcessExitedException, match="process 0 terminated with exit code 3") as info:
        mp.spawn(_exit_code, nprocs=1, start_method="fork")
    assert info.value.exit_code == 3 and info.value.signal_name is None


def test_spawn_without_join_returns_the_context():
    t = ember.zeros(3).share_memory_()
    context = mp.spawn(_write_index, args=(t,), nprocs=3, join=False)
    assert isinstance(context, mp.ProcessContext) and len(context.processes) == 3
    assert len(context.pids()) == 3
    while not context.join(timeout=20):
        pass
    assert t.tolist() == [1.0, 2.0, 3.0]
    assert all(p.exitcode == 0 for p in context.processes)
    with pytest.raises(ValueError, match="nprocs must be at least 1"):
        mp.spawn(_write_index, nprocs=0)


def test_no_shared_memory_files_are_left_behind():
    names = [n for n in os.listdir(_shm.shm_dir()) if n.startswith(f"{_shm.SHARED_PREFIX}{os.getpid()}_")]
    assert names == []
