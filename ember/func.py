"""`ember.func`: torch.func's module-level helpers (functional_call)."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["functional_call"]


def functional_call(module, parameter_and_buffer_dicts, args: Any = None, kwargs: dict | None = None, *,
                    tie_weights: bool = True, strict: bool = False):
    """`module(*args, **kwargs)` with parameters and buffers replaced by the given tensors for this call
    (ember.nn.utils.stateless.functional_call); `parameter_and_buffer_dicts` is one dict or a sequence of
    dicts with no key in two of them.

    >>> m = ember.nn.Linear(2, 1)
    >>> params = {"weight": ember.ones(1, 2)}
    >>> ember.func.functional_call(m, (params, {"bias": ember.zeros(1)}), (ember.tensor([[1.0, 2.0]]),)).tolist()
    [[3.0]]
    """
    from .nn.utils.stateless import _functional_call
    if isinstance(parameter_and_buffer_dicts, dict):
        parameters_and_buffers = parameter_and_buffer_dicts
    elif isinstance(parameter_and_buffer_dicts, Sequence):
        if not all(isinstance(d, dict) for d in parameter_and_buffer_dicts):
            raise ValueError("Expected all elements of parameter_and_buffer_dicts to be dictionaries")
        counts: dict = {}
        for d in parameter_and_buffer_dicts:
            for k in d:
                counts[k] = counts.get(k, 0) + 1
        repeated = [k for k, n in counts.items() if n > 1]
        if repeated:
            raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of functional call is "
                             f"ambiguous")
        parameters_and_buffers = {k: v for d in parameter_and_buffer_dicts for k, v in d.items()}
    else:
        raise ValueError(f"Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, but got "
                         f"{type(parameter_and_buffer_dicts)}")
    return _functional_call(module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights, strict=strict)
