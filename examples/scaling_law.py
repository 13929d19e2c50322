"""A scaling law measured on Shakespeare: train GPTs of 4-5 sizes on the same number of characters, fit
L(N) = L_inf + k * N^(-alpha), and predict the loss of a larger model (the lecture notes: "today's LLMs are
driven by data and model scaling").

Each size is trained for the same token budget with the same recipe (ember.lm.train); its validation loss
and parameter count become one point. ember.scaling fits the law (with a 95% interval for alpha), prints the
residuals, predicts a 10x larger model and saves a log-log plot.

Run: python examples/scaling_law.py                 (about 15 minutes on 2 CPU cores)
     python examples/scaling_law.py --from-csv runs/scaling/points.csv   (fit points measured before)
"""
import argparse
import os

from ember import scaling
from ember.lm.train import Trainer, TrainConfig

SIZES = [(1, 32), (2, 48), (2, 64), (3, 96), (4, 128)]    # (layers, width); 4 heads of width/4 ... 32


def train_one(size, iters, out_dir, log):
    n_layer, n_embd = size
    cfg = TrainConfig(n_layer=n_layer, n_embd=n_embd, n_head=4, max_iters=iters, eval_interval=iters,
                      eval_iters=40, warmup_iters=min(100, iters // 10), out_dir=os.path.join(out_dir, f"{n_layer}x{n_embd}"))
    trainer = Trainer(cfg, log=lambda *a: None)
    trainer.run()
    n = trainer.model.get_num_params()
    log(f"  {n_layer} layers x {n_embd}: {n:,} parameters, validation loss {trainer.curve['val'][-1]:.4f} "
        f"({trainer.seconds:.0f} s)")
    return n, trainer.curve["val"][-1]


def main(iters=600, out_dir="runs/scaling", from_csv=None, log=print):
    os.makedirs(out_dir, exist_ok=True)
    if from_csv:
        fit = scaling.fit_power_law(*scaling.read_csv(from_csv))
    else:
        log(f"training {len(SIZES)} GPTs for {iters} iterations each (the same characters seen by every size)")
        fit = scaling.sweep(lambda s: train_one(s, iters, out_dir, log), SIZES,
                            csv_path=os.path.join(out_dir, "points.csv"), log=lambda *a: None)
    log(str(fit))
    big = 10 * max(fit.sizes)
    log(f"predicted validation loss of a {big:,.0f}-parameter model: {fit.predict(big):.3f}")
    log(f"plot: {fit.plot(os.path.join(out_dir, 'scaling.png'), predict=[big])}")
    return fit


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--iters", type=int, default=600)
    p.add_argument("--out", default="runs/scaling")
    p.add_argument("--from-csv")
    a = p.parse_args()
    main(a.iters, a.out, a.from_csv)
