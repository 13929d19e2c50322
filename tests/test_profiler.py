"""ember.profiler: per-primitive, per-module and per-backward-node events from a dispatch mode.

Times are never compared with each other or with a bound (the machine is shared): only counts, names,
nesting, shapes and bytes, which are deterministic, and the invariants 0 <= self <= total.
"""
import json
import os
import threading

import pytest

import ember
import ember.profiler as profiler_mod
from ember.autograd import profile_hooks
from ember.profiler import (EventList, FunctionEvent, FunctionEventAvg, ProfilerAction, ProfilerActivity,
                            profile, record_function, schedule, tensorboard_trace_handler)
from ember.utils.dispatch import PrimitiveLog, current_modes

EVAL = "autograd::engine::evaluate_function: "


def _mlp():
    ember.manual_seed(0)
    model = ember.nn.Sequential(ember.nn.Linear(16, 32), ember.nn.ReLU(), ember.nn.Linear(32, 4))
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    x = ember.randn(8, 16)
    y = ember.randint(0, 4, (8,))
    return model, opt, x, y


def _step(model, opt, x, y):
    loss = ember.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss


def _counts(prof):
    return {e.key: e.count for e in prof.key_averages()}


def test_mlp_step_counts_match_the_primitive_log():
    model, opt, x, y = _mlp()
    with profile() as prof, PrimitiveLog() as log:   # the log's calls go on to the profile
        _step(model, opt, x, y)
    counts = _counts(prof)
    assert counts["nn.Module: Sequential"] == 1
    assert counts["nn.Module: Linear"] == 2 and counts["nn.Module: ReLU"] == 1
    assert counts["Linear"] == 2 and counts["Relu"] == 1
    assert counts[EVAL + "LinearBackward"] == 2 and counts[EVAL + "ReluBackward"] == 1
    # every primitive call is one event, as the log saw it
    prims = {k: v for k, v in counts.items() if not k.startswith(("nn.Module: ", EVAL))}
    assert prims == dict(log.counts())
    assert all(isinstance(e, FunctionEventAvg) for e in prof.key_averages())


def test_table_has_torchs_columns_and_rows():
    model, opt, x, y = _mlp()
    with profile() as prof:
        _step(model, opt, x, y)
    table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=100)
    lines = table.splitlines()
    header = lines[1].split()
    assert " ".join(header) == "Name Self CPU % Self CPU CPU total % CPU total CPU time avg # of Calls"
    assert lines[0] == lines[2] == lines[-2] and set(lines[0]) == {"-", " "}
    assert lines[-1].startswith("Self CPU time total: ")
    rows = {line[:55].strip(): line.split()[-1] for line in lines[3:-2]}
    assert rows["Linear"] == "2" and rows["nn.Module: Linear"] == "2" and rows["Relu"] == "1"
    assert "Input Shapes" not in table and "CPU Mem" not in table
    # sorted by self time, descending; row_limit cuts the rows
    avgs = prof.key_averages()
    selfs = [e.self_cpu_time_total for e in sorted(avgs, key=lambda e: e.self_cpu_time_total, reverse=True)]
    assert selfs == sorted(selfs, reverse=True)
    assert len(prof.key_averages().table(sort_by="count", row_limit=3).splitlines()) == 3 + 3 + 2
    assert str(avgs) == avgs.table()
    top = avgs.table(top_level_events_only=True)
    assert "nn.Module: Sequential" in top and "nn.Module: Linear" not in top
    with pytest.raises(ValueError, match="sort_by='self_cuda_time_total' is not one of"):
        avgs.table(sort_by="self_cuda_time_total")


def test_times_are_consistent():
    model, opt, x, y = _mlp()
    with profile() as prof:
        _step(model, opt, x, y)
    events = prof.events()
    assert isinstance(events, EventList) and all(isinstance(e, FunctionEvent) for e in events)
    for e in events:
        assert e.cpu_time_total >= 0 and 0 <= e.self_cpu_time_total <= e.cpu_time_total
        assert e.time_range.elapsed_us() == pytest.approx(e.cpu_time_total)
        for c in e.cpu_children:
            assert e.start_ns <= c.start_ns <= c.end_ns <= e.end_ns
    for a in prof.key_averages():
        assert 0 <= a.self_cpu_time_total <= a.cpu_time_total + 1e-9
        assert a.cpu_time == pytest.approx(a.cpu_time_total / a.count)
    total = events.total_average()
    assert total.count == len(events)
    # the self times add up to the top-level events' total times
    top = sum(e.cpu_time_total for e in events if e.cpu_parent is None)
    assert events.self_cpu_time_total == pytest.approx(top, rel=1e-9)


def test_module_scopes_nest_and_backward_is_marked():
    model, opt, x, y = _mlp()
    with profile() as prof:
        _step(model, opt, x, y)
    ev = prof.events()
    seq = [e for e in ev if e.name == "nn.Module: Sequential"][0]
    assert seq.cpu_parent is None
    assert [c.name for c in seq.cpu_children] == ["nn.Module: Linear", "nn.Module: ReLU", "nn.Module: Linear"]
    assert [c.name for c in seq.cpu_children[0].cpu_children] == ["Linear"]
    assert not any(e.is_backward for e in ev if e.start_ns <= seq.start_ns)
    nodes = [e for e in ev if e.name.startswith(EVAL)]
    assert nodes and all(n.cpu_parent is None and n.is_backward for n in nodes)   # not inside the forward
    lin_bw = [n for n in nodes if n.name == EVAL + "LinearBackward"][0]
    assert lin_bw.cpu_children and all(c.is_backward for c in lin_bw.cpu_children)
    assert "MatMul" in [c.name for c in lin_bw.cpu_children]


def test_every_call_of_the_backward_is_marked():
    lin = ember.nn.Linear(3, 3)
    with profile() as prof:
        y = lin(ember.ones(2, 3))
        (y * y).sum().backward()
    ev = prof.events()
    first = [i for i, e in enumerate(ev) if e.name.startswith(EVAL)][0]
    assert not any(e.is_backward for e in ev[:first]) and all(e.is_backward for e in ev[first:])
    # y's two gradients (from both inputs of the Mul) are summed by the engine outside any node, and each
    # leaf's first .grad is a Clone (weight, bias)
    outside = [e.name for e in ev[first:] if e.cpu_parent is None and not e.name.startswith(EVAL)]
    assert outside == ["Add", "Clone", "Clone"]


def test_record_shapes():
    model, opt, x, y = _mlp()
    with profile(record_shapes=True) as prof:
        model(x)
    lin = [e for e in prof.events() if e.name == "Linear"]
    assert [e.input_shapes for e in lin] == [[[8, 16], [32, 16], [32]], [[8, 32], [4, 32], [4]]]
    by_shape = prof.key_averages(group_by_input_shape=True)
    assert sorted(str(e.input_shapes) for e in by_shape if e.key == "Linear") == \
        ["[[8, 16], [32, 16], [32]]", "[[8, 32], [4, 32], [4]]"]
    table = by_shape.table(sort_by="cpu_time_total")
    assert table.splitlines()[1].split()[-2:] == ["Input", "Shapes"]
    assert "[[8, 16], [32, 16], [32]]" in table
    assert "Input Shapes" not in prof.key_averages().table()          # as torch: only when grouped
    with profile() as prof2:
        model(x)
    assert all(e.input_shapes == [] for e in prof2.events())


def test_profile_memory_counts_new_output_bytes():
    model, opt, x, y = _mlp()
    with profile(profile_memory=True) as prof:
        model(x)
    lin = [e for e in prof.events() if e.name == "Linear"]
    assert [e.self_cpu_memory_usage for e in lin] == [8 * 32 * 4, 8 * 4 * 4]
    seq = [e for e in prof.events() if e.name == "nn.Module: Sequential"][0]
    assert seq.self_cpu_memory_usage == 0 and seq.cpu_memory_usage == 8 * 32 * 4 * 2 + 8 * 4 * 4
    assert "Self CPU Mem" in prof.key_averages().table()


def test_chrome_trace_is_valid_nested_json(tmp_path):
    model, opt, x, y = _mlp()
    with profile(record_shapes=True, with_stack=True) as prof:
        with record_function("train_step"):
            _step(model, opt, x, y)
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    assert os.listdir(tmp_path) == ["trace.json"]
    with open(path) as f:
        doc = json.load(f)
    xs = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    assert len(xs) == len(prof.events())
    for e in xs:
        assert {"name", "ph", "ts", "dur", "pid", "tid", "args"} <= set(e)
        assert e["dur"] >= 0 and isinstance(e["args"], dict)
    assert {e["name"] for e in xs} >= {"train_step", "nn.Module: Linear", "Linear", EVAL + "LinearBackward"}
    assert [e for e in xs if e["name"] == "Linear"][0]["args"]["Input Dims"] == [[8, 16], [32, 16], [32]]
    assert "test_profiler.py" in [e for e in xs if e["name"] == "Linear"][0]["args"]["Call stack"]
    # X events on one thread must nest: each starts after the enclosing one and ends before it ends
    eps = 1e-3
    open_ = []
    for e in sorted(xs, key=lambda e: (e["ts"], -e["dur"])):
        while open_ and open_[-1]["ts"] + open_[-1]["dur"] <= e["ts"] + eps:   # ended before e began
            open_.pop()
        if open_:
            assert e["ts"] + e["dur"] <= open_[-1]["ts"] + open_[-1]["dur"] + eps, (e, open_[-1])
        open_.append(e)
    assert xs[0]["name"] == "train_step" and all(e["ts"] + e["dur"] <= xs[0]["ts"] + xs[0]["dur"] + eps
                                                 for e in xs)


def test_chrome_trace_failure_leaves_the_old_file(tmp_path, monkeypatch):
    with profile() as prof:
        ember.ones(3).exp()
    path = tmp_path / "trace.json"
    path.write_text("old")

    def broken_dump(obj, f):
        f.write('{"traceEvents": [')
        raise OSError("disk full")
    monkeypatch.setattr(profiler_mod.profiler.json, "dump", broken_dump)
    with pytest.raises(OSError, match="disk full"):
        prof.export_chrome_trace(str(path))
    assert path.read_text() == "old" and os.listdir(tmp_path) == ["trace.json"]


def test_record_function_as_context_manager_and_decorator():
    @record_function("double")
    def double(t):
        return t * 2

    x = ember.ones(3)
    double(x)                                   # no profile: nothing happens
    with record_function("outside"):
        pass
    with profile() as prof:
        with record_function("outer") as rf:
            double(double(x))
    assert isinstance(rf, record_function)
    ev = prof.events()
    assert [e.name for e in ev] == ["outer", "double", "Mul", "double", "Mul"]
    assert [c.name for c in ev[0].cpu_children] == ["double", "double"]
    assert ev[1].is_user_annotation and ev[1].cpu_children[0].name == "Mul"
    assert _counts(prof) == {"outer": 1, "double": 2, "Mul": 2}
    with pytest.raises(TypeError, match="record_function: name must be a string"):
        record_function(3)


def test_nothing_recorded_after_exit_and_no_mode_left():
    model, opt, x, y = _mlp()
    with profile() as prof:
        model(x)
    n = len(prof.events())
    assert current_modes() == () and profile_hooks.OPEN == [] and profile_hooks.current() is None
    _step(model, opt, x, y)
    with record_function("late"):
        model(x)
    assert len(prof.events()) == n


def test_no_profile_means_the_fast_paths(monkeypatch):
    def boom(*args):
        raise AssertionError("profile hook called with no profile open")
    monkeypatch.setattr(profile_hooks, "module_call", boom)
    monkeypatch.setattr(profile_hooks, "run_node", boom)
    model, opt, x, y = _mlp()
    _step(model, opt, x, y)                     # neither hook runs


def test_exit_on_exception_cleans_up():
    with pytest.raises(ValueError):
        with profile() as prof:
            with record_function("failing"):
                ember.ones(2).exp()
                raise ValueError("boom")
    assert current_modes() == () and profile_hooks.OPEN == []
    failing = prof.events()[0]
    assert failing.name == "failing" and failing.end_ns >= failing.start_ns


def test_module_hooks_still_run_under_profile():
    lin = ember.nn.Linear(3, 2)
    seen = []
    lin.register_forward_pre_hook(lambda m, args: seen.append("pre"))
    lin.register_forward_hook(lambda m, args, out: out * 0)
    with profile() as prof:
        out = lin(ember.ones(1, 3))
    assert seen == ["pre"] and out.tolist() == [[0.0, 0.0]]
    mod = prof.events()[0]
    assert mod.name == "nn.Module: Linear" and [c.name for c in mod.cpu_children] == ["Linear", "Mul"]


def test_anomaly_mode_and_profile_together():
    x = ember.randn(4, requires_grad=True)
    with ember.autograd.detect_anomaly(), profile() as prof:
        (x * x).sum().backward()
    assert _counts(prof)[EVAL + "MulBackward"] == 1


def test_profiles_do_not_nest_and_other_threads_are_not_seen():
    with profile() as prof:
        with pytest.raises(RuntimeError, match="already open in this thread"):
            profile().__enter__()
        t = threading.Thread(target=lambda: ember.nn.Linear(2, 2)(ember.ones(1, 2)).exp())
        t.start()
        t.join()
        ember.ones(2).neg()
    assert [e.name for e in prof.events()] == ["Neg"]


@pytest.mark.filterwarnings("ignore:Profiler won't be using warmup")
def test_schedule_matches_torch():
    torch_profiler = pytest.importorskip("torch.profiler")
    for kw in [dict(wait=1, warmup=1, active=2), dict(wait=0, warmup=0, active=1, repeat=2),
               dict(wait=2, warmup=1, active=3, repeat=1, skip_first=2)]:
        ours, theirs = schedule(**kw), torch_profiler.schedule(**kw)
        assert [ours(i).name for i in range(20)] == [theirs(i).name for i in range(20)], kw
    assert schedule(wait=0, warmup=0, active=1)(0) is ProfilerAction.RECORD_AND_SAVE
    with pytest.raises(ValueError, match="schedule: wait must be a non-negative integer"):
        schedule(wait=-1, warmup=0, active=1)


def test_schedule_and_step_record_the_active_steps_only():
    model, opt, x, y = _mlp()
    traces = []

    def ready(p):
        traces.append([e.name for e in p.events() if e.cpu_parent is None])
        assert p.key_averages() is not None
    with profile(schedule=schedule(wait=1, warmup=1, active=2, repeat=2), on_trace_ready=ready) as prof:
        for _ in range(9):
            model(x)
            prof.step()
    # cycles: steps 0-3 (record 2, 3) and 4-7 (record 6, 7); step 8 is after the last repeat
    assert traces == [["ProfilerStep#2", "ProfilerStep#3"], ["ProfilerStep#6", "ProfilerStep#7"]]
    assert _counts(prof)["Linear"] == 4 and _counts(prof)["ProfilerStep#6"] == 1
    step6 = prof.events()[0]
    assert [c.name for c in step6.cpu_children] == ["nn.Module: Sequential"]


def test_on_trace_ready_at_exit_and_tensorboard_handler(tmp_path):
    with profile(on_trace_ready=tensorboard_trace_handler(str(tmp_path / "tb"), worker_name="w")):
        ember.ones(2).exp()
    (name,) = os.listdir(tmp_path / "tb")
    assert name.startswith("w.") and name.endswith(".pt.trace.json")
    with open(tmp_path / "tb" / name) as f:
        assert [e["name"] for e in json.load(f)["traceEvents"] if e["ph"] == "X"] == ["Exp"]


def test_activities():
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:   # CPU tensors: no sync
        ember.ones(2).exp()
    assert _counts(prof) == {"Exp": 1}
    with pytest.raises(ValueError, match="profile: activities must be ProfilerActivity values"):
        profile(activities=["cpu"])


@pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_activity_synchronises_each_call():
    x = ember.randn(256, 256, device="cuda")
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        (x @ x).sum()
    assert _counts(prof) == {"MatMul": 1, "Sum": 1}


@pytest.mark.parametrize("recording", [False, True])
def test_anomaly_mode_inside_a_profile(recording):
    # the engine runs each node through profile_hooks.run_node while a profile is open, recording or not
    # (a schedule's wait step): anomaly mode's NaN check still runs there, and only there
    x = ember.tensor([0.0], requires_grad=True)
    sched = schedule(wait=0 if recording else 1, warmup=0, active=1)
    with profile(schedule=sched) as prof:
        (x.sqrt() * 0).sum().backward()          # no anomaly mode: a NaN gradient, no error
        assert bool(x.grad.isnan().all())
        with ember.autograd.detect_anomaly():
            y = x.sqrt()
            with pytest.raises(RuntimeError) as e:
                (y * 0).sum().backward()
        prof.step()
    assert str(e.value).startswith("Function 'SqrtBackward' returned nan values in its 0th output")


def test_module_and_backward_node_events_categories_and_backward_marks():
    model, _, x, y = _mlp()
    with profile() as prof:
        loss = ember.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        x * 2                                    # after backward: a forward event again
    evs = list(prof.events())
    mods = [e for e in evs if e.name == "nn.Module: Linear"]
    assert len(mods) == 2 and all(e.category == "python_function" and not e.is_backward for e in mods)
    nodes = [e for e in evs if e.name.startswith(EVAL)]
    assert nodes and all(e.category == "cpu_op" and e.is_backward for e in nodes)
    assert evs[-1].name == "Mul" and not evs[-1].is_backward
    assert prof._backward_depth == 0


def test_a_waiting_profile_records_no_module_or_node_events():
    model, _, x, y = _mlp()
    with profile(schedule=schedule(wait=1, warmup=0, active=1)) as prof:
        ember.nn.functional.cross_entropy(model(x), y).backward()
        assert list(prof.events()) == []
        prof.step()
