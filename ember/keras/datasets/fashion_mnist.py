"""Fashion-MNIST as `keras.datasets.fashion_mnist.load_data()` gives it: 60,000 training and 10,000 test
28x28 uint8 images with labels 0-9 (T-shirt/top ... Ankle boot), from the Debian package
`dataset-fashion-mnist` (/usr/share/datasets/fashion-mnist) or the IDX files under `$EMBER_DATA`."""
from __future__ import annotations

import numpy as np

__all__ = ["load_data"]


def load_data(path=None):
    """((x_train, y_train), (x_test, y_test)): x (N, 28, 28) uint8, y (N,) uint8.

    >>> (x_train, y_train), (x_test, y_test) = ember.keras.datasets.fashion_mnist.load_data()  # doctest: +SKIP
    """
    from ...datasets import FashionMNIST
    from ...datasets._files import DatasetNotFoundError, data_home
    root = path or data_home()
    try:
        train, test = FashionMNIST(root, train=True), FashionMNIST(root, train=False)
    except DatasetNotFoundError as e:
        raise DatasetNotFoundError(
            f"fashion_mnist.load_data: Fashion-MNIST is not installed. Install the Debian package: "
            f"sudo apt-get install dataset-fashion-mnist (it puts the files in /usr/share/datasets/fashion-mnist), "
            f"or put the four IDX files in {root}. ({e})") from None
    return ((train._images, train._labels.astype(np.uint8)), (test._images, test._labels.astype(np.uint8)))
