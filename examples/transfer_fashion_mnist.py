"""Transfer learning with a ResNet-18: train it on five Fashion-MNIST classes (T-shirt, trouser, pullover,
dress, coat), then fine-tune it on the other five (sandal, shirt, sneaker, bag, ankle boot) from a few
labelled images, with the backbone frozen up to layer3, a new head, and a lower learning rate for the
rest of the backbone (`ember.models.freeze`, `replace_head`, `param_groups`). Prints the accuracy on the
new classes before and after fine-tuning, and that of the same fine-tuning from random weights.

Run: python examples/transfer_fashion_mnist.py   (a few minutes on 2 cores; --help for the sizes)
"""
import argparse
import time

import numpy as np

import ember
import ember.nn.functional as F
from ember.datasets import FashionMNIST
from ember.models import freeze, param_groups, replace_head, resnet18

MEAN, STD = 0.2860, 0.3530


def split(ds, classes, limit, seed):
    """Images of `classes` (relabelled 0..4), padded to 32x32 and repeated to 3 channels."""
    x, y = ds.data.numpy(), ds.targets.numpy()
    keep = np.flatnonzero(np.isin(y, classes))
    keep = np.random.RandomState(seed).permutation(keep)[:limit]
    imgs = np.pad(x[keep].astype(np.float32) / 255.0, ((0, 0), (2, 2), (2, 2)))
    imgs = np.repeat(((imgs - MEAN) / STD)[:, None], 3, axis=1)              # (N, 3, 32, 32)
    labels = np.searchsorted(np.array(classes), y[keep])
    return imgs, labels


def evaluate(model, x, y, batch=500):
    modes = [m.training for m in model.modules()]        # restore each module's mode (frozen BN stays in eval)
    model.eval()
    correct = 0
    with ember.no_grad():
        for i in range(0, len(x), batch):
            correct += int((model(ember.from_numpy(x[i:i + batch])).argmax(1).numpy() == y[i:i + batch]).sum())
    for m, mode in zip(model.modules(), modes):
        m.training = mode
    return correct / len(x)


def fit(model, opt, x, y, epochs, batch, seed, label):
    for epoch in range(epochs):
        t0 = time.perf_counter()
        order = np.random.RandomState(seed + epoch).permutation(len(x))
        for i in range(0, len(x) - batch + 1, batch):
            idx = order[i:i + batch]
            loss = F.cross_entropy(model(ember.from_numpy(x[idx])), ember.from_numpy(y[idx]))
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"  {label} epoch {epoch + 1}: loss {loss.item():.3f} ({time.perf_counter() - t0:.0f} s)", flush=True)


def fine_tune(model, data, args, label):
    (xt, yt), (xv, yv) = data
    freeze(model, until=args.freeze_until)               # conv1 .. layer3 keep their weights and BN statistics
    replace_head(model, 5)                               # a new fc for the new classes
    opt = ember.optim.Adam(param_groups(model, lr=args.lr, backbone_lr_mult=0.1))   # layer4 at lr/10
    before = evaluate(model, xv, yv)
    fit(model, opt, xt, yt, args.target_epochs, args.batch, args.seed, label)
    return before, evaluate(model, xv, yv)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source-train", type=int, default=6000, help="training images of the first five classes")
    ap.add_argument("--source-epochs", type=int, default=2)
    ap.add_argument("--target-train", type=int, default=500, help="labelled images of the new classes")
    ap.add_argument("--target-epochs", type=int, default=5)
    ap.add_argument("--test", type=int, default=2000, help="test images per half")
    ap.add_argument("--freeze-until", default="layer3", help="last frozen layer (conv1, layer1, ..., layer4)")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--no-scratch", action="store_true", help="skip the from-random-weights comparison")
    ap.add_argument("--root", default="~/data")
    args = ap.parse_args(argv)
    ember.set_num_threads(args.threads)
    train_ds, test_ds = FashionMNIST(args.root, train=True), FashionMNIST(args.root, train=False)
    src, tgt = [0, 1, 2, 3, 4], [5, 6, 7, 8, 9]
    source = split(train_ds, src, args.source_train, args.seed), split(test_ds, src, args.test, args.seed)
    target = split(train_ds, tgt, args.target_train, args.seed), split(test_ds, tgt, args.test, args.seed)

    print(f"1. train ResNet-18 on {args.source_train} images of {', '.join(train_ds.classes[c] for c in src)}")
    ember.manual_seed(args.seed)
    model = resnet18(num_classes=5)
    fit(model, ember.optim.Adam(model.parameters(), lr=args.lr), *source[0], args.source_epochs, args.batch,
        args.seed, "source")
    source_acc = evaluate(model, *source[1])
    print(f"   accuracy on the first five classes: {100 * source_acc:.1f}%")

    print(f"2. fine-tune on {args.target_train} images of {', '.join(train_ds.classes[c] for c in tgt)} "
          f"(frozen up to {args.freeze_until}, new head, the rest of the backbone at lr/10)")
    before, after = fine_tune(model, target, args, "target")
    result = {"source": source_acc, "before": before, "after": after}
    print(f"   accuracy on the new classes: {100 * before:.1f}% before fine-tuning (a fresh head), "
          f"{100 * after:.1f}% after")
    if not args.no_scratch:
        print("3. the same fine-tuning from random weights (no transfer)")
        ember.manual_seed(args.seed)
        _, scratch = fine_tune(resnet18(num_classes=5), target, args, "scratch")
        result["scratch"] = scratch
        print(f"   accuracy on the new classes: {100 * scratch:.1f}% (transfer: {100 * after:.1f}%)")
    return result


if __name__ == "__main__":
    main()
