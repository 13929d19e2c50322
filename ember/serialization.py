"""ember.save / ember.load: checkpoints as safetensors files, never pickle.

A checkpoint is one safetensors file. The tensors are its tensors; the shape of the saved object
(nested dicts, lists and tuples of tensors, numbers, strings, bools and None) is JSON in the file's
metadata header under the key "ember". Loading parses JSON and copies bytes, so a file from anywhere
can be loaded without running any of its content. Files written by other tools (e.g.
`safetensors.torch.save_file`) have no "ember" entry and load as a flat {name: Tensor} dict; a flat
dict of tensors saved by Ember loads in torch with `safetensors.torch.load_file`.

Saves are atomic: the bytes go to an anonymous temporary file in the target's directory (a named one
where the OS has no O_TMPFILE), are fsync'ed, and the file is then renamed over the target, so a crash
mid-save leaves the previous file whole.
"""
from __future__ import annotations

import json
import math
import os
import tempfile
from typing import Any, BinaryIO, Union

import numpy as np

from ._device import CPU, device as _device_cls
from ._tensor import Tensor

__all__ = ["save", "load"]

PathLike = Union[str, "os.PathLike[str]"]
_META_KEY = "ember"
_DTYPES = {  # safetensors dtype names -> NumPy dtypes (BF16 resolved on first use)
    "F64": np.float64, "F32": np.float32, "F16": np.float16, "BF16": None,
    "I64": np.int64, "I32": np.int32, "I16": np.int16, "I8": np.int8, "U8": np.uint8, "BOOL": np.bool_,
}


def save(obj: Any, f: PathLike | BinaryIO) -> None:
    """Save tensors and plain values (nested dicts, lists, tuples, numbers, str, bool, None) to `f`.

    The file is a safetensors file; nothing is pickled.

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "ckpt.safetensors")
    >>> w = ember.ones(2, requires_grad=True); opt = ember.optim.SGD([w], lr=0.25, momentum=0.9)
    >>> (w * w).sum().backward(); opt.step()
    >>> ember.save({"w": w, "optim": opt.state_dict(), "epoch": 3}, path)
    >>> ckpt = ember.load(path)
    >>> ckpt["epoch"], ckpt["w"].tolist(), ckpt["optim"]["state"][0]["momentum_buffer"].tolist()
    (3, [0.5, 0.5], [2.0, 2.0])
    """
    arrays: dict[str, np.ndarray] = {}
    structure = _Encoder(arrays).encode(obj)
    metadata = {"format": "pt", _META_KEY: json.dumps(structure, separators=(",", ":"), allow_nan=False)}
    from safetensors.numpy import save as _serialize
    data = _serialize(arrays, metadata=metadata)
    if hasattr(f, "write"):
        f.write(data)
        return
    _atomic_write(os.fspath(f), data)


def load(f: PathLike | BinaryIO, map_location=None) -> Any:
    """Load what `save` wrote, or any safetensors file (as a flat {name: Tensor} dict).

    `map_location` puts the tensors on a device ("cpu", "cuda:0", an ember.device, or a dict
    {saved device: new device}); by default each goes back to the device it was saved from.
    Pickle files (such as those of torch.save) are refused, never unpickled.

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "weights.safetensors")
    >>> ember.save({"fc.weight": ember.ones(2, 3), "fc.bias": ember.zeros(2)}, path)
    >>> state = ember.load(path, map_location="cpu")
    >>> sorted(state), state["fc.weight"].shape
    (['fc.bias', 'fc.weight'], (2, 3))
    """
    if hasattr(f, "read"):
        name, data = getattr(f, "name", "<file object>"), f.read()
    else:
        name = os.fspath(f)
        with open(name, "rb") as fh:
            data = fh.read()
    header = _read_header(name, data)
    from safetensors import SafetensorError, deserialize
    try:
        entries = deserialize(data)
    except SafetensorError as e:
        raise ValueError(f"ember.load: {name} is truncated or corrupt ({e})") from None
    arrays = {}
    for key, info in entries:
        arrays[key] = np.frombuffer(info["data"], dtype=_np_dtype(info["dtype"], name)).reshape(info["shape"])
    metadata = header.get("__metadata__") or {}
    if _META_KEY not in metadata:  # a plain safetensors file: its tensors, in header order
        names = [k for k in header if k != "__metadata__"]
        return {k: _to_tensor(arrays[k], "cpu", False, map_location) for k in names}
    try:
        structure = json.loads(metadata[_META_KEY])
    except json.JSONDecodeError as e:
        raise ValueError(f"ember.load: {name} has a corrupt '{_META_KEY}' metadata entry ({e})") from None
    return _Decoder(arrays, map_location, name).decode(structure)


# -- encoding: Python object <-> JSON structure + named arrays -------------------------------------
# A tensor becomes {"t": name} (plus "dev" and "rg" when not on the CPU / when requiring grad), a dict
# {"d": [[key, value], ...]} (keys keep their type: optimizer state is keyed by int), a list {"l": [...]},
# a tuple {"u": [...]}, a non-finite float {"f": "inf"}; str, int, finite float, bool and None are
# themselves.

class _Encoder:
    def __init__(self, arrays: dict):
        self.arrays = arrays
        self.names: dict[int, str] = {}  # id(tensor) -> name, so a tensor saved twice is stored once
        self.active: set[int] = set()    # containers being encoded, to catch cycles

    def encode(self, obj, path: str = ""):
        if isinstance(obj, Tensor):
            return self._tensor(obj, path)
        if obj is None or isinstance(obj, (bool, int, str)):
            return obj
        if isinstance(obj, float):
            return obj if math.isfinite(obj) else {"f": repr(obj)}
        if isinstance(obj, np.generic) and obj.dtype.kind in "biuf":  # a NumPy scalar: its Python value
            return self.encode(obj.item(), path)
        if isinstance(obj, (dict, list, tuple)):
            if id(obj) in self.active:
                raise ValueError(f"ember.save: the object contains itself (at {path or 'the top'})")
            self.active.add(id(obj))
            try:
                if isinstance(obj, dict):
                    return {"d": [[self._key(k, path), self.encode(v, _join(path, k))] for k, v in obj.items()]}
                items = [self.encode(v, _join(path, i)) for i, v in enumerate(obj)]
                return {"l": items} if isinstance(obj, list) else {"u": items}
            finally:
                self.active.discard(id(obj))
        raise TypeError(f"ember.save: cannot save a {type(obj).__name__} (at {path or 'the top'}); checkpoints "
                        "hold tensors, dicts, lists, tuples, numbers, strings, bools and None (no pickle)")

    def _key(self, key, path: str):
        if key is None or isinstance(key, (bool, int, str)):
            return key
        if isinstance(key, float):
            return key if math.isfinite(key) else {"f": repr(key)}
        raise TypeError(f"ember.save: dict keys must be str, int, float, bool or None; got a "
                        f"{type(key).__name__} key in {path or 'the top-level dict'}")

    def _tensor(self, t: Tensor, path: str) -> dict:
        name = self.names.get(id(t))
        if name is None:
            name = path or "tensor"
            n = 1
            while name in self.arrays:  # "a.b" from {"a": {"b": ...}} and {"a.b": ...}
                n += 1
                name = f"{path or 'tensor'}#{n}"
            self.names[id(t)] = name
            arr = _host_array(t)
            self.arrays[name] = arr if arr.flags.c_contiguous else arr.copy(order="C")  # keeps 0-dim shapes
        node: dict[str, Any] = {"t": name}
        if t.device.type != "cpu":
            node["dev"] = str(t.device)
        if t.requires_grad:
            node["rg"] = True
        return node


class _Decoder:
    def __init__(self, arrays: dict, map_location, filename: str):
        self.arrays, self.map_location, self.filename = arrays, map_location, filename
        self.tensors: dict[str, Tensor] = {}

    def decode(self, node):
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        if isinstance(node, dict) and len(node) >= 1:
            if "t" in node:
                return self._tensor(node)
            if "d" in node:
                return {self.decode(k): self.decode(v) for k, v in node["d"]}
            if "l" in node:
                return [self.decode(v) for v in node["l"]]
            if "u" in node:
                return tuple(self.decode(v) for v in node["u"])
            if "f" in node and node["f"] in ("inf", "-inf", "nan"):
                return float(node["f"])
        raise ValueError(f"ember.load: {self.filename} has a corrupt '{_META_KEY}' metadata entry "
                         f"(unexpected {str(node)[:80]})")

    def _tensor(self, node: dict) -> Tensor:
        name = node["t"]
        t = self.tensors.get(name)
        if t is None:
            if name not in self.arrays:
                raise ValueError(f"ember.load: {self.filename} refers to a tensor {name!r} that it does not contain")
            t = self.tensors[name] = _to_tensor(self.arrays[name], node.get("dev", "cpu"), node.get("rg", False),
                                                self.map_location)
        return t


def _join(path: str, key) -> str:
    return f"{path}.{key}" if path else str(key)


def _host_array(t: Tensor) -> np.ndarray:
    data = t._data
    if isinstance(data, np.ndarray):
        return data
    from . import backends
    return backends.get(t.device.type).to_host(data)


def _np_dtype(name: str, filename: str):
    if name not in _DTYPES:
        raise ValueError(f"ember.load: {filename} holds a tensor of dtype {name}, which Ember does not support")
    if name == "BF16":
        from . import _dtype
        return _dtype.bfloat16.np
    return _DTYPES[name]


def _to_tensor(arr: np.ndarray, saved_device: str, requires_grad: bool, map_location) -> Tensor:
    dev = _device_cls(_target_device(saved_device, map_location))
    if dev.type == "cpu":
        t = Tensor._make(arr, CPU)
    else:
        from . import backends
        if not backends.is_available(dev.type):
            raise RuntimeError(f"ember.load: a tensor was saved on {saved_device}, but no {dev.type} device is "
                               "available; pass map_location='cpu'")
        from .ops.creation import tensor
        t = tensor(arr, device=dev)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _target_device(saved: str, map_location):
    if map_location is None:
        return saved
    if isinstance(map_location, dict):
        return map_location.get(saved, saved)
    if isinstance(map_location, (str, _device_cls)):
        return map_location
    raise TypeError(f"ember.load: map_location must be None, a device, a device string or a dict, got "
                    f"{type(map_location).__name__}")


# -- reading: refuse what isn't safetensors before parsing it -------------------------------------

def _read_header(name: str, data: bytes) -> dict:
    """The JSON header, after checks that give a clear error for pickle files and truncation."""
    n = int.from_bytes(data[:8], "little") if len(data) >= 8 else 0
    if len(data) < 9 or n > 100_000_000 or data[8:9] != b"{":
        if data[:4] == b"PK\x03\x04" or (data[:1] == b"\x80" and data[1:2] in b"\x02\x03\x04\x05"):
            kind = "zip archive" if data[:2] == b"PK" else "pickle"
            raise ValueError(f"ember.load: {name} is not a safetensors file: it is a {kind}, as torch.save "
                             "writes. Ember never loads pickle data, because unpickling can run arbitrary code. "
                             "Convert it once, in an environment you trust: "
                             "safetensors.torch.save_file(torch.load(path), 'model.safetensors')")
        if len(data) < 9:
            raise ValueError(f"ember.load: {name} is truncated or not a safetensors file ({len(data)} bytes)")
        raise ValueError(f"ember.load: {name} is not a safetensors file (it does not start with a safetensors "
                         "header; Ember loads only safetensors and never loads pickle)")
    if 8 + n > len(data):
        raise ValueError(f"ember.load: {name} is truncated ({len(data)} bytes, but the header alone needs "
                         f"{8 + n})")
    try:
        header = json.loads(data[8:8 + n])
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"ember.load: {name} is corrupt: its header is not valid JSON ({e})") from None
    if not isinstance(header, dict):
        raise ValueError(f"ember.load: {name} is corrupt: its header is not a JSON object")
    return header


# -- writing: temporary file, fsync, rename ----------------------------------------------------------

def _atomic_write(path: str, data: bytes) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    base = os.path.basename(path)
    tmp = _write_anonymous(directory, base, data) or _write_named(directory, base, data)
    try:
        os.replace(tmp, path)
        tmp = None
    finally:
        if tmp is not None:
            os.unlink(tmp)
    _fsync_dir(directory)


def _write_anonymous(directory: str, base: str, data: bytes) -> str | None:
    """Write to an O_TMPFILE file, which has no name until complete (so it vanishes if the process is
    killed mid-write), then link it into `directory`. None where the OS or filesystem can't."""
    if not hasattr(os, "O_TMPFILE") or not os.path.isdir("/proc/self/fd"):
        return None
    try:
        fd = os.open(directory, os.O_TMPFILE | os.O_WRONLY, 0o666)
    except OSError:
        return None
    try:
        _write_all(fd, data)
        os.fsync(fd)
        dir_fd = os.open(directory, os.O_RDONLY)
        try:
            while True:
                name = f".{base}.{os.urandom(6).hex()}.tmp"
                try:  # linkat(AT_SYMLINK_FOLLOW) through /proc names the anonymous file
                    os.link(f"/proc/self/fd/{fd}", name, dst_dir_fd=dir_fd)
                    return os.path.join(directory, name)
                except FileExistsError:
                    continue
                except OSError:
                    return None
        finally:
            os.close(dir_fd)
    finally:
        os.close(fd)


def _write_named(directory: str, base: str, data: bytes) -> str:
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{base}.", suffix=".tmp")
    try:
        _write_all(fd, data)
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        os.unlink(tmp)
        raise
    os.close(fd)
    return tmp


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view[: 1 << 30])
        view = view[written:]


def _fsync_dir(directory: str) -> None:
    # make the rename itself durable; not possible on every OS/filesystem, where it is skipped
    try:
        dfd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)
