"""Step 5 of `make demo` (ember/demo.py): the MNIST-1D paper's CNN, its outputs, and (slow) its 94%."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import ember

pytest.importorskip("mnist1d", reason="the demo's step 5 generates MNIST-1D with the mnist1d package")

from ember import demo  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_layer_table_counts_the_papers_parameters(capsys):
    total = demo.print_layers(demo.paper_cnn(), ember.zeros(1, 1, 40))
    out = capsys.readouterr().out
    # conv 1*25*5+25, conv 25*25*3+25 twice, linear 125*10+10
    assert total == 150 + 1900 + 1900 + 1260 == 5210
    assert "Total params: 5,210" in out and "peak (dry run on meta)" in out
    assert re.search(r"Conv1d\)\s+\[100, 25, 19\]\s+150", out) and re.search(r"Linear\)\s+\[100, 10\]\s+1,260", out), out


@pytest.mark.timeout(900)   # seconds alone; minutes on a loaded machine
def test_short_run_writes_checkpoint_log_and_png(tmp_path, capsys):
    acc = demo.train_mnist1d(str(tmp_path), epochs=2)
    out = capsys.readouterr().out
    assert 0.2 < acc <= 1.0    # two epochs: well above chance (10%), far from the target
    ckpt = ember.load(tmp_path / "mnist1d_cnn.safetensors")
    assert ckpt["epoch"] == 2 and ckpt["test_accuracy"] == acc
    model = demo.paper_cnn()
    model.load_state_dict(ckpt["model"])
    assert "state" in ckpt["optimizer"]
    png = (tmp_path / "curves.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    ea = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
    runs = sorted(p.name for p in (tmp_path / "tensorboard").iterdir() if p.is_dir())
    assert {"loss_training", "loss_test", "accuracy_training", "accuracy_test", "hparams"} <= set(runs), runs
    test_acc = ea.EventAccumulator(str(tmp_path / "tensorboard" / "accuracy_test")).Reload()
    values = [e.value for e in test_acc.Scalars("accuracy")]
    assert len(values) == 2 and values[-1] == pytest.approx(acc)
    # it says where things are and what to open next
    assert f"tensorboard --logdir {tmp_path / 'tensorboard'}" in out
    assert "examples/" in out and str(tmp_path / "curves.png") in out


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_full_demo_reaches_the_papers_cnn_accuracy(tmp_path):
    # what `make demo` runs; the 3-minute budget is measured by hand (a loaded machine must not fail this)
    r = subprocess.run([sys.executable, "-m", "ember.demo", "--out", str(tmp_path)], capture_output=True,
                       text=True, cwd=ROOT, timeout=3500)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    acc = float(re.search(r"test accuracy ([\d.]+)% on the 1,000 test sequences", r.stdout).group(1))
    assert acc >= 94.0, r.stdout
    assert "demo OK" in r.stdout


def test_shift_batch_rolls_each_sequence_within_the_limit():
    ember.manual_seed(0)
    x = ember.arange(5 * 40, dtype=ember.float32).reshape(5, 1, 40)
    shifted = demo.shift_batch(x, 4).numpy()
    seen = set()
    for row, out in zip(x.numpy()[:, 0], shifted[:, 0]):
        matches = [s for s in range(-4, 5) if (np.roll(row, s) == out).all()]
        assert len(matches) == 1, (row, out)
        seen.add(matches[0])
    assert len(seen) > 1   # each sequence has its own offset
