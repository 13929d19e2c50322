"""Inputs for the distribution tests, and the rsample check that replays Ember's noise in torch.

    real, pos, counts = draws(np.random.default_rng(21))

Each test file keeps its own seeded generator (so its data stay as they were); `draws` gives the three
samplers over it: real values in [lo, hi), positive ones, and float64 counts in [0, high).
"""
from __future__ import annotations

import numpy as np
import torch

import ember


def draws(rng):
    def real(*shape, lo=-2.0, hi=2.0):
        return rng.uniform(lo, hi, size=shape)

    def pos(*shape, lo=0.5, hi=2.0):
        """Fixed positive float64 values (cast to each dtype by check_op; they require grad)."""
        return rng.uniform(lo, hi, size=shape)

    def counts(high, *shape):
        return rng.integers(0, high, size=shape).astype(np.float64)
    return real, pos, counts


def replay(make_e, params, noise_of, make_t, w):
    """Ember's rsample y(params) and the gradient of sum(w * y), against torch's y computed from the same
    noise (noise_of(y, *params) recovers it from Ember's sample) by make_t(noise, *params)."""
    e_params = [ember.tensor(p, dtype=ember.float64, requires_grad=True) for p in params]
    t_params = [torch.tensor(p, dtype=torch.float64, requires_grad=True) for p in params]
    y = make_e(*e_params)
    (y * ember.tensor(w)).sum().backward()
    noise = torch.tensor(noise_of(y.detach().numpy(), *params))
    ty = make_t(noise, *t_params)
    (ty * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-9, atol=1e-12)
    for e, t in zip(e_params, t_params):
        np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-6, atol=1e-9)
