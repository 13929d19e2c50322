"""ember.utils.tensorboard.SummaryWriter: event files read back by TensorBoard's own reader, served by the
real `tensorboard` program (its HTTP data API), and drawn by its dashboard in headless Chromium (slow)."""
import io
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

import numpy as np
import pytest

import ember

pytest.importorskip("tensorboardX", reason="SummaryWriter writes through tensorboardX (pip install ember[tensorboard])")
event_accumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator",
                                        reason="the tests read the files with TensorBoard's reader (pip install tensorboard)")

from ember.utils.tensorboard import SummaryWriter  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _load(run_dir):
    """TensorBoard's own reader over one run directory (every kind of event kept)."""
    acc = event_accumulator.EventAccumulator(str(run_dir), size_guidance={"scalars": 0, "images": 0,
                                                                           "histograms": 0, "tensors": 0})
    return acc.Reload()


def _png_size(data: bytes):
    assert data[:8] == b"\x89PNG\r\n\x1a\n", data[:8]
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")  # IHDR width, height


def test_scalars_read_back(tmp_path):
    with SummaryWriter(str(tmp_path)) as w:
        for step in range(5):
            w.add_scalar("loss/train", ember.tensor(1.0 / (step + 1)), step)   # an Ember tensor
        w.add_scalar("lr", 0.5, 0)                                               # a float
        w.add_scalar("acc", np.float32(0.25), 7)                                 # a NumPy scalar
        w.add_scalar("bf16", ember.tensor(0.75, dtype=ember.bfloat16), 1)
    acc = _load(tmp_path)
    assert set(acc.Tags()["scalars"]) == {"loss/train", "lr", "acc", "bf16"}
    events = acc.Scalars("loss/train")
    assert [e.step for e in events] == [0, 1, 2, 3, 4]
    np.testing.assert_allclose([e.value for e in events], [1.0 / (s + 1) for s in range(5)], rtol=1e-6)
    assert [(e.step, e.value) for e in acc.Scalars("acc")] == [(7, 0.25)]
    assert [(e.step, e.value) for e in acc.Scalars("bf16")] == [(1, 0.75)]


def test_scalar_of_a_tensor_that_requires_grad(tmp_path):
    x = ember.tensor([2.0], requires_grad=True)
    loss = (x * x).sum()
    with SummaryWriter(str(tmp_path)) as w:
        w.add_scalar("loss", loss, 3)   # no .item() needed, as in torch
    assert [(e.step, e.value) for e in _load(tmp_path).Scalars("loss")] == [(3, 4.0)]


def test_add_scalars_uses_torchs_run_layout(tmp_path):
    # torch: one run per key at <log_dir>/<main_tag>_<key> ('/' in main_tag -> '_'), tag main_tag
    with SummaryWriter(str(tmp_path)) as w:
        for step in range(3):
            w.add_scalars("run/loss", {"train": 1.0 - 0.1 * step, "val": ember.tensor(2.0 - 0.1 * step)}, step)
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == ["run_loss_train", "run_loss_val"]
    val = _load(tmp_path / "run_loss_val")
    assert val.Tags()["scalars"] == ["run/loss"]
    np.testing.assert_allclose([e.value for e in val.Scalars("run/loss")], [2.0, 1.9, 1.8], rtol=1e-6)


def test_histogram_read_back(tmp_path):
    values = ember.randn(1000, generator=ember.Generator().manual_seed(0))
    with SummaryWriter(str(tmp_path)) as w:
        w.add_histogram("weights", values, 2)
        w.add_histogram("fixed", np.arange(10.0), 3, bins=5)
    acc = _load(tmp_path)
    (h,) = acc.Histograms("weights")
    v = values.numpy()
    assert h.step == 2
    assert h.histogram_value.num == 1000
    assert h.histogram_value.min == pytest.approx(v.min()) and h.histogram_value.max == pytest.approx(v.max())
    assert h.histogram_value.sum == pytest.approx(float(v.astype(np.float64).sum()), abs=1e-3)
    (f,) = acc.Histograms("fixed")
    # torch's layout too: an empty bucket below the first edge, then the 5 bins of 2 values each
    assert list(f.histogram_value.bucket) == [0, 2, 2, 2, 2, 2]
    assert list(f.histogram_value.bucket_limit)[1:] == pytest.approx([1.8, 3.6, 5.4, 7.2, 9.0])


def test_images_in_every_layout_read_back(tmp_path):
    chw = np.zeros((3, 4, 6), np.float32)
    chw[0] = 1.0                     # red in [0, 1] floats
    with SummaryWriter(str(tmp_path)) as w:
        w.add_image("chw", ember.from_numpy(chw), 0)
        w.add_image("hwc", np.transpose(chw, (1, 2, 0)), 0, dataformats="HWC")
        w.add_image("hw", ember.rand(4, 6), 0, dataformats="HW")
        w.add_images("batch", ember.rand(5, 1, 4, 6), 1)
        w.add_images("batch_nhwc", (np.ones((2, 4, 6, 3)) * 255).astype(np.uint8), 1, dataformats="NHWC")
    acc = _load(tmp_path)
    assert set(acc.Tags()["images"]) == {"chw", "hwc", "hw", "batch", "batch_nhwc"}
    (img,) = acc.Images("chw")
    assert (img.width, img.height) == (6, 4) == _png_size(img.encoded_image_string)
    assert acc.Images("hwc")[0].encoded_image_string == img.encoded_image_string  # same picture
    plt_image = pytest.importorskip("matplotlib.image")
    pixels = plt_image.imread(io.BytesIO(img.encoded_image_string), format="png")
    np.testing.assert_allclose(pixels[..., :3], np.transpose(chw, (1, 2, 0)))
    batch = acc.Images("batch")[0]
    assert batch.step == 1 and batch.height == 4 and batch.width >= 5 * 6   # a grid of the 5 images


def test_text_read_back(tmp_path):
    with SummaryWriter(str(tmp_path)) as w:
        w.add_text("notes", "lr **0.01**", 4)
    acc = _load(tmp_path)
    (t,) = acc.Tensors("notes/text_summary")
    assert t.step == 4
    assert t.tensor_proto.string_val == [b"lr **0.01**"]


def test_pr_curve_audio_embedding_custom_scalars(tmp_path):
    labels = ember.tensor([0, 1, 1, 0, 1, 0, 1, 1])
    probs = ember.tensor([0.1, 0.9, 0.8, 0.3, 0.6, 0.2, 0.4, 0.95])
    with SummaryWriter(str(tmp_path)) as w:
        w.add_pr_curve("pr", labels, probs, 5, num_thresholds=11)
        w.add_audio("tone", ember.sin(ember.arange(800) * 0.1) * 0.5, 1, sample_rate=8000)
        w.add_embedding(ember.randn(6, 3), metadata=list("abcdef"), global_step=2, tag="points")
        w.add_custom_scalars({"losses": {"train vs val": ["Multiline", ["loss/train", "loss/val"]]}})
    acc = _load(tmp_path)
    (pr,) = acc.Tensors("pr")
    from tensorboard.util import tensor_util
    data = tensor_util.make_ndarray(pr.tensor_proto)   # rows TP, FP, TN, FN, precision, recall
    assert pr.step == 5
    assert data[0, 0] == 5 and data[1, 0] == 3     # threshold 0: every example predicted positive
    (audio,) = acc.Audio("tone")
    assert audio.sample_rate == 8000 and audio.encoded_audio_string[:4] == b"RIFF"
    assert "custom_scalars__config__" in acc.Tags()["tensors"]
    projector = (tmp_path / "projector_config.pbtxt").read_text()
    assert "points" in projector and "metadata.tsv" in projector
    (meta,) = list(tmp_path.glob("00002/points/metadata.tsv"))   # torch's layout: <step:05d>/<tag>/
    assert meta.read_text().split() == list("abcdef")


def test_hparams_written_to_a_sub_run(tmp_path):
    with SummaryWriter(str(tmp_path)) as w:
        w.add_hparams({"lr": 0.01, "optimizer": "adam", "batch": 100, "bn": True},
                      {"hparam/accuracy": ember.tensor(0.9)}, run_name="trial1")
    run = _load(tmp_path / "trial1")
    assert [e.value for e in run.Scalars("hparam/accuracy")] == [pytest.approx(0.9)]
    plugin = run.PluginTagToContent("hparams")
    from tensorboard.plugins.hparams import plugin_data_pb2
    info = plugin_data_pb2.HParamsPluginData.FromString(plugin["_hparams_/session_start_info"]).session_start_info
    assert info.hparams["lr"].number_value == pytest.approx(0.01)
    assert info.hparams["optimizer"].string_value == "adam"
    assert info.hparams["bn"].bool_value is True


def test_default_log_dir_is_torchs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with SummaryWriter(comment="_lr0.1") as w:
        w.add_scalar("x", 1.0, 0)
    (run,) = os.listdir(tmp_path / "runs")
    assert w.log_dir == w.get_logdir() == os.path.join("runs", run)
    assert run.endswith("_" + socket.gethostname() + "_lr0.1")
    time.strptime(run.split("_")[0] + "_" + run.split("_")[1], "%b%d_%H-%M-%S")
    assert _load(tmp_path / "runs" / run).Tags()["scalars"] == ["x"]


def test_flush_makes_events_readable_before_close(tmp_path):
    w = SummaryWriter(str(tmp_path), flush_secs=10_000)
    try:
        w.add_scalar("loss", 1.5, 0)
        w.flush()
        assert [e.value for e in _load(tmp_path).Scalars("loss")] == [1.5]
    finally:
        w.close()
    w.close()   # a second close does nothing


@pytest.mark.parametrize("call, exc, words", [
    (lambda w: w.add_scalar("x", ember.ones(3)), ValueError, ["add_scalar", "(3,)", "one value"]),
    (lambda w: w.add_scalar("x", "high"), TypeError, ["add_scalar", "<U4"]),
    (lambda w: w.add_scalars("x", [1.0]), TypeError, ["add_scalars", "dict"]),
    (lambda w: w.add_image("x", ember.rand(4, 6)), ValueError, ["add_image", "'CHW'", "3-d", "(4, 6)"]),
    (lambda w: w.add_image("x", ember.rand(5, 6, 3)), ValueError, ["add_image", "channels", "(5, 6, 3)", "'CHW'"]),
    (lambda w: w.add_image("x", ember.rand(3, 4, 6), dataformats="CXW"), ValueError, ["dataformats", "'CXW'"]),
    (lambda w: w.add_images("x", ember.rand(3, 4, 6)), ValueError, ["add_images", "'NCHW'", "4-d"]),
    (lambda w: w.add_histogram("x", []), ValueError, ["add_histogram", "'x'", "no values"]),
    (lambda w: w.add_text("x", 3), TypeError, ["add_text", "str", "int"]),
    (lambda w: w.add_hparams({"layers": [1, 2]}, {"a": 1.0}), TypeError, ["add_hparams", "'layers'", "list"]),
    (lambda w: w.add_pr_curve("x", ember.ones(3), ember.ones(2)), ValueError, ["add_pr_curve", "3 labels", "2 pred"]),
    (lambda w: w.add_pr_curve("x", ember.ones(2), ember.tensor([0.5, 2.0])), ValueError, ["[0, 1]", "to 2"]),
    (lambda w: w.add_audio("x", ember.zeros(2, 10)), ValueError, ["add_audio", "(2, 10)"]),
    (lambda w: w.add_embedding(ember.zeros(3)), ValueError, ["add_embedding", "(N, D)", "(3,)"]),
    (lambda w: w.add_embedding(ember.zeros(3, 2), metadata=["a"]), ValueError, ["1 metadata labels for 3 points"]),
    (lambda w: w.add_custom_scalars({"c": {"t": ["Line", ["a"]]}}), ValueError, ["'c/t'", "Multiline"]),
    (lambda w: w.add_graph(ember.nn.Linear(2, 3)), ValueError, ["add_graph", "input_to_model is required"]),
])
def test_bad_input_errors(tmp_path, call, exc, words):
    with SummaryWriter(str(tmp_path)) as w:
        with pytest.raises(exc) as info:
            call(w)
    for word in words:
        assert word in str(info.value), (word, str(info.value))
    assert "test_tensorboard.py:" in str(info.value)   # the user's line


def test_add_graph_writes_the_traced_primitives(tmp_path):
    model = ember.nn.Sequential(ember.nn.Conv2d(1, 4, 3, padding=1), ember.nn.ReLU(), ember.nn.Flatten(),
                                ember.nn.Linear(4 * 5 * 5, 3))
    with SummaryWriter(str(tmp_path)) as w:
        w.add_graph(model, ember.randn(2, 1, 5, 5))
    graph = _load(tmp_path).Graph()
    ops = [n.op for n in graph.node]
    assert ops.count("Parameter") == 4 and ops.count("Input") == 1
    assert {"Conv", "Relu", "Linear"} <= set(ops), ops
    by_name = {n.name: n for n in graph.node}
    conv = next(n for n in graph.node if n.op == "Conv")
    assert "0/weight" in conv.input and "0/bias" in conv.input     # module paths, grouped by TensorBoard
    assert [d.size for d in conv.attr["_output_shapes"].list.shape[0].dim] == [2, 4, 5, 5]
    linear = next(n for n in graph.node if n.op == "Linear")
    assert [d.size for d in linear.attr["_output_shapes"].list.shape[0].dim] == [2, 3]
    assert all(i.split(":")[0] in by_name for n in graph.node for i in n.input)   # every edge resolves


def test_closed_writer_refuses(tmp_path):
    w = SummaryWriter(str(tmp_path))
    w.close()
    with pytest.raises(RuntimeError, match="add_scalar: the writer of .* is closed"):
        w.add_scalar("x", 1.0)


def _run(code):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)


def test_imports_are_lazy_and_torch_stays_out():
    # importing the module loads no writer library; a writer loads tensorboardX but not torch (installed
    # here as a test oracle: tensorboardX would import it for type hints)
    r = _run("import sys, tempfile; import ember.utils.tensorboard as tb; a = 'tensorboardX' in sys.modules; "
             "w = tb.SummaryWriter(tempfile.mkdtemp()); w.close(); "
             "print(a, 'tensorboardX' in sys.modules, 'torch' in sys.modules); import torch; print('torch ok')")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["False", "True", "False", "torch", "ok"], r.stdout


def test_missing_tensorboardx_names_the_extra():
    r = _run("import sys; sys.modules['tensorboardX'] = None\n"
             "from ember.utils.tensorboard import SummaryWriter\n"
             "try:\n    SummaryWriter('/tmp/never')\nexcept ImportError as e:\n    print(e)")
    assert r.returncode == 0, r.stderr
    assert "pip install ember[tensorboard]" in r.stdout, r.stdout


# -- the real TensorBoard ---------------------------------------------------------------------------
def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url, timeout=10):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read()


@pytest.fixture
def tensorboard_server():
    """Start `tensorboard --logdir DIR` on a free localhost port; yields (logdir, base URL); always stopped."""
    pytest.importorskip("tensorboard.main", reason="the tensorboard program is not installed")
    procs = []

    def start(logdir):
        port = _free_port()
        log = open(os.path.join(tempfile.mkdtemp(), "tensorboard.log"), "w+")
        proc = subprocess.Popen([sys.executable, "-m", "tensorboard.main", "--logdir", str(logdir),
                                 "--host", "127.0.0.1", "--port", str(port), "--load_fast", "false",
                                 "--reload_interval", "1"], stdout=log, stderr=subprocess.STDOUT)
        procs.append((proc, log))
        return f"http://127.0.0.1:{port}", proc, log

    yield start
    for proc, log in procs:   # teardown runs even when the test failed: no orphan server
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=20)
        log.close()


def _wait_for_scalars(base, proc, log, run, tag, n, timeout=180):
    """Poll the scalars plugin's data route until `n` points of run/tag are served (the first load is
    asynchronous). Generous timeout: the machine may be loaded; nothing here measures speed."""
    url = f"{base}/data/plugin/scalars/scalars?" + urllib.parse.urlencode({"run": run, "tag": tag})
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            log.seek(0)
            pytest.fail(f"tensorboard exited with {proc.returncode}:\n{log.read()}")
        try:
            data = json.loads(_get(url))
            if len(data) >= n:
                return data
            last = data
        except (urllib.error.URLError, ConnectionError, ValueError) as e:
            last = e
        time.sleep(0.5)
    log.seek(0)
    pytest.fail(f"tensorboard did not serve {n} points of {run}/{tag} in {timeout}s (last: {last!r}):\n{log.read()}")


def _write_curve(logdir):
    values = [2.0 * 0.7 ** step for step in range(20)]
    with SummaryWriter(os.path.join(logdir, "demo")) as w:
        for step, v in enumerate(values):
            w.add_scalar("loss", ember.tensor(v), step)
    return values


def test_tensorboard_serves_the_scalars(tmp_path, tensorboard_server):
    values = _write_curve(tmp_path)
    base, proc, log = tensorboard_server(tmp_path)
    data = _wait_for_scalars(base, proc, log, "demo", "loss", len(values))
    assert [step for _, step, _ in data] == list(range(20))
    np.testing.assert_allclose([v for _, _, v in data], values, rtol=1e-6)
    tags = json.loads(_get(f"{base}/data/plugin/scalars/tags"))
    assert "loss" in tags["demo"]


def _chromium():
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name) or (f"/usr/bin/{name}" if os.path.exists(f"/usr/bin/{name}") else None)
        if path:
            return path
    return None


@pytest.mark.slow
@pytest.mark.timeout(420)
def test_tensorboard_dashboard_draws_the_curve(tmp_path, tensorboard_server):
    chromium = _chromium()
    if chromium is None:
        pytest.skip("headless Chromium is not installed (Debian: apt-get install chromium)")
    mpl_image = pytest.importorskip("matplotlib.image", reason="reads the screenshot")
    values = _write_curve(tmp_path / "logs")
    base, proc, log = tensorboard_server(tmp_path / "logs")
    _wait_for_scalars(base, proc, log, "demo", "loss", len(values))
    shot = tmp_path / "scalars.png"
    profile = tmp_path / "chromium-profile"
    cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
           "--hide-scrollbars", "--window-size=1280,900", "--virtual-time-budget=20000",
           f"--screenshot={shot}", f"{base}/?darkMode=false#scalars"]
    # its own process group, so that a hung browser and its helper processes are all stopped
    browser = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    try:
        _, err = browser.communicate(timeout=300)
    finally:
        if browser.poll() is None:
            os.killpg(browser.pid, signal.SIGKILL)
            browser.wait(timeout=20)
    assert shot.exists(), f"chromium wrote no screenshot (rc {browser.returncode}):\n{err[-3000:]}"
    pixels = mpl_image.imread(str(shot))[..., :3]      # (900, 1280, 3) floats in [0, 1]
    rows, cols = np.nonzero(_curve_pixels(pixels))
    # the loss falls from 2.0 to ~0 over 20 steps: its line crosses the chart from top left to bottom right
    assert len(rows) > 150, f"no curve drawn in the scalars dashboard ({len(rows)} line pixels); see {shot}"
    assert rows.max() - rows.min() > 80 and cols.max() - cols.min() > 150, (rows.min(), rows.max(), cols.min(),
                                                                          cols.max(), str(shot))
    top_left = cols[rows < rows.min() + 20].mean()
    bottom = cols[rows > rows.max() - 5].mean()
    assert top_left < bottom, "the line does not fall from left to right as the loss does"


def _curve_pixels(pixels):
    """Pixels of the run's line: TensorBoard's first run colour (orange, about #ff7043) below the orange
    header bar (rows < 65) and the tag's title row, right of the sidebar (which has orange widgets)."""
    r, g, b = pixels[..., 0], pixels[..., 1], pixels[..., 2]
    orange = (r > 0.85) & (g > 0.25) & (g < 0.7) & (b < 0.55) & (r - b > 0.4)
    body = np.zeros_like(orange)
    body[180:, 330:] = True
    return orange & body
