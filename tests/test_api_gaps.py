"""scripts/api_gaps.py (which writes docs/api-gaps.md): every public torch name Ember lacks falls in a named
group with a reason, and every 'available under another name' target exists in Ember."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_every_gap_has_a_group_and_aliases_exist():
    out = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "api_gaps.py"), "--check"],
                         capture_output=True, text=True)
    assert out.returncode == 0, f"gaps in no group of scripts/api_gaps.py (or a bad alias):\n{out.stdout}{out.stderr}"
