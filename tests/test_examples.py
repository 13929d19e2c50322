"""Every script in examples/ runs (a few steps each) and its loss goes down; the optimizer steps the
examples take are replayed in torch from the same parameters and gradients and must agree (a loss that
goes down says little: a broken Adam still lowers it)."""
import inspect
import pathlib
import runpy

import numpy as np
import pytest
import torch

import ember

EXAMPLES = sorted((pathlib.Path(__file__).parent.parent / "examples").glob("[0-9][0-9]_*.py"))
REPLAYED = ("SGD", "Adam")


def _params(opt):
    return [p.detach().numpy().copy() for g in opt.param_groups for p in g["params"]]


def _record_optimizers(monkeypatch):
    """Patch the optimizers so every instance records its start, and each step's grads and result."""
    runs = []
    for name in REPLAYED:
        cls = getattr(ember.optim, name)

        def init(self, *args, _orig=cls.__init__, _name=name, **kwargs):
            _orig(self, *args, **kwargs)
            runs.append(dict(name=_name, opt=self, start=_params(self), steps=[]))

        def step(self, *args, _orig=cls.step, **kwargs):
            grads = [None if p.grad is None else p.grad.numpy().copy()
                     for g in self.param_groups for p in g["params"]]
            out = _orig(self, *args, **kwargs)
            next(r for r in runs if r["opt"] is self)["steps"].append((grads, _params(self)))
            return out

        monkeypatch.setattr(cls, "__init__", init)
        monkeypatch.setattr(cls, "step", step)
    return runs


def _replay_in_torch(run):
    """torch's optimizer of the same name and hyperparameters, fed Ember's gradients step by step."""
    opt_e = run["opt"]
    cls = getattr(torch.optim, run["name"])
    accepted = inspect.signature(cls).parameters
    params = [torch.tensor(a, requires_grad=True) for a in run["start"]]
    groups, i = [], 0
    for g in opt_e.param_groups:
        n = len(g["params"])
        groups.append(dict({k: v for k, v in g.items() if k in accepted and k != "params"},
                           params=params[i:i + n]))
        i += n
    opt_t = cls(groups)
    for k, (grads, after) in enumerate(run["steps"]):
        for p, gr in zip(params, grads):
            p.grad = None if gr is None else torch.tensor(gr)
        opt_t.step()
        for j, (p, a) in enumerate(zip(params, after)):
            np.testing.assert_allclose(a, p.detach().numpy(), rtol=1e-4, atol=1e-6,
                                       err_msg=f"{run['name']} step {k}, parameter {j}: ember != torch")


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_runs_and_learns(path, capsys, monkeypatch):
    runs = _record_optimizers(monkeypatch)
    main = runpy.run_path(str(path), run_name="example")["main"]
    losses = main(steps=25)
    assert len(losses) == 25
    assert losses[-1] < losses[0], f"{path.name}: loss did not decrease ({losses[0]} -> {losses[-1]})"
    uses = [name for name in REPLAYED if f"optim.{name}(" in path.read_text()]
    assert [r["name"] for r in runs] == uses
    for run in runs:
        assert len(run["steps"]) == 25
        _replay_in_torch(run)


def test_all_nine_examples_present():
    assert len(EXAMPLES) == 9
