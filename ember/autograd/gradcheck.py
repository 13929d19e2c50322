"""Finite-difference checks of first and second derivatives (float64)."""
from __future__ import annotations

from ..backends import array_module

__all__ = ["gradcheck", "gradgradcheck"]


def _as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


def _numeric_jacobian(fn, inputs, i, eps):
    x = inputs[i]
    xp = array_module(x)
    flat = x._data.reshape(-1)
    cols = []
    for k in range(flat.size):
        old = flat[k]
        flat[k] = old + eps
        plus = [o.detach()._data.copy() for o in _as_tuple(fn(*inputs))]
        flat[k] = old - eps
        minus = [o.detach()._data.copy() for o in _as_tuple(fn(*inputs))]
        flat[k] = old
        cols.append(xp.concatenate([((p - m) / (2 * eps)).reshape(-1) for p, m in zip(plus, minus)]))
    return xp.stack(cols, axis=0)  # (input numel, output numel)


def _analytic_jacobian(fn, inputs, i):
    from . import grad
    from ..ops.creation import zeros_like
    xp = array_module(inputs[i])
    outs = _as_tuple(fn(*inputs))
    rows = []
    for o in outs:
        flat = o.reshape(-1)
        for k in range(flat.shape[0]):
            if not flat.requires_grad:   # an output that does not depend on any input (e.g. zeros)
                rows.append(xp.zeros(inputs[i].numel(), dtype=inputs[i]._data.dtype))
                continue
            g, = grad(flat[k], [inputs[i]], retain_graph=True, allow_unused=True)
            rows.append((g if g is not None else zeros_like(inputs[i]))._data.reshape(-1))
    return xp.stack(rows, axis=1) if rows else xp.zeros((inputs[i].numel(), 0))


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True) -> bool:
    """Compare autograd's Jacobian with central differences for every input that requires grad.

    >>> x = ember.randn(3, dtype=ember.float64, requires_grad=True)
    >>> ember.autograd.gradcheck(lambda x: (x * x).sin(), (x,))
    True
    """
    inputs = _as_tuple(inputs)
    for i, x in enumerate(inputs):
        if not getattr(x, "requires_grad", False):
            continue
        if x.dtype.name != "float64":
            import warnings
            warnings.warn(f"gradcheck: input {i} is {x.dtype.name}, not float64; the check may fail "
                          f"from rounding alone")
        num = _numeric_jacobian(func, inputs, i, eps)
        ana = _analytic_jacobian(func, inputs, i)
        xp = array_module(x)
        if not bool(xp.allclose(ana, num, atol=atol, rtol=rtol)):
            if raise_exception:
                err = float(xp.abs(ana - num).max())
                raise RuntimeError(f"gradcheck: Jacobian mismatch for input {i} (max abs error {err:.3g})"
                                   f"\nnumerical:\n{num}\nanalytical:\n{ana}")
            return False
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  raise_exception=True) -> bool:
    """gradcheck of the function x -> d(sum(func(x) * v))/dx: checks second derivatives."""
    from . import grad
    from ..random import randn
    inputs = _as_tuple(inputs)
    outs = _as_tuple(func(*inputs))
    vs = grad_outputs or tuple(randn(*o.shape, dtype=o.dtype, device=o.device) for o in outs)
    vs = _as_tuple(vs)
    diff = [x for x in inputs if getattr(x, "requires_grad", False)]

    def first(*xs):
        os_ = _as_tuple(func(*xs))
        gs = grad(list(os_), [x for x in xs if getattr(x, "requires_grad", False)], grad_outputs=list(vs),
                  create_graph=True, allow_unused=True)
        from ..ops.creation import zeros_like
        return tuple(g if g is not None else zeros_like(x) for g, x in zip(gs, diff))

    return gradcheck(first, inputs, eps=eps, atol=atol, rtol=rtol, raise_exception=raise_exception)
