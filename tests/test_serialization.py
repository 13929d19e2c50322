"""ember.save / ember.load: safetensors checkpoints, torch interop, refusal of pickle, atomic writes."""
import os
import pickle
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch
from safetensors.torch import load_file as torch_load_file, save_file as torch_save_file

import ember
import ember.serialization as serialization
from ember.serialization import load, save


def t(values, dtype):
    return ember.tensor(values, dtype=dtype)


def test_round_trip_nested_structure(tmp_path):
    w = t([[1.0, 2.0], [3.0, 4.0]], ember.float32)
    obj = {
        "model": {"w": w, "b": t([0.5], ember.float64), "half": t([1.5, -2.0], ember.float16),
                  "bf16": t([1.0, 0.3], ember.bfloat16), "idx": t([1, 2, 3], ember.int64),
                  "mask": t([True, False], ember.bool), "bytes": t([0, 255], ember.uint8),
                  "scalar": t(3.25, ember.float32), "empty": ember.zeros(0, 3)},
        "optim": {"state": {0: {"step": 7, "buf": w}}, "param_groups": [{"lr": 0.1, "betas": (0.9, 0.999),
                                                                          "params": [0], "foreach": None}]},
        "epoch": 3, "loss": 0.25, "best": float("inf"), "worst": float("-inf"), "bad": float("nan"),
        "name": "run-1", "done": False, "notes": ["a", 1, None, (2.5, "b")], 1.5: "float key", None: "none key",
    }
    path = tmp_path / "ckpt.safetensors"
    save(obj, path)
    back = load(path)

    assert back.keys() == obj.keys()
    for key, value in obj["model"].items():
        got = back["model"][key]
        assert got.dtype == value.dtype and got.shape == value.shape, key
        np.testing.assert_array_equal(got.numpy().astype(np.float64), value.numpy().astype(np.float64))
    assert back["optim"]["state"][0]["buf"] is back["model"]["w"]  # a tensor saved twice is one tensor
    assert back["optim"]["param_groups"] == [{"lr": 0.1, "betas": (0.9, 0.999), "params": [0], "foreach": None}]
    assert isinstance(back["optim"]["param_groups"][0]["betas"], tuple)
    assert back["epoch"] == 3 and type(back["epoch"]) is int and back["loss"] == 0.25
    assert back["best"] == float("inf") and back["worst"] == float("-inf") and np.isnan(back["bad"])
    assert back["notes"] == ["a", 1, None, (2.5, "b")] and back[1.5] == "float key" and back[None] == "none key"
    assert back["done"] is False


def test_loaded_tensors_are_writable_and_keep_requires_grad(tmp_path):
    p = ember.tensor([1.0, 2.0], requires_grad=True)
    save({"p": p}, tmp_path / "p.safetensors")
    q = load(tmp_path / "p.safetensors")["p"]
    assert q.requires_grad
    with ember.no_grad():
        q.mul_(2)
    assert q.tolist() == [2.0, 4.0]


def test_optimizer_state_round_trip_continues_identically(tmp_path):
    def make():
        w = ember.tensor([1.0, -2.0, 0.5], dtype=ember.float64, requires_grad=True)
        return w, ember.optim.Adam([w], lr=0.1, amsgrad=True)

    def steps(w, opt, n):
        for _ in range(n):
            opt.zero_grad()
            (w * w * w * w).sum().backward()
            opt.step()

    w, opt = make()
    steps(w, opt, 5)
    save({"w": w, "opt": opt.state_dict()}, tmp_path / "c.safetensors")
    steps(w, opt, 5)

    ckpt = load(tmp_path / "c.safetensors")
    w2, opt2 = make()
    with ember.no_grad():
        w2.copy_(ckpt["w"])
    opt2.load_state_dict(ckpt["opt"])
    steps(w2, opt2, 5)
    assert w2.tolist() == w.tolist()


def test_file_written_by_torch_loads_as_a_flat_dict(tmp_path):
    tensors = {"layer.weight": torch.randn(3, 4), "layer.bias": torch.randn(3, dtype=torch.float64),
               "emb": torch.randn(2, 2).to(torch.bfloat16), "h": torch.randn(5).half(), "ids": torch.arange(4)}
    torch_save_file(tensors, str(tmp_path / "torch.safetensors"))
    loaded = load(tmp_path / "torch.safetensors")
    assert set(loaded) == set(tensors)
    for name, value in tensors.items():
        assert str(loaded[name].dtype).split(".")[-1] == str(value.dtype).split(".")[-1]
        np.testing.assert_array_equal(loaded[name].numpy().astype(np.float64), value.double().numpy())


def test_flat_state_dict_loads_in_torch(tmp_path):
    state = {"fc.weight": ember.tensor(np.arange(6.0).reshape(2, 3), dtype=ember.float32),
             "fc.bias": t([0.5, -0.5], ember.float32), "emb": t([1.0, 2.5], ember.bfloat16)}
    save(state, tmp_path / "ember.safetensors")
    loaded = torch_load_file(str(tmp_path / "ember.safetensors"))
    assert set(loaded) == set(state)
    for name, value in state.items():
        np.testing.assert_array_equal(loaded[name].double().numpy(), value.numpy().astype(np.float64))
    assert loaded["emb"].dtype == torch.bfloat16


@pytest.mark.parametrize("keep", [0, 4, 20, -10], ids=["empty", "4-bytes", "in-header", "in-data"])
def test_truncated_file_is_an_error_naming_the_file(tmp_path, keep):
    path = tmp_path / "cut.safetensors"
    save({"w": ember.zeros(100)}, path)
    data = path.read_bytes()
    path.write_bytes(data[:keep] if keep >= 0 else data[:keep])
    with pytest.raises(ValueError, match=r"cut\.safetensors.*(truncated|corrupt|not a safetensors)"):
        load(path)


def test_corrupt_header_is_an_error(tmp_path):
    path = tmp_path / "junk.bin"
    path.write_bytes((20).to_bytes(8, "little") + b"{not json at all!!!}" + b"\0" * 8)
    with pytest.raises(ValueError, match="junk.bin is corrupt"):
        load(path)
    path.write_bytes(b"hello world, this is text")
    with pytest.raises(ValueError, match="junk.bin is not a safetensors file"):
        load(path)


class _Payload:
    """Unpickling this creates a marker file: proof that pickle ran code."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


@pytest.mark.parametrize("writer", ["pickle", "torch.save"])
def test_pickle_files_are_refused_and_never_run(tmp_path, writer):
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.pt"
    if writer == "pickle":
        path.write_bytes(pickle.dumps({"w": _Payload(str(marker))}))
    else:
        torch.save({"w": torch.ones(2), "x": _Payload(str(marker))}, path)
    assert not marker.exists()
    with pytest.raises(ValueError, match="evil.pt is not a safetensors file.*pickle"):
        load(path)
    assert not marker.exists()


def test_unsupported_objects_are_refused_with_their_path(tmp_path):
    with pytest.raises(TypeError, match=r"cannot save a object \(at model.act\)"):
        save({"model": {"act": object()}}, tmp_path / "x.safetensors")
    loop = []
    loop.append(loop)
    with pytest.raises(ValueError, match="contains itself"):
        save(loop, tmp_path / "x.safetensors")
    assert os.listdir(tmp_path) == []


def test_map_location(tmp_path):
    save({"w": ember.ones(2)}, tmp_path / "m.safetensors")
    assert load(tmp_path / "m.safetensors", map_location="cpu")["w"].device == ember.device("cpu")
    assert load(tmp_path / "m.safetensors", map_location={"cuda:0": "cpu"})["w"].tolist() == [1.0, 1.0]
    with pytest.raises(TypeError, match="map_location"):
        load(tmp_path / "m.safetensors", map_location=3)


def _write_half_then(fail):
    def writer(fd, data):
        os.write(fd, bytes(data[: len(data) // 2]))
        fail()
    return writer


@pytest.mark.parametrize("anonymous", [True, False], ids=["O_TMPFILE", "named-temp"])
def test_failed_save_leaves_the_old_file_and_no_temp_files(tmp_path, monkeypatch, anonymous):
    path = tmp_path / "model.safetensors"
    save({"w": ember.ones(10)}, path)
    old = path.read_bytes()

    def boom():
        raise OSError("disk full")

    monkeypatch.setattr(serialization, "_write_all", _write_half_then(boom))
    if not anonymous:
        monkeypatch.setattr(serialization, "_write_anonymous", lambda *a: None)
    with pytest.raises(OSError, match="disk full"):
        save({"w": ember.zeros(100_000)}, path)
    assert path.read_bytes() == old
    assert os.listdir(tmp_path) == ["model.safetensors"]


def test_save_killed_mid_write_leaves_the_old_file(tmp_path):
    path = tmp_path / "model.safetensors"
    save({"w": ember.ones(10)}, path)
    old = path.read_bytes()
    script = textwrap.dedent(f"""
        import os, signal
        import ember, ember.serialization as s
        def write_half_then_die(fd, data):
            os.write(fd, bytes(data[: len(data) // 2]))
            os.kill(os.getpid(), signal.SIGKILL)
        s._write_all = write_half_then_die
        s.save({{"w": ember.zeros(2_000_000)}}, {str(path)!r})
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=60)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()
    assert path.read_bytes() == old
    assert os.listdir(tmp_path) == ["model.safetensors"]
    assert load(path)["w"].tolist() == [1.0] * 10


def test_save_replaces_the_file_atomically_and_to_file_objects(tmp_path):
    import io
    path = tmp_path / "a.safetensors"
    save({"w": ember.ones(3)}, path)
    save({"w": ember.zeros(3)}, str(path))
    assert load(str(path))["w"].tolist() == [0.0, 0.0, 0.0]
    assert os.listdir(tmp_path) == ["a.safetensors"]
    buf = io.BytesIO()
    save({"x": 1, "w": ember.ones(2)}, buf)
    buf.seek(0)
    back = load(buf)
    assert back["x"] == 1 and back["w"].tolist() == [1.0, 1.0]


def test_exported_at_top_level():
    assert ember.save is save and ember.load is load


@pytest.mark.cuda
@pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_tensors_go_back_to_their_device(tmp_path):
    w = ember.tensor([1.0, 2.0], device="cuda")
    save({"w": w}, tmp_path / "g.safetensors")
    assert load(tmp_path / "g.safetensors")["w"].device.type == "cuda"
    on_cpu = load(tmp_path / "g.safetensors", map_location="cpu")["w"]
    assert on_cpu.device.type == "cpu" and on_cpu.tolist() == [1.0, 2.0]


# -- tests written to kill surviving mutants (docs/testing.md, "Mutation testing") --------------------

def _raw_file(path, header: bytes, n=None):
    """A file with an 8-byte little-endian length `n` (default: the header's) followed by `header`."""
    path.write_bytes((len(header) if n is None else n).to_bytes(8, "little") + header)
    return path


def _load_error(path, exc=ValueError):
    with pytest.raises(exc) as info:
        load(path)
    return str(info.value)


def test_refusal_messages_name_the_kind_of_file_and_the_way_out(tmp_path):
    advice = ("Ember never loads pickle data, because unpickling can run arbitrary code. Convert it once, in an "
              "environment you trust: safetensors.torch.save_file(torch.load(path), 'model.safetensors')")
    torch.save({"w": torch.ones(2)}, tmp_path / "z.pt")
    assert _load_error(tmp_path / "z.pt").endswith(
        "z.pt is not a safetensors file: it is a zip archive, as torch.save writes. " + advice)
    for protocol in (2, 5):
        (tmp_path / "p.pt").write_bytes(pickle.dumps({"w": 1}, protocol=protocol))
        assert f"p.pt is not a safetensors file: it is a pickle, as torch.save writes. {advice}" in \
            _load_error(tmp_path / "p.pt")
    not_st = ("is not a safetensors file (it does not start with a safetensors header; Ember loads only "
              "safetensors and never loads pickle)")
    for junk in (b"\x80\x09" + b"\0" * 20, b"x\x03" + b"\0" * 20, b"\x01" + b"\0" * 7 + b"x"):
        (tmp_path / "j.bin").write_bytes(junk)
        assert _load_error(tmp_path / "j.bin").endswith("j.bin " + not_st)
    (tmp_path / "e.bin").write_bytes(b"\0" * 8)
    assert _load_error(tmp_path / "e.bin").endswith("e.bin is truncated or not a safetensors file (8 bytes)")


def test_header_length_limits_and_truncation_messages(tmp_path):
    # a header length over 100 MB is not a safetensors file; exactly 100 MB is a (truncated) one
    assert "not a safetensors file" in _load_error(_raw_file(tmp_path / "a", b"{}", n=100_000_001))
    assert _load_error(_raw_file(tmp_path / "b", b"{}", n=100_000_000)).endswith(
        "b is truncated (10 bytes, but the header alone needs 100000008)")
    assert _load_error(_raw_file(tmp_path / "c", b"{", n=1)).endswith("c is corrupt: its header is not valid "
                                                                      "JSON (Expecting property name enclosed in "
                                                                      "double quotes: line 1 column 2 (char 1))")
    assert load(_raw_file(tmp_path / "d", b"{}")) == {}  # a header that ends exactly at the end of the file
    path = tmp_path / "cut.safetensors"
    save({"w": ember.zeros(100)}, path)
    data = path.read_bytes()
    path.write_bytes(data[:20])
    n = int.from_bytes(data[:8], "little")
    assert _load_error(path).endswith(f"cut.safetensors is truncated (20 bytes, but the header alone needs {8 + n})")


def test_file_objects_are_named_in_errors(tmp_path):
    import io
    assert _load_error(io.BytesIO(b"hello world, not a checkpoint")).startswith(
        "ember.load: <file object> is not a safetensors file")
    (tmp_path / "named.bin").write_bytes(b"hello world, not a checkpoint")
    with open(tmp_path / "named.bin", "rb") as fh:
        assert "named.bin is not a safetensors file" in _load_error(fh)


def test_other_tools_files_with_metadata_and_unsupported_dtypes(tmp_path):
    torch_save_file({"w": torch.ones(2)}, str(tmp_path / "m.safetensors"), metadata={"author": "someone"})
    assert list(load(tmp_path / "m.safetensors")) == ["w"]
    torch_save_file({"u": torch.ones(2, dtype=torch.uint16)}, str(tmp_path / "u.safetensors"))
    assert _load_error(tmp_path / "u.safetensors").endswith(
        "u.safetensors holds a tensor of dtype U16, which Ember does not support")


def _ember_file(path, structure, tensors=None):
    """A safetensors file whose 'ember' metadata entry is `structure` (a JSON string)."""
    from safetensors.numpy import save_file
    save_file(tensors or {"w": np.ones(2, np.float32)}, str(path), metadata={"format": "pt", "ember": structure})
    return path


def test_corrupt_ember_metadata_is_named(tmp_path):
    assert _load_error(_ember_file(tmp_path / "a", "{not json")).startswith(
        "ember.load: " + str(tmp_path / "a") + " has a corrupt 'ember' metadata entry (Expecting")
    assert _load_error(_ember_file(tmp_path / "b", '{"t": "nope"}')).endswith(
        "b refers to a tensor 'nope' that it does not contain")
    long_node = '{"zz": "' + "x" * 100 + '"}'
    assert _load_error(_ember_file(tmp_path / "c", long_node)).endswith(
        "c has a corrupt 'ember' metadata entry (unexpected " + str({"zz": "x" * 100})[:80] + ")")
    assert "(unexpected ['t'])" in _load_error(_ember_file(tmp_path / "d", '["t"]'))
    assert "(unexpected {'f': 'one'})" in _load_error(_ember_file(tmp_path / "e", '{"f": "one"}'))


@pytest.mark.skipif(ember.cuda.is_available(), reason="checks the error raised when no CUDA device is present")
def test_tensors_saved_on_a_missing_device_need_map_location(tmp_path):
    path = _ember_file(tmp_path / "g", '{"d": [["w", {"t": "w", "dev": "cuda:0"}]]}')
    with pytest.raises(RuntimeError) as info:
        load(path)
    assert str(info.value) == ("ember.load: a tensor was saved on cuda:0, but no cuda device is available; "
                               "pass map_location='cpu'")
    assert load(path, map_location={"cuda:0": "cpu"})["w"].tolist() == [1.0, 1.0]
    with pytest.raises(RuntimeError, match="saved on cpu, but no cuda device"):
        load(_raw_safetensors_from_torch(tmp_path), map_location="cuda")
    with pytest.raises(TypeError, match="map_location must be None, a device, a device string or a dict, got int"):
        load(path, map_location=3)


def _raw_safetensors_from_torch(tmp_path):
    torch_save_file({"w": torch.ones(2)}, str(tmp_path / "t.safetensors"))
    return tmp_path / "t.safetensors"


def test_cuda_tensors_round_trip_on_the_fake_cuda_backend(tmp_path):
    # the CUDA paths (device entry, host copy, map_location) on NumPy-backed fake CUDA, in a fresh process
    script = textwrap.dedent(f"""
        import json, ember
        from safetensors import safe_open
        path = {str(tmp_path / 'g.safetensors')!r}
        g = ember.tensor([[1.0, 2.0], [3.0, 4.0]], device="cuda").t()
        ember.save({{"g": g, "c": ember.ones(1, requires_grad=True)}}, path)
        with safe_open(path, "np") as f:
            print(f.metadata()["ember"])
        back = ember.load(path)
        print(back["g"].device, back["g"].tolist(), back["c"].device, back["c"].requires_grad)
        print(ember.load(path, map_location="cpu")["g"].device, ember.load(path, map_location={{"cuda:0": "cpu"}})["g"].device)
    """)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=root,
                          env=dict(os.environ, EMBER_FAKE_CUDA="1"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        '{"d":[["g",{"t":"g","dev":"cuda:0"}],["c",{"t":"c","rg":true}]]}',
        "cuda:0 [[1.0, 3.0], [2.0, 4.0]] cpu True",
        "cpu cpu",
    ]


def test_save_writes_compact_pt_metadata_and_unique_tensor_names(tmp_path):
    from safetensors import safe_open
    x, y = ember.ones(2), ember.zeros(2)
    save({"a": {"b": x}, "a.b": y, "c": ember.ones(1), "a.b#2": ember.ones(3)}, tmp_path / "n.safetensors")
    with safe_open(str(tmp_path / "n.safetensors"), "np") as f:
        assert f.metadata()["format"] == "pt"
        assert sorted(f.keys()) == ["a.b", "a.b#2", "a.b#2#2", "c"]
        assert f.metadata()["ember"].startswith('{"d":[["a",{"d":[["b",{"t":"a.b"}]]}],["a.b",{"t":"a.b#2"}]')
    save(x, tmp_path / "top.safetensors")
    assert list(torch_load_file(str(tmp_path / "top.safetensors"))) == ["tensor"]
    back = load(tmp_path / "n.safetensors")
    assert back["a"]["b"].tolist() == [1.0, 1.0] and back["a.b"].tolist() == [0.0, 0.0]


def test_numpy_scalars_float_keys_and_views_round_trip(tmp_path):
    v = ember.tensor(np.arange(6.0).reshape(2, 3)).t()  # a non-contiguous view
    obj = {"f": np.float32(1.5), "i": np.int64(3), "b": np.bool_(True), "u": np.uint8(7), "v": v,
           float("inf"): "inf key", float("-inf"): "-inf key", 2.5: "finite key"}
    save(obj, tmp_path / "s.safetensors")
    back = load(tmp_path / "s.safetensors")
    assert back["f"] == 1.5 and type(back["f"]) is float and back["i"] == 3 and type(back["i"]) is int
    assert back["b"] is True and back["u"] == 7
    assert back[float("inf")] == "inf key" and back[float("-inf")] == "-inf key" and back[2.5] == "finite key"
    assert back["v"].tolist() == v.tolist() and back["v"].shape == (3, 2)
    with pytest.raises(TypeError, match=r"^ember.save: cannot save a datetime64 \(at when\)"):
        save({"when": np.datetime64("2024-01-01")}, tmp_path / "d.safetensors")


def test_save_errors_name_the_path(tmp_path):
    with pytest.raises(TypeError) as info:
        save({(1, 2): 0}, tmp_path / "k.safetensors")
    assert str(info.value) == ("ember.save: dict keys must be str, int, float, bool or None; got a tuple key in "
                               "the top-level dict")
    with pytest.raises(TypeError, match=r"got a frozenset key in a\.0$"):
        save({"a": [{frozenset(): 0}]}, tmp_path / "k.safetensors")
    loop = []
    loop.append(loop)
    with pytest.raises(ValueError, match=r"^ember.save: the object contains itself \(at 0\)$"):
        save(loop, tmp_path / "x.safetensors")
    inner = {}
    inner["me"] = inner
    with pytest.raises(ValueError, match=r"contains itself \(at a\.me\)$"):
        save({"a": inner}, tmp_path / "x.safetensors")
    with pytest.raises(TypeError) as info:
        save(object(), tmp_path / "x.safetensors")
    assert str(info.value) == ("ember.save: cannot save a object (at the top); checkpoints hold tensors, dicts, "
                               "lists, tuples, numbers, strings, bools and None (no pickle)")
    shared = [1, 2]  # one container reached twice is not a cycle
    save({"x": shared, "y": shared}, tmp_path / "x.safetensors")
    assert load(tmp_path / "x.safetensors") == {"x": [1, 2], "y": [1, 2]}


@pytest.mark.parametrize("anonymous", [True, False], ids=["O_TMPFILE", "named-temp"])
def test_temporary_file_is_hidden_next_to_the_target(tmp_path, monkeypatch, anonymous):
    renames = []
    real_replace = os.replace
    monkeypatch.setattr(os, "replace", lambda src, dst: (renames.append(src), real_replace(src, dst)))
    if anonymous:
        if serialization._write_anonymous(str(tmp_path), "probe", b"") is None:
            pytest.skip("no O_TMPFILE here")
        os.unlink(renames.pop() if renames else next(str(p) for p in tmp_path.iterdir()))

        def no_named(*a):
            raise AssertionError("fell back to a named temporary file")
        monkeypatch.setattr(serialization, "_write_named", no_named)
    else:
        monkeypatch.setattr(serialization, "_write_anonymous", lambda *a: None)
    save({"w": ember.ones(3)}, tmp_path / "model.safetensors")
    (tmp,) = renames
    assert os.path.dirname(tmp) == str(tmp_path)
    assert os.path.basename(tmp).startswith(".model.safetensors.") and tmp.endswith(".tmp")
    assert os.listdir(tmp_path) == ["model.safetensors"]
    assert load(tmp_path / "model.safetensors")["w"].tolist() == [1.0, 1.0, 1.0]
    if anonymous:  # O_TMPFILE files are created 0o666 less the umask, like open()
        umask = os.umask(0)
        os.umask(umask)
        assert os.stat(tmp_path / "model.safetensors").st_mode & 0o777 == 0o666 & ~umask


def test_anonymous_temp_name_collision_tries_another_name(tmp_path, monkeypatch):
    if serialization._write_anonymous(str(tmp_path), "probe", b"") is None:
        pytest.skip("no O_TMPFILE here")
    for p in tmp_path.iterdir():
        p.unlink()
    (tmp_path / f".m.{'00' * 6}.tmp").write_bytes(b"someone else's")
    draws = iter([b"\0" * 6, b"\1" * 6])
    monkeypatch.setattr(os, "urandom", lambda n: next(draws))
    name = serialization._write_anonymous(str(tmp_path), "m", b"data")
    assert name == str(tmp_path / f".m.{'01' * 6}.tmp")
    assert (tmp_path / f".m.{'00' * 6}.tmp").read_bytes() == b"someone else's"


def test_failed_rename_removes_the_temporary_file(tmp_path, monkeypatch):
    def fail(src, dst):
        raise OSError("rename refused")
    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError, match="rename refused"):
        save({"w": ember.ones(3)}, tmp_path / "model.safetensors")
    assert os.listdir(tmp_path) == []


def test_short_writes_are_continued(tmp_path, monkeypatch):
    real_write = os.write
    monkeypatch.setattr(os, "write", lambda fd, data: real_write(fd, bytes(data[:7])))
    w = ember.tensor(np.arange(50.0))
    save({"w": w}, tmp_path / "s.safetensors")
    monkeypatch.undo()
    assert load(tmp_path / "s.safetensors")["w"].tolist() == w.tolist()
