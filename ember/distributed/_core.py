"""The process group and the collectives, with torch.distributed's names and semantics.

A collective copies the tensor's data into a contiguous buffer (host for MPI, device for NCCL), lets the
communication engine run it into a separate buffer, and writes the result back into the tensor with the
`Assign` primitive (`ops.inplace.assign`) on the waiting thread. See docs/distributed.md.
"""
from __future__ import annotations

import atexit
import datetime
import os
import pickle
import sys
import traceback

from .. import _dtype
from .._tensor import Tensor
from ..autograd.grad_mode import no_grad
from ._engine import DistributedTimeoutError, Engine, Work

__all__ = ["ReduceOp", "Work", "DistributedTimeoutError", "is_available", "is_mpi_available",
           "is_nccl_available", "init_process_group", "destroy_process_group", "is_initialized",
           "get_rank", "get_world_size", "get_backend", "barrier", "all_reduce", "broadcast", "all_gather",
           "all_gather_into_tensor", "reduce_scatter", "reduce_scatter_tensor", "gather", "scatter", "send",
           "recv", "isend", "irecv", "reduce", "all_to_all", "broadcast_object_list", "all_gather_object", "default_pg_timeout"]

default_pg_timeout = datetime.timedelta(minutes=30)


class ReduceOp:
    """Reduction operations (torch.distributed.ReduceOp)."""
    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"


_OPS = (ReduceOp.SUM, ReduceOp.AVG, ReduceOp.PRODUCT, ReduceOp.MIN, ReduceOp.MAX)


class ProcessGroup:
    def __init__(self, backend, timeout: float):
        self.backend = backend
        self.rank = backend.rank
        self.size = backend.size
        self.timeout = timeout
        self.engine = Engine(backend, timeout)
        self.debug = os.environ.get("EMBER_DISTRIBUTED_DEBUG", "0") not in ("", "0")
        self._spare = {}   # (shape, dtype) -> receive buffers free for reuse

    def recv_buffer(self, shape, dtype):
        """A receive buffer, reused from an earlier collective when one of that shape and dtype is free:
        a fresh multi-MiB buffer costs its page faults on every call (DDP reduces the same buckets every
        step). Hand it back with `release` once its contents are written out."""
        free = self._spare.get((tuple(shape), dtype))
        return free.pop() if free else self.backend.empty(shape, dtype)

    def release(self, buf):
        free = self._spare.setdefault((tuple(buf.shape), buf.dtype), [])
        if len(free) < 4:
            free.append(buf)


_GROUP: ProcessGroup | None = None
_PREV_HOOK = None


def is_available() -> bool:
    return True


def is_mpi_available() -> bool:
    import importlib.util
    return importlib.util.find_spec("mpi4py") is not None


def is_nccl_available() -> bool:
    from . import _nccl
    return _nccl.is_available()


def _seconds(timeout) -> float:
    if timeout is None:
        return default_pg_timeout.total_seconds()
    if isinstance(timeout, datetime.timedelta):
        return timeout.total_seconds()
    return float(timeout)


def init_process_group(backend: str | None = "mpi", init_method=None, timeout=None, world_size: int = -1,
                       rank: int = -1, store=None, group_name: str = "", pg_options=None,
                       device_id=None) -> None:
    """Join the job started by the launcher (`ember run -n N`, `mpiexec`, `srun`; plain `python` is a
    world of 1). Rank and world size come from MPI. `timeout` (timedelta or seconds, default 30 min)
    bounds every collective.

    >>> import ember.distributed as dist
    >>> dist.init_process_group("mpi")
    >>> dist.get_world_size() >= 1
    True
    >>> dist.destroy_process_group()
    """
    global _GROUP, _PREV_HOOK
    if _GROUP is not None:
        raise RuntimeError("init_process_group: trying to initialize the default process group twice")
    name = "mpi" if backend is None else str(backend).lower()
    if name in ("gloo", "cpu:gloo"):
        name = "mpi"      # scripts written for torch's CPU backend run on MPI
    if name == "mpi":
        from ._mpi import MPIBackend
        be = MPIBackend()
    elif name == "nccl":
        from ._nccl import NCCLBackend
        be = NCCLBackend(device_id)
    else:
        raise ValueError(f"init_process_group: unknown backend {backend!r}; expected 'mpi' or 'nccl'")
    if world_size not in (-1, None) and world_size != be.size:
        raise ValueError(f"init_process_group: world_size={world_size} but the launcher started {be.size} "
                         f"processes (ember run -n {world_size} ...)")
    if rank not in (-1, None) and rank != be.rank:
        raise ValueError(f"init_process_group: rank={rank} but the launcher gave this process rank {be.rank}")
    _GROUP = ProcessGroup(be, _seconds(timeout))
    if be.size > 1 and sys.excepthook is not _abort_hook:
        _PREV_HOOK = sys.excepthook
        sys.excepthook = _abort_hook
    atexit.register(_at_exit)


def _abort_hook(tp, value, tb):
    """An uncaught exception on one rank: print it with the rank, then abort every rank (no hang)."""
    g = _GROUP
    rank = g.rank if g is not None else "?"
    try:
        sys.stdout.flush()
        lines = traceback.format_exception(tp, value, tb)
        sys.stderr.write(f"[rank {rank}] uncaught exception, aborting all ranks:\n" +
                         "".join(f"[rank {rank}] {ln}" for ln in "".join(lines).splitlines(True)))
        sys.stderr.flush()
    finally:
        if g is not None:
            g.backend.abort(1)
        elif _PREV_HOOK is not None:
            _PREV_HOOK(tp, value, tb)


def _at_exit():
    g = _GROUP
    if g is not None and g.engine.broken:
        # a timed-out collective cannot be cancelled: MPI_Finalize would wait for it forever
        sys.stdout.flush()
        sys.stderr.flush()
        g.backend.abort(1)


def destroy_process_group(group=None) -> None:
    """Wait for queued operations, stop the communication thread, and forget the group."""
    global _GROUP
    g = _group(group, "destroy_process_group")
    if not g.engine.broken:
        g.engine.drain(g.timeout)
    g.engine.stop()
    if hasattr(g.backend, "close"):
        g.backend.close()
    if sys.excepthook is _abort_hook:
        sys.excepthook = _PREV_HOOK or sys.__excepthook__
    _GROUP = None


def is_initialized() -> bool:
    return _GROUP is not None


def _group(group, op: str) -> ProcessGroup:
    if group is not None and group is not _GROUP:
        raise NotImplementedError(f"{op}: only the default process group is supported (group=None)")
    if _GROUP is None:
        raise RuntimeError(f"{op}: Default process group has not been initialized, please make sure to call "
                           f"init_process_group.")
    return _GROUP


def get_rank(group=None) -> int:
    return _group(group, "get_rank").rank


def get_world_size(group=None) -> int:
    return _group(group, "get_world_size").size


def get_backend(group=None) -> str:
    return _group(group, "get_backend").backend.name


# --- helpers ------------------------------------------------------------------------------------------
def _check_tensor(t, op: str, name: str = "tensor"):
    if not isinstance(t, Tensor):
        raise TypeError(f"{op}: {name} must be an ember.Tensor, got {type(t).__name__}")


def _check_op(op_value, opname: str):
    if op_value not in _OPS:
        raise ValueError(f"{opname}: unknown reduce op {op_value!r}; use ReduceOp.SUM/AVG/PRODUCT/MIN/MAX")


def _write(dst: Tensor, buf, g: ProcessGroup):
    """Write a result buffer into `dst` with the `Assign` primitive (casts to dst's dtype if needed)."""
    from ..ops.inplace import assign
    arr = g.backend.to_device(buf.reshape(dst.shape), dst._device)
    assign(dst, Tensor._make(arr, dst._device), name=None)


def _describe(t) -> str:
    return f"shape {tuple(t.shape)}, dtype {t.dtype}"


def _lazy(t):
    """The description of `t` for an error message, made only if one is raised."""
    return lambda: _describe(t)


def _debug_check(g: ProcessGroup, op: str, t=None, extra: str = ""):
    """EMBER_DISTRIBUTED_DEBUG=1: every rank all-gathers what it is about to call and compares."""
    if not g.debug or g.size == 1:
        return
    sig = op + ("" if t is None else f"(shape={tuple(t.shape)}, dtype={t.dtype}") + \
        ("" if t is None else (f", {extra})" if extra else ")"))
    raw = sig.encode()[:255].ljust(256, b"\0")
    from ..backends import host
    send = host.array(bytearray(raw), dtype=_dtype.uint8.np)
    recv = g.backend.empty((g.size, 256), send.dtype)
    w = Work("debug check", lambda: g.backend.allgather(send, recv), describe=sig)
    g.engine.submit(w, async_op=False)
    sigs = [bytes(recv[r]).rstrip(b"\0").decode(errors="replace") for r in range(g.size)]
    if len(set(sigs)) > 1:
        ref = max(set(sigs), key=sigs.count)      # the majority call; rank 0's on a tie
        if sigs.count(ref) * 2 <= g.size:
            ref = sigs[0]
        bad = [r for r, s in enumerate(sigs) if s != ref]
        lines = "; ".join(f"rank {r} called {sigs[r]}" for r in bad)
        raise RuntimeError(f"EMBER_DISTRIBUTED_DEBUG: collective mismatch at {op} on rank {g.rank}: the others "
                           f"called {ref}, but {lines}")


def _run(g: ProcessGroup, work: Work, async_op: bool):
    g.engine.submit(work, async_op)
    if async_op:
        return work
    work.wait()
    return None


def _reduce_input(t: Tensor, g: ProcessGroup):
    """The contiguous buffer a reduction sends: bfloat16 (which MPI cannot add) goes as float32."""
    if g.backend.reducible(t._data.dtype):
        return g.backend.buffer(t._data)
    with no_grad():
        return g.backend.buffer(t.to(_dtype.float32)._data)


def _avg_divide(buf, n: int, g: ProcessGroup, device):
    with no_grad():
        out = Tensor._make(g.backend.to_device(buf, device), device) / n
    return g.backend.buffer(out._data)


# --- collectives --------------------------------------------------------------------------------------
def barrier(group=None, async_op: bool = False, device_ids=None):
    g = _group(group, "barrier")
    _debug_check(g, "barrier")
    return _run(g, Work("barrier", g.backend.barrier, describe="barrier"), async_op)


def all_reduce(tensor: Tensor, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """Reduce `tensor` over all ranks, in place on every rank.

    >>> t = ember.tensor([1.0, 2.0]); dist.all_reduce(t)     # t == world_size * [1, 2]
    """
    g = _group(group, "all_reduce")
    _check_tensor(tensor, "all_reduce")
    _check_op(op, "all_reduce")
    if op == ReduceOp.AVG and tensor._data.dtype.kind == "b":
        raise ValueError("all_reduce: ReduceOp.AVG is not defined for bool tensors")
    _debug_check(g, "all_reduce", tensor, f"op={op}")
    send = _reduce_input(tensor, g)
    recv = g.recv_buffer(send.shape, send.dtype)
    mpi_op = g.backend.op_of("sum" if op == ReduceOp.AVG else op, send.dtype.kind == "b")

    def finish():
        out = _avg_divide(recv, g.size, g, tensor._device) if op == ReduceOp.AVG else recv
        _write(tensor, out, g)    # Assign copies out of recv: it is free again
        g.release(recv)
    return _run(g, Work("all_reduce", lambda: g.backend.allreduce(send, recv, mpi_op), finish,
                        _lazy(tensor)), async_op)


def reduce(tensor: Tensor, dst: int = 0, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """Reduce `tensor` over all ranks into `tensor` on `dst` (the others keep theirs)."""
    g = _group(group, "reduce")
    _check_tensor(tensor, "reduce")
    _check_op(op, "reduce")
    _check_rank(dst, g, "reduce", "dst")
    if op == ReduceOp.AVG and tensor._data.dtype.kind == "b":
        raise ValueError("reduce: ReduceOp.AVG is not defined for bool tensors")
    _debug_check(g, "reduce", tensor, f"op={op}, dst={dst}")
    send = _reduce_input(tensor, g)
    recv = g.backend.empty(send.shape, send.dtype) if g.rank == dst else None
    mpi_op = g.backend.op_of("sum" if op == ReduceOp.AVG else op, send.dtype.kind == "b")

    def finish():
        if recv is not None:
            out = _avg_divide(recv, g.size, g, tensor._device) if op == ReduceOp.AVG else recv
            _write(tensor, out, g)
    return _run(g, Work("reduce", lambda: g.backend.reduce(send, recv, mpi_op, dst), finish, _lazy(tensor)),
                async_op)


def all_to_all(output_tensor_list: list, input_tensor_list: list, group=None, async_op: bool = False):
    """Rank i sends `input_tensor_list[j]` to rank j, which receives it in `output_tensor_list[i]` (equal
    shapes and dtypes)."""
    g = _group(group, "all_to_all")
    if not input_tensor_list:
        raise ValueError("all_to_all: input_tensor_list is empty")
    like = input_tensor_list[0]
    _check_tensor(like, "all_to_all", "input_tensor_list[0]")
    _check_list(input_tensor_list, like, g.size, "all_to_all", "input_tensor_list")
    _check_list(output_tensor_list, like, g.size, "all_to_all", "output_tensor_list")
    _debug_check(g, "all_to_all", like)
    from ..ops.shape import stack
    with no_grad():
        send = g.backend.buffer(stack(list(input_tensor_list))._data)
    recv = g.backend.empty(send.shape, send.dtype)

    def finish():
        for i, out in enumerate(output_tensor_list):
            _write(out, recv[i], g)
    return _run(g, Work("all_to_all", lambda: g.backend.alltoall(send, recv), finish, _lazy(like)), async_op)


def broadcast(tensor: Tensor, src: int = 0, group=None, async_op: bool = False):
    g = _group(group, "broadcast")
    _check_tensor(tensor, "broadcast")
    _check_rank(src, g, "broadcast", "src")
    _debug_check(g, "broadcast", tensor, f"src={src}")
    if g.rank == src:
        buf = g.backend.buffer(tensor._data)
        finish = None
    else:
        buf = g.backend.empty(tuple(tensor.shape), tensor._data.dtype)

        def finish():
            _write(tensor, buf, g)
    return _run(g, Work("broadcast", lambda: g.backend.broadcast(buf, src), finish, _lazy(tensor)),
                async_op)


def _check_rank(r, g, op, name):
    if not isinstance(r, int) or not 0 <= r < g.size:
        raise ValueError(f"{op}: {name}={r!r} is not a rank of this group (world size {g.size})")


def _check_list(lst, like: Tensor, n: int, op: str, name: str):
    if not isinstance(lst, (list, tuple)) or len(lst) != n:
        raise ValueError(f"{op}: {name} must be a list of {n} tensors (the world size), got "
                         f"{len(lst) if isinstance(lst, (list, tuple)) else type(lst).__name__}")
    for i, t in enumerate(lst):
        _check_tensor(t, op, f"{name}[{i}]")
        if tuple(t.shape) != tuple(like.shape) or t.dtype != like.dtype:
            raise ValueError(f"{op}: {name}[{i}] has shape {tuple(t.shape)} and dtype {t.dtype}, expected "
                             f"{tuple(like.shape)} and {like.dtype}")


def all_gather(tensor_list: list, tensor: Tensor, group=None, async_op: bool = False):
    g = _group(group, "all_gather")
    _check_tensor(tensor, "all_gather")
    _check_list(tensor_list, tensor, g.size, "all_gather", "tensor_list")
    _debug_check(g, "all_gather", tensor)
    send = g.backend.buffer(tensor._data)
    recv = g.backend.empty((g.size,) + tuple(tensor.shape), send.dtype)

    def finish():
        for i, out in enumerate(tensor_list):
            _write(out, recv[i], g)
    return _run(g, Work("all_gather", lambda: g.backend.allgather(send, recv), finish, _lazy(tensor)),
                async_op)


def all_gather_into_tensor(output_tensor: Tensor, input_tensor: Tensor, group=None, async_op: bool = False):
    g = _group(group, "all_gather_into_tensor")
    _check_tensor(input_tensor, "all_gather_into_tensor", "input_tensor")
    _check_tensor(output_tensor, "all_gather_into_tensor", "output_tensor")
    if output_tensor.numel() != input_tensor.numel() * g.size or output_tensor.dtype != input_tensor.dtype:
        raise ValueError(f"all_gather_into_tensor: output {_describe(output_tensor)} must hold world size "
                         f"({g.size}) x input {_describe(input_tensor)}")
    _debug_check(g, "all_gather_into_tensor", input_tensor)
    send = g.backend.buffer(input_tensor._data)
    recv = g.backend.empty((g.size,) + tuple(input_tensor.shape), send.dtype)
    return _run(g, Work("all_gather_into_tensor", lambda: g.backend.allgather(send, recv),
                        lambda: _write(output_tensor, recv, g), _lazy(input_tensor)), async_op)


def _reduce_scatter(output: Tensor, flat: Tensor, op, g, name, async_op):
    send = _reduce_input(flat, g)
    recv = g.backend.empty((output.numel(),), send.dtype)
    mpi_op = g.backend.op_of("sum" if op == ReduceOp.AVG else op, send.dtype.kind == "b")

    def finish():
        out = _avg_divide(recv, g.size, g, output._device) if op == ReduceOp.AVG else recv
        _write(output, out, g)
    return _run(g, Work(name, lambda: g.backend.reduce_scatter(send, recv, mpi_op), finish, _lazy(output)),
                async_op)


def reduce_scatter(output: Tensor, input_list: list, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """Reduce `input_list[i]` over all ranks into `output` on rank i."""
    g = _group(group, "reduce_scatter")
    _check_tensor(output, "reduce_scatter", "output")
    _check_op(op, "reduce_scatter")
    _check_list(input_list, output, g.size, "reduce_scatter", "input_list")
    _debug_check(g, "reduce_scatter", output, f"op={op}")
    from ..ops.shape import cat
    with no_grad():
        flat = cat([t.reshape(-1) for t in input_list])
    return _reduce_scatter(output, flat, op, g, "reduce_scatter", async_op)


def reduce_scatter_tensor(output: Tensor, input: Tensor, op=ReduceOp.SUM, group=None, async_op: bool = False):
    g = _group(group, "reduce_scatter_tensor")
    _check_tensor(output, "reduce_scatter_tensor", "output")
    _check_tensor(input, "reduce_scatter_tensor", "input")
    _check_op(op, "reduce_scatter_tensor")
    if input.numel() != output.numel() * g.size:
        raise ValueError(f"reduce_scatter_tensor: input {_describe(input)} must hold world size ({g.size}) x "
                         f"output {_describe(output)}")
    _debug_check(g, "reduce_scatter_tensor", output, f"op={op}")
    return _reduce_scatter(output, input, op, g, "reduce_scatter_tensor", async_op)


def gather(tensor: Tensor, gather_list: list | None = None, dst: int = 0, group=None, async_op: bool = False):
    g = _group(group, "gather")
    _check_tensor(tensor, "gather")
    _check_rank(dst, g, "gather", "dst")
    if g.rank == dst:
        _check_list(gather_list, tensor, g.size, "gather", "gather_list")
    _debug_check(g, "gather", tensor, f"dst={dst}")
    send = g.backend.buffer(tensor._data)
    recv = g.backend.empty((g.size,) + tuple(tensor.shape), send.dtype) if g.rank == dst else None

    def finish():
        if recv is not None:
            for i, out in enumerate(gather_list):
                _write(out, recv[i], g)
    return _run(g, Work("gather", lambda: g.backend.gather(send, recv, dst), finish, _lazy(tensor)), async_op)


def scatter(tensor: Tensor, scatter_list: list | None = None, src: int = 0, group=None, async_op: bool = False):
    g = _group(group, "scatter")
    _check_tensor(tensor, "scatter")
    _check_rank(src, g, "scatter", "src")
    send = None
    if g.rank == src:
        _check_list(scatter_list, tensor, g.size, "scatter", "scatter_list")
        from ..ops.shape import stack
        with no_grad():
            send = g.backend.buffer(stack(list(scatter_list))._data)
    _debug_check(g, "scatter", tensor, f"src={src}")
    recv = g.backend.empty(tuple(tensor.shape), tensor._data.dtype)
    return _run(g, Work("scatter", lambda: g.backend.scatter(send, recv, src), lambda: _write(tensor, recv, g),
                        _lazy(tensor)), async_op)


def isend(tensor: Tensor, dst: int, group=None, tag: int = 0) -> Work:
    g = _group(group, "isend")
    _check_tensor(tensor, "isend")
    _check_rank(dst, g, "isend", "dst")
    buf = g.backend.buffer(tensor._data)
    return _run(g, Work("send", lambda: g.backend.send(buf, dst, tag), None,
                        lambda: f"{_describe(tensor)} to rank {dst}, tag {tag}"), True)


def irecv(tensor: Tensor, src: int | None = None, group=None, tag: int = 0) -> Work:
    """Receive into `tensor`; `wait()` then `result()` is the sender's rank (as `recv`'s return)."""
    g = _group(group, "irecv")
    _check_tensor(tensor, "irecv")
    if src is not None:
        _check_rank(src, g, "irecv", "src")
    buf = g.backend.empty(tuple(tensor.shape), tensor._data.dtype)
    work = Work("recv", lambda: g.backend.recv(buf, src, tag), None,
                lambda: f"{_describe(tensor)} from rank {'any' if src is None else src}, tag {tag}")
    work.statuses = g.backend.new_statuses(1)

    def finish():
        _write(tensor, buf, g)
        return src if src is not None else work.statuses[0].Get_source()
    work._finish = finish
    return _run(g, work, True)


def send(tensor: Tensor, dst: int, group=None, tag: int = 0) -> None:
    isend(tensor, dst, group, tag).wait()


def recv(tensor: Tensor, src: int | None = None, group=None, tag: int = 0) -> int:
    """Receive into `tensor` from `src` (None: any rank); returns the sender's rank."""
    w = irecv(tensor, src, group, tag)
    w.wait()
    return w.result()


def broadcast_object_list(object_list: list, src: int = 0, group=None, device=None) -> None:
    """Broadcast picklable objects from `src`; `object_list` is filled in place on the other ranks."""
    g = _group(group, "broadcast_object_list")
    _check_rank(src, g, "broadcast_object_list", "src")
    from ..backends import host
    _debug_check(g, "broadcast_object_list", None)
    if g.rank == src:
        payload = pickle.dumps(list(object_list))
        size = host.array([len(payload)], dtype=_dtype.int64.np)
    else:
        size = host.zeros((1,), _dtype.int64.np)
    g.engine.submit(Work("broadcast_object_list", lambda: g.backend.broadcast(size, src)), False)
    n = int(size[0])
    buf = host.array(bytearray(payload), dtype=_dtype.uint8.np) if g.rank == src else host.empty((n,), _dtype.uint8.np)
    g.engine.submit(Work("broadcast_object_list", lambda: g.backend.broadcast(buf, src)), False)
    if g.rank != src:
        objs = pickle.loads(buf.tobytes())
        if len(objs) != len(object_list):
            raise ValueError(f"broadcast_object_list: rank {src} sent {len(objs)} objects, this rank's list has "
                             f"{len(object_list)}")
        object_list[:] = objs


def all_gather_object(object_list: list, obj, group=None) -> None:
    g = _group(group, "all_gather_object")
    if not isinstance(object_list, list) or len(object_list) != g.size:
        raise ValueError(f"all_gather_object: object_list must be a list of world size ({g.size}) entries")
    from ..backends import host
    payload = pickle.dumps(obj)
    size = host.array([len(payload)], dtype=_dtype.int64.np)
    sizes = host.zeros((g.size, 1), _dtype.int64.np)
    g.engine.submit(Work("all_gather_object", lambda: g.backend.allgather(size, sizes)), False)
    width = int(sizes.max())
    send = host.zeros((width,), _dtype.uint8.np)
    send[:len(payload)] = host.array(bytearray(payload), dtype=_dtype.uint8.np)
    recv = host.empty((g.size, width), _dtype.uint8.np)
    g.engine.submit(Work("all_gather_object", lambda: g.backend.allgather(send, recv)), False)
    for r in range(g.size):
        object_list[r] = pickle.loads(recv[r, :int(sizes[r, 0])].tobytes())
