"""ember.save / ember.load: checkpoints as safetensors files; ember.load also reads torch.save's files.

A checkpoint is one safetensors file. The tensors are its tensors; the shape of the saved object
(nested dicts, lists and tuples of tensors, numbers, strings, bools and None) is JSON in the file's
metadata header under the key "ember". Loading parses JSON and copies bytes, so a file from anywhere
can be loaded without running any of its content. Files written by other tools (e.g.
`safetensors.torch.save_file`) have no "ember" entry and load as a flat {name: Tensor} dict; a flat
dict of tensors saved by Ember loads in torch with `safetensors.torch.load_file`. Files torch.save
wrote are read by ember/_torch_file.py's restricted unpickler (torch's `weights_only=True` policy:
containers, numbers, strings and tensors only; no global outside that list is ever called).

Both directions stream: `save` computes the header from shapes and dtypes, writes it, then writes each
tensor's bytes straight from its array; `load` checks the whole header against the file's size, then
reads each tensor straight into its own new array. So neither holds a second copy of the checkpoint.
A file that is not a well-formed safetensors file raises `CheckpointError` (a ValueError) naming the
file and what is wrong with it, before anything is allocated from the header's numbers.

Saves are atomic: the bytes go to an anonymous temporary file in the target's directory (a named one
where the OS has no O_TMPFILE), are fsync'ed, and the file is then renamed over the target, so a crash
mid-save leaves the previous file whole.
"""
from __future__ import annotations

import collections
import io
import json
import math
import os
import pickle
import struct
import sys
import tempfile
import zipfile
from typing import Any, BinaryIO, Callable, Iterator, Union

import numpy as np

from ._device import CPU, device as _device_cls
from ._tensor import Tensor
from .backends import host

__all__ = ["save", "load", "CheckpointError"]

PathLike = Union[str, "os.PathLike[str]"]
_META_KEY = "ember"
# safetensors dtype names <-> Ember dtype names; the item sizes let the header be checked (and written)
# without importing ml_dtypes for bfloat16
_ST_TO_EMBER = {"F64": "float64", "F32": "float32", "F16": "float16", "BF16": "bfloat16", "I64": "int64",
                "I32": "int32", "I16": "int16", "I8": "int8", "U8": "uint8", "BOOL": "bool"}
_EMBER_TO_ST = {v: k for k, v in _ST_TO_EMBER.items()}
_ITEMSIZE = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1, "BOOL": 1}
_LITTLE_ENDIAN = sys.byteorder == "little"  # safetensors data is little-endian


class CheckpointError(ValueError):
    """A file `ember.load` cannot read: not a safetensors file, truncated, or with a corrupt header.

    The message names the file and what is wrong. (safetensors raises `SafetensorError` for the same
    files, torch.load an `UnpicklingError` or a RuntimeError.)
    """


def save(obj: Any, f: PathLike | BinaryIO, pickle_module=None, pickle_protocol: int = 2,
         _use_new_zipfile_serialization: bool = True) -> None:
    """Save tensors and plain values (nested dicts, lists, tuples, numbers, str, bool, None) to `f`.

    NumPy arrays of a tensor dtype are stored as tensors and load back as NumPy arrays (torch pickles them).
    The file is a safetensors file; nothing is pickled (torch's `pickle_protocol` and zipfile flag are
    accepted and mean nothing here; a `pickle_module` is refused).

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "ckpt.safetensors")
    >>> w = ember.ones(2, requires_grad=True); opt = ember.optim.SGD([w], lr=0.25, momentum=0.9)
    >>> (w * w).sum().backward(); opt.step()
    >>> ember.save({"w": w, "optim": opt.state_dict(), "epoch": 3}, path)
    >>> ckpt = ember.load(path)
    >>> ckpt["epoch"], ckpt["w"].tolist(), ckpt["optim"]["state"][0]["momentum_buffer"].tolist()
    (3, [0.5, 0.5], [2.0, 2.0])
    """
    if pickle_module is not None:
        raise TypeError("save: Ember writes safetensors files and never pickles; pickle_module must be None")
    tensors: dict[str, Tensor] = {}
    structure = _Encoder(tensors).encode(obj)
    metadata = {"format": "pt", _META_KEY: json.dumps(structure, separators=(",", ":"), allow_nan=False)}
    header, order = _header_bytes(tensors, metadata)

    def chunks() -> Iterator:  # the header, then one tensor at a time (at most one host copy alive)
        yield header
        for name in order:
            yield _tensor_bytes(tensors[name])

    if hasattr(f, "write"):
        for chunk in chunks():
            f.write(chunk)
        return
    _atomic_write(os.fspath(f), chunks)


def load(f: PathLike | BinaryIO, map_location=None, pickle_module=None, *, weights_only=None, mmap=None) -> Any:
    """Load what `save` wrote, or any safetensors file (as a flat {name: Tensor} dict).

    A file torch.save wrote (zip or legacy format: a state dict, an optimizer's, a checkpoint dict of
    them with numbers and strings) is read as torch's `torch.load(weights_only=True)` reads it: a
    restricted unpickler rebuilds containers, numbers, strings and tensors and refuses every other
    global before calling it, so no code from the file runs. torch's `weights_only` is accepted with
    either value and means that always; `mmap` is accepted too (the tensors are read into memory).

    `map_location` puts the tensors on a device ("cpu", "cuda:0", an ember.device, or a dict
    {saved device: new device}); by default each goes back to the device it was saved from.
    A file that is neither a well-formed safetensors file nor such a torch file raises
    `ember.serialization.CheckpointError` (a ValueError).

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "weights.safetensors")
    >>> ember.save({"fc.weight": ember.ones(2, 3), "fc.bias": ember.zeros(2)}, path)
    >>> state = ember.load(path, map_location="cpu")
    >>> sorted(state), state["fc.weight"].shape
    (['fc.bias', 'fc.weight'], (2, 3))
    """
    if pickle_module is not None:
        raise TypeError("load: Ember reads safetensors files and never unpickles; pickle_module must be None")
    if hasattr(f, "read"):
        return _load_from(f, str(getattr(f, "name", "<file object>")), map_location)
    name = os.fspath(f)
    with open(name, "rb") as fh:
        return _load_from(fh, name, map_location)


def _load_from(fh: BinaryIO, name: str, map_location) -> Any:
    fh, start, size = _seekable(fh)
    kind = _torch_kind(bytes(_read_exact(fh, bytearray(min(size, 9)), name)))
    if kind is not None:
        return _load_torch(fh, name, kind, start, map_location)
    fh.seek(start)
    header, header_len = _read_header(fh, name, start, size)
    entries = _check_tensors(header, name, size - 8 - header_len)
    arrays = {key: _read_tensor(fh, start + 8 + header_len, entry, name) for key, entry in entries.items()}
    metadata = header.get("__metadata__") or {}
    if _META_KEY not in metadata:  # a plain safetensors file: its tensors, in header order
        return {k: _to_tensor(arrays[k], "cpu", False, map_location) for k in entries}
    try:
        structure = _parse_json(metadata[_META_KEY])
    except (ValueError, RecursionError) as e:
        raise CheckpointError(f"ember.load: {name} has a corrupt '{_META_KEY}' metadata entry: "
                              f"{_json_problem(e)}") from None
    return _Decoder(arrays, map_location, name).decode_all(structure)


# -- encoding: Python object <-> JSON structure + named tensors ------------------------------------
# A tensor becomes {"t": name} (plus "dev" and "rg" when not on the CPU / when requiring grad), a NumPy
# array {"t": name, "np": true}, a dict
# {"d": [[key, value], ...]} (keys keep their type: optimizer state is keyed by int), an OrderedDict
# {"o": [[key, value], ...], "md": its _metadata if any} (a state_dict, whose versions load_state_dict reads),
# a list {"l": [...]},
# a tuple {"u": [...]}, a non-finite float {"f": "inf"}; str, int, finite float, bool and None are
# themselves.

class _Encoder:
    def __init__(self, tensors: dict):
        self.tensors = tensors           # name -> Tensor, written to the file after the header
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
                if isinstance(obj, collections.OrderedDict):   # a state_dict: its type and _metadata kept
                    node = {"o": [[self._key(k, path), self.encode(v, _join(path, k))] for k, v in obj.items()]}
                    if isinstance(getattr(obj, "_metadata", None), dict):
                        node["md"] = self.encode(obj._metadata, _join(path, "_metadata"))
                    return node
                if isinstance(obj, dict):
                    return {"d": [[self._key(k, path), self.encode(v, _join(path, k))] for k, v in obj.items()]}
                items = [self.encode(v, _join(path, i)) for i, v in enumerate(obj)]
                return {"l": items} if isinstance(obj, list) else {"u": items}
            finally:
                self.active.discard(id(obj))
        if isinstance(obj, np.ndarray) and obj.dtype.name in _EMBER_TO_ST and obj.dtype.isnative:
            node = self._tensor(Tensor._make(obj, CPU), path)   # kept alive in self.tensors until written
            node["np"] = True                                   # load gives the NumPy array back
            return node
        raise TypeError(f"ember.save: cannot save a {type(obj).__name__} (at {path or 'the top'}); checkpoints "
                        "hold tensors, NumPy arrays of tensor dtypes, dicts, lists, tuples, numbers, strings, "
                        "bools and None (no pickle)")

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
            # "a.b" from {"a": {"b": ...}} and {"a.b": ...}; "__metadata__" is the header's own entry
            while name in self.tensors or name == "__metadata__":
                n += 1
                name = f"{path or 'tensor'}#{n}"
            self.names[id(t)] = name
            self.tensors[name] = t
        node: dict[str, Any] = {"t": name}
        if t.device.type != "cpu":
            node["dev"] = str(t.device)
        if t.requires_grad:
            node["rg"] = True
        return node


class _Decoder:
    """Rebuilds the saved object from the JSON structure, checking every node (the file may be hostile)."""

    def __init__(self, arrays: dict, map_location, filename: str):
        self.arrays, self.map_location, self.filename = arrays, map_location, filename
        self.tensors: dict[str, Tensor] = {}

    def decode_all(self, structure):
        try:
            return self.decode(structure)
        except RecursionError:
            raise self._corrupt("it is nested too deeply") from None

    def decode(self, node):
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        if isinstance(node, dict) and len(node) == 1:
            (kind, value), = node.items()
            if kind == "d" and isinstance(value, list):
                return dict(self._item(pair) for pair in value)
            if kind == "l" and isinstance(value, list):
                return [self.decode(v) for v in value]
            if kind == "u" and isinstance(value, list):
                return tuple(self.decode(v) for v in value)
            if kind == "f" and value in ("inf", "-inf", "nan"):
                return float(value)
        if isinstance(node, dict) and isinstance(node.get("o"), list) and set(node) <= {"o", "md"}:
            out = collections.OrderedDict(self._item(pair) for pair in node["o"])
            if "md" in node:
                out._metadata = self.decode(node["md"])
            return out
        if isinstance(node, dict) and "t" in node:
            return self._tensor(node)
        raise self._corrupt(f"unexpected {_snippet(node)}")

    def _item(self, pair):
        if not (isinstance(pair, list) and len(pair) == 2):
            raise self._corrupt(f"a dict item must be a [key, value] pair, got {_snippet(pair)}")
        key = pair[0]
        if isinstance(key, dict) and len(key) == 1 and key.get("f") in ("inf", "-inf", "nan"):
            key = float(key["f"])
        elif not (key is None or isinstance(key, (bool, int, float, str))):
            raise self._corrupt(f"a dict key must be a str, number, bool or null, got {_snippet(key)}")
        return key, self.decode(pair[1])

    def _tensor(self, node: dict) -> Tensor:
        name, dev, rg = node.get("t"), node.get("dev", "cpu"), node.get("rg", False)
        if set(node) - {"t", "dev", "rg", "np"} or not isinstance(name, str) or not isinstance(rg, bool) \
                or node.get("np", True) is not True:
            raise self._corrupt(f"unexpected {_snippet(node)}")
        if "np" in node:   # a NumPy array: the host array read from the file (map_location does not apply)
            if name not in self.arrays:
                raise CheckpointError(f"ember.load: {self.filename} refers to an array {name!r} that it does "
                                      "not contain")
            return self.arrays[name]
        try:
            dev = str(_device_cls(dev)) if isinstance(dev, str) else None
        except ValueError:
            dev = None
        if dev is None:
            raise self._corrupt(f"tensor {name!r} has an invalid device {_snippet(node.get('dev'))}")
        t = self.tensors.get(name)
        if t is None:
            if name not in self.arrays:
                raise CheckpointError(f"ember.load: {self.filename} refers to a tensor {name!r} that it does "
                                      "not contain")
            t = self.tensors[name] = _to_tensor(self.arrays[name], dev, rg, self.map_location)
        return t

    def _corrupt(self, what: str) -> CheckpointError:
        return CheckpointError(f"ember.load: {self.filename} has a corrupt '{_META_KEY}' metadata entry: {what}")


def _snippet(value) -> str:
    text = json.dumps(value) if not isinstance(value, float) or math.isfinite(value) else repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _join(path: str, key) -> str:
    return f"{path}.{key}" if path else str(key)


def _host_array(t: Tensor) -> np.ndarray:
    data = t._data
    if isinstance(data, np.ndarray):
        return data
    from . import backends
    return backends.get(t.device.type).to_host(data)


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


# -- reading: check everything against the file before allocating anything ---------------------------

class _Entry:
    __slots__ = ("dtype", "shape", "begin", "end")

    def __init__(self, dtype: str, shape: tuple, begin: int, end: int):
        self.dtype, self.shape, self.begin, self.end = dtype, shape, begin, end


def _seekable(fh) -> tuple[BinaryIO, int, int]:
    """(file, where the checkpoint starts in it, its size from there). A stream that cannot seek is read
    whole into memory first, as there is no other way to learn its size."""
    try:
        if fh.seekable():
            start = fh.tell()
            size = fh.seek(0, io.SEEK_END) - start
            fh.seek(start)
            return fh, start, size
    except (AttributeError, OSError):
        pass
    data = fh.read()
    return io.BytesIO(data), 0, len(data)


def _torch_kind(head: bytes) -> str | None:
    """'zip archive' or 'pickle' when the first bytes are torch.save's (zip, or the legacy format's pickle),
    unless byte 8 starts a safetensors header: one 640, 896, 1152 or 1408 bytes long (mod 65536) begins
    with the bytes 0x80, 0x02-0x05 of a pickle too."""
    if head[8:9] != b"{" and (head[:4] == b"PK\x03\x04"
                              or (head[:1] == b"\x80" and head[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"))):
        return "zip archive" if head[:2] == b"PK" else "pickle"
    return None


def _load_torch(fh: BinaryIO, name: str, kind: str, start: int, map_location) -> Any:
    """A file torch.save wrote, through the restricted reader of ember/_torch_file.py: containers, numbers,
    strings and tensors are rebuilt, any other global is refused before it is called (torch's
    `weights_only=True` policy), so no code from the file runs."""
    from ._torch_file import UnsupportedTorchFile, read_torch_file
    fh.seek(start)
    data = io.BytesIO(fh.read())
    try:
        obj = read_torch_file(data, name)
    except UnsupportedTorchFile as e:
        msg = str(e).removeprefix("load_torch_file: ")
        raise CheckpointError(f"ember.load: {name} is a {kind}, which Ember reads only as torch.save writes it, "
                              f"rebuilding containers, numbers, strings and tensors and running no code from the "
                              f"file: {msg}") from None
    except (pickle.UnpicklingError, EOFError, zipfile.BadZipFile, KeyError, ValueError, struct.error) as e:
        raise CheckpointError(f"ember.load: {name} is a {kind} as torch.save writes, but it is corrupt or "
                              f"truncated: {e}") from None
    return _from_torch(obj, map_location)


def _from_torch(obj, map_location):
    if isinstance(obj, np.ndarray):
        return _to_tensor(obj if obj.flags.writeable else obj.copy(), "cpu", False, map_location)
    if isinstance(obj, dict):
        out = type(obj)() if isinstance(obj, collections.OrderedDict) else {}
        for k, v in obj.items():
            out[k] = _from_torch(v, map_location)
        if isinstance(getattr(obj, "_metadata", None), dict):   # a state_dict's module versions
            out._metadata = obj._metadata   # type: ignore[attr-defined]
        return out
    if isinstance(obj, (list, tuple)):
        return type(obj)(_from_torch(v, map_location) for v in obj)
    return obj


def _read_header(fh: BinaryIO, name: str, start: int, size: int) -> tuple[dict, int]:
    """The JSON header and its length in bytes, after checks that give a clear error for truncation and a
    header length that does not fit in the file."""
    head = bytes(_read_exact(fh, bytearray(min(size, 9)), name))  # a file object may return short reads
    if size < 8:
        raise CheckpointError(f"ember.load: {name} is not a safetensors file or is truncated: it has {size} "
                              "bytes, fewer than the 8 that give the header's length")
    n = int.from_bytes(head[:8], "little")
    if n > size - 8:
        raise CheckpointError(f"ember.load: {name} is not a safetensors file or is truncated: its first 8 bytes "
                              f"say the JSON header is {n} bytes long, but only {size - 8} bytes follow")
    if n == 0:
        raise CheckpointError(f"ember.load: {name} is not a safetensors file: its JSON header is empty")
    if head[8:9] != b"{":
        raise CheckpointError(f"ember.load: {name} is not a safetensors file: its header does not start with "
                              f"'{{' (Ember loads only safetensors files, and never pickle)")
    fh.seek(start + 8)
    text = _read_exact(fh, bytearray(n), name)
    try:
        header = _parse_json(text.decode("utf-8"))  # a dict: the text starts with "{"
    except (ValueError, RecursionError) as e:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise CheckpointError(f"ember.load: {name} is corrupt: its header is not valid JSON: "
                              f"{_json_problem(e)}") from None
    meta = header.get("__metadata__", {})
    if not (isinstance(meta, dict) and all(isinstance(v, str) for v in meta.values())):
        raise CheckpointError(f"ember.load: {name} is corrupt: its __metadata__ must be an object of strings, "
                              f"got {_snippet(meta)}")
    return header, n


def _unique_keys(pairs: list) -> dict:
    out = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"the key {key!r} appears twice in one object")
        out[key] = value
    return out


def _parse_json(text: str):
    """json.loads that refuses duplicate keys, which it would otherwise silently resolve to the last."""
    return json.loads(text, object_pairs_hook=_unique_keys)


def _json_problem(e: BaseException) -> str:
    if isinstance(e, RecursionError):
        return "it is nested too deeply"
    if isinstance(e, UnicodeDecodeError):
        return f"it is not UTF-8 ({e.reason} at byte {e.start})"
    return str(e)


def _json_type(value) -> str:
    return {list: "array", str: "string", bool: "boolean", type(None): "null"}.get(
        type(value), "number" if isinstance(value, (int, float)) else type(value).__name__)


def _is_index(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0


def _check_tensors(header: dict, name: str, data_len: int) -> dict[str, _Entry]:
    """The header's tensor entries, checked: known dtypes, shapes of non-negative ints, offsets that match
    the shapes and tile the data section exactly (no overlap, no gap, nothing after it), as safetensors
    requires. Nothing is allocated here, so a header that lies about sizes costs nothing."""
    entries = {}
    for key, info in header.items():
        if key == "__metadata__":
            continue

        def bad(what: str) -> CheckpointError:
            return CheckpointError(f"ember.load: {name} is corrupt: tensor {key!r} {what}")

        if not isinstance(info, dict):
            raise bad(f"is described by a JSON {_json_type(info)}, not an object")
        missing = [k for k in ("dtype", "shape", "data_offsets") if k not in info]
        if missing:
            raise bad(f"has no {' or '.join(missing)}")
        dtype, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
        if not isinstance(dtype, str):
            raise bad(f"has dtype {_snippet(dtype)}, which is not a dtype name")
        if dtype not in _ST_TO_EMBER:  # a valid file of another tool (U16, F8_E4M3, ...) is not corrupt
            raise CheckpointError(f"ember.load: {name} holds tensor {key!r} of dtype {dtype}, which Ember does not "
                                  f"support (supported: {', '.join(_ST_TO_EMBER)})")
        if not (isinstance(shape, list) and all(_is_index(d) for d in shape)):
            raise bad(f"has shape {_snippet(shape)}; a shape is a list of non-negative integers")
        if not (isinstance(offsets, list) and len(offsets) == 2 and all(_is_index(o) for o in offsets)):
            raise bad(f"has data_offsets {_snippet(offsets)}; they must be two non-negative integers [begin, end]")
        begin, end = offsets
        if begin > end:
            raise bad(f"has data_offsets [{begin}, {end}], which end before they begin")
        if end > data_len:
            raise bad(f"has data_offsets [{begin}, {end}] beyond the end of the file's data section "
                      f"({data_len} bytes)")
        nbytes = _nbytes(shape, _ITEMSIZE[dtype], 2**64)
        if end - begin != nbytes:
            needs = f"{nbytes} bytes" if nbytes <= 2**64 else "more than 2**64 bytes"
            raise bad(f"has data_offsets [{begin}, {end}] ({end - begin} bytes), but shape {_snippet(shape)} of "
                      f"{dtype} needs {needs}")
        entries[key] = _Entry(dtype, tuple(shape), begin, end)
    pos, prev = 0, None
    for key, e in sorted(entries.items(), key=lambda item: (item[1].begin, item[1].end)):
        if e.begin != pos:
            what = f"overlaps tensor {prev!r}" if e.begin < pos else f"leaves a gap of {e.begin - pos} bytes before it"
            raise CheckpointError(f"ember.load: {name} is corrupt: tensor {key!r} (data_offsets [{e.begin}, "
                                  f"{e.end}]) {what}")
        pos, prev = e.end, key
    if pos != data_len:
        raise CheckpointError(f"ember.load: {name} is corrupt: {data_len - pos} bytes follow the last tensor's "
                              "data (the header does not describe them)")
    return entries


def _nbytes(shape: list, itemsize: int, limit: int) -> int:
    """The byte size of `shape`, or a number just past `limit` once the product passes it (a header that
    lies with enormous dimensions must not make us multiply million-digit numbers)."""
    if 0 in shape:
        return 0
    n = itemsize
    for d in shape:
        n *= d
        if n > limit:
            return limit + 1
    return n


def _read_tensor(fh: BinaryIO, data_start: int, e: _Entry, name: str) -> np.ndarray:
    if e.dtype == "BF16":
        from . import _dtype
        np_dtype = _dtype.bfloat16.np
    else:
        np_dtype = np.dtype(_ST_TO_EMBER[e.dtype])
    try:
        arr = host.empty(e.shape, np_dtype)
    except ValueError as err:  # more dimensions than NumPy supports
        raise CheckpointError(f"ember.load: {name} holds a tensor of shape {list(e.shape)} that NumPy cannot "
                              f"represent ({err})") from None
    fh.seek(data_start + e.begin)
    _read_exact(fh, arr.reshape(-1).view(np.uint8), name)  # straight into the array: no second copy
    if not _LITTLE_ENDIAN:
        arr.byteswap(inplace=True)
    return arr


def _read_exact(fh: BinaryIO, buf, name: str):
    """Fill `buf` (a writable buffer) from `fh`; a short read means the file shrank under us."""
    view, filled = memoryview(buf).cast("B"), 0
    readinto = getattr(fh, "readinto", None)
    while filled < len(view):
        if readinto is not None:
            got = readinto(view[filled:])
        else:
            chunk = fh.read(min(len(view) - filled, 1 << 26))
            got = len(chunk)
            view[filled:filled + got] = chunk
        if not got:
            raise CheckpointError(f"ember.load: {name} is truncated: it ended while being read (was it "
                                  "being written?)")
        filled += got
    return buf


# -- writing: header from shapes and dtypes, then each tensor's bytes; temporary file, fsync, rename --

def _header_bytes(tensors: dict[str, Tensor], metadata: dict) -> tuple[bytes, list[str]]:
    """The 8-byte length and the JSON header, padded with spaces to a multiple of 8 as safetensors pads it,
    and the order of the tensors' data: largest item size first, so every tensor is aligned to its dtype."""
    order = sorted(tensors, key=lambda k: (-tensors[k].dtype.itemsize, k))
    header: dict[str, Any] = {"__metadata__": metadata}
    pos = 0
    for key in order:
        t = tensors[key]
        nbytes = math.prod(t.shape) * t.dtype.itemsize
        header[key] = {"dtype": _EMBER_TO_ST[t.dtype.name], "shape": list(t.shape), "data_offsets": [pos, pos + nbytes]}
        pos += nbytes
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return len(text).to_bytes(8, "little") + text, order


def _tensor_bytes(t: Tensor) -> memoryview:
    """The tensor's bytes in C order: a view of its array where it is contiguous and on the host, else one
    copy of this tensor alone."""
    arr = host.contiguous(_host_array(t))
    if not _LITTLE_ENDIAN:
        arr = arr.byteswap()
    return memoryview(arr.reshape(-1).view(np.uint8))


def _atomic_write(path: str, chunks: Callable[[], Iterator]) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    base = os.path.basename(path)
    tmp = _write_anonymous(directory, base, chunks) or _write_named(directory, base, chunks)
    try:
        os.replace(tmp, path)
        tmp = None
    finally:
        if tmp is not None:
            os.unlink(tmp)
    _fsync_dir(directory)


def _write_chunks(fd: int, chunks: Callable[[], Iterator]) -> None:
    for chunk in chunks():
        _write_all(fd, chunk)
    os.fsync(fd)


def _write_anonymous(directory: str, base: str, chunks: Callable[[], Iterator]) -> str | None:
    """Write to an O_TMPFILE file, which has no name until complete (so it vanishes if the process is
    killed mid-write), then link it into `directory`. None where the OS or filesystem can't."""
    if not hasattr(os, "O_TMPFILE") or not os.path.isdir("/proc/self/fd"):
        return None
    try:
        fd = os.open(directory, os.O_TMPFILE | os.O_WRONLY, 0o666)
    except OSError:
        return None
    try:
        _write_chunks(fd, chunks)
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


def _write_named(directory: str, base: str, chunks: Callable[[], Iterator]) -> str:
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{base}.", suffix=".tmp")
    try:
        _write_chunks(fd, chunks)
    except BaseException:
        os.close(fd)
        os.unlink(tmp)
        raise
    os.close(fd)
    return tmp


def _write_all(fd: int, data) -> None:
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
