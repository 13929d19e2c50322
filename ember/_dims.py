"""The one place where a `dim` argument is checked and normalised (every op that takes dims calls it).

As torch: a tensor of n dims accepts dims in [-n, n-1]; a 0-d tensor accepts -1 and 0 (as if it had one
dim); anything else is an IndexError naming the op and the user's line.
"""
from __future__ import annotations

import inspect

import operator

from ._errors import op_error


def wrap_dim(dim, ndim: int, op: str) -> int:
    """`dim` as an index in [0, max(ndim, 1)), or IndexError like torch's.

    >>> wrap_dim(-1, 2, "sum")
    1
    """
    try:
        d = operator.index(dim)   # ints and NumPy ints; not floats, not bools-as-tensors
    except TypeError:
        raise op_error(op, f"dim must be an int, got {type(dim).__name__} {dim!r}", TypeError) from None
    n = ndim if ndim > 0 else 1
    if not -n <= d < n:
        raise op_error(op, f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got "
                           f"{d}); the tensor has {ndim} dims", IndexError)
    return d % n


def wrap_dims(dims, ndim: int, op: str) -> tuple:
    """A dim or a sequence of dims as a tuple of distinct indices in [0, max(ndim, 1)).

    >>> wrap_dims((0, -1), 3, "sum")
    (0, 2)
    """
    if isinstance(dims, (list, tuple)):
        out = tuple(wrap_dim(d, ndim, op) for d in dims)
    else:
        out = (wrap_dim(dims, ndim, op),)
    if len(set(out)) != len(out):
        dup = next(d for d in out if out.count(d) > 1)
        raise op_error(op, f"dim {dup} appears multiple times in the list of dims {tuple(dims)}")
    return out


def numpy_names(fn):
    """`fn` that also takes NumPy's `axis=` for `dim=` and `keepdims=` for `keepdim=`, as torch's argument
    parser does for every function with those parameters (`x.sum(axis=0, keepdims=True)`)."""
    def call(*args, **kwargs):
        if kwargs and ("axis" in kwargs or "keepdims" in kwargs):
            for alias, name in (("axis", "dim"), ("keepdims", "keepdim")):
                if alias in kwargs:
                    if name in kwargs:
                        raise TypeError(f"{fn.__name__}() got both {name!r} and its alias {alias!r}")
                    kwargs[name] = kwargs.pop(alias)
        return fn(*args, **kwargs)
    call.__name__, call.__qualname__, call.__doc__ = fn.__name__, fn.__qualname__, fn.__doc__
    call.__module__, call.__wrapped__ = fn.__module__, fn
    return call


def add_numpy_names(namespace: dict, names) -> None:
    """Wrap with `numpy_names` each function of `names` in `namespace` that has a `dim` parameter."""
    for name in names:
        fn = namespace[name]
        code = getattr(inspect.unwrap(fn), "__code__", None)   # through decorators (autocast_op)
        if code is not None and "dim" in code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]:
            namespace[name] = numpy_names(fn)
