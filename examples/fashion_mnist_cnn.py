"""A small CNN on the full Fashion-MNIST (60,000 train / 10,000 test) to >= 91% test accuracy in 5 epochs.

The training program is written once against the PyTorch API and run with `lib = ember`, and with
`lib = torch` for the time per epoch beside torch's (`--torch`): same model, initial weights, batches,
optimizer and schedule. It also saves a grid of test inputs and one of misclassified test images as PNG
(`ember.utils.save_image`).

Run: python examples/fashion_mnist_cnn.py [--epochs 5] [--torch] [--threads 2] [--out fashion_mnist_out]
Needs the dataset (Debian package dataset-fashion-mnist, or FashionMNIST(root, download=True)) and, for
the PNG files, Pillow (pip install ember[plot]).
"""
import argparse
import os
import time

import numpy as np

import ember
from ember.datasets import FashionMNIST

MEAN, STD = 0.2860, 0.3530


def build_model(lib):
    nn = lib.nn
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32), nn.ReLU(),    # (B, 32, 28, 28)
        nn.MaxPool2d(2),                                                             # (B, 32, 14, 14)
        nn.Conv2d(32, 64, 3, padding=1, bias=False), nn.BatchNorm2d(64), nn.ReLU(),   # (B, 64, 14, 14)
        nn.MaxPool2d(2),                                                             # (B, 64, 7, 7)
        nn.Flatten(), nn.Dropout(0.25),
        nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Dropout(0.25),
        nn.Linear(128, 10))


def load_data(root="~/data"):
    train, test = FashionMNIST(root, train=True), FashionMNIST(root, train=False)

    def prep(ds):
        x = (ds.data.numpy().astype(np.float32) / 255.0 - MEAN) / STD
        return x[:, None], ds.targets.numpy()
    return prep(train), prep(test), train.classes


def copy_weights(src, dst_lib, dst):
    """Start the torch model from the Ember model's initial weights."""
    with dst_lib.no_grad():
        for (n, p), (n2, q) in zip(src.state_dict().items(), dst.state_dict().items()):
            assert n == n2
            q.copy_(dst_lib.from_numpy(np.array(p.numpy())))


def evaluate(lib, model, x, y, batch=1000):
    model.eval()
    preds = []
    with lib.no_grad():
        for i in range(0, len(x), batch):
            preds.append(model(lib.from_numpy(x[i:i + batch])).argmax(1).numpy())
    model.train()
    preds = np.concatenate(preds)
    return float((preds == y).mean()), preds


def train(lib, model, data, epochs, batch, lr, seed, log):
    (xtr, ytr), (xte, yte) = data
    F = lib.nn.functional
    steps = epochs * (len(xtr) // batch)
    opt = lib.optim.Adam(model.parameters(), lr=lr)
    sched = lib.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=steps)
    times, accs = [], []
    for epoch in range(epochs):
        order = np.random.RandomState(seed + epoch).permutation(len(xtr))
        model.train()
        t0 = time.perf_counter()
        for i in range(0, len(xtr) - batch + 1, batch):
            idx = order[i:i + batch]
            xb, yb = lib.from_numpy(xtr[idx]), lib.from_numpy(ytr[idx])
            loss = F.cross_entropy(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
        times.append(time.perf_counter() - t0)
        acc, preds = evaluate(lib, model, xte, yte)
        accs.append(acc)
        log(f"  {lib.__name__:5s} epoch {epoch + 1}: {times[-1]:6.1f} s, last loss {loss.item():.3f}, "
            f"test accuracy {100 * acc:.2f}%", flush=True)
    return times, accs, preds


def save_grids(data, preds, classes, out):
    (_, _), (xte, yte) = data
    os.makedirs(out, exist_ok=True)
    images = ember.from_numpy(xte * STD + MEAN)                  # back to [0, 1] for viewing
    ember.utils.save_image(images[:64], os.path.join(out, "test_inputs.png"), nrow=8, padding=2, pad_value=1.0)
    wrong = np.flatnonzero(preds != yte)[:64]
    ember.utils.save_image(images[ember.from_numpy(wrong)], os.path.join(out, "misclassified.png"), nrow=8,
                           padding=2, pad_value=1.0)
    lines = [f"{classes[yte[i]]} -> {classes[preds[i]]}" for i in wrong[:16]]
    print(f"saved {out}/test_inputs.png and {out}/misclassified.png ({len(np.flatnonzero(preds != yte))} "
          f"misclassified; first, row by row, true -> predicted: {'; '.join(lines)})")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--torch", action="store_true", help="also run the same program in torch, for its times")
    ap.add_argument("--root", default="~/data")
    ap.add_argument("--limit", type=int, default=0, help="use only this many training images (quick runs)")
    ap.add_argument("--test-limit", type=int, default=0, help="use only this many test images (quick runs)")
    ap.add_argument("--out", default="fashion_mnist_out", help="where the PNG grids go ('' to skip)")
    args = ap.parse_args(argv)

    train_set, test_set, classes = load_data(args.root)
    if args.limit:
        train_set = (train_set[0][:args.limit], train_set[1][:args.limit])
    if args.test_limit:
        test_set = (test_set[0][:args.test_limit], test_set[1][:args.test_limit])
    data = (train_set, test_set)
    ember.set_num_threads(args.threads)
    ember.manual_seed(args.seed)
    model = build_model(ember)
    results = {}
    if args.torch:
        import torch
        torch.set_num_threads(args.threads)
        tmodel = build_model(torch)
        copy_weights(model, torch, tmodel)
        results["torch"] = train(torch, tmodel, data, args.epochs, args.batch, args.lr, args.seed, print)
    results["ember"] = train(ember, model, data, args.epochs, args.batch, args.lr, args.seed, print)

    times, accs, preds = results["ember"]
    print(f"ember: test accuracy {100 * accs[-1]:.2f}% after {args.epochs} epochs, "
          f"median {np.median(times):.1f} s per epoch on {args.threads} threads")
    if "torch" in results:
        t_times, t_accs, _ = results["torch"]
        print(f"torch: test accuracy {100 * t_accs[-1]:.2f}%, median {np.median(t_times):.1f} s per epoch; "
              f"ember / torch time per epoch: {np.median(times) / np.median(t_times):.2f}x")
    if args.out:
        save_grids(data, preds, classes, args.out)
    return accs[-1], times


if __name__ == "__main__":
    main()
