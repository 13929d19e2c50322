"""The Optimizer base: argument checks, param groups, zero_grad, state_dict layout and loading."""
import numpy as np
import pytest
import torch

import ember
from ember import optim


def leaf(values, dtype=None):
    return ember.tensor(values, dtype=dtype or ember.float64, requires_grad=True)


def one_step(opt, params):
    opt.zero_grad()
    sum((p * p).sum() for p in params).backward()
    opt.step()


INVALID = [
    (optim.SGD, dict(lr=-0.1), "SGD: invalid learning rate: -0.1"),
    (optim.SGD, dict(lr=0.1, momentum=-1), "SGD: invalid momentum value: -1"),
    (optim.SGD, dict(lr=0.1, weight_decay=-0.5), "SGD: invalid weight_decay value: -0.5"),
    (optim.SGD, dict(lr=0.1, nesterov=True), "nesterov momentum requires a momentum > 0"),
    (optim.SGD, dict(lr=0.1, momentum=0.9, dampening=0.1, nesterov=True), "zero dampening"),
    (optim.Adam, dict(lr=-1e-3), "Adam: invalid learning rate: -0.001"),
    (optim.Adam, dict(betas=(1.0, 0.999)), "Adam: invalid beta parameter at index 0: 1.0"),
    (optim.Adam, dict(betas=(0.9, -0.1)), "Adam: invalid beta parameter at index 1: -0.1"),
    (optim.Adam, dict(eps=-1e-8), "Adam: invalid epsilon value: -1e-08"),
    (optim.AdamW, dict(weight_decay=-0.01), "AdamW: invalid weight_decay value: -0.01"),
    (optim.RMSprop, dict(alpha=-0.5), "RMSprop: invalid alpha value: -0.5"),
    (optim.RMSprop, dict(momentum=-0.5), "RMSprop: invalid momentum value: -0.5"),
    (optim.Adagrad, dict(lr_decay=-1), "Adagrad: invalid lr_decay value: -1"),
    (optim.Adagrad, dict(initial_accumulator_value=-1), "Adagrad: invalid initial_accumulator_value value: -1"),
    (optim.Adadelta, dict(rho=1.5), "Adadelta: invalid rho value: 1.5"),
    (optim.LBFGS, dict(lr=-1), "LBFGS: invalid learning rate: -1"),
    (optim.LBFGS, dict(line_search_fn="armijo"), "LBFGS: invalid line_search_fn"),
    (optim.LBFGS, dict(history_size=0), "LBFGS: invalid history_size: 0"),
    (optim.Adafactor, dict(lr=-1), "Adafactor: invalid learning rate: -1"),
    (optim.Adafactor, dict(beta2_decay=0.5), "Adafactor: invalid beta2_decay (must be <= 0): 0.5"),
    (optim.Adafactor, dict(eps=(-1.0, 1e-3)), "Adafactor: invalid epsilon1 value: -1.0"),
    (optim.Adafactor, dict(eps=(None, -1e-3)), "Adafactor: invalid epsilon2 value: -0.001"),
    (optim.Adafactor, dict(d=0.5), "Adafactor: invalid clipping threshold d (must be >= 1): 0.5"),
    (optim.Adafactor, dict(weight_decay=-0.1), "Adafactor: invalid weight_decay value: -0.1"),
    (optim.Muon, dict(lr=-1), "Muon: invalid learning rate: -1"),
    (optim.Muon, dict(momentum=-0.5), "Muon: invalid momentum value: -0.5"),
    (optim.Muon, dict(weight_decay=-0.5), "Muon: invalid weight_decay value: -0.5"),
    (optim.Muon, dict(adjust_lr_fn="sqrt"),
     "Muon: invalid adjust_lr_fn (expected None, 'original' or 'match_rms_adamw'): 'sqrt'"),
    (optim.Muon, dict(ns_coefficients=(1.0, 2.0)), "Muon: invalid ns_coefficients (expected 3 values): (1.0, 2.0)"),
    (optim.Muon, dict(ns_steps=100), "Muon: invalid ns_steps (must be less than 100): 100"),
    (optim.SparseAdam, dict(lr=0.0), "SparseAdam: invalid learning rate: 0.0"),
    (optim.SparseAdam, dict(eps=0.0), "SparseAdam: invalid epsilon value: 0.0"),
    (optim.SparseAdam, dict(betas=(0.9, 1.0)), "SparseAdam: invalid beta parameter at index 1: 1.0"),
]


@pytest.mark.parametrize("cls,kwargs,message", INVALID, ids=[m for _, _, m in INVALID])
def test_invalid_arguments_name_the_value(cls, kwargs, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        cls([leaf([1.0])], **kwargs)


def test_params_must_be_an_iterable_of_tensors_or_dicts():
    w = leaf([1.0])
    with pytest.raises(TypeError, match="single Tensor"):
        optim.SGD(w, lr=0.1)
    with pytest.raises(ValueError, match="empty parameter list"):
        optim.SGD([], lr=0.1)
    with pytest.raises(TypeError, match="can only optimize Tensors"):
        optim.SGD([w, 3.0], lr=0.1)
    assert optim.SGD([w]).param_groups[0]["lr"] == torch.optim.SGD([torch.zeros(1, requires_grad=True)]).defaults["lr"]

    class NeedsLr(optim.Optimizer):   # a default marked `required` must come from every group
        def __init__(self, params, lr=optim.optimizer.required):
            super().__init__(params, dict(lr=lr))
    with pytest.raises(ValueError, match="required option 'lr'"):
        NeedsLr([w])
    with pytest.raises(ValueError, match="more than one parameter group"):
        optim.SGD([{"params": [w]}, {"params": [w]}], lr=0.1)
    with pytest.raises(ValueError, match="non-leaf"):
        optim.SGD([w * 2], lr=0.1)


def test_param_groups_take_defaults_and_add_param_group():
    w, b = leaf([1.0, 2.0]), leaf([3.0])
    opt = optim.SGD([{"params": [w], "lr": 0.5}], lr=0.1, momentum=0.9)
    opt.add_param_group({"params": b})
    assert [g["lr"] for g in opt.param_groups] == [0.5, 0.1]
    assert opt.param_groups[1]["momentum"] == 0.9 and opt.param_groups[1]["params"] == [b]
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": [w]})


def test_zero_grad_sets_to_none_or_zero():
    w = leaf([1.0, 2.0])
    opt = optim.SGD([w], lr=0.1)
    (w * w).sum().backward()
    opt.zero_grad(set_to_none=False)
    assert w.grad is not None and w.grad.tolist() == [0.0, 0.0]
    opt.zero_grad()
    assert w.grad is None


def test_params_without_grad_are_skipped_and_get_no_state():
    w, frozen = leaf([1.0, 2.0]), leaf([5.0])
    opt = optim.Adam([w, frozen], lr=0.1)
    (w * w).sum().backward()
    opt.step()
    assert frozen.tolist() == [5.0] and frozen not in opt.state
    assert opt.state[w]["step"] == 1


def test_step_returns_the_closure_loss():
    w = leaf([1.0, 2.0])
    opt = optim.SGD([w], lr=0.1)

    def closure():
        opt.zero_grad()
        loss = (w * w).sum()
        loss.backward()
        return loss

    assert opt.step(closure).item() == 5.0
    assert np.allclose(w.tolist(), [0.8, 1.6])


def test_state_dict_layout_matches_torch():
    def build(lib):
        w = lib.tensor([1.0, -2.0], requires_grad=True)
        b = lib.tensor([0.5], requires_grad=True)
        opt = lib.optim.Adam([{"params": [w]}, {"params": [b], "lr": 0.01}], lr=0.1, amsgrad=True)
        (w * w).sum().backward()
        (b * b).sum().backward()
        opt.step()
        return opt.state_dict()

    ours, theirs = build(ember), build(torch)
    assert ours["state"].keys() == theirs["state"].keys() == {0, 1}
    assert ours["state"][0].keys() == theirs["state"][0].keys()
    assert [g["params"] for g in ours["param_groups"]] == [g["params"] for g in theirs["param_groups"]]
    for ours_g, theirs_g in zip(ours["param_groups"], theirs["param_groups"]):
        assert {k: v for k, v in theirs_g.items() if k in ours_g} == ours_g
    np.testing.assert_allclose(ours["state"][0]["exp_avg_sq"].numpy(), theirs["state"][0]["exp_avg_sq"].numpy(),
                               rtol=1e-6)
    assert ours["state"][0]["step"] == theirs["state"][0]["step"].item()


def test_load_state_dict_mismatch_raises_and_changes_nothing():
    w, b = leaf([1.0, 2.0]), leaf([3.0])
    opt = optim.SGD([w, b], lr=0.1, momentum=0.9)
    one_step(opt, [w, b])
    good = opt.state_dict()
    before_groups = [dict(g) for g in opt.param_groups]
    before_buf = opt.state[w]["momentum_buffer"].tolist()

    other = optim.SGD([leaf([1.0, 2.0])], lr=0.5, momentum=0.1)
    one_step(other, other.param_groups[0]["params"])
    with pytest.raises(ValueError, match="parameter group 0 has 1 parameters in the loaded state dict, but 2"):
        opt.load_state_dict(other.state_dict())
    two_groups = optim.SGD([{"params": [leaf([1.0])]}, {"params": [leaf([1.0])]}], lr=0.3)
    with pytest.raises(ValueError, match="has 2 parameter groups, but the optimizer has 1"):
        opt.load_state_dict(two_groups.state_dict())
    bad = {"state": {5: {"momentum_buffer": good["state"][0]["momentum_buffer"]}},
           "param_groups": good["param_groups"]}
    with pytest.raises(ValueError, match="indices"):
        opt.load_state_dict(bad)

    assert opt.param_groups == before_groups
    assert opt.state[w]["momentum_buffer"].tolist() == before_buf


def test_load_state_dict_copies_state_and_keeps_own_params():
    w = leaf([1.0, 2.0])
    opt = optim.Adam([w], lr=0.1)
    one_step(opt, [w])
    w2 = leaf([1.0, 2.0])
    opt2 = optim.Adam([w2], lr=0.5)
    opt2.load_state_dict(opt.state_dict())
    assert opt2.param_groups[0]["lr"] == 0.1 and opt2.param_groups[0]["params"][0] is w2
    assert opt2.state[w2]["exp_avg"] is not opt.state[w]["exp_avg"]  # a copy, not shared
    assert opt2.state[w2]["exp_avg"].tolist() == opt.state[w]["exp_avg"].tolist()


def test_load_state_dict_casts_state_to_the_param_dtype():
    w = leaf([1.0, 2.0])
    opt = optim.SGD([w], lr=0.1, momentum=0.9)
    one_step(opt, [w])
    w32 = leaf([1.0, 2.0], dtype=ember.float32)
    opt32 = optim.SGD([w32], lr=0.1, momentum=0.9)
    opt32.load_state_dict(opt.state_dict())
    assert opt32.state[w32]["momentum_buffer"].dtype == ember.float32


def test_step_bumps_the_version_so_stale_saved_tensors_are_caught():
    w = leaf([1.0, 2.0])
    opt = optim.SGD([w], lr=0.1)
    (w * w).sum().backward()
    y = (w * w).sum()  # saves w for its backward
    opt.step()
    with pytest.raises(RuntimeError):
        y.backward()


def test_float32_stays_float32():
    w = leaf([1.0, 2.0], dtype=ember.float32)
    opt = optim.Adam([w], lr=0.1, amsgrad=True)
    one_step(opt, [w])
    assert w.dtype == ember.float32
    assert all(v.dtype == ember.float32 for k, v in opt.state[w].items() if k != "step")


BAD_PARAMS = {   # misuse raises torch's exception type (Ember's messages say what to do instead)
    "dict_of_params": lambda L, w: L.optim.SGD({"params": [w]}, lr=0.1),
    "set_of_params": lambda L, w: L.optim.SGD([{"params": {w}}], lr=0.1),
    "group_not_a_dict": lambda L, w: L.optim.SGD([w], lr=0.1).add_param_group([w]),
}


@pytest.mark.parametrize("name", list(BAD_PARAMS))
def test_bad_params_raise_like_torch(name):
    raised = []
    for L in (torch, ember):
        with pytest.raises(Exception) as info:
            BAD_PARAMS[name](L, L.zeros(2, requires_grad=True))
        raised.append(type(info.value))
    assert raised[0] is raised[1] or issubclass(raised[1], raised[0])


def test_stricter_than_torch():
    # torch only warns about a duplicated parameter and fails on a malformed state dict with a bare KeyError
    w = ember.zeros(2, requires_grad=True)
    with pytest.raises(ValueError, match="SGD: a parameter group contains the same parameter twice"):
        ember.optim.SGD([w, w], lr=0.1)
    with pytest.raises(ValueError, match="SGD.load_state_dict: expected a dict with 'state' and 'param_groups'"):
        ember.optim.SGD([w], lr=0.1).load_state_dict({"state": {}})


def test_repr_lists_each_group_like_torch():
    def build(L):
        w, b = L.zeros(2, requires_grad=True), L.zeros(1, requires_grad=True)
        return L.optim.SGD([{"params": [w]}, {"params": [b], "lr": 0.5}], lr=0.1, momentum=0.9)
    ours, theirs = repr(build(ember)).splitlines(), repr(build(torch)).splitlines()
    assert ours[0] == theirs[0] and ours[-1] == theirs[-1] and ours.count("Parameter Group 1") == 1
    assert "    lr: 0.5" in ours and "    momentum: 0.9" in ours
    assert all(line in theirs for line in ours)     # every option Ember shows, torch shows the same way


def test_load_state_dict_from_json_like_dicts():
    """State dicts that went through JSON: string indices, betas as a list, a tensor step."""
    w = ember.ones(2, requires_grad=True)
    opt = ember.optim.Adam([w], lr=0.1, betas=(0.8, 0.9))
    (w * w).sum().backward()
    opt.step()
    sd = opt.state_dict()
    jsonish = {"state": {str(k): dict(v, step=ember.tensor(float(v["step"]))) for k, v in sd["state"].items()},
               "param_groups": [dict(g, betas=list(g["betas"])) for g in sd["param_groups"]]}
    w2 = ember.ones(2, requires_grad=True)
    opt2 = ember.optim.Adam([w2])
    opt2.load_state_dict(jsonish)
    assert opt2.param_groups[0]["betas"] == (0.8, 0.9) and opt2.state[w2]["step"] == 1
    assert opt2.state[w2]["exp_avg"].tolist() == opt.state[w]["exp_avg"].tolist()


NEWER = {"NAdam", "RAdam", "Adamax", "ASGD", "Rprop"}

# Every checked argument of every optimizer: a bad value raises exactly this message (the optimizer's
# name, the option, the value as given), and the boundary value, which torch accepts, is accepted.
EXACT_MESSAGES = [
    (optim.SGD, dict(lr=-0.1), "SGD: invalid learning rate: -0.1"),
    (optim.SGD, dict(lr=0.1, momentum=-1), "SGD: invalid momentum value: -1"),
    (optim.SGD, dict(lr=0.1, weight_decay=-0.5), "SGD: invalid weight_decay value: -0.5"),
    (optim.SGD, dict(lr=0.1, momentum=0, nesterov=True),
     "SGD: nesterov momentum requires a momentum > 0 and zero dampening, got momentum=0, dampening=0"),
    (optim.SGD, dict(lr=0.1, momentum=0.9, dampening=0.1, nesterov=True),
     "SGD: nesterov momentum requires a momentum > 0 and zero dampening, got momentum=0.9, dampening=0.1"),
    (optim.Adam, dict(lr=-1e-3), "Adam: invalid learning rate: -0.001"),
    (optim.Adam, dict(eps=-1e-8), "Adam: invalid epsilon value: -1e-08"),
    (optim.Adam, dict(betas=(-0.1, 0.999)), "Adam: invalid beta parameter at index 0: -0.1"),
    (optim.Adam, dict(betas=(1.0, 0.999)), "Adam: invalid beta parameter at index 0: 1.0"),
    (optim.Adam, dict(betas=(0.9, -0.1)), "Adam: invalid beta parameter at index 1: -0.1"),
    (optim.Adam, dict(betas=(0.9, 1.0)), "Adam: invalid beta parameter at index 1: 1.0"),
    (optim.Adam, dict(weight_decay=-0.01), "Adam: invalid weight_decay value: -0.01"),
    (optim.AdamW, dict(lr=-1e-3), "AdamW: invalid learning rate: -0.001"),
    (optim.AdamW, dict(weight_decay=-0.01), "AdamW: invalid weight_decay value: -0.01"),
    (optim.RMSprop, dict(lr=-0.1), "RMSprop: invalid learning rate: -0.1"),
    (optim.RMSprop, dict(eps=-0.1), "RMSprop: invalid epsilon value: -0.1"),
    (optim.RMSprop, dict(momentum=-0.5), "RMSprop: invalid momentum value: -0.5"),
    (optim.RMSprop, dict(weight_decay=-0.5), "RMSprop: invalid weight_decay value: -0.5"),
    (optim.RMSprop, dict(alpha=-0.5), "RMSprop: invalid alpha value: -0.5"),
    (optim.Adagrad, dict(lr=-0.1), "Adagrad: invalid learning rate: -0.1"),
    (optim.Adagrad, dict(lr_decay=-1), "Adagrad: invalid lr_decay value: -1"),
    (optim.Adagrad, dict(weight_decay=-1), "Adagrad: invalid weight_decay value: -1"),
    (optim.Adagrad, dict(initial_accumulator_value=-1), "Adagrad: invalid initial_accumulator_value value: -1"),
    (optim.Adagrad, dict(eps=-1), "Adagrad: invalid epsilon value: -1"),
    (optim.Adadelta, dict(lr=-1), "Adadelta: invalid learning rate: -1"),
    (optim.Adadelta, dict(rho=-0.5), "Adadelta: invalid rho value: -0.5"),
    (optim.Adadelta, dict(rho=1.5), "Adadelta: invalid rho value: 1.5"),
    (optim.Adadelta, dict(eps=-1), "Adadelta: invalid epsilon value: -1"),
    (optim.Adadelta, dict(weight_decay=-1), "Adadelta: invalid weight_decay value: -1"),
    (optim.NAdam, dict(lr=-0.1), "NAdam: invalid learning rate: -0.1"),
    (optim.NAdam, dict(eps=-1e-8), "NAdam: invalid epsilon value: -1e-08"),
    (optim.NAdam, dict(betas=(1.0, 0.999)), "NAdam: invalid beta parameter at index 0: 1.0"),
    (optim.NAdam, dict(betas=(0.9, -0.1)), "NAdam: invalid beta parameter at index 1: -0.1"),
    (optim.NAdam, dict(weight_decay=-0.01), "NAdam: invalid weight_decay value: -0.01"),
    (optim.NAdam, dict(momentum_decay=-0.004), "NAdam: invalid momentum_decay value: -0.004"),
    (optim.RAdam, dict(lr=-0.1), "RAdam: invalid learning rate: -0.1"),
    (optim.RAdam, dict(eps=-1e-8), "RAdam: invalid epsilon value: -1e-08"),
    (optim.RAdam, dict(betas=(-0.1, 0.999)), "RAdam: invalid beta parameter at index 0: -0.1"),
    (optim.RAdam, dict(betas=(0.9, 1.0)), "RAdam: invalid beta parameter at index 1: 1.0"),
    (optim.RAdam, dict(weight_decay=-0.01), "RAdam: invalid weight_decay value: -0.01"),
    (optim.Adamax, dict(lr=-0.1), "Adamax: invalid learning rate: -0.1"),
    (optim.Adamax, dict(eps=-1e-8), "Adamax: invalid epsilon value: -1e-08"),
    (optim.Adamax, dict(betas=(1.5, 0.999)), "Adamax: invalid beta parameter at index 0: 1.5"),
    (optim.Adamax, dict(betas=(0.9, -0.5)), "Adamax: invalid beta parameter at index 1: -0.5"),
    (optim.Adamax, dict(weight_decay=-0.01), "Adamax: invalid weight_decay value: -0.01"),
    (optim.ASGD, dict(lr=-0.1), "ASGD: invalid learning rate: -0.1"),
    (optim.ASGD, dict(weight_decay=-0.01), "ASGD: invalid weight_decay value: -0.01"),
    (optim.Rprop, dict(lr=-0.1), "Rprop: invalid learning rate: -0.1"),
    (optim.Rprop, dict(etas=(0.0, 1.2)), "Rprop: invalid eta values: 0.0, 1.2"),
    (optim.Rprop, dict(etas=(1.0, 1.2)), "Rprop: invalid eta values: 1.0, 1.2"),
    (optim.Rprop, dict(etas=(0.5, 1.0)), "Rprop: invalid eta values: 0.5, 1.0"),
    (optim.LBFGS, dict(lr=-1), "LBFGS: invalid learning rate: -1"),
    (optim.LBFGS, dict(max_iter=0), "LBFGS: invalid max_iter: 0"),
    (optim.LBFGS, dict(max_iter=2.0), "LBFGS: invalid max_iter: 2.0"),
    (optim.LBFGS, dict(max_eval=0), "LBFGS: invalid max_eval: 0"),
    (optim.LBFGS, dict(max_eval=3.0), "LBFGS: invalid max_eval: 3.0"),
    (optim.LBFGS, dict(history_size=0), "LBFGS: invalid history_size: 0"),
    (optim.LBFGS, dict(history_size=2.0), "LBFGS: invalid history_size: 2.0"),
    (optim.LBFGS, dict(line_search_fn="armijo"),
     "LBFGS: invalid line_search_fn (expected None or 'strong_wolfe'): 'armijo'"),
]


@pytest.mark.parametrize("cls,kwargs,message", EXACT_MESSAGES, ids=[m for _, _, m in EXACT_MESSAGES])
def test_invalid_arguments_exact_message(cls, kwargs, message):
    with pytest.raises(ValueError) as info:
        cls([leaf([1.0])], **kwargs)
    assert str(info.value) == message


@pytest.mark.parametrize("cls,kwargs,message", [c for c in EXACT_MESSAGES if c[0].__name__ in NEWER],
                         ids=[m for c, _, m in EXACT_MESSAGES if c.__name__ in NEWER])
def test_invalid_arguments_rejected_by_torch_too(cls, kwargs, message):
    # torch's message, after our "Name: " prefix and lower-case first letter
    with pytest.raises(ValueError) as info:
        getattr(torch.optim, cls.__name__)([torch.zeros(1, requires_grad=True)], **kwargs)
    assert message == f"{cls.__name__}: {str(info.value)[0].lower()}{str(info.value)[1:]}"


BOUNDARIES = [   # the edge of every valid range, each accepted by torch too
    ("SGD", dict(lr=0.0, momentum=0.0, dampening=0.0, weight_decay=0.0)),
    ("SGD", dict(lr=0.1, momentum=1e-3, nesterov=True)),
    ("Adam", dict(lr=0.0, eps=0.0, betas=(0.0, 0.0), weight_decay=0.0)),
    ("AdamW", dict(lr=0.0, eps=0.0, betas=(0.0, 0.0), weight_decay=0.0)),
    ("RMSprop", dict(lr=0.0, eps=0.0, momentum=0.0, weight_decay=0.0, alpha=0.0)),
    ("Adagrad", dict(lr=0.0, lr_decay=0.0, weight_decay=0.0, initial_accumulator_value=0.0, eps=0.0)),
    ("Adadelta", dict(lr=0.0, rho=0.0, eps=0.0, weight_decay=0.0)),
    ("Adadelta", dict(rho=1.0)),
    ("LBFGS", dict(lr=0.0, max_iter=1, max_eval=1, history_size=1, line_search_fn="strong_wolfe")),
    ("NAdam", dict(lr=0.0, eps=0.0, betas=(0.0, 0.0), weight_decay=0.0, momentum_decay=0.0)),
    ("RAdam", dict(lr=0.0, eps=0.0, betas=(0.0, 0.0), weight_decay=0.0)),
    ("Adamax", dict(lr=0.0, eps=0.0, betas=(0.0, 0.0), weight_decay=0.0)),
    ("ASGD", dict(lr=0.0, weight_decay=0.0, lambd=-1.0, alpha=-2.0, t0=-5.0)),   # torch checks only lr and wd
    ("Rprop", dict(lr=0.0, etas=(1e-9, 1.0 + 1e-9), step_sizes=(0.0, 0.0))),
]


@pytest.mark.parametrize("name,kwargs", BOUNDARIES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(BOUNDARIES)])
def test_boundary_arguments_are_accepted_like_torch(name, kwargs):
    getattr(torch.optim, name)([torch.zeros(1, requires_grad=True)], **kwargs)
    opt = getattr(optim, name)([leaf([1.0])], **kwargs)
    for key, value in kwargs.items():
        assert opt.param_groups[0][key] == value


DEFAULTS = [("SGD", dict(lr=0.1)), ("Adam", {}), ("AdamW", {}), ("RMSprop", {}), ("Adagrad", {}), ("Adadelta", {}),
            ("LBFGS", {}), ("LBFGS", dict(max_iter=4)), ("LBFGS", dict(max_iter=7)), ("NAdam", {}), ("RAdam", {}),
            ("Adamax", {}), ("ASGD", {}), ("Rprop", {})]


@pytest.mark.parametrize("name,kwargs", DEFAULTS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(DEFAULTS)])
def test_default_options_are_torch_defaults(name, kwargs):
    theirs = getattr(torch.optim, name)([torch.zeros(1, requires_grad=True)], **kwargs).param_groups[0]
    ours = getattr(optim, name)([leaf([1.0])], **kwargs).param_groups[0]
    for key, value in ours.items():
        if key != "params":
            assert repr(value) == repr(theirs[key]), key   # the value and its type (0 and 0.0 print differently)


def test_required_prints_like_torch():
    from torch.optim.optimizer import required as torch_required
    assert repr(optim.optimizer.required) == repr(torch_required) == "<required parameter>"


def test_load_state_dict_moves_state_to_the_param_device(fake_cuda):
    w = leaf([1.0, 2.0])
    opt = optim.Adam([w], lr=0.1)
    one_step(opt, [w])
    on_gpu = ember.tensor(w.tolist(), dtype=ember.float64, device="cuda", requires_grad=True)
    opt_gpu = optim.Adam([on_gpu], lr=0.1)
    opt_gpu.load_state_dict(opt.state_dict())
    state = opt_gpu.state[on_gpu]
    assert state["exp_avg"].device == on_gpu.device and state["exp_avg_sq"].device == on_gpu.device
    assert state["exp_avg"].tolist() == opt.state[w]["exp_avg"].tolist()
    one_step(opt, [w])
    one_step(opt_gpu, [on_gpu])
    assert on_gpu.tolist() == w.tolist()
    # and back: state on the GPU loaded for a CPU parameter
    w2 = leaf([1.0, 2.0])
    opt2 = optim.Adam([w2], lr=0.1)
    opt2.load_state_dict(opt_gpu.state_dict())
    assert opt2.state[w2]["exp_avg"].device == w2.device


def test_load_state_dict_step_becomes_a_step_tensor_and_other_state_keeps_its_kind():
    w = leaf([1.0, 2.0], dtype=ember.float32)
    opt = optim.SGD([w], lr=0.1)
    counts = ember.tensor([3, 4])                    # an integer state tensor: not cast to the param's float dtype
    history = [ember.tensor([1.0, 2.0]), ember.tensor([0.5, 0.25])]   # a list of float64 tensors: each cast
    opt.load_state_dict({"state": {0: {"step": ember.tensor(7.0), "count": counts, "history": history,
                                       "note": {"tags": ["a"]}}},
                         "param_groups": [dict(opt.param_groups[0], params=[0])]})
    state = opt.state[w]
    # the step, any number or tensor (torch's is float32), is a 0-d float64 tensor on the parameter's device
    assert isinstance(state["step"], ember.Tensor) and state["step"].shape == () and state["step"].item() == 7
    assert state["step"].dtype == ember.float64
    assert state["count"].dtype == counts.dtype and state["count"].tolist() == [3, 4]
    assert [h.dtype for h in state["history"]] == [ember.float32, ember.float32]
    assert [h.tolist() for h in state["history"]] == [[1.0, 2.0], [0.5, 0.25]]
    assert state["note"] == {"tags": ["a"]}


def test_load_state_dict_copies_what_it_loads():
    w = leaf([1.0, 2.0])
    opt = optim.SGD([w], lr=0.1)
    note = {"tags": ["a"]}
    group = dict(opt.param_groups[0], params=[0], schedule={"milestones": [1, 2]})
    sd = {"state": {0: {"note": note}}, "param_groups": [group]}
    opt.load_state_dict(sd)
    note["tags"].append("b")
    group["schedule"]["milestones"].append(3)
    assert opt.state[w]["note"] == {"tags": ["a"]}
    assert opt.param_groups[0]["schedule"] == {"milestones": [1, 2]}
    assert opt.state_dict()["param_groups"][0]["params"] == [0]
    opt.state[leaf([0.0])]["fresh"] = 1   # the loaded state is still a defaultdict: a new parameter gets {}


def test_load_state_dict_string_indices():
    w = leaf([1.0, 2.0])
    opt = optim.SGD([w], lr=0.1, momentum=0.9)
    one_step(opt, [w])
    buf = opt.state[w]["momentum_buffer"]
    # a negative index (any int names a parameter) written as a string, as JSON writes keys
    opt.load_state_dict({"state": {"-1": {"momentum_buffer": buf}},
                         "param_groups": [dict(opt.param_groups[0], params=[-1])]})
    assert opt.state[w]["momentum_buffer"].tolist() == buf.tolist()
    for key in ["X1", "1.5"]:
        with pytest.raises(ValueError) as info:
            opt.load_state_dict({"state": {key: {"momentum_buffer": buf}},
                                 "param_groups": [dict(opt.param_groups[0], params=[0])]})
        assert str(info.value) == (f"SGD.load_state_dict: state for parameter indices [{key!r}] that no "
                                   "parameter group refers to")


@pytest.mark.parametrize("weight", [0.0, 0.1, 0.3, 0.4999, 0.5, 0.7, 0.999, 1.0])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_lerp_rounds_like_torch(weight, dtype):
    # the helper behind Adam's first moment and RMSprop's centred mean. Where torch's formula involves no
    # rounding choice (weight 0, 0.5 and 1: start exactly, the midpoint from its upper formula, end
    # exactly) it is bit for bit torch's; elsewhere torch's kernel may fuse a multiply-add, so last bits differ
    from ember.optim.optimizer import lerp_
    rng = np.random.default_rng(3)
    start, end = (rng.standard_normal(2000).astype(dtype) for _ in range(2))
    expected = torch.from_numpy(start.copy()).lerp_(torch.from_numpy(end), weight).numpy()
    ours = ember.from_numpy(start.copy())
    lerp_(ours, ember.from_numpy(end), weight)
    ours = ours.numpy()
    if weight in (0.0, 0.5, 1.0):
        np.testing.assert_array_equal(ours, expected)
    else:
        np.testing.assert_allclose(ours, expected, rtol=4 * np.finfo(dtype).eps, atol=4 * np.finfo(dtype).eps)


class _NeedsLr(optim.Optimizer):
    """An optimizer whose lr has no default (torch's `required`), as SGD's had before torch 2.2."""
    def __init__(self, params, lr=optim.optimizer.required):
        super().__init__(params, dict(lr=lr))


OPTIMIZER_ERRORS = [   # (build, exception type, the exact message)
    (lambda w: optim.SGD(w, lr=0.1), TypeError,
     "SGD: params must be an iterable of Tensors or dicts, but got a single Tensor; wrap it in a list: [tensor]"),
    (lambda w: optim.Adam({"params": [w]}), TypeError,
     "Adam: params must be an iterable of Tensors or dicts, but got a dict; pass [dict(params=..., lr=...)] or "
     "model.parameters()"),
    (lambda w: optim.RMSprop([]), ValueError, "RMSprop: got an empty parameter list"),
    (lambda w: optim.Adagrad([{"params": {w}}]), TypeError,
     "Adagrad: parameters must be an ordered collection (a list or tuple), not a set: the order of a set changes "
     "between runs"),
    (lambda w: optim.Adadelta([w, 3.0]), TypeError, "Adadelta: can only optimize Tensors, but one of the params is float"),
    (lambda w: optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1), TypeError,
     "SGD: can only optimize Tensors, but one of the params is Tensor"),
    (lambda w: optim.AdamW([w * 2]), ValueError,
     "AdamW: can't optimize a non-leaf Tensor (shape (2,)); optimize the leaf it was computed from, or "
     ".detach().requires_grad_()"),
    (lambda w: _NeedsLr([w]), ValueError, "_NeedsLr: parameter group didn't specify a value of required option 'lr'"),
    (lambda w: optim.SGD([w, w], lr=0.1), ValueError, "SGD: a parameter group contains the same parameter twice"),
    (lambda w: optim.SGD([{"params": [w]}, {"params": [w]}], lr=0.1), ValueError,
     "SGD: some parameters appear in more than one parameter group"),
    (lambda w: optim.SGD([w], lr=0.1).add_param_group([w]), TypeError,
     "SGD.add_param_group: expected a dict, got list"),
]


@pytest.mark.parametrize("build,exc,message", OPTIMIZER_ERRORS, ids=[m for _, _, m in OPTIMIZER_ERRORS])
def test_optimizer_errors_exact_message(build, exc, message):
    with pytest.raises(exc) as info:
        build(leaf([1.0, 2.0]))
    assert str(info.value) == message


def test_zero_grad_goes_past_parameters_without_gradient():
    frozen, w = leaf([1.0]), leaf([1.0, 2.0])
    opt = optim.SGD([frozen, w], lr=0.1)
    (w * w).sum().backward()
    opt.zero_grad(set_to_none=False)
    assert frozen.grad is None and w.grad.tolist() == [0.0, 0.0]
    (w * w).sum().backward()
    opt.zero_grad()
    assert w.grad is None


def test_sgd_momentum_buffer_is_one_tensor_updated_in_place_like_torch():
    def run(lib):
        w = lib.tensor([1.0, -2.0], dtype=lib.float64, requires_grad=True)
        opt = lib.optim.SGD([w], lr=0.1, momentum=0.9)
        bufs = []
        for _ in range(3):
            opt.zero_grad()
            (w * w).sum().backward()
            opt.step()
            bufs.append(opt.state[w]["momentum_buffer"])
        return bufs

    for bufs in (run(torch), run(ember)):
        assert bufs[0] is bufs[1] is bufs[2]


def test_lr_tensor_is_one_tensor_per_group_rewritten_in_place():
    # a logged step takes the rate as an input: the same 0-d float64 tensor at every step, holding the
    # group's current lr; a float or a tensor lr; a new tensor for the groups a state dict brings
    w = ember.ones(2, requires_grad=True)
    opt = ember.optim.SGD([w], lr=0.5)
    group = opt.param_groups[0]
    t = opt.lr_tensor(group, w.device)
    assert t.shape == () and t.dtype == ember.float64 and t.item() == 0.5
    assert opt.lr_tensor(group, w.device) is t
    group["lr"] = 0.25
    assert opt.lr_tensor(group, w.device) is t and t.item() == 0.25
    group["lr"] = ember.tensor(0.125)
    assert opt.lr_tensor(group, w.device) is t and t.item() == 0.125
    opt.load_state_dict(opt.state_dict())
    t2 = opt.lr_tensor(opt.param_groups[0], w.device)
    assert t2 is not t and t2.item() == 0.125


@pytest.mark.parametrize("step", [7, 7.0, ember.tensor(7, dtype=ember.int32)])
def test_load_state_dict_step_as_python_number_or_int_tensor(step):
    # a state dict written by hand or by an old torch holds the step as an int/float
    w = leaf([1.0, 2.0])
    opt = optim.Adam([w], lr=0.1)
    opt.load_state_dict({"state": {0: {"step": step, "exp_avg": ember.zeros(2), "exp_avg_sq": ember.zeros(2)}},
                         "param_groups": [dict(opt.param_groups[0], params=[0])]})
    s = opt.state[w]["step"]
    assert s.dtype == ember.float64 and s.shape == () and s.item() == 7.0


@pytest.mark.parametrize("name", ["SGD", "RMSprop", "Adagrad", "Adadelta", "Adam", "NAdam", "RAdam", "Adamax", "ASGD"])
def test_lr_tensor_lives_on_the_parameters_device(fake_cuda, name):
    # the 0-d lr input is made on the group's device once, not copied from the host at every step
    w = ember.tensor([1.0, 2.0], device="cuda", requires_grad=True)
    opt = getattr(optim, name)([w], lr=0.1)
    (w * w).sum().backward()
    opt.step()
    assert [e[2].device.type for e in opt._lr.values()] == ["cuda"]
