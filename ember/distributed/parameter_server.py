"""Parameter-server training over MPI point-to-point messages: rank 0 holds the weights and the optimizer,
the other ranks are workers.

async (the notes' asynchronous training): a worker sends its gradient, tagged with the weight version it
was computed on, and receives the newest weights; it never waits for another worker. The server applies
each gradient as it arrives. Staleness = the server's version on arrival - the worker's version;
`max_staleness=s` drops gradients staler than `s` (the worker gets fresh weights and goes on). The
staleness of every gradient is recorded (`stats`).

sync: the server waits for one gradient from every worker, averages them, steps once and sends the new
weights to all (synchronous SGD through a server; DDP does the same with an all-reduce).

    ps = ParameterServer(model, lambda params: ember.optim.SGD(params, lr=0.1), mode="async", max_staleness=4)
    if ps.is_server:
        stats = ps.serve()                 # until every worker has called finish()
    else:
        for x, y in loader:
            F.cross_entropy(model(x), y).backward()
            ps.step()                      # push the gradient, pull the newest weights, zero the gradient
        ps.finish()
"""
from __future__ import annotations

import collections
import time

from .._tensor import Tensor
from ..autograd.grad_mode import no_grad
from . import _core as dist

__all__ = ["ParameterServer"]

_HDR, _PAYLOAD, _WEIGHTS_HDR, _WEIGHTS = 7101, 7102, 7103, 7104
_GRAD, _DONE = 1, 2


class ParameterServer:
    def __init__(self, model, make_optimizer=None, mode: str = "async", max_staleness: int | None = None,
                 server_rank: int = 0):
        if mode not in ("async", "sync"):
            raise ValueError(f"ParameterServer: mode must be 'async' or 'sync', got {mode!r}")
        if max_staleness is not None and max_staleness < 0:
            raise ValueError(f"ParameterServer: max_staleness must be >= 0 or None, got {max_staleness}")
        if dist.get_world_size() < 2:
            raise RuntimeError("ParameterServer: needs a server and at least one worker (ember run -n 2 or more)")
        self.model = model
        self.mode = mode
        self.max_staleness = max_staleness
        self.server = server_rank
        self.rank = dist.get_rank()
        self.is_server = self.rank == server_rank
        self.workers = [r for r in range(dist.get_world_size()) if r != server_rank]
        self.params = [p for p in model.parameters() if p.requires_grad]
        dtypes = {p.dtype for p in self.params}
        if len(dtypes) != 1:
            raise ValueError(f"ParameterServer: all parameters must share one dtype, got {sorted(map(str, dtypes))}")
        self.dtype = dtypes.pop()
        self.numel = sum(p.numel() for p in self.params)
        self.version = 0
        self.stats = {"applied": 0, "dropped": 0, "staleness": collections.Counter(), "per_worker": {}}
        self.optimizer = make_optimizer(self.params) if self.is_server and make_optimizer else None
        if self.is_server:
            if self.optimizer is None:
                raise ValueError("ParameterServer: the server needs make_optimizer(params) -> optimizer")
            for w in self.workers:
                self._send_weights(w)
        else:
            self._pull()

    # --- flat buffers -------------------------------------------------------------------------------------
    def _flat(self, tensors):
        from ..ops.shape import cat
        with no_grad():
            return cat([t.detach().reshape(-1) for t in tensors])

    def _unflatten_into(self, flat: Tensor, targets, grads: bool):
        from ..ops.inplace import assign
        off = 0
        with no_grad():
            for p in self.params if grads else targets:
                n = p.numel()
                piece = flat[off:off + n].reshape(p.shape)
                off += n
                if grads:
                    if p.grad is None:
                        p.grad = piece.clone()
                    else:
                        assign(p.grad, piece)
                else:
                    assign(p, piece)

    def _header(self, kind, version):
        from ..ops.creation import tensor
        return tensor([kind, version], dtype=_int64())

    # --- server -------------------------------------------------------------------------------------------
    def _send_weights(self, worker):
        dist.isend(self._header(_GRAD, self.version), worker, tag=_WEIGHTS_HDR).wait()
        dist.isend(self._flat(self.params), worker, tag=_WEIGHTS).wait()

    def _recv_from_any(self):
        """(worker, kind, version, gradient or None) of the next message from any worker."""
        from ..ops.creation import zeros
        hdr = zeros(2, dtype=_int64())
        src = dist.recv(hdr, None, tag=_HDR)
        kind, version = (int(v) for v in hdr.tolist())
        grad = None
        if kind == _GRAD:
            grad = zeros(self.numel, dtype=self.dtype)
            dist.recv(grad, src, tag=_PAYLOAD)
        return src, kind, version, grad

    def _apply(self, grad: Tensor):
        self.optimizer.zero_grad()
        self._unflatten_into(grad, None, grads=True)
        self.optimizer.step()
        self.version += 1
        self.stats["applied"] += 1

    def serve(self, on_update=None) -> dict:
        """Run the server until every worker has called `finish()`; returns `stats` (staleness histogram,
        applied and dropped gradients, per-worker counts, wall time). `on_update(ps)` runs after each
        update (an evaluation every k versions, for instance)."""
        if not self.is_server:
            raise RuntimeError("ParameterServer.serve: only the server rank serves")
        t0 = time.perf_counter()
        active = set(self.workers)
        pending = {}          # sync mode: worker -> gradient of this round
        while active:
            src, kind, version, grad = self._recv_from_any()
            if kind == _DONE:
                active.discard(src)
                pending.pop(src, None)
            elif self.mode == "async":
                staleness = self.version - version
                self.stats["per_worker"][src] = self.stats["per_worker"].get(src, 0) + 1
                if self.max_staleness is not None and staleness > self.max_staleness:
                    self.stats["dropped"] += 1
                else:
                    self.stats["staleness"][staleness] += 1
                    self._apply(grad)
                    if on_update is not None:
                        on_update(self)
                self._send_weights(src)
            else:
                pending[src] = grad
                self.stats["per_worker"][src] = self.stats["per_worker"].get(src, 0) + 1
            if self.mode == "sync" and pending and set(pending) >= active:
                with no_grad():
                    total = pending.popitem()[1]
                    n = 1
                    while pending:
                        total = total + pending.popitem()[1]
                        n += 1
                self._apply(total / n)
                self.stats["staleness"][0] += 1
                if on_update is not None:
                    on_update(self)
                for w in sorted(active):
                    self._send_weights(w)
        self.stats["wall_s"] = time.perf_counter() - t0
        st = self.stats["staleness"]
        count = sum(st.values())
        self.stats["staleness_mean"] = sum(k * v for k, v in st.items()) / count if count else 0.0
        self.stats["staleness_max"] = max(st) if st else 0
        return self.stats

    # --- worker -------------------------------------------------------------------------------------------
    def _pull(self):
        from ..ops.creation import zeros
        hdr = zeros(2, dtype=_int64())
        dist.recv(hdr, self.server, tag=_WEIGHTS_HDR)
        flat = zeros(self.numel, dtype=self.dtype)
        dist.recv(flat, self.server, tag=_WEIGHTS)
        self._unflatten_into(flat, self.params, grads=False)
        self.version = int(hdr.tolist()[1])

    def step(self):
        """Worker: send this step's gradient, receive the newest weights into the model, zero the grads."""
        if self.is_server:
            raise RuntimeError("ParameterServer.step: the server does not compute gradients; call serve()")
        from ..ops.creation import zeros_like
        grads = [p.grad if p.grad is not None else zeros_like(p) for p in self.params]
        a = dist.isend(self._header(_GRAD, self.version), self.server, tag=_HDR)
        b = dist.isend(self._flat(grads), self.server, tag=_PAYLOAD)
        for p in self.params:
            p.grad = None
        self._pull()      # waits for the server only, never for another worker (async mode)
        a.wait()
        b.wait()

    def finish(self):
        """Worker: tell the server this worker is done."""
        dist.isend(self._header(_DONE, self.version), self.server, tag=_HDR).wait()


def _int64():
    from .. import _dtype
    return _dtype.int64
