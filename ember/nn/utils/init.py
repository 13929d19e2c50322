"""skip_init: make a module without running its initialisation (torch.nn.utils.skip_init)."""
from __future__ import annotations

import inspect

from ..module import Module

__all__ = ["skip_init"]


def skip_init(module_cls, *args, **kwargs):
    """`module_cls(*args, **kwargs)` with its parameters and buffers left uninitialised (built on
    device='meta', then given empty memory on `device`): for weights about to be loaded or set.

    >>> m = ember.nn.utils.skip_init(ember.nn.Linear, 5, 1)
    >>> m.weight.shape, m.weight.device
    ((1, 5), device(type='cpu'))
    """
    if not (isinstance(module_cls, type) and issubclass(module_cls, Module)):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    final_device = kwargs.pop("device", "cpu")
    kwargs["device"] = "meta"
    return module_cls(*args, **kwargs).to_empty(device=final_device)
