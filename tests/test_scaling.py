"""ember.scaling: the power-law fit recovers known parameters from noisy synthetic points, refuses too few
points, and its CSV, sweep and plot helpers work."""
import math
import os

import numpy as np
import pytest

import ember
from ember import scaling

pytest.importorskip("scipy", reason="ember.scaling fits with SciPy (ember[scipy])")

TRUE = dict(l_inf=1.7, k=0.9, alpha=0.32)


def _points(n_points=8, noise=0.01, seed=0):
    rng = np.random.default_rng(seed)
    sizes = np.logspace(5, 8, n_points)
    losses = TRUE["l_inf"] + TRUE["k"] * (sizes / 1e6) ** -TRUE["alpha"]
    return sizes.tolist(), (losses * (1 + noise * rng.standard_normal(n_points))).tolist()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fit_recovers_known_parameters_with_noise(seed):
    fit = scaling.fit_power_law(*_points(seed=seed))
    assert isinstance(fit, scaling.PowerLawFit)
    assert abs(fit.alpha - TRUE["alpha"]) < 0.06
    assert fit.alpha_ci[0] < TRUE["alpha"] < fit.alpha_ci[1]
    assert fit.alpha_ci[1] - fit.alpha_ci[0] < 0.3
    assert abs(fit.l_inf - TRUE["l_inf"]) < 0.15
    true_1e9 = TRUE["l_inf"] + TRUE["k"] * (1e9 / 1e6) ** -TRUE["alpha"]
    assert abs(fit.predict(1e9) - true_1e9) < 0.05
    assert len(fit.residuals) == 8 and fit.rms_residual < 0.05


def test_fit_is_exact_without_noise_and_the_interval_is_tight():
    fit = scaling.fit_power_law(*_points(noise=0.0))
    assert fit.alpha == pytest.approx(TRUE["alpha"], rel=1e-5)
    assert fit.l_inf == pytest.approx(TRUE["l_inf"], rel=1e-5)
    assert fit.predict([1e6])[0] == pytest.approx(TRUE["l_inf"] + TRUE["k"], rel=1e-6)
    assert fit.alpha_ci[1] - fit.alpha_ci[0] < 1e-4
    text = str(fit)
    assert "alpha = 0.3200" in text and "95% interval" in text and "residual" in text


def test_too_few_points_are_refused_and_three_give_no_interval():
    with pytest.raises(ValueError, match=r"3 parameters.*at least 3 points.*got 2"):
        scaling.fit_power_law([1e5, 1e6], [3.0, 2.5])
    with pytest.raises(ValueError, match=r"3 different model sizes"):
        scaling.fit_power_law([1e5, 1e5, 1e6], [3.0, 3.1, 2.5])
    with pytest.raises(ValueError, match=r"2 sizes but 3 losses"):
        scaling.fit_power_law([1e5, 1e6], [3.0, 2.5, 2.0])
    with pytest.raises(ValueError, match=r"positive.*finite.*bad points"):
        scaling.fit_power_law([1e5, -1e6, 1e7, 1e8], [3.0, 2.5, 2.0, 1.9])
    sizes, losses = _points(3, noise=0.0)
    fit = scaling.fit_power_law(sizes, losses)
    assert all(math.isnan(v) for v in fit.alpha_ci)


def test_csv_round_trip_and_sweep(tmp_path):
    sizes, losses = _points()
    path = tmp_path / "points.csv"
    scaling.write_csv(path, sizes, losses)
    assert scaling.read_csv(path) == (pytest.approx(sizes), pytest.approx(losses))
    with pytest.raises(ValueError, match="not \\['tokens'\\]"):
        scaling.read_csv(path, size_column="tokens")
    table = dict(zip(range(len(sizes)), zip(sizes, losses)))
    logged = []
    fit = scaling.sweep(lambda i: table[i], range(len(sizes)), csv_path=tmp_path / "sweep.csv", log=logged.append)
    assert len(logged) == len(sizes) and "parameters" in logged[0]
    assert scaling.read_csv(tmp_path / "sweep.csv")[0] == pytest.approx(sizes)
    assert abs(fit.alpha - TRUE["alpha"]) < 0.06


def test_plot_writes_a_png(tmp_path):
    pytest.importorskip("matplotlib", reason="plots need matplotlib (ember[plot])")
    fit = scaling.fit_power_law(*_points())
    path = fit.plot(tmp_path / "law.png", predict=[1e9])
    with open(path, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    assert os.path.getsize(path) > 10_000
    assert [p.name for p in tmp_path.iterdir()] == ["law.png"]     # no temporary left behind


def test_is_reachable_from_the_package():
    assert ember.scaling is scaling


def test_the_floor_stays_between_zero_and_the_smallest_loss_and_a_bound_is_said():
    # nearly a straight line in log-log: no floor visible; an unbounded fit put L_inf at -7
    sizes = [15072, 59568, 104000, 340512, 798336]
    losses = [2.4860, 2.3372, 2.2227, 2.0750, 1.9863]
    fit = ember.scaling.fit_power_law(sizes, losses)
    assert 0 <= fit.l_inf < min(losses)
    assert fit.l_inf_at_bound and "at its bound" in str(fit)
    clean = ember.scaling.fit_power_law([1e5, 3e5, 1e6, 3e6, 1e7], [1.7 + 0.9 * (n / 1e6) ** -0.32
                                                                     for n in [1e5, 3e5, 1e6, 3e6, 1e7]])
    assert not clean.l_inf_at_bound and "at its bound" not in str(clean)
