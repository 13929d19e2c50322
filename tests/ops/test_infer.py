"""Every primitive's `infer(*specs) -> (shape, dtype)` against its forward.

One table row per primitive: example inputs (shapes, dtype kinds) and attributes. Each row runs the
primitive through `apply` on CPU tensors (the forward) and on meta tensors (`infer`) and compares the
outputs' shapes and dtypes. A new primitive without a row, or without `infer`, fails here.
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import ember
from ember.autograd.function import Primitive
from ember.backends.meta import MetaArray
from ember.ops import attention as A
from ember.ops import layers as L
from ember.ops import primitives as P
from ember.ops import indexing as Ix
from ember.ops import random_prims as R
from ember.ops import elementwise as E
from ember.ops import linalg as LA
from ember.ops import inplace as I
from ember.ops import optim_prims as O
from ember.ops import special as Sp


def _all_primitives():
    """Every Primitive subclass defined in the ember package (imported modules)."""
    seen, todo = set(), [Primitive]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub not in seen:
                seen.add(sub)
                todo.append(sub)
    return sorted((c for c in seen if c.__module__.startswith("ember.")), key=lambda c: c.__name__)


IDX = np.array([[0, 2], [1, 1]])       # an index array input
COND = np.array([True, False, True])


# name: (Primitive, [input (shape, kind)], attrs). kind "f": the float dtype under test, "i": int64,
# "b": bool. Keep one row per primitive; add yours when you add a primitive.
CASES = {
    "Neg": (P.Neg, [((2, 3), "f")], {}),
    "Exp": (P.Exp, [((2, 3), "f")], {}),
    "Log": (P.Log, [((2, 3), "f")], {}),
    "Log1p": (P.Log1p, [((4,), "f")], {}),
    "Expm1": (P.Expm1, [((4,), "f")], {}),
    "Sin": (P.Sin, [((2, 3), "f")], {}),
    "Cos": (P.Cos, [((2, 3), "f")], {}),
    "Tan": (P.Tan, [((2, 3), "f")], {}),
    "Tanh": (P.Tanh, [((2, 3), "f")], {}),
    "Sigmoid": (P.Sigmoid, [((2, 3), "f")], {}),
    "Sqrt": (P.Sqrt, [((2, 3), "f")], {}),
    "Abs": (P.Abs, [((2, 3), "i")], {}),
    "Erf": (P.Erf, [((2, 3), "f")], {}),
    "Erfc": (P.Erfc, [((2, 3), "f")], {}),
    "Erfinv": (P.Erfinv, [((2, 3), "f")], {}),
    "Lgamma": (Sp.Lgamma, [((2, 3), "f")], {}),
    "Polygamma": (Sp.Polygamma, [((2, 3), "f")], {"n": 2}),
    "I0": (Sp.I0, [((2, 3), "f")], {}),
    "I0e": (Sp.I0e, [((2, 3), "f")], {}),
    "I1": (Sp.I1, [((2, 3), "f")], {}),
    "I1e": (Sp.I1e, [((2, 3), "f")], {}),
    "Erfcx": (Sp.Erfcx, [((2, 3), "f")], {}),
    "Ndtri": (Sp.Ndtri, [((2, 3), "f")], {}),
    "Igamma": (Sp.Igamma, [((2, 1), "f"), ((3,), "f")], {"upper": False}),
    "Relu": (P.Relu, [((2, 3), "f")], {}),
    "Clamp": (P.Clamp, [((2, 3), "f")], {"lo": -0.5, "hi": 0.5}),
    "Cast": (P.Cast, [((2, 3), "f")], {"dtype": np.dtype(np.int32)}),
    "ToDevice": (P.ToDevice, [((2, 3), "f")], {"dst": ember.device("cpu")}),
    "Clone": (P.Clone, [((2, 3), "f")], {}),
    "Random": (R.Random, [((2,), "i")], {"dist": "normal", "shape": (3, 5), "dtype": np.dtype(np.float32)}),
    "Add": (P.Add, [((2, 1, 3), "f"), ((4, 1), "f")], {}),
    "Sub": (P.Sub, [((3,), "i"), ((2, 3), "i")], {}),
    "Mul": (P.Mul, [((2, 3), "f"), ((), "f")], {}),
    "Div": (P.Div, [((5, 1), "f"), ((1, 4), "f")], {}),
    "Pow": (P.Pow, [((2, 3), "f"), ((3,), "f")], {}),
    "Maximum": (P.Maximum, [((2, 3), "f"), ((2, 1), "f")], {}),
    "Where": (P.Where, [COND, ((2, 3), "f"), ((1, 3), "f")], {}),
    "Sum": (P.Sum, [((2, 3, 4), "f")], {"axis": (0, 2), "keepdims": False}),
    "Amax": (P.Amax, [((2, 3, 4), "f")], {"axis": (1,), "keepdims": True, "neg": False}),
    "Prod": (P.Prod, [((2, 3), "i")], {"axis": None, "keepdims": False}),
    "Cumsum": (P.Cumsum, [((2, 3), "b")], {"axis": 1}),
    "Cumprod": (P.Cumprod, [((2, 3), "f")], {"axis": 0}),
    "Reshape": (P.Reshape, [((2, 3, 4), "f")], {"shape": (4, -1)}),
    "Permute": (P.Permute, [((2, 3, 4), "f")], {"dims": (2, 0, 1)}),
    "Expand": (P.Expand, [((3, 1), "f")], {"shape": (2, 3, 5)}),
    "Flip": (P.Flip, [((2, 3), "f")], {"axes": (1,)}),
    "Roll": (P.Roll, [((2, 3), "f")], {"shifts": (1,), "axes": (1,)}),
    "Index": (P.Index, [((4, 5, 6), "f"), np.array([0, 2, 2])], {"key": (slice(1, 3), None, P.SLOT, Ellipsis)}),
    "IndexAddInto": (P.IndexAddInto, [((4, 3), "f"), np.array([0, 2, 2])], {"key": (slice(None), P.SLOT),
                                                                               "shape": (4, 5)}),
    "IndexPut": (P.IndexPut, [((4, 5), "f"), ((3,), "f"), np.array([0, 2, 2])], {"key": (1, P.SLOT),
                                                                                 "accumulate": True}),
    "Cat": (P.Cat, [((2, 3), "f"), ((2, 5), "f")], {"axis": -1}),
    "Pad": (P.Pad, [((2, 3), "f")], {"pads": ((1, 0), (2, 3)), "value": 0.0}),
    "Gather": (P.Gather, [((2, 3), "f"), IDX], {"axis": 1}),
    "ScatterAdd": (P.ScatterAdd, [((2, 3), "f"), ((2, 2), "f"), IDX], {"axis": 1}),
    "Scatter": (P.Scatter, [((2, 3), "f"), ((2, 2), "f"), IDX], {"axis": 1}),
    "ScatterReduce": (Ix.ScatterReduce, [((2, 3), "f"), ((2, 2), "f"), IDX],
                      {"axis": 1, "op": "amax", "include_self": False}),
    "Unfold": (Ix.Unfold, [((2, 7), "f")], {"axis": 1, "size": 3, "step": 2}),
    "MatMul": (P.MatMul, [((5, 1, 2, 3), "f"), ((4, 3, 6), "f")], {}),
    "Einsum": (P.Einsum, [((2, 3), "f"), ((3, 4), "f")], {"eq": "ij,jk->ki"}),
    "Conv": (L.Conv, [((2, 4, 9, 8), "f"), ((6, 2, 3, 2), "f"), ((6,), "f")],
             {"stride": (2, 1), "dilation": (1, 2), "groups": 2, "padding": ((1, 0), (0, 2))}),
    "ConvInputGrad": (L.ConvInputGrad, [((2, 6, 4, 8), "f"), ((6, 2, 3, 2), "f")],
                      {"stride": (2, 1), "dilation": (1, 2), "groups": 2, "x_shape": (2, 4, 9, 8),
                       "padding": ((1, 0), (0, 2))}),
    "ConvWeightGrad": (L.ConvWeightGrad, [((2, 4, 9, 8), "f"), ((2, 6, 4, 8), "f")],
                       {"stride": (2, 1), "dilation": (1, 2), "groups": 2, "w_shape": (6, 2, 3, 2),
                        "padding": ((1, 0), (0, 2))}),
    "MaxPool": (L.MaxPool, [((2, 3, 9, 7), "f")], {"kernel": (3, 2), "stride": (2, 2), "dilation": (1, 2),
                                                   "padding": ((1, 1), (0, 1))}),
    "MaxPoolGrad": (L.MaxPoolGrad, [((2, 3, 9, 7), "f"), ((2, 3, 5, 3), "f"), ((2, 3, 5, 3), "f")],
                    {"kernel": (3, 2), "stride": (2, 2), "dilation": (1, 2), "padding": ((1, 1), (0, 1))}),
    "BatchNorm": (L.BatchNorm, [((2, 3, 4, 5), "f"), ((3,), "f"), ((3,), "f")], {"eps": 1e-5}),
    "BatchNormGrad": (L.BatchNormGrad, [((2, 3, 4, 5), "f"), ((2, 3, 4, 5), "f"), ((3,), "f"), ((3,), "f"),
                                        ((3,), "f")], {"eps": 1e-5}),
    "MaxPoolIndex": (L.MaxPoolIndex, [((2, 3, 9, 7), "f")], {"kernel": (3, 2), "stride": (2, 2), "dilation": (1, 2)}),
    "Gelu": (L.Gelu, [((2, 3), "f")], {}),
    "Softmax": (L.Softmax, [((2, 3), "f")], {"axis": -1}),
    "LogSoftmax": (L.LogSoftmax, [((2, 3), "f")], {"axis": 0}),
    "Normalize": (L.Normalize, [((2, 3, 4), "f")], {"n": 2, "eps": 1e-5}),
    "Embedding": (L.Embedding, [((5, 3), "f"), IDX], {"padding_idx": None}),
    "EmbeddingGrad": (L.EmbeddingGrad, [((2, 2, 3), "f"), IDX], {"num": 5, "padding_idx": 1}),
    "Linear": (L.Linear, [((4, 3), "f"), ((5, 3), "f"), ((5,), "f")], {}),
    "Attention": (A.Attention, [((2, 3, 4, 5), "f"), ((2, 3, 6, 5), "f"), ((2, 3, 6, 2), "f")],
                  {"scale": 0.5, "causal": True}),
    "AttentionGrad": (A.AttentionGrad, [((2, 3, 4, 5), "f"), ((2, 3, 6, 5), "f"), ((2, 3, 6, 2), "f"),
                                        ((2, 3, 4, 6), "f"), ((2, 3, 4, 2), "f")], {"scale": 0.5, "causal": False}),
    "LayerNorm": (L.LayerNorm, [((2, 3, 4), "f"), ((4,), "f"), ((4,), "f")], {"n": 1, "eps": 1e-5}),
    **{name: (getattr(E, name), [((2, 3), "f")], {})
       for name in ("Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh")},
    "Atan2": (E.Atan2, [((2, 1), "f"), ((3,), "f")], {}),
    "Solve": (LA.Solve, [((2, 3, 3), "s"), ((4, 1, 3, 2), "f")], {}),
    "Inv": (LA.Inv, [((2, 3, 3), "s")], {}),
    "LogAbsDet": (LA.LogAbsDet, [((2, 3, 3), "s")], {}),
    "Cholesky": (LA.Cholesky, [((2, 3, 3), "s")], {}),
    "Eigh": (LA.Eigh, [((2, 3, 3), "s")], {"UPLO": "L"}),
    "Qr": (LA.Qr, [((2, 4, 3), "f")], {}),
    "Svd": (LA.Svd, [((3, 5), "f")], {}),
    "SvdFull": (LA.Svd, [((2, 5, 3), "f")], {"full_matrices": True}),
    "QrComplete": (LA.Qr, [((5, 3), "f")], {"mode": "complete"}),
    "LuFactor": (LA.LuFactor, [((2, 3, 4), "f")], {}),
    "SlogdetSign": (LA.SlogdetSign, [((2, 3, 3), "f")], {}),
    "Assign": (I.Assign, [((2, 3), "f"), ((3,), "f")], {"op": "add"}),
    "AdamStep": (O.AdamStep, [((2, 3), "f"), ((2, 3), "f"), ((2, 3), "f"), ((2, 3), "f"), np.array(1.0),
                              np.array(1e-3)],
                 {"beta1": 0.9, "beta2": 0.999, "eps": 1e-8}),
    "ClassTarget": (P.ClassTarget, [np.array([[0, 3], [-100, 1]])], {"ignore_index": -100, "n_cls": 4}),
    "Compare": (P.Compare, [((2, 3), "f"), ((3,), "f")], {"op": "lt"}),
    "Logic": (P.Logic, [((2, 3), "b"), ((3,), "b")], {"op": "logical_xor"}),
    "Rounding": (P.Rounding, [((2, 3), "f")], {"op": "floor"}),
    "Predicate": (P.Predicate, [((2, 3), "f")], {"op": "isfinite"}),
    "DivMod": (P.DivMod, [((2, 3), "f"), ((3,), "f")], {"op": "remainder"}),
    "AnyAll": (P.AnyAll, [((2, 3), "b")], {"op": "any", "axis": (1,), "keepdims": True}),
    "ArgReduce": (P.ArgReduce, [((2, 3, 4), "f")], {"op": "argmax", "axis": 1, "keepdims": False}),
    "ArgSort": (P.ArgSort, [((2, 3), "f")], {"axis": 1, "descending": True}),
    "SearchSorted": (P.SearchSorted, [np.array([1.0, 2.0, 4.0]), ((2, 5), "f")], {"side": "right"}),
    "BitCast": (P.BitCast, [((2, 4), "i")], {"dtype": np.dtype(np.float64)}),
    "Nonzero": (P.Nonzero, [((2, 3), "b")], {}),
    "Unique": (P.Unique, [((2, 3), "i")], {"axis": None, "part": "values"}),
    "GeluGrad": (L.GeluGrad, [((2, 3), "f"), ((2, 3), "f")], {}),
    "SoftmaxGrad": (L.SoftmaxGrad, [((2, 3), "f"), ((2, 3), "f")], {"axis": 1}),
    "LayerNormGrad": (L.LayerNormGrad, [((2, 3, 4), "f"), ((2, 3, 4), "f"), ((4,), "f")],
                      {"n": 1, "eps": 1e-5, "with_w": True}),
    "AttentionGradPacked": (A.AttentionGradPacked, [((2, 3, 5, 4), "f")] * 3 + [((2, 3, 5, 5), "f"), ((2, 3, 5, 4), "f")],
                            {"scale": 0.5, "causal": True}),
    "AttentionGradPacked+Ev": (A.AttentionGradPacked, [((2, 3, 5, 4), "f")] * 2 + [((2, 3, 5, 6), "f"),
                               ((2, 3, 5, 5), "f"), ((2, 3, 5, 6), "f")], {"scale": 0.5, "causal": False}),
    "LayerNormGrad+b": (L.LayerNormGrad, [((2, 3, 4), "f"), ((2, 3, 4), "f"), ((4,), "f")],
                        {"n": 1, "eps": 1e-5, "with_w": True, "with_b": True}),
}
DATA_DEPENDENT = {"Nonzero", "Unique"}   # output shapes depend on values: infer raises, as torch's meta does
LINALG = {"Solve", "Inv", "LogAbsDet", "Cholesky", "Eigh", "Qr", "Svd", "SvdFull", "QrComplete", "SlogdetSign"}   # NumPy's linalg: float32/64 only

FLOATS = ("float32", "float64", "float16", "bfloat16")


def _inputs(specs, fdt, device):
    rng = np.random.default_rng(0)
    out = []
    for spec in specs:
        if isinstance(spec, np.ndarray):   # fixed values (index arrays, conditions, sorted sequences)
            t = ember.tensor(spec)
            out.append(t.to(device) if device != "cpu" else t)
            continue
        shape, kind = spec
        if kind == "f":
            t = ember.tensor(rng.uniform(0.5, 1.5, shape), dtype=fdt)
        elif kind == "s":   # symmetric positive definite matrices
            m = rng.uniform(-1, 1, shape)
            t = ember.tensor(m @ np.swapaxes(m, -1, -2) + shape[-1] * np.eye(shape[-1]), dtype=fdt)
        elif kind == "i":
            t = ember.tensor(rng.integers(1, 4, shape))
        else:
            t = ember.tensor(rng.integers(0, 2, shape).astype(bool))
        out.append(t.to(device) if device != "cpu" else t)
    return out


def test_every_primitive_class_in_the_source_defines_infer():
    """A static scan of ember/: also finds primitives in modules this test run has not imported."""
    import ast
    import pathlib
    root = pathlib.Path(ember.__file__).parent
    missing, found = [], 0
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and any(getattr(b, "id", getattr(b, "attr", None)) == "Primitive"
                                                      for b in node.bases):
                found += 1
                if not any(isinstance(f, ast.FunctionDef) and f.name == "infer" for f in node.body):
                    missing.append(f"{path.relative_to(root.parent)}: {node.name}")
    assert found >= 57
    assert not missing, f"Primitive subclasses without infer(self, *specs) -> (shape, dtype): {missing}"


def test_every_primitive_has_infer_and_a_case():
    prims = _all_primitives()
    assert len(prims) >= 57
    missing = [c.__name__ for c in prims if c.infer is Primitive.infer]
    assert not missing, f"primitives without infer(self, *specs) -> (shape, dtype): {missing}"
    untested = [c.__name__ for c in prims if c.__name__ not in CASES]
    assert not untested, f"primitives without a row in tests/ops/test_infer.py CASES: {untested}"


@pytest.mark.parametrize("fdt", FLOATS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_infer_matches_forward(name, fdt):
    prim, specs, attrs = CASES[name]
    if name == "Erf" and fdt == "bfloat16":
        pytest.skip("scipy's erf has no bfloat16 loop (the forward itself fails)")
    if name in DATA_DEPENDENT:
        with pytest.raises(Exception, match="depend"):
            prim.apply(*_inputs(specs, fdt, "meta"), **attrs)
        return
    if name in LINALG and fdt in ("float16", "bfloat16"):
        pytest.skip("NumPy's linalg has no float16/bfloat16 kernels")
    with np.errstate(all="ignore"):
        real = prim.apply(*_inputs(specs, fdt, "cpu"), **attrs)
    meta_attrs = dict(attrs, dst=ember.device("meta")) if name == "ToDevice" else attrs
    meta = prim.apply(*_inputs(specs, fdt, "meta"), **meta_attrs)
    reals, metas = (real, meta) if prim.multi_output else ((real,), (meta,))
    assert len(metas) == len(reals)
    for m, r in zip(metas, reals):
        assert isinstance(m._data, MetaArray) and m.device.type == "meta"
        assert (tuple(m.shape), m.dtype) == (tuple(r.shape), r.dtype), name
    # and infer itself, on bare specs (only .shape and .dtype, as a planner has), without apply's dtype rule
    node = prim.__new__(prim)
    node.__dict__.update(meta_attrs)
    if name == "ToDevice":
        node._src_device = ember.device("cpu")
    specs_only = [SimpleNamespace(shape=t.shape, dtype=t._data.dtype) for t in _inputs(specs, fdt, "cpu")]
    inferred = node.infer(*specs_only) if prim.multi_output else (node.infer(*specs_only),)
    raw = prim.__new__(prim)
    raw.__dict__.update(attrs)
    if name == "ToDevice":
        raw._src_device = ember.device("cpu")
    with np.errstate(all="ignore"):
        fwds = raw.forward(*[t._data for t in _inputs(specs, fdt, "cpu")])
    fwds = fwds if prim.multi_output else (fwds,)
    for (shape, dt), fwd, r in zip(inferred, fwds, reals):
        assert tuple(shape) == tuple(r.shape)
        if np.dtype(dt) != fwd.dtype:   # only where apply casts a float forward back to its input's dtype
            assert prim.keeps_dtype and np.dtype(dt) == r._data.dtype, (name, dt, fwd.dtype)


def test_infer_errors_name_the_op():
    x = ember.empty(2, 3, device="meta")
    with pytest.raises(RuntimeError, match="matmul.*do not align"):
        P.MatMul.apply(x, ember.empty(2, 3, device="meta"))
    with pytest.raises(RuntimeError, match="reshape.*invalid for input of size 6"):
        P.Reshape.apply(x, shape=(4, -1))
    with pytest.raises(RuntimeError, match="add: shapes .* cannot be broadcast"):
        P.Add.apply(x, ember.empty(4, device="meta"))


# ---------------------------------------------------------------- the shared rules of ember/ops/_infer.py
def meta(*shape, dtype=ember.float32):
    return ember.empty(*shape, dtype=dtype, device="meta")


@pytest.mark.parametrize("a,b", [((0, 3), (3, 5)), ((2, 3), (3, 0)), ((2, 1), (3, 5)), ((2, 3), (1, 5)),
                                 ((2, 1), (1, 5)), ((2, 0), (1, 5)), ((2, 1), (0, 5))])
def test_einsum_on_meta_broadcasts_size_one_and_keeps_size_zero(a, b):
    """A size-1 index broadcasts against any size, in either operand (the first operand's 1 was refused),
    and a size-0 index stays 0 (it became 1), as torch computes."""
    import torch
    want = torch.einsum("ij,jk->ik", torch.ones(a), torch.ones(b)).shape
    assert ember.einsum("ij,jk->ik", meta(*a), meta(*b)).shape == tuple(want)
    assert P.Einsum.apply(meta(*a), meta(*b), eq="ij, jk -> ik").shape == tuple(want)


def test_shape_rule_errors_exactly():
    from ember.ops import _infer as I
    from helpers import raises_exactly
    raises_exactly(lambda: P.Einsum.apply(meta(2, 3), meta(4, 5), eq="ij, jk -> ik"), RuntimeError,
                   "einsum: index 'j' has sizes 3 and 4 in 'ij, jk -> ik'")
    raises_exactly(lambda: I._broadcast_shape("expand", (3, 2), (2, 3, 5), to=True), RuntimeError,
                   "expand: the expanded size of the tensor (5) must match the existing size (2) at non-singleton "
                   "dimension 2: (3, 2) to (2, 3, 5)")
    raises_exactly(lambda: I._broadcast_shape("where", (2, 3), (1,), (4, 1, 2)), RuntimeError,
                   "where: shapes (2, 3) and (1,) and (4, 1, 2) cannot be broadcast together: 2 != 3 at dimension 2")
    raises_exactly(lambda: I._concatenated([(2, 3), (3, 5), (2, 1)], 1), RuntimeError,
                   "cat: sizes of tensors must match except in dimension 1: (2, 3) and (3, 5) and (2, 1)")
    raises_exactly(lambda: I._concatenated([(2, 3), (2,)], -1), RuntimeError,
                   "cat: sizes of tensors must match except in dimension 1: (2, 3) and (2,)")
    raises_exactly(lambda: P.MatMul.apply(meta(5, 2, 3), meta(4, 2)), RuntimeError,
                   "matmul: shapes (5, 2, 3) and (4, 2) do not align: 3 != 4")
    raises_exactly(lambda: P.MatMul.apply(meta(5, 2, 3), meta(4, 3, 6)), RuntimeError,
                   "matmul: shapes (5,) and (4,) cannot be broadcast together: 4 != 5 at dimension 0")
    for shape, n in [((0, -1), 6), ((0, -1), 0), ((4, -1), 6), ((5,), 6)]:
        raises_exactly(lambda: I._reshaped((n,), shape), RuntimeError,
                       f"reshape: shape {shape} is invalid for input of size {n}")
    raises_exactly(lambda: P.Index.apply(meta(4, 5), meta(4, dtype=ember.bool), key=(P.SLOT,)), RuntimeError,
                   "index: a boolean mask on device='meta' (4,): the result's size depends on the mask's values, "
                   "which meta tensors do not have")


def test_shape_rules():
    from ember.ops import _infer as I
    assert I._broadcast_shape("expand", (3, 1), (-1, 4), to=True) == (3, 4)
    assert I._broadcast_shape("expand", (3, 1), (2, -1, 4), to=True) == (2, 3, 4)
    assert (meta(0, 3) + meta(1, 3)).shape == (0, 3) and (meta(2, 1, 3) * meta(0, 1)).shape == (2, 0, 3)
    assert I._concatenated([(2, 3), (2, 5), (2, 1)], -1) == (2, 9)
    assert P.MatMul.apply(meta(7, 2, 3), meta(3, 6)).shape == (7, 2, 6)
    assert P.MatMul.apply(meta(2, 1, 2, 3), meta(4, 3, 6)).shape == (2, 4, 2, 6)
    got = I._reshaped((2, 3), (3, -1))
    assert got == (3, 2) and all(type(s) is int for s in got)
    assert I._reshaped((2, 3), 6) == (6,) and I._reshaped((0, 3), (-1, 3)) == (0, 3)
    assert I._reduced((), 0, True) == () and I._reduced((), (), False) == ()
    assert I._indexed((4, 5), MetaArray((3, 2), np.dtype(np.int64))) == (3, 2, 5)
    assert I._indexed((4, 5), (slice(None), MetaArray((3,), np.dtype(np.int64)))) == (4, 3)
    assert I._indexed((4, 5), np.array([True, False, True, False])) == (2, 5)
    m = I._meta((2,), np.dtype(np.float16))
    assert isinstance(m, MetaArray) and m.shape == (2,) and m.dtype == np.float16


def test_tuple_of_ints_attribute_type():
    """`SHAPE`/`INTS` accept a tuple whose items are all ints (bools included, Python's subclass), and
    nothing else: not a list, not a tuple with a float."""
    from ember.ops._attr_types import INTS, SHAPE, AXES
    assert isinstance((2, 3), SHAPE) and isinstance((), INTS) and isinstance((True, 1), INTS)
    assert not isinstance([2, 3], SHAPE) and not isinstance((2, 3.0), SHAPE) and not isinstance(3, INTS)
    assert isinstance(None, AXES) and not isinstance((None,), AXES)


def test_linear_on_meta_takes_leading_dims_and_names_misaligned_shapes():
    """Linear's rule on x of more than 2 dims: every leading dim kept; a mismatch names both last dims."""
    from helpers import raises_exactly
    assert L.Linear.apply(meta(2, 3, 4), meta(5, 4), meta(5)).shape == (2, 3, 5)
    raises_exactly(lambda: L.Linear.apply(meta(2, 3, 4), meta(5, 3)), RuntimeError,
                   "linear: x (2, 3, 4) and weight (5, 3) do not align: 4 != 3", located=False)


def test_layer_norm_grad_packed_shape_on_meta_with_one_normalised_element():
    """with_w packs R rows of dx and one row of dw: (R + 1, D) in ints, also where D is 1."""
    args = dict(n=1, eps=1e-5, with_w=True)
    real = L.LayerNormGrad.apply(ember.ones(3, 2, 1), ember.ones(3, 2, 1), ember.ones(1), **args)
    shape = L.LayerNormGrad.apply(meta(3, 2, 1), meta(3, 2, 1), meta(1), **args).shape
    assert shape == tuple(real.shape) == (7, 1) and all(type(s) is int for s in shape)
    node = L.LayerNormGrad.__new__(L.LayerNormGrad)
    node.__dict__.update(args)
    inferred, _ = node.infer(SimpleNamespace(shape=(3, 4), dtype=np.float32),
                             SimpleNamespace(shape=(3, 4), dtype=np.float32))
    assert inferred == (4, 4) and all(type(s) is int for s in inferred)
    args["with_b"] = True   # one more row: db
    real = L.LayerNormGrad.apply(ember.ones(3, 2, 1), ember.ones(3, 2, 1), ember.ones(1), **args)
    assert L.LayerNormGrad.apply(meta(3, 2, 1), meta(3, 2, 1), meta(1), **args).shape == tuple(real.shape) == (8, 1)


def test_layer_norm_grad_with_b_needs_with_w_on_meta():
    """db is packed after dw's row: with_b alone is refused by name (no shape to give)."""
    with pytest.raises(ValueError, match="LayerNormGrad: with_b needs with_w"):
        L.LayerNormGrad.apply(meta(3, 4), meta(3, 4), meta(4), n=1, eps=1e-5, with_b=True)
