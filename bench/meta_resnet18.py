"""ResNet-18 on device='meta': how long a training step's graph walk takes with no data.

    /work/venv/bin/python bench/meta_resnet18.py

Times the forward (batch 256, 3x224x224), a forward + backward without BatchNorm statistics, and the
full step (cross-entropy, backward, SGD(momentum) step, zero_grad); each includes building the model.
If some code computes on raw arrays (a side door), the full step stops there and the script says where.
"""
from __future__ import annotations

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "backends"))

import ember  # noqa: E402
import ember.nn.functional as F  # noqa: E402
from test_meta import resnet18  # noqa: E402


def best(fn, n=3):
    ts = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return min(ts)


def forward():
    m = resnet18().eval()
    m(ember.randn(256, 3, 224, 224, device="meta"))


def forward_backward_pure():
    m = resnet18(act=ember.tanh)
    for mod in m.modules():
        if isinstance(mod, ember.nn.BatchNorm2d):
            mod.track_running_stats, mod.running_mean, mod.running_var = False, None, None
    out = m(ember.randn(256, 3, 224, 224, device="meta"))
    ember.autograd.grad((out * out).mean(), list(m.parameters()))


def full_step():
    m = resnet18()
    opt = ember.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    loss = F.cross_entropy(m(ember.randn(256, 3, 224, 224, device="meta")),
                           ember.empty(256, dtype=ember.int64, device="meta"))
    loss.backward()
    opt.step()
    opt.zero_grad()


if __name__ == "__main__":
    print(f"build + forward (eval)              {best(forward) * 1e3:8.1f} ms")
    print(f"build + forward + backward (pure)   {best(forward_backward_pure) * 1e3:8.1f} ms")
    try:
        print(f"build + full training step          {best(full_step) * 1e3:8.1f} ms")
    except ember.backends.meta.MetaDataError as e:
        print(f"full training step stops at a side door: {str(e).split(':')[0]}")
