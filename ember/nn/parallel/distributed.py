"""DistributedDataParallel: one model replica per process, gradients averaged in buckets during backward.

Design (docs/distributed.md, "Buckets and hooks"): parameters go into buckets in reverse registration
order; each parameter's `register_post_accumulate_grad_hook` marks it ready; a full bucket is flattened
and all-reduced asynchronously (buckets launch strictly in index order, the same on every rank) while the
engine goes on with earlier layers; the last bucket's hook waits for all of them and writes the averaged
gradients back with `Assign`.
"""
from __future__ import annotations

import contextlib
import time

from ..module import Module
from ..._tensor import Tensor
from ...autograd.grad_mode import STATE, no_grad

__all__ = ["DistributedDataParallel"]

_FIRST_BUCKET_BYTES = 1024 * 1024      # torch's first-bucket cap: the first all-reduce starts early


def _dist():
    from ... import distributed
    return distributed


class _Bucket:
    __slots__ = ("index", "params", "names", "ready", "flat", "work", "numels")

    def __init__(self, index):
        self.index = index
        self.params = []
        self.names = []
        self.numels = []
        self.ready = set()
        self.flat = None
        self.work = None


class DistributedDataParallel(Module):
    """Data parallelism over processes (torch.nn.parallel.DistributedDataParallel).

    >>> dist.init_process_group("mpi")                     # under `ember run -n 2 train.py`
    >>> model = DistributedDataParallel(nn.Linear(4, 2))   # parameters broadcast from rank 0
    >>> loss = model(x).sum(); loss.backward()              # gradients averaged over ranks during backward
    >>> with model.no_sync(): model(x).sum().backward()     # accumulate locally, reduce on the next one
    """

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0,
                 broadcast_buffers: bool = True, process_group=None, bucket_cap_mb: float = 25,
                 find_unused_parameters: bool = False, check_reduction: bool = False,
                 gradient_as_bucket_view: bool = False, static_graph: bool = False):
        super().__init__()
        dist = _dist()
        if not dist.is_initialized():
            raise RuntimeError("DistributedDataParallel: Default process group has not been initialized, "
                               "please make sure to call init_process_group.")
        if not isinstance(module, Module):
            raise TypeError(f"DistributedDataParallel: module must be an nn.Module, got {type(module).__name__}")
        if bucket_cap_mb is None or bucket_cap_mb <= 0:
            raise ValueError(f"DistributedDataParallel: bucket_cap_mb must be positive, got {bucket_cap_mb}")
        self.module = module
        self.process_group = process_group
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.bucket_cap_mb = bucket_cap_mb
        self.require_backward_grad_sync = True
        self.unused_parameter_names: list[str] = []
        self.world_size = dist.get_world_size(process_group)
        named = []
        seen = set()
        for name, p in module.named_parameters():
            if p.requires_grad and id(p) not in seen:
                seen.add(id(p))
                named.append((name, p))
        if not named:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have any parameter "
                               "that requires a gradient.")
        self._named_params = named
        self._sync_from_rank0([p for _, p in module.named_parameters()] + list(module.buffers()))
        self._buckets = self._make_buckets(named, bucket_cap_mb)
        self._where = {}
        for b in self._buckets:
            for i, p in enumerate(b.params):
                self._where[id(p)] = (b, i)
        self._handles = [p.register_post_accumulate_grad_hook(self._grad_ready) for _, p in named]
        self._reset()
        # measured per backward: time spent inside the final wait (communication not hidden by backward)
        self.stats = {"reductions": 0, "wait_s": 0.0, "buckets": len(self._buckets)}

    # --- construction ----------------------------------------------------------------------------------
    def _sync_from_rank0(self, tensors):
        """Broadcast tensors from rank 0: one flat buffer per dtype, written back with Assign."""
        if self.world_size == 1 or not tensors:
            return
        from ...ops.inplace import assign
        from ...ops.shape import cat
        by_dtype = {}
        for t in tensors:
            by_dtype.setdefault((t.dtype, t.device), []).append(t)
        dist = _dist()
        with no_grad():
            for group in by_dtype.values():
                flat = cat([t.detach().reshape(-1) for t in group])
                dist.broadcast(flat, 0, self.process_group)
                off = 0
                for t in group:
                    n = t.numel()
                    assign(t, flat[off:off + n].reshape(t.shape))
                    off += n

    @staticmethod
    def _make_buckets(named, cap_mb):
        cap = int(cap_mb * 1024 * 1024)
        buckets = []
        open_by_kind = {}     # (dtype, device) -> (bucket, bytes so far)
        for name, p in reversed(named):    # gradients of the last layers are ready first
            kind = (p.dtype, p.device)
            cur = open_by_kind.get(kind)
            nbytes = p.numel() * p.dtype.itemsize
            limit = cap if cur is None or cur[0].index > 0 else min(cap, _FIRST_BUCKET_BYTES)
            if cur is None or cur[1] + nbytes > limit:
                b = _Bucket(len(buckets))
                buckets.append(b)
                cur = (b, 0)
            cur[0].params.append(p)
            cur[0].names.append(name)
            cur[0].numels.append(p.numel())
            open_by_kind[kind] = (cur[0], cur[1] + nbytes)
        return buckets

    # --- per iteration ---------------------------------------------------------------------------------
    def _reset(self):
        for b in self._buckets:
            b.ready = set()
            b.flat = None
            b.work = None
        self._next = 0
        self._started = False       # a hook fired this iteration
        self._used = set()          # ids of parameters with a local gradient this iteration
        self._unused_local = set()

    def _check_finished(self):
        if self._started and self._next < len(self._buckets):
            missing = [n for b in self._buckets[self._next:] for p, n in zip(b.params, b.names)
                       if id(p) not in b.ready]
            rank = _dist().get_rank()
            self._reset()
            raise RuntimeError(
                "DistributedDataParallel: Expected to have finished reduction in the prior iteration before "
                "starting a new one. This error indicates that your module has parameters that were not used in "
                "producing loss. You can enable unused parameter detection by passing the keyword argument "
                "`find_unused_parameters=True` to `DistributedDataParallel`, and by making sure all `forward` "
                "function outputs participate in calculating loss. Parameters which did not receive grad for "
                f"rank {rank}: {', '.join(missing)}")

    def forward(self, *inputs, **kwargs):
        self._check_finished()
        self._reset()
        if self.broadcast_buffers and self.world_size > 1:
            bufs = list(self.module.buffers())
            if bufs:
                self._sync_from_rank0(bufs)
        out = self.module(*inputs, **kwargs)
        if STATE.enabled and self.require_backward_grad_sync and self.find_unused_parameters:
            reached = _leaves_reached(_tensors_in(out))
            for name, p in self._named_params:
                if id(p) not in reached:
                    self._unused_local.add(id(p))
            # the parameters this forward did not use on this rank (they contribute zeros), by name
            self.unused_parameter_names = [n for n, p in self._named_params if id(p) in self._unused_local]
            for pid in list(self._unused_local):     # ready now: they contribute zeros
                b, _ = self._where[pid]
                self._mark_ready(b, pid, from_hook=False)
        return out

    @contextlib.contextmanager
    def no_sync(self):
        """Gradients accumulate locally inside; the first backward after it reduces the sums."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    def _grad_ready(self, p):
        if not self.require_backward_grad_sync:
            return
        b, _ = self._where[id(p)]
        self._used.add(id(p))
        self._mark_ready(b, id(p))

    def _mark_ready(self, b, pid, from_hook=True):
        if pid in b.ready:
            return
        self._started = self._started or from_hook
        b.ready.add(pid)
        # launch in index order only: every rank issues the same sequence of all-reduces
        while self._next < len(self._buckets) and \
                len(self._buckets[self._next].ready) == len(self._buckets[self._next].params):
            self._launch(self._buckets[self._next])
            self._next += 1
        if self._next == len(self._buckets):
            self._finalize()

    def _launch(self, b):
        from ...ops.creation import zeros
        from ...ops.shape import cat
        parts = []
        with no_grad():
            for p in b.params:
                g = p.grad if id(p) not in self._unused_local else None
                parts.append(g.reshape(-1) if g is not None else zeros(p.numel(), dtype=p.dtype, device=p.device))
            flat = cat(parts) if len(parts) > 1 else parts[0].clone()
            if self.world_size > 1:
                flat = flat / self.world_size
        b.flat = flat
        if self.world_size > 1:
            b.work = _dist().all_reduce(flat, group=self.process_group, async_op=True)

    def _finalize(self):
        from ...ops.inplace import assign
        t0 = time.perf_counter()
        dist = _dist()
        globally_used = None
        if self.find_unused_parameters:
            from ...ops.creation import tensor as make
            mask = make([1.0 if id(p) in self._used else 0.0 for _, p in self._named_params])
            if self.world_size > 1:
                dist.all_reduce(mask, group=self.process_group)
            globally_used = {id(p) for (_, p), m in zip(self._named_params, mask.tolist()) if m > 0}
        for b in self._buckets:
            if b.work is not None:
                b.work.wait()
        self.stats["wait_s"] += time.perf_counter() - t0
        self.stats["reductions"] += 1
        with no_grad():
            for b in self._buckets:
                off = 0
                for p, n in zip(b.params, b.numels):
                    piece = b.flat[off:off + n].reshape(p.shape)
                    off += n
                    if globally_used is not None and id(p) not in globally_used:
                        continue       # unused on every rank: .grad untouched (torch's rule)
                    if p.grad is None:
                        p.grad = piece.clone()
                    else:
                        assign(p.grad, piece)
        self._reset()

    def extra_repr(self) -> str:
        return f"world_size={self.world_size}, buckets={len(self._buckets)}, bucket_cap_mb={self.bucket_cap_mb}"


def _tensors_in(obj):
    if isinstance(obj, Tensor):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [t for o in obj for t in _tensors_in(o)]
    if isinstance(obj, dict):
        return [t for o in obj.values() for t in _tensors_in(o)]
    return []


def _leaves_reached(outputs):
    """ids of the leaf tensors the graph of `outputs` reaches (an iterative walk)."""
    leaves, seen, stack = set(), set(), []
    for t in outputs:
        if t._node is None:
            leaves.add(id(t))
        elif t._node not in seen:
            seen.add(t._node)
            stack.append(t._node)
    while stack:
        node = stack.pop()
        for e in node.parents:
            if e is None:
                continue
            p, i = e
            if i < 0:
                leaves.add(id(p))
            elif p not in seen:
                seen.add(p)
                stack.append(p)
    return leaves
