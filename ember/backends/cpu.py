"""The reference backend: NumPy on the host. The interface is described in backends/__init__.py."""
import contextlib

import numpy as np

from . import copy_via_host, get, run_with

xp = np

class _KernelTable(dict):
    """{Primitive class: fn(node, *arrays)}, a CPU kernel run instead of the primitive's `xp` forward
    (the compiled ones: cpu_kernels.py). Each entry is mirrored on the class as `cpu_kernel`, which is
    what Primitive.apply reads: a primitive without a kernel pays one attribute read, no lookup or call.
    Subclasses of a registered class inherit its kernel."""

    def __setitem__(self, cls, fn):
        super().__setitem__(cls, fn)
        cls.cpu_kernel = staticmethod(fn)

    def __delitem__(self, cls):
        super().__delitem__(cls)
        cls.cpu_kernel = None

    def pop(self, cls, *default):
        if cls in self:
            cls.cpu_kernel = None
        return super().pop(cls, *default)


kernels: dict = _KernelTable()


def register_kernel(cls, fn) -> None:
    """Run `fn(node, *arrays)` instead of `cls.forward` on host arrays."""
    kernels[cls] = fn


def unregister_kernel(cls) -> None:
    kernels.pop(cls, None)


def is_available() -> bool:
    return True


def allocate(shape, dtype, device=None):
    return np.empty(shape, dtype)


def from_host(host_array, device=None):
    return host_array


to_device = from_host


def to_host(array):
    return array


def copy(array, device):
    return copy_via_host(get("cpu"), array, device)


def synchronize(device=None) -> None:
    pass


def stream(device=None):
    return contextlib.nullcontext()


def run(node, arrays):
    return run_with(kernels, node, arrays)


def pin_memory(host_array):
    # page-locked memory only helps copies to a GPU; ask the CUDA backend when one is usable
    from . import is_available as _avail, get
    if _avail("cuda"):
        return get("cuda").pin_memory(host_array)
    return host_array


def is_pinned(host_array) -> bool:
    from . import _loaded
    cuda = _loaded.get("cuda")
    return bool(cuda and cuda.is_available() and cuda.is_pinned(host_array))


def scatter_add(out, key, values) -> None:
    """out[key] += values in place, repeated indices accumulating."""
    np.add.at(out, key, values)


def scatter_reduce(out, key, values, ufunc: str) -> None:
    """out[key] = ufunc(out[key], values) in place, repeated indices combining ('multiply', 'maximum',
    'minimum': NumPy's `ufunc.at`)."""
    getattr(np, ufunc).at(out, key, values)


_erf = None


def erf(x):
    global _erf
    if _erf is None:
        try:
            from scipy.special import erf as _erf  # vectorised, full precision
        except ImportError:  # correct to the last bit, ~100x slower
            import math
            _verf = np.vectorize(math.erf, otypes=[np.float64])
            _erf = lambda a: _verf(a).astype(a.dtype)  # noqa: E731
    return _erf(x)


_erfc = None


def erfc(x):
    """The complementary error function (SciPy's when installed, else math.erfc per element: exact,
    ~100x slower)."""
    global _erfc
    if _erfc is None:
        try:
            from scipy.special import erfc as _erfc
        except ImportError:
            import math
            _verfc = np.vectorize(math.erfc, otypes=[np.float64])
            _erfc = lambda a: _verfc(a).astype(a.dtype)  # noqa: E731
    return _erfc(x)


_erfinv = None


def erfinv(x):
    """The inverse error function (SciPy's when installed, else `host.erfinv`: a rational first guess
    refined by Newton steps on erf, float64 inside)."""
    global _erfinv
    if _erfinv is None:
        try:
            from scipy.special import erfinv as _erfinv
        except ImportError:
            from .host import erfinv as _host_erfinv
            _erfinv = lambda a: _host_erfinv(a).astype(a.dtype)  # noqa: E731
    return _erfinv(x)


_special: dict = {}


def _scipy_special(name: str, fallback: str):
    """`scipy.special.<name>` when SciPy is installed, else `special_host.<fallback>` (NumPy, float64
    inside); looked up on first use, so `import ember` does not import SciPy."""
    fn = _special.get(name)
    if fn is None:
        try:
            import scipy.special
            fn = getattr(scipy.special, name)
        except ImportError:
            from . import special_host
            fn = getattr(special_host, fallback)
        _special[name] = fn
    return fn


def lgamma(x):
    """log|Gamma(x)| (SciPy's gammaln, else math.lgamma per element)."""
    return _scipy_special("gammaln", "lgamma")(x)


def digamma(x):
    """The derivative of lgamma (SciPy's psi, else the recurrence and the asymptotic series)."""
    return _scipy_special("psi", "digamma")(x)


def polygamma(n: int, x):
    """The n-th derivative of digamma, n >= 1 (SciPy's, else n! zeta(n + 1, x) with Cephes' zeta)."""
    return _scipy_special("polygamma", "polygamma")(n, x)


def i0(x):
    return _scipy_special("i0", "i0")(x)


def i0e(x):
    return _scipy_special("i0e", "i0e")(x)


def i1(x):
    return _scipy_special("i1", "i1")(x)


def i1e(x):
    return _scipy_special("i1e", "i1e")(x)


def erfcx(x):
    """exp(x^2) erfc(x) (SciPy's, else exp(x^2) math.erfc(x) below 10 and the asymptotic series above)."""
    return _scipy_special("erfcx", "erfcx")(x)


def ndtri(x):
    """The inverse of the standard normal CDF (SciPy's, else Newton steps on ndtr)."""
    return _scipy_special("ndtri", "ndtri")(x)


def gammainc(a, x):
    """The regularized lower incomplete gamma function P(a, x) (SciPy's, else the series and continued
    fraction of special_host)."""
    return _scipy_special("gammainc", "gammainc")(a, x)


def gammaincc(a, x):
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x)."""
    return _scipy_special("gammaincc", "gammaincc")(a, x)


# Elements per block in `blockwise`: the temporaries of a chain of ufuncs on blocks of this size stay in
# the CPU's L2 cache instead of streaming through main memory once per ufunc.
BLOCK = 1 << 15


def blockwise(fn, *arrays):
    """`fn(*arrays)` computed over blocks of leading rows, results stitched together.

    Each array is 1-D (elementwise work) or 2-D (rows, row_len) with `fn` treating rows independently
    (softmax, normalisation). `fn` returns an array or a tuple of arrays with one row per input row.
    For arrays larger than the cache this runs a chain of NumPy ufuncs about twice as fast, as every
    intermediate stays in cache. Small inputs go straight to `fn`.
    """
    a0 = arrays[0]
    rows = a0.shape[0]
    step = max(1, BLOCK // max(1, a0.size // max(rows, 1)))
    if rows <= step:
        return fn(*arrays)
    first = fn(*(a[:step] for a in arrays))
    single = not isinstance(first, tuple)
    firsts = (first,) if single else first
    outs = tuple(np.empty((rows,) + f.shape[1:], dtype=f.dtype) for f in firsts)
    for o, f in zip(outs, firsts):
        o[:step] = f
    for s in range(step, rows, step):
        res = fn(*(a[s:s + step] for a in arrays))
        for o, r in zip(outs, (res,) if single else res):
            o[s:s + step] = r
    return outs[0] if single else outs


# --- the host allocator -----------------------------------------------------------------------
# A training step allocates and frees the same large arrays (activations, gradients: 0.1-50 MB each) on
# every iteration. glibc's malloc serves a block above its mmap threshold (128 KiB at start, adjusted
# upwards only as far as 32 MiB, and only in some heap states) with a fresh mmap and returns it with
# munmap, and trims the heap's free top back to the OS: the next step then page-faults that memory in
# again, one fault per 4 KiB page. Measured on W5 (bench/RESULTS.md): in 3 of 5 processes 5,000 faults
# and 15 ms of kernel time per 30 ms step, in the others none, depending on the heap's state. So on glibc
# Ember raises both thresholds once, at import: blocks under 64 MiB come from the heap and freed memory
# up to 256 MiB stays there for the next step. The cost: a process keeps up to that much freed memory
# instead of returning it. EMBER_MALLOC_TUNING=0 in the environment leaves malloc as it is, as does a
# glibc malloc setting of the user's own (MALLOC_*_ variables, GLIBC_TUNABLES).

MMAP_THRESHOLD = 64 << 20
TRIM_THRESHOLD = 256 << 20
malloc_tuned = False   # whether tune_malloc() changed glibc's settings in this process


def tune_malloc() -> bool:
    """Raise glibc malloc's mmap and trim thresholds (see above); False where it does nothing."""
    global malloc_tuned
    import os
    import sys
    env = os.environ
    if env.get("EMBER_MALLOC_TUNING", "1") == "0" or not sys.platform.startswith("linux") \
            or any(k.startswith("MALLOC_") and k.endswith("_") for k in env) or "malloc" in env.get("GLIBC_TUNABLES", ""):
        return False
    import ctypes
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version   # glibc only: musl's mallopt does nothing
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
    malloc_tuned = bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
    return malloc_tuned


tune_malloc()


# --- intra-op threads (torch.set_num_threads) -------------------------------------------------
# NumPy's parallelism is its BLAS library's thread pool (OpenBLAS, MKL, ...); threadpoolctl finds it
# whichever one NumPy was built with, so Ember sets no environment variables and guesses no library.

def set_num_threads(n: int) -> None:
    from threadpoolctl import threadpool_limits
    from . import cpu_pool
    cpu_pool.ensure_threads(n)     # OpenBLAS's jobs run on the CPU pool once it runs: a thread for each
    threadpool_limits(limits=n, user_api="blas")


def get_num_threads() -> int:
    from threadpoolctl import threadpool_info
    counts = [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]
    return max(counts) if counts else 1


def rows_sum(x, axis, keepdims):
    """A float32/float64 NumPy sum over every axis but one whose memory is rows (M, C), the kept axis
    contiguous (the bias gradients of Linear and of channels-last Conv, BatchNorm's channel sums), as one
    BLAS matrix-vector product with ones: NumPy adds such rows one at a time, 10-20x slower at W4's
    (50176, 16) and less accurate. None for anything else (NumPy's sum)."""
    nd = x.ndim
    if axis is None or nd < 2 or x.dtype not in (np.float32, np.float64):
        return None
    axes = {a % nd for a in (axis if isinstance(axis, (tuple, list)) else (axis,))}
    if len(axes) != nd - 1:
        return None
    k = (set(range(nd)) - axes).pop()
    C = x.shape[k]
    M = x.size // C if C else 0
    if M < 256:
        return None
    m = np.moveaxis(x, k, -1)
    if not m.flags.c_contiguous:
        return None
    out = np.ones(M, x.dtype) @ m.reshape(M, C)                # (C,)
    return out.reshape(tuple(C if i == k else 1 for i in range(nd))) if keepdims else out
