"""Peak RAM of ember.save / ember.load (and torch.save / torch.load beside them) on a large state dict.

Each measurement runs in a fresh subprocess: the peak resident set (ru_maxrss) above what the process held
before the call, as a multiple of the checkpoint's size. Not a test: it needs several GB of free RAM.

    python bench/ckpt_memory.py [GB]        # default 2
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile

_CHILD = r"""
import resource, sys, os
import numpy as np
which, path, nbytes = sys.argv[1], sys.argv[2], int(sys.argv[3])
n_tensors = 16
per = nbytes // n_tensors // 4

def rss():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

if which.startswith("ember"):
    import ember
    if which == "ember.save":
        state = {f"layer{i}.weight": ember.tensor(np.full(per, i, np.float32)) for i in range(n_tensors)}
        before = rss(); ember.save(state, path)
    else:
        before = rss(); state = ember.load(path)
        assert state["layer3.weight"].numpy()[-1] == 3
else:
    import torch
    if which == "torch.save":
        state = {f"layer{i}.weight": torch.full((per,), float(i)) for i in range(n_tensors)}
        before = rss(); torch.save(state, path)
    else:
        before = rss(); state = torch.load(path)
print((rss() - before) / (n_tensors * per * 4))
"""


def measure(which: str, path: str, nbytes: int) -> float:
    out = subprocess.run([sys.executable, "-c", _CHILD, which, path, str(nbytes)], check=True,
                         capture_output=True, text=True, cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    gb = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
    nbytes = int(gb * 2**30)
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as d:
        for lib, ext in (("ember", "safetensors"), ("torch", "pt")):
            path = os.path.join(d, f"ckpt.{ext}")
            for op in ("save", "load"):
                ratio = measure(f"{lib}.{op}", path, nbytes)
                print(f"{lib}.{op:5s} {gb:.1f} GB state dict: peak extra RSS = {ratio:.2f}x the checkpoint")
            os.unlink(path)


if __name__ == "__main__":
    main()
