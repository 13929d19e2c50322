"""ember.plot.history: loss/metric curves as PNG from a History, a dict or a CSVLogger file."""
import os
import subprocess
import sys

import numpy as np
import pytest

import ember

mpl_image = pytest.importorskip("matplotlib.image", reason="ember.plot needs matplotlib (pip install ember[plot])")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BLUE, ORANGE = (0x1F / 255, 0x77 / 255, 0xB4 / 255), (0xFF / 255, 0x7F / 255, 0x0E / 255)  # matplotlib's C0, C1
H = {"loss": [1.2, 0.6, 0.42, 0.33, 0.27], "accuracy": [0.62, 0.8, 0.86, 0.89, 0.91],
     "val_loss": [0.95, 0.62, 0.5, 0.48, 0.49], "val_accuracy": [0.7, 0.81, 0.84, 0.85, 0.855]}


def _pixels(path):
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return mpl_image.imread(path)[..., :3]


def _count(pixels, colour, tol=0.06):
    return int((np.abs(pixels - np.array(colour)) < tol).all(axis=2).sum())


class History:   # what keras' fit returns: .history and .epoch (from 0)
    def __init__(self, history):
        self.history, self.epoch = history, list(range(len(history["loss"])))


def test_history_object_two_panels_with_both_curves(tmp_path):
    out = ember.plot.history(History(H), tmp_path / "sub" / "curves.png", val_label="test")   # makes the folder
    assert out == str(tmp_path / "sub" / "curves.png")
    px = _pixels(out)
    assert px.shape == (400, 1000, 3)   # two panels (loss, accuracy) of 5x4 inches at 100 dpi
    assert _count(px, BLUE) > 300 and _count(px, ORANGE) > 300   # training and validation lines


def test_dict_without_validation_draws_one_curve(tmp_path):
    out = ember.plot.history({"loss": [3.0, 2.0, 1.5]}, tmp_path / "c.png")
    px = _pixels(out)
    assert px.shape == (400, 500, 3)
    assert _count(px, BLUE) > 100 and _count(px, ORANGE) == 0


def test_tensor_and_array_values(tmp_path):
    out = ember.plot.history({"loss": ember.tensor([3.0, 2.0, 1.0]), "val_loss": np.array([3.5, 2.5, 2.0])},
                             tmp_path / "c.png")
    assert _count(_pixels(out), ORANGE) > 100


def test_csv_logger_file(tmp_path):
    csv = tmp_path / "log.csv"
    csv.write_text("epoch,accuracy,loss,val_accuracy,val_loss,lr\n" +
                   "".join(f"{e},{H['accuracy'][e]},{H['loss'][e]},{H['val_accuracy'][e]},{H['val_loss'][e]},0.001\n"
                           for e in range(5)))
    px = _pixels(ember.plot.history(str(csv), tmp_path / "c.png"))
    assert px.shape == (400, 1500, 3)   # loss, accuracy, lr
    assert _count(px, ORANGE) > 300


def test_same_picture_from_csv_dict_and_history(tmp_path):
    csv = tmp_path / "log.csv"
    csv.write_text("epoch,loss,val_loss\n0,1.0,1.5\n1,0.5,1.0\n2,0.25,0.9\n")
    d = {"loss": [1.0, 0.5, 0.25], "val_loss": [1.5, 1.0, 0.9]}
    a = _pixels(ember.plot.history(str(csv), tmp_path / "a.png"))
    b = _pixels(ember.plot.history(d, tmp_path / "b.png"))
    c = _pixels(ember.plot.history(History(d), tmp_path / "c.png"))
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, c)


@pytest.mark.parametrize("source, exc, words", [
    ({}, ValueError, ["empty"]),
    ({"loss": [1.0, 0.5], "val_loss": [1.0]}, ValueError, ["one value per epoch", "'val_loss': 1"]),
    ({"loss": ["high"]}, TypeError, ["'loss'", "numbers"]),
    (42, TypeError, ["History", "int"]),
    ("/nonexistent/log.csv", FileNotFoundError, ["/nonexistent/log.csv"]),
])
def test_bad_input(tmp_path, source, exc, words):
    with pytest.raises(exc) as info:
        ember.plot.history(source, tmp_path / "c.png")
    for w in words:
        assert w in str(info.value), (w, str(info.value))


def test_bad_csv_cell_names_line_and_column(tmp_path):
    csv = tmp_path / "log.csv"
    csv.write_text("epoch,loss\n0,1.0\n1,oops\n")
    with pytest.raises(ValueError, match="line 3: column 'loss' has 'oops'"):
        ember.plot.history(str(csv), tmp_path / "c.png")


def test_matplotlib_missing_names_the_extra(tmp_path):
    r = subprocess.run([sys.executable, "-c", "import sys; sys.modules['matplotlib'] = None; import ember\n"
                        "try:\n    ember.plot.history({'loss': [1.0]}, 'x.png')\n"
                        "except ImportError as e:\n    print(e)"],
                       capture_output=True, text=True, cwd=tmp_path, timeout=120,
                       env={**os.environ, "PYTHONPATH": ROOT})
    assert r.returncode == 0, r.stderr
    assert "pip install ember[plot]" in r.stdout
