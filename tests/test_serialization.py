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
