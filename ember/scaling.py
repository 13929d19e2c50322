"""Scaling laws: fit L(N) = L_inf + k * N**(-alpha) to (model size, loss) points, as in the lecture notes
("today's LLMs are driven by data and model scaling").

    >>> fit = ember.scaling.fit_power_law([1e5, 3e5, 1e6, 3e6, 1e7], [3.1, 2.7, 2.4, 2.2, 2.1])
    >>> fit.alpha, fit.alpha_ci          # the exponent and its 95% confidence interval
    >>> fit.predict(1e8)                 # the loss a 100M-parameter model should reach
    >>> fit.plot("scaling.png")          # log-log plot of the points, the fit and the prediction

The points come from a sweep (`sweep(train, sizes)` calls your training function once per size and can
write a CSV) or from a CSV written earlier (`read_csv`). The fit is nonlinear least squares (SciPy's
`curve_fit`, the `ember[scipy]` extra); the interval comes from the fit's covariance and Student's t with
n - 3 degrees of freedom, so it needs at least 4 points (3 give a fit but no interval). L_inf is bounded
to [0, smallest loss]; a fit that ends on a bound says so (`l_inf_at_bound`): the points show no floor.
"""
from __future__ import annotations

import csv
import math
import os
import warnings
from dataclasses import dataclass, field

__all__ = ["PowerLawFit", "fit_power_law", "read_csv", "write_csv", "sweep"]


def _power_law(n, l_inf, k, alpha):
    return l_inf + k * n ** (-alpha)


@dataclass
class PowerLawFit:
    """The fitted law L(N) = l_inf + k * N**(-alpha); N is measured in units of `n_ref` inside the fit
    (so k is the excess loss over l_inf of a model of n_ref parameters)."""
    l_inf: float
    k: float
    alpha: float
    n_ref: float
    alpha_ci: tuple[float, float]
    l_inf_ci: tuple[float, float]
    sizes: list[float] = field(repr=False)
    losses: list[float] = field(repr=False)
    residuals: list[float] = field(repr=False)
    confidence: float = 0.95

    def predict(self, n):
        """The loss the law gives a model of `n` parameters (a number or a sequence of them)."""
        if isinstance(n, (list, tuple)):
            return [self.predict(v) for v in n]
        return float(_power_law(float(n) / self.n_ref, self.l_inf, self.k, self.alpha))

    @property
    def l_inf_at_bound(self) -> bool:
        """Whether the fit pushed L_inf to 0 or to the smallest loss (its bounds): then the points do not
        determine it and the interval (from the covariance) means little."""
        return self.l_inf <= 1e-9 or self.l_inf >= min(self.losses) * (1 - 1e-9)

    @property
    def rms_residual(self) -> float:
        return math.sqrt(sum(r * r for r in self.residuals) / len(self.residuals))

    def __str__(self) -> str:
        pct = round(self.confidence * 100)
        lines = [f"L(N) = {self.l_inf:.4f} + {self.k:.4f} * (N / {self.n_ref:.3g}) ** -{self.alpha:.4f}",
                 f"  alpha = {self.alpha:.4f}  ({pct}% interval {self.alpha_ci[0]:.4f} .. {self.alpha_ci[1]:.4f})",
                 f"  L_inf = {self.l_inf:.4f}  ({pct}% interval {self.l_inf_ci[0]:.4f} .. {self.l_inf_ci[1]:.4f})"
                 + ("  at its bound: the points show no floor yet" if self.l_inf_at_bound else ""),
                 f"  {len(self.sizes)} points, rms residual {self.rms_residual:.4g}"]
        for n, l, r in zip(self.sizes, self.losses, self.residuals):
            lines.append(f"    N = {n:>12,.0f}   loss {l:.4f}   fit {l - r:.4f}   residual {r:+.4f}")
        return "\n".join(lines)

    def plot(self, path, predict=None, title="Loss against model size"):
        """Save a log-log PNG of the points, the fitted curve (extended to `predict` sizes) and the
        predicted losses; returns the path."""
        plt = _pyplot()
        predict = [predict] if isinstance(predict, (int, float)) else list(predict or [])
        lo, hi = min(self.sizes), max(self.sizes + predict)
        xs = [lo * (hi / lo) ** (i / 199) for i in range(200)]
        fig, ax = plt.subplots(figsize=(6, 4), dpi=100)
        ax.plot(self.sizes, self.losses, "o", label="measured")
        ax.plot(xs, self.predict(xs), "-", label=f"fit: alpha = {self.alpha:.3f}")
        if self.l_inf > 0:
            ax.axhline(self.l_inf, ls=":", color="gray", label=f"L_inf = {self.l_inf:.3f}")
        if predict:
            ax.plot(predict, self.predict(predict), "s", label="predicted")
        ax.set_xscale("log")
        ax.set_yscale("log")
        from matplotlib.ticker import FormatStrFormatter
        for axis in (ax.yaxis.set_major_formatter, ax.yaxis.set_minor_formatter):
            axis(FormatStrFormatter("%.2g"))       # 2.5, not 2.5 x 10^0
        ax.set_xlabel("parameters N")
        ax.set_ylabel("loss")
        ax.set_title(title)
        ax.legend()
        fig.tight_layout()
        _save_figure(fig, path)
        plt.close(fig)
        return path


def fit_power_law(sizes, losses, confidence: float = 0.95) -> PowerLawFit:
    """Fit L(N) = L_inf + k * N**(-alpha) by nonlinear least squares; see the module doc."""
    sizes = [float(n) for n in sizes]
    losses = [float(v) for v in losses]
    if len(sizes) != len(losses):
        raise ValueError(f"fit_power_law: {len(sizes)} sizes but {len(losses)} losses")
    if len(sizes) < 3:
        raise ValueError(f"fit_power_law: the law has 3 parameters (L_inf, k, alpha), so it needs at least 3 "
                         f"points, and 4 for a confidence interval; got {len(sizes)}")
    if len(set(sizes)) < 3:
        raise ValueError(f"fit_power_law: needs at least 3 different model sizes, got {sorted(set(sizes))}")
    bad = [(n, v) for n, v in zip(sizes, losses) if not (n > 0 and math.isfinite(n) and math.isfinite(v))]
    if bad:
        raise ValueError(f"fit_power_law: sizes must be positive and losses finite; bad points {bad}")
    try:
        from scipy import optimize, stats
    except ImportError:
        raise ImportError("fit_power_law needs SciPy: pip install ember[scipy]") from None
    n_ref = math.exp(sum(math.log(n) for n in sizes) / len(sizes))   # the geometric mean: a well-scaled fit
    x = [n / n_ref for n in sizes]
    try:
        with warnings.catch_warnings():   # 3 points leave no covariance: said below as a NaN interval
            warnings.simplefilter("ignore", optimize.OptimizeWarning)
            # a loss is never negative and the asymptote lies under every measured loss: 0 <= L_inf < min
            params, cov = optimize.curve_fit(_power_law, x, losses, p0=_initial_guess(x, losses),
                                             bounds=([0, 0, 0], [min(losses), math.inf, 10]), maxfev=20000)
    except RuntimeError as e:
        raise RuntimeError(f"fit_power_law: the fit did not converge on these points ({e}); is the loss "
                           f"decreasing with size?") from None
    l_inf, k, alpha = (float(v) for v in params)
    var = [float(cov[i][i]) for i in range(3)]
    dof = len(x) - 3
    if dof > 0 and all(math.isfinite(v) and v >= 0 for v in var):
        t = float(stats.t.ppf(0.5 + confidence / 2, dof))
        alpha_ci = (alpha - t * math.sqrt(var[2]), alpha + t * math.sqrt(var[2]))
        l_inf_ci = (l_inf - t * math.sqrt(var[0]), l_inf + t * math.sqrt(var[0]))
    else:   # 3 points: the curve passes through them, nothing is left to estimate the spread from
        alpha_ci = l_inf_ci = (float("nan"), float("nan"))
    residuals = [v - _power_law(xi, l_inf, k, alpha) for xi, v in zip(x, losses)]
    return PowerLawFit(l_inf, k, alpha, n_ref, alpha_ci, l_inf_ci, sizes, losses, residuals, confidence)


def _initial_guess(x, y):
    """L_inf a little under the smallest loss, then alpha and k from a least-squares line through
    log(L - L_inf) against log N."""
    l_inf = max(min(y) - 0.1 * (max(y) - min(y)) - 1e-3, 0.5 * min(y))
    u = [math.log(v) for v in x]
    w = [math.log(v - l_inf) for v in y]
    mu, mw = sum(u) / len(u), sum(w) / len(w)
    slope = sum((a - mu) * (b - mw) for a, b in zip(u, w)) / sum((a - mu) ** 2 for a in u)
    return [l_inf, math.exp(mw - slope * mu), max(-slope, 1e-3)]


def read_csv(path, size_column: str = "params", loss_column: str = "loss"):
    """(sizes, losses) from a CSV with a header naming the two columns (as `write_csv` writes)."""
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in (size_column, loss_column) if c not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(f"read_csv: {path} has columns {reader.fieldnames}, not {missing}")
        rows = list(reader)
    return [float(r[size_column]) for r in rows], [float(r[loss_column]) for r in rows]


def write_csv(path, sizes, losses, extra: dict | None = None) -> None:
    """Write params,loss rows (and any extra per-row columns), atomically."""
    extra = extra or {}
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["params", "loss", *extra])
        for i, (n, v) in enumerate(zip(sizes, losses)):
            w.writerow([n, v, *(col[i] for col in extra.values())])
    os.replace(tmp, path)


def sweep(train, sizes, csv_path=None, log=print):
    """Call `train(size)` for each entry of `sizes` (your own configuration objects or numbers); it returns
    (number of parameters, final loss). Returns the fit of all points; writes them to `csv_path` as they
    come, so an interrupted sweep keeps what it measured."""
    ns, ls, names = [], [], []
    for size in sizes:
        n, loss = train(size)
        loss = loss.item() if hasattr(loss, "item") else loss   # a tensor (float() of one that requires grad warns)
        ns.append(float(n))
        ls.append(float(loss))
        names.append(str(size))
        log(f"sweep: {size}: {int(n):,} parameters, loss {float(loss):.4f}")
        if csv_path is not None:
            write_csv(csv_path, ns, ls, {"config": names})
    return fit_power_law(ns, ls)


def _pyplot():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError("plotting needs matplotlib: pip install ember[plot]") from None
    return plt


def _save_figure(fig, path):
    """Save atomically: a reader never sees half a PNG."""
    path = os.fspath(path)
    root, ext = os.path.splitext(path)
    tmp = f"{root}.tmp{os.getpid()}{ext or '.png'}"
    fig.savefig(tmp)
    os.replace(tmp, path)
