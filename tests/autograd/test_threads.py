"""Grad mode, inference mode and the GradientTape stack are per thread (as in torch); the default dtype
and anomaly mode are per process (as in torch). Ember issue 8, item 1.

Threads are put in lockstep with barriers, so each test forces the interleaving it is about instead of
hoping for it; a small GIL switch interval makes the threads also interleave inside each step.
"""
import sys
import threading
import time

import numpy as np
import pytest

import ember
from ember import nn
from ember.autograd import grad_mode

TIMEOUT = 60   # seconds a barrier waits before giving up: a broken test fails, it does not hang


@pytest.fixture(autouse=True)
def fine_switching():
    prev = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        yield
    finally:
        sys.setswitchinterval(prev)


def run_threads(*fns):
    """Run each fn in its own thread; re-raise the first exception. A thread that fails breaks the
    barriers it was given (fn.barriers) so the others stop too."""
    errors = []

    def wrap(fn):
        def target():
            try:
                fn()
            except BaseException as e:   # noqa: B902 - reported in the main thread
                errors.append(e)
                for b in getattr(fn, "barriers", ()):
                    b.abort()
        return target

    threads = [threading.Thread(target=wrap(fn)) for fn in fns]
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT)
    assert not any(t.is_alive() for t in threads), "a thread did not finish"
    real = [e for e in errors if not isinstance(e, threading.BrokenBarrierError)]
    if real or errors:
        raise (real or errors)[0]


def make_model(seed):
    ember.manual_seed(seed)   # the RNG is one per process (as torch's): make models in the main thread
    return nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 1))


def data():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, 4)).astype(np.float32)
    y = (x @ np.array([[1.0], [-2.0], [0.5], [3.0]], np.float32)).astype(np.float32)
    return ember.tensor(x), ember.tensor(y)


STEPS = 150


def train(model, sync=lambda: None):
    """SGD with momentum. `sync()` twice per step inside a no_grad block: run by two threads with one
    of them a sync behind, each thread's forward and backward run while the other waits in no_grad."""
    x, y = data()
    opt = ember.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        with ember.no_grad():
            sync()        # the other thread's update, forward and backward run now ...
            sync()        # ... or its evaluation
            opt.step()
        losses.append(loss.item())
    return losses


def params(model):
    return [p.detach().numpy().copy() for p in model.parameters()]


def test_two_threads_training_equal_sequential_runs_bit_for_bit():
    seq = [make_model(0), make_model(1)]
    seq_losses = [train(m) for m in seq]

    par = [make_model(0), make_model(1)]
    par_losses = [None, None]
    barrier = threading.Barrier(2, timeout=TIMEOUT)

    def first():
        par_losses[0] = train(par[0], barrier.wait)
        barrier.wait()
    first.barriers = (barrier,)

    def second():
        barrier.wait()    # one sync behind the first thread
        par_losses[1] = train(par[1], barrier.wait)
    second.barriers = (barrier,)

    run_threads(first, second)
    for i in range(2):
        assert par_losses[i] == seq_losses[i]
        for a, b in zip(params(par[i]), params(seq[i])):
            assert np.array_equal(a, b)
    assert ember.is_grad_enabled()


@pytest.mark.parametrize("mode", ["no_grad", "inference_mode", "set_grad_enabled"])
def test_evaluating_thread_does_not_stop_training_thread_recording(mode):
    ctx = {"no_grad": ember.no_grad, "inference_mode": ember.inference_mode,
           "set_grad_enabled": lambda: ember.set_grad_enabled(False)}[mode]
    ref_model = make_model(0)
    ref = train(ref_model)
    model, evaluated = make_model(0), make_model(1)
    x, _ = data()
    barrier = threading.Barrier(2, timeout=TIMEOUT)
    losses = []

    def trainer():
        losses.extend(train(model, barrier.wait))
        barrier.wait()
    trainer.barriers = (barrier,)

    def evaluate():
        out = evaluated(x)
        assert not out.requires_grad and out.grad_fn is None

    def evaluator():
        barrier.wait()                # the trainer's first step is in its update
        for _ in range(STEPS):
            with ctx():
                evaluate()
                barrier.wait()        # the trainer updates, then runs its next forward and backward
                evaluate()            # while this thread is inside ctx
                barrier.wait()
            assert ember.is_grad_enabled()
    evaluator.barriers = (barrier,)

    run_threads(trainer, evaluator)
    assert losses == ref
    for a, b in zip(params(model), params(ref_model)):
        assert np.array_equal(a, b)


def test_overlapping_no_grad_blocks_restore_their_own_thread():
    # A enters, B enters, A exits, B exits: with one process-wide switch, B "restored" False for good
    b = threading.Barrier(2, timeout=TIMEOUT)
    seen = {}

    def a():
        with ember.no_grad():
            b.wait()          # 1: both inside
            b.wait()          # 2
        seen["a_after"] = ember.is_grad_enabled()
        b.wait()              # 3: A is out, B still inside
        seen["a_while_b_inside"] = ember.is_grad_enabled()
        b.wait()              # 4
    a.barriers = (b,)

    def c():
        b.wait()              # 1
        with ember.inference_mode():
            b.wait()          # 2
            b.wait()          # 3
            seen["b_inside"] = (ember.is_grad_enabled(), ember.is_inference_mode_enabled())
        b.wait()              # 4
        seen["b_after"] = (ember.is_grad_enabled(), ember.is_inference_mode_enabled())
    c.barriers = (b,)

    run_threads(a, c)
    assert seen == {"a_after": True, "a_while_b_inside": True, "b_inside": (False, True),
                    "b_after": (True, False)}
    assert ember.is_grad_enabled() and not ember.is_inference_mode_enabled()


def test_threads_leaving_grad_off_do_not_change_the_main_thread():
    def leave_off():
        ember.set_grad_enabled(False)       # never restored: the thread ends with grad off
        ember.inference_mode().__enter__()  # never exited
        assert not ember.is_grad_enabled() and ember.is_inference_mode_enabled()

    run_threads(*[leave_off] * 4)
    assert ember.is_grad_enabled() and not ember.is_inference_mode_enabled()
    w = ember.ones(3, requires_grad=True)
    assert (w * 2).requires_grad
    with ember.no_grad():
        assert not (w * 2).requires_grad
    assert (w * 2).requires_grad


def test_new_thread_starts_from_defaults():
    seen = {}

    def probe():
        w = ember.ones(2, requires_grad=True)
        seen["state"] = (ember.is_grad_enabled(), ember.is_inference_mode_enabled())
        seen["records"] = (w * 2).requires_grad

    for ctx in (ember.no_grad, ember.inference_mode, lambda: ember.set_grad_enabled(False)):
        seen.clear()
        with ctx():
            assert not ember.is_grad_enabled()
            run_threads(probe)
        assert seen == {"state": (True, False), "records": True}
    assert ember.is_grad_enabled()


def test_backward_in_one_thread_does_not_switch_grad_off_in_another():
    # the engine turns grad mode off while a backward runs; a forward in another thread meanwhile records
    b = threading.Barrier(2, timeout=TIMEOUT)

    class Pause(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            b.wait()          # 1: A is inside its backward
            b.wait()          # 2: B has run its forward
            return g

    def a():
        x = ember.ones(2, requires_grad=True)
        Pause.apply(x).sum().backward()
        assert np.array_equal(x.grad.numpy(), [1.0, 1.0])
    a.barriers = (b,)

    def c():
        w = ember.ones(2, requires_grad=True)
        b.wait()              # 1
        y = (w * 3).sum()
        b.wait()              # 2
        assert y.requires_grad
        y.backward()
        assert np.array_equal(w.grad.numpy(), [3.0, 3.0])
    c.barriers = (b,)

    run_threads(a, c)


def test_gradient_tape_in_another_thread_is_not_an_enclosing_tape():
    b = threading.Barrier(2, timeout=TIMEOUT)
    seen = {}

    def outer():
        with ember.GradientTape():
            b.wait()          # 1: this tape is recording
            b.wait()          # 2: the other thread took its gradient
    outer.barriers = (b,)

    def inner():
        x = ember.tensor(3.0)
        b.wait()              # 1
        with ember.GradientTape() as tape:
            tape.watch(x)
            y = x * x
        g = tape.gradient(y, x)
        seen["g"] = (g.item(), g.requires_grad)   # nothing encloses this tape: a plain gradient
        b.wait()              # 2
    inner.barriers = (b,)

    run_threads(outer, inner)
    assert seen["g"] == (6.0, False)


@pytest.mark.filterwarnings("ignore")
def test_default_dtype_and_anomaly_mode_are_per_process_as_in_torch():
    torch = pytest.importorskip("torch")
    libs = {"torch": (torch, torch.autograd, torch.is_anomaly_enabled),
            "ember": (ember, ember.autograd, ember.autograd.is_anomaly_enabled)}
    seen = {}
    for name, (lib, autograd, is_anomaly_enabled) in libs.items():
        prev_dtype = lib.get_default_dtype()
        try:
            def in_thread():
                seen[name, "thread starts with"] = (str(lib.get_default_dtype()).split(".")[-1],
                                                    is_anomaly_enabled())
                lib.set_default_dtype(lib.float16)
                autograd.set_detect_anomaly(False)
            lib.set_default_dtype(lib.float64)
            autograd.set_detect_anomaly(True)
            run_threads(in_thread)
            seen[name, "main after"] = (str(lib.get_default_dtype()).split(".")[-1],
                                        is_anomaly_enabled())
        finally:
            lib.set_default_dtype(prev_dtype)
            autograd.set_detect_anomaly(False)
    assert seen["ember", "thread starts with"] == seen["torch", "thread starts with"] == ("float64", True)
    assert seen["ember", "main after"] == seen["torch", "main after"] == ("float16", False)


def test_off_list_back_to_empty_after_balanced_use():
    # the hot path's shortcut: grad_mode.OFF is empty again once every no_grad block has closed
    before = len(grad_mode.OFF)
    b = threading.Barrier(3, timeout=TIMEOUT)

    def user():
        for _ in range(200):
            with ember.no_grad():
                b.wait()      # both users are inside no_grad
                b.wait()
                assert not ember.is_grad_enabled()
            assert ember.is_grad_enabled()
    user.barriers = (b,)

    def watcher():
        for _ in range(200):
            b.wait()
            assert len(grad_mode.OFF) >= 2 + before
            b.wait()
    watcher.barriers = (b,)

    run_threads(user, user, watcher)
    assert len(grad_mode.OFF) == before


def test_off_list_one_entry_per_thread_whatever_the_mode_value():
    # set_enabled takes any truthy or falsy mode (the engine passes create_graph as given, None too)
    before = len(grad_mode.OFF)
    x = ember.ones(2, requires_grad=True)
    y = (x * 2).sum()
    with ember.no_grad():
        for mode in (None, 0, False, 0.0):
            assert grad_mode.set_enabled(mode) is False
            assert len(grad_mode.OFF) == before + 1
        ember.autograd.grad(y, [x], create_graph=None)
        assert len(grad_mode.OFF) == before + 1
    assert len(grad_mode.OFF) == before and ember.is_grad_enabled()


def test_backwards_in_two_threads_accumulate_into_a_shared_leaf_without_loss(monkeypatch):
    # both threads reach the leaf while its .grad is still None: unlocked, both would assign it and
    # one gradient would be lost. A pause inside the accumulation (where making the fresh .grad
    # array could lose the GIL) makes that window wide enough to hit every time.
    from ember.autograd import engine
    fresh = engine._fresh

    def slow_fresh(g):
        time.sleep(0.002)
        return fresh(g)

    monkeypatch.setattr(engine, "_fresh", slow_fresh)
    w = ember.zeros(1000, requires_grad=True)
    rounds = 20
    start, done = threading.Barrier(3), threading.Barrier(3)

    def work():
        for _ in range(rounds):
            start.wait()
            (w * 1.0).sum().backward()
            done.wait()

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:   # the autouse fixture switches threads every 10 us
        t.start()
    lost = 0
    for _ in range(rounds):
        w.grad = None
        start.wait()
        done.wait()
        lost += int(w.grad.numpy()[0] != 2.0)
    for t in threads:
        t.join()
    assert lost == 0, f"{lost} of {rounds} rounds lost a thread's gradient"
