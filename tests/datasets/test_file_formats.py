"""MNIST-family (IDX) and CIFAR (binary) loaders on small files written by the tests; downloads against a
local HTTP server; corrupt, truncated and missing files."""
import gzip
import hashlib
import http.server
import socket
import struct
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from ember.datasets import CIFAR10, CIFAR100, KMNIST, MNIST, CorruptFileError, DatasetNotFoundError, FashionMNIST
from ember.datasets import _files


def idx_bytes(arr: np.ndarray) -> bytes:
    code = {np.uint8: 0x08}[arr.dtype.type]
    return bytes([0, 0, code, arr.ndim]) + struct.pack(f">{arr.ndim}I", *arr.shape) + arr.tobytes()


def write_mnist(folder, n=5, prefix="train", compress=True, seed=0):
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)
    labels = rng.integers(0, 10, n).astype(np.uint8)
    folder.mkdir(parents=True, exist_ok=True)
    for name, arr in ((f"{prefix}-images-idx3-ubyte", images), (f"{prefix}-labels-idx1-ubyte", labels)):
        data = idx_bytes(arr)
        if compress:
            (folder / f"{name}.gz").write_bytes(gzip.compress(data))
        else:
            (folder / name).write_bytes(data)
    return images, labels


@pytest.mark.parametrize("cls", [MNIST, FashionMNIST, KMNIST])
@pytest.mark.parametrize("layout", ["raw", "named", "root", "uncompressed"])
def test_idx_loaders_read_standard_files(tmp_path, cls, layout):
    folder = {"raw": tmp_path / cls.__name__ / "raw", "named": tmp_path / cls.__name__}.get(layout, tmp_path)
    images, labels = write_mnist(folder, prefix="t10k", compress=layout != "uncompressed")
    ds = cls(tmp_path, train=False, transform=lambda x: x.astype(np.float32) / 255, target_transform=lambda y: -y)
    assert len(ds) == 5
    img, y = ds[3]
    np.testing.assert_allclose(img, images[3] / 255, rtol=1e-6)
    assert y == -int(labels[3])
    assert ds.data.shape == (5, 28, 28) and ds.targets.tolist() == labels.tolist()


def test_missing_files_say_where_to_put_them(tmp_path):
    with pytest.raises(DatasetNotFoundError) as info:
        MNIST(tmp_path / "nothing")
    msg = str(info.value)
    assert "train-images-idx3-ubyte.gz" in msg and str(tmp_path / "nothing" / "MNIST" / "raw") in msg


def test_truncated_gzip_names_the_file(tmp_path):
    write_mnist(tmp_path)
    path = tmp_path / "train-images-idx3-ubyte.gz"
    path.write_bytes(path.read_bytes()[:-200])
    with pytest.raises(CorruptFileError, match="train-images-idx3-ubyte.gz"):
        MNIST(tmp_path)


def test_truncated_idx_data_names_the_file(tmp_path):
    write_mnist(tmp_path)
    path = tmp_path / "train-labels-idx1-ubyte.gz"
    data = gzip.decompress(path.read_bytes())
    path.write_bytes(gzip.compress(data[:-2]))
    with pytest.raises(CorruptFileError, match="train-labels-idx1-ubyte.gz.*truncated"):
        MNIST(tmp_path)


def test_not_an_idx_file(tmp_path):
    write_mnist(tmp_path)
    (tmp_path / "train-images-idx3-ubyte.gz").write_bytes(gzip.compress(b"<html>not found</html>"))
    with pytest.raises(CorruptFileError, match="not an IDX file"):
        MNIST(tmp_path)


class _Server:
    """A local HTTP server serving files from a directory (a stand-in for the official mirrors)."""

    def __init__(self, directory):
        handler = lambda *a, **k: http.server.SimpleHTTPRequestHandler(*a, directory=str(directory), **k)  # noqa: E731
        http.server.SimpleHTTPRequestHandler.log_message = lambda *a: None
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def md5_of(path):
    return hashlib.md5(path.read_bytes()).hexdigest()


def test_download_from_mirror_with_checksum(tmp_path, monkeypatch):
    served = tmp_path / "mirror"
    images, labels = write_mnist(served, prefix="t10k")
    resources = [(p.name, md5_of(p)) for p in sorted(served.iterdir())]
    server = _Server(served)
    try:
        monkeypatch.setattr(MNIST, "mirrors", ["http://127.0.0.1:1/", server.url])  # first mirror is down
        monkeypatch.setattr(MNIST, "resources", resources)
        ds = MNIST(tmp_path / "root", train=False, download=True)
        assert (tmp_path / "root" / "MNIST" / "raw" / "t10k-images-idx3-ubyte.gz").is_file()
        np.testing.assert_array_equal(ds[0][0], images[0])
        # a mirror serving the wrong bytes is rejected by the checksum
        monkeypatch.setattr(MNIST, "resources", [(n, "0" * 32) for n, _ in resources])
        with pytest.raises(RuntimeError, match="checksum mismatch"):
            MNIST(tmp_path / "other", train=False, download=True)
    finally:
        server.close()


def test_download_offline_fails_fast_with_instructions(tmp_path, monkeypatch):
    # a server that accepts connections and never answers: the short timeout must end the wait
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    port = silent.getsockname()[1]
    monkeypatch.setattr(_files, "DOWNLOAD_TIMEOUT", 0.5)
    monkeypatch.setattr(MNIST, "mirrors", [f"http://127.0.0.1:{port}/", "http://127.0.0.1:1/"])
    start = time.monotonic()
    try:
        with pytest.raises(RuntimeError) as info:
            MNIST(tmp_path, download=True)
    finally:
        silent.close()
    assert time.monotonic() - start < 30  # 2 x 0.5 s timeouts; the bound only catches a hang (silent server)
    msg = str(info.value)
    assert "could not download train-images-idx3-ubyte.gz" in msg and "put it in" in msg
    assert str(tmp_path / "MNIST" / "raw") in msg


def write_cifar(folder, names, n, label_bytes, seed=0):
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for name in names:
        labels = rng.integers(0, 10, (n, label_bytes), dtype=np.uint8)
        pixels = rng.integers(0, 256, (n, 3, 32, 32), dtype=np.uint8)
        records = np.concatenate([labels, pixels.reshape(n, -1)], axis=1)
        (folder / name).write_bytes(records.tobytes())
        out.append((labels, pixels))
    return out


def test_cifar10_binary_format(tmp_path):
    folder = tmp_path / "cifar-10-batches-bin"
    parts = write_cifar(folder, [f"data_batch_{i}.bin" for i in range(1, 6)], 3, 1)
    write_cifar(folder, ["test_batch.bin"], 4, 1)
    (folder / "batches.meta.txt").write_text("\n".join(CIFAR10.default_classes) + "\n\n")
    train = CIFAR10(tmp_path, train=True)
    assert len(train) == 15 and train.data.shape == (15, 32, 32, 3)
    labels, pixels = parts[1]
    img, y = train[3]  # first record of data_batch_2
    assert y == int(labels[0, 0]) and img.shape == (32, 32, 3)
    np.testing.assert_array_equal(img, pixels[0].transpose(1, 2, 0))  # planes R, G, B -> HWC
    assert len(CIFAR10(tmp_path, train=False)) == 4 and train.classes[0] == "airplane"


def test_cifar100_binary_format_and_coarse_labels(tmp_path):
    folder = tmp_path / "cifar-100-binary"
    (labels, pixels), = write_cifar(folder, ["test.bin"], 5, 2)
    ds = CIFAR100(tmp_path, train=False)
    assert ds.targets == labels[:, 1].tolist() and ds.coarse_targets == labels[:, 0].tolist()
    np.testing.assert_array_equal(ds[4][0], pixels[4].transpose(1, 2, 0))


def test_cifar_truncated_and_missing_files(tmp_path):
    folder = tmp_path / "cifar-10-batches-bin"
    write_cifar(folder, ["test_batch.bin"], 3, 1)
    path = folder / "test_batch.bin"
    path.write_bytes(path.read_bytes()[:-10])
    with pytest.raises(CorruptFileError, match="test_batch.bin"):
        CIFAR10(tmp_path, train=False)
    with pytest.raises(DatasetNotFoundError, match="data_batch_1.bin"):
        CIFAR10(tmp_path, train=True)


def test_data_home_follows_ember_data(monkeypatch, tmp_path):
    from ember.datasets import data_home
    monkeypatch.setenv("EMBER_DATA", str(tmp_path))
    assert data_home() == tmp_path
    monkeypatch.delenv("EMBER_DATA")
    assert data_home() == Path.home() / ".cache" / "ember"
