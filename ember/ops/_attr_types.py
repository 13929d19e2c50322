"""Types of primitive attributes, shared by the `attrs` declarations of every primitive family.

Each Primitive subclass declares `attrs = {name: accepted type or tuple of types}` for the keyword
attributes its `apply` receives (static, hashable Python values: the compiler's typed IR). A call is
checked against it by `ember.autograd.dispatch.check_attrs`, which the `AttrCheck` dispatch mode runs on
every call and `Primitive.apply` runs when EMBER_DEBUG is set; not on the default hot path.
Tuples are checked as tuples (not element by element); `int` admits `bool` (Python's subclass).
"""
from __future__ import annotations

import numpy as np

from .._device import device as _device

NONE = type(None)
DTYPE = np.dtype                  # a NumPy dtype instance (np.dtype('float32'), bfloat16's), never a type
SHAPE = tuple                     # a tuple of ints
INTS = tuple                      # a tuple of ints, one per axis (stride, dilation, dims, axes)
AXES = (tuple, NONE)              # a tuple of axes, or None: every axis
AXIS = (int, NONE)                # one axis, or None: the flattened input
NUMBER = (int, float)             # a Python scalar (a fill value, a clamp bound)
OPT_NUMBER = (int, float, NONE)
OPT_INT = (int, NONE)
KEY = tuple                       # an index key: ints, slices, None, Ellipsis and placeholders for index inputs
DEVICE = _device
