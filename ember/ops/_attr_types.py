"""Types of primitive attributes, shared by the `attrs` declarations of every primitive family.

Each Primitive subclass declares `attrs = {name: accepted type or tuple of types}` for the keyword
attributes its `apply` receives (static, hashable Python values: the compiler's typed IR). A call is
checked against it by `ember.autograd.dispatch.check_attrs`, which the `AttrCheck` dispatch mode runs on
every call and `Primitive.apply` runs when EMBER_DEBUG is set; not on the default hot path.
`SHAPE`, `INTS` and `AXES` are checked element by element (a tuple of ints: `isinstance` asks the class);
other tuples (index keys, paddings) as tuples. `int` admits `bool` (Python's subclass).
"""
from __future__ import annotations

import numpy as np

from .._device import device as _device

class _TupleOf(type):
    """`isinstance(v, C)` for a class C made with this metaclass: v is a tuple whose items are all `C.item`."""
    def __instancecheck__(cls, value):
        return isinstance(value, tuple) and all(isinstance(v, cls.item) for v in value)


class ints(metaclass=_TupleOf):   # noqa: N801  (named for the error message: "expects ints")
    """A tuple of Python ints (a shape, strides, axes)."""
    item = int
    describe = "tuple of ints"


NONE = type(None)
DTYPE = np.dtype                  # a NumPy dtype instance (np.dtype('float32'), bfloat16's), never a type
SHAPE = ints                      # a tuple of ints
INTS = ints                       # a tuple of ints, one per axis (stride, dilation, dims, axes)
AXES = (ints, NONE)               # a tuple of axes, or None: every axis
AXIS = (int, NONE)                # one axis, or None: the flattened input
NUMBER = (int, float)             # a Python scalar (a fill value, a clamp bound)
OPT_NUMBER = (int, float, NONE)
OPT_INT = (int, NONE)
KEY = tuple                       # an index key: ints, slices, None, Ellipsis and placeholders for index inputs
DEVICE = _device
