#!/usr/bin/env bash
# The CUDA checks for a session that is lent a GPU (docs/gpu-runbook.md), one stage per device-tool call:
#
#   bash scripts/gpu_check.sh tests    # environment, then the cuda-marked tests on the real GPU
#   bash scripts/gpu_check.sh suites   # every check_op suite with Ember on 'cuda' (the Makefile's CHECK_OP_SUITES)
#   bash scripts/gpu_check.sh bench    # bench/gpu.py (add QUICK=1 for its --quick sizes)
#
# Runs with the machine's own python3 (its image has NumPy, CuPy, torch, pytest, pytest-xdist, numba,
# safetensors, onnx...), this checkout on PYTHONPATH, EMBER_FAKE_CUDA=0 (=1: a dry run of the plumbing on a CPU
# machine, PY=.venv/bin/python; its numbers mean nothing). Each stage writes its log under
# $OUT (what comes back from the device tool) and stops itself before the tool's 10-minute limit.
set -u
stage=${1:?usage: gpu_check.sh tests|suites|bench}
OUT=${OUT:-/tmp/gpu_check}
mkdir -p "$OUT"
PY=${PY:-python3}
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 EMBER_FAKE_CUDA=${EMBER_FAKE_CUDA:-0}
LIMIT=${LIMIT:-540}   # seconds: inside the device tool's 600 per command
NPROC=${NPROC:-8}     # pytest-xdist workers (the machine has 16 cores); 1: no xdist
PAR=""
[ "$NPROC" -gt 1 ] && PAR="-n $NPROC"

run() {   # run NAME CMD...: CMD's output to $OUT/NAME.log and its last lines to the terminal
    local name=$1; shift
    echo "== $name: $*"
    timeout "$LIMIT" "$@" > "$OUT/$name.log" 2>&1
    local rc=$?
    echo "rc $rc" >> "$OUT/$name.log"
    tail -n 15 "$OUT/$name.log"
    return $rc
}

case $stage in
tests)
    { nvidia-smi; $PY -c "import sys, numpy, cupy, torch; print(sys.version); print('numpy', numpy.__version__,
'cupy', cupy.__version__, 'torch', torch.__version__, torch.cuda.get_device_name(0))"; } > "$OUT/env.txt" 2>&1
    head -n 20 "$OUT/env.txt"
    run cuda_marked $PY -m pytest -p no:cacheprovider -q -m cuda $PAR --maxfail 50
    ;;
suites)
    suites=$(sed -n '/^CHECK_OP_SUITES :=/,/^$/p' Makefile | tr -d '\\' | sed 's/CHECK_OP_SUITES :=//')
    run check_op_cuda $PY -m pytest -p no:cacheprovider -q --check-op-device=cuda $PAR --maxfail 200 $suites
    ;;
bench)
    run bench $PY bench/gpu.py ${QUICK:+--quick}
    ;;
*)
    echo "gpu_check.sh: unknown stage '$stage' (tests, suites, bench)" >&2
    exit 2
    ;;
esac
