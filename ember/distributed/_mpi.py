"""The MPI calls, through mpi4py (imported on first use). Every operation *starts* nonblocking requests
and returns them; `_engine` polls them against a deadline. Buffers are contiguous host arrays."""
from __future__ import annotations

import numpy as np

_MPI = None


def mpi():
    """mpi4py's MPI module (initialises MPI on first call)."""
    global _MPI
    if _MPI is None:
        try:
            import mpi4py
            mpi4py.rc.thread_level = "multiple"     # the communication thread and the caller both call MPI
            from mpi4py import MPI
        except ImportError as e:
            raise ImportError("ember.distributed backend 'mpi' needs mpi4py and an MPI library: "
                              "pip install ember[mpi]") from e
        _MPI = MPI
    return _MPI


def op_of(name: str, is_bool: bool):
    MPI = mpi()
    if is_bool:   # torch's bool reductions: sum/max = any, product/min = all
        return {"sum": MPI.LOR, "max": MPI.LOR, "product": MPI.LAND, "min": MPI.LAND}[name]
    return {"sum": MPI.SUM, "max": MPI.MAX, "min": MPI.MIN, "product": MPI.PROD}[name]


def as_bytes(a):
    """A 1-d uint8 view of a contiguous array (0-d included): data movement ignores the dtype."""
    return a.reshape(-1).view(np.uint8)


class MPIBackend:
    name = "mpi"

    def __init__(self):
        MPI = mpi()
        self.comm = MPI.COMM_WORLD.Dup()     # our own context: user MPI traffic cannot match ours
        self.rank = self.comm.Get_rank()
        self.size = self.comm.Get_size()

    # every method returns a list of requests (mpi4py Request objects)
    def allreduce(self, send, recv, op):
        return [self.comm.Iallreduce(send, recv, op)]

    def broadcast(self, buf, root):
        return [self.comm.Ibcast(as_bytes(buf), root)]

    def allgather(self, send, recv):
        return [self.comm.Iallgather(as_bytes(send), as_bytes(recv))]

    def reduce_scatter(self, send, recv, op):
        return [self.comm.Ireduce_scatter_block(send, recv, op)]

    def gather(self, send, recv, root):
        return [self.comm.Igather(as_bytes(send), as_bytes(recv) if recv is not None else None, root)]

    def scatter(self, send, recv, root):
        return [self.comm.Iscatter(as_bytes(send) if send is not None else None, as_bytes(recv), root)]

    def reduce(self, send, recv, op, root):
        return [self.comm.Ireduce(send, recv, op, root)]

    def alltoall(self, send, recv):
        return [self.comm.Ialltoall(as_bytes(send), as_bytes(recv))]

    def barrier(self):
        return [self.comm.Ibarrier()]

    def send(self, buf, dst, tag):
        return [self.comm.Isend(as_bytes(buf), dst, tag)]

    def recv(self, buf, src, tag):
        MPI = mpi()
        return [self.comm.Irecv(as_bytes(buf), MPI.ANY_SOURCE if src is None else src, tag)]

    def send_bytes(self, data: bytes, dst, tag):
        return [self.comm.Isend(data, dst, tag)]

    def probe(self, src, tag):
        """(source, tag, nbytes) of a waiting message, or None."""
        MPI = mpi()
        status = MPI.Status()
        if self.comm.Iprobe(MPI.ANY_SOURCE if src is None else src, MPI.ANY_TAG if tag is None else tag,
                            status):
            return status.Get_source(), status.Get_tag(), status.Get_count(MPI.BYTE)
        return None

    def op_of(self, name, is_bool):
        return op_of(name, is_bool)

    def test(self, reqs, statuses=None) -> bool:
        return mpi().Request.Testall(reqs, statuses)

    def new_statuses(self, n):
        return [mpi().Status() for _ in range(n)]

    def abort(self, code=1):
        mpi().COMM_WORLD.Abort(code)

    # --- buffers: contiguous host arrays -------------------------------------------------------------
    def buffer(self, data):
        """A contiguous host array holding `data` (a tensor's array; the same array when it is already a
        contiguous host array: read only)."""
        from ..backends import backend_of, host
        if type(data) is np.ndarray:
            return host.contiguous(data)
        return host.contiguous(backend_of(data).to_host(data))

    def empty(self, shape, dtype):
        from ..backends import host
        return host.empty(shape, dtype)

    def to_device(self, buf, device):
        from ..backends import get
        return get(device.type).from_host(buf, device)

    def reducible(self, dtype) -> bool:
        """Whether MPI reduces this dtype itself (bfloat16 and other ml_dtypes: no)."""
        return dtype.kind in "biufc" and dtype.name != "bfloat16"
