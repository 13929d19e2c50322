"""ember.__config__: what the process runs on, and the warning for a BLAS kernel narrower than the CPU."""
import subprocess
import sys

import ember
from ember import __config__ as config

HASWELL = [{"user_api": "blas", "internal_api": "openblas", "architecture": "Haswell", "num_threads": 2,
            "version": "0.3.31", "filepath": "/x/libopenblas.so"}]


def test_warns_when_openblas_coretype_forces_avx2_on_an_avx512_cpu():
    w = config.blas_warning(HASWELL, {"avx2", "avx512f"}, {"OPENBLAS_CORETYPE": "Haswell"})
    assert w is not None and "OPENBLAS_CORETYPE=Haswell" in w and "AVX-512" in w and "unset it" in w


def test_no_warning_without_the_variable_or_without_avx512_or_with_an_avx512_kernel():
    assert config.blas_warning(HASWELL, {"avx2", "avx512f"}, {}) is None           # OpenBLAS chose it itself
    assert config.blas_warning(HASWELL, {"avx2"}, {"OPENBLAS_CORETYPE": "Haswell"}) is None   # the CPU's best
    skx = [dict(HASWELL[0], architecture="SkylakeX")]
    assert config.blas_warning(skx, {"avx2", "avx512f"}, {"OPENBLAS_CORETYPE": "SkylakeX"}) is None
    mkl = [dict(HASWELL[0], internal_api="mkl")]
    assert config.blas_warning(mkl, {"avx2", "avx512f"}, {"OPENBLAS_CORETYPE": "Haswell"}) is None


def test_show_names_versions_blas_and_extras():
    import numpy
    s = ember.__config__.show()
    lines = s.splitlines()
    assert lines[0] == f"Ember {ember.__version__}, Python {sys.version.split()[0]}, NumPy {numpy.__version__}"
    assert any(line.startswith("CPU: ") for line in lines)
    assert any(line.startswith("BLAS: ") and " threads " in line for line in lines)
    assert any(line.startswith("cupy: ") and "ember[gpu]" in line for line in lines) or \
        any(line == "cupy: installed: the CUDA device" for line in lines)
    assert "numba: installed" in s   # the test install has the jit extra


def test_parallel_info_reports_the_blas_threads():
    ember.set_num_threads(1)
    try:
        assert config.parallel_info().splitlines()[0].startswith("ember.get_num_threads(): 1 ")
    finally:
        ember.set_num_threads(2)


def test_show_imports_no_optional_extra():
    code = ("import sys, ember; ember.__config__.show(); "
            "print([m for m in ('cupy', 'mpi4py', 'onnx', 'onnxruntime', 'numba', 'torch') if m in sys.modules])")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"
