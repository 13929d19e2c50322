"""ember.save / ember.load: safetensors checkpoints, torch interop, refusal of pickle and of malformed
files, atomic writes, streaming (memory)."""
import collections
import io
import json
import os
import pickle
import signal
import subprocess
import sys
import textwrap
import tracemalloc

import numpy as np
import pytest
import torch
import safetensors.numpy
from safetensors.torch import load_file as torch_load_file, save_file as torch_save_file

import ember
import ember.serialization as serialization
from ember.serialization import CheckpointError, load, save


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


# Values that tell the dtypes apart: a reader that decodes int32 bytes as float32 (or int8 as uint8, or
# bfloat16 as float16) gets different values, and the bytes are compared exactly.
_VALUES = {
    "bool": [True, False, True],
    "uint8": [0, 1, 127, 128, 255],
    "int8": [-128, -1, 0, 1, 127],
    "int16": [-32768, -1, 0, 300, 32767],
    "int32": [-2**31, -1, 0, 70000, 2**31 - 1],
    "int64": [-2**63, -1, 0, 2**40 + 3, 2**63 - 1],
    "float16": [-65504.0, -1.5, 0.0, 6e-8, float("inf")],
    "bfloat16": [-3.0e38, -1.5, 0.0, 1e-30, float("inf")],
    "float32": [-3.0e38, -1.5, 0.0, 1e-40, float("nan")],
    "float64": [-1e308, -1.5, 0.0, 5e-324, float("nan")],
}
_TORCH_DTYPES = {name: getattr(torch, name) for name in _VALUES}


def _same(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    assert got.numpy().tobytes() == want.numpy().tobytes(), (got.numpy(), want.numpy())


def test_every_dtype_round_trips_bit_for_bit(tmp_path):
    assert set(_VALUES) == {d.name for d in ember._dtype._ALL}  # a new dtype must be added here
    state = {name: t(values, getattr(ember, name)) for name, values in _VALUES.items()}
    save(state, tmp_path / "dtypes.safetensors")
    back = load(tmp_path / "dtypes.safetensors")
    assert list(back) == list(state)
    for name, value in state.items():
        _same(back[name], value)


@pytest.mark.parametrize("dtype", list(_VALUES))
def test_non_contiguous_0d_and_empty_tensors_round_trip(tmp_path, dtype):
    dt = getattr(ember, dtype)
    grid = t([_VALUES[dtype] * 2] * 3, dt)                  # (3, 10)
    cases = {"transposed": grid.t(), "strided": grid[:, ::3], "scalar": t(_VALUES[dtype][1], dt),
             "empty": ember.zeros(0, dtype=dt), "empty-3d": ember.zeros(3, 0, 2, dtype=dt)}
    assert not cases["transposed"]._data.flags.c_contiguous and not cases["strided"]._data.flags.c_contiguous
    save(cases, tmp_path / "layouts.safetensors")
    back = load(tmp_path / "layouts.safetensors")
    for name, value in cases.items():
        _same(back[name], value)
    assert back["scalar"].shape == ()


def _torch_bytes(x):
    return x.contiguous().view(-1).view(torch.uint8).numpy().tobytes()


def test_our_files_read_in_safetensors_numpy_and_torch(tmp_path):
    state = {name: t(values, getattr(ember, name)) for name, values in _VALUES.items()}
    state["scalar"], state["empty"] = t(2.5, ember.float32), ember.zeros(0, 4, dtype=ember.int32)
    state["transposed"] = t([[1, 2, 3], [4, 5, 6]], ember.int16).t()
    path = str(tmp_path / "ours.safetensors")
    save(state, path)
    by_torch = torch_load_file(path)
    assert set(by_torch) == set(state)
    for name, value in state.items():
        got = by_torch[name]
        assert got.dtype == getattr(torch, value.dtype.name) and tuple(got.shape) == value.shape, name
        assert _torch_bytes(got) == value.numpy().tobytes(), name
    del state["bfloat16"]  # safetensors.numpy has no bfloat16; it reads everything else
    path = str(tmp_path / "ours-numpy.safetensors")
    save(state, path)
    by_numpy = safetensors.numpy.load_file(path)
    assert set(by_numpy) == set(state)
    for name, value in state.items():
        assert by_numpy[name].dtype == value.numpy().dtype and by_numpy[name].shape == value.shape, name
        assert by_numpy[name].tobytes() == value.numpy().tobytes(), name


def test_files_written_by_torch_in_every_dtype_load(tmp_path):
    tensors = {name: torch.tensor(values, dtype=_TORCH_DTYPES[name]) for name, values in _VALUES.items()}
    tensors["scalar"], tensors["empty"] = torch.tensor(-7, dtype=torch.int8), torch.zeros(2, 0, dtype=torch.int32)
    path = str(tmp_path / "torch.safetensors")
    torch_save_file(tensors, path)
    loaded = load(path)
    assert set(loaded) == set(tensors)
    for name, value in tensors.items():
        assert loaded[name].dtype == getattr(ember, str(value.dtype).split(".")[-1]), name
        assert loaded[name].shape == tuple(value.shape)
        assert loaded[name].numpy().tobytes() == _torch_bytes(value), name


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
    with pytest.raises(CheckpointError, match=r"cut\.safetensors.*(truncated|corrupt|not a safetensors)"):
        load(path)


# -- a corpus of malformed files: each is refused with one CheckpointError naming the file and the fault --

def _file(header, data=b"", length=None):
    """8-byte length, header (JSON of a dict, or raw bytes), data section."""
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    return (len(raw) if length is None else length).to_bytes(8, "little") + raw + data


_W = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}  # a valid entry for 8 bytes of data


def _entry(**fields):
    return _file({"w": {**_W, **fields}}, b"\0" * 8)


def _ember_meta(text):
    return _file({"__metadata__": {"format": "pt", "ember": text}, "w": _W}, b"\0" * 8)


_DEEP = 100_000
CORPUS = {  # name: (file bytes, what the message must say)
    "empty-file": (b"", "0 bytes, fewer than the 8"),
    "length-cut-short": (b"\x10\x00\x00", "3 bytes, fewer than the 8"),
    "length-past-end": (_file(b"{}", length=1000), "header is 1000 bytes long, but only 2 bytes follow"),
    "length-2**63": (_file(b"{}", length=2**63), "header is 9223372036854775808 bytes long"),
    "length-zero": (_file(b"", length=0) + b"{}", "its JSON header is empty"),
    "header-not-utf8": (_file(b'{"\xff\xfe": 1}'), "not UTF-8"),
    "header-not-json": (_file(b"{not json at all}"), "not valid JSON"),
    "header-list": (_file(b"[1, 2]"), "does not start with"),
    "header-int": (_file(b"12345"), "does not start with"),
    "header-string": (_file(b'"abc"'), "does not start with"),
    "header-deeply-nested": (_file(b'{"w": ' + b"[" * _DEEP + b"]" * _DEEP + b"}"), "nested too deeply"),
    "header-duplicate-key": (_file(b'{"w": %s, "w": %s}' % (json.dumps(_W).encode(), json.dumps(_W).encode()),
                                   b"\0" * 8), "'w' appears twice"),
    "entry-int": (_file({"w": 5}), "'w' is described by a JSON number"),
    "entry-list": (_file({"w": [1, 2]}), "'w' is described by a JSON array"),
    "entry-null": (_file({"w": None}), "'w' is described by a JSON null"),
    "no-dtype": (_file({"w": {"shape": [2], "data_offsets": [0, 8]}}, b"\0" * 8), "'w' has no dtype"),
    "dtype-unknown": (_entry(dtype="XYZ"), "dtype XYZ, which Ember does not support"),
    "dtype-float8": (_file({"w": {"dtype": "F8_E4M3", "shape": [8], "data_offsets": [0, 8]}}, b"\0" * 8),
                     "dtype F8_E4M3, which Ember does not support"),
    "dtype-int": (_entry(dtype=4), "dtype 4, which is not a dtype name"),
    "shape-missing": (_file({"w": {"dtype": "F32", "data_offsets": [0, 8]}}, b"\0" * 8), "has no shape"),
    "shape-string": (_entry(shape="2"), 'shape "2"; a shape is a list of non-negative integers'),
    "shape-int": (_entry(shape=2), "shape 2; a shape is a list"),
    "shape-negative": (_entry(shape=[-2]), r"shape \[-2\]; a shape is"),
    "shape-float": (_entry(shape=[2.0]), r"shape \[2.0\]; a shape is"),
    "shape-bool": (_entry(shape=[True, True]), r"shape \[true, true\]; a shape is"),
    "shape-nested": (_entry(shape=[[2]]), r"shape \[\[2\]\]; a shape is"),
    "shape-huge": (_entry(shape=[2**40, 2**40]), "needs more than 2\\*\\*64 bytes"),
    "shape-enormous": (_entry(shape=[10**4000] * 100), "needs more than 2\\*\\*64 bytes"),
    "shape-too-many-dims": (_file({"w": {"dtype": "F32", "shape": [1] * 100, "data_offsets": [0, 4]}},
                                  b"\0" * 4), "NumPy cannot represent"),
    "offsets-missing": (_file({"w": {"dtype": "F32", "shape": [2]}}, b"\0" * 8), "has no data_offsets"),
    "offsets-one": (_entry(data_offsets=[8]), r"data_offsets \[8\]; they must be two"),
    "offsets-three": (_entry(data_offsets=[0, 4, 8]), "they must be two"),
    "offsets-string": (_entry(data_offsets=[0, "8"]), "they must be two non-negative integers"),
    "offsets-negative": (_entry(data_offsets=[-8, 0]), "they must be two non-negative integers"),
    "offsets-dict": (_entry(data_offsets={"begin": 0}), "they must be two"),
    "offsets-reversed": (_entry(data_offsets=[8, 0]), r"\[8, 0\], which end before they begin"),
    "offsets-past-end": (_entry(shape=[4], data_offsets=[0, 16]), "beyond the end of the file's data section"),
    "offsets-past-end-huge": (_entry(shape=[2**61], data_offsets=[0, 2**63]), "beyond the end"),
    "offsets-not-shape": (_entry(shape=[3]), r"\(8 bytes\), but shape \[3\] of F32 needs 12 bytes"),
    "offsets-overlap": (_file({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                               "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}, b"\0" * 12),
                        "'b' .*overlaps tensor 'a'"),
    "offsets-same-bytes": (_file({"a": _W, "b": _W}, b"\0" * 8), "overlaps tensor"),
    "offsets-gap": (_file({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
                           "b": {"dtype": "F32", "shape": [1], "data_offsets": [8, 12]}}, b"\0" * 12),
                    "'b' .*leaves a gap of 4 bytes"),
    "trailing-bytes": (_file({"w": _W}, b"\0" * 8 + b"junk"), "4 bytes follow the last tensor's data"),
    "data-cut-short": (_file({"w": _W}, b"\0" * 5), "beyond the end of the file's data section \\(5 bytes\\)"),
    "metadata-string": (_file({"__metadata__": "hi", "w": _W}, b"\0" * 8), "__metadata__ must be an object"),
    "metadata-list": (_file({"__metadata__": ["a"], "w": _W}, b"\0" * 8), "__metadata__ must be an object"),
    "metadata-int-value": (_file({"__metadata__": {"a": 1}}), "__metadata__ must be an object of strings"),
    "zip-archive": (b"PK\x03\x04" + b"\0" * 40, "is a zip archive, which Ember reads only as torch.save writes"),
    "pickle": (pickle.dumps({"w": [1.0, 2.0]}, protocol=4), "is a pickle"),
    "text": (b"hello world, this is text", "not a safetensors file or is truncated"),
    # the "ember" metadata entry: the saved object's structure
    "ember-not-json": (_ember_meta("{"), "corrupt 'ember' metadata entry: Expecting"),
    "ember-deeply-nested": (_ember_meta('{"l":[' * _DEEP + "]}" * _DEEP), "nested too deeply"),
    "ember-dict-of-int": (_ember_meta('{"d":5}'), "corrupt 'ember' metadata entry: unexpected"),
    "ember-dict-item-short": (_ember_meta('{"d":[[1]]}'), r"must be a \[key, value\] pair, got \[1\]"),
    "ember-dict-item-int": (_ember_meta('{"d":[7]}'), r"must be a \[key, value\] pair, got 7"),
    "ember-unhashable-key": (_ember_meta('{"d":[[{"l":[]},1]]}'), "a dict key must be"),
    "ember-list-of-int": (_ember_meta('{"l":3}'), "unexpected"),
    "ember-tuple-of-str": (_ember_meta('{"u":"ab"}'), "unexpected"),
    "ember-bad-float": (_ember_meta('{"f":"pi"}'), "unexpected"),
    "ember-unknown-node": (_ember_meta('{"x":1}'), "unexpected"),
    "ember-empty-node": (_ember_meta("{}"), "unexpected"),
    "ember-tensor-name-int": (_ember_meta('{"t":5}'), "unexpected"),
    "ember-tensor-name-list": (_ember_meta('{"t":["w"]}'), "unexpected"),
    "ember-tensor-missing": (_ember_meta('{"t":"nope"}'), "refers to a tensor 'nope' that it does not contain"),
    "ember-tensor-extra-key": (_ember_meta('{"t":"w","x":1}'), "unexpected"),
    "ember-device-int": (_ember_meta('{"t":"w","dev":5}'), "tensor 'w' has an invalid device 5"),
    "ember-device-unknown": (_ember_meta('{"t":"w","dev":"tpu"}'), "tensor 'w' has an invalid device \"tpu\""),
    "ember-requires-grad-str": (_ember_meta('{"t":"w","rg":"yes"}'), "unexpected"),
    "ember-duplicate-key": (_ember_meta('{"l":[],"l":[]}'), "'l' appears twice"),
}


@pytest.mark.parametrize("case", list(CORPUS))
def test_malformed_file_is_one_clear_error_naming_the_file(tmp_path, case):
    data, what = CORPUS[case]
    path = tmp_path / f"{case}.safetensors"
    path.write_bytes(data)
    with pytest.raises(CheckpointError) as info:
        load(path)
    message = str(info.value)
    assert message.startswith(f"ember.load: {path} "), message
    assert len(message) < 600, message  # says what is wrong, does not dump the header
    import re
    assert re.search(what, message), message
    assert info.value.__context__ is None or info.value.__suppress_context__  # no raw error chained on
    assert isinstance(info.value, ValueError)


def test_a_lying_header_allocates_nothing_before_it_is_checked(tmp_path):
    # headers claiming 4 GiB of tensors in a 100-byte file are refused without allocating their sizes
    lies = [_entry(shape=[2**30], data_offsets=[0, 2**32]), _entry(shape=[2**30]), _file(b"{}", length=2**32)]
    for i, data in enumerate(lies):
        path = tmp_path / f"lie{i}.safetensors"
        path.write_bytes(data)
        tracemalloc.start()
        try:
            with pytest.raises(CheckpointError):
                load(path)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 1 << 20, (i, peak)


def test_malformed_file_objects_name_themselves():
    import io
    buf = io.BytesIO(CORPUS["offsets-not-shape"][0])
    with pytest.raises(CheckpointError, match=r"^ember.load: <file object> is corrupt: tensor 'w' has data_offsets"):
        load(buf)


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
    with pytest.raises(CheckpointError, match=r"evil.pt is a (pickle|zip archive), which Ember reads only as "
                                              r"torch.save writes it.*running no code"):
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
    """A _write_all that writes the header whole, then half of the first tensor's bytes, then fails."""
    calls = []

    def writer(fd, data):
        calls.append(len(data))
        if len(calls) == 1:
            os.write(fd, bytes(data))
            return
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
        calls = []
        def write_header_then_half_then_die(fd, data):
            calls.append(1)
            if len(calls) == 1:  # the header
                os.write(fd, bytes(data))
                return
            os.write(fd, bytes(data[: len(data) // 2]))
            os.kill(os.getpid(), signal.SIGKILL)
        s._write_all = write_header_then_half_then_die
        s.save({{"w": ember.zeros(2_000_000)}}, {str(path)!r})
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=60)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()
    assert path.read_bytes() == old
    assert os.listdir(tmp_path) == ["model.safetensors"]
    assert load(path)["w"].tolist() == [1.0] * 10


def test_save_falls_back_to_a_named_temp_file_after_the_anonymous_one_fails(tmp_path, monkeypatch):
    # the tensors are written again from the start into the named file (the first pass was consumed)
    def no_link(*args, **kwargs):
        raise OSError("link not permitted")

    monkeypatch.setattr(os, "link", no_link)
    path = tmp_path / "m.safetensors"
    save({"w": t([1.0, 2.0], ember.float32), "i": t([3, 4], ember.int16)}, path)
    monkeypatch.undo()
    back = load(path)
    assert back["w"].tolist() == [1.0, 2.0] and back["i"].tolist() == [3, 4]
    assert os.listdir(tmp_path) == ["m.safetensors"]


def _traced_peak(fn):
    """Peak bytes allocated (NumPy reports its arrays to tracemalloc) while fn runs."""
    tracemalloc.start()
    try:
        result = fn()
        return tracemalloc.get_traced_memory()[1], result
    finally:
        tracemalloc.stop()


def test_save_and_load_stream_without_a_second_copy_of_the_checkpoint(tmp_path):
    # 64 MiB in 8 tensors; one is a transposed view, which costs one copy of that tensor alone
    size = 64 << 20
    state = {f"layer{i}.weight": ember.full((1024, 2048), float(i)) for i in range(7)}
    state["layer7.weight"] = ember.full((2048, 1024), 7.0).t()
    path = tmp_path / "big.safetensors"
    save_peak, _ = _traced_peak(lambda: save(state, path))
    assert save_peak < 0.2 * size, save_peak / size    # before streaming: > 1x (a joint buffer, then bytes)
    load_peak, back = _traced_peak(lambda: load(path))
    assert load_peak < 1.3 * size, load_peak / size    # before: > 2x (the file's bytes, then each tensor)
    assert back["layer7.weight"].shape == (1024, 2048) and back["layer3.weight"].numpy()[-1, -1] == 3.0
    assert np.array_equal(back["layer7.weight"].numpy(), state["layer7.weight"].numpy())


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

    class Pipe(io.RawIOBase):  # a stream that cannot seek: read whole, then checked like a file
        def __init__(self, data):
            self.inner = io.BytesIO(data)

        def readable(self):
            return True

        def readinto(self, b):
            return self.inner.readinto(b)

    assert load(Pipe(buf.getvalue()))["w"].tolist() == [1.0, 1.0]
    with pytest.raises(CheckpointError, match="<file object> is corrupt: 4 bytes follow the last tensor"):
        load(Pipe(buf.getvalue() + b"junk"))
    buf = io.BytesIO(b"prefix")  # a checkpoint that starts in the middle of a file object
    buf.seek(0, io.SEEK_END)
    save({"w": ember.ones(2)}, buf)
    buf.seek(6)
    assert load(buf)["w"].tolist() == [1.0, 1.0]


def test_a_tensor_named_like_the_metadata_entry(tmp_path):
    save({"__metadata__": ember.ones(2), "b": ember.zeros(1)}, tmp_path / "m.safetensors")
    back = load(tmp_path / "m.safetensors")
    assert back["__metadata__"].tolist() == [1.0, 1.0] and back["b"].tolist() == [0.0]


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
    # a file torch.save wrote loads (see test_torch_save_files_load_as_torch_load_weights_only); a pickle
    # that is not one is refused, naming the kind of file and why
    for protocol in (2, 3, 4, 5):  # every protocol that starts with the PROTO opcode \x80
        (tmp_path / "p.pt").write_bytes(pickle.dumps({"w": 1}, protocol=protocol))
        assert _load_error(tmp_path / "p.pt") == (
            f"ember.load: {tmp_path / 'p.pt'} is a pickle, which Ember reads only as torch.save writes it, "
            f"rebuilding containers, numbers, strings and tensors and running no code from the file: "
            f"{tmp_path / 'p.pt'} is not a torch file (bad magic number)"), protocol
    junk = tmp_path / "j.bin"
    not_st = f"ember.load: {junk} is not a safetensors file"
    for data, length in ((b"\x80\x09" + b"\0" * 20, 0x0980), (b"x\x03" + b"\0" * 20, 0x0378),
                         (b"PK\x03\x05" + b"\0" * 18, 0x05034B50)):  # not a pickle, not a zip
        junk.write_bytes(data)
        assert _load_error(junk) == (f"{not_st} or is truncated: its first 8 bytes say the JSON header is "
                                     f"{length} bytes long, but only 14 bytes follow")
    junk.write_bytes(b"\x01" + b"\0" * 7 + b"x")
    assert _load_error(junk) == (f"{not_st}: its header does not start with '{{' (Ember loads only safetensors "
                                 "files, and never pickle)")
    junk.write_bytes(b"\0" * 8)
    assert _load_error(junk) == f"{not_st}: its JSON header is empty"
    for data in (b"\x80", b"PK\x03"):  # too short to be a pickle or zip
        junk.write_bytes(data)
        assert _load_error(junk) == (f"{not_st} or is truncated: it has {len(data)} bytes, fewer than the 8 that "
                                     "give the header's length")


def test_header_length_boundaries_and_truncation_messages(tmp_path):
    # the header may end exactly at the end of the file; one byte more is refused, and so is any length the
    # file cannot hold (2**64 - 1), without allocating it
    assert load(_raw_file(tmp_path / "d", b"{}")) == {}
    assert load(_raw_file(tmp_path / "s", b"{}      ")) == {}  # space padding, as safetensors writes
    for n in (3, 2**64 - 1):
        assert _load_error(_raw_file(tmp_path / "a", b"{}", n=n)) == (
            f"ember.load: {tmp_path / 'a'} is not a safetensors file or is truncated: its first 8 bytes say the "
            f"JSON header is {n} bytes long, but only 2 bytes follow")
    assert _load_error(_raw_file(tmp_path / "c", b"{", n=1)) == (
        f"ember.load: {tmp_path / 'c'} is corrupt: its header is not valid JSON: Expecting property name enclosed "
        "in double quotes: line 1 column 2 (char 1)")
    path = tmp_path / "cut.safetensors"
    save({"w": ember.zeros(100)}, path)
    data = path.read_bytes()
    path.write_bytes(data[:20])
    n = int.from_bytes(data[:8], "little")
    assert _load_error(path) == (f"ember.load: {path} is not a safetensors file or is truncated: its first 8 bytes "
                                 f"say the JSON header is {n} bytes long, but only 12 bytes follow")
    path.write_bytes(data[:-1])  # cut inside the last tensor's data
    assert _load_error(path) == (f"ember.load: {path} is corrupt: tensor 'w' has data_offsets [0, 400] beyond the "
                                 f"end of the file's data section (399 bytes)")


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
    assert _load_error(tmp_path / "u.safetensors") == (
        f"ember.load: {tmp_path / 'u.safetensors'} holds tensor 'u' of dtype U16, which Ember does not support "
        "(supported: F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL)")  # a valid file, not a corrupt one


def _ember_file(path, structure, tensors=None):
    """A safetensors file whose 'ember' metadata entry is `structure` (a JSON string)."""
    from safetensors.numpy import save_file
    save_file(tensors or {"w": np.ones(2, np.float32)}, str(path), metadata={"format": "pt", "ember": structure})
    return path


def test_corrupt_ember_metadata_is_named(tmp_path):
    def corrupt(name, what):
        return f"ember.load: {tmp_path / name} has a corrupt 'ember' metadata entry: {what}"

    assert _load_error(_ember_file(tmp_path / "a", "{not json")) == corrupt(
        "a", "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)")
    assert _load_error(_ember_file(tmp_path / "b", '{"t": "nope"}')) == (
        f"ember.load: {tmp_path / 'b'} refers to a tensor 'nope' that it does not contain")
    long_node = {"zz": "x" * 100}  # shown as JSON, cut to 80 characters
    assert _load_error(_ember_file(tmp_path / "c", json.dumps(long_node))) == corrupt(
        "c", "unexpected " + json.dumps(long_node)[:77] + "...")
    exactly_80 = {"zz": "x" * 70}
    assert len(json.dumps(exactly_80)) == 80
    assert _load_error(_ember_file(tmp_path / "c", json.dumps(exactly_80))) == corrupt(
        "c", "unexpected " + json.dumps(exactly_80))
    assert _load_error(_ember_file(tmp_path / "d", '["t"]')) == corrupt("d", 'unexpected ["t"]')
    assert _load_error(_ember_file(tmp_path / "e", '{"f": "one"}')) == corrupt("e", 'unexpected {"f": "one"}')
    assert _load_error(_ember_file(tmp_path / "f", '{"d": [[1]]}')) == corrupt(
        "f", "a dict item must be a [key, value] pair, got [1]")
    assert _load_error(_ember_file(tmp_path / "g", '{"d": [[[1], 2]]}')) == corrupt(
        "g", "a dict key must be a str, number, bool or null, got [1]")
    assert _load_error(_ember_file(tmp_path / "h", '{"t": "w", "dev": "tpu:0"}')) == corrupt(
        "h", "tensor 'w' has an invalid device \"tpu:0\"")
    assert _load_error(_ember_file(tmp_path / "i", '{"l": ' * 100_000 + "1" + "}" * 100_000)) == corrupt(
        "i", "it is nested too deeply")
    assert _load_error(_ember_file(tmp_path / "j", '{"f": "inf", "f": "nan"}')) == corrupt(
        "j", "the key 'f' appears twice in one object")


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
    if not ember.cuda.is_available():  # the checkpoint from the CUDA process, in this one: map_location needed
        with pytest.raises(RuntimeError, match="saved on cuda:0, but no cuda device is available"):
            load(tmp_path / "g.safetensors")
        back = load(tmp_path / "g.safetensors", map_location="cpu")
        assert back["g"].device.type == "cpu" and back["g"].tolist() == [[1.0, 3.0], [2.0, 4.0]]
        assert back["c"].requires_grad
        save(back, tmp_path / "moved.safetensors")  # saved again from the CPU: no device entry any more
        assert load(tmp_path / "moved.safetensors")["g"].device.type == "cpu"


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


def test_numpy_arrays_round_trip_as_numpy_arrays(tmp_path):
    # torch.save pickles an ndarray and torch.load(weights_only=False) gives it back (time_sequence_prediction
    # saves its sine waves so); Ember stores it as a tensor entry and loads a writable ndarray
    waves = np.sin(np.arange(12.0).reshape(3, 4))
    obj = {"data": waves, "t": waves[:, ::2], "ids": np.arange(3, dtype=np.int32), "mask": np.array([True, False]),
           "x": ember.ones(2), "zero_d": np.array(7.5)}
    save(obj, tmp_path / "a.pt")
    back = load(tmp_path / "a.pt", map_location="meta")   # map_location moves tensors, never the arrays
    for key in ("data", "t", "ids", "mask", "zero_d"):
        assert type(back[key]) is np.ndarray and back[key].dtype == obj[key].dtype
        np.testing.assert_array_equal(back[key], obj[key])
    assert back["data"].flags.writeable and back["x"].device.type == "meta"
    save(waves, tmp_path / "b.pt")                       # an array alone, as the example does
    np.testing.assert_array_equal(load(tmp_path / "b.pt"), waves)
    for bad in (np.array(["a"]), np.zeros(2, dtype=">f8"), np.zeros(2, dtype=np.complex64)):
        with pytest.raises(TypeError, match=r"^ember.save: cannot save a ndarray \(at a\)"):
            save({"a": bad}, tmp_path / "c.pt")


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
    assert str(info.value) == ("ember.save: cannot save a object (at the top); checkpoints hold tensors, NumPy "
                               "arrays of tensor dtypes, dicts, lists, tuples, numbers, strings, bools and None "
                               "(no pickle)")
    shared = [1, 2]  # one container reached twice is not a cycle
    save({"x": shared, "y": shared}, tmp_path / "x.safetensors")
    assert load(tmp_path / "x.safetensors") == {"x": [1, 2], "y": [1, 2]}


def _has_o_tmpfile(directory) -> bool:
    """Whether this OS and filesystem give anonymous O_TMPFILE files that /proc can name: probed directly,
    not through serialization._write_anonymous, so a broken _write_anonymous fails the tests below instead
    of skipping them."""
    if not hasattr(os, "O_TMPFILE") or not os.path.isdir("/proc/self/fd"):
        return False
    try:
        fd = os.open(directory, os.O_TMPFILE | os.O_WRONLY, 0o600)
    except OSError:
        return False
    os.close(fd)
    return True


def _chunks(*parts):
    return lambda: iter(parts)


@pytest.mark.parametrize("anonymous", [True, False], ids=["O_TMPFILE", "named-temp"])
def test_temporary_file_is_hidden_next_to_the_target(tmp_path, monkeypatch, anonymous):
    renames = []
    real_replace = os.replace
    monkeypatch.setattr(os, "replace", lambda src, dst: (renames.append(src), real_replace(src, dst)))
    if anonymous:
        if not _has_o_tmpfile(tmp_path):
            pytest.skip("no O_TMPFILE here")

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


def test_anonymous_temp_file_is_written_whole_and_a_name_collision_tries_another_name(tmp_path, monkeypatch):
    if not _has_o_tmpfile(tmp_path):
        pytest.skip("no O_TMPFILE here")
    (tmp_path / f".m.{'00' * 6}.tmp").write_bytes(b"someone else's")
    draws = iter([b"\0" * 6, b"\1" * 6])
    monkeypatch.setattr(os, "urandom", lambda n: next(draws))
    name = serialization._write_anonymous(str(tmp_path), "m", _chunks(b"da", b"", memoryview(b"ta")))
    assert name == str(tmp_path / f".m.{'01' * 6}.tmp")
    assert (tmp_path / f".m.{'01' * 6}.tmp").read_bytes() == b"data"
    assert (tmp_path / f".m.{'00' * 6}.tmp").read_bytes() == b"someone else's"
    assert sorted(os.listdir(tmp_path)) == [f".m.{'00' * 6}.tmp", f".m.{'01' * 6}.tmp"]


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


# -- tests written for the mutants that survived the first run on the streamed save/load ----------------

def _header_of(path):
    data = path.read_bytes()
    n = int.from_bytes(data[:8], "little")
    return data[8:8 + n], n


@pytest.mark.parametrize("names", [["a"], ["ab", "c"], ["abc", "d", "efgh"]])
def test_saved_header_is_compact_padded_to_8_and_every_tensor_aligned(tmp_path, names):
    # largest item size first, so every tensor's data starts at a multiple of its item size (memory-mappable)
    dtypes = [ember.int8, ember.float64, ember.int16, ember.float32]
    state = {f"{name}{i}": ember.ones(3, dtype=dt) for name in names for i, dt in enumerate(dtypes)}
    path = tmp_path / "h.safetensors"
    save(state, path)
    text, n = _header_of(path)
    assert n % 8 == 0 and n - 8 < len(text.rstrip(b" ")) <= n  # padded with fewer than 8 spaces
    header = json.loads(text)
    assert text.rstrip(b" ") == json.dumps(header, separators=(",", ":")).encode()  # no spaces in the JSON
    for key, info in header.items():
        if key != "__metadata__":
            assert info["data_offsets"][0] % np.dtype(state[key].numpy().dtype).itemsize == 0, (key, info)
    assert [k for k in header if k != "__metadata__"] == sorted(state, key=lambda k: (-state[k].dtype.itemsize, k))


def test_size_and_field_messages_are_exact(tmp_path):
    def error(data):
        (tmp_path / "f").write_bytes(data)
        return _load_error(tmp_path / "f")

    corrupt = f"ember.load: {tmp_path / 'f'} is corrupt: tensor 'w' "
    assert error(_file({"w": {"dtype": "F32"}})) == corrupt + "has no shape or data_offsets"
    assert error(_file({"w": {}})) == corrupt + "has no dtype or shape or data_offsets"
    assert error(_entry(shape=[100])) == (corrupt + "has data_offsets [0, 8] (8 bytes), but shape [100] of F32 "
                                          "needs 400 bytes")
    assert error(_entry(shape=[2**62])) == (corrupt + "has data_offsets [0, 8] (8 bytes), but shape "
                                            f"[{2**62}] of F32 needs {2**64} bytes")  # exactly 2**64: still a number
    assert error(_entry(shape=[2**62 + 1])) == (corrupt + "has data_offsets [0, 8] (8 bytes), but shape "
                                                f"[{2**62 + 1}] of F32 needs more than 2**64 bytes")
    two = _file({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                 "w": {"dtype": "F32", "shape": [2], "data_offsets": [8, 12]}}, b"\0" * 12)
    assert error(two) == corrupt + "has data_offsets [8, 12] (4 bytes), but shape [2] of F32 needs 8 bytes"
    for value, kind in (("F32", "string"), (True, "boolean"), (1.5, "number"), (None, "null"), ([], "array")):
        assert error(_file({"w": value})) == corrupt + f"is described by a JSON {kind}, not an object"
    assert error(_entry(dtype=float("inf"))) == corrupt + "has dtype inf, which is not a dtype name"
    assert error(_entry(dtype=float("nan"))) == corrupt + "has dtype nan, which is not a dtype name"
    assert error(_entry(dtype=[1.5])) == corrupt + "has dtype [1.5], which is not a dtype name"
    assert error(_file({"__metadata__": {"a": 1}})) == (
        f"ember.load: {tmp_path / 'f'} is corrupt: its __metadata__ must be an object of strings, got {{\"a\": 1}}")


def test_snippets_are_cut_after_80_characters(tmp_path):
    for size, shown in ((80, None), (81, 77)):
        node = {"zz": "x" * (size - 10)}
        text = json.dumps(node)
        assert len(text) == size
        path = _ember_file(tmp_path / "s", text)
        assert _load_error(path) == (f"ember.load: {path} has a corrupt 'ember' metadata entry: unexpected "
                                     + (text if shown is None else text[:shown] + "..."))
    path = _ember_file(tmp_path / "t", '{"t": "w", "x": 1}')
    assert _load_error(path) == (f"ember.load: {path} has a corrupt 'ember' metadata entry: unexpected "
                                 '{"t": "w", "x": 1}')


def test_nan_dict_keys_round_trip(tmp_path):
    save({float("nan"): "nan key", "n": [float("nan")]}, tmp_path / "n.safetensors")
    back = load(tmp_path / "n.safetensors")
    (key, value), (_, values) = back.items()
    assert np.isnan(key) and value == "nan key" and np.isnan(values[0])


def test_decoder_depth_limit_is_a_checkpoint_error():
    # On Python 3.11 the JSON parser runs out of depth first (covered in the corpus); where it nests deeper
    # than Python frames (3.12+), the decoder's own check is what reports the file
    node = 1
    for _ in range(100_000):
        node = {"l": [node]}
    with pytest.raises(CheckpointError) as info:
        serialization._Decoder({}, None, "deep.safetensors").decode_all(node)
    assert str(info.value) == ("ember.load: deep.safetensors has a corrupt 'ember' metadata entry: it is nested "
                               "too deeply")


def test_map_location_applies_to_file_objects(tmp_path):
    buf = io.BytesIO()
    save({"w": ember.ones(2)}, buf)
    buf.seek(0)
    with pytest.raises(TypeError, match="map_location must be None, a device, a device string or a dict, got int"):
        load(buf, map_location=3)


class _ReadOnly:
    """A seekable file object with read() but no readinto(), that returns at most 5 bytes a call."""

    def __init__(self, data):
        self.inner = io.BytesIO(data)
        self.name = "ro.safetensors"

    def seekable(self):
        return True

    def seek(self, *args):
        return self.inner.seek(*args)

    def tell(self):
        return self.inner.tell()

    def read(self, n=-1):
        return self.inner.read(min(n, 5) if n is not None and n >= 0 else n)


class _Shrinking:
    """A seekable file object whose data ends after `keep` bytes, though seeking to its end says more: a file
    that is cut while it is being read."""

    def __init__(self, data, keep):
        self.inner, self.keep, self.name = io.BytesIO(data), keep, "shrinking.safetensors"

    def seekable(self):
        return True

    def seek(self, *args):
        return self.inner.seek(*args)

    def tell(self):
        return self.inner.tell()

    def read(self, n=-1):
        return self.inner.read(max(0, min(n, self.keep - self.inner.tell())))

    def readinto(self, buf):
        n = max(0, min(len(buf), self.keep - self.inner.tell()))
        buf[:n] = self.inner.read(n)
        return n


def test_file_objects_without_readinto_and_with_short_reads(tmp_path):
    buf = io.BytesIO()
    state = {"w": ember.tensor(np.arange(37.0)), "i": ember.tensor(np.arange(-5, 6), dtype=ember.int8)}
    save(state, buf)
    back = load(_ReadOnly(buf.getvalue()))
    assert back["w"].tolist() == state["w"].tolist() and back["i"].tolist() == state["i"].tolist()


@pytest.mark.parametrize("where", ["length", "header", "data"])
def test_a_file_cut_while_it_is_read_is_named(tmp_path, where):
    buf = io.BytesIO()
    save({"w": ember.ones(100)}, buf)
    data = buf.getvalue()
    n = int.from_bytes(data[:8], "little")
    keep = {"length": 4, "header": 12, "data": 8 + n + 10}[where]
    with pytest.raises(CheckpointError) as info:
        load(_Shrinking(data, keep))
    assert str(info.value) == ("ember.load: shrinking.safetensors is truncated: it ended while being read (was it "
                               "being written?)")


def test_tensor_bytes_are_read_straight_into_their_arrays(tmp_path):
    # the header and each tensor are read with readinto(), into their own buffers, never with read(): a
    # load holds no second copy of the data
    path = tmp_path / "r.safetensors"
    save({"w": ember.ones(1000), "b": ember.zeros(3, dtype=ember.bfloat16)}, path)
    sizes = []

    class Recording(io.FileIO):
        def read(self, n=-1):
            sizes.append(n)
            return super().read(n)

    with Recording(str(path), "rb") as fh:
        back = load(fh)
    assert sizes == [] and back["w"].tolist() == [1.0] * 1000


def test_bfloat16_loads_first_thing_in_a_fresh_process(tmp_path):
    # np.dtype("bfloat16") only works once ml_dtypes is imported: a load that is the first thing a process
    # does must not rely on it
    path = tmp_path / "bf.safetensors"
    torch_save_file({"b": torch.tensor([1.5, -2.0], dtype=torch.bfloat16)}, str(path))
    script = f"import ember; b = ember.load({str(path)!r})['b']; print(b.dtype, b.tolist())"
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=root)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["ember.bfloat16", "[1.5,", "-2.0]"]
    assert load(path)["b"].tolist() == [1.5, -2.0]  # and here (this process may already have ml_dtypes)


@pytest.mark.parametrize("length", [640, 896, 1152, 1408])
def test_a_header_whose_length_looks_like_a_pickle_signature_loads(tmp_path, length):
    # 640 = 0x280: the length's first bytes are 0x80 0x02, a pickle's signature; such files were refused
    path = tmp_path / "w.safetensors"
    for k in range(1, 1500):
        ember.save({"w" * k: ember.ones(2)}, path)
        n = int.from_bytes(path.read_bytes()[:8], "little")
        if n == length:
            break
    assert n == length
    loaded = ember.load(path)
    assert list(loaded) == ["w" * k] and loaded["w" * k].tolist() == [1.0, 1.0]


def test_torch_load_and_save_keywords_are_accepted(tmp_path):
    """torch.load(path, weights_only=True) (torch's default, often written out) and mmap=, torch.save's
    pickle_protocol=: accepted; a pickle_module is refused with the reason."""
    path = str(tmp_path / "w.pt")
    ember.save({"w": ember.ones(2)}, path, pickle_protocol=4, _use_new_zipfile_serialization=True)
    for kw in ({"weights_only": True}, {"weights_only": False}, {"mmap": True}, {"weights_only": None}):
        assert ember.load(path, map_location="cpu", **kw)["w"].tolist() == [1.0, 1.0]
    import pickle
    with pytest.raises(TypeError, match="never unpickles; pickle_module must be None"):
        ember.load(path, pickle_module=pickle)
    with pytest.raises(TypeError, match="never pickles; pickle_module must be None"):
        ember.save({}, path, pickle_module=pickle)


def test_state_dicts_come_back_as_ordered_dicts_with_their_metadata(tmp_path):
    path = str(tmp_path / "m.pt")
    model = ember.nn.Sequential(ember.nn.Linear(2, 3), ember.nn.BatchNorm1d(3))
    sd = model.state_dict()
    ember.save({"model": sd, "plain": {"a": 1}}, path)
    back = ember.load(path)
    t_back = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.BatchNorm1d(3)).state_dict()
    assert type(back["model"]) is type(t_back) is collections.OrderedDict
    assert type(back["plain"]) is dict
    assert list(back["model"]) == list(sd)
    assert back["model"]._metadata == sd._metadata == {"": {"version": 1}, "0": {"version": 1}, "1": {"version": 2}}
    model.load_state_dict(back["model"])


@pytest.mark.parametrize("legacy", [False, True])
def test_torch_save_files_load_as_torch_load_weights_only(tmp_path, legacy):
    # porting `model.load_state_dict(torch.load(path))`: a state dict, an optimizer's state dict and a
    # checkpoint dict of them with numbers, strings, tuples and a bfloat16 tensor, equal to torch.load's
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))
    opt = torch.optim.Adam(m.parameters())
    m(torch.randn(5, 3)).sum().backward()
    opt.step()
    ck = {"model": m.state_dict(), "opt": opt.state_dict(), "epoch": 3, "name": "run1", "shape": (2, 3),
          "bf": torch.arange(4, dtype=torch.bfloat16), "view": torch.arange(12.0).reshape(3, 4).t()}
    path = tmp_path / "ck.pt"
    torch.save(ck, path, _use_new_zipfile_serialization=not legacy)
    ref = torch.load(path, weights_only=True)
    got = load(path, weights_only=True)
    assert got["epoch"] == 3 and got["name"] == "run1" and got["shape"] == (2, 3)
    assert type(got["model"]) is collections.OrderedDict and list(got["model"]) == list(ref["model"])
    for k, v in ref["model"].items():
        assert got["model"][k].dtype.name == str(v.dtype).removeprefix("torch.")
        np.testing.assert_array_equal(got["model"][k].numpy(), v.numpy(), err_msg=k)
    assert got["bf"].dtype == ember.bfloat16
    np.testing.assert_array_equal(got["bf"].float().numpy(), ref["bf"].float().numpy())
    np.testing.assert_array_equal(got["view"].numpy(), ref["view"].numpy())
    assert got["opt"]["param_groups"] == ref["opt"]["param_groups"]
    for i, st in ref["opt"]["state"].items():
        for k, v in st.items():
            np.testing.assert_array_equal(got["opt"]["state"][i][k].numpy(), v.numpy(), err_msg=f"{i}.{k}")
    em = ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.BatchNorm1d(4))
    em.load_state_dict(got["model"])
    ember.optim.Adam(em.parameters()).load_state_dict(got["opt"])
    if not legacy:   # a state_dict keeps its module versions (torch's _metadata)
        assert got["model"]._metadata == ref["model"]._metadata


def test_torch_save_files_from_a_file_object_and_to_a_device(tmp_path):
    buf = io.BytesIO()
    torch.save({"w": torch.ones(2, 3)}, buf)
    buf.seek(0)
    got = load(buf, map_location="meta")
    assert got["w"].device.type == "meta" and got["w"].shape == (2, 3)


def test_torch_files_with_other_globals_are_refused_naming_the_global(tmp_path):
    torch.save({"w": torch.ones(2), "lin": torch.nn.Linear(2, 2)}, tmp_path / "m.pt")
    with pytest.raises(CheckpointError, match=r"m.pt is a zip archive.*refusing to load global "
                                              r"torch.nn.modules.linear.Linear"):
        load(tmp_path / "m.pt")
    (tmp_path / "cut.pt").write_bytes((tmp_path / "m.pt").read_bytes()[:200])
    with pytest.raises(CheckpointError, match=r"cut.pt is a zip archive"):
        load(tmp_path / "cut.pt")
