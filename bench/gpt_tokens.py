"""Training tokens per second of the baby character GPT (ember.lm.train's default configuration: 4 layers,
128 wide, context 64, batch 32, AdamW, clipping), eager against compiled (`TrainConfig(compile=True)`:
forward+backward and the update as two `ember.compile`d functions). Issue 16 asks for both numbers.

    python bench/gpt_tokens.py                   # 5 rounds of 20 iterations each way, alternating
    python bench/gpt_tokens.py --rounds 3 --iters 10 --threads 1

Rounds alternate (eager, compiled, eager, ...) so drift on a shared machine hits both alike; the median
round is reported. Both trainers start from the same seed; the compiled one is traced before timing.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iters", type=int, default=20, help="iterations per round")
    ap.add_argument("--threads", type=int, default=None, help="BLAS threads (default: the library's)")
    args = ap.parse_args()
    import ember
    if args.threads:
        ember.set_num_threads(args.threads)
    from ember.lm.train import Trainer, TrainConfig
    trainers = {}
    with tempfile.TemporaryDirectory() as tmp:
        for mode in ("eager", "compiled"):
            cfg = TrainConfig(compile=mode == "compiled", out_dir=os.path.join(tmp, mode), eval_interval=10 ** 9)
            t = trainers[mode] = Trainer(cfg, log=lambda *a: None)
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")      # the retraces while the gradients and AdamW's state appear
                for _ in range(3):
                    t.step()
            print(f"{mode}: first 3 iterations (warm-up{', tracing' if mode == 'compiled' else ''}) "
                  f"{time.perf_counter() - t0:.2f} s")
        cfg = trainers["eager"].cfg
        tokens = cfg.batch_size * cfg.block_size * cfg.grad_accum
        times = {m: [] for m in trainers}
        for _ in range(args.rounds):
            for mode, t in trainers.items():
                t0 = time.perf_counter()
                for _ in range(args.iters):
                    t.step()
                times[mode].append((time.perf_counter() - t0) / args.iters)
    from harness import machine
    try:
        print(machine())
    except ImportError:
        print(os.uname().machine)
    n = trainers["eager"].model.get_num_params()
    print(f"baby GPT, {n:,} parameters, {tokens} tokens per iteration; median of {args.rounds} rounds of "
          f"{args.iters} iterations")
    print("| mode | ms / iteration | tokens / s |")
    print("|---|---:|---:|")
    for mode, ts in times.items():
        s = statistics.median(ts)
        print(f"| {mode} | {s * 1e3:.1f} | {tokens / s:,.0f} |")
    print(f"compiled / eager time: {statistics.median(times['compiled']) / statistics.median(times['eager']):.2f}")
    info = trainers["compiled"]._micro.cache_info()
    print(f"compiled micro-step cache: {info['traces']} traces, {info['hits']} hits")


if __name__ == "__main__":
    main()
