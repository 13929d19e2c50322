"""Mixed precision with torch's API: `autocast` and `GradScaler` (ember.amp.GradScaler loads on first use).

Inside `ember.autocast("cpu")` the ops on torch's lower-precision list (matmul, linear, conv, attention,
...) run in bfloat16 (float16 on CUDA), the ops on its float32 list (the losses, cdist, prod, the
decompositions, ...) run in float32, and every other op runs on its inputs' dtypes, so a bfloat16
Linear output feeds ReLU in bfloat16, as torch:

    with ember.autocast("cpu"):
        loss = F.cross_entropy(model(x), y)     # Linear in bfloat16, the loss in float32
    loss.backward()                             # gradients in the parameters' float32

How: the listed functions carry `@autocast_op(policy)`. While autocast is on in this thread, the
decorator casts the call's floating inputs (not float64, as torch) with `Tensor.to`, a recorded Cast,
so gradients come back in each input's own dtype; the function then runs with autocast suspended, as
torch runs an autocast kernel with its Autocast key excluded (cdist's inner matmul stays float32). A
composite that is no listed op (einsum's callers, multi-head attention) autocasts through the listed
functions it calls, as torch's CompositeImplicit ops do. The state is per thread, as grad mode's.

`ember.compile` keys its traces on `state_key()`: a function traced outside autocast retraces inside
it, and casts made inside a traced function are recorded in its graph.

Not matched yet: `nn.LSTM` under autocast returns float32 where torch returns bfloat16 (torch casts the
whole fused `lstm` op's weights; Ember's LSTM is a loop of cell steps whose float32 cell state promotes
the gates back); RNN, GRU and the cells match. The float32-list ops Ember lacks (fft, stft, lstsq, eig)
and `F.pad`'s reflect/replicate modes are not listed.
"""
from __future__ import annotations

import functools
import threading
import warnings

from .. import _dtype

__all__ = ["autocast", "GradScaler", "is_autocast_available", "is_autocast_enabled", "set_autocast_enabled",
           "get_autocast_dtype", "set_autocast_dtype", "is_autocast_cache_enabled", "set_autocast_cache_enabled",
           "clear_autocast_cache", "autocast_increment_nesting", "autocast_decrement_nesting",
           "get_autocast_cpu_dtype", "set_autocast_cpu_dtype", "is_autocast_cpu_enabled", "set_autocast_cpu_enabled",
           "get_autocast_gpu_dtype", "set_autocast_gpu_dtype", "get_autocast_ipu_dtype", "set_autocast_ipu_dtype",
           "is_autocast_ipu_enabled", "set_autocast_ipu_enabled", "get_autocast_xla_dtype", "set_autocast_xla_dtype",
           "is_autocast_xla_enabled", "set_autocast_xla_enabled"]

# torch's defaults per device type; autocast itself runs on cpu and cuda, ipu and xla keep torch's stubs
_DEFAULT_DTYPE = {"cpu": _dtype.bfloat16, "cuda": _dtype.float16, "ipu": _dtype.float16, "xla": _dtype.bfloat16}
_LOW = (_dtype.float16, _dtype.bfloat16, _dtype.float32)   # the dtypes a cast applies to (float64 is left)


class _State(threading.local):
    """The calling thread's autocast state; the class attributes are every new thread's defaults."""
    enabled = {}          # device type -> True (replaced, never mutated, so the class default stays empty)
    dtypes = {}           # device type -> dtype set by set_autocast_dtype
    cache_enabled = True
    nesting = 0
    suspended = False     # inside an autocast op: the ops it calls run as written (torch's excluded key)
    listed = False        # this thread has an entry in ON


STATE = _State()

# One entry per thread with autocast on and not suspended: while it is empty (autocast is off in every
# thread, the usual case) a decorated op costs one list test (grad_mode.OFF's trick).
ON: list = []


def _cache() -> dict:
    """This thread's reused casts: id(float32 leaf) -> (leaf, version, grad mode, dtype, its cast)."""
    c = STATE.__dict__.get("cache")
    if c is None:
        c = STATE.cache = {}
    return c


def _sync(state) -> None:
    active = any(state.enabled.values()) and not state.suspended
    if active and not state.listed:
        ON.append(None)
    elif state.listed and not active:
        ON.pop()
    state.listed = active


def _device_type(device_type, op) -> str:
    if not isinstance(device_type, str):
        raise ValueError(f"{op}: expected `device_type` of type `str`, got: `{type(device_type)}`")
    name = device_type.split(":")[0]
    if name not in _DEFAULT_DTYPE:
        raise RuntimeError(f"{op}: unsupported autocast device_type {device_type!r}; expected one of "
                           f"{', '.join(_DEFAULT_DTYPE)}")
    return name


def is_autocast_available(device_type: str) -> bool:
    """Whether `ember.autocast(device_type)` can run there (Ember: 'cpu', and 'cuda' with a CUDA device).

    >>> ember.amp.is_autocast_available("cpu")
    True
    """
    if device_type == "cuda":
        from .. import cuda
        return cuda.is_available()
    return device_type == "cpu"


def is_autocast_enabled(device_type: str = None) -> bool:
    """Whether autocast is on for `device_type` in this thread (no argument: 'cuda', as torch).

    >>> with ember.autocast("cpu"):
    ...     ember.is_autocast_enabled("cpu")
    True
    """
    return STATE.enabled.get(_device_type("cuda" if device_type is None else device_type,
                                          "is_autocast_enabled"), False)


def set_autocast_enabled(device_type, enabled=None) -> None:
    """Turn autocast on or off for `device_type` in this thread; `set_autocast_enabled(True)` means cuda.
    Prefer `with ember.autocast(...)`, which restores the previous state."""
    if enabled is None:   # torch's one-argument form
        device_type, enabled = "cuda", device_type
    if not isinstance(enabled, bool):
        raise TypeError(f"set_autocast_enabled: argument 'enabled' must be bool, not {type(enabled).__name__}")
    name = _device_type(device_type, "set_autocast_enabled")
    STATE.enabled = {**STATE.enabled, name: enabled}
    _sync(STATE)


def get_autocast_dtype(device_type: str):
    """The dtype autocast casts to on `device_type` in this thread (cpu: bfloat16, cuda: float16 by default).

    >>> ember.get_autocast_dtype("cpu")
    ember.bfloat16
    """
    name = _device_type(device_type, "get_autocast_dtype")
    return STATE.dtypes.get(name, _DEFAULT_DTYPE[name])


def set_autocast_dtype(device_type: str, dtype) -> None:
    """Set the dtype autocast casts to on `device_type` in this thread."""
    name = _device_type(device_type, "set_autocast_dtype")
    STATE.dtypes = {**STATE.dtypes, name: _dtype.to_dtype(dtype)}


def is_autocast_cache_enabled() -> bool:
    """Whether autocast reuses its lower-precision casts of weights within a region (default True)."""
    return STATE.cache_enabled


def set_autocast_cache_enabled(enabled: bool) -> None:
    STATE.cache_enabled = bool(enabled)


def clear_autocast_cache() -> None:
    """Drop the casts of weights that autocast keeps for reuse (done when the outermost region exits)."""
    _cache().clear()


def autocast_increment_nesting() -> int:
    STATE.nesting += 1
    return STATE.nesting


def autocast_decrement_nesting() -> int:
    STATE.nesting -= 1
    return STATE.nesting


def _getter(device_type, what):
    if what == "dtype":
        fn = lambda: get_autocast_dtype(device_type)  # noqa: E731
    else:
        fn = lambda: is_autocast_enabled(device_type)  # noqa: E731
    fn.__doc__ = f"torch's legacy form of `get_autocast_{what}({device_type!r})`."
    return fn


def _setter(device_type, what):
    if what == "dtype":
        fn = lambda dtype: set_autocast_dtype(device_type, dtype)  # noqa: E731
    else:
        fn = lambda enabled: set_autocast_enabled(device_type, enabled)  # noqa: E731
    fn.__doc__ = f"torch's legacy form of `set_autocast_{what}({device_type!r}, ...)`."
    return fn


get_autocast_cpu_dtype, set_autocast_cpu_dtype = _getter("cpu", "dtype"), _setter("cpu", "dtype")
get_autocast_gpu_dtype, set_autocast_gpu_dtype = _getter("cuda", "dtype"), _setter("cuda", "dtype")
get_autocast_ipu_dtype, set_autocast_ipu_dtype = _getter("ipu", "dtype"), _setter("ipu", "dtype")
get_autocast_xla_dtype, set_autocast_xla_dtype = _getter("xla", "dtype"), _setter("xla", "dtype")
is_autocast_cpu_enabled, set_autocast_cpu_enabled = _getter("cpu", "enabled"), _setter("cpu", "enabled")
is_autocast_ipu_enabled, set_autocast_ipu_enabled = _getter("ipu", "enabled"), _setter("ipu", "enabled")
is_autocast_xla_enabled, set_autocast_xla_enabled = _getter("xla", "enabled"), _setter("xla", "enabled")


def state_key() -> tuple:
    """This thread's autocast state as a hashable value (ember.compile's guard)."""
    s = STATE
    return (tuple(sorted((k, v) for k, v in s.enabled.items() if v)),
            tuple(sorted((k, v.name) for k, v in s.dtypes.items())), s.suspended)


class autocast:
    """Run the ops inside in mixed precision on `device_type` ('cpu': bfloat16, 'cuda': float16 by
    default): matmul, linear, conv and attention in `dtype`, losses and decompositions in float32, the
    rest in their inputs' dtypes. A context manager and a decorator; nestable (`autocast(..., enabled=False)`
    inside turns it off for a block); per thread. `cache_enabled` reuses the casts of weights in a region.

    >>> import ember.nn as nn
    >>> with ember.autocast("cpu"):
    ...     y = nn.Linear(3, 2)(ember.ones(4, 3))
    >>> y.dtype
    ember.bfloat16
    """

    def __init__(self, device_type: str, dtype=None, enabled: bool = True, cache_enabled=None):
        self.device = _device_type(device_type, "autocast")
        if not isinstance(enabled, bool):
            raise TypeError(f"autocast: argument 'enabled' must be bool, not {type(enabled).__name__}")
        self.fast_dtype = get_autocast_dtype(self.device) if dtype is None else _dtype.to_dtype(dtype)
        self._cache_enabled = is_autocast_cache_enabled() if cache_enabled is None else bool(cache_enabled)
        self._enabled = enabled
        if self.device not in ("cpu", "cuda"):
            raise RuntimeError(f"autocast: device_type {device_type!r} is not supported by Ember (cpu, cuda)")
        # torch 2.13's checks: CUDA needs a device (any dtype is taken there), the CPU bfloat16 or float16
        if enabled and self.device == "cuda":
            if not is_autocast_available("cuda"):
                warnings.warn("CUDA is not available. Disabling autocast.", stacklevel=2)
                self._enabled = False
        elif enabled and self.fast_dtype not in (_dtype.bfloat16, _dtype.float16):
            warnings.warn(f"In CPU autocast, but the target dtype is not supported. Disabling autocast.\n"
                          f"CPU Autocast only supports dtypes of ember.bfloat16, ember.float16 currently "
                          f"(got {self.fast_dtype}).", stacklevel=2)
            self._enabled = False

    def __enter__(self):
        s = STATE
        self._prev = (s.enabled, s.dtypes, s.cache_enabled)
        s.enabled = {**s.enabled, self.device: self._enabled}
        s.dtypes = {**s.dtypes, self.device: self.fast_dtype}
        s.cache_enabled = self._cache_enabled
        s.nesting += 1
        _sync(s)
        return self

    def __exit__(self, *exc):
        s = STATE
        s.nesting -= 1
        if s.nesting == 0:
            _cache().clear()
        s.enabled, s.dtypes, s.cache_enabled = self._prev
        _sync(s)
        return False

    def __call__(self, fn):
        args = (self.device, self.fast_dtype, self._enabled, self._cache_enabled)

        @functools.wraps(fn)
        def wrapper(*a, **k):
            with autocast(*args):
                return fn(*a, **k)
        return wrapper


# ---------------------------------------------------------------------------------- the ops' side
def autocast_op(policy: str):
    """Decorator of an op on one of torch's autocast lists: 'lower' (lower_precision_fp: float inputs
    to the autocast dtype), 'fp32' (float inputs to float32; not when the call passes `dtype=`) or
    'keep' (one torch kernel on no list, built here from listed ops: runs on its inputs' dtypes)."""
    if policy not in ("lower", "fp32", "keep"):
        raise ValueError(f"autocast_op: unknown policy {policy!r}")

    def decorate(fn):
        @functools.wraps(fn)
        def op(*args, **kwargs):
            if not ON:   # autocast is off in every thread
                return fn(*args, **kwargs)
            return _run(fn, policy, args, kwargs)
        return op
    return decorate


def active() -> bool:
    """Whether autocast is on in this thread and not suspended by an autocast op running."""
    return bool(ON) and STATE.listed


def _first_tensor(values):
    for v in values:
        if hasattr(v, "_data") and hasattr(v, "_device"):
            return v
        if isinstance(v, (list, tuple)):
            t = _first_tensor(v)
            if t is not None:
                return t
    return None


def _run(fn, policy, args, kwargs):
    s = STATE
    if s.suspended or not s.listed:
        return fn(*args, **kwargs)
    first = _first_tensor(args)
    if first is None:
        first = _first_tensor(kwargs.values())
    device = first._device.type if first is not None else "cpu"
    if not s.enabled.get(device, False):
        return fn(*args, **kwargs)
    if policy == "lower":
        to = s.dtypes.get(device, _DEFAULT_DTYPE.get(device))
    elif policy == "fp32" and kwargs.get("dtype") is None:
        to = _dtype.float32
    else:
        to = None
    if to is not None:
        args = tuple(_cast(a, to, device) for a in args)
        kwargs = {k: _cast(v, to, device) for k, v in kwargs.items()}
    s.suspended = True
    _sync(s)
    try:
        return fn(*args, **kwargs)
    finally:
        s.suspended = False
        _sync(s)


def _cast(x, to, device):
    if isinstance(x, (list, tuple)):
        return type(x)(_cast(v, to, device) for v in x)
    if not (hasattr(x, "_data") and hasattr(x, "_device")) or x.dtype is to or x.dtype not in _LOW \
            or x._device.type != device:
        return x
    if to is _dtype.float32 or not STATE.cache_enabled or x.dtype is not _dtype.float32 \
            or not (x.requires_grad and x._node is None):
        return x.to(to)
    # a float32 weight to the lower dtype: reuse the cast within the region, as torch (not while a
    # dispatch mode, e.g. ember.compile's tracer, records: the cast must be in its graph)
    from ..autograd.dispatch import mode_open
    from ..autograd.grad_mode import STATE as grad_state
    if mode_open():
        return x.to(to)
    version = x._vc[0] if x._vc else 0
    cache = _cache()
    hit = cache.get(id(x))
    if hit is not None and hit[0] is x and hit[1] == version and hit[2] == grad_state.enabled and hit[3] is to:
        return hit[4]
    out = x.to(to)
    cache[id(x)] = (x, version, grad_state.enabled, to, out)
    return out


def __getattr__(name):
    if name == "GradScaler":
        from .grad_scaler import GradScaler
        return GradScaler
    raise AttributeError(f"module 'ember.amp' has no attribute {name!r}")
