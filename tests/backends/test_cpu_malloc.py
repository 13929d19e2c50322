"""The CPU backend's allocator setting (backends/cpu.py, "the host allocator"): on glibc, large arrays freed
by one training step are reused by the next without page faults."""
import subprocess
import sys
import textwrap

import pytest

from ember.backends import cpu

glibc = pytest.mark.skipif(not sys.platform.startswith("linux") or not cpu.malloc_tuned,
                           reason="glibc malloc only (Linux); the setting did not apply here")

# 40 MiB arrays: above glibc's largest automatic mmap threshold (32 MiB), so an untuned malloc maps and
# unmaps each one and the process faults every page of it in again (10,240 faults per array)
LOOP = textwrap.dedent("""
    import resource, sys
    import numpy as np
    import ember
    from ember.backends import cpu
    np._core.multiarray._set_madvise_hugepage(False)   # 4 KiB pages whatever the kernel's THP setting
    for _ in range(3):
        np.ones(10 << 20, np.float32)
    r0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(20):
        np.ones(10 << 20, np.float32)
    print(cpu.malloc_tuned, (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - r0) / 20)
""")


def _run(env_extra):
    import os
    env = {k: v for k, v in os.environ.items() if not (k.startswith("MALLOC_") or k == "GLIBC_TUNABLES")}
    env.update(env_extra)
    out = subprocess.run([sys.executable, "-c", LOOP], env=env, capture_output=True, text=True, check=True)
    tuned, faults = out.stdout.split()
    return tuned == "True", float(faults)


@glibc
def test_a_freed_large_array_is_reused_without_page_faults():
    tuned, faults = _run({})
    assert tuned and faults < 100          # one array is 10,240 pages


@glibc
def test_the_setting_can_be_turned_off_and_then_every_array_faults_in_again():
    tuned, faults = _run({"EMBER_MALLOC_TUNING": "0"})
    assert not tuned and faults > 10_000


@glibc
def test_a_users_own_malloc_setting_is_left_alone():
    tuned, _ = _run({"MALLOC_ARENA_MAX": "2", "MALLOC_TRIM_THRESHOLD_": "131072"})
    assert not tuned
    tuned, _ = _run({"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=131072"})
    assert not tuned
