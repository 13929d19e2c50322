"""`check_module`: a layer on top of the one shared helper (`helpers.check_op`).

    check_module(lambda lib: lib.nn.Conv2d(3, 4, 3, padding=1), (2, 3, 8, 8))

`build(lib)` makes the layer with `lib=torch` and `lib=ember`. The torch layer's parameters become
extra float inputs of `check_op`, so both sides run with the same weights (copied over by name:
Ember must use torch's parameter names), and `check_op` compares the outputs, the gradient of the
input(s) and of every parameter, for each dtype. Buffers after the forward (BatchNorm's running
stats) are returned as outputs too, so they are compared. Runs once per mode (train, eval).

Both layers are converted with `.to(dtype)` to the dtype under test, and `check_op`'s dtype passes
cover the float dtypes not in `dtypes`: every layer's outputs, buffers and input and parameter
gradients are checked to have torch's dtype in float16, bfloat16, float32 and float64.
"""
from __future__ import annotations

import numpy as np
import torch

import ember
from helpers import check_op

__all__ = ["check_module", "torch_params"]


def torch_params(build):
    torch.manual_seed(0)
    m = build(torch)
    return [(k, v.detach().to(torch.float64).numpy().copy()) for k, v in m.named_parameters()]


def _set_param(module, name, value):
    prefix, _, leaf = name.rpartition(".")
    owner = module.get_submodule(prefix)
    owner._parameters[leaf] = value


def check_module(build, *inputs, modes=("train", "eval"), dtypes=("float64", "float32"), call=None,
                 return_buffers=True, **kw):
    """Compare `build(torch)` and `build(ember)` on the same inputs and weights; see the module doc.

    call(module, *inputs) -> output, default `module(*inputs)` (e.g. to pass keyword arguments).
    Other keyword arguments go to `check_op` (atol, rtol, grad_atol, ...).
    """
    params = torch_params(build)
    names = [k for k, _ in params]
    arrays = [a for _, a in params]
    n_in = len(inputs)

    for mode in modes:
        def fn(lib, *args):
            xs, ps = args[:n_in], args[n_in:]
            if lib is torch:
                torch.manual_seed(0)
            m = build(lib)
            m.train(mode == "train")
            floats = [a for a in list(ps) + list(xs) if isinstance(a, (torch.Tensor, ember.Tensor))
                      and a.dtype.is_floating_point]
            if floats:
                m = m.to(floats[0].dtype)
                if lib is ember:
                    m = m.to(floats[0].device)   # check_op's device (tests/helpers.py: DEVICE)
            if lib is torch:
                run = lambda *a, **k: torch.func.functional_call(m, dict(zip(names, ps)), a, k)  # noqa: E731
            else:
                ember_names = [k for k, _ in m.named_parameters()]
                assert ember_names == names, f"parameter names {ember_names} != torch's {names}"
                for k, p in zip(names, ps):
                    _set_param(m, k, p)
                run = m
            out = call(run, *xs) if call is not None else run(*xs)
            if not return_buffers:
                return out
            bufs = tuple(b.detach() for _, b in m.named_buffers())
            return (out, bufs) if bufs else out
        check_op(fn, *inputs, *arrays, dtypes=dtypes, **kw)
