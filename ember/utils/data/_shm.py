# Batches travel from workers to the main process through reusable shared-memory files ("slots"):
# the worker copies every array of its batch into a slot and sends only a small description
# (dtype, shape, offset) through a pipe; the main process copies the arrays out and frees the slot.
#
# The main process creates and owns every slot file: prefetch_factor per worker, before the workers start.
# With 'fork' the workers inherit open descriptors and the main process unlinks the names at once, so
# nothing is left in /dev/shm even if every process is SIGKILLed; with 'spawn' the workers open the slots
# by name and the names are unlinked at shutdown. Workers grow a slot with ftruncate when a batch does not
# fit, and keep it mapped, so pages are touched once and reused, batch after batch.
from __future__ import annotations

import collections.abc
import mmap
import os
import secrets
import tempfile
import weakref
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

import ember

_ALIGN = 64


def shm_dir() -> str:
    if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK):
        return "/dev/shm"
    return tempfile.gettempdir()


SLOT_PREFIX = "ember_dl_"


class _Ref:
    """Stands for one array of a batch inside the slot: where it lies and what it was."""
    __slots__ = ("offset", "dtype", "shape", "is_tensor")

    def __init__(self, offset: int, dtype: np.dtype, shape: tuple, is_tensor: bool) -> None:
        self.offset, self.dtype, self.shape, self.is_tensor = offset, dtype, shape, is_tensor

    def __reduce__(self):
        return (_Ref, (self.offset, self.dtype, self.shape, self.is_tensor))


def _map_structure(obj: Any, fn: Callable[[Any], Any]) -> Any:
    """Apply ``fn`` to every leaf of nested lists / tuples / namedtuples / dicts, keeping container types."""
    if ember.is_tensor(obj) or isinstance(obj, (np.ndarray, _Ref)):
        return fn(obj)
    if isinstance(obj, collections.abc.Mapping):
        mapped = {k: _map_structure(v, fn) for k, v in obj.items()}
        try:
            return type(obj)(mapped)
        except TypeError:
            return mapped
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(_map_structure(v, fn) for v in obj))
    if isinstance(obj, (list, tuple)):
        mapped_list = [_map_structure(v, fn) for v in obj]
        return mapped_list if type(obj) is list else type(obj)(mapped_list)
    return obj


def _as_array(x) -> Tuple[np.ndarray, bool]:
    if isinstance(x, np.ndarray):
        return x, False
    data = getattr(x, "_data", None)
    if not isinstance(data, np.ndarray):
        data = x.detach().cpu().numpy()  # e.g. a device tensor: bring it to the host
    return data, True


class WorkerSlots:
    """The worker's side: maps slots by name and grows them when a batch does not fit."""

    def __init__(self, directory: str, prefix: str, fds: Optional[Dict[str, int]] = None) -> None:
        self.directory, self.prefix = directory, prefix
        self.fds = fds or {}  # inherited descriptors (fork); otherwise slots are opened by name
        self.maps: Dict[str, mmap.mmap] = {}

    def _map(self, slot: str, nbytes: int) -> mmap.mmap:
        m = self.maps.get(slot)
        if m is not None and len(m) >= nbytes:
            return m
        inherited = slot in self.fds
        fd = self.fds[slot] if inherited else os.open(os.path.join(self.directory, self.prefix + slot), os.O_RDWR)
        try:
            size = os.fstat(fd).st_size
            if size < nbytes:
                size = max(nbytes, 2 * size)
                os.ftruncate(fd, size)
            new = mmap.mmap(fd, size)
        finally:
            if not inherited:
                os.close(fd)
        if m is not None:
            m.close()
        self.maps[slot] = new
        return new

    def pack(self, batch: Any, slot: str) -> Tuple[Any, int]:
        """Copy the batch's arrays into ``slot``; return the description to send and the slot's size."""
        arrays: List[np.ndarray] = []
        refs: List[_Ref] = []
        total = 0

        def plan(x):
            nonlocal total
            arr, is_tensor = _as_array(x)
            ref = _Ref(total, arr.dtype, arr.shape, is_tensor)
            arrays.append(arr)
            refs.append(ref)
            total += (arr.nbytes + _ALIGN - 1) // _ALIGN * _ALIGN
            return ref

        described = _map_structure(batch, plan)
        if total == 0:
            return described, 0
        m = self._map(slot, total)
        for arr, ref in zip(arrays, refs):
            dst = np.ndarray(arr.shape, arr.dtype, buffer=m, offset=ref.offset)
            np.copyto(dst, arr, casting="no")
        return described, len(m)

    def close(self) -> None:
        for m in self.maps.values():
            m.close()
        self.maps.clear()


class SlotPool:
    """The main process's side: creates, lends, reads and finally unlinks the slot files."""

    def __init__(self) -> None:
        self.directory = shm_dir()
        self.prefix = f"{SLOT_PREFIX}{os.getpid()}_{secrets.token_hex(4)}_"
        self.free: Dict[int, List[str]] = {}
        self.created: List[str] = []
        self.named: List[str] = []  # slots whose file name still exists
        self.fds: Dict[str, int] = {}
        self.maps: Dict[str, mmap.mmap] = {}

    def path(self, slot: str) -> str:
        return os.path.join(self.directory, self.prefix + slot)

    def _create(self, worker_id: int) -> str:
        slot = f"w{worker_id}s{sum(1 for s in self.created if s.startswith(f'w{worker_id}s'))}"
        self.fds[slot] = os.open(self.path(slot), os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
        self.created.append(slot)
        self.named.append(slot)
        return slot

    def create(self, num_workers: int, per_worker: int) -> None:
        """Make ``per_worker`` free slots for each worker (before the workers start, so they can inherit them)."""
        for w in range(num_workers):
            for _ in range(per_worker):
                self.free.setdefault(w, []).append(self._create(w))

    def unlink_names(self) -> None:
        """Remove the slots' names (every process that needs them holds a descriptor): nothing can leak now."""
        for slot in self.named:
            try:
                os.unlink(self.path(slot))
            except FileNotFoundError:
                pass
        self.named.clear()

    def acquire(self, worker_id: int) -> str:
        free = self.free.setdefault(worker_id, [])
        if free:
            return free.pop()
        return self._create(worker_id)  # not expected (prefetch_factor bounds the slots in use); by name

    def release(self, worker_id: int, slot: str) -> None:
        self.free.setdefault(worker_id, []).append(slot)

    def unpack(self, described: Any, slot: str, size: int, pin: bool) -> Any:
        """Rebuild the batch with arrays copied out of ``slot`` (which can then be reused)."""
        if size == 0:
            return _map_structure(described, lambda r: _rebuild(np.empty(r.shape, r.dtype), r.is_tensor, pin))
        m = self.maps.get(slot)
        if m is None or len(m) < size:
            if m is not None:
                m.close()
            m = mmap.mmap(self.fds[slot], size, prot=mmap.PROT_READ)
            self.maps[slot] = m

        def rebuild(r: _Ref):
            view = np.ndarray(r.shape, r.dtype, buffer=m, offset=r.offset)
            return _rebuild(view.copy(), r.is_tensor, pin)

        return _map_structure(described, rebuild)

    def close(self) -> None:
        for m in self.maps.values():
            try:
                m.close()
            except BufferError:  # a view is still alive somewhere; the unlink below still frees the name
                pass
        self.maps.clear()
        for fd in self.fds.values():
            os.close(fd)
        self.fds.clear()
        self.unlink_names()
        self.created.clear()
        self.free.clear()


def _rebuild(arr: np.ndarray, is_tensor: bool, pin: bool):
    if not is_tensor:
        return arr
    t = ember.from_numpy(arr)
    return t.pin_memory() if pin else t


def pin_structure(batch: Any) -> Any:
    """``pin_memory=True`` for batches made in the main process: page-lock every tensor."""
    def pin(x):
        if ember.is_tensor(x):
            return x.pin_memory()
        return x
    out = _map_structure(batch, pin)
    if hasattr(out, "pin_memory") and not ember.is_tensor(out) and callable(out.pin_memory):
        return out.pin_memory()  # custom batch types, as in torch
    return out


# -- shared storage for tensors (Tensor.share_memory_, ember.multiprocessing) --------------------------------
# The slots above carry copies of batches; a shared tensor instead *lives* in a shared-memory file of the same
# directory, mapped MAP_SHARED, so every process that maps it (a forked child, or one that received it through
# ember.multiprocessing) reads and writes the same pages. With the 'file_descriptor' strategy (the default, as
# torch's on Linux) the file's name is removed at once and its descriptor travels to the receiver (SCM_RIGHTS,
# multiprocessing.reduction.DupFd): nothing can leak. With 'file_system' the name stays, the receiver opens it
# by name, and the creating process removes it when its mapping is collected or at exit.
SHARED_PREFIX = "ember_shm_"


class SharedMap(mmap.mmap):
    """A mapping of a shared-memory file; the arrays of shared tensors are views of one (``shared_map_of``)."""
    fd: int = -1           # kept open so the storage can be sent on ('file_descriptor')
    path: str = ""         # the file's name while it exists ('file_system')
    size: int = 0
    address: int = 0


def _close_shared(fd: int, path: str) -> None:
    if fd >= 0:
        os.close(fd)
    if path:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


def _map_fd(fd: int, size: int, path: str, owner: bool) -> SharedMap:
    m = SharedMap(fd, size)
    m.fd, m.size = fd, size
    m.path = path
    m.address = np.frombuffer(m, np.uint8).ctypes.data
    # the creator removes a 'file_system' name; every process closes its own descriptor
    weakref.finalize(m, _close_shared, fd, path if owner else "")
    return m


def shared_empty(nbytes: int, strategy: str) -> SharedMap:
    """A new zero-filled shared mapping of at least ``nbytes`` bytes (one byte for empty tensors)."""
    size = max(int(nbytes), 1)
    path = os.path.join(shm_dir(), f"{SHARED_PREFIX}{os.getpid()}_{secrets.token_hex(8)}")
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
    try:
        os.ftruncate(fd, size)
    except OSError:
        os.close(fd)
        os.unlink(path)
        raise
    if strategy == "file_descriptor":
        os.unlink(path)
        path = ""
    return _map_fd(fd, size, path, owner=True)


def open_shared(fd: Optional[int], path: str, size: int) -> SharedMap:
    """Map a storage another process shared: by the descriptor it sent (ours now), or by name."""
    if fd is None:
        fd = os.open(path, os.O_RDWR)
    return _map_fd(fd, size, path, owner=False)


def shared_map_of(arr: Any) -> Optional[SharedMap]:
    """The shared mapping ``arr`` is a view of, or None."""
    base = arr
    while isinstance(base, np.ndarray):
        base = base.base
    return base if isinstance(base, SharedMap) else None


def share_array(arr: np.ndarray, strategy: str) -> np.ndarray:
    """A copy of ``arr`` in a new shared mapping, with the same strides (so its views can follow: ``rebase``)."""
    lo, hi = np.lib.array_utils.byte_bounds(arr) if arr.size else (arr.ctypes.data, arr.ctypes.data)
    m = shared_empty(hi - lo, strategy)
    out = np.ndarray(arr.shape, arr.dtype, buffer=m, offset=arr.ctypes.data - lo, strides=arr.strides)
    np.copyto(out, arr, casting="no")
    return out


def rebase(view: np.ndarray, old: np.ndarray, new: np.ndarray) -> np.ndarray:
    """``view`` (of ``old``'s memory) rebuilt on ``new``, ``share_array``'s copy of ``old``."""
    m = shared_map_of(new)
    offset = view.ctypes.data - old.ctypes.data + new.ctypes.data - m.address
    return np.ndarray(view.shape, view.dtype, buffer=m, offset=offset, strides=view.strides)


def array_layout(arr: np.ndarray, m: SharedMap) -> Tuple[int, tuple, tuple, np.dtype]:
    """Where ``arr`` lies in ``m``: (byte offset, shape, strides, dtype); ``array_at`` rebuilds it."""
    return arr.ctypes.data - m.address, arr.shape, arr.strides, arr.dtype


def array_at(m: SharedMap, offset: int, shape: tuple, strides: tuple, dtype: np.dtype) -> np.ndarray:
    return np.ndarray(shape, dtype, buffer=m, offset=offset, strides=strides)


STRATEGY = ["file_descriptor"]   # ember.multiprocessing.set_sharing_strategy changes it


def share_tensor_(t) -> Any:
    """Tensor.share_memory_: move a CPU tensor's array into a shared mapping, in place (no-op if there already).

    A view whose base is not shared moves its base (as torch moves the whole storage) and follows it; other
    views made earlier keep the old memory (Ember's views hold arrays, not a storage object)."""
    if t.device.type != "cpu" or shared_map_of(t._data) is not None:
        return t
    base = t._base
    if base is not None and base.device.type == "cpu" and np.may_share_memory(t._data, base._data):
        old = base._data
        share_tensor_(base)
        t._data = rebase(t._data, old, base._data)
        return t
    t._data = share_array(t._data, STRATEGY[0])
    return t
