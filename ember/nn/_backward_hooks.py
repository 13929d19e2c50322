"""Module backward hooks, as torch.utils.hooks.BackwardHook: identity Functions around a module's call.

`register_full_backward_hook` needs the gradients w.r.t. a module's inputs and outputs in one call, and the
module's forward may be any number of graph nodes. So, as torch does, the call's positional tensor inputs
go through one identity `BackwardHookFunction` before forward and its tensor outputs through another after:
backward reaches the output identity first (it keeps grad_output, after the pre-hooks), then the module's
own nodes, then the input identity, which calls the hooks with (grad_input, grad_output) and passes on what
they return. The identities return their inputs as they are: views sharing the inputs' version counter, so
changing one in place is torch's error (ember.autograd.Function.apply marks them).
"""
from __future__ import annotations

import warnings

from .._tensor import Tensor
from ..autograd.function import Function
from ..autograd.grad_mode import is_grad_enabled


class BackwardHookFunction(Function):
    """The identity a module with backward hooks runs its inputs and outputs through (torch's name, which
    its errors show). The node's `_hook_fn`, set by BackwardHook, sees the gradients and may replace them."""

    @staticmethod
    def forward(ctx, *args):
        ctx.mark_non_differentiable(*[a for a in args if not a.requires_grad])
        return args

    @staticmethod
    def backward(ctx, *grads):
        return ctx._hook_fn(grads)


class BackwardHook:
    """One module call's backward hooks: `setup_input_hook(args)` before forward, `setup_output_hook(result)`
    after; the hooks run during backward, once per call."""

    def __init__(self, module, user_hooks, user_pre_hooks):
        self.module = module
        self.user_hooks = user_hooks
        self.user_pre_hooks = user_pre_hooks
        self.grad_outputs = None
        self.n_outputs = -1
        self.output_tensors_index = None
        self.n_inputs = -1
        self.input_tensors_index = None

    @staticmethod
    def _pack_with_none(indices, values, size):
        res = [None] * size
        for i, v in zip(indices, values):
            res[i] = v
        return tuple(res)

    @staticmethod
    def _unpack_none(indices, values):
        return tuple(values[i] for i in indices)

    def _apply_on_tensors(self, backward_fn, materialize, args):
        """`args` with its tensors passed through one BackwardHookFunction whose backward is
        `backward_fn(grads)`, and the tensors' positions; `args` unchanged and None when none of them
        requires grad (or grad mode is off)."""
        idx = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        tensors = [args[i] for i in idx]
        if not (any(t.requires_grad for t in tensors) and is_grad_enabled()):
            return args, None
        new = BackwardHookFunction.apply(*tensors)
        node = next(t.grad_fn for t in new if t.grad_fn is not None)
        node._hook_fn = backward_fn
        node._materialize = materialize   # the output side sees None for an output no gradient reached
        out = list(args)
        for i, t in zip(idx, new):
            out[i] = t
        return (tuple(out) if type(args) is tuple else type(args)(*out)), idx

    def setup_input_hook(self, args):
        res, idx = self._apply_on_tensors(self._input_backward, True, args)
        self.n_inputs = len(args)
        self.input_tensors_index = idx
        return res

    def setup_output_hook(self, result):
        is_tuple = isinstance(result, tuple)
        args = result if is_tuple else (result,)
        res, idx = self._apply_on_tensors(self._output_backward, False, args)
        self.n_outputs = len(args)
        self.output_tensors_index = idx
        return res if is_tuple else res[0]

    def _input_backward(self, grad_input):
        if self.grad_outputs is None:
            # the gradient reached the inputs without passing through the outputs (double backward)
            return grad_input
        res = self._pack_with_none(self.input_tensors_index, grad_input, self.n_inputs)
        for hook in self.user_hooks:
            out = hook(self.module, res, self.grad_outputs)
            if out is None:
                continue
            if len(out) != len(res):
                raise RuntimeError(f"Backward hook returned an invalid number of grad_input, got {len(out)}, "
                                   f"but expected {len(res)}")
            res = out
        self.grad_outputs = None
        return self._unpack_none(self.input_tensors_index, res)

    def _output_backward(self, grad_output):
        self.grad_outputs = self._pack_with_none(self.output_tensors_index, grad_output, self.n_outputs)
        expected = len(self.grad_outputs)
        for hook in self.user_pre_hooks:
            out = hook(self.module, self.grad_outputs)
            if out is None:
                continue
            if len(out) != expected:
                raise RuntimeError(f"Backward pre hook returned an invalid number of grad_output, got "
                                   f"{len(out)}, but expected {expected}")
            self.grad_outputs = out
        local = self.grad_outputs
        if self.input_tensors_index is None:   # no input requires grad: the hooks run here
            warnings.warn("Full backward hook is firing when gradients are computed with respect to module "
                          "outputs since no inputs require gradients. See https://docs.pytorch.org/docs/main/"
                          "generated/torch.nn.Module.html#torch.nn.Module.register_full_backward_hook for more "
                          "details.", UserWarning, stacklevel=2)
            grad_inputs = self._pack_with_none([], [], self.n_inputs)
            for hook in self.user_hooks:
                res = hook(self.module, grad_inputs, self.grad_outputs)
                if res is not None and not (isinstance(res, tuple) and all(g is None for g in res)):
                    raise RuntimeError("Backward hook for Modules where no input requires gradient should "
                                       "always return None or None for all gradients.")
            self.grad_outputs = None
        return tuple(local[i] for i in self.output_tensors_index)


class WrappedHook:
    """A deprecated `register_backward_hook` hook on the node that made the module's output:
    `hook(module, grad_input, grad_output)` where grad_input are that node's input gradients."""

    def __init__(self, hook, module):
        self.hook, self.module = hook, module
        self.__name__ = getattr(hook, "__name__", "hook")

    def __call__(self, grad_input, grad_output):
        return self.hook(self.module, grad_input, grad_output)


def warn_non_full(inputs, result, grad_fn) -> None:
    """torch's FutureWarnings for a deprecated backward hook whose grad_input or grad_output would miss
    gradients (the module is not one node taking and giving tensors)."""
    def warn(msg):
        warnings.warn(msg, FutureWarning, stacklevel=4)
    if not isinstance(result, Tensor):
        if not (isinstance(result, tuple) and all(isinstance(r, Tensor) for r in result)):
            return warn("Using non-full backward hooks on a Module that does not return a single Tensor or a "
                        "tuple of Tensors is deprecated and will be removed in future versions. This hook will "
                        "be missing some of the grad_output. Please use register_full_backward_hook to get the "
                        "documented behavior.")
    else:
        result = (result,)
    if not isinstance(inputs, Tensor):
        if not (isinstance(inputs, tuple) and all(isinstance(i, Tensor) for i in inputs)):
            return warn("Using non-full backward hooks on a Module that does not take as input a single Tensor "
                        "or a tuple of Tensors is deprecated and will be removed in future versions. This hook "
                        "will be missing some of the grad_input. Please use register_full_backward_hook to get "
                        "the documented behavior.")
    else:
        inputs = (inputs,)
    out_grad_fn = {r.grad_fn for r in result if r.grad_fn is not None}
    if len(out_grad_fn) == 0 or (len(out_grad_fn) == 1 and grad_fn not in out_grad_fn):
        warn("Using a non-full backward hook when outputs are nested in python data structure is deprecated "
             "and will be removed in future versions. This hook will be missing some grad_output.")
    elif len(out_grad_fn) > 1:
        warn("Using a non-full backward hook when outputs are generated by different autograd Nodes is "
             "deprecated and will be removed in future versions. This hook will be missing some grad_output. "
             "Please use register_full_backward_hook to get the documented behavior.")
    else:
        inputs_grad_fn = {i.grad_fn for i in inputs if i.grad_fn is not None}
        next_functions = {n[0] for n in grad_fn.next_functions}
        if inputs_grad_fn != next_functions:
            warn("Using a non-full backward hook when the forward contains multiple autograd Nodes is "
                 "deprecated and will be removed in future versions. This hook will be missing some "
                 "grad_input. Please use register_full_backward_hook to get the documented behavior.")
