"""Dispatch modes: see (and replace) every primitive call, as torch's `TorchDispatchMode`.

`DispatchMode` is the base class; `PrimitiveLog` records every call of a region (forward, backward,
optimizer steps, in-place writes, random draws) so it can be read, counted or replayed.
The mechanism lives in `ember.autograd.dispatch`.
"""
from __future__ import annotations

from ..autograd.dispatch import AttrCheck, DispatchMode, attrs_key, check_attrs, current_modes, dispatch
from ..autograd.primitive_log import PrimitiveLog

__all__ = ["DispatchMode", "PrimitiveLog", "AttrCheck", "attrs_key", "check_attrs", "current_modes", "dispatch"]
