"""W8 of shared/WORKLOADS.md: data loading. 60,000 28x28 uint8 images with random crop (padding 4) + horizontal
flip + normalise per sample; DataLoader(batch 128, shuffle) with 0 and 2 workers; images per second over one
epoch, Ember's loader beside torch's in one process, alternating, medians.

Both sides run the same per-sample recipe, each in its own library (ember.transforms on NumPy; torch ops on
tensors, the way torchvision's tensor transforms do it: pad, crop, flip, to float, normalise).

    .venv/bin/python bench/w8_dataloader.py               # 0 and 2 workers, 5 epochs each side
    .venv/bin/python bench/w8_dataloader.py --repeats 3 --workers 2
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import machine  # noqa: E402

import torch  # noqa: E402
import torch.nn.functional as TF  # noqa: E402
import torch.utils.data as tud  # noqa: E402

from ember import transforms as T  # noqa: E402
from ember.utils.data import DataLoader, Dataset  # noqa: E402

MEAN, STD = 0.2860, 0.3530
N_IMAGES = 60000


def load_images() -> tuple:
    """Fashion-MNIST's 60,000 training images when installed, else random images of the same size."""
    try:
        from ember.datasets import FashionMNIST
        ds = FashionMNIST("/nonexistent-root", train=True)
        return ds.data.numpy(), ds.targets.numpy(), "Fashion-MNIST train"
    except Exception:
        rng = np.random.default_rng(0)
        return (rng.integers(0, 256, (N_IMAGES, 28, 28), dtype=np.uint8), rng.integers(0, 10, N_IMAGES),
                "random uint8")


class EmberImages(Dataset):
    def __init__(self, images, labels):
        self.images, self.labels = images, labels
        self.transform = T.Compose([T.RandomCrop(28, padding=4), T.RandomHorizontalFlip(), T.ToTensor(),
                                    T.Normalize((MEAN,), (STD,))])

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return self.transform(self.images[i]), int(self.labels[i])


class TorchImages(tud.Dataset):
    def __init__(self, images, labels):
        self.images, self.labels = torch.from_numpy(images), torch.from_numpy(np.asarray(labels, dtype=np.int64))
        self.mean, self.std = torch.tensor([MEAN]).view(1, 1, 1), torch.tensor([STD]).view(1, 1, 1)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        x = TF.pad(self.images[i].unsqueeze(0), (4, 4, 4, 4))  # (1, 36, 36)
        top, left = torch.randint(0, 9, (1,)).item(), torch.randint(0, 9, (1,)).item()
        x = x[:, top:top + 28, left:left + 28]
        if torch.rand(1) < 0.5:
            x = x.flip(-1)
        x = x.float().div(255)
        return x.sub_(self.mean).div_(self.std), int(self.labels[i])


def _cpu_seconds() -> float:
    """CPU time of this process plus its finished (joined) children: the workers, once an epoch ends."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def epoch_seconds(loader) -> tuple:
    """(wall seconds, CPU seconds) of one epoch. CPU time is robust to other jobs on a shared machine."""
    t0, c0 = time.perf_counter(), _cpu_seconds()
    n = 0
    for x, _ in loader:
        n += x.shape[0]
    assert n == N_IMAGES, n
    # both loaders join non-persistent workers when the epoch ends, so the workers' CPU time is counted
    return time.perf_counter() - t0, _cpu_seconds() - c0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--repeats", type=int, default=5, help="timed epochs per side (after one warm-up epoch)")
    p.add_argument("--workers", type=int, nargs="+", default=[0, 2])
    args = p.parse_args()
    images, labels, source = load_images()
    ember_ds, torch_ds = EmberImages(images, labels), TorchImages(images, labels)
    print(f"W8 data loading: {source}, {N_IMAGES} images, batch 128, shuffle, crop+flip+normalise")
    print(machine())
    rows = []
    for nw in args.workers:
        kw = dict(batch_size=128, shuffle=True, num_workers=nw)
        if nw:
            kw["persistent_workers"] = False
        ours = DataLoader(ember_ds, **kw)
        theirs = tud.DataLoader(torch_ds, **kw)
        epoch_seconds(ours), epoch_seconds(theirs)  # warm-up
        te, tt = [], []
        for _ in range(args.repeats):
            te.append(epoch_seconds(ours))
            tt.append(epoch_seconds(theirs))
        e, t = statistics.median(x[0] for x in te), statistics.median(x[0] for x in tt)
        ec, tc = statistics.median(x[1] for x in te), statistics.median(x[1] for x in tt)
        rows.append((nw, N_IMAGES / e, N_IMAGES / t, e, t, ec, tc))
        print(f"  workers={nw}: ember {N_IMAGES / e:,.0f} img/s, torch {N_IMAGES / t:,.0f} img/s", flush=True)
    print()
    print(f"load average during the run: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print("| workers | ember img/s | torch img/s | throughput ember / torch | CPU s per epoch ember / torch | "
          "CPU ratio | target |")
    print("|---|---|---|---|---|---|---|")
    for nw, ei, ti, e, t, ec, tc in rows:
        ok = "met" if ei / ti >= 1.0 else f"**missed by {100 * (1 - ei / ti):.0f}%**"
        print(f"| {nw} | {ei:,.0f} | {ti:,.0f} | {ei / ti:.2f}x | {ec:.2f} / {tc:.2f} | {ec / tc:.2f} | "
              f">= 1.0x throughput: {ok} |")


if __name__ == "__main__":
    main()
