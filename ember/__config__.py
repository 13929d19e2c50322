"""What Ember runs on: `ember.__config__.show()` and `parallel_info()`, as torch's `torch.__config__`.

    >>> print(ember.__config__.show())
    Ember 0.1.0, Python 3.11.7, NumPy 2.4.6
    CPU: AMD EPYC (2 cores; AVX-512)
    BLAS: openblas 0.3.31.188.0, kernel Haswell, 2 threads (libscipy_openblas64_-32a4b2a6.so)
      warning: OPENBLAS_CORETYPE=Haswell makes OpenBLAS run its AVX2 kernels on a CPU with AVX-512; ...
    ...

The GEMMs of a training step are most of its time on the CPU, so the line that matters most is the BLAS
kernel: NumPy's OpenBLAS picks one for the CPU at load time unless the environment variable
`OPENBLAS_CORETYPE` names one, and an older kernel than the CPU has (Haswell's AVX2 on an AVX-512 CPU)
runs the GEMMs at about half speed on the machines measured in bench/RESULTS.md. Ember sets no BLAS
environment variables; this says what the process got. Nothing here imports CuPy, MPI or ONNX: it asks
whether they are installed.
"""
from __future__ import annotations

import importlib.util
import os
import platform

__all__ = ["show", "parallel_info", "blas_warning"]

# OpenBLAS's kernel names (OPENBLAS_CORETYPE, threadpoolctl's 'architecture') by the widest vector
# instructions they use; a CPU with more than the kernel uses leaves speed unused
_AVX512_KERNELS = {"skylakex", "cooperlake", "sapphirerapids"}
_AVX2_KERNELS = {"haswell", "zen", "skylake"}   # 'Zen' is OpenBLAS's AVX2 kernel for Zen 1-3


def _cpu():
    """(model name, set of ISA flags) from /proc/cpuinfo (Linux); ('', set()) elsewhere."""
    name, flags = "", set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "model name" and not name:
                    name = value.strip()
                elif key == "flags" and not flags:
                    flags = set(value.split())
                if name and flags:
                    break
    except OSError:
        pass
    return name or platform.processor() or platform.machine(), flags


def _isa(flags):
    return "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "no AVX2" if flags else "unknown"


def _blas_pools():
    from threadpoolctl import threadpool_info
    return [p for p in threadpool_info() if p.get("user_api") == "blas"]


def blas_warning(pools=None, flags=None, environ=None):
    """A sentence when the BLAS runs a narrower kernel than the CPU has because OPENBLAS_CORETYPE forces
    it (the GEMMs then run at about half speed); None otherwise."""
    environ = os.environ if environ is None else environ
    forced = environ.get("OPENBLAS_CORETYPE", "")
    if not forced:
        return None
    flags = _cpu()[1] if flags is None else flags
    pools = _blas_pools() if pools is None else pools
    for p in pools:
        arch = (p.get("architecture") or "").lower()
        if p.get("internal_api") == "openblas" and "avx512f" in flags and arch in _AVX2_KERNELS:
            return (f"OPENBLAS_CORETYPE={forced} makes OpenBLAS run its {p.get('architecture')} (AVX2) kernels on "
                    "a CPU with AVX-512: GEMMs (Linear, conv, matmul) run at about half the speed the CPU "
                    "has; unset it (before Python starts) to let OpenBLAS pick the CPU's own kernel")
    return None


def _installed(name):
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def show() -> str:
    """Ember's build and run-time configuration: versions, the CPU, the BLAS library and its kernel,
    the optional extras that are installed."""
    import sys

    import numpy

    from . import __version__
    name, flags = _cpu()
    lines = [f"Ember {__version__}, Python {sys.version.split()[0]}, NumPy {numpy.__version__}",
             f"CPU: {name} ({os.cpu_count()} cores; {_isa(flags)})"]
    pools = _blas_pools()
    for p in pools:
        lines.append(f"BLAS: {p.get('internal_api')} {p.get('version')}, kernel {p.get('architecture') or '?'}, "
                     f"{p.get('num_threads')} threads ({os.path.basename(p.get('filepath') or '')})")
    if not pools:
        lines.append("BLAS: none found by threadpoolctl (NumPy's matmul may run without threads)")
    warning = blas_warning(pools, flags)
    if warning:
        lines.append("  warning: " + warning)
    extras = [("numba", "jit", "compiled CPU kernels"), ("cupy", "gpu", "the CUDA device"),
              ("mpi4py", "mpi", "ember.distributed over MPI"), ("onnx", "onnx", "ember.onnx.export"),
              ("onnxruntime", "onnx", "checking ONNX exports"), ("ml_dtypes", "bf16", "bfloat16"),
              ("scipy", "scipy", "special functions and linalg extras")]
    for mod, extra, what in extras:
        state = "installed" if _installed(mod) else f"not installed (pip install 'ember[{extra}]')"
        lines.append(f"{mod}: {state}: {what}")
    return "\n".join(lines)


def parallel_info() -> str:
    """The thread counts Ember's CPU work uses (torch.__config__.parallel_info's role)."""
    from .backends.cpu import get_num_threads
    env = ", ".join(f"{k}={os.environ[k]}" for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                                                      "NUMBA_NUM_THREADS", "OPENBLAS_CORETYPE") if k in os.environ)
    lines = [f"ember.get_num_threads(): {get_num_threads()} (the BLAS thread pool: GEMMs, convolutions)",
             "elementwise work and the compiled kernels: 1 thread (docs/design-cpu-threads.md)",
             f"environment: {env or 'no thread variables set'}"]
    return "\n".join(lines)
