"""The package contract: light import, the demo, the CUDA path on a fake device."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(code, env=None, timeout=280):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, **(env or {})}, timeout=timeout)


def test_import_is_light():
    # Measured in modules, not seconds: a wall-clock bound fails on a loaded machine. `import ember` loads
    # the core ember modules, numpy.random and the standard library modules they use; nn, optim, data and
    # the rest wait for first use. Counted: Ember's own modules (the same on every machine) and any module
    # outside NumPy and the standard library (none). The total once was the measure (< 102), but which
    # standard library modules are already loaded before `import ember` depends on the Python install
    # (site hooks): on one machine the same commit loaded 101, on another 103.
    r = _run("import sys, json; import numpy; before=set(sys.modules); import ember; new=set(sys.modules)-before; "
             "heavy=[m for m in ('torch','cupy','mpi4py','onnx','onnxruntime','matplotlib','scipy','safetensors','threadpoolctl','sklearn','numba') if m in new]; "
             "lazy=[m for m in ('ember.nn','ember.optim','ember.utils','ember.datasets','ember.transforms',"
             "'ember.serialization','ember.jit','ember.__config__') if m in new]; "
             "top={m.split('.')[0] for m in new}; "
             "other=sorted(t for t in top - {'ember', 'numpy'} if t not in sys.stdlib_module_names and 'cython' not in t); "   # numpy.random's Cython runtime
             "print(json.dumps([heavy, lazy, other, sum(m.split('.')[0] == 'ember' for m in new)]))")
    assert r.returncode == 0, r.stderr
    import json
    heavy, lazy, other, count = json.loads(r.stdout)
    assert heavy == [] and lazy == [], f"import ember imported (heavy, eager) {heavy, lazy}"
    assert other == [], f"import ember imported modules outside NumPy and the standard library: {other}"
    # ember modules: 68 in session 15 (ember/linalg/ is 13 of them: Tensor binds 7 of their functions at
    # import, so loading them lazily would not help much)
    assert count <= 70, f"import ember loads {count} of its own modules"


def test_core_features_need_only_the_base_install():
    # `pip install ember` must give working checkpoints and thread control: what they import is a base
    # dependency, not an extra (ember.save once failed with a bare ModuleNotFoundError: safetensors)
    import tomllib
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        base = tomllib.load(f)["project"]["dependencies"]
    names = {d.split(">")[0].split("=")[0].split("<")[0].strip() for d in base}
    assert {"numpy", "safetensors", "threadpoolctl"} <= names, names


# the demo's tests get generous limits: a few seconds alone, minutes on a machine shared by many jobs
@pytest.mark.timeout(900)
def test_demo_skips_digits_without_scikit_learn(tmp_path):
    # the base install has no scikit-learn: the demo's Digits step says so and the demo still ends well
    # (step 5 runs 1 epoch here: the full run is tests/test_demo.py's slow test)
    r = _run("import sys, runpy; sys.modules['sklearn'] = None; "
             f"sys.argv = ['ember.demo', '--epochs', '1', '--out', {str(tmp_path)!r}]; "
             "runpy.run_module('ember.demo', run_name='__main__')", timeout=800)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "4. skipped: Digits needs scikit-learn" in r.stdout
    assert "demo OK" in r.stdout


def test_set_num_threads_sets_blas_threads():
    code = """
import ember
from threadpoolctl import threadpool_info
ember.set_num_threads(1)
blas = [p['num_threads'] for p in threadpool_info() if p['user_api'] == 'blas']
print(ember.get_num_threads(), blas)
for bad in (0, -1, 1.5, True, '2'):
    try:
        ember.set_num_threads(bad)
    except ValueError as e:
        assert 'set_num_threads' in str(e) and repr(bad) in str(e), e
    else:
        raise AssertionError(f'set_num_threads({bad!r}) did not raise')
"""
    r = _run(code)
    assert r.returncode == 0, r.stderr
    n, blas = r.stdout.split(" ", 1)
    assert n == "1" and blas.strip() in ("[1]", "[]"), r.stdout


@pytest.mark.timeout(900)
def test_demo_runs(tmp_path):
    # `make demo` with step 5 cut to 2 epochs (the 94% of the full run: tests/test_demo.py, slow)
    r = subprocess.run([sys.executable, "-m", "ember.demo", "--epochs", "2", "--out", str(tmp_path)],
                       capture_output=True, text=True, cwd=ROOT, timeout=800)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "df/dx = -3, df/dy = -6, df/dz = 3" in r.stdout
    assert "demo OK" in r.stdout


def test_fake_cuda_device_path():
    code = """
import ember
x = ember.randn(3, 4, requires_grad=True)
y = x.cuda()
assert y.device == ember.device('cuda:0') and y.is_cuda
z = (y * 2).sum()
z.backward()
assert x.grad is not None and x.grad.device.type == 'cpu'
assert (x.grad.numpy() == 2).all()
try:
    y + ember.ones(3, 4)
except RuntimeError as e:
    assert 'same device' in str(e) and 'cuda:0' in str(e), e
else:
    raise AssertionError('device mismatch did not raise')
print('ok', ember.cuda.is_available())
"""
    r = _run(code, {"EMBER_FAKE_CUDA": "1"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok True"


def test_cuda_unavailable_is_clear():
    r = _run("import ember\ntry:\n    ember.zeros(2, device='cuda')\nexcept RuntimeError as e:\n    print(e)\n"
             "else:\n    print('no error; cuda available:', ember.cuda.is_available())", {"EMBER_FAKE_CUDA": "0"})
    assert r.returncode == 0, r.stderr
    if r.stdout.startswith("no error"):   # right only on a machine with a real GPU and CuPy
        assert r.stdout.strip().endswith("True"), r.stdout
        return
    assert "no CUDA device is usable" in r.stdout, r.stdout


def test_namespace_has_no_internals():
    import ember
    leaked = [n for n in ("np", "builtins", "collections", "P", "STATE", "array_module", "op_error",
                          "binary_operands") if hasattr(ember, n)]
    assert not leaked, f"ember re-exports internals: {leaked}"
    for name in ("where", "cat", "einsum", "index_put", "abs", "max", "tensor", "zeros", "randn"):
        assert callable(getattr(ember, name))


def test_top_level_helpers():
    import ember
    x = ember.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = ember.clone(x)
    assert y.tolist() == x.tolist() and y.data_ptr() != x.data_ptr() and y.requires_grad
    (y * 3).sum().backward()
    assert x.grad.tolist() == [[3.0, 3.0], [3.0, 3.0]]          # clone is differentiable
    d = ember.detach(x)
    assert not d.requires_grad and d.data_ptr() == x.data_ptr()  # detach shares memory
    assert ember.numel(x) == 4 and ember.numel(ember.zeros(0, 3)) == 0
    assert ember.is_floating_point(x) and not ember.is_floating_point(ember.tensor([1]))
    assert ember.is_tensor(x) and not ember.is_tensor([1.0])
    ns = {}
    exec("from ember import *", ns)
    assert set(ember.__all__) <= set(ns) and "Tensor" in ns and "np" not in ns


def test_ember_debug_logs_ops_and_backward():
    code = "import ember\nx = ember.ones(2, 3, requires_grad=True)\ny = (x * 2).sum()\ny.backward()\n"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                       env={**os.environ, "EMBER_DEBUG": "2"}, timeout=280)
    assert r.returncode == 0, r.stderr
    assert "ember: Mul((2, 3) float32, () float32) -> (2, 3) float32 at <string>:3" in r.stderr
    assert "ember: backward Sum (forward at <string>:3)" in r.stderr
    quiet = _run(code)
    assert "ember:" not in quiet.stderr


def test_ember_debug_ignores_a_value_that_is_not_a_level():
    r = _run("import ember._debug as d; print(d.LEVEL)", env={"EMBER_DEBUG": "verbose"})
    assert r.returncode == 0 and r.stdout.strip() == "0", r.stderr


def test_get_num_threads_is_a_positive_count():
    import ember
    n = ember.get_num_threads()
    assert isinstance(n, int) and n >= 1
    ember.set_num_threads(n)       # setting what is there changes nothing
    assert ember.get_num_threads() == n


def test_reproducibility_and_precision_settings_as_torch():
    """torch's set-up lines (use_deterministic_algorithms, the debug mode, the float32 matmul precision)
    keep their state as torch's; they change nothing in Ember."""
    import warnings
    import torch
    import ember
    saved = (torch.get_deterministic_debug_mode(), torch.get_float32_matmul_precision())
    try:
        for L in (torch, ember):
            L.use_deterministic_algorithms(True)
            assert L.are_deterministic_algorithms_enabled() and not L.is_deterministic_algorithms_warn_only_enabled()
            assert L.get_deterministic_debug_mode() == 2
            L.use_deterministic_algorithms(True, warn_only=True)
            assert L.is_deterministic_algorithms_warn_only_enabled() and L.get_deterministic_debug_mode() == 1
            L.set_deterministic_debug_mode("error")
            assert L.are_deterministic_algorithms_enabled() and not L.is_deterministic_algorithms_warn_only_enabled()
            L.set_deterministic_debug_mode(0)
            assert not L.are_deterministic_algorithms_enabled()
            with pytest.raises(RuntimeError, match="expected one of `default`, `warn`, `error`, but got x"):
                L.set_deterministic_debug_mode("x")
            with pytest.raises(RuntimeError, match="expected 0, 1, or 2, but got 3"):
                L.set_deterministic_debug_mode(3)
            with pytest.raises(TypeError, match="must be bool, not int"):
                L.use_deterministic_algorithms(1)
            assert L.get_float32_matmul_precision() == "highest"
            L.set_float32_matmul_precision("high")
            assert L.get_float32_matmul_precision() == "high"
            with pytest.warns(UserWarning, match="low is not one of 'highest', 'high', or 'medium'"):
                L.set_float32_matmul_precision("low")
            assert L.get_float32_matmul_precision() == "high"
            L.set_float32_matmul_precision("highest")
    finally:
        torch.set_deterministic_debug_mode(saved[0])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.set_float32_matmul_precision(saved[1])


def test_numpy_floating_point_warnings_stay_inside_ember():
    """1 / 0, log(-1), 0 / 0 give inf and NaN silently as in torch, even under -W error; a user's own NumPy
    code still warns."""
    code = """
import warnings
import numpy as np
import ember
x = ember.tensor([1.0, 0.0, -1.0])
print((x / 0).tolist(), x.log().tolist()[2], x.sqrt().tolist()[2], ember.tensor([100.0], dtype=ember.float16).exp().tolist())
try:
    np.log(np.array([-1.0]))
except RuntimeWarning as e:
    print('numpy warns:', e)
"""
    r = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True, text=True, cwd=ROOT,
                       timeout=280)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["[inf, nan, -inf] nan nan [inf]", "numpy warns: invalid value encountered in log"]
