"""W5 of shared/WORKLOADS.md: a tiny GPT. vocab 65, block 64, n_embd 128, 2 pre-LN blocks of (LayerNorm,
causal self-attention with 4 heads, residual, LayerNorm, MLP 4x with GELU, residual), token + learned position
embeddings, final LayerNorm and linear head; batch 16; cross-entropy; AdamW(lr=3e-4).
One model definition, built once with `lib=torch` and once with `lib=ember`; one iteration = zero_grad,
forward, backward, step. Alternating runs after warm-up; medians and the ratio ember / torch.

    .venv/bin/python bench/w5_gpt.py
    .venv/bin/python bench/w5_gpt.py --profile     # cProfile of the Ember step, top costs
    .venv/bin/python bench/w5_gpt.py --kernels-ab  # Ember without, then with, its compiled CPU kernels
                                                   # (ember/backends/cpu_kernels.py), alternating rounds
    .venv/bin/python bench/w5_gpt.py --cpu         # one thread each side, CPU time of the thread
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import compare, machine, profile, table  # noqa: E402

import torch  # noqa: E402

import ember  # noqa: E402

TARGET = 1.3
VOCAB, BLOCK, N_EMBD, N_HEAD, N_LAYER, BATCH = 65, 64, 128, 4, 2, 16


def gpt(lib, vocab=VOCAB, block=BLOCK, n_embd=N_EMBD, n_head=N_HEAD, n_layer=N_LAYER):
    """W5's GPT; the keyword arguments give other sizes of the same model (bench/gpu.py: GPT-2 small)."""
    nn, F = lib.nn, lib.nn.functional
    VOCAB, BLOCK, N_EMBD, N_HEAD, N_LAYER = vocab, block, n_embd, n_head, n_layer  # noqa: N806

    class CausalSelfAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = nn.Linear(N_EMBD, 3 * N_EMBD)
            self.proj = nn.Linear(N_EMBD, N_EMBD)

        def forward(self, x):
            B, T, C = x.shape
            q, k, v = self.qkv(x).split(N_EMBD, dim=2)                       # (B, T, C) each
            q, k, v = (t.view(B, T, N_HEAD, C // N_HEAD).transpose(1, 2) for t in (q, k, v))  # (B, nh, T, hs)
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)     # (B, nh, T, hs)
            return self.proj(y.transpose(1, 2).contiguous().view(B, T, C))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.attn = nn.LayerNorm(N_EMBD), CausalSelfAttention()
            self.ln2 = nn.LayerNorm(N_EMBD)
            self.mlp = nn.Sequential(nn.Linear(N_EMBD, 4 * N_EMBD), nn.GELU(), nn.Linear(4 * N_EMBD, N_EMBD))

        def forward(self, x):
            x = x + self.attn(self.ln1(x))
            return x + self.mlp(self.ln2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(VOCAB, N_EMBD)
            self.pos = nn.Embedding(BLOCK, N_EMBD)
            self.blocks = nn.Sequential(*[Block() for _ in range(N_LAYER)])
            self.ln_f = nn.LayerNorm(N_EMBD)
            self.head = nn.Linear(N_EMBD, VOCAB)

        def forward(self, idx):
            T = idx.shape[1]
            x = self.tok(idx) + self.pos(lib.arange(T, device=idx.device))  # (B, T, C)
            return self.head(self.ln_f(self.blocks(x)))                     # (B, T, vocab)

    return GPT()


def make(lib, idx_np, tgt_np):
    lib.manual_seed(0)
    model = gpt(lib)
    opt = lib.optim.AdamW(model.parameters(), lr=3e-4)
    idx, tgt = lib.from_numpy(idx_np), lib.from_numpy(tgt_np)

    def step():
        opt.zero_grad()
        logits = model(idx)
        loss = lib.nn.functional.cross_entropy(logits.view(-1, VOCAB), tgt.view(-1))
        loss.backward()
        opt.step()
        return loss
    return step


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--kernels-ab", action="store_true")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cpu", action="store_true")
    args = ap.parse_args()
    timer = time.perf_counter
    if args.cpu:
        timer = time.thread_time
        torch.set_num_threads(1)
        ember.set_num_threads(1)
    rng = np.random.default_rng(0)
    idx_np = rng.integers(0, VOCAB, (BATCH, BLOCK)).astype(np.int64)
    tgt_np = rng.integers(0, VOCAB, (BATCH, BLOCK)).astype(np.int64)
    e_step, t_step = make(ember, idx_np, tgt_np), make(torch, idx_np, tgt_np)
    if args.profile:
        profile(e_step, iters=20, warmup=3, top=20)
        return
    if args.kernels_ab:
        from ember.backends import cpu_kernels
        ratios = {False: [], True: []}
        for _ in range(args.rounds):
            for on in (False, True):
                cpu_kernels.enable() if on else cpu_kernels.disable()
                r = compare("W5", e_step, t_step, iters=args.iters, clock=timer)
                ratios[on].append(r["ratio"])
                print(f"kernels {'on ' if on else 'off'}: ember {r['ember'] * 1e3:.2f} ms, "
                      f"torch {r['torch'] * 1e3:.2f} ms, ratio {r['ratio']:.2f}", flush=True)
        print(machine())
        print(f"W5 ember / torch, median of {args.rounds} rounds: without kernels "
              f"{statistics.median(ratios[False]):.2f}, with kernels {statistics.median(ratios[True]):.2f}")
        return
    row = compare("W5 tiny GPT + AdamW", e_step, t_step, iters=args.iters, clock=timer)
    print(machine())
    print(table([row], {"W5 tiny GPT + AdamW": TARGET}))


if __name__ == "__main__":
    main()
