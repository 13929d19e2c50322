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
    head = _conv_relu(node)

    def run(*ext):
        env = dict(zip(ext_ids, ext))
        buf = None
        todo = steps
        if head is not None:   # Conv+Relu in one kernel where the CPU's small-conv loops take it
            res = head(*[env[i] for i in steps[0][0]])
            if res is not None:
                env[steps[0][1]] = env[steps[1][1]] = res
                buf, todo = res, steps[2:]
        for in_ids, oid, fn, uf, dt_rule, shape in todo:
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


def _conv_relu(node):
    """For a chain that starts Conv, Relu: a callable over the Conv's inputs giving Relu's output (or
    None where backends.cpu_kernels.conv_relu does not take them), else None."""
    if len(node.fused) < 2 or node.fused[0].name != "Conv" or node.fused[1].name != "Relu":
        return None
    from ..backends import cpu_kernels
    conv = node.fused[0]
    inst = conv.prim.__new__(conv.prim)
    inst.__dict__.update(conv.attrs)
    return lambda *arrays: cpu_kernels.conv_relu(inst, *arrays)


# --- numba (optional extra `ember[jit]`; opt-in with EMBER_JIT_KERNELS=numba) -------------------------------
# One loop per chain over C-contiguous operands of the output's shape and 0-d scalars: no temporaries.
# Measured in bench/jit_kernels.py: ~3x NumPy on a three-op chain, ~1 s to compile a kernel the first time
# (then cached on disk), not bit-identical for exp/tanh/log; so it is not the default.
_NB_EXPR = {"Add": "{0} + {1}", "Sub": "{0} - {1}", "Mul": "{0} * {1}", "Div": "{0} / {1}", "Neg": "-{0}",
            "Relu": "({0} if not ({0} <= 0) else {z})", "Maximum": "({0} if not ({0} < {1}) else {1})",
            "Exp": "math.exp({0})", "Log": "math.log({0})", "Tanh": "math.tanh({0})",
            "Sqrt": "math.sqrt({0})", "Abs": "abs({0})"}


def numba_wanted() -> bool:
    import os
    return os.environ.get("EMBER_JIT_KERNELS", "numpy") == "numba"


def build_numba(node):
    """A numba kernel for a fused chain of float ops, or None (unsupported members, numba missing)."""
    if any(m.name not in _NB_EXPR for m in node.fused) or len({v.dtype for v in node.inputs}) != 1 \
            or node.inputs[0].dtype not in ("float32", "float64"):
        return None
    try:
        import numba   # the optional extra: pip install ember[jit]
    except ImportError:
        return None
    del numba          # imported again by the generated module
    fn = _numba_kernel(node)
    shape = node.outputs[0].shape
    fallback = build(node)
    xp_empty = _empty()

    def run(*ext):
        for a in ext:
            if a.shape != shape and a.ndim != 0 or not a.flags.c_contiguous:
                return fallback(*ext)
        out = xp_empty(shape, ext[0].dtype)
        fn(*ext, out)
        return out
    return run


def _empty():
    from ..backends import get
    return get("cpu").xp.empty


def _numba_kernel(node):
    import hashlib
    import importlib.util
    import os
    shape = node.outputs[0].shape
    ext = {v.id: f"a{i}" for i, v in enumerate(node.inputs)}
    lines, names = [], dict(ext)
    body = []
    for i, v in enumerate(node.inputs):
        if v.shape == shape:
            lines.append(f"    f{i} = a{i}.reshape(-1)")
            names[v.id] = f"f{i}[i]"
        else:
            lines.append(f"    s{i} = a{i}.reshape(1)[0]")
            names[v.id] = f"s{i}"
    for k, m in enumerate(node.fused):
        args = [names[v.id] for v in m.inputs]
        body.append(f"        t{k} = " + _NB_EXPR[m.name].format(*args, z="z"))
        names[m.outputs[0].id] = f"t{k}"
    src = ("import math\nimport numba\n\n\n@numba.njit(cache=True)\ndef kernel(" +
           ", ".join(ext.values()) + ", out):\n" + "\n".join(lines) +
           "\n    o = out.reshape(-1)\n    z = o.dtype.type(0)\n    for i in range(o.size):\n" +
           "\n".join(body) + f"\n        o[i] = t{len(node.fused) - 1}\n")
    key = hashlib.sha256(src.encode()).hexdigest()[:16]
    d = os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "ember", "jit")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, f"chain_{key}.py")
    if not os.path.exists(path):   # our own generated source (no user text), written once, atomically
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            f.write(src)
        os.replace(tmp, path)
    spec = importlib.util.spec_from_file_location(f"ember_jit_chain_{key}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.kernel
