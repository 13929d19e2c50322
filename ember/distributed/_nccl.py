"""The NCCL backend: CUDA tensors reduced on the GPU by NCCL through CuPy (`cupy.cuda.nccl`, reached as the
cuda backend's `xp`, imported on first use). MPI starts the job and broadcasts NCCL's unique id from
rank 0. Every operation is enqueued on the backend's stream (after the current stream's work) and returns
a CUDA event that the engine polls against the deadline; on a timeout the communicator is aborted.

UNTESTED ON A REAL GPU at the time of writing (issue 15 was built on a machine without one): the tests
in tests/distributed/test_nccl.py are marked `cuda` and skip elsewhere.
"""
from __future__ import annotations


def _xp():
    from ..backends import get
    return get("cuda").xp


def is_available() -> bool:
    from ..backends import get, is_available as avail
    try:
        if not avail("cuda") or getattr(get("cuda"), "FAKE", False):
            return False
        _xp().cuda.nccl.get_version()
    except Exception:       # noqa: BLE001 - no CuPy, no NCCL build, no driver
        return False
    return True


class NCCLBackend:
    name = "nccl"

    def __init__(self, device_id=None):
        if not is_available():
            raise RuntimeError("init_process_group: backend 'nccl' needs a CUDA device and CuPy built with NCCL "
                               "(pip install cupy-cuda12x); use backend='mpi' on CPU")
        from ._mpi import mpi
        MPI = mpi()
        world = MPI.COMM_WORLD
        self.rank, self.size = world.Get_rank(), world.Get_size()
        xp = _xp()
        self.xp, self.nccl = xp, xp.cuda.nccl
        n_dev = xp.cuda.runtime.getDeviceCount()
        if device_id is None:
            dev = self.rank % n_dev
        else:
            dev = device_id if isinstance(device_id, int) else (getattr(device_id, "index", None) or 0)
        self.device_index = dev
        xp.cuda.Device(dev).use()
        uid = self.nccl.get_unique_id() if self.rank == 0 else None
        uid = world.bcast(uid, root=0)
        self.comm = self.nccl.NcclCommunicator(self.size, uid, self.rank)
        self.stream = xp.cuda.Stream(non_blocking=True)
        self._mpi = world

    # --- helpers ----------------------------------------------------------------------------------------
    def _dtype(self, dtype):
        n = self.nccl
        table = {"int8": n.NCCL_INT8, "uint8": n.NCCL_UINT8, "int32": n.NCCL_INT32, "int64": n.NCCL_INT64,
                 "float16": n.NCCL_FLOAT16, "float32": n.NCCL_FLOAT32, "float64": n.NCCL_FLOAT64}
        try:
            return table[dtype.name]
        except KeyError:
            raise TypeError(f"nccl backend: dtype {dtype} cannot be reduced by NCCL") from None

    def _begin(self):
        """The backend stream waits for the work already queued on the current stream (the tensor's producer)."""
        self.stream.wait_event(self.xp.cuda.get_current_stream().record())

    def _end(self):
        ev = self.xp.cuda.Event(block=False, disable_timing=True)
        ev.record(self.stream)
        return [ev]

    def _bytes(self, a):
        return a.reshape(-1).view(self.xp.uint8)

    # --- the interface used by ember.distributed._core --------------------------------------------------
    def op_of(self, name, is_bool):
        n = self.nccl
        return {"sum": n.NCCL_SUM, "product": n.NCCL_PROD, "max": n.NCCL_MAX, "min": n.NCCL_MIN}[name]

    def reducible(self, dtype) -> bool:
        return dtype.name in ("int8", "uint8", "int32", "int64", "float16", "float32", "float64")

    def buffer(self, data):
        if not isinstance(data, self.xp.ndarray):
            raise TypeError("nccl backend: collectives need CUDA tensors (tensor.cuda()); use backend='mpi' for "
                            "CPU tensors")
        return self.xp.ascontiguousarray(data)

    def empty(self, shape, dtype):
        return self.xp.empty(shape, dtype)

    def to_device(self, buf, device):
        return buf

    def allreduce(self, send, recv, op):
        self._begin()
        self.comm.allReduce(send.data.ptr, recv.data.ptr, send.size, self._dtype(send.dtype), op, self.stream.ptr)
        return self._end()

    def broadcast(self, buf, root):
        self._begin()
        b = self._bytes(buf)
        self.comm.broadcast(b.data.ptr, b.data.ptr, b.size, self.nccl.NCCL_UINT8, root, self.stream.ptr)
        return self._end()

    def allgather(self, send, recv):
        self._begin()
        s = self._bytes(send)
        self.comm.allGather(s.data.ptr, self._bytes(recv).data.ptr, s.size, self.nccl.NCCL_UINT8, self.stream.ptr)
        return self._end()

    def reduce_scatter(self, send, recv, op):
        self._begin()
        self.comm.reduceScatter(send.data.ptr, recv.data.ptr, recv.size, self._dtype(send.dtype), op,
                                self.stream.ptr)
        return self._end()

    def reduce(self, send, recv, op, root):
        self._begin()
        out = recv if recv is not None else self.xp.empty_like(send)
        self.comm.reduce(send.data.ptr, out.data.ptr, send.size, self._dtype(send.dtype), op, root, self.stream.ptr)
        return self._end()

    def alltoall(self, send, recv):
        pairs = [("send", send[r], r) for r in range(self.size)] + [("recv", recv[r], r) for r in range(self.size)]
        return self._grouped(pairs)

    def _grouped(self, pairs):
        """NCCL has no gather/scatter: a group of sends and receives (NCCL's own recipe)."""
        self._begin()
        self.nccl.groupStart()
        for kind, buf, peer in pairs:
            b = self._bytes(buf)
            if kind == "send":
                self.comm.send(b.data.ptr, b.size, self.nccl.NCCL_UINT8, peer, self.stream.ptr)
            else:
                self.comm.recv(b.data.ptr, b.size, self.nccl.NCCL_UINT8, peer, self.stream.ptr)
        self.nccl.groupEnd()
        return self._end()

    def gather(self, send, recv, root):
        pairs = [("send", send, root)]
        if self.rank == root:
            pairs += [("recv", recv[r], r) for r in range(self.size)]
        return self._grouped(pairs)

    def scatter(self, send, recv, root):
        pairs = [("recv", recv, root)]
        if self.rank == root:
            pairs += [("send", send[r], r) for r in range(self.size)]
        return self._grouped(pairs)

    def send(self, buf, dst, tag):
        return self._grouped([("send", buf, dst)])

    def recv(self, buf, src, tag):
        if src is None:
            raise ValueError("nccl backend: recv needs src (NCCL cannot receive from any rank)")
        return self._grouped([("recv", buf, src)])

    def new_statuses(self, n):
        return None

    def barrier(self):
        one = self.xp.ones(1, self.xp.float32)
        return self.allreduce(one, self.xp.empty_like(one), self.nccl.NCCL_SUM)

    def test(self, reqs, statuses=None) -> bool:
        return all(ev.done for ev in reqs)

    def abort(self, code=1):
        try:
            self.comm.abort()
        finally:
            self._mpi.Abort(code)

    def close(self):
        self.stream.synchronize()
        self.comm.destroy()
