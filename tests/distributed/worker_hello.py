"""MPI job: prints its rank, world size and arguments (for the launcher tests)."""
import sys

import ember.distributed as dist

dist.init_process_group()
print(f"HELLO rank {dist.get_rank()} of {dist.get_world_size()} args {sys.argv[1:]}", flush=True)
if "--fail" in sys.argv and dist.get_rank() == 0:
    raise SystemExit(3)
dist.destroy_process_group()
