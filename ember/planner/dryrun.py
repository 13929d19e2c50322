"""Runs of a model for the planner: on `meta` (no memory) under a `Tracker`, and for real on the CPU
under tracemalloc (the measured peak the plan is checked against).

- `meta_twin(model, dtype)`: a copy of the model whose parameters and buffers are meta tensors; the
  user's model is not touched and no weight is copied.
- `count_forward(twin, x)`: one forward with a row per module call (output shape, parameters,
  activation values, multiply-adds), the notes' per-layer accounting.
- `dry_run_step(...)`: forward, loss, backward, optimizer step and zero_grad, twice (the first step
  makes the optimizer state), followed byte by byte: the peak, and what the graph keeps for backward.
- `measure_training_peak(...)`: the same steps on real arrays, peak from tracemalloc (NumPy reports
  its allocations to it).
"""
from __future__ import annotations

import copy
import gc
import tracemalloc
from dataclasses import dataclass

from .. import _dtype
from .._device import device as _device
from .._tensor import Tensor
from ..nn import functional as F
from ..nn.dropout import _DropoutNd
from ..nn.module import Module
from ..nn.parameter import Parameter
from ..ops.creation import empty
from .tracker import Tracker

__all__ = ["PlanError", "meta_twin", "count_forward", "dry_run_step", "measure_training_peak",
           "make_optimizer", "OPTIMIZERS", "default_loss", "Row", "StepPlan"]

META = _device("meta")

# name -> (optimizer factory, the notes' multiple of the weights: weights, grads, optimizer state)
OPTIMIZERS = {
    "sgd": (lambda ps: _optim().SGD(ps, lr=0.01), 2),
    "sgd-momentum": (lambda ps: _optim().SGD(ps, lr=0.01, momentum=0.9), 3),
    "adam": (lambda ps: _optim().Adam(ps, lr=1e-3), 4),
    "adamw": (lambda ps: _optim().AdamW(ps, lr=1e-3), 4),
}


def _optim():
    from .. import optim
    return optim


class PlanError(RuntimeError):
    """A model the planner cannot run on meta: names the layer (module path) and the op."""


def check_optimizer(name: str) -> str:
    key = str(name).lower().replace("_", "-").replace("+", "-").replace(" ", "-")
    key = {"momentum": "sgd-momentum", "sgdm": "sgd-momentum"}.get(key, key)
    if key not in OPTIMIZERS:
        raise ValueError(f"planner: unknown optimizer {name!r}; known: {', '.join(OPTIMIZERS)}")
    return key


def make_optimizer(name: str, params):
    return OPTIMIZERS[check_optimizer(name)][0](list(params))


def default_loss(out: Tensor, target: Tensor) -> Tensor:
    """Cross-entropy over the last dim (a classifier's (N, C), a language model's (B, T, V))."""
    return F.cross_entropy(out.reshape(-1, out.shape[-1]), target.reshape(-1))


def target_shape(out_shape) -> tuple:
    """The integer targets default_loss takes for an output of `out_shape`."""
    return tuple(out_shape[:-1]) if len(out_shape) > 1 else (1,)


# ---------------------------------------------------------------- the meta twin
def _meta_like(t: Tensor, dtype) -> Tensor:
    dt = dtype if (dtype is not None and t.dtype.is_floating_point) else t.dtype
    return empty(*t.shape, dtype=dt, device=META)


def meta_twin(model: Module, dtype=None) -> Module:
    """A deep copy of `model` whose parameters, buffers and tensor attributes are meta tensors (of
    `dtype` for floating ones, when given). Nothing of the original is read or changed."""
    memo: dict = {}
    for m in model.modules():
        for store in ("_parameters", "_buffers"):
            for t in m.__dict__[store].values():
                if t is None or id(t) in memo:
                    continue
                new = _meta_like(t, dtype)
                if isinstance(t, Parameter):
                    new = Parameter(new, requires_grad=t.requires_grad)
                memo[id(t)] = new
        for v in m.__dict__.values():     # tensors kept as plain attributes (a causal mask, a table)
            if isinstance(v, Tensor) and id(v) not in memo:
                memo[id(v)] = _meta_like(v, dtype)
    return copy.deepcopy(model, memo)


def _op_name(prim) -> str:
    return prim.__new__(prim).op_name


def _plan_error(model, tracker: Tracker, stack_at_failure, exc) -> PlanError:
    where = stack_at_failure[-1] if stack_at_failure else None
    if where is None:   # no module running: dry_run_step's loss
        layer = "the loss, outside the model"
    elif where == "":
        layer = "the model's own forward"
    else:
        mod = dict(model.named_modules()).get(where)
        layer = f"layer '{where}'" + (f" ({type(mod).__name__})" if mod is not None else "")
    if tracker.failed is not None and tracker.failed[2] is exc:   # not an earlier failure the model caught
        op = f"op '{_op_name(tracker.failed[0])}'"
    else:
        op = "code outside a primitive (it reads values)"
    return PlanError(f"summary: the model cannot run on device='meta': {layer}, {op} failed: "
                     f"{type(exc).__name__}: {exc}")


# ---------------------------------------------------------------- the per-layer forward
@dataclass
class Row:
    """One module call of the counting forward."""
    name: str               # module path ('' for the model itself)
    kind: str               # class name
    depth: int
    leaf: bool
    output_shape: tuple = ()
    params: int = 0         # parameters it owns directly (counted on its first call)
    activations: int = 0    # activation values of the whole batch (the notes' rule)
    macs: int = 0           # multiply-adds of its own calls, whole batch
    flops: int = 0


def _tensors(obj):
    if isinstance(obj, Tensor):
        yield obj
    elif isinstance(obj, (tuple, list)):
        for o in obj:
            yield from _tensors(o)
    elif isinstance(obj, dict):
        for o in obj.values():
            yield from _tensors(o)


def _shape_of(out):
    ts = list(_tensors(out))
    if len(ts) == 1:
        return tuple(ts[0].shape)
    return tuple(tuple(t.shape) for t in ts)


def count_forward(twin: Module, x: Tensor):
    """Run `twin(x)` on meta with a row per module call. Returns (rows, output, tracker)."""
    names = {id(m): n for n, m in twin.named_modules()}
    tracker = Tracker()
    rows: list[Row] = []
    open_rows: list[tuple[Row, int, int]] = []
    seen_params: set = set()
    handles = []

    def pre(mod, args):
        path = names.get(id(mod), "?")
        leaf = not any(True for _ in mod.children())
        own = [p for p in mod.parameters(recurse=False) if id(p) not in seen_params]
        seen_params.update(id(p) for p in own)
        row = Row(path, type(mod).__name__, path.count(".") + (path != ""), leaf,
                  params=sum(p.numel() for p in own))
        rows.append(row)
        tracker.stack.append(path)
        open_rows.append((row, tracker.macs.get(path, 0), tracker.flops.get(path, 0)))

    def post(mod, args, out):
        row, macs0, flops0 = open_rows.pop()
        path = tracker.stack.pop()
        row.macs = tracker.macs.get(path, 0) - macs0
        row.flops = tracker.flops.get(path, 0) - flops0
        row.output_shape = _shape_of(out)
        # the notes' rule: an in-place activation (`inplace=True`: in torch it overwrites its input; in
        # Ember it does so only outside autograd) and dropout add no activation, nor does a view
        if row.leaf and not isinstance(mod, _DropoutNd) and not getattr(mod, "inplace", False):
            ins = [t._data for t in _tensors(args)]
            for t in _tensors(out):
                if not any(tracker.shares(t._data, a) for a in ins):
                    row.activations += t.numel()

    for m in twin.modules():
        handles.append(m.register_forward_pre_hook(pre))
        handles.append(m.register_forward_hook(post))
    try:
        with tracker:
            tracker.track(x._data)
            try:
                out = twin(x)
            except Exception as e:
                raise _plan_error(twin, tracker, list(tracker.stack), e) from e
    finally:
        for h in handles:
            h.remove()
    return rows, out, tracker


# ---------------------------------------------------------------- the training step, planned
@dataclass
class StepPlan:
    """What a dry run of training steps found (bytes unless said)."""
    batch_size: int
    optimizer: str
    peak: int               # the most bytes live at once, scratch included: the planned peak
    saved: int              # what the graph keeps for backward after forward and loss (the loss included)
    resident: int           # parameters, buffers, the batch and its targets before the first step
    state: int              # live after a whole step: resident + optimizer state
    step_macs: int          # multiply-adds of one step (forward, backward, update)
    step_flops: int


def make_batch(input_size, batch_size, input_dtype, dev=META):
    """A meta batch of `batch_size` inputs of `input_size` (no values: nothing reads them)."""
    return empty(batch_size, *input_size, dtype=input_dtype, device=dev)


def dry_run_step(model: Module, input_size, batch_size: int, optimizer: str = "sgd-momentum", dtype=None,
                 input_dtype=None, loss_fn=None, steps: int = 2) -> StepPlan:
    """Plan `steps` training steps of `model` at `batch_size` on meta (see the module docstring)."""
    opt_name = check_optimizer(optimizer)
    dt = _dtype.to_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()
    in_dt = _dtype.to_dtype(input_dtype) if input_dtype is not None else dt
    loss_fn = loss_fn or default_loss
    twin = meta_twin(model, dt)
    twin.train()
    tracker = Tracker()
    stack: list = []
    with tracker:
        for t in list(twin.parameters()) + list(twin.buffers()):
            tracker.track(t._data)
        x = make_batch(input_size, batch_size, in_dt)
        tracker.track(x._data)
        opt = make_optimizer(opt_name, twin.parameters())
        names = {id(m): n for n, m in twin.named_modules()}

        def push(mod, args):
            tracker.stack.append(names[id(mod)])

        def pop(mod, args, out):
            tracker.stack.pop()
        handles = [m.register_forward_pre_hook(push) for m in twin.modules()]
        handles += [m.register_forward_hook(pop) for m in twin.modules()]
        try:
            target = None
            resident = saved = macs0 = flops0 = 0
            for step in range(steps):
                if step == steps - 1:
                    macs0, flops0 = sum(tracker.macs.values()), sum(tracker.flops.values())
                before = tracker.live
                try:
                    out = twin(x)
                    if target is None:
                        target = empty(*target_shape(out.shape), dtype=_dtype.int64, device=META)
                        tracker.track(target._data)
                        before += target._data.nbytes
                        resident = before
                    loss = loss_fn(out, target)
                except Exception as e:
                    stack = list(tracker.stack)
                    raise _plan_error(twin, tracker, stack, e) from e
                del out
                if step == 0:
                    saved = tracker.live - before
                loss.backward()
                del loss
                opt.step()
                opt.zero_grad()
        finally:
            for h in handles:
                h.remove()
        state = tracker.live
    return StepPlan(batch_size, opt_name, tracker.peak, saved, resident, state,
                    sum(tracker.macs.values()) - macs0, sum(tracker.flops.values()) - flops0)


# ---------------------------------------------------------------- the training step, measured
def _step(model, opt, x, target, loss_fn):
    out = model(x)
    loss = loss_fn(out, target)
    del out
    loss.backward()
    del loss
    opt.step()
    opt.zero_grad()


def measure_training_peak(model: Module, x: Tensor, target: Tensor, optimizer: str = "sgd-momentum",
                          loss_fn=None, steps: int = 2) -> int:
    """Peak bytes of `steps` real training steps of a copy of `model` (CPU): the parameters, buffers,
    batch and targets, plus the peak tracemalloc sees above them (NumPy reports its allocations)."""
    loss_fn = loss_fn or default_loss
    # one step on another copy first, untraced: compiled CPU kernels (numba) are built on their first
    # call, and the compiler's own allocations are not the step's
    warm = copy.deepcopy(model)
    warm.train()
    _step(warm, make_optimizer(optimizer, warm.parameters()), x, target, loss_fn)
    del warm
    real = copy.deepcopy(model)
    real.train()
    opt = make_optimizer(optimizer, real.parameters())
    resident = sum(t._data.nbytes for t in list(real.parameters()) + list(real.buffers()))
    resident += x._data.nbytes + target._data.nbytes
    gc.collect()
    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        for _ in range(steps):
            _step(real, opt, x, target, loss_fn)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        if not was_tracing:
            tracemalloc.stop()
    return resident + peak
