"""pyflakes finds nothing in the package: no undefined names, unused imports or dead variables.

Package `__init__.py` files only re-export, so their 'imported but unused' reports are expected.
"""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

pytest.importorskip("pyflakes")


def test_pyflakes_clean():
    r = subprocess.run([sys.executable, "-m", "pyflakes", "ember"], cwd=ROOT, capture_output=True, text=True)
    problems = [line for line in r.stdout.splitlines()
                if not (line.split(":")[0].endswith("__init__.py")
                        and ("imported but unused" in line or "may be undefined, or defined from star" in line
                             or "unable to detect undefined names" in line))]
    assert not problems, "\n".join(problems)
