"""`ember run -n N script.py [args]`: start N processes of `script.py` with the MPI launcher.

Wraps the `mpiexec` that ships with the `mpich` wheel (beside the Python executable), else the one on PATH
(a cluster's MPI; `srun` works directly). Adds the flags a small machine needs: Open MPI refuses root
and more processes than cores unless told (`--allow-run-as-root --oversubscribe`); MPICH's Hydra needs
neither, and gets `-bind-to none` so N processes are not pinned to the same core.

    ember run -n 2 examples/ddp_mnist1d.py --epochs 3
    ember run -n 4 --hostfile hosts train.py
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-n", "--nproc", type=int, default=1, help="number of processes (ranks)")
    parser.add_argument("--hostfile", default=None, help="MPI host file (several machines)")
    parser.add_argument("--mpiexec", default=None, help="the mpiexec to use (default: the mpich wheel's)")
    parser.add_argument("--debug", action="store_true",
                        help="EMBER_DISTRIBUTED_DEBUG=1: check that all ranks issue the same collectives")
    parser.add_argument("--dry-run", action="store_true", help="print the command and exit")
    parser.add_argument("script", help="the Python script to run on every rank")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="arguments for the script")


def find_mpiexec(explicit: str | None = None) -> str:
    if explicit:
        return explicit
    beside = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if os.path.exists(beside):
        return beside
    found = shutil.which("mpiexec") or shutil.which("mpirun")
    if found is None:
        raise SystemExit("ember run: no mpiexec found; install the MPI extra: pip install ember[mpi]")
    return found


def _flavour(mpiexec: str) -> str:
    try:
        out = subprocess.run([mpiexec, "--version"], capture_output=True, text=True, timeout=30)
        text = out.stdout + out.stderr
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    if "Open MPI" in text or "OpenRTE" in text:
        return "openmpi"
    if "HYDRA" in text or "MPICH" in text or "Intel(R) MPI" in text:
        return "hydra"
    return "unknown"


def build_command(args) -> tuple[list[str], dict]:
    if args.nproc < 1:
        raise SystemExit(f"ember run: -n must be at least 1, got {args.nproc}")
    exe = find_mpiexec(args.mpiexec)
    flavour = _flavour(exe)
    cmd = [exe, "-n", str(args.nproc)]
    env = dict(os.environ)
    if flavour == "openmpi":
        cmd += ["--oversubscribe"]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            cmd += ["--allow-run-as-root"]
            env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
            env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    elif flavour == "hydra":
        cmd += ["-bind-to", "none"]
    if args.hostfile:
        cmd += ["-f" if flavour == "hydra" else "--hostfile", args.hostfile]
    if args.debug:
        env["EMBER_DISTRIBUTED_DEBUG"] = "1"
    # the ranks import this Ember, wherever it is (an installed package or a checkout)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    cmd += [sys.executable, args.script, *args.args]
    return cmd, env


def main(args) -> int:
    cmd, env = build_command(args)
    if args.dry_run:
        print(" ".join(cmd))
        return 0
    proc = subprocess.Popen(cmd, env=env)
    try:
        return proc.wait()
    except KeyboardInterrupt:       # Hydra forwards the signal to every rank
        proc.terminate()
        try:
            return proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            return proc.wait()
