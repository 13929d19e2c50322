"""Debug output chosen by the environment variable EMBER_DEBUG (read at import).

    EMBER_DEBUG=1   every primitive as it runs: name, operand shapes/dtypes, output shape, user's line
    EMBER_DEBUG=2   also every node of a backward pass, in the order the engine runs them

Lines go to stderr, prefixed `ember:`.
"""
from __future__ import annotations

import os
import sys

from ._errors import user_frame

try:
    LEVEL = int(os.environ.get("EMBER_DEBUG", "0") or 0)
except ValueError:
    LEVEL = 0


def _desc(a) -> str:
    return f"{tuple(a.shape)} {a.dtype}" if hasattr(a, "shape") else repr(a)


def op(node, arrays, out) -> None:
    ins = ", ".join(_desc(a) for a in arrays)
    sys.stderr.write(f"ember: {node.name}({ins}) -> {_desc(out)} at {user_frame()}\n")


def backward(node) -> None:
    sys.stderr.write(f"ember: backward {node.name} (forward at {node._where or '?'})\n")
