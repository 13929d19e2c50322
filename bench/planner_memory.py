"""Training memory, four ways: torchinfo's estimate (on the torch twin of each model), Ember's notes'
rule of thumb (`Summary.training_bytes`), Ember's exact plan (`peak_training_bytes`, a dry run of two
training steps on device='meta') and the peak a real training step allocates (two steps on the CPU under
tracemalloc, `ember.planner.measure_training_peak`).

    /work/venv/bin/python bench/planner_memory.py            # prints the markdown table of bench/RESULTS.md

torchinfo counts parameters, the input and every layer's output x 2 ("forward/backward pass size"); it
runs its forward at batch 1 here and is scaled to the batch (its estimate is linear in the batch). Byte
counts are deterministic; the plan times are wall-clock on a shared machine (provisional).
"""
from __future__ import annotations

import math
import os
import sys
import time
import types

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "planner"))
sys.modules.setdefault("torchvision._meta_registrations", types.ModuleType("torchvision._meta_registrations"))

import torch  # noqa: E402
import torch.nn as tnn  # noqa: E402
import torch.nn.functional as TF  # noqa: E402
import torchinfo  # noqa: E402
import torchvision  # noqa: E402

import ember  # noqa: E402
from ember.planner.dryrun import measure_training_peak  # noqa: E402
import planner_models as M  # noqa: E402

GiB = 1 << 30


# ---------------------------------------------------------------- torch twins of planner_models
def t_mlp():
    return tnn.Sequential(tnn.Linear(512, 1024), tnn.ReLU(), tnn.Dropout(0.1), tnn.Linear(1024, 1024), tnn.ReLU(),
                          tnn.Linear(1024, 10))


def t_cnn_bn():
    return tnn.Sequential(
        tnn.Conv2d(3, 32, 3, padding=1), tnn.BatchNorm2d(32), tnn.ReLU(), tnn.MaxPool2d(2),
        tnn.Conv2d(32, 64, 3, padding=1), tnn.BatchNorm2d(64), tnn.ReLU(), tnn.MaxPool2d(2),
        tnn.Flatten(), tnn.Linear(64 * 8 * 8, 10))


def t_vgg16_cifar():
    layers, cin = [], 3
    for v in M.VGG16_CFG:
        if v == "M":
            layers.append(tnn.MaxPool2d(2, 2))
        else:
            layers += [tnn.Conv2d(cin, v, 3, padding=1), tnn.ReLU(inplace=True)]
            cin = v
    return tnn.Sequential(tnn.Sequential(*layers), tnn.Flatten(), tnn.Sequential(
        tnn.Linear(512, 4096), tnn.ReLU(True), tnn.Dropout(), tnn.Linear(4096, 4096), tnn.ReLU(True), tnn.Dropout(),
        tnn.Linear(4096, 10)))


class TBlock(tnn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = tnn.LayerNorm(d), tnn.LayerNorm(d)
        self.qkv, self.proj = tnn.Linear(d, 3 * d), tnn.Linear(d, d)
        self.mlp = tnn.Sequential(tnn.Linear(d, 4 * d), tnn.GELU(), tnn.Linear(4 * d, d))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        y = TF.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).contiguous().view(B, T, C))
        return x + self.mlp(self.ln2(x))


class TGPT(tnn.Module):
    def __init__(self, vocab=512, block=64, d=128, heads=4, layers=2):
        super().__init__()
        self.tok, self.pos = tnn.Embedding(vocab, d), tnn.Embedding(block, d)
        self.blocks = tnn.Sequential(*[TBlock(d, heads) for _ in range(layers)])
        self.ln_f, self.head = tnn.LayerNorm(d), tnn.Linear(d, vocab)

    def forward(self, idx):
        T = idx.shape[1]
        return self.head(self.ln_f(self.blocks(self.tok(idx) + self.pos(torch.arange(T)))))


# name: (ember builder, torch builder, input size, batch, input dtype, classes, measure on the CPU?)
CASES = [
    ("MLP 512-1024-1024-10", M.mlp, t_mlp, (512,), 64, "float32", 10, True),
    ("CNN + BatchNorm, 32x32", M.cnn_bn, t_cnn_bn, (3, 32, 32), 32, "float32", 10, True),
    ("ResNet-18, 64x64", M.resnet18, torchvision.models.resnet18, (3, 64, 64), 16, "float32", 1000, True),
    ("small GPT (2 x 128, T=64)", M.GPT, TGPT, (64,), 8, "int64", 512, True),
    ("VGG16 CIFAR, 32x32", lambda **k: M.vgg16(10, cifar=True, **k), t_vgg16_cifar, (3, 32, 32), 16, "float32",
     10, True),
    ("VGG16, 224x224", M.vgg16, torchvision.models.vgg16, (3, 224, 224), 2, "float32", 1000, True),
    ("VGG16, 224x224", M.vgg16, torchvision.models.vgg16, (3, 224, 224), 128, "float32", 1000, False),
]


def torchinfo_bytes(build, size, batch, in_dtype):
    """torchinfo's 'Estimated Total Size' at `batch`, from its run at batch 1 (linear in the batch)."""
    dtypes = [torch.long] if in_dtype == "int64" else None
    s = torchinfo.summary(build(), input_size=(1,) + size, dtypes=dtypes, verbose=0, device="cpu")
    per_sample = s.total_input + s.total_output_bytes
    return s.total_param_bytes + batch * per_sample


def row(name, build, tbuild, size, batch, in_dtype, classes, measure, optimizer="sgd-momentum"):
    s = ember.summary(build(device="meta"), size, batch_size=1, input_dtype=in_dtype, verbose=False)
    rule = s.training_bytes(batch, optimizer)
    t0 = time.perf_counter()
    plan = s.plan(batch, optimizer)
    plan_s = time.perf_counter() - t0
    ti = torchinfo_bytes(tbuild, size, batch, in_dtype)
    measured = None
    if measure:
        ember.manual_seed(0)
        model = build()
        if in_dtype == "int64":
            x, y = ember.randint(0, classes, (batch,) + size), ember.randint(0, classes, (batch,) + size)
        else:
            x, y = ember.randn(batch, *size), ember.randint(0, classes, (batch,))
        measured = measure_training_peak(model, x, y, optimizer)
    return dict(name=name, batch=batch, ti=ti, rule=rule, peak=plan.peak, saved=plan.saved, measured=measured,
                plan_s=plan_s)


def _mb(n):
    return "n/a" if n is None else f"{n / 2**20:,.1f}"


def _ratio(a, b):
    return "n/a" if b is None else f"{a / b:.2f}"


def main():
    torch.set_num_threads(1)
    rows = [row(*c) for c in CASES]
    print("| model | batch | torchinfo est. MiB | notes' rule MiB | Ember plan (peak) MiB | measured peak MiB "
          "| saved for backward MiB | plan / measured | torchinfo / measured | rule / measured | plan time s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        m = r["measured"]
        print(f"| {r['name']} | {r['batch']} | {_mb(r['ti'])} | {_mb(r['rule'])} | {_mb(r['peak'])} | {_mb(m)} | "
              f"{_mb(r['saved'])} | {_ratio(r['peak'], m)} | {_ratio(r['ti'], m)} | {_ratio(r['rule'], m)} | "
              f"{r['plan_s']:.2f} |")
    vgg = ember.summary(M.vgg16(device="meta"), (3, 224, 224), verbose=False)
    print(f"\nVGG16 224x224, SGD + momentum, GTX 1080 (8 GiB): max batch {vgg.max_batch_size('GTX 1080')} by "
          f"Ember's plan, {vgg.max_batch_size('GTX 1080', rule='notes')} by the notes' rule; "
          f"batch 1024 planned in {_timed(lambda: vgg.peak_training_bytes(1024)):.2f} s "
          f"({vgg.peak_training_bytes(1024) / GiB:,.1f} GiB)")
    assert math.isfinite(rows[0]["peak"])


def _timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


if __name__ == "__main__":
    main()
