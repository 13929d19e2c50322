"""Data-parallel training of a small CNN on MNIST-1D with DistributedDataParallel.

    ember run -n 2 examples/ddp_mnist1d.py          # 2 processes, batch 32 each (global 64)
    python examples/ddp_mnist1d.py                  # 1 process, batch 64: the same accuracy

Each rank reads its shard of the training set (DistributedSampler), gradients are averaged over the ranks
during backward, and every rank ends with the same weights. Test accuracy is computed on each rank's
shard of the test set and summed with all_reduce.
"""
import argparse
import time

import ember
import ember.distributed as dist
import ember.nn as nn
import ember.nn.functional as F
from ember.datasets import MNIST1D
from ember.nn.parallel import DistributedDataParallel as DDP
from ember.utils.data import DataLoader, DistributedSampler


def cnn():
    return nn.Sequential(
        nn.Unflatten(1, (1, 40)),                                    # (B, 40) -> (B, 1, 40)
        nn.Conv1d(1, 16, 5, padding=2), nn.ReLU(), nn.MaxPool1d(2),  # (B, 16, 20)
        nn.Conv1d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool1d(2),  # (B, 32, 10)
        nn.Flatten(), nn.Linear(320, 10))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=15)
    ap.add_argument("--batch", type=int, default=64, help="global batch (split over the ranks)")
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--train-size", type=int, default=None, help="use the first N training samples (quick runs)")
    a = ap.parse_args()

    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    ember.manual_seed(0)
    model = DDP(cnn())                       # rank 0's initial weights everywhere
    opt = ember.optim.Adam(model.parameters(), lr=a.lr)
    train, test = MNIST1D(train=True), MNIST1D(train=False)
    if a.train_size:
        from ember.utils.data import Subset
        train = Subset(train, range(a.train_size))
    sampler = DistributedSampler(train, shuffle=True, seed=0)
    loader = DataLoader(train, batch_size=a.batch // world, sampler=sampler)
    t0 = time.perf_counter()
    for epoch in range(a.epochs):
        sampler.set_epoch(epoch)
        model.train()
        for x, y in loader:
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
        model.eval()
        correct = ember.zeros(2)                 # [correct, seen] on this rank's test shard
        with ember.no_grad():
            for x, y in DataLoader(test, batch_size=250, sampler=DistributedSampler(test, shuffle=False)):
                correct += ember.tensor([float((model(x).argmax(1) == y).sum()), float(len(y))])
        dist.all_reduce(correct)
        if rank == 0:
            c, n = correct.tolist()
            print(f"epoch {epoch + 1:2d}  loss {float(loss):.3f}  test accuracy {c / n:.3f}  "
                  f"({time.perf_counter() - t0:.1f} s, {world} process{'es' if world > 1 else ''})", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
