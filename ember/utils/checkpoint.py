"""Activation checkpointing: `ember.utils.checkpoint.checkpoint` and `checkpoint_sequential`
(torch.utils.checkpoint). Trade compute for memory: a checkpointed piece of the model keeps none of
its activations for the backward; the backward runs the piece again, with gradients on, and
differentiates that.

    out = checkpoint(block, x, use_reentrant=False)   # block's activations are not kept
    out.sum().backward()                              # block(x) runs again here

How it works, in one custom `Function` (`_Checkpoint`):

1. forward: the piece runs once under `no_grad`, inside a dispatch mode (`_Reads`) that notes every
   tensor from outside the piece that requires grad and that a primitive reads (parameters, captured
   tensors: under `no_grad` nothing made inside requires grad). Those tensors and the tensor arguments
   become the Function's inputs, so its node has an edge to each of them; the RNG state is kept.
2. backward: the RNG state is put back for the duration (dropout draws the same masks) and the
   autocast state of the first run is restored (its dtypes again), the piece runs again with gradients on from detached copies of the arguments, and `autograd.grad` of its
   outputs gives the gradient of every input, parameters included; the engine routes them on as for
   any node. So `backward()`, `autograd.grad` (towards the arguments or the parameters), hooks and a
   double backward (`create_graph`) work the same in both of torch's variants (`use_reentrant`).

What is kept: the arguments, the RNG state and the list of tensors read, not the activations. As in
torch, a module that changes state when it runs (BatchNorm's running statistics in training mode)
changes it again in the recomputation.
"""
from __future__ import annotations

import contextlib
import warnings

from .._tensor import Tensor
from ..autograd import grad as _autograd_grad
from ..autograd.dispatch import DispatchMode
from ..autograd.function import Function
from ..autograd.grad_mode import enable_grad, is_grad_enabled, no_grad
from .. import random as _random

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError"]


class CheckpointError(RuntimeError):
    """The recomputation did not give outputs of the shapes, dtypes and devices of the first run."""


class _Reads(DispatchMode):
    """Notes the tensors requiring grad that primitives read (under no_grad: those from outside)."""

    def __init__(self):
        self.found: dict[int, Tensor] = {}

    def __ember_dispatch__(self, prim, inputs, attrs):
        for t in inputs:
            if isinstance(t, Tensor) and t.requires_grad and id(t) not in self.found:
                self.found[id(t)] = t
        return prim.apply(*inputs, **attrs)


def _flat(out):
    """(tensors, rebuild): the tensors of a tensor / tuple / list / dict output, and a function putting
    new tensors back into the same structure."""
    if isinstance(out, Tensor):
        return [out], lambda ts: ts[0]
    if isinstance(out, (tuple, list)):
        parts = [_flat(o) for o in out]
        sizes = [len(p[0]) for p in parts]

        def rebuild(ts):
            items, i = [], 0
            for (_, rb), n in zip(parts, sizes):
                items.append(rb(ts[i:i + n]))
                i += n
            return type(out)(items) if not hasattr(out, "_fields") else type(out)(*items)
        return [t for p in parts for t in p[0]], rebuild
    if isinstance(out, dict):
        keys = list(out)
        inner, rb = _flat([out[k] for k in keys])
        return inner, lambda ts: dict(zip(keys, rb(ts)))
    return [], lambda ts: out


def _meta(t):
    return tuple(t.shape), t.dtype, t.device


class _Checkpoint(Function):
    """Inputs: the run description `spec`, then the tensor arguments, then the tensors read."""

    @staticmethod
    def forward(ctx, spec, *tensors):
        ctx.spec = spec
        ctx.save_for_backward(*tensors)
        return tuple(t.detach() for t in spec.outputs)

    @staticmethod
    def backward(ctx, *grads):
        spec = ctx.spec
        tensors = ctx.saved_tensors
        n_args = spec.n_tensor_args
        create = is_grad_enabled()   # create_graph of the backward that runs this one
        args_in = [t.detach().requires_grad_(t.requires_grad) if t.is_floating_point() else t.detach()
                   for t in tensors[:n_args]]
        read = list(tensors[n_args:])
        args = list(spec.args)
        for pos, t in zip(spec.tensor_positions, args_in):
            args[pos] = t
        state = _random.get_rng_state()
        if spec.rng_state is not None:
            _random.set_rng_state(spec.rng_state)
        try:
            with enable_grad(), _autocast_as(spec.autocast), spec.recompute_context:
                outs, _ = _flat(spec.function(*args, **spec.kwargs))
        finally:
            _random.set_rng_state(state)
        if spec.check and [_meta(t) for t in outs] != spec.outputs:
            raise CheckpointError(
                "checkpoint: the recomputation gave outputs "
                f"{[_meta(t) for t in outs]} where the first run gave {spec.outputs} "
                "(shape, dtype, device); the function must run the same way both times "
                "(determinism_check='none' turns this check off)")
        pairs = [(o, g) for o, g in zip(outs, grads) if g is not None and o.requires_grad]
        wrt = [t for t in args_in + read if t.requires_grad]
        found = iter(_autograd_grad([o for o, _ in pairs], wrt, grad_outputs=[g for _, g in pairs],
                                    create_graph=create, allow_unused=True) if pairs and wrt else [None] * len(wrt))
        res = [next(found) if t.requires_grad else None for t in args_in + read]
        return (None, *res)


def _autocast_state():
    from .. import amp
    return [(d, amp.is_autocast_enabled(d), amp.get_autocast_dtype(d), amp.is_autocast_cache_enabled())
            for d in ("cpu", "cuda")]


def _autocast_as(state):
    """The autocast of the first run again, for the recomputation (the backward runs outside it)."""
    from .. import amp
    stack = contextlib.ExitStack()
    for device, enabled, dtype, cache in state:
        stack.enter_context(amp.autocast(device, dtype=dtype, enabled=enabled, cache_enabled=cache))
    return stack


class _Spec:
    """What the backward needs to run the piece again (kept on the node, not the activations)."""
    __slots__ = ("function", "args", "kwargs", "tensor_positions", "n_tensor_args", "rng_state", "outputs",
                 "check", "recompute_context", "autocast")


def checkpoint(function, *args, use_reentrant: bool | None = None, context_fn=None,
               determinism_check: str = "default", debug: bool = False, early_stop: bool = True,
               preserve_rng_state: bool = True, **kwargs):
    """Run `function(*args, **kwargs)` without keeping its activations; the backward runs it again.

    >>> lin = ember.nn.Linear(4, 4)
    >>> x = ember.randn(2, 4, requires_grad=True)
    >>> y = ember.utils.checkpoint.checkpoint(lin, x, use_reentrant=False)
    >>> y.sum().backward()
    >>> lin.weight.grad.shape
    (4, 4)

    Both of torch's variants (`use_reentrant=True` / `False`) give the same gradients here, and both
    work with `autograd.grad` and `create_graph` (`early_stop` is accepted: the recomputation always
    runs the whole function); as torch, leaving `use_reentrant` out warns, keyword
    arguments and `context_fn` need `use_reentrant=False`, and with `use_reentrant=True` an output
    requires grad only if a tensor argument does.
    """
    if use_reentrant is None:
        warnings.warn("torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. "
                      "use_reentrant=False is recommended, but if you need to preserve the current default "
                      "behavior, you can pass use_reentrant=True. Refer to docs for more details on the "
                      "differences between the two variants.", stacklevel=2)
        use_reentrant = True
    if determinism_check not in ("default", "none"):
        raise ValueError(f"checkpoint: determinism_check should be 'default' or 'none', but got "
                         f"{determinism_check!r}")
    if use_reentrant:
        if context_fn is not None or debug:
            raise ValueError("Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    forward_context, recompute_context = context_fn() if context_fn is not None else (
        contextlib.nullcontext(), contextlib.nullcontext())
    if not is_grad_enabled():
        with forward_context:
            return function(*args, **kwargs)
    positions = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
    tensor_args = [args[i] for i in positions]
    if use_reentrant and not any(t.requires_grad for t in tensor_args):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", stacklevel=2)
        with no_grad(), forward_context:
            return function(*args, **kwargs)
    rng_state = _random.get_rng_state() if preserve_rng_state else None
    reads = _Reads()
    with no_grad(), forward_context, reads:
        out = function(*args, **kwargs)
    outs, rebuild = _flat(out)
    arg_ids = {id(t) for t in tensor_args}
    read = [t for k, t in reads.found.items() if k not in arg_ids]
    if not any(t.requires_grad for t in tensor_args + read):
        return out
    spec = _Spec()
    spec.function, spec.args, spec.kwargs = function, tuple(args), kwargs
    spec.tensor_positions, spec.n_tensor_args = positions, len(tensor_args)
    spec.rng_state, spec.outputs = rng_state, outs
    spec.check = determinism_check == "default"
    spec.recompute_context = recompute_context
    spec.autocast = _autocast_state()
    if not outs:
        return out
    res = _Checkpoint.apply(spec, *tensor_args, *read)
    spec.outputs = [_meta(t) for t in outs]   # only their metadata stays, for the check
    return rebuild(list(res) if isinstance(res, tuple) else [res])


def checkpoint_sequential(functions, segments: int, input, use_reentrant: bool | None = None,
                          preserve_rng_state: bool = True):
    """Run a Sequential (or a list of modules/functions) in `segments` pieces, checkpointing every
    piece but the last (whose activations the backward needs at once), as torch.

    >>> seq = ember.nn.Sequential(ember.nn.Linear(4, 4), ember.nn.ReLU(), ember.nn.Linear(4, 2))
    >>> x = ember.randn(3, 4, requires_grad=True)
    >>> ember.utils.checkpoint.checkpoint_sequential(seq, 2, x, use_reentrant=False).shape
    (3, 2)
    """
    if use_reentrant is None:
        warnings.warn("torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be "
                      "passed explicitly. use_reentrant=False is recommended.", stacklevel=2)
        use_reentrant = True
    from ..nn.module import Module
    fns = list(functions.children()) if isinstance(functions, Module) else list(functions)
    if not isinstance(segments, int) or not 1 <= segments <= max(len(fns), 1):
        raise ValueError(f"checkpoint_sequential: segments must be an int from 1 to the number of functions "
                         f"({len(fns)}), got {segments!r}")
    size = len(fns) // segments

    def run(start, end):
        def piece(x):
            for f in fns[start:end + 1]:
                x = f(x)
            return x
        return piece

    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(run(start, end), input, use_reentrant=use_reentrant,
                           preserve_rng_state=preserve_rng_state)
    return run(end + 1, len(fns) - 1)(input)
