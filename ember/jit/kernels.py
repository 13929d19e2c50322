"""Kernels for fused nodes (passes.fuse, passes.fuse_updates) on the CPU.

`build(node)` returns a callable over the fused node's external input arrays. The NumPy kernel runs the
members in order and continues the chain in one buffer: a member whose ufunc has all operands of the
buffer's dtype writes into the buffer (`np.add(buf, b, out=buf)`), the same ufunc loop its forward
would run, so the result is bit for bit the unfused one, with one allocation per chain instead of one
per op. Only C-contiguous full-size operands qualify: the out-of-place ufunc would give a C-ordered
result then, and a reduction of another memory order rounds differently. Other members run their own
forward. An update region (passes.fuse_updates: Assigns and the arithmetic between them) runs its
members one after another.

With numba (the optional extra `ember[jit]`) a fused node of exact ops (EXACT: the same IEEE operation
per element as NumPy's loop, so the same bits) and at least NUMBA_MIN elements runs as one generated
loop instead: no temporaries, one pass over memory. EMBER_JIT_KERNELS=numba also takes exp, log, tanh,
sqrt (numba's libm: within float32 rounding, not bit for bit); EMBER_JIT_KERNELS=numpy never uses numba.
"""
from __future__ import annotations

import math
import sys

import numpy as np

__all__ = ["build", "UFUNCS"]

# primitive -> (ufunc name on the array module, extra operands): the exact call its forward makes
UFUNCS = {
    "Neg": ("negative", ()), "Exp": ("exp", ()), "Log": ("log", ()), "Log1p": ("log1p", ()),
    "Expm1": ("expm1", ()), "Sin": ("sin", ()), "Cos": ("cos", ()), "Tanh": ("tanh", ()),
    "Sqrt": ("sqrt", ()), "Abs": ("abs", ()), "Relu": ("maximum", (0,)),
    "Add": ("add", ()), "Sub": ("subtract", ()), "Mul": ("multiply", ()), "Div": ("divide", ()),
    "Maximum": ("maximum", ()),
}


def _owned(res, ins):
    """Whether `res` is a fresh writeable array sharing no memory with the inputs: it owns its memory (a
    view has a base) and is none of them (a forward may return its input)."""
    return res.__class__ is np.ndarray and res.base is None and res.flags.writeable and all(res is not a for a in ins)


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

    chain = not any(m.mutates for m in node.fused)   # an update region's values may have several uses
    out_ids = tuple(v.id for v in node.outputs)

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
            if chain and uf is not None and buf is not None and any(a is buf for a in ins) and buf.shape == shape \
                    and all(a.dtype == buf.dtype and (a.shape != shape or a.flags.c_contiguous) for a in ins):
                uf[0](*ins, *uf[1], out=buf)
                res = buf
            else:
                res = _fix(fn(*ins), ins[0].dtype if dt_rule else None)
                buf = res if chain and _owned(res, ins) else None
            env[oid] = res
        return env[out_id] if len(out_ids) == 1 else tuple(env[i] for i in out_ids)
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


# --- numba ------------------------------------------------------------------------------------------------
# The loop body is generated per node: each member becomes one expression over the element i of its
# operands (an array of the node's shape: `f3[i]`; a single value: `s3`). A written tensor's element is
# loaded once into `w3`, which each Assign member replaces and each later read of that storage reads, and
# is stored back at the end, so element by element the members see what they saw array by array (the
# kernel runs only when no written array overlaps another operand). Source cached in ~/.cache/ember/jit/,
# the compiled code by numba beside it (cache=True).
_NB_EXPR = {"Add": "{0} + {1}", "Sub": "{0} - {1}", "Mul": "{0} * {1}", "Div": "{0} / {1}", "Neg": "-{0}",
            # NumPy's maximum: NaN from either side, and the second operand when both are equal (+-0)
            "Relu": "({0} if {0} > z or {0} != {0} else z)",
            "Maximum": "({0} if {0} > {1} or {0} != {0} else {1})",
            "Where": "({1} if {0} else {2})",
            "Exp": "math.exp({0})", "Log": "math.log({0})", "Tanh": "math.tanh({0})",
            "Sqrt": "math.sqrt({0})", "Abs": "abs({0})"}
_CMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
_ASSIGN = {None: "{1}", "add": "{0} + {1}", "sub": "{0} - {1}", "mul": "{0} * {1}", "div": "{0} / {1}"}
EXACT = {"Add", "Sub", "Mul", "Div", "Neg", "Relu", "Maximum", "Where", "Compare", "Assign", "Abs"}
NUMBA_MIN = 256      # elements: below, one NumPy call per member is as quick
RUNS = {"numba": 0}  # calls that ran a generated loop (tests read it: a silent fallback is only slower)


def numba_mode() -> str:
    import os
    mode = os.environ.get("EMBER_JIT_KERNELS", "auto")
    return mode if mode in ("auto", "numba", "numpy") else "auto"


def numba_wanted(node) -> bool:
    """Whether a fused node should try the numba kernel (it may still find numba missing)."""
    mode = numba_mode()
    if mode == "numpy":
        return False
    if mode == "auto":
        if any(m.name not in EXACT for m in node.fused):
            return False
        n = 1
        for d in node.outputs[0].shape:
            n = n * d if isinstance(d, int) else NUMBA_MIN     # a symbolic dim: a batch, take it as large
        return n >= NUMBA_MIN
    return True


def _supported(node):
    """(float dtype name, written storages) when the numba kernel can run `node`, else None."""
    dt = node.inputs[0].dtype if node.inputs else None
    if dt not in ("float32", "float64"):
        return None
    shape = next((m.outputs[0].shape for m in node.fused if m.name != "Compare"), None)
    written = set()
    for m in node.fused:
        if m.name == "Compare":
            if m.attrs.get("op") not in _CMP or m.outputs[0].dtype != "bool":
                return None
        elif m.name == "Assign":
            a = m.attrs
            value = a.get("value")
            if a.get("key") is not None or a.get("op") not in _ASSIGN or m.mutates != (0,) or \
                    len(m.inputs) != (1 if value is not None else 2) or \
                    (value is not None and not (isinstance(value, (int, float)) and math.isfinite(value))):
                return None
            written.add(m.inputs[0].storage)
        elif m.name not in _NB_EXPR or m.outputs[0].dtype != dt:
            return None
        if m.outputs[0].shape != shape:
            return None
        for k, v in enumerate(m.inputs):
            want = "bool" if (m.name == "Where" and k == 0) else dt
            if v.dtype != want or v.shape not in (shape, ()):
                return None
    ext_storages = [v.storage for v in node.inputs]
    if any(ext_storages.count(s) != 1 for s in written):   # a written array reaches the loop once
        return None
    if any(v.dtype == "bool" for v in node.inputs) or shape == () or \
            (not written and node.outputs[0].dtype != dt):      # an outside mask, a single value, a bool result
        return None
    return dt, written


def build_numba(node):
    """A numba kernel for a fused node, or None (members it cannot run, numba missing)."""
    sup = _supported(node)
    if sup is None:
        return None
    _, written = sup
    try:
        import numba   # the optional extra: pip install ember[jit]
    except ImportError:
        return None
    del numba          # imported again by the generated module
    try:
        fn = _numba_kernel(node, written)
    except OSError:    # no writable cache directory for the kernel's source: NumPy's kernel
        return None
    fallback = build(node)
    from ..backends import get
    xp = get("cpu").xp
    full = [i for i, v in enumerate(node.inputs) if v.shape != ()]
    region = bool(written)
    if region:
        # the outputs are written arrays themselves: the input position of each one's storage
        pos = {v.storage: i for i, v in enumerate(node.inputs)}
        outs = tuple(pos[v.storage] for v in node.outputs)
        writes = [i for i in full if node.inputs[i].storage in written]

    def run(*ext):
        shape = ext[full[0]].shape
        for i in full:
            a = ext[i]
            if a.shape != shape or not a.flags.c_contiguous or a.__class__ is not xp.ndarray:
                return fallback(*ext)
        if not region:
            out = xp.empty(shape, ext[full[0]].dtype)
            fn(*ext, out)
            RUNS["numba"] += 1
            return out
        for w in writes:          # a written array overlapping another operand: element order would show
            if not ext[w].flags.writeable or any(i != w and xp.may_share_memory(ext[w], ext[i]) for i in full):
                return fallback(*ext)
        fn(*ext)
        RUNS["numba"] += 1
        return ext[outs[0]] if len(outs) == 1 else tuple(ext[i] for i in outs)
    return run


def _numba_kernel(node, written):
    import hashlib
    import importlib.util
    import os
    ext = [f"a{i}" for i in range(len(node.inputs))]
    names = {}
    arrays = {}       # storage -> k: its array is f{k}, its element in the loop w{k} (stored back at the end)
    lines, body = [], []
    for i, v in enumerate(node.inputs):
        if v.shape != ():
            lines.append(f"    f{i} = a{i}.reshape(-1)")
            names[v.id] = f"f{i}[i]"
            if v.storage in written:
                arrays[v.storage] = i
        else:
            lines.append(f"    s{i} = a{i}.reshape(1)[0]")
            names[v.id] = f"s{i}"
    held = set()      # written storages whose element is in w{k} (loaded or assigned)

    def ref(v):       # a value of a written storage is that storage's element as it is now
        k = arrays.get(v.storage)
        if k is None:
            return names[v.id]
        if k not in held:
            body.append(f"        w{k} = f{k}[i]")
            held.add(k)
        return f"w{k}"

    for j, m in enumerate(node.fused):
        if m.name == "Assign":
            k = arrays[m.inputs[0].storage]
            value = m.attrs.get("value")
            if value is not None:
                lines.append(f"    c{j} = f{k}.dtype.type({float(value)!r})")
            src = f"c{j}" if value is not None else ref(m.inputs[1])
            op = m.attrs.get("op")
            new = src if op is None else _ASSIGN[op].format(ref(m.inputs[0]), src)
            body.append(f"        w{k} = {new}")
            held.add(k)
            continue
        args = [ref(v) for v in m.inputs]
        expr = f"({args[0]} {_CMP[m.attrs['op']]} {args[1]})" if m.name == "Compare" else \
            _NB_EXPR[m.name].format(*args)
        body.append(f"        t{j} = {expr}")
        names[m.outputs[0].id] = f"t{j}"
    body.extend(f"        f{k}[i] = w{k}" for k in sorted(held))
    if written:
        k0 = min(arrays.values())
        sig, size, z = ", ".join(ext), f"f{k0}.size", f"f{k0}.dtype.type(0)"
    else:
        sig, size, z = ", ".join(ext + ["out"]), "o.size", "o.dtype.type(0)"
        lines.append("    o = out.reshape(-1)")
        body.append(f"        o[i] = {names[node.outputs[0].id]}")
    src = ("import math\nimport numba\n\n\n@numba.njit(cache=True, error_model=\"numpy\")\ndef kernel(" + sig + "):\n" +
           "\n".join(lines) + f"\n    z = {z}\n    for i in range({size}):\n" + "\n".join(body) + "\n")
    key = hashlib.sha256(src.encode()).hexdigest()[:16]
    d = os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "ember", "jit")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, f"chain_{key}.py")
    if not os.path.exists(path):   # our own generated source (no user text), written once, atomically
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            f.write(src)
        os.replace(tmp, path)
    name = f"ember_jit_chain_{key}"
    if name in sys.modules:
        return sys.modules[name].kernel
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod      # numba's disk cache finds the kernel's module by name when it loads
    spec.loader.exec_module(mod)
    return mod.kernel
