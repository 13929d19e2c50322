"""Every optimizer against torch: 20 steps from the same start on the same loss, one line per case."""
import copy

import numpy as np
import pytest
import torch

import ember

RNG = np.random.default_rng(0)
X = RNG.standard_normal((8, 4))
Y = RNG.standard_normal((8, 3))
W0 = RNG.standard_normal((4, 3)) * 0.5
B0 = RNG.standard_normal((3,)) * 0.1


def loss_fn(w, b):
    # a small linear regression plus a quartic term, so curvature changes along the trajectory
    x, y = _const(w, X), _const(w, Y)
    r = x @ w + b - y
    return (r * r).mean() + 0.05 * (w * w * w * w).sum()


def _const(like, a):
    lib = torch if isinstance(like, torch.Tensor) else ember
    return lib.tensor(a, dtype=like.dtype, device=like.device)


def trajectory(lib, make_opt, dtype, steps=20, start=None, opt_state=None, device="cpu", set_to_none=True):
    """Parameters after each of `steps` steps; `make_opt(optim_module, [w, b])` builds the optimizer."""
    ldtype = getattr(lib, dtype)
    w0, b0 = start if start is not None else (W0, B0)
    w = lib.tensor(w0, dtype=ldtype, device=device, requires_grad=True)
    b = lib.tensor(b0, dtype=ldtype, device=device, requires_grad=True)
    opt = make_opt(lib.optim, [w, b])
    if opt_state is not None:
        opt.load_state_dict(opt_state)
    out = []
    for _ in range(steps):
        opt.zero_grad(set_to_none=set_to_none)
        loss_fn(w, b).backward()
        opt.step()
        out.append(np.concatenate([w.detach().cpu().numpy().ravel(), b.detach().cpu().numpy().ravel()]))
    return np.array(out), opt, (w, b)


TOL = {"float64": dict(rtol=1e-10, atol=1e-12), "float32": dict(rtol=2e-4, atol=2e-5)}


def check_trajectory(name, kwargs, dtype, groups=None):
    """Run `name(**kwargs)` (or per-group options `groups`) in torch and Ember; compare every step."""
    def make(optim, params):
        cls = getattr(optim, name)
        if groups is None:
            return cls(params, **kwargs)
        return cls([dict(params=[p], **g) for p, g in zip(params, groups)], **kwargs)

    import helpers   # Ember on check_op's device (the Makefile's fake-CUDA pass: cuda)
    expected, _, _ = trajectory(torch, make, dtype)
    actual, _, _ = trajectory(ember, make, dtype, device=helpers.DEVICE)
    assert actual.dtype == expected.dtype
    assert np.isfinite(expected).all()
    np.testing.assert_allclose(actual, expected, **TOL[dtype])


CASES = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.01)),
    ("SGD", dict(lr=0.01, momentum=0.5, maximize=True)),
    ("Adam", dict(lr=0.05)),
    ("Adam", dict(lr=0.05, betas=(0.8, 0.9), weight_decay=0.1)),
    ("Adam", dict(lr=0.05, amsgrad=True)),
    ("Adam", dict(lr=0.02, amsgrad=True, maximize=True, weight_decay=0.05)),
    ("Adam", dict(lr=0.05, betas=(0.3, 0.5))),  # lerp weight 0.7 takes torch's other rounding branch
    ("AdamW", dict(lr=0.05)),
    ("AdamW", dict(lr=0.05, weight_decay=0.3, amsgrad=True)),
    ("AdamW", dict(lr=0.02, betas=(0.7, 0.95), eps=1e-3, maximize=True)),  # every option passed on to Adam
    ("AdamW", dict(lr=0.01, weight_decay=1.0)),
    ("SGD", dict(lr=0.02, weight_decay=1.0)),
    ("SGD", dict(lr=0.01, momentum=1.0)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, alpha=0.9, centered=True)),
    ("RMSprop", dict(lr=0.01, momentum=0.9, weight_decay=0.1)),
    ("RMSprop", dict(lr=0.005, momentum=0.5, centered=True, maximize=True)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.05, weight_decay=0.1)),
    ("Adagrad", dict(lr=0.1, initial_accumulator_value=0.5, maximize=True)),
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.5, weight_decay=0.1)),
    ("Adadelta", dict(lr=0.1, eps=1e-4, maximize=True)),
    ("NAdam", dict(lr=0.05)),
    ("NAdam", dict(lr=0.03, betas=(0.8, 0.9), weight_decay=0.1, momentum_decay=0.1)),
    ("NAdam", dict(lr=0.02, weight_decay=0.3, decoupled_weight_decay=True, maximize=True)),
    ("RAdam", dict(lr=0.05)),    # rho_t > 5 from step 6 on: both of torch's branches
    ("RAdam", dict(lr=0.05, betas=(0.5, 0.9), eps=1e-3, weight_decay=0.1)),
    ("RAdam", dict(lr=0.02, weight_decay=0.3, decoupled_weight_decay=True, maximize=True)),
    ("RAdam", dict(lr=0.05, betas=(0.9, 0.6))),    # rho_inf = 4: never rectified
    ("Adamax", dict(lr=0.05)),
    ("Adamax", dict(lr=0.05, betas=(0.5, 0.9), eps=1e-3, weight_decay=0.1)),
    ("Adamax", dict(lr=0.01, maximize=True)),
    ("ASGD", dict(lr=0.05)),     # t0 = 1e6: the average copies the parameter
    ("ASGD", dict(lr=0.05, lambd=0.01, alpha=0.5, t0=5, weight_decay=0.1)),
    ("ASGD", dict(lr=0.005, t0=2, maximize=True)),
    ("Rprop", dict(lr=0.05)),
    ("Rprop", dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(1e-3, 0.1))),
    ("Rprop", dict(lr=0.01, maximize=True)),
    ("Adafactor", dict()),                          # matrix w: row/column factors; vector b: a full variance
    ("Adafactor", dict(lr=0.05, weight_decay=0.1)),
    ("Adafactor", dict(lr=0.05, beta2_decay=-0.5, eps=(1e-6, 1e-2), d=2.0, maximize=True)),
    ("Adafactor", dict(lr=0.05, eps=(1e-3, 1e-3), foreach=False)),
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name,kwargs", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_trajectory_matches_torch(name, kwargs, dtype):
    check_trajectory(name, kwargs, dtype)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name,kwargs", CASES[26:], ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES[26:], 26)])
def test_steps_from_the_same_gradients_match_torch(name, kwargs, dtype):
    # the update alone, without the loss: 25 steps from the same given gradients (so a float32 difference
    # in the forward is not amplified along a trajectory), within a few units in the last place of the
    # parameters' scale (torch's CPU kernels fuse some multiply-adds, and NumPy's pow is not libm's)
    rng = np.random.default_rng(5)
    p0 = rng.standard_normal(500).astype(dtype)
    grads = [(rng.standard_normal(500) * (1 + i % 3)).astype(dtype) for i in range(25)]
    results = []
    for lib in (torch, ember):
        p = lib.tensor(p0, requires_grad=True)
        opt = getattr(lib.optim, name)([p], **kwargs)
        for g in grads:
            p.grad = lib.tensor(g)
            opt.step()
        results.append(p.detach().numpy())
    expected, actual = results
    assert actual.dtype == expected.dtype and np.isfinite(expected).all()
    np.testing.assert_allclose(actual, expected, rtol=0, atol=32 * np.spacing(np.abs(expected).max()))
    assert not np.allclose(expected, p0, rtol=0, atol=1e-3)   # the steps moved the parameters


GROUP_CASES = [
    ("SGD", dict(lr=0.1, momentum=0.9), [dict(lr=0.05), dict(nesterov=True, weight_decay=0.1)]),
    ("Adam", dict(lr=0.01), [dict(lr=0.05, amsgrad=True), dict(betas=(0.5, 0.9))]),
    ("RMSprop", dict(lr=0.01), [dict(centered=True), dict(momentum=0.9)]),
    ("Adagrad", dict(lr=0.1), [dict(lr_decay=0.1), dict(lr=0.2)]),
    ("NAdam", dict(lr=0.02), [dict(weight_decay=0.1, decoupled_weight_decay=True), dict(lr=0.05, momentum_decay=0.05)]),
    ("RAdam", dict(lr=0.02), [dict(betas=(0.8, 0.9)), dict(weight_decay=0.1, decoupled_weight_decay=True)]),
    ("Adamax", dict(lr=0.02), [dict(lr=0.05), dict(betas=(0.5, 0.9), weight_decay=0.1)]),
    ("ASGD", dict(lr=0.05, t0=4), [dict(lambd=0.01), dict(lr=0.02, t0=2, alpha=0.5)]),
    ("Rprop", dict(lr=0.02), [dict(etas=(0.4, 1.3)), dict(lr=0.01, step_sizes=(1e-4, 0.05))]),
    ("Adafactor", dict(lr=0.02), [dict(lr=0.05, eps=(1e-4, 1e-3)), dict(weight_decay=0.1, beta2_decay=-0.6)]),
]


@pytest.mark.parametrize("name,kwargs,groups", GROUP_CASES, ids=[c[0] for c in GROUP_CASES])
def test_param_groups_match_torch(name, kwargs, groups):
    check_trajectory(name, kwargs, "float64", groups)


RESUME_CASES = [("SGD", dict(lr=0.05, momentum=0.9)), ("Adam", dict(lr=0.05, amsgrad=True)),
                ("AdamW", dict(lr=0.05)), ("RMSprop", dict(lr=0.01, momentum=0.5, centered=True)),
                ("Adagrad", dict(lr=0.1, lr_decay=0.01)), ("Adadelta", dict(lr=0.5)),
                ("RAdam", dict(lr=0.05)), ("Adamax", dict(lr=0.05)), ("ASGD", dict(lr=0.05, t0=5)),
                ("Rprop", dict(lr=0.05)), ("Adafactor", dict(lr=0.05, weight_decay=0.1))]
# NAdam is not here: its 0-d "mu_product" is float32 until a load casts it to the parameter's dtype (torch's
# load_state_dict does the same), so a resumed float64 run rounds it differently; see the next test


@pytest.mark.parametrize("name,kwargs", RESUME_CASES, ids=[c[0] for c in RESUME_CASES])
def test_state_dict_resume_continues_identically(name, kwargs):
    def make(optim, params):
        return getattr(optim, name)(params, **kwargs)

    full, _, _ = trajectory(ember, make, "float64", steps=20)
    first, opt, (w, b) = trajectory(ember, make, "float64", steps=10)
    state = copy.deepcopy(opt.state_dict())
    start = (w.detach().numpy().copy(), b.detach().numpy().copy())
    rest, _, _ = trajectory(ember, make, "float64", steps=10, start=start, opt_state=state)
    np.testing.assert_array_equal(np.concatenate([first, rest]), full)


def _to_ember(value):
    """A torch state dict's values as Ember's (tensors through NumPy; lists, dicts and numbers as they are)."""
    if isinstance(value, torch.Tensor):
        return ember.from_numpy(value.detach().numpy().copy())
    if isinstance(value, dict):
        return {k: _to_ember(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_to_ember(v) for v in value]
    return value


NEW_RESUME_CASES = [("NAdam", dict(lr=0.05)), ("NAdam", dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True)),
                    ("RAdam", dict(lr=0.05)), ("Adamax", dict(lr=0.05)), ("ASGD", dict(lr=0.05, t0=5)),
                    ("Rprop", dict(lr=0.05, etas=(0.3, 1.5))), ("Adafactor", dict(lr=0.05, d=2.0))]


@pytest.mark.parametrize("name,kwargs", NEW_RESUME_CASES, ids=[c[0] for c in NEW_RESUME_CASES])
def test_state_dict_resume_matches_torch_resume(name, kwargs):
    # torch's state dict loaded into Ember, and Ember's own, both continue as torch continues after loading
    # its state dict (which casts the 0-d mu_product, eta and mu to the parameter's dtype)
    def make(optim, params):
        return getattr(optim, name)(params, **kwargs)

    _, opt_t, (w_t, b_t) = trajectory(torch, make, "float64", steps=8)
    _, opt_e, (w_e, b_e) = trajectory(ember, make, "float64", steps=8)
    start_t = (w_t.detach().numpy().copy(), b_t.detach().numpy().copy())
    start_e = (w_e.detach().numpy().copy(), b_e.detach().numpy().copy())
    torch_sd = copy.deepcopy(opt_t.state_dict())
    # torch's load keeps the "step" tensor it is given (no copy) and counts on in it: load a copy
    expected, opt_t2, _ = trajectory(torch, make, "float64", steps=8, start=start_t, opt_state=copy.deepcopy(torch_sd))
    from_torch, opt_e2, _ = trajectory(ember, make, "float64", steps=8, start=start_t, opt_state=_to_ember(torch_sd))
    from_ember, _, _ = trajectory(ember, make, "float64", steps=8, start=start_e,
                                  opt_state=copy.deepcopy(opt_e.state_dict()))
    np.testing.assert_allclose(from_torch, expected, **TOL["float64"])
    np.testing.assert_allclose(from_ember, expected, **TOL["float64"])
    assert_state_matches_torch(opt_e2.state_dict(), opt_t2.state_dict())
    for ours, theirs in zip(opt_e2.state.values(), opt_t2.state.values()):   # the scalar state's dtype too
        assert {k: str(v.dtype)[-7:] for k, v in ours.items() if k != "step"} == \
            {k: str(v.dtype)[-7:] for k, v in theirs.items() if k != "step"}


@pytest.mark.cuda
@pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("name,kwargs", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_cuda_trajectory_matches_cpu(name, kwargs):
    def make(optim, params):
        return getattr(optim, name)(params, **kwargs)

    on_cpu, _, _ = trajectory(ember, make, "float64", steps=10)
    on_gpu, opt, _ = trajectory(ember, make, "float64", steps=10, device="cuda")
    np.testing.assert_allclose(on_gpu, on_cpu, rtol=1e-9, atol=1e-12)
    assert all(v.device.type == "cuda" for s in opt.state.values() for v in s.values() if hasattr(v, "device"))


def assert_state_matches_torch(ours, theirs, dtype="float64"):
    """Two state_dicts: the same indices, state keys, step counts and state tensors; the same options."""
    assert ours["state"].keys() == theirs["state"].keys()
    for index, t_state in theirs["state"].items():
        e_state = ours["state"][index]
        assert e_state.keys() == t_state.keys(), index
        for key, t_value in t_state.items():
            if key == "step":
                assert e_state[key] == t_value.item(), (index, key)
            else:
                np.testing.assert_allclose(e_state[key].numpy(), t_value.detach().numpy(), **TOL[dtype])
    for e_group, t_group in zip(ours["param_groups"], theirs["param_groups"]):
        assert e_group == {k: v for k, v in t_group.items() if k in e_group}


@pytest.mark.parametrize("name,kwargs", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_state_after_steps_matches_torch(name, kwargs):
    # the state each option creates (buffers, averages, step counts), not only the parameters it moves
    def make(optim, params):
        return getattr(optim, name)(params, **kwargs)

    _, opt_t, _ = trajectory(torch, make, "float64", steps=7)
    _, opt_e, _ = trajectory(ember, make, "float64", steps=7)
    assert_state_matches_torch(opt_e.state_dict(), opt_t.state_dict())


@pytest.mark.parametrize("name,kwargs", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_group_added_after_steps_matches_torch(name, kwargs):
    """A group added with add_param_group after some steps gets fresh state on its first step."""
    kwargs = dict(kwargs, **({"initial_accumulator_value": 0.3} if name == "Adagrad" else {}))

    def run(lib):
        w = lib.tensor(W0, dtype=lib.float64, requires_grad=True)
        b = lib.tensor(B0, dtype=lib.float64, requires_grad=True)
        opt = getattr(lib.optim, name)([w], **kwargs)
        out = []
        for step in range(8):
            if step == 3:
                opt.add_param_group({"params": [b]})
            opt.zero_grad()
            loss_fn(w, b).backward()
            opt.step()
            out.append(np.concatenate([w.detach().numpy().ravel(), b.detach().numpy().ravel()]))
        return np.array(out), opt

    (expected, opt_t), (actual, opt_e) = run(torch), run(ember)
    np.testing.assert_allclose(actual, expected, **TOL["float64"])
    assert_state_matches_torch(opt_e.state_dict(), opt_t.state_dict())


def test_adagrad_state_exists_before_the_first_step_like_torch():
    def build(optim, params):
        return optim.Adagrad([{"params": [params[0]]}, {"params": [params[1]], "lr": 0.5}],
                             initial_accumulator_value=0.25)

    _, opt_t, _ = trajectory(torch, build, "float64", steps=0)
    _, opt_e, _ = trajectory(ember, build, "float64", steps=0)
    assert_state_matches_torch(opt_e.state_dict(), opt_t.state_dict())


@pytest.mark.parametrize("name,kwargs", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_gradients_zeroed_in_place_match_torch(name, kwargs):
    # zero_grad(set_to_none=False) reuses each gradient's array: state must never alias it
    def make(optim, params):
        return getattr(optim, name)(params, **kwargs)

    expected, _, _ = trajectory(torch, make, "float64", steps=6, set_to_none=False)
    actual, _, _ = trajectory(ember, make, "float64", steps=6, set_to_none=False)
    np.testing.assert_allclose(actual, expected, **TOL["float64"])


# one case per optimizer and option set whose step reads the learning rate (issue 17: lr is a 0-d tensor
# input of the update, rewritten in place only when group["lr"] changes)
LR_CASES = [c for i, c in enumerate(CASES) if i in (1, 3, 5, 7, 11, 16, 18, 19, 21, 23, 27, 28, 29, 31, 33, 34, 37,
                                                    39)]


def _run_with_hook(lib, make_opt, steps, hook, dtypes=("float64", "float64")):
    """Parameters after each step; `hook(lib, opt, step)` runs before each step (change lr, load state)."""
    w = lib.tensor(W0, dtype=getattr(lib, dtypes[0]), requires_grad=True)
    b = lib.tensor(B0, dtype=getattr(lib, dtypes[1]), requires_grad=True)
    opt = make_opt(lib, [w, b])
    out = []
    for step in range(steps):
        opt = hook(lib, opt, step) or opt
        opt.zero_grad()
        x, y = lib.tensor(X, dtype=w.dtype), lib.tensor(Y, dtype=w.dtype)
        r = x @ w + b.to(w.dtype) - y
        ((r * r).mean() + 0.05 * (w * w * w * w).sum()).backward()
        opt.step()
        out.append(np.concatenate([w.detach().numpy().ravel().astype(np.float64),
                                   b.detach().numpy().ravel().astype(np.float64)]))
    return np.array(out), opt


@pytest.mark.parametrize("name,kwargs", LR_CASES, ids=[n for n, _ in LR_CASES])
def test_lr_changed_between_steps_matches_torch(name, kwargs):
    # rates going down, up, and back to a value written before: each step must use the group's current lr
    factors = [1.0, 0.5, 0.5, 2.0, 1.0, 1.0, 0.25, 2.0]

    def make(lib, params):
        return getattr(lib.optim, name)([{"params": [params[0]]}, {"params": [params[1]]}],
                                        **dict(kwargs, lr=0.03))

    def hook(lib, opt, step):
        opt.param_groups[0]["lr"] = 0.03 * factors[step]
        opt.param_groups[1]["lr"] = 0.03 * factors[-1 - step]

    expected, _ = _run_with_hook(torch, make, len(factors), hook)
    actual, _ = _run_with_hook(ember, make, len(factors), hook)
    np.testing.assert_allclose(actual, expected, **TOL["float64"])


@pytest.mark.parametrize("name,kwargs", [("SGD", dict(momentum=0.9)), ("Adam", dict()), ("RMSprop", dict()),
                                         ("Adagrad", dict()), ("Adadelta", dict()), ("NAdam", dict()),
                                         ("RAdam", dict()), ("Adamax", dict()), ("ASGD", dict(t0=2)),
                                         ("Rprop", dict())])
def test_tensor_lr_matches_torch(name, kwargs):
    # torch accepts a 0-d tensor as lr and reads its current value at every step
    def make(lib, params):
        return getattr(lib.optim, name)(params, lr=lib.tensor(0.05, dtype=lib.float64), **kwargs)

    def hook(lib, opt, step):
        if step == 3:
            opt.param_groups[0]["lr"] = lib.tensor(0.01, dtype=lib.float64)

    expected, _ = _run_with_hook(torch, make, 6, hook)
    actual, _ = _run_with_hook(ember, make, 6, hook)
    np.testing.assert_allclose(actual, expected, **TOL["float64"])


SCHEDULED = [  # a real scheduler between steps; OneCycleLR also cycles beta1 of the optimizers that have betas
    ("NAdam", dict(weight_decay=0.1, decoupled_weight_decay=True), "OneCycleLR"),
    ("RAdam", dict(), "OneCycleLR"), ("Adamax", dict(), "OneCycleLR"), ("NAdam", dict(), "CosineAnnealingLR"),
    ("RAdam", dict(weight_decay=0.1), "CosineAnnealingLR"), ("ASGD", dict(t0=3), "CosineAnnealingLR"),
    ("ASGD", dict(t0=3), "OneCycleLR-no-momentum"), ("Rprop", dict(), "CosineAnnealingLR"),
]


@pytest.mark.parametrize("name,kwargs,scheduler", SCHEDULED, ids=[f"{n}-{s}" for n, _, s in SCHEDULED])
def test_lr_scheduler_drives_the_newer_optimizers_like_torch(name, kwargs, scheduler):
    steps = 20

    def make(lib, params):
        opt = getattr(lib.optim, name)(params, **dict(kwargs, lr=0.05))
        S = lib.optim.lr_scheduler
        if scheduler == "CosineAnnealingLR":
            opt.sched = S.CosineAnnealingLR(opt, T_max=8, eta_min=0.001)
        else:
            opt.sched = S.OneCycleLR(opt, max_lr=0.1, total_steps=steps + 1,
                                     cycle_momentum=scheduler == "OneCycleLR")
        return opt

    def hook(lib, opt, step):
        if step > 0:
            opt.sched.step()

    expected, opt_t = _run_with_hook(torch, make, steps, hook)
    actual, opt_e = _run_with_hook(ember, make, steps, hook)
    assert [g["lr"] for g in opt_e.param_groups] == pytest.approx([g["lr"] for g in opt_t.param_groups], rel=1e-12)
    np.testing.assert_allclose(actual, expected, **TOL["float64"])


@pytest.mark.parametrize("name,kwargs", LR_CASES, ids=[n for n, _ in LR_CASES])
def test_float32_and_float64_parameters_in_one_group_match_torch(name, kwargs):
    # the lr tensor is cast once per dtype in a step: a float32 and a float64 parameter share one group
    def make(lib, params):
        return getattr(lib.optim, name)(params, **kwargs)

    def nothing(lib, opt, step):
        return None

    expected, _ = _run_with_hook(torch, make, 6, nothing, dtypes=("float32", "float64"))
    actual, _ = _run_with_hook(ember, make, 6, nothing, dtypes=("float32", "float64"))
    np.testing.assert_allclose(actual, expected, **TOL["float32"])


@pytest.mark.parametrize("name,kwargs", LR_CASES, ids=[n for n, _ in LR_CASES])
def test_state_dict_with_another_lr_loaded_mid_run_matches_torch(name, kwargs):
    # the loaded groups' lr is used from the next step on, not the lr tensor the old groups had
    saved = {}

    def make(lib, params):
        return getattr(lib.optim, name)(params, **dict(kwargs, lr=0.03))

    def hook(lib, opt, step):
        if step == 2:
            sd = copy.deepcopy(opt.state_dict())
            for g in sd["param_groups"]:
                g["lr"] = 0.011
            saved[lib.__name__] = sd
        if step == 4:
            opt.load_state_dict(saved[lib.__name__])

    expected, _ = _run_with_hook(torch, make, 7, hook)
    actual, _ = _run_with_hook(ember, make, 7, hook)
    np.testing.assert_allclose(actual, expected, **TOL["float64"])
