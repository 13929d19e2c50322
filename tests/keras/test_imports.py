"""`import ember` leaves ember.keras unloaded; `import ember.keras` loads no optional package (the
TensorBoard writer, plotting, rich) until a callback or function that needs it runs."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_keras_is_lazy_and_light():
    code = ("import sys; import ember; a = 'ember.keras' in sys.modules; import ember.keras; "
            "heavy = [m for m in ('tensorboardX', 'tensorboard', 'matplotlib', 'rich', 'torch', 'scipy') "
            "if m in sys.modules]; print(a, heavy, ember.keras.layers.Dense.__name__)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "False [] Dense"
