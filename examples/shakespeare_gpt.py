"""A character-level GPT trained on Shakespeare, the lecture notes' autoregressive language model.

The model (ember.models.GPT, nanoGPT's layer names) reads 64 characters and predicts each next one; a
causal mask keeps every position from seeing the characters after it. It trains with AdamW (weight decay
on matrices only), a warm-up then cosine learning rate, gradient clipping, and checkpoints that resume
exactly (run it again with --resume after stopping it). At the end it samples text with a KV cache (each
new character costs one position's work) and draws what one attention head looks at.

Run: python examples/shakespeare_gpt.py --max-minutes 20          (the baby model: about 0.8M parameters)
Outputs in runs/shakespeare_gpt/: ckpt.safetensors, loss.png, attention.png, sample.txt
"""
import argparse
import os

import ember
from ember.lm import attention_maps, plot_attention
from ember.lm.train import Trainer, TrainConfig


def main(max_minutes=20.0, max_iters=4000, out_dir="runs/shakespeare_gpt", resume=False, compile=False, log=print):
    trainer = Trainer.resume(out_dir, log=log, max_minutes=max_minutes) if resume else \
        Trainer(TrainConfig(max_minutes=max_minutes, max_iters=max_iters, out_dir=out_dir, compile=compile), log=log)
    log(f"GPT: {trainer.model.get_num_params():,} parameters; {len(trainer.data['train']):,} training characters, "
        f"vocabulary of {trainer.vocab.vocab_size}")
    trainer.run()
    trainer.plot(os.path.join(out_dir, "loss.png"))
    text = trainer.sample("ROMEO:", 400)
    with open(os.path.join(out_dir, "sample.txt"), "w") as f:
        f.write(text)
    prompt = "JULIET:\nO Romeo, Romeo! wherefore art thou"
    idx = ember.tensor([trainer.vocab.encode(prompt[-trainer.cfg.block_size:])], dtype=ember.int64)
    maps = attention_maps(trainer.model, idx, layers=[trainer.cfg.n_layer - 1])
    plot_attention(maps[trainer.cfg.n_layer - 1][0, 0], list(prompt), os.path.join(out_dir, "attention.png"),
                   title="last block, head 0: which earlier characters each one looks at")
    best = min(trainer.curve["val"])
    log(f"best validation loss {best:.3f} nats/char after {trainer.iter} iterations "
        f"({trainer.seconds / 60:.1f} min of training); outputs in {out_dir}/")
    log("sample:\n" + text)
    return trainer


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--max-minutes", type=float, default=20.0)
    p.add_argument("--max-iters", type=int, default=4000)
    p.add_argument("--out", default="runs/shakespeare_gpt")
    p.add_argument("--resume", action="store_true")
    p.add_argument("--compile", action="store_true", help="compiled training step (ember.compile)")
    a = p.parse_args()
    main(a.max_minutes, a.max_iters, a.out, a.resume, a.compile)
