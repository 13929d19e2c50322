"""traced.save / ember.jit.load: the graph and its state run in a fresh process that has no model code;
damaged, edited or foreign files give a clear error and never run anything from the file."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import ember
from ember.jit.serialize import GraphFileError, FORMAT, _digest
from tests.jit.models import make, step_fn

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

RUNNER = r"""
import sys, json, numpy as np
import ember
g = ember.jit.load(sys.argv[1])
args = [ember.tensor(np.load(p)) for p in sys.argv[3:]]
mode = sys.argv[2]
if mode == "infer":
    np.save(sys.argv[1] + ".out.npy", g(*args).numpy())
else:
    ember.manual_seed(5)
    losses = [float(g(*args)) for _ in range(2)]
    np.savez(sys.argv[1] + ".state.npz", **{k: t.numpy() for k, t in g.state.items()})
    print(json.dumps(losses))
"""


def _run_fresh(tmp_path, path, mode, *arrays):
    files = []
    for i, a in enumerate(arrays):
        p = str(tmp_path / f"arg{i}.npy")
        np.save(p, a)
        files.append(p)
    script = tmp_path / "run_graph.py"
    script.write_text(RUNNER)
    # a fresh interpreter in an empty directory: tests/ (the model code) is not importable there
    env = dict(os.environ, PYTHONPATH=ROOT)
    r = subprocess.run([sys.executable, str(script), str(path), mode, *files], cwd=str(tmp_path), env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return r.stdout


def _saved_inference(kind, path):
    """A reference model traced in eval mode and saved at `path`: (its input, its output)."""
    model, _, x, _ = make(kind)
    model.eval()
    with ember.no_grad():
        traced = ember.jit.trace(model, x)
        ref = model(x).numpy()
    traced.save(path)
    return x, ref


def _saved_step(path):
    """The MLP's compiled training step saved at `path` (its steady-state trace), then run twice more
    from the same seed the runners use: (model, x, y, those two losses)."""
    model, opt, x, y = make("mlp")
    step = ember.compile(step_fn(model, opt))
    step(x, y); step(x, y)                      # the steady-state trace (optimizer state exists)
    step.save(path)
    ember.manual_seed(5)
    return model, x, y, [step(x, y).item() for _ in range(2)]


@pytest.mark.parametrize("kind", ["mlp", "cnn", "gpt", "zoo_gpt"])
def test_saved_inference_graph_runs_without_the_model_code(tmp_path, kind):
    path = tmp_path / f"{kind}.ejit"
    x, ref = _saved_inference(kind, path)
    _run_fresh(tmp_path, path, "infer", x.numpy())
    np.testing.assert_array_equal(np.load(str(path) + ".out.npy"), ref)


def test_saved_training_step_trains_in_a_fresh_process(tmp_path):
    path = tmp_path / "step.ejit"
    model, x, y, losses = _saved_step(path)
    out = _run_fresh(tmp_path, path, "train", x.numpy(), y.numpy())
    np.testing.assert_array_equal(json.loads(out), losses)
    state = np.load(str(path) + ".state.npz")
    for name, p in model.named_parameters():
        np.testing.assert_array_equal(state[name], p.detach().numpy(), err_msg=name)


def _run_here(path, mode, *arrays):
    """RUNNER in this process (mutation testing cannot run the fresh-process tests: see scripts/mutation.py)."""
    g = ember.jit.load(path)
    args = [ember.tensor(a) for a in arrays]
    if mode == "infer":
        return g(*args).numpy()
    ember.manual_seed(5)
    losses = [float(g(*args)) for _ in range(2)]
    return losses, {k: t.numpy() for k, t in g.state.items()}


@pytest.mark.parametrize("kind", ["mlp", "cnn", "gpt", "zoo_gpt"])
def test_saved_inference_graph_loads_in_this_process(tmp_path, kind):
    x, ref = _saved_inference(kind, tmp_path / "g.ejit")
    np.testing.assert_array_equal(_run_here(tmp_path / "g.ejit", "infer", x.numpy()), ref)


def test_saved_training_step_trains_when_loaded_in_this_process(tmp_path):
    model, x, y, losses = _saved_step(tmp_path / "step.ejit")
    got, state = _run_here(tmp_path / "step.ejit", "train", x.numpy(), y.numpy())
    assert got == losses
    for name, p in model.named_parameters():
        np.testing.assert_array_equal(state[name], p.detach().numpy(), err_msg=name)


def _saved(tmp_path):
    model = ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.ReLU())
    traced = ember.jit.trace(model, ember.ones(2, 3))
    path = tmp_path / "g.ejit"
    traced.save(path)
    return path


def _rewrite(path, edit):
    """Re-save the file with its graph JSON edited by `edit(doc)` and a valid checksum."""
    from safetensors import safe_open
    from safetensors.numpy import save_file
    with safe_open(str(path), framework="numpy") as f:
        meta = f.metadata()
        tensors = {k: f.get_tensor(k) for k in f.keys()}
    doc = json.loads(meta[FORMAT])
    edit(doc)
    text = json.dumps(doc)
    save_file(tensors, str(path), metadata={FORMAT: text, FORMAT + ".sha256": _digest(text, tensors)})


def test_truncated_file(tmp_path):
    path = _saved(tmp_path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(GraphFileError, match="truncated or corrupt"):
        ember.jit.load(path)


def test_edited_file_fails_its_checksum(tmp_path):
    path = _saved(tmp_path)
    data = bytearray(path.read_bytes())
    data[-1] ^= 0x40                      # one bit of one weight
    path.write_bytes(bytes(data))
    with pytest.raises(GraphFileError, match="checksum mismatch"):
        ember.jit.load(path)


def test_unknown_version(tmp_path):
    path = _saved(tmp_path)
    _rewrite(path, lambda d: d.update(version=99))
    with pytest.raises(GraphFileError, match="format version 99; this Ember reads version 1"):
        ember.jit.load(path)


def test_unknown_primitive_and_foreign_attribute_never_run(tmp_path):
    path = _saved(tmp_path)
    _rewrite(path, lambda d: d["nodes"][0].update(prim="os.system"))
    with pytest.raises(GraphFileError, match="unknown primitive 'os.system'"):
        ember.jit.load(path)
    path = _saved(tmp_path)
    _rewrite(path, lambda d: d["nodes"][-1]["attrs"].update(code={"__reduce__": "os.system"}))
    with pytest.raises(GraphFileError, match="unknown form|unknown attribute"):
        ember.jit.load(path)


def test_plain_safetensors_file_is_not_a_graph(tmp_path):
    path = tmp_path / "w.safetensors"
    ember.save({"w": ember.ones(2)}, path)
    with pytest.raises(GraphFileError, match="not a saved graph"):
        ember.jit.load(path)


def test_save_is_atomic(tmp_path, monkeypatch):
    path = _saved(tmp_path)
    before = path.read_bytes()
    import safetensors.numpy

    def broken(*a, **k):
        raise OSError("disk full")
    monkeypatch.setattr(safetensors.numpy, "save_file", broken)
    traced = ember.jit.trace(ember.nn.Linear(3, 4), ember.ones(2, 3))
    with pytest.raises(OSError):
        traced.save(path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".ember-jit-")] == []


def test_loaded_graph_checks_its_inputs(tmp_path):
    g = ember.jit.load(_saved(tmp_path))
    assert g(ember.ones(2, 3)).shape == (2, 4)
    with pytest.raises(ValueError, match=r"must be float32\[2, 3\] as traced"):
        g(ember.ones(5, 3))


def test_attribute_values_round_trip_through_the_tagged_json():
    from ember.jit.serialize import _enc, _dec
    from ember.ops.primitives import SLOT
    import math
    values = [None, True, False, 0, -3, 2.5, "mean", float("inf"), float("-inf"), (1, (2, None)), [3, [4]],
              slice(1, None, 2), slice(None), Ellipsis, SLOT, np.dtype("float32"), np.dtype("int64"),
              ember.float16, ember.bfloat16, ember.device("cpu"), np.float32(1.5), np.int64(7),
              (Ellipsis, slice(None, -1), 0), (SLOT, [slice(0, 2)])]
    for v in values:
        doc = json.loads(json.dumps(_enc(v, "test")))      # what a file holds
        back = _dec(doc, "test")
        want = np.dtype(v.np) if hasattr(v, "np") else v
        assert type(back) is type(want) or isinstance(v, np.generic), (v, back)
        assert back == want or (isinstance(v, np.generic) and back == v.item()), (v, back)
    nan = _dec(json.loads(json.dumps(_enc(float("nan"), "t"))), "t")
    assert isinstance(nan, float) and math.isnan(nan)
    assert _dec(_enc(ember.bfloat16, "t"), "t").name == "bfloat16"


@pytest.mark.parametrize("doc", [
    {"ellipsis": False}, {"slot": 1}, {"slice": [1, 2]}, {"slice": 3}, {"tuple": 3}, {"list": "ab"},
    {"float": "1e400"}, {"float": "inf", "extra": 1}, {"dtype": 3}, {"device": None}, {"module": "os"},
    [1, 2], {},
])
def test_attribute_values_of_unknown_form_are_refused(doc):
    from ember.jit.serialize import _dec
    with pytest.raises(GraphFileError, match="unknown form"):
        _dec(doc, "node X")


def test_unstorable_attribute_values_are_named():
    from ember.jit.serialize import _enc
    with pytest.raises(TypeError, match="cannot store the attribute value .* of node Y"):
        _enc(object(), "node Y")


def test_a_graph_with_ellipsis_steps_and_minus_inf_round_trips(tmp_path):
    def fn(x):
        y = x[..., ::2]                                      # Ellipsis and a step in an Index key
        return y.masked_fill(y > 1.5, float("-inf")).softmax(-1)
    x = ember.arange(12.0).reshape(2, 6) / 4
    traced = ember.jit.trace(fn, (x,))
    traced.save(tmp_path / "g.ejit")
    np.testing.assert_array_equal(_run_here(tmp_path / "g.ejit", "infer", x.numpy()), fn(x).numpy())


def test_a_saved_function_returns_the_same_structure_when_loaded(tmp_path):
    def fn(x):
        s = x.sum()
        return {"y": x * 2, "rest": [x + 1, (x.exp(), 2.5, None, "tag")], "total": s.item()}
    x = ember.arange(4.0)
    f = ember.compile(fn)
    f(x)
    f.save(tmp_path / "g.ejit")
    g = ember.jit.load(tmp_path / "g.ejit")
    x2 = ember.arange(4.0) * 3
    got, want = g(x2), fn(x2)
    assert list(got) == ["y", "rest", "total"] and isinstance(got["rest"], list)
    assert isinstance(got["rest"][1], tuple) and got["rest"][1][1:] == (2.5, None, "tag")
    for a, b in ((got["y"], want["y"]), (got["rest"][0], want["rest"][0]), (got["rest"][1][0], want["rest"][1][0])):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert got["total"] == want["total"] == 18.0     # a value read and returned: recomputed, not the trace's


def test_a_returned_dict_with_other_keys_cannot_be_saved(tmp_path):
    f = ember.compile(lambda x: {1: x * 2})
    f(ember.ones(2))
    with pytest.raises(TypeError, match="a returned dict must have string keys"):
        f.save(tmp_path / "g.ejit")
    assert not (tmp_path / "g.ejit").exists() and not list(tmp_path.iterdir())


def test_save_writes_beside_the_target_then_renames(tmp_path, monkeypatch):
    # a temporary file in the target's directory, renamed over it: a rename across file systems is a copy
    seen = []
    real = os.replace
    monkeypatch.setattr(os, "replace", lambda src, dst: (seen.append((src, dst)), real(src, dst))[1])
    _saved(tmp_path)
    (src, dst), = seen
    assert os.path.dirname(src) == str(tmp_path) and os.path.basename(src).startswith(".ember-jit-")
    assert dst.endswith("g.ejit")


def test_a_saved_graph_keeps_a_tensor_each_call_makes_its_own(tmp_path):
    def scatter(x):
        out = ember.zeros(4)                  # made by the call and written: a fresh copy every run
        out[1:3] += x
        return out
    ember.jit.trace(scatter, (ember.ones(2),)).save(tmp_path / "g.ejit")
    g = ember.jit.load(tmp_path / "g.ejit")
    assert [g(ember.ones(2) * i).tolist() for i in (1, 2, 3)] == [[0.0, i, i, 0.0] for i in (1.0, 2.0, 3.0)]


def _set_leaf_dtype(d):
    leaf = next(x for x in d["leaves"] if x["kind"] in ("state", "const"))
    leaf["dtype"] = "float64"


def _duplicate_leaf(d):
    d["leaves"].append(dict(d["leaves"][0]))


def _use_undefined(d):
    d["nodes"][0]["inputs"][0] = 999


def _string_id(d):
    d["leaves"][0]["id"] = "0"


@pytest.mark.parametrize("edit, message", [
    (_set_leaf_dtype, r"tensor leaf\d+ is float32\[.*\], the graph says float64"),
    (_duplicate_leaf, r"value %\d+ defined twice or badly"),
    (_string_id, r"value %0 defined twice or badly"),
    (_use_undefined, r"uses %999 before it is defined"),
    (lambda d: d["leaves"][0].update(kind="python"), r"unknown leaf kind 'python'"),
])
def test_a_consistent_but_malformed_graph_is_refused_naming_what(tmp_path, edit, message):
    path = _saved(tmp_path)
    _rewrite(path, edit)                   # a valid checksum: only the graph's own checks catch these
    with pytest.raises(GraphFileError, match=message):
        ember.jit.load(path)
