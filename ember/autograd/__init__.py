"""Reverse-mode automatic differentiation over graphs recorded as the code runs.

Public API (as torch.autograd): backward, grad, Function, Variable, the `functional` module (jacobian,
hessian, vjp, jvp, hvp, vhp), no_grad/enable_grad/set_grad_enabled/
inference_mode, detect_anomaly/set_detect_anomaly, gradcheck/gradgradcheck; plus GradientTape.
"""
from __future__ import annotations

from .anomaly import detect_anomaly, set_detect_anomaly, is_anomaly_enabled, is_anomaly_check_nan_enabled
from .function import Function, FunctionCtx
from .grad_mode import (no_grad, enable_grad, set_grad_enabled, inference_mode, is_grad_enabled,
                        is_inference_mode_enabled)
from .gradcheck import gradcheck, gradgradcheck
from .tape import GradientTape
from .variable import Variable
from . import engine, functional
from .._errors import op_error
from ..backends import host

import numpy as np

__all__ = ["backward", "grad", "Function", "FunctionCtx", "no_grad", "enable_grad", "set_grad_enabled",
           "inference_mode", "is_grad_enabled", "detect_anomaly", "set_detect_anomaly", "gradcheck",
           "gradgradcheck", "GradientTape", "is_anomaly_enabled", "is_anomaly_check_nan_enabled",
           "is_inference_mode_enabled", "Variable"]


def _seq(x):
    if x is None:
        return None
    return list(x) if isinstance(x, (list, tuple)) else [x]


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


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None) -> None:
    """Accumulate the gradients of `tensors` into the `.grad` of the leaves (of `inputs` if given)."""
    if grad_tensors is None and inputs is None and not create_graph and not isinstance(tensors, (list, tuple)) \
            and tensors.requires_grad and tensors._data.size == 1 and type(tensors._data) is np.ndarray:
        # the common `loss.backward()`
        ones = tensors._make(host.ones(tensors._data.shape, tensors._data.dtype), tensors._device)
        engine.run_backward([tensors], [ones], bool(retain_graph), False, None, True)
        return
    tensors = _seq(tensors)
    grads = _root_grads(tensors, grad_tensors, "backward")
    if retain_graph is None:
        retain_graph = create_graph
    ins = _seq(inputs)
    engine.run_backward(tensors, grads, retain_graph, create_graph, inputs=ins, accumulate=True)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, allow_unused=None,
         materialize_grads=False):
    """d(outputs)/d(inputs) as a tuple, without touching any `.grad`.

    >>> x = ember.tensor(2.0, requires_grad=True)
    >>> (g,) = ember.autograd.grad(x ** 3, x, create_graph=True)   # 3x^2 = 12
    >>> ember.autograd.grad(g, x)                                   # 6x = 12
    (tensor(12.),)
    """
    outputs = _seq(outputs)
    ins = _seq(inputs)
    grads = _root_grads(outputs, grad_outputs, "grad")
    if retain_graph is None:
        retain_graph = create_graph
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
            if materialize_grads:
                from ..ops.creation import zeros_like
                res[i] = zeros_like(t)
            elif not allow_unused:
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
    return tuple(res)


def _ones_like(t):
    from ..ops.creation import ones_like
    return ones_like(t)
