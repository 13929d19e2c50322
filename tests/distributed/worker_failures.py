"""MPI job for the failure tests; argv[1] picks the scenario.

timeout: rank 1 never joins; rank 0's all_reduce must raise DistributedTimeoutError after ~2 s, and the
         job must then end (rank 0 aborts at exit: a pending MPI collective cannot be cancelled).
raise:   rank 1 raises; rank 0 waits in a barrier with the default 30 min timeout: the excepthook must abort
         both, printing rank 1's traceback.
debug:   EMBER_DISTRIBUTED_DEBUG=1, the ranks all-reduce different shapes: both raise naming rank 1.
"""
import datetime
import os
import sys
import time

import ember
import ember.distributed as dist

scenario = sys.argv[1]


def report(line):
    """Print, and append to $EMBER_TEST_OUT when set: MPI_Abort may kill the job before mpiexec forwards
    the last lines of stdout, a file written before the abort is always there."""
    print(line, flush=True)
    path = os.environ.get("EMBER_TEST_OUT")
    if path:
        with open(path, "a") as f:
            f.write(line + "\n")
            f.flush()
            os.fsync(f.fileno())


if scenario == "timeout":
    dist.init_process_group("mpi", timeout=datetime.timedelta(seconds=2))
else:
    dist.init_process_group("mpi")
R = dist.get_rank()

if scenario == "timeout":
    if R == 0:
        t0 = time.monotonic()
        try:
            dist.all_reduce(ember.ones(3))
        except dist.DistributedTimeoutError as e:
            report(f"TIMEOUT_OK after {time.monotonic() - t0:.1f} s: {e}")
        try:
            dist.barrier()
        except RuntimeError as e:
            report(f"BROKEN_OK: {e}")
    else:
        time.sleep(600)     # killed when rank 0 aborts
elif scenario == "raise":
    dist.barrier()
    if R == 1:
        print(f"RAISING_AT {time.time()}", flush=True)
        raise ValueError("boom from rank 1")
    dist.barrier()
    time.sleep(600)
elif scenario == "debug":
    t = ember.ones(3 if R == 0 else 4)
    try:
        dist.all_reduce(t)
    except RuntimeError as e:
        print(f"DEBUG_MSG rank {R}: {e}", flush=True)
    dist.barrier()
    dist.destroy_process_group()
