"""MNIST, Fashion-MNIST and KMNIST from the standard gzipped IDX files (torchvision's layout and names)."""
from __future__ import annotations

from pathlib import Path
from typing import Callable, List, Optional, Tuple, Union

import numpy as np

import ember
from ember.datasets import _files
from ember.datasets._files import DatasetNotFoundError, find_file, missing_message, read_idx
from ember.utils.data import Dataset

__all__ = ["MNIST", "FashionMNIST", "KMNIST"]


class MNIST(Dataset):
    """The MNIST digits: 60,000 training and 10,000 test 28x28 uint8 images with labels 0-9.

    Files (``train-images-idx3-ubyte.gz`` etc., gzipped or not) are looked for in ``root/<Name>/raw``,
    ``root/<Name>`` and ``root``. ``download=True`` fetches missing files from the official mirrors and
    checks their MD5. A sample is ``(image, label)``: a (28, 28) uint8 NumPy array (what ``transform``
    receives; ``ToTensor`` turns it into a (1, 28, 28) float tensor) and an int. ``data`` (N, 28, 28) and
    ``targets`` (N,) hold everything as tensors.

    Example:
        >>> ds = FashionMNIST("~/data", train=False)   # also finds the Debian package's copy
        >>> img, label = ds[0]
        >>> img.shape, ds.classes[label]
        ((28, 28), 'Ankle boot')
    """

    mirrors = ["https://ossci-datasets.s3.amazonaws.com/mnist/", "http://yann.lecun.com/exdb/mnist/"]
    resources = [
        ("train-images-idx3-ubyte.gz", "f68b3c2dcbeaaa9fbdd348bbdeb94873"),
        ("train-labels-idx1-ubyte.gz", "d53e105ee54ea40749a09fcbcd1e9432"),
        ("t10k-images-idx3-ubyte.gz", "9fb629c4189551a2d022fa330f9573f3"),
        ("t10k-labels-idx1-ubyte.gz", "ec29112dd5afa0611ce80d1b7f02629c"),
    ]
    classes = ["0 - zero", "1 - one", "2 - two", "3 - three", "4 - four", "5 - five", "6 - six", "7 - seven",
               "8 - eight", "9 - nine"]
    system_dirs: List[str] = []  # extra places where a system package may have installed the files

    def __init__(self, root: Union[str, Path], train: bool = True, transform: Optional[Callable] = None,
                 target_transform: Optional[Callable] = None, download: bool = False) -> None:
        self.root = Path(root).expanduser()
        self.train = train
        self.transform = transform
        self.target_transform = target_transform
        prefix = "train" if train else "t10k"
        names = [f"{prefix}-images-idx3-ubyte.gz", f"{prefix}-labels-idx1-ubyte.gz"]
        paths = [find_file(n, self.search_dirs) for n in names]
        if any(p is None for p in paths) and download:
            md5s = dict(self.resources)
            paths = [p or _files.download(n, md5s[n], self.mirrors, self.raw_folder)
                     for p, n in zip(paths, names)]
        if any(p is None for p in paths):
            missing = [n for p, n in zip(paths, names) if p is None]
            raise DatasetNotFoundError(missing_message(type(self).__name__, missing, self.search_dirs))
        images, labels = read_idx(paths[0]), read_idx(paths[1])
        if images.ndim != 3 or labels.ndim != 1 or len(images) != len(labels):
            raise ValueError(f"{type(self).__name__}: {paths[0]} and {paths[1]} do not match: images "
                             f"{images.shape}, labels {labels.shape}")
        self.image_files = paths
        self._images = images
        self._labels = labels.astype(np.int64)
        self.data = ember.from_numpy(self._images)
        self.targets = ember.from_numpy(self._labels)

    @property
    def raw_folder(self) -> Path:
        return self.root / type(self).__name__ / "raw"

    @property
    def search_dirs(self) -> List[Path]:
        name = type(self).__name__
        return [self.raw_folder, self.root / name, self.root] + [Path(d) for d in self.system_dirs]

    @property
    def class_to_idx(self):
        return {c: i for i, c in enumerate(self.classes)}

    def __len__(self) -> int:
        return len(self._labels)

    def __getitem__(self, index: int) -> Tuple[object, object]:
        img, target = self._images[index], int(self._labels[index])
        if self.transform is not None:
            img = self.transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target

    def __repr__(self) -> str:
        return f"{type(self).__name__}(split={'train' if self.train else 'test'}, n={len(self)}, " \
               f"files={[str(p) for p in self.image_files]})"


class FashionMNIST(MNIST):
    """Zalando's Fashion-MNIST (same format and sizes as MNIST). Also finds the files of the Debian package
    ``dataset-fashion-mnist`` in ``/usr/share/datasets/fashion-mnist`` with no ``root`` set up."""

    mirrors = ["http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"]
    resources = [
        ("train-images-idx3-ubyte.gz", "8d4fb7e6c68d591d4c3dfef9ec88bf0d"),
        ("train-labels-idx1-ubyte.gz", "25c81989df183df01b3e8a0aad5dffbe"),
        ("t10k-images-idx3-ubyte.gz", "bef4ecab320f06d8554ea6380940ec79"),
        ("t10k-labels-idx1-ubyte.gz", "bb300cfdad3c16e7a12a480ee83cd310"),
    ]
    classes = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag",
               "Ankle boot"]
    system_dirs = ["/usr/share/datasets/fashion-mnist"]


class KMNIST(MNIST):
    """Kuzushiji-MNIST: cursive Japanese characters, MNIST's format and sizes."""

    mirrors = ["http://codh.rois.ac.jp/kmnist/dataset/kmnist/"]
    resources = [
        ("train-images-idx3-ubyte.gz", "bdb82020997e1d708af4cf47b453dcf7"),
        ("train-labels-idx1-ubyte.gz", "e144d726b3acfaa3e44228e80efcd344"),
        ("t10k-images-idx3-ubyte.gz", "5c965bf0a639b31b8f53240b1b52f4d7"),
        ("t10k-labels-idx1-ubyte.gz", "7320c461ea6c1c855c0b718fb2a4b134"),
    ]
    classes = ["o", "ki", "su", "tsu", "na", "ha", "ma", "ya", "re", "wo"]
