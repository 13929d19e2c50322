"""Pretrained weights: torchvision's entries (URL + checksum), local files, and the download.

`weights=` of every constructor takes
  - None: random initialisation;
  - a weights entry (`ResNet18_Weights.IMAGENET1K_V1`) or its name (`"IMAGENET1K_V1"`, `"DEFAULT"`):
    downloaded from torchvision's URL into `~/.cache/ember/models` (or `$EMBER_HOME/models`), its SHA-256
    checked against the prefix in the file name (torchvision's `check_hash` rule), then read with
    `ember._torch_file` (a reader for torch's `.pth` format that runs no pickled code);
  - a path to a local file: a safetensors file (`ember.load`), or a `.pth` / `.pt` state dict.
Offline, the download fails after `EMBER_DOWNLOAD_TIMEOUT` seconds (default 10) with a message saying
where to put the file by hand.
"""
from __future__ import annotations

import enum
import hashlib
import os
import socket
import urllib.error
from ember.datasets._files import fetch
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

__all__ = ["Weights", "WeightsEnum", "load_weights", "weights_cache_dir"]


@dataclass(frozen=True, eq=False)
class Weights:
    """One pretrained checkpoint: where torchvision publishes it and what it was measured at."""
    url: str
    meta: dict = field(default_factory=dict)

    @property
    def file_name(self) -> str:
        return self.url.rsplit("/", 1)[-1]

    @property
    def sha256_prefix(self) -> str:
        """torchvision names its files `<name>-<first hex digits of the SHA-256>.pth`."""
        return self.file_name.rsplit(".", 1)[0].rsplit("-", 1)[-1]


class WeightsEnum(enum.Enum):
    """Base of the per-model weight tables (`ResNet18_Weights.IMAGENET1K_V1`, `.DEFAULT`), as torchvision's."""

    @property
    def url(self) -> str:
        return self.value.url

    @property
    def meta(self) -> dict:
        return self.value.meta

    def get_state_dict(self, progress: bool = False) -> dict:
        return _download_state_dict(self.value, f"{type(self).__name__}.{self.name}")

    @classmethod
    def verify(cls, obj):
        """An entry from an entry or its name (`"IMAGENET1K_V1"`, `"DEFAULT"`); None stays None."""
        if obj is None or isinstance(obj, cls):
            return obj
        if isinstance(obj, str) and obj in cls.__members__:
            return cls.__members__[obj]
        raise TypeError(f"{cls.__name__}: weights must be one of {list(cls.__members__)}, a local file or None, "
                        f"got {obj!r}")


def weights_cache_dir() -> Path:
    home = os.environ.get("EMBER_HOME")
    base = Path(home) if home else Path("~/.cache/ember").expanduser()
    return base / "models"


def load_weights(model, weights: Any, table: Optional[type] = None) -> None:
    """Load `weights` (an entry of `table`, its name, or a local file) into `model` with `load_state_dict`."""
    if weights is None:
        return
    if table is not None and (isinstance(weights, table) or (isinstance(weights, str) and weights in table.__members__)):
        state = table.verify(weights).get_state_dict()
    elif isinstance(weights, WeightsEnum):
        raise TypeError(f"{type(model).__name__}: weights {weights} belong to another model"
                        + (f"; this one takes {table.__name__}" if table else ""))
    elif isinstance(weights, (str, os.PathLike)):
        state = read_state_dict(weights)
    else:
        raise TypeError(f"{type(model).__name__}: weights must be None, a weights entry, its name or a file path, "
                        f"got {type(weights).__name__}")
    model.load_state_dict(state)


def read_state_dict(path) -> dict:
    """A {name: Tensor} dict from a safetensors file, or from a torch `.pth`/`.pt` file (no code is run)."""
    import ember
    p = Path(path).expanduser()
    if not p.is_file():
        raise FileNotFoundError(f"weights file {str(p)!r} not found")
    with open(p, "rb") as fh:
        head = fh.read(9)
    # torch's zip or pickle formats by their first bytes, unless byte 8 starts a safetensors header (a
    # header length of 128 + 256k bytes begins with 0x80 too)
    if p.suffix in (".pth", ".pt", ".bin") or head[8:9] != b"{" and (head[:2] == b"PK" or head[:1] == b"\x80"):
        from ember._torch_file import load_torch_file
        state = load_torch_file(p)
    else:
        state = ember.load(p)
    if isinstance(state, dict) and "state_dict" in state and isinstance(state["state_dict"], dict):
        state = state["state_dict"]
    return state


def _download_state_dict(w: Weights, what: str) -> dict:
    target = weights_cache_dir() / w.file_name
    if not (target.is_file() and _sha256(target).startswith(w.sha256_prefix)):
        _download(w, what, target)
    return read_state_dict(target)


def _download(w: Weights, what: str, target: Path) -> None:
    timeout = float(os.environ.get("EMBER_DOWNLOAD_TIMEOUT", "10"))
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".part")
    try:
        fetch(w.url, tmp, timeout)
    except (urllib.error.URLError, socket.timeout, OSError, ValueError) as e:
        tmp.unlink(missing_ok=True)
        raise RuntimeError(
            f"{what}: could not download {w.url} ({getattr(e, 'reason', e)}). If this machine is offline, "
            f"download the file elsewhere and put it at {target} (SHA-256 starting with {w.sha256_prefix}), "
            f"or pass weights='path/to/file.safetensors'.") from None
    digest = _sha256(tmp)
    if not digest.startswith(w.sha256_prefix):
        tmp.unlink(missing_ok=True)
        raise RuntimeError(f"{what}: checksum mismatch for {w.url}: SHA-256 {digest} does not start with "
                           f"{w.sha256_prefix}")
    os.replace(tmp, target)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
