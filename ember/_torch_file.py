"""Read a state dict from a torch `.pth` / `.pt` file without torch and without running pickled code.

torch's files are pickles whose tensors point at raw storages: the zip format (torch >= 1.6:
`<name>/data.pkl` plus one `<name>/data/<key>` entry per storage) and the legacy format (older
checkpoints such as some of torchvision's: pickled header, pickled object, pickled storage keys, then
each storage as an int64 element count and its bytes). The unpickler here resolves only the names a
state dict needs (OrderedDict, torch's tensor/parameter rebuild functions and storage types) and
refuses every other global, so a malicious file cannot run code: the policy of torch's own
`torch.load(weights_only=True)`. `ember.load` reads torch files through it, and so does
`ember.models` for pretrained weights.
"""
from __future__ import annotations

import collections
import contextlib
import io
import pickle
import struct
import zipfile
from pathlib import Path
from typing import Any, Callable, Dict

import numpy as np

__all__ = ["load_torch_file", "UnsupportedTorchFile"]

_STORAGE_DTYPES = {
    "DoubleStorage": np.float64, "FloatStorage": np.float32, "HalfStorage": np.float16,
    "LongStorage": np.int64, "IntStorage": np.int32, "ShortStorage": np.int16, "CharStorage": np.int8,
    "ByteStorage": np.uint8, "BoolStorage": np.bool_, "BFloat16Storage": "bfloat16",
}
_LEGACY_MAGIC = 0x1950a86a20f9469cfc6c


class UnsupportedTorchFile(ValueError):
    """A torch file that holds something other than tensors in (nested) dicts, or an unknown storage type."""


class _StorageType:
    def __init__(self, name: str) -> None:
        self.name = name
        dt: Any = _STORAGE_DTYPES[name]
        if dt == "bfloat16":
            from ember._dtype import bfloat16   # ml_dtypes' NumPy dtype (the bf16 extra)
            dt = bfloat16.np
        self.dtype = np.dtype(dt)


def _rebuild_tensor(storage, storage_offset, size, stride, *_ignored):
    itemsize = storage.dtype.itemsize
    if len(size) == 0:
        return storage[storage_offset:storage_offset + 1].reshape(()).copy()
    view = np.lib.stride_tricks.as_strided(storage[storage_offset:], shape=tuple(size),
                                           strides=tuple(s * itemsize for s in stride), writeable=False)
    return np.ascontiguousarray(view)


def _rebuild_parameter(data, requires_grad, backward_hooks, *_ignored):
    return data


class _SafeUnpickler(pickle.Unpickler):
    def __init__(self, fh, load_storage: Callable) -> None:
        super().__init__(fh)
        self._load_storage = load_storage

    def find_class(self, module: str, name: str):
        if module == "collections" and name == "OrderedDict":
            return collections.OrderedDict
        if module == "torch._utils" and name == "_rebuild_tensor_v2":
            return _rebuild_tensor
        if module == "torch._utils" and name == "_rebuild_parameter":
            return _rebuild_parameter
        if module == "torch" and name in _STORAGE_DTYPES:
            return _StorageType(name)
        if module == "torch" and name == "Size":
            return tuple
        raise UnsupportedTorchFile(f"load_torch_file: refusing to load global {module}.{name}: only state dicts "
                                   f"of plain tensors are read (convert the file with torch and "
                                   f"safetensors.torch.save_file)")

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and pid and pid[0] == "storage"):
            raise UnsupportedTorchFile(f"load_torch_file: unknown persistent id {pid!r}")
        storage_type, key = pid[1], str(pid[2])
        if not isinstance(storage_type, _StorageType):
            raise UnsupportedTorchFile(f"load_torch_file: unsupported storage type {storage_type!r}")
        return self._load_storage(key, storage_type.dtype)


def load_torch_file(path) -> Dict[str, object]:
    """{name: ember.Tensor} from a torch-saved state dict (zip or legacy format)."""
    import ember
    return _to_ember(read_torch_file(Path(path)), ember, str(path))


def read_torch_file(f, name=None):
    """What torch.save wrote to `f` (a path or a binary file object, zip or legacy format), its tensors as
    NumPy arrays; only containers, numbers, strings and tensors are rebuilt (UnsupportedTorchFile else).
    `name`: what messages call the file (default: the path)."""
    name = name or str(f)
    if zipfile.is_zipfile(f):
        if hasattr(f, "seek"):
            f.seek(0)
        return _load_zip(f, name)
    if hasattr(f, "seek"):
        f.seek(0)
    return _load_legacy(f, name)


def _load_zip(path, name):
    with zipfile.ZipFile(path) as zf:
        names = zf.namelist()
        pkl = next((n for n in names if n.endswith("data.pkl")), None)
        if pkl is None:
            raise UnsupportedTorchFile(f"load_torch_file: {name} is a zip file without data.pkl")
        prefix = pkl[:-len("data.pkl")]
        byteorder = "little"
        if prefix + "byteorder" in names:
            byteorder = zf.read(prefix + "byteorder").decode().strip()
        cache: Dict[str, np.ndarray] = {}

        def load_storage(key: str, dtype: np.dtype) -> np.ndarray:
            if key not in cache:
                raw = zf.read(f"{prefix}data/{key}")
                arr = np.frombuffer(raw, dtype=dtype.newbyteorder("<" if byteorder == "little" else ">"))
                cache[key] = arr.astype(dtype, copy=False)
            return cache[key]

        with zf.open(pkl) as fh:
            return _SafeUnpickler(io.BytesIO(fh.read()), load_storage).load()


def _load_legacy(path, name):
    with (open(path, "rb") if not hasattr(path, "read") else contextlib.nullcontext(path)) as fh:
        def plain():
            return _SafeUnpickler(fh, _no_storage).load()
        try:
            magic = plain()
        except Exception as e:
            raise UnsupportedTorchFile(f"load_torch_file: {name} is neither a zip nor a legacy torch file ({e})")
        if magic != _LEGACY_MAGIC:
            raise UnsupportedTorchFile(f"load_torch_file: {name} is not a torch file (bad magic number)")
        plain()  # protocol version
        plain()  # sys info
        wanted: Dict[str, np.dtype] = {}
        pending: Dict[str, np.ndarray] = {}

        def load_storage(key: str, dtype: np.dtype) -> Any:
            # the bytes come after the object: hand out a placeholder filled in below (rebuild is deferred)
            wanted[key] = dtype
            return _Deferred(key, dtype, pending)

        up = _SafeUnpickler(fh, load_storage)
        up.find_class = _deferring(up.find_class)
        obj = up.load()
        keys = plain()
        for key in keys:
            (n,) = struct.unpack("<q", fh.read(8))
            dtype = wanted.get(str(key), np.dtype(np.uint8))
            pending[str(key)] = np.frombuffer(fh.read(n * dtype.itemsize), dtype=dtype)
    return _resolve(obj)


def _no_storage(key, dtype):
    raise UnsupportedTorchFile("load_torch_file: a storage where none was expected")


class _Deferred:
    def __init__(self, key, dtype, pending):
        self.key, self.dtype, self.pending = key, dtype, pending


class _DeferredTensor:
    def __init__(self, args):
        self.args = args


def _deferring(find_class):
    def find(module, name):
        if module == "torch._utils" and name == "_rebuild_tensor_v2":
            return lambda *args: _DeferredTensor(args)
        return find_class(module, name)
    return find


def _resolve(obj):
    if isinstance(obj, _DeferredTensor):
        storage, *rest = obj.args
        return _rebuild_tensor(storage.pending[storage.key], *rest)
    if isinstance(obj, dict):
        out = type(obj)() if isinstance(obj, collections.OrderedDict) else {}
        for k, v in obj.items():
            out[k] = _resolve(v)
        return out
    if isinstance(obj, (list, tuple)):
        return type(obj)(_resolve(v) for v in obj)
    return obj


def _to_ember(obj, ember, where: str):
    if isinstance(obj, np.ndarray):
        return ember.from_numpy(obj.copy()) if not obj.flags.writeable else ember.from_numpy(obj)
    if isinstance(obj, dict):
        return {k: _to_ember(v, ember, where) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_ember(v, ember, where) for v in obj)
    return obj
