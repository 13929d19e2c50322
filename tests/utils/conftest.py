"""Fixtures for the DataLoader tests: check that no worker process and no shared-memory slot outlives a test."""
import gc
import os
import time

import pytest

from ember.utils.data._shm import SLOT_PREFIX, shm_dir


def _is_helper(pid):
    """multiprocessing's resource tracker lives as long as the interpreter once 'spawn' was used: not a leak."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return b"resource_tracker" in f.read()
    except OSError:
        return False


def child_pids():
    """Live (non-zombie) processes whose parent is this process."""
    me, out = os.getpid(), set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[1]) == me and fields[0] != "Z" and not _is_helper(entry):
            out.add(int(entry))
    return out


def our_slots():
    prefix = f"{SLOT_PREFIX}{os.getpid()}_"
    return {name for name in os.listdir(shm_dir()) if name.startswith(prefix)}


def wait_until_clean(children_before, timeout=30.0):   # returns as soon as all is clean
    deadline = time.monotonic() + timeout
    while True:
        gc.collect()
        extra, slots = child_pids() - children_before, our_slots()
        if (not extra and not slots) or time.monotonic() > deadline:
            return extra, slots
        time.sleep(0.05)


@pytest.fixture
def no_leaks():
    """Yields; afterwards asserts every worker process is gone and every shared-memory slot unlinked."""
    before = child_pids()
    yield
    extra, slots = wait_until_clean(before)
    assert not extra, f"orphaned worker processes: {sorted(extra)}"
    assert not slots, f"leaked shared-memory slots: {sorted(slots)}"
