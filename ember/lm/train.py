"""Train a character-level GPT on Shakespeare: `ember train-gpt` and examples/shakespeare_gpt.py.

The recipe is nanoGPT's `train.py` for its `shakespeare_char` configuration, shrunk to a baby model
(about 0.8M parameters, context of 64 characters) that trains on 2 CPU cores:

    every iteration:  lr <- warm-up then cosine decay (a function of the iteration number)
                      `grad_accum` micro-batches of random 64-character windows: forward, loss / grad_accum,
                      backward (gradients add up)
                      clip the gradient norm, AdamW step (weight decay on matrices only), zero the gradients
    every eval_interval iterations: mean train and validation loss over `eval_iters` batches, a checkpoint

A checkpoint holds the model, the optimizer's state, the iteration number, the loss curve so far and the
random generator's state, so `--resume` continues exactly where the run stopped: the same batches, the
same dropout masks, the same losses as if it had never stopped (tests/lm/test_train_gpt.py checks it).

    ember train-gpt --out runs/gpt --max-minutes 20       # train, writing runs/gpt/ckpt.safetensors
    ember train-gpt --out runs/gpt --resume               # go on after an interruption
    ember train-gpt --out runs/gpt --sample "ROMEO:"      # sample from the checkpoint (KV cache)
"""
from __future__ import annotations

import argparse
import dataclasses
import math
import os
import time
from dataclasses import dataclass, field

import ember

__all__ = ["TrainConfig", "Trainer", "main"]


@dataclass
class TrainConfig:
    # model: the baby GPT (about 0.8M parameters)
    block_size: int = 64
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 128
    dropout: float = 0.0
    bias: bool = False
    # optimisation: AdamW, warm-up and cosine decay, clipping, accumulation
    batch_size: int = 32
    grad_accum: int = 1
    learning_rate: float = 2e-3
    min_lr: float = 2e-4
    warmup_iters: int = 100
    max_iters: int = 4000          # also the length of the cosine schedule
    weight_decay: float = 0.1
    betas: tuple = (0.9, 0.99)
    grad_clip: float = 1.0
    # evaluation and checkpoints
    eval_interval: int = 250
    eval_iters: int = 20
    max_minutes: float | None = None   # stop (after a checkpoint) once training has run this long
    seed: int = 1337
    compile: bool = False          # run each micro-batch's forward+backward and the update as compiled graphs
    out_dir: str = "runs/shakespeare_gpt"
    extra: dict = field(default_factory=dict)

    def lr_at(self, it: int) -> float:
        """nanoGPT's schedule: linear warm-up, then cosine from learning_rate down to min_lr."""
        if it < self.warmup_iters:
            return self.learning_rate * (it + 1) / (self.warmup_iters + 1)
        if it >= self.max_iters:
            return self.min_lr
        ratio = (it - self.warmup_iters) / max(1, self.max_iters - self.warmup_iters)
        return self.min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (self.learning_rate - self.min_lr)


class Trainer:
    """The state of one run: data, model, optimizer, iteration, curve; `run()` trains, `save()`/`resume()`."""

    CKPT = "ckpt.safetensors"

    def __init__(self, cfg: TrainConfig, log=print):
        from ember.datasets import Shakespeare
        from ember.models.gpt import GPT, GPTConfig
        self.cfg, self.log = cfg, log
        ember.manual_seed(cfg.seed)
        train, val = (Shakespeare(block_size=cfg.block_size, split=s) for s in ("train", "val"))
        self.vocab, self.data = train, {"train": train.data, "val": val.data}
        self.model_config = GPTConfig(block_size=cfg.block_size, vocab_size=train.vocab_size, n_layer=cfg.n_layer,
                                      n_head=cfg.n_head, n_embd=cfg.n_embd, dropout=cfg.dropout, bias=cfg.bias)
        self.model = GPT(self.model_config)
        self.opt = self.model.configure_optimizers(cfg.weight_decay, cfg.learning_rate, cfg.betas)
        self.iter = 0
        self.curve = {"iter": [], "train": [], "val": [], "lr": [], "seconds": []}
        self.losses: list[float] = []          # every iteration's training loss
        self.seconds = 0.0                     # training time so far, over restarts
        self._micro, self._update = self._micro_step, self._update_step
        if cfg.compile:   # traced on first use, replayed after (ember.compile; eager is the default)
            self._micro, self._update = ember.compile(self._micro_step), ember.compile(self._update_step)

    # ------------------------------------------------------------------ data
    def batch(self, split: str):
        """`batch_size` random windows: inputs and the same windows shifted by one character."""
        data, T = self.data[split], self.cfg.block_size
        starts = ember.randint(0, data.shape[0] - T - 1, (self.cfg.batch_size,))
        offsets = ember.arange(T)
        idx = starts.unsqueeze(1) + offsets
        return data[idx], data[idx + 1]

    @ember.no_grad()
    def estimate_loss(self) -> dict:
        self.model.eval()
        out = {}
        for split in ("train", "val"):
            total = 0.0
            for _ in range(self.cfg.eval_iters):
                x, y = self.batch(split)
                total += float(self.model(x, y)[1])
            out[split] = total / self.cfg.eval_iters
        self.model.train()
        return out

    # ------------------------------------------------------------------ training
    def step(self) -> float:
        """One iteration (grad_accum micro-batches, clip, AdamW); returns the mean micro-batch loss."""
        cfg = self.cfg
        lr = cfg.lr_at(self.iter)
        for g in self.opt.param_groups:
            g["lr"] = lr
        total = 0.0
        for _ in range(cfg.grad_accum):
            x, y = self.batch("train")
            total += float(self._micro(x, y))
        self._update()
        self.iter += 1
        return total / cfg.grad_accum

    def _micro_step(self, x, y):
        """One micro-batch: forward, backward of loss / grad_accum (gradients add up); returns the loss."""
        _, loss = self.model(x, y)
        (loss / self.cfg.grad_accum).backward()
        return loss.detach()

    def _update_step(self):
        """Clip the gradient norm, AdamW step, drop the gradients."""
        if self.cfg.grad_clip:
            ember.nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.grad_clip)
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)

    def run(self, stop_after: int | None = None) -> dict:
        """Train to max_iters (or `stop_after` more iterations, or max_minutes), evaluating and checkpointing
        every eval_interval iterations; returns the curve."""
        cfg, start_iter = self.cfg, self.iter
        tokens = cfg.batch_size * cfg.block_size * cfg.grad_accum
        t0 = time.perf_counter()
        last = t0
        while self.iter < cfg.max_iters:
            if stop_after is not None and self.iter - start_iter >= stop_after:
                break
            self.losses.append(self.step())
            now = time.perf_counter()
            self.seconds += now - last
            last = now
            if self.iter % cfg.eval_interval == 0 or self.iter == cfg.max_iters:
                ev = self.estimate_loss()
                last = time.perf_counter()       # evaluation is not training time
                for k, v in (("iter", self.iter), ("train", ev["train"]), ("val", ev["val"]),
                             ("lr", cfg.lr_at(self.iter - 1)), ("seconds", self.seconds)):
                    self.curve[k].append(v)
                rate = tokens * (self.iter - start_iter) / max(now - t0, 1e-9)
                self.log(f"iter {self.iter:5d}: train loss {ev['train']:.4f}, val loss {ev['val']:.4f} "
                         f"(nats/char), lr {cfg.lr_at(self.iter - 1):.2e}, {rate:,.0f} tokens/s, "
                         f"{self.seconds / 60:.1f} min")
                self.save()
                if cfg.max_minutes is not None and self.seconds >= 60 * cfg.max_minutes:
                    self.log(f"stopping: {cfg.max_minutes} minutes of training reached")
                    break
        return self.curve

    # ------------------------------------------------------------------ checkpoints
    def save(self) -> str:
        os.makedirs(self.cfg.out_dir, exist_ok=True)
        path = os.path.join(self.cfg.out_dir, self.CKPT)
        cfg = dataclasses.asdict(self.cfg)
        cfg["betas"] = list(cfg["betas"])
        ember.save({"model": self.model.state_dict(), "optimizer": self.opt.state_dict(), "iter": self.iter,
                    "curve": self.curve, "losses": self.losses, "seconds": self.seconds,
                    "rng": ember.get_rng_state(), "train_config": cfg,
                    "model_config": dataclasses.asdict(self.model_config)}, path)
        return path

    @classmethod
    def resume(cls, out_dir: str, log=print, **overrides) -> "Trainer":
        """The run saved in `out_dir`, ready to go on (`overrides` may change e.g. max_minutes)."""
        path = os.path.join(out_dir, cls.CKPT)
        if not os.path.exists(path):
            raise FileNotFoundError(f"train-gpt --resume: no checkpoint {path}; train first (without --resume)")
        ck = ember.load(path)
        saved = dict(ck["train_config"], **overrides)
        saved["betas"] = tuple(saved["betas"])
        saved["out_dir"] = out_dir
        self = cls(TrainConfig(**saved), log=log)
        self.model.load_state_dict(ck["model"])
        self.opt.load_state_dict(ck["optimizer"])
        self.iter, self.curve, self.losses, self.seconds = ck["iter"], ck["curve"], list(ck["losses"]), ck["seconds"]
        ember.set_rng_state(ck["rng"])
        log(f"resumed from {path} at iteration {self.iter}")
        return self

    # ------------------------------------------------------------------ output
    def sample(self, prompt: str = "\n", max_new_tokens: int = 300, temperature: float = 0.8,
               top_k: int | None = 20, use_cache: bool = True) -> str:
        self.model.eval()
        idx = ember.tensor([self.vocab.encode(prompt)], dtype=ember.int64)
        out = self.model.generate(idx, max_new_tokens, temperature=temperature, top_k=top_k, use_cache=use_cache)
        self.model.train()
        return self.vocab.decode(out[0].tolist())

    def plot(self, path: str) -> str:
        """Train and validation loss against iterations, as a PNG."""
        from ember.scaling import _pyplot, _save_figure
        plt = _pyplot()
        fig, ax = plt.subplots(figsize=(6, 4), dpi=100)
        ax.plot(self.curve["iter"], self.curve["train"], "-o", ms=3, label="train")
        ax.plot(self.curve["iter"], self.curve["val"], "-s", ms=3, label="validation")
        ax.axhline(1.9, ls=":", color="gray", label="target 1.9")
        ax.set_xlabel("iteration")
        ax.set_ylabel("cross-entropy (nats per character)")
        ax.set_title(f"Character GPT on Shakespeare ({self.model.get_num_params():,} parameters)")
        ax.grid(True, alpha=0.3)
        ax.legend()
        fig.tight_layout()
        _save_figure(fig, path)
        plt.close(fig)
        return path


# ---------------------------------------------------------------------- the `ember train-gpt` command
def add_arguments(p: argparse.ArgumentParser) -> None:
    d = TrainConfig()
    p.add_argument("--out", default=d.out_dir, help="directory for the checkpoint, curve and samples")
    p.add_argument("--resume", action="store_true", help="go on from OUT/ckpt.safetensors")
    p.add_argument("--sample", metavar="PROMPT", help="only sample from the checkpoint, starting with PROMPT")
    p.add_argument("--tokens", type=int, default=500, help="characters to sample")
    for name in ("max_iters", "batch_size", "grad_accum", "block_size", "n_layer", "n_head", "n_embd",
                 "eval_interval", "eval_iters", "warmup_iters", "seed"):
        p.add_argument("--" + name.replace("_", "-"), type=int, default=None)
    for name in ("learning_rate", "min_lr", "weight_decay", "dropout", "grad_clip", "max_minutes"):
        p.add_argument("--" + name.replace("_", "-"), type=float, default=None)
    p.add_argument("--compile", action="store_true", default=None,
                   help="run the training step as compiled graphs (ember.compile)")


def main(args) -> int:
    overrides = {k: v for k, v in vars(args).items() if k in TrainConfig.__dataclass_fields__ and v is not None}
    if args.sample is not None:
        trainer = Trainer.resume(args.out, log=lambda *a: None)
        print(trainer.sample(args.sample.replace("\\n", "\n"), args.tokens))
        return 0
    trainer = Trainer.resume(args.out, **overrides) if args.resume else \
        Trainer(TrainConfig(out_dir=args.out, **overrides))
    print(f"GPT with {trainer.model.get_num_params():,} parameters, vocabulary of {trainer.vocab.vocab_size} "
          f"characters, {len(trainer.data['train']):,} training characters")
    trainer.run()
    png = trainer.plot(os.path.join(args.out, "loss.png"))
    text = trainer.sample("ROMEO:", args.tokens)
    with open(os.path.join(args.out, "sample.txt"), "w") as f:
        f.write(text)
    best = min(trainer.curve["val"]) if trainer.curve["val"] else float("nan")
    print(f"\nbest validation loss {best:.4f} nats/char; checkpoint {args.out}/{Trainer.CKPT}, curve {png}")
    print("sample (temperature 0.8, top-k 20):\n" + text)
    return 0
