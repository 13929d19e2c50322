"""Reverse-mode automatic differentiation over graphs recorded as the code runs.

Public API (as torch.autograd): backward, grad, Function, Variable, the `functional` module (jacobian,
hessian, vjp, jvp, hvp, vhp), no_grad/enable_grad/set_grad_enabled/
inference_mode, detect_anomaly/set_detect_anomaly, gradcheck/gradgradcheck; plus GradientTape.
"""
from __future__ import annotations

import warnings
from collections.abc import Mapping

from .anomaly import detect_anomaly, set_detect_anomaly, is_anomaly_enabled, is_anomaly_check_nan_enabled
from .function import Function, FunctionCtx
from .grad_mode import (no_grad, enable_grad, set_grad_enabled, inference_mode, is_grad_enabled,
                        is_inference_mode_enabled)
from .gradcheck import gradcheck, gradgradcheck
from .tape import GradientTape
from .variable import Variable
from . import engine, functional
from .._errors import op_error
from .._tensor import Tensor
from ..backends import host

import numpy as np

__all__ = ["backward", "grad", "Function", "FunctionCtx", "no_grad", "enable_grad", "set_grad_enabled",
           "inference_mode", "is_grad_enabled", "detect_anomaly", "set_detect_anomaly", "gradcheck",
           "gradgradcheck", "GradientTape", "is_anomaly_enabled", "is_anomaly_check_nan_enabled",
           "is_inference_mode_enabled", "Variable"]


def __getattr__(name):
    if name == "graph":   # loaded on first use: `import ember` stays small
        import importlib
        return importlib.import_module(".graph", __name__)
    raise AttributeError(f"module 'ember.autograd' has no attribute {name!r}")


def _seq(x):
    """None, one tensor, or any iterable of them (a list, `params.values()`, a generator) as a list."""
    if x is None:
        return None
    return [x] if isinstance(x, Tensor) else list(x)


def _root_grads(outputs, grad_outputs, op):
    grads = _seq(grad_outputs) or [None] * len(outputs)
    if len(grads) != len(outputs):
        raise op_error(op, f"got {len(grads)} gradients for {len(outputs)} outputs")
    out = []
    for t, g in zip(outputs, grads):
        if not t.requires_grad:
            raise op_error(op, "element 0 of tensors does not require grad and does not have a grad_fn "
                               "(did you compute it under no_grad, or forget requires_grad=True?)")
        if g is None:
            if t.numel() != 1:
                raise op_error(op, f"grad can be implicitly created only for scalar outputs; the output "
                                   f"has shape {tuple(t.shape)}: pass `gradient=` of that shape")
            g = t._make(host.ones(t.shape, t._data.dtype), t._device) if type(t._data) is np.ndarray \
                else _ones_like(t)
        elif g.shape != t.shape:
            raise op_error(op, f"gradient has shape {tuple(g.shape)} but the output has shape "
                               f"{tuple(t.shape)}")
        out.append(g)
    return out


def _inputs(inputs, op):
    """`inputs=` of grad/backward as a list: one tensor, a dict (its values), or any iterable of tensors."""
    if isinstance(inputs, Mapping) and type(inputs) is not dict:
        raise TypeError(f"`inputs` argument to `{op}()` must be a dict, not {type(inputs).__name__}. "
                        f"Other Mapping types are not supported.")
    ins = _seq(inputs.values() if type(inputs) is dict else inputs)
    if not ins:
        raise RuntimeError(f"`inputs` argument to `{op}()` cannot be empty.")
    return ins


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, grad_variables=None,
             inputs=None) -> None:
    """Accumulate the gradients of `tensors` into the `.grad` of the leaves (of `inputs` if given)."""
    if grad_variables is not None:
        warnings.warn("`grad_variables` is deprecated. Use `grad_tensors` instead.", FutureWarning, stacklevel=2)
        if grad_tensors is not None:
            raise RuntimeError("`grad_tensors` and `grad_variables` (deprecated) arguments both passed to "
                               "`backward()`. Please only use `grad_tensors`.")
        grad_tensors = grad_variables
    if grad_tensors is None and inputs is None and not create_graph and not isinstance(tensors, (list, tuple)) \
            and tensors.requires_grad and tensors._data.size == 1 and type(tensors._data) is np.ndarray:
        # the common `loss.backward()`
        ones = tensors._make(host.ones(tensors._data.shape, tensors._data.dtype), tensors._device)
        engine.run_backward([tensors], [ones], bool(retain_graph), False, None, True)
        return
    ins = None if inputs is None else _inputs(inputs, "backward")
    tensors = _seq(tensors)
    grads = _root_grads(tensors, grad_tensors, "backward")
    if retain_graph is None:
        retain_graph = create_graph
    engine.run_backward(tensors, grads, retain_graph, create_graph, inputs=ins, accumulate=True)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """d(outputs)/d(inputs) as a tuple (a dict with the same keys when `inputs` is a dict), without touching
    any `.grad`. `is_grads_batched=True`: the first dim of each `grad_outputs` is a batch of upstream
    gradients, and each result gets that dim in front (torch vmaps the backward; Ember runs it once per row).

    >>> x = ember.tensor(2.0, requires_grad=True)
    >>> (g,) = ember.autograd.grad(x ** 3, x, create_graph=True)   # 3x^2 = 12
    >>> ember.autograd.grad(g, x)                                   # 6x = 12
    (tensor(12.),)
    """
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, "
                         "but got: allow_unused=False.")
    if allow_unused is None:
        allow_unused = materialize_grads
    if not only_inputs:
        warnings.warn("only_inputs argument is deprecated and is ignored now (defaults to True). To accumulate "
                      "gradient for other parts of the graph, please use torch.autograd.backward.",
                      FutureWarning, stacklevel=2)
    outputs = _seq(outputs)
    ins = _inputs(inputs, "grad")
    if retain_graph is None:
        retain_graph = create_graph
    if is_grads_batched:
        res = _batched_grad(outputs, ins, grad_outputs, retain_graph, create_graph, allow_unused)
    else:
        res = _grad(outputs, ins, _root_grads(outputs, grad_outputs, "grad"), retain_graph, create_graph,
                    allow_unused)
    if materialize_grads:
        from ..ops.creation import zeros_like
        res = [zeros_like(t, requires_grad=create_graph) if g is None else g for g, t in zip(res, ins)]
    if type(inputs) is dict:
        return dict(zip(inputs.keys(), res))
    return tuple(res)


def _batched_grad(outputs, ins, grad_outputs, retain_graph, create_graph, allow_unused):
    """`grad` for each row of the batched `grad_outputs`, the results stacked (None stays None)."""
    from ..ops.shape import stack
    batched = _seq(grad_outputs)
    if batched is None or len(batched) != len(outputs) or any(g is None for g in batched):
        raise op_error("grad", "is_grads_batched=True needs one batched gradient per output")
    sizes = {g.shape[0] if g.dim() else None for g in batched}
    if len(sizes) != 1 or None in sizes:
        raise op_error("grad", f"is_grads_batched=True: the batched gradients' first dims differ or are "
                               f"missing: {[tuple(g.shape) for g in batched]}")
    n = sizes.pop()
    rows = []
    for i in range(n):
        grads = _root_grads(outputs, [g[i] for g in batched], "grad")
        rows.append(_grad(outputs, ins, grads, retain_graph or i < n - 1, create_graph, allow_unused))
    return [None if col[0] is None else stack(col) for col in zip(*rows)]


def _grad(outputs, ins, grads, retain_graph, create_graph, allow_unused):
    for t in ins:
        if not t.requires_grad:
            raise RuntimeError("grad: one of the differentiated Tensors does not require grad")
    captured = []
    for t in ins:   # non-leaf inputs: the engine reads their gradient off their node
        if t._node is not None:
            cap = t._node.__dict__.setdefault("_captured", {})
            cap[t._out_idx] = t
            captured.append(t._node)
    try:
        res = engine.run_backward(outputs, grads, retain_graph, create_graph, inputs=ins, accumulate=False)
    finally:
        for n in captured:
            n.__dict__.pop("_captured", None)
    for i, (g, t) in enumerate(zip(res, ins)):
        if g is None:
            if not allow_unused:
                raise RuntimeError(f"grad: the differentiated Tensor at index {i} appears to not have been "
                                   f"used in the graph. Set allow_unused=True if this is the desired behavior.")
        else:
            if not g.is_contiguous() and t.is_contiguous():
                # Ember's kernels may hand back another memory order than torch's (a conv's input
                # gradient is channels-last); code written for torch views these (`g.view(n, -1)`)
                g = g.contiguous()
            if not create_graph:
                g = g.detach()
            res[i] = g
    return res


def _ones_like(t):
    from ..ops.creation import ones_like
    return ones_like(t)
