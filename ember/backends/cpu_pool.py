"""One thread pool for the CPU: OpenBLAS's parallel jobs and Ember's own parallel kernels run on it.

NumPy's OpenBLAS keeps its own threads, and after each threaded call they spin for a while (~67 ms)
on the other cores. A second pool beside it (numba's OpenMP team, Python threads) then shares those
cores with spinners and loses what it gains (docs/design-cpu-threads.md). So Ember makes its pool the
only one: `openblas_set_threads_callback_function` (OpenBLAS 0.3.27+) hands OpenBLAS's jobs to it, and
OpenBLAS's own threads go to sleep for good. The kernels that split work themselves (attention over
(batch, head) pairs, `cpu_kernels.attention*`) run on the same threads.

The pool is numba code (`_numba_pool.py`): worker threads started from Python that run a loop with the
GIL released, spinning briefly after work and then sleeping in futex_wait. It starts on first use,
with one worker fewer than the cores (the calling thread is the last one). `pool()` is None, and
everything runs as before, where it cannot work: `EMBER_CPU_POOL=0`, not Linux x86-64, numba missing,
or a BLAS other than NumPy's ILP64 OpenBLAS with the callback. In a forked child (a DataLoader worker)
the pool's threads do not exist: the child gives OpenBLAS its own threads back and uses no pool.
"""
from __future__ import annotations

import ctypes
import importlib.util
import os
import platform
import sys
import threading
import time

import numpy as np

__all__ = ["pool", "Pool"]

MAX_WORKERS = 255
_lock = threading.Lock()
_pool: Pool | None = None
_tried = False


class Pool:
    """The running pool: `run(job, n, args)` runs job(i, args, n) for i < n on n threads at once."""

    def __init__(self, lib, names):
        from . import _numba_pool as NP
        self.NP = NP
        self.lib = lib            # keeps the library (and the addresses below) loaded
        self._mem = np.zeros((MAX_WORKERS + 3) * NP.LINE // 8, np.int64)   # + a line to align to
        self.box = (self._mem.ctypes.data + 63) // 64 * 64
        self.set_threads = ctypes.cast(getattr(lib, "openblas_set_num_threads_local"), ctypes.c_void_p).value
        self.sgemm = ctypes.cast(getattr(lib, names["sgemm"]), ctypes.c_void_p).value
        self._get_threads = getattr(lib, names["get_threads"])
        self._get_threads.restype = ctypes.c_int
        self._set_callback = getattr(lib, names["callback"])
        self._set_callback.argtypes = [ctypes.c_void_p]
        self._set_callback.restype = None
        NP.worker(-NP.LINE, 0)    # compiled (or loaded from numba's cache) here, not in the threads
        self.threads: list[threading.Thread] = []
        self.capacity = 0
        self.ensure(max(os.cpu_count() or 1, int(self._get_threads())))   # every thread OpenBLAS may use
        self.callback = NP.blas_callback(self.box, self.set_threads)
        self._set_callback(self.callback.address)

    def ensure(self, n: int) -> None:
        """Workers for regions of n threads (the caller is the n-th). Called before OpenBLAS's count
        rises (ember.set_num_threads): its jobs must each find a thread."""
        n = min(n, MAX_WORKERS + 1)
        new = [threading.Thread(target=self.NP.worker, args=(self.box, w), daemon=True, name=f"ember-cpu-pool-{w}")
               for w in range(self.capacity, n - 1)]
        for t in new:
            t.start()
        # every worker in its loop (GIL released) before OpenBLAS may wait on one: a BLAS call made
        # while its caller holds the GIL would otherwise wait for a thread that waits for the GIL
        ready = [self.box + (w + 1) * self.NP.LINE + self.NP.READY for w in range(self.capacity, n - 1)]
        while not all(ctypes.c_int64.from_address(a).value for a in ready):
            time.sleep(0.0002)
        self.threads += new
        self.capacity = max(self.capacity, n - 1)

    def size(self) -> int:
        """Threads a parallel region uses: OpenBLAS's thread count (ember.set_num_threads)."""
        return min(int(self._get_threads()), self.capacity + 1)

    def run(self, job: int, n: int, args: np.ndarray) -> None:
        self.NP.run(self.box, self.set_threads, job, n, args.ctypes.data)


def _find_openblas():
    """(ctypes library, symbol names) of NumPy's OpenBLAS when it has the threads callback and 64-bit
    integers, else None."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return None
    for info in threadpool_info():
        if info.get("internal_api") != "openblas" or "numpy" not in info.get("filepath", ""):
            continue
        try:
            lib = ctypes.CDLL(info["filepath"])
        except OSError:
            return None
        for prefix, suffix in (("scipy_", "64_"), ("", "64_")):
            names = {"callback": f"{prefix}openblas_set_threads_callback_function{suffix}",
                     "sgemm": f"{prefix}cblas_sgemm{suffix}",
                     "get_threads": f"{prefix}openblas_get_num_threads{suffix}"}
            if all(hasattr(lib, n) for n in names.values()) and hasattr(lib, "openblas_set_num_threads_local"):
                return lib, names
    return None


def pool() -> Pool | None:
    """The pool, started on the first call; None where it cannot run (then callers run serially)."""
    global _pool, _tried
    if _pool is not None or _tried:
        return _pool
    with _lock:
        if _tried:
            return _pool
        _tried = True
        if os.environ.get("EMBER_CPU_POOL", "1") == "0" or not sys.platform.startswith("linux") \
                or platform.machine() not in ("x86_64", "AMD64"):
            return None
        found = _find_openblas()
        if found is None:
            return None
        if importlib.util.find_spec("numba") is None:   # the optional ember[jit] extra
            return None
        drop_stale_cache(os.path.dirname(os.path.abspath(__file__)))
        _pool = Pool(*found)
        return _pool


def drop_stale_cache(folder: str, deps=("_numba_kernels.py", "_numba_conv.py")) -> int:
    """Delete numba's disk cache of `_numba_pool`'s jobs when a file they call into is newer than it.
    numba keys a cached function on its own file only: after an edit of `_numba_kernels.py` (an
    editable install, a hand-made mutant) the jobs would go on running the old loops. Looks where numba
    caches (__pycache__ beside the source, or NUMBA_CACHE_DIR); returns the number of files deleted."""
    import glob
    newest = max((os.path.getmtime(os.path.join(folder, d)) for d in deps
                  if os.path.exists(os.path.join(folder, d))), default=0.0)
    where = [os.path.join(folder, "__pycache__", "_numba_pool.*.nb[ic]")]
    if os.environ.get("NUMBA_CACHE_DIR"):
        where.append(os.path.join(os.environ["NUMBA_CACHE_DIR"], "**", "_numba_pool.*.nb[ic]"))
    files = [f for w in where for f in glob.glob(w, recursive=True)]
    if not files or min(os.path.getmtime(f) for f in files) >= newest:
        return 0
    for f in files:
        try:
            os.remove(f)
        except OSError:   # a read-only install: numba then compiles in memory (its own fallback)
            pass
    return len(files)


def ensure_threads(n: int) -> None:
    """Before OpenBLAS is given n threads: a running pool starts the workers they need."""
    if _pool is not None:
        with _lock:
            _pool.ensure(n)


def _after_fork_in_child():
    """The child of a fork has no pool threads: OpenBLAS gets its own back, kernels run serially."""
    global _pool, _tried
    if _pool is not None:
        _pool._set_callback(None)
    _pool, _tried = None, True


os.register_at_fork(after_in_child=_after_fork_in_child)


# --- attention on the pool -------------------------------------------------------------------------
_MAX_MNK = 1 << 18   # OpenBLAS runs a GEMM up to this m*n*k on the calling thread (never threaded)


def _desc(a):
    """(address, batch, head, row strides in elements) of a 4-d float32 array whose rows are contiguous,
    or None."""
    if a.ndim != 4 or a.dtype != np.float32 or a.strides[3] != 4 or any(s < 0 or s % 4 for s in a.strides):
        return None
    return [a.ctypes.data, a.strides[0] // 4, a.strides[1] // 4, a.strides[2] // 4]


def attention_args(pl, q, k, v, s, outs, scale, causal, p=None, g=None):
    """The int64 argument block of `_numba_pool.attention_job` / `attention_grad_job`, or None when the
    arrays are not what those loops take (4-d float32, contiguous rows; products small enough to stay
    on one thread each)."""
    B, H, L, E = q.shape
    S, Ev = k.shape[2], v.shape[3]
    if L * S * max(E, Ev) > _MAX_MNK or B * H < 2:
        return None
    descs = [_desc(a) for a in (q, k, v, *outs)] + ([_desc(g)] if g is not None else [])
    if any(d is None for d in descs):
        return None
    A = np.zeros(48, np.int64)
    A[:8] = (B * H, H, L, S, E, int(np.float32(scale).view(np.int32)), int(bool(causal)), pl.sgemm)
    A[8:20] = descs[0] + descs[1] + descs[2]
    A[20], A[21] = s.ctypes.data, Ev
    for i, d in enumerate(descs[3:3 + len(outs)]):
        A[24 + 4 * i: 28 + 4 * i] = d
    if g is not None:
        A[36] = p.ctypes.data
        A[37:41] = descs[6]
    return A


# --- elementwise and row kernels on the pool ---------------------------------------------------------
MIN_SPLIT = 1 << 16   # elements: below, a region's hand-off costs more than the second thread saves


def split(job_name: str, work: int, *block, min_work: int = MIN_SPLIT) -> bool:
    """Run `_numba_pool.<job_name>` over the int64 argument block `block` on the pool when `work`
    (elements) is worth splitting (at least `min_work`); False where the caller must run it serially."""
    pl = pool() if work >= min_work else None
    n = pl.size() if pl is not None else 1
    if pl is None or n < 2:
        return False
    pl.run(getattr(pl.NP, job_name).address, n, np.array(block, np.int64))
    return True
