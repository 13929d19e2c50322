"""torch's other names for ops Ember has: `multiply` for `mul`, `fix` for `trunc`, `torch.det` for
`torch.linalg.det`, ... Each is the same function or a one-line call, re-exported by `ember` and bound
as a Tensor method (with its `_` form) by `ember/_tensor_methods.py`."""
from __future__ import annotations

import builtins
import math as _math

from .._errors import op_error, warn
from .._tensor import Tensor
from . import math as M

__all__ = ["multiply", "divide", "subtract", "fix", "sgn", "positive", "clamp_min", "clamp_max", "inverse", "det",
           "slogdet", "logdet", "cholesky", "pdist", "ctc_loss", "fill", "rsub", "range", "frobenius_norm",
           "nuclear_norm", "qr", "svd", "row_stack", "trapz", "pinverse", "chain_matmul", "norm_except_dim", "spmm",
           "set_default_tensor_type", "FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor",
           "IntTensor", "ShortTensor", "CharTensor", "ByteTensor", "BoolTensor"]
# legacy tensor types (the end of this file): ember.FloatTensor ..., and ember.cuda.FloatTensor ... (TYPE_NAMES)
TENSOR_TYPES = ("FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor", "IntTensor",
                "ShortTensor", "CharTensor", "ByteTensor", "BoolTensor")
# torch.* functions that torch.Tensor has no method for
FUNCTIONS_ONLY = ("pdist", "ctc_loss", "fill", "rsub", "range", "frobenius_norm", "nuclear_norm", "row_stack",
                  "trapz", "chain_matmul", "norm_except_dim", "spmm", "set_default_tensor_type") + TENSOR_TYPES

multiply = M.mul
divide = M.div
subtract = M.sub
fix = M.trunc
# torch.spmm(mat1, mat2) multiplies a sparse or strided mat1 by a strided mat2; Ember's tensors are all strided
# (the GCN examples pass a dense normalised adjacency matrix)
spmm = M.mm
sgn = M.sign   # torch's sgn differs from sign only for complex inputs, which Ember does not have


def positive(input):
    """The input itself (torch.positive, unary +)."""
    return input


def clamp_min(input, min):
    return M.clamp(input, min=min)


def clamp_max(input, max):
    return M.clamp(input, max=max)


def inverse(input):
    from .. import linalg
    return linalg.inv(input)


def det(input):
    from .. import linalg
    return linalg.det(input)


def slogdet(input):
    from .. import linalg
    return linalg.slogdet(input)


def logdet(input):
    """log(det(input)): NaN where the determinant is negative, -inf where it is 0 (as torch)."""
    from .. import linalg
    sign, logabsdet = linalg.slogdet(input)
    return M.where(sign < 0, float("nan"), logabsdet)


def cholesky(input, upper=False):
    from .. import linalg
    return linalg.cholesky(input, upper=upper)


def pdist(input, p=2.0):
    """torch.pdist: `ember.nn.functional.pdist`."""
    from ..nn.functional import vision
    return vision.pdist(input, p)


_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=0, zero_infinity=False):
    """torch.ctc_loss: `ember.nn.functional.ctc_loss` with torch's integer reduction (0 'none', 1 'mean',
    2 'sum'; a name works too). Its default is 'none', as torch.ctc_loss's (F.ctc_loss's is 'mean')."""
    from ..nn.functional import loss
    return loss.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank,
                         _REDUCTIONS.get(reduction, reduction), zero_infinity)


def fill(input, value):
    """A new tensor of input's shape and dtype filled with `value` (a number or a 0-dim tensor, whose
    gradient is the sum of the output's; input gets a zero gradient), as torch.fill.

    >>> ember.fill(ember.zeros(2, 2), 7).tolist()
    [[7.0, 7.0], [7.0, 7.0]]
    """
    from . import creation as C
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise op_error("fill", f"fill only supports 0-dimension value tensor but got tensor with "
                                   f"{value.ndim} dimensions")
        value = value.to(input.dtype)
    else:
        value = C.full_like(input, value)
    return M.where(C.ones_like(input, dtype=_bool()), value, input)   # where: input's gradient is zero


def _bool():
    from .. import _dtype
    return _dtype.bool


def rsub(input, other, alpha=1):
    """other - alpha * input (torch.rsub: sub with its operands swapped).

    >>> ember.rsub(ember.tensor([1.0, 2.0]), 5).tolist()
    [4.0, 3.0]
    """
    if not isinstance(other, Tensor):
        from . import creation as C
        other = C.tensor(other, device=input.device)
    return M.sub(other, input, alpha=alpha)


def range(start, end, step=1, *, dtype=None, device=None, requires_grad=False):   # noqa: A001 (torch's name)
    """Values from start to end INCLUSIVE, in steps of `step`; the default dtype is the default float
    dtype whatever the arguments. Deprecated in torch (it warns, as torch does): use `ember.arange`.

    >>> ember.range(1, 4).tolist()
    [1.0, 2.0, 3.0, 4.0]
    """
    from .. import _dtype
    from . import creation as C
    warn("range", "ember.range is deprecated and will be removed in a future release because its behavior is "
                   "inconsistent with Python's range builtin. Instead, use ember.arange, which produces values "
                   "in [start, end).")
    dt = _dtype.to_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()
    start, end, step = (x.item() if isinstance(x, Tensor) else x for x in (start, end, step))
    if not dt.is_floating_point and dt is not _dtype.bool:   # computed in the dtype's scalars, as torch's
        start, end, step = builtins.int(start), builtins.int(end), builtins.int(step)
    if step == 0:
        raise op_error("range", "step must be nonzero")
    if (step > 0 and end < start) or (step < 0 and end > start):
        raise op_error("range", f"upper bound and lower bound inconsistent with step sign (start={start}, "
                                f"end={end}, step={step})")
    if dt is _dtype.bool:
        raise op_error("range", "not implemented for 'Bool'", NotImplementedError)
    n = int(_math.floor((end - start) / step)) + 1
    out = (C.arange(n, dtype=_dtype.float64, device=device) * step + start).to(dt)
    return out.requires_grad_(True) if requires_grad else out


def frobenius_norm(input, dim, keepdim=False):
    """sqrt(sum(input ** 2)) over `dim` (at most 2 dims; () for all). Deprecated in torch: use
    `ember.linalg.vector_norm(input, 2, dim, keepdim)`.

    >>> ember.frobenius_norm(ember.ones(2, 2), (0, 1)).item()
    2.0
    """
    from .. import linalg
    dims = (dim,) if isinstance(dim, builtins.int) else tuple(dim)
    if len(dims) > 2:
        raise op_error("frobenius_norm", f"Expected at most 2 dimensions, but got {len(dims)} dimensions instead "
                                         f"(dim={dim})")
    return linalg.vector_norm(input, 2, dims if dims else None, keepdim)


def nuclear_norm(input, dim=None, keepdim=False):
    """The sum of the singular values over the matrix dims `dim` (default the last two), as torch's
    `nuclear_norm(input, keepdim=False)` and `nuclear_norm(input, dim, keepdim=False)`. Deprecated in
    torch: use `ember.linalg.matrix_norm(input, 'nuc', dim, keepdim)`.

    >>> round(ember.nuclear_norm(ember.eye(3)).item(), 4)
    3.0
    """
    from .. import linalg
    if isinstance(dim, builtins.bool):   # nuclear_norm(input, keepdim)
        dim, keepdim = None, dim
    return linalg.matrix_norm(input, "nuc", (-2, -1) if dim is None else dim, keepdim)


def qr(input, some=True):
    """(Q, R) of `ember.linalg.qr`: reduced with some=True, complete with some=False (torch.qr).

    >>> q, r = ember.qr(ember.eye(2))
    >>> q.shape, r.shape
    ((2, 2), (2, 2))
    """
    from .. import linalg
    return linalg.qr(input, "reduced" if some else "complete")


def svd(input, some=True, compute_uv=True):
    """(U, S, V) with input = U diag(S) V^T: V, not linalg.svd's Vh. some=False gives square U and V;
    compute_uv=False gives S and zero-filled U (m, m) and V (n, n), as torch.svd.

    >>> u, s, v = ember.svd(ember.tensor([[3.0, 0.0], [0.0, -2.0]]))
    >>> s.tolist()
    [3.0, 2.0]
    """
    from .. import linalg
    from . import creation as C
    if not compute_uv:
        s = linalg.svdvals(input)
        m, n = input.shape[-2], input.shape[-1]
        batch = tuple(input.shape[:-2])
        return (C.zeros(*batch, m, m, dtype=s.dtype, device=input.device), s,
                C.zeros(*batch, n, n, dtype=s.dtype, device=input.device))
    u, s, vh = linalg.svd(input, full_matrices=not some)
    return u, s, vh.mT


# ------------------------------------------------------------------ legacy and deprecated names torch keeps
def row_stack(tensors):
    """torch.row_stack: `ember.vstack` (rows stacked; a 1-D tensor is one row).

    >>> ember.row_stack([ember.ones(2), ember.zeros(2)]).tolist()
    [[1.0, 1.0], [0.0, 0.0]]
    """
    from . import shape
    return shape.vstack(tensors)


def trapz(y, x=None, *, dx=None, dim=-1):
    """torch.trapz: `ember.trapezoid`, with torch's two forms trapz(y, *, dx=1, dim=-1) and
    trapz(y, x, *, dim=-1) (x a tensor; x and dx together are refused, as torch refuses them).

    >>> ember.trapz(ember.tensor([1.0, 2.0, 4.0]), dx=2.0).item()
    9.0
    """
    from . import reductions
    if x is not None and (dx is not None or not isinstance(x, Tensor)):
        given = "x and dx" if dx is not None else f"x of type {type(x).__name__}"
        raise op_error("trapz", f"expected trapz(y, *, dx=1, dim=-1) or trapz(y, x, *, dim=-1) with x a Tensor, "
                                f"got {given}", TypeError)
    return reductions.trapezoid(y, x, dx=dx, dim=dim)


def pinverse(input, rcond=1e-15):
    """torch.pinverse: `ember.linalg.pinv(input, rcond=rcond)`; singular values at or below rcond times the
    largest count as zero (torch's default rcond 1e-15, not linalg.pinv's eps * max(m, n)).

    >>> ember.pinverse(ember.tensor([[2.0, 0.0], [0.0, 0.0]])).tolist()
    [[0.5, 0.0], [0.0, 0.0]]
    """
    from .. import linalg
    return linalg.pinv(input, rcond=rcond)


def chain_matmul(*matrices):
    """The product of 2-D matrices, multiplied in the order of fewest operations (`ember.linalg.multi_dot`);
    one matrix gives a copy of it. Deprecated in torch (it warns, as torch does): use linalg.multi_dot.

    >>> ember.chain_matmul(ember.ones(2, 3), ember.ones(3, 4), ember.ones(4, 1)).tolist()
    [[12.0], [12.0]]
    """
    from .. import linalg
    from . import shape
    warn("chain_matmul", "ember.chain_matmul is deprecated and will be removed in a future release. Use "
                         "ember.linalg.multi_dot instead, which accepts a list of two or more tensors rather "
                         "than multiple parameters.")
    if not matrices:
        raise op_error("chain_matmul", "chain_matmul(): Expected one or more matrices")
    for k, m in enumerate(matrices):
        if not isinstance(m, Tensor):
            raise TypeError(f"chain_matmul: expected a Tensor for matrix {k}, got {type(m).__name__}")
        if m.ndim != 2:
            raise op_error("chain_matmul", f"Tensor dimension is {m.ndim}, expected 2 instead (matrix {k} "
                                           f"{tuple(m.shape)})")
    if len(matrices) == 1:
        return shape.clone(matrices[0])
    return linalg.multi_dot(matrices)


def norm_except_dim(v, pow=2, dim=0):   # noqa: A002 (torch's name)
    """The `pow`-norm of v over every dim except `dim`, kept as size-1 dims (shape (n, 1, 1) for dim 0 of a
    3-D v); dim=-1 means the norm of the whole tensor (a 0-dim result), as torch's, which old weight
    normalisation code uses.

    >>> ember.norm_except_dim(ember.tensor([[3.0, 4.0], [0.0, 1.0]])).tolist()
    [[5.0], [1.0]]
    """
    from .. import linalg
    from .._dims import wrap_dim
    if dim == -1:
        return linalg.vector_norm(v, pow)
    if v.ndim == 0:
        raise op_error("norm_except_dim", f"Dimension specified as {dim} but tensor has no dimensions", IndexError)
    d = wrap_dim(dim, v.ndim, "norm_except_dim")
    n = v.shape[d]
    rest = _math.prod(v.shape) // n if n else _math.prod(v.shape[:d] + v.shape[d + 1:])
    kept = [1] * v.ndim
    kept[d] = n
    rows = v.movedim(d, 0).reshape(n, rest)                       # (n, everything else)
    return linalg.vector_norm(rows, pow, 1).reshape(kept)


# ------------------------------------------------------------------ legacy tensor types: ember.FloatTensor ...
# Tensor.type() gives torch's own strings ('torch.FloatTensor', 'torch.cuda.LongTensor'), not 'ember.'
# ones: ported code compares them (`x.type() == 'torch.FloatTensor'`), and Ember has no other meaning for them.
TYPE_NAMES = {"float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
              "bfloat16": "BFloat16Tensor", "int64": "LongTensor", "int32": "IntTensor", "int16": "ShortTensor",
              "int8": "CharTensor", "uint8": "ByteTensor", "bool": "BoolTensor"}


def type_name(t) -> str:
    """torch's type string of tensor t: 'torch.FloatTensor', 'torch.cuda.FloatTensor', 'torch.meta.FloatTensor'."""
    kind = t.device.type
    return f"torch.{'' if kind == 'cpu' else kind + '.'}{TYPE_NAMES[t.dtype.name]}"


def parse_type(op, t):
    """(dtype, device type) named by a legacy type: a class (ember.FloatTensor, ember.cuda.LongTensor,
    ember.Tensor) or its string ('torch.FloatTensor', 'ember.cuda.FloatTensor', 'torch.Tensor'). A ValueError
    for any other class or string, as torch's."""
    from .. import _dtype
    if t is Tensor or t in ("torch.Tensor", "ember.Tensor"):
        return _dtype.get_default_dtype(), "cpu"
    if isinstance(t, TensorType):
        return t.dtype, "cuda" if t.is_cuda else "cpu"
    if isinstance(t, str):
        prefix, _, name = t.rpartition(".")
        by_name = {v: k for k, v in TYPE_NAMES.items()}
        if prefix in ("torch", "ember", "torch.cuda", "ember.cuda") and name in by_name:
            return _dtype.to_dtype(by_name[name]), "cuda" if prefix.endswith("cuda") else "cpu"
    raise op_error(op, f"invalid type: {getattr(t, '__name__', t)!r}", ValueError)


class TensorType(type):
    """The metaclass of the legacy tensor types (torch's `tensortype`): `ember.FloatTensor(...)` makes a
    float32 tensor, and `isinstance(x, ember.FloatTensor)` checks x's dtype and device type."""

    dtype = None   # set on each class
    is_cuda = False
    is_sparse = False

    def __instancecheck__(cls, obj) -> builtins.bool:
        return isinstance(obj, Tensor) and obj.dtype is cls.dtype and (obj.device.type == "cuda") == cls.is_cuda

    def __call__(cls, *args, size=None, device=None):
        return _legacy_new(cls, args, size, device)


def _legacy_new(cls, args, size, device):
    """torch's legacy constructors: T() an empty tensor, T(*sizes) or T(size=sizes) a tensor of that
    shape (torch leaves it uninitialised; Ember fills it with zeros), T(data) a copy of a sequence or array,
    T(tensor) an alias of a tensor of this type."""
    from .. import _device
    from . import creation as C, shape as S
    op = cls.__name__
    kind = "cuda" if cls.is_cuda else "cpu"
    if device is not None and _device.device(device).type != kind:
        raise op_error(op, f"legacy constructor expects device type: {kind} but device type: "
                           f"{_device.device(device).type} was passed")
    dev = device if device is not None else kind
    if size is not None:
        if args:
            raise TypeError(f"{op}: expected data or sizes, not both (got {len(args)} arguments and size={size!r})")
        args = tuple(size)
        if not args:   # size=(): a 0-dim tensor
            return C.zeros((), dtype=cls.dtype, device=dev)
    if not args:
        return C.zeros(0, dtype=cls.dtype, device=dev)
    if all(isinstance(a, builtins.int) and not isinstance(a, builtins.bool) for a in args):
        for n in args:
            if n < 0:
                raise op_error(op, f"Trying to create tensor with negative dimension {n}: {list(args)}")
        return C.zeros(args, dtype=cls.dtype, device=dev)
    if len(args) > 1:
        raise op_error(op, f"expected data or integer sizes, got {len(args)} arguments "
                           f"({', '.join(type(a).__name__ for a in args)})", TypeError)
    data = args[0]
    if isinstance(data, Tensor):
        if data.dtype is not cls.dtype or data.device.type != kind:
            raise op_error(op, f"expected {cls.__module__}.{op} (got {type_name(data)})", TypeError)
        return S.view(data, data.shape)
    if isinstance(data, (builtins.float, builtins.bool)):
        raise op_error(op, f"data must be a sequence (got {type(data).__name__})", TypeError)
    return C.tensor(data, dtype=cls.dtype, device=dev)


def tensor_type(name, dtype, cuda=False):
    """The legacy tensor type `name` of `dtype` (on CUDA with cuda=True): a class made by TensorType."""
    return TensorType(name, (), {"__module__": "ember.cuda" if cuda else "ember", "dtype": dtype,
                                 "is_cuda": cuda, "__doc__": f"torch's legacy {dtype.name} tensor type."})


def _types():
    from .. import _dtype
    return {TYPE_NAMES[name]: tensor_type(TYPE_NAMES[name], _dtype.to_dtype(name)) for name in TYPE_NAMES}


_CPU_TYPES = _types()
FloatTensor = _CPU_TYPES["FloatTensor"]
DoubleTensor = _CPU_TYPES["DoubleTensor"]
HalfTensor = _CPU_TYPES["HalfTensor"]
BFloat16Tensor = _CPU_TYPES["BFloat16Tensor"]
LongTensor = _CPU_TYPES["LongTensor"]
IntTensor = _CPU_TYPES["IntTensor"]
ShortTensor = _CPU_TYPES["ShortTensor"]
CharTensor = _CPU_TYPES["CharTensor"]
ByteTensor = _CPU_TYPES["ByteTensor"]
BoolTensor = _CPU_TYPES["BoolTensor"]

_WARNED_DEFAULT_TYPE = False


def set_default_tensor_type(t) -> None:
    """Deprecated in torch (it warns once, as torch): sets the default float dtype from a legacy float type
    or its name (`ember.DoubleTensor`, 'torch.DoubleTensor'); a CUDA type also makes CUDA the default device,
    a CPU type the CPU. Use `ember.set_default_dtype` and `ember.set_default_device`.

    >>> ember.set_default_tensor_type(ember.DoubleTensor)
    >>> ember.tensor([1.5]).dtype
    ember.float64
    >>> ember.set_default_tensor_type("torch.FloatTensor")
    """
    from .. import _device, _dtype
    global _WARNED_DEFAULT_TYPE
    if not _WARNED_DEFAULT_TYPE:
        _WARNED_DEFAULT_TYPE = True
        warn("set_default_tensor_type", "ember.set_default_tensor_type() is deprecated (as torch's since 2.1), "
                                        "please use ember.set_default_dtype() and ember.set_default_device() "
                                        "as alternatives.")
    if not isinstance(t, (str, type)):
        raise op_error("set_default_tensor_type", f"expected a tensor type or its name, got "
                                                  f"{type(t).__name__} {t!r}", TypeError)
    dt, kind = parse_type("set_default_tensor_type", t)
    if not dt.is_floating_point:
        raise op_error("set_default_tensor_type", f"only floating-point types are supported as the default type "
                                                  f"(got {getattr(t, '__name__', t)})", TypeError)
    _dtype.set_default_dtype(dt)
    _device.set_default_device(None if kind == "cpu" else kind)
