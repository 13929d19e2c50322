"""Kernels for fused nodes (passes.fuse) on the CPU.

`build(node)` returns a callable over the fused node's external input arrays. The NumPy kernel runs the
members in order and continues the chain in one buffer: a member whose ufunc has all operands of the
buffer's dtype writes into the buffer (`np.add(buf, b, out=buf)`), the same ufunc loop its forward
would run, so the result is bit for bit the unfused one, with one allocation per chain instead of one
per op. Only C-contiguous full-size operands qualify: the out-of-place ufunc would give a C-ordered
result then, and a reduction of another memory order rounds differently. Other members run their own
forward.
"""
from __future__ import annotations

import numpy as np

__all__ = ["build", "UFUNCS"]
INPLACE = True

# primitive -> (ufunc name on the array module, extra operands): the exact call its forward makes
UFUNCS = {
    "Neg": ("negative", ()), "Exp": ("exp", ()), "Log": ("log", ()), "Log1p": ("log1p", ()),
    "Expm1": ("expm1", ()), "Sin": ("sin", ()), "Cos": ("cos", ()), "Tanh": ("tanh", ()),
    "Sqrt": ("sqrt", ()), "Abs": ("abs", ()), "Relu": ("maximum", (0,)),
    "Add": ("add", ()), "Sub": ("subtract", ()), "Mul": ("multiply", ()), "Div": ("divide", ()),
    "Maximum": ("maximum", ()),
}


def _owned(xp, res, ins):
    """Whether `res` is a fresh writeable array sharing no memory with the inputs."""
    return (res.__class__ is np.ndarray and res.flags.writeable
            and not any(a.__class__ is np.ndarray and xp.may_share_memory(res, a) for a in ins))


def build(node):
    from .codegen import node_fn, _fix
    from ..backends import get
    xp = get("cpu").xp    # the compiled path runs on the CPU (the CUDA backend will bring its own kernels)
    steps = []
    for m in node.fused:
        uf = UFUNCS.get(m.name)
        uf = (getattr(xp, uf[0]), uf[1]) if uf is not None else None
        dt_rule = not isinstance(m.prim, str) and m.prim.keeps_dtype
        steps.append((tuple(v.id for v in m.inputs), m.outputs[0].id, node_fn(m), uf, dt_rule,
                      m.outputs[0].shape))
    ext_ids = tuple(v.id for v in node.inputs)
    out_id = node.outputs[0].id

    def run(*ext):
        env = dict(zip(ext_ids, ext))
        buf = None
        for in_ids, oid, fn, uf, dt_rule, shape in steps:
            ins = [env[i] for i in in_ids]
            if INPLACE and uf is not None and buf is not None and any(a is buf for a in ins) and buf.shape == shape \
                    and all(a.dtype == buf.dtype and (a.shape != shape or a.flags.c_contiguous) for a in ins):
                uf[0](*ins, *uf[1], out=buf)
                res = buf
            else:
                res = _fix(fn(*ins), ins[0].dtype if dt_rule else None)
                buf = res if _owned(xp, res, ins) else None
            env[oid] = res
        return env[out_id]
    return run
