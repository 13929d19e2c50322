# Shared plumbing for the dataset loaders: where data lives, checksums, downloads that fail fast offline,
# and readers for the standard file formats that name the file when it is corrupt.
from __future__ import annotations

import gzip
import hashlib
import os
import socket
import struct
import urllib.error
import urllib.request
import zlib
from pathlib import Path
from typing import List, Optional, Sequence

import numpy as np

DOWNLOAD_TIMEOUT = 10.0  # seconds per connection attempt: offline machines fail in seconds, not minutes


class DatasetNotFoundError(FileNotFoundError):
    """The files a dataset needs are not where the loader looked (the message says where to put them)."""


class CorruptFileError(RuntimeError):
    """A dataset file exists but cannot be read: truncated, damaged, or not the expected format."""


def data_home() -> Path:
    """Ember's data directory: ``$EMBER_DATA``, else ``~/.cache/ember``."""
    env = os.environ.get("EMBER_DATA")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "ember"


def md5(path: Path, chunk: int = 1 << 20) -> str:
    h = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(chunk), b""):
            h.update(block)
    return h.hexdigest()


def fetch(url: str, dest: Path, timeout: float) -> None:
    """Stream `url` into the file `dest`, 1 MiB at a time (urllib, socket and OS errors propagate)."""
    with urllib.request.urlopen(url, timeout=timeout) as r, open(dest, "wb") as out:
        while True:
            block = r.read(1 << 20)
            if not block:
                break
            out.write(block)


def download(filename: str, md5sum: Optional[str], mirrors: Sequence[str], dest_dir: Path,
             timeout: Optional[float] = None) -> Path:
    """Fetch ``filename`` from the first mirror that answers, verify its MD5, and store it in ``dest_dir``.

    A file already there with the right checksum is kept. Raises RuntimeError naming every mirror's error
    and where to put the file by hand when no mirror works (e.g. offline)."""
    timeout = DOWNLOAD_TIMEOUT if timeout is None else timeout
    dest_dir.mkdir(parents=True, exist_ok=True)
    target = dest_dir / filename
    if target.exists() and (md5sum is None or md5(target) == md5sum):
        return target
    errors: List[str] = []
    for mirror in mirrors:
        url = mirror.rstrip("/") + "/" + filename
        tmp = target.with_name(target.name + ".part")
        try:
            fetch(url, tmp, timeout)
        except (urllib.error.URLError, socket.timeout, OSError, ValueError) as e:
            errors.append(f"{url}: {getattr(e, 'reason', e)}")
            tmp.unlink(missing_ok=True)
            continue
        got = md5(tmp)
        if md5sum is not None and got != md5sum:
            errors.append(f"{url}: checksum mismatch (md5 {got}, expected {md5sum})")
            tmp.unlink(missing_ok=True)
            continue
        os.replace(tmp, target)
        return target
    raise RuntimeError(
        f"could not download {filename} from any mirror:\n  " + "\n  ".join(errors) +
        f"\nIf this machine is offline, download {filename} elsewhere and put it in {dest_dir}/"
        + (f" (md5 {md5sum})" if md5sum else ""))


def _open(path: Path):
    return gzip.open(path, "rb") if str(path).endswith(".gz") else open(path, "rb")


def read_bytes(path: Path) -> bytes:
    """All bytes of a (possibly gzipped) file; a damaged gzip stream raises CorruptFileError naming it."""
    try:
        with _open(path) as f:
            return f.read()
    except (OSError, EOFError, zlib.error) as e:
        raise CorruptFileError(f"{path}: corrupt or truncated file ({type(e).__name__}: {e}); "
                               f"delete it and download it again") from e


_IDX_DTYPES = {0x08: np.uint8, 0x09: np.int8, 0x0B: np.dtype(">i2"), 0x0C: np.dtype(">i4"),
               0x0D: np.dtype(">f4"), 0x0E: np.dtype(">f8")}


def read_idx(path: Path) -> np.ndarray:
    """Read an IDX file (MNIST's format: magic, big-endian dims, then the data), gzipped or not."""
    raw = read_bytes(path)
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] not in _IDX_DTYPES:
        raise CorruptFileError(f"{path}: not an IDX file (bad magic number {raw[:4].hex() or 'empty file'})")
    ndim = raw[3]
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise CorruptFileError(f"{path}: truncated IDX header ({len(raw)} bytes)")
    shape = struct.unpack(f">{ndim}I", raw[4:header])
    dtype = np.dtype(_IDX_DTYPES[raw[2]])
    expected = int(np.prod(shape)) * dtype.itemsize
    if len(raw) - header != expected:
        raise CorruptFileError(f"{path}: truncated or corrupt IDX file: header says shape {shape} "
                               f"({expected} bytes of data), file has {len(raw) - header}")
    return np.frombuffer(raw, dtype=dtype, offset=header).reshape(shape).astype(dtype.newbyteorder("="))


def find_file(name: str, dirs: Sequence[Path]) -> Optional[Path]:
    """The first ``dir/name`` (or ``dir/name`` without ``.gz``) that exists."""
    for d in dirs:
        for candidate in (Path(d) / name, Path(d) / name.removesuffix(".gz")):
            if candidate.is_file():
                return candidate
    return None


def missing_message(dataset: str, names: Sequence[str], dirs: Sequence[Path], hint: str = "") -> str:
    where = "\n  ".join(str(d) for d in dirs)
    return (f"{dataset}: dataset files not found: {', '.join(names)}\nLooked in:\n  {where}\n"
            f"Put the files in {dirs[0]}/ or pass download=True{hint}")
