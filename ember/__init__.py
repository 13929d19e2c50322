"""Ember: a deep learning framework you can read end to end, with PyTorch's names and habits.

>>> import ember
>>> x = ember.randn(3, requires_grad=True)
>>> (x * x).sum().backward()
>>> bool((x.grad == 2 * x).all())
True
"""
from __future__ import annotations

import builtins as _builtins
from typing import TYPE_CHECKING

from ._dtype import (dtype, float16, bfloat16, float32, float64, int8, int16, int32, int64, uint8, bool,
                     half, float, double, short, int, long, get_default_dtype, set_default_dtype,
                     promote_types, result_type, finfo, iinfo, can_cast)
from ._device import device, get_default_device, set_default_device
from ._print import set_printoptions
from ._memory import OutOfMemoryError
from ._tensor import Tensor
from . import _tensor_methods  # noqa: F401  (binds the ops as Tensor methods)
from .ops.math import *  # noqa: F401,F403
from .ops.math import abs, max, min, pow, round, sum, all, any  # noqa: A004  (torch's names)
from .ops.shape import *  # noqa: F401,F403
from .ops.creation import *  # noqa: F401,F403
from .ops.elementwise import *  # noqa: F401,F403
from .ops.aliases import *  # noqa: F401,F403
from .ops.reductions import *  # noqa: F401,F403
from .ops.stacking import *  # noqa: F401,F403
from .ops.pointwise import *  # noqa: F401,F403
from .ops.indexing import *  # noqa: F401,F403
from .ops.products import *  # noqa: F401,F403
from .ops.special import *  # noqa: F401,F403
from .ops.functional_aliases import *  # noqa: F401,F403
from .ops.method_functions import *  # noqa: F401,F403
from .ops.windows import *  # noqa: F401,F403
from .ops.shape import to_device as _to_device  # noqa: F401
from .random import (Generator, manual_seed, seed, initial_seed, get_rng_state, set_rng_state,
                     default_generator, rand, randn, randint, randperm, normal, bernoulli, multinomial,
                     rand_like, randn_like, randint_like, poisson, binomial)
from . import autograd
from .autograd import no_grad, enable_grad, set_grad_enabled, inference_mode, is_grad_enabled, \
    GradientTape, is_inference_mode_enabled
from .autograd.anomaly import is_anomaly_enabled, is_anomaly_check_nan_enabled, set_anomaly_enabled
from . import backends
from . import cuda
from . import accelerator
from . import linalg
from .linalg import cholesky_solve, cholesky_inverse  # noqa: F401  (torch.* names)
from .linalg._tensors import _vander as vander  # noqa: F401  (torch.vander, NumPy's)
from .linalg import lu_unpack, geqrf, ormqr, householder_product as orgqr  # noqa: F401  (torch.* names)
from .linalg import matrix_power, matrix_exp  # noqa: F401  (torch.* names)
from . import scaling
from . import amp
from .amp import (autocast, is_autocast_enabled, set_autocast_enabled, get_autocast_dtype, set_autocast_dtype,
                  is_autocast_cache_enabled, set_autocast_cache_enabled, clear_autocast_cache,
                  autocast_increment_nesting, autocast_decrement_nesting, get_autocast_cpu_dtype,
                  set_autocast_cpu_dtype, is_autocast_cpu_enabled, set_autocast_cpu_enabled, get_autocast_gpu_dtype,
                  set_autocast_gpu_dtype, get_autocast_ipu_dtype, set_autocast_ipu_dtype, is_autocast_ipu_enabled,
                  set_autocast_ipu_enabled, get_autocast_xla_dtype, set_autocast_xla_dtype, is_autocast_xla_enabled,
                  set_autocast_xla_enabled)
from .amp import __all__ as _amp_all
from .planner import summary  # noqa: E402  (ember.summary: the hardware planner)
from ._dtype import __all__ as _dtype_all
from .ops.math import __all__ as _math_all
from .ops.shape import __all__ as _shape_all
from .ops.creation import __all__ as _creation_all
from .ops.elementwise import __all__ as _elementwise_all
from .ops.aliases import __all__ as _aliases_all
from .ops.reductions import __all__ as _reductions_all
from .ops.stacking import __all__ as _stacking_all
from .ops.pointwise import __all__ as _pointwise_all
from .ops.indexing import __all__ as _indexing_all
from .ops.products import __all__ as _products_all
from .ops.special import __all__ as _special_all
from .ops.functional_aliases import __all__ as _functional_aliases_all
from .ops.method_functions import __all__ as _method_functions_all
from .ops.windows import __all__ as _windows_all

__version__ = "0.1.0"

# torch computes 1 / 0, log(-1) and 0 / 0 silently (inf, NaN); NumPy warns about them. Its floating-point
# warnings are silenced where Ember's own code runs the arithmetic (module ember.*), and only there: a
# user's NumPy code still warns as before. (Per call np.errstate would cost a microsecond per op.)
import warnings as _warnings  # noqa: E402
_warnings.filterwarnings("ignore", r"(divide by zero|invalid value|overflow|underflow) encountered",
                         RuntimeWarning, r"ember(\.|$)")

Size = tuple


def set_num_threads(n: _builtins.int) -> None:
    """Threads that CPU ops use inside one op (NumPy's BLAS pool), as `torch.set_num_threads`.

    >>> ember.set_num_threads(1)
    >>> ember.get_num_threads()
    1
    """
    if isinstance(n, _builtins.bool) or not isinstance(n, _builtins.int) or n < 1:
        raise ValueError(f"set_num_threads: expected a positive integer number of threads, got {n!r}")
    backends.get("cpu").set_num_threads(n)


def get_num_threads() -> _builtins.int:
    """The number of threads CPU ops use inside one op, as `torch.get_num_threads`."""
    return backends.get("cpu").get_num_threads()


# torch's reproducibility and precision settings, kept so that scripts setting them port. Ember's CPU ops
# are deterministic (NumPy, one order of summation) and its float32 GEMMs run in float32, so they change
# nothing; on CUDA, the scatter-style accumulations (index_add_, scatter_add, an embedding's gradient) use
# CuPy's atomic adds whatever the flag says.
_DETERMINISTIC = {"mode": 0}     # torch's debug mode: 0 off, 1 warn only, 2 on
_MATMUL_PRECISION = {"value": "highest"}


def use_deterministic_algorithms(mode: _builtins.bool, *, warn_only: _builtins.bool = False) -> None:
    """`torch.use_deterministic_algorithms`: a flag Ember keeps (its CPU ops are deterministic already)."""
    if not isinstance(mode, _builtins.bool):
        raise TypeError(f"use_deterministic_algorithms(): argument 'mode' must be bool, not {type(mode).__name__}")
    _DETERMINISTIC["mode"] = (1 if warn_only else 2) if mode else 0


def are_deterministic_algorithms_enabled() -> _builtins.bool:
    return _DETERMINISTIC["mode"] > 0


def is_deterministic_algorithms_warn_only_enabled() -> _builtins.bool:
    return _DETERMINISTIC["mode"] == 1


def set_deterministic_debug_mode(debug_mode) -> None:
    """`torch.set_deterministic_debug_mode`: 0 / 'default', 1 / 'warn', 2 / 'error'."""
    names = {"default": 0, "warn": 1, "error": 2}
    if isinstance(debug_mode, str):
        if debug_mode not in names:
            raise RuntimeError(f"invalid value of debug_mode, expected one of `default`, `warn`, `error`, but got "
                               f"{debug_mode}")
        debug_mode = names[debug_mode]
    elif debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}")
    _DETERMINISTIC["mode"] = _builtins.int(debug_mode)


def get_deterministic_debug_mode() -> _builtins.int:
    return _DETERMINISTIC["mode"]


def set_float32_matmul_precision(precision: str) -> None:
    """`torch.set_float32_matmul_precision` ('highest', 'high', 'medium'): kept; Ember's float32 GEMMs
    always run in float32 ('highest')."""
    if precision not in ("highest", "high", "medium"):
        import warnings
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current "
                      "set_float32_matmul_precision call has no effect.", UserWarning, stacklevel=2)
        return
    _MATMUL_PRECISION["value"] = precision


def get_float32_matmul_precision() -> str:
    return _MATMUL_PRECISION["value"]


def is_tensor(obj) -> _builtins.bool:
    return isinstance(obj, Tensor)


def is_floating_point(t) -> _builtins.bool:
    return t.dtype.is_floating_point


def is_inference(t) -> _builtins.bool:
    """`t.is_inference()`: whether `t` was made inside `ember.inference_mode()`."""
    return t.is_inference()


def numel(t) -> _builtins.int:
    return t.numel()


def detach(t):
    return t.detach()


def clone(t):  # type: ignore[no-redef]  # replaces ops.shape.clone (star import above): goes through the method
    return t.clone()


# heavier subpackages load on first use (`ember.nn`, `ember.keras`, ...): one name per line
_LAZY = {
    "nn",
    "optim",
    "utils",
    "datasets",
    "transforms",
    "serialization",
    "profiler",
    "onnx",
    "keras",
    "lm",
    "jit",
    "plot",
    "models",
    "special",
    "func",
    "testing",
    "distributions",
    "multiprocessing",   # torch.multiprocessing: registers its tensor reductions when imported
    "__config__",   # torch.__config__: show() and parallel_info()
}


if TYPE_CHECKING:   # what __getattr__ returns, for type checkers (`ember.compile(model)`, `ember.save(...)`)
    from .jit import compile
    from .serialization import save, load
    from ._lowrank import svd_lowrank, pca_lowrank
    from .func import vmap


def __getattr__(name):
    import importlib
    if name in _LAZY:
        return importlib.import_module(f"ember.{name}")
    if name == "compile":   # torch.compile's name for the tracing compiler (ember/jit/)
        from . import jit
        return jit.compile
    if name == "vmap":   # torch.vmap is torch.func.vmap
        from . import func
        return func.vmap
    if name == "GradScaler":   # torch.GradScaler is torch.amp.GradScaler
        return amp.GradScaler
    if name in ("save", "load"):
        from . import serialization
        return getattr(serialization, name)
    if name in ("svd_lowrank", "pca_lowrank"):   # torch's randomized SVD (ember/_lowrank.py)
        from . import _lowrank
        return getattr(_lowrank, name)
    raise AttributeError(f"module 'ember' has no attribute {name!r}")


# the public names: what `from ember import *` gives, and what tests/api_coverage.py checks every test run uses
__all__ = (
    _dtype_all + ["half", "float", "double", "short", "int", "long", "result_type", "device", "Tensor", "Size"]
    + _math_all + _shape_all + _creation_all + _elementwise_all + _aliases_all + _reductions_all + _stacking_all
    + _pointwise_all + _indexing_all
    + _products_all + _special_all + ["cholesky_solve", "cholesky_inverse", "vander", "lu_unpack", "geqrf", "orgqr", "ormqr",
                         "matrix_power", "matrix_exp", "svd_lowrank", "pca_lowrank"]
    + _functional_aliases_all + _method_functions_all + _windows_all
    + ["Generator", "manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state", "default_generator",
       "rand", "randn", "randint", "randperm", "normal", "bernoulli", "multinomial", "rand_like", "randn_like",
       "randint_like", "poisson", "binomial"]
    + ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled", "GradientTape",
       "is_inference_mode_enabled", "is_anomaly_enabled", "is_anomaly_check_nan_enabled", "set_anomaly_enabled"]
    + ["get_default_device", "set_default_device", "set_printoptions", "is_inference"]
    + ["is_tensor", "is_floating_point", "numel", "detach", "save", "load", "set_num_threads", "get_num_threads"]
    + ["use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
       "is_deterministic_algorithms_warn_only_enabled", "set_deterministic_debug_mode", "get_deterministic_debug_mode",
       "set_float32_matmul_precision", "get_float32_matmul_precision"]
    + [n for n in _amp_all if n != "is_autocast_available"]
)
