"""CIFAR-10 and CIFAR-100 from the standard *binary* version (``cifar-10-binary.tar.gz``)."""
from __future__ import annotations

import tarfile
from pathlib import Path
from typing import Callable, List, Optional, Tuple, Union

import numpy as np

from ember.datasets import _files
from ember.datasets._files import CorruptFileError, DatasetNotFoundError, missing_message
from ember.utils.data import Dataset

__all__ = ["CIFAR10", "CIFAR100"]


class CIFAR10(Dataset):
    """CIFAR-10: 50,000 training and 10,000 test 32x32 colour images in 10 classes.

    Reads ``root/cifar-10-batches-bin/{data_batch_1..5,test_batch}.bin``: records of 1 label byte then
    3,072 pixel bytes (the red, green and blue planes, row-major). ``download=True`` fetches and checks
    ``cifar-10-binary.tar.gz`` from the authors' site and unpacks it under ``root``. A sample is
    ``(image, label)`` with the image a (32, 32, 3) uint8 array (``ToTensor`` makes it (3, 32, 32));
    ``data`` is (N, 32, 32, 3) and ``targets`` a list of ints, as in torchvision.

    Example:
        >>> ds = CIFAR10("~/data", train=False)  # doctest: +SKIP
        >>> img, label = ds[0]  # doctest: +SKIP
        >>> img.shape, ds.classes[label]  # doctest: +SKIP
        ((32, 32, 3), 'cat')
    """

    base_folder = "cifar-10-batches-bin"
    archive = ("cifar-10-binary.tar.gz", "c32a1d4ab5d03f1284b67883e8d87530")
    mirrors = ["https://www.cs.toronto.edu/~kriz/"]
    train_files = [f"data_batch_{i}.bin" for i in range(1, 6)]
    test_files = ["test_batch.bin"]
    label_bytes = 1
    meta_file = "batches.meta.txt"
    default_classes = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]

    def __init__(self, root: Union[str, Path], train: bool = True, transform: Optional[Callable] = None,
                 target_transform: Optional[Callable] = None, download: bool = False) -> None:
        self.root = Path(root).expanduser()
        self.train = train
        self.transform = transform
        self.target_transform = target_transform
        names = self.train_files if train else self.test_files
        folder = self.root / self.base_folder
        if download and not all((folder / n).is_file() for n in names):
            tar_path = _files.download(self.archive[0], self.archive[1], self.mirrors, self.root)
            with tarfile.open(tar_path, "r:gz") as tar:
                tar.extractall(self.root, filter="data")
        missing = [n for n in names if not (folder / n).is_file()]
        if missing:
            raise DatasetNotFoundError(missing_message(
                type(self).__name__, missing, [folder],
                hint=f" (or unpack {self.archive[0]} from {self.mirrors[0]} in {self.root})"))
        labels, images = [], []
        for n in names:
            lab, img = self._read(folder / n)
            labels.append(lab)
            images.append(img)
        self._all_labels = np.concatenate(labels)  # (N, label_bytes)
        self.data = np.concatenate(images).reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1).copy()  # (N, H, W, C)
        self.targets: List[int] = self._all_labels[:, -1].astype(np.int64).tolist()
        self.classes = self._read_classes(folder)

    def _read(self, path: Path) -> Tuple[np.ndarray, np.ndarray]:
        record = self.label_bytes + 3072
        raw = np.fromfile(path, dtype=np.uint8)
        if raw.size == 0 or raw.size % record != 0:
            raise CorruptFileError(f"{path}: truncated or not a CIFAR binary file: {raw.size} bytes is not a "
                                   f"whole number of {record}-byte records")
        rows = raw.reshape(-1, record)
        labels = rows[:, :self.label_bytes]
        if labels[:, -1].max() >= self.num_classes:
            raise CorruptFileError(f"{path}: label {int(labels[:, -1].max())} out of range for "
                                   f"{self.num_classes} classes: corrupt file or wrong CIFAR version")
        return labels, rows[:, self.label_bytes:]

    @property
    def num_classes(self) -> int:
        return len(self.default_classes)

    def _read_classes(self, folder: Path) -> List[str]:
        meta = folder / self.meta_file
        if meta.is_file():
            names = [line.strip() for line in meta.read_text().splitlines() if line.strip()]
            if len(names) == self.num_classes:
                return names
        return list(self.default_classes)

    def __len__(self) -> int:
        return len(self.targets)

    def __getitem__(self, index: int):
        img, target = self.data[index], self.targets[index]
        if self.transform is not None:
            img = self.transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target


class CIFAR100(CIFAR10):
    """CIFAR-100: like CIFAR-10 with 100 fine classes (``targets``) grouped in 20 coarse ones
    (``coarse_targets``). Reads ``root/cifar-100-binary/{train,test}.bin`` (records: coarse byte, fine
    byte, 3,072 pixel bytes)."""

    base_folder = "cifar-100-binary"
    archive = ("cifar-100-binary.tar.gz", "03b5dce01913d631647c71ecec9e9cb8")
    train_files = ["train.bin"]
    test_files = ["test.bin"]
    label_bytes = 2
    meta_file = "fine_label_names.txt"
    default_classes = [f"class_{i}" for i in range(100)]

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.coarse_targets: List[int] = self._all_labels[:, 0].astype(np.int64).tolist()
