"""dynamic=True / dynamic={"x": 0}: a new batch size re-specialises the traced graph (no Python run, no
retrace) and gives eager's result; where a size cannot be made symbolic the compiler retraces and says why."""
import warnings

import numpy as np
import pytest

import ember
from tests.jit.models import make, step_fn


@pytest.mark.parametrize("kind", ["mlp", "cnn", "lstm", "gpt", "zoo_gpt"])
def test_new_batch_size_does_not_retrace_a_training_step(kind):
    # cnn: BatchNorm's running variance takes n / (n - 1), two counts of the batch (it retraced at every size)
    def batches(x, y):
        return [(x, y), (x[:2], y[:2]), (x, y), (x[1:], y[1:]), (x[:2], y[:2])]

    def run(compiled):
        model, opt, x, y = make(kind)
        step = step_fn(model, opt)
        if compiled:
            step = ember.compile(step, dynamic=True)
        ember.manual_seed(9)
        losses = []
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for _ in range(2):
                for xb, yb in batches(x, y):
                    losses.append(step(xb.contiguous(), yb.contiguous()).item())
        return model, losses, step
    m1, l1, step = run(True)
    m0, l0, _ = run(False)
    # the first call, the steady state (optimizer state exists), a second batch size: then no more traces
    assert step.cache_info().traces == 3
    np.testing.assert_array_equal(l1, l0)
    for p0, p1 in zip(m0.parameters(), m1.parameters()):
        np.testing.assert_array_equal(p1.detach().numpy(), p0.detach().numpy())


def test_dynamic_dict_names_the_argument_and_dim():
    f = ember.compile(lambda x, w: x @ w, dynamic={"x": 0})
    w = ember.randn(3, 2)
    f(ember.randn(4, 3), w)
    for n in (2, 7, 4, 9):
        x = ember.randn(n, 3)
        np.testing.assert_array_equal(f(x, w).numpy(), (x @ w).numpy())
    assert f.cache_info().traces == 2       # sizes 4 and 2 teach the template; 7 and 9 are made from it
    with pytest.warns(UserWarning, match="w: shape"):      # w's dims are static
        f(ember.randn(4, 3), ember.randn(3, 5))


def test_a_size_that_is_not_symbolic_retraces_and_says_why():
    table = ember.randn(4, 3)

    def fn(x):
        return x + table          # (4, 3) state broadcast against the batch: only size 4 works
    f = ember.compile(fn, dynamic=True)
    f(ember.ones(4, 3))
    with pytest.raises(RuntimeError):
        f(ember.ones(5, 3))        # the retrace runs eagerly, and eager refuses it too


def test_a_branch_on_the_batch_size_is_not_made_symbolic():
    def fn(x):
        return x * 2 if x.shape[0] < 5 else x.exp()
    f = ember.compile(fn, dynamic=True)
    f(ember.ones(2, 3))
    f(ember.ones(6, 3))                 # a second size: the traces differ, so no template
    with pytest.warns(UserWarning, match="dynamic dims \\(2,\\) and \\(6,\\): the two traces differ"):
        out = f(ember.ones(3, 3))
    assert out.tolist()[0] == [2.0, 2.0, 2.0]


def test_mean_and_unbiased_variance_divisors_are_counts_of_the_batch():
    """mean divides by B (or B * T), an unbiased variance by B - 1, Python ints baked as constants, and
    their gradients multiply by 1/B folded into a fill: 'a constant that differs', so every new size
    retraced. As counts of the batch (k*B + c, or 1/(k*B + c)) they are filled in for each size, bit for
    bit eager's."""
    def make_step(lin):
        opt = ember.optim.SGD(lin.parameters(), lr=0.1)

        def step(x, y):
            opt.zero_grad()
            out = lin(x)
            loss = ember.nn.functional.mse_loss(out, y) + out.var(0).sum() + out.std()
            loss.backward()
            opt.step()
            return loss
        return step
    ember.manual_seed(0)
    lin, ref = ember.nn.Linear(3, 2), ember.nn.Linear(3, 2)
    ref.load_state_dict(lin.state_dict())
    step, ref_step = make_step(lin), make_step(ref)
    f = ember.compile(step, dynamic=True)
    rng = np.random.default_rng(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for n in (4, 4, 6, 9, 5, 12):
            x = ember.tensor(rng.standard_normal((n, 3)).astype(np.float32))
            y = ember.tensor(rng.standard_normal((n, 2)).astype(np.float32))
            assert f(x, y).item() == ref_step(x, y).item()
    assert f.cache_info().traces == 3   # the first call, the steady state (grads exist), a second size
    for p0, p1 in zip(ref.parameters(), lin.parameters()):
        np.testing.assert_array_equal(p1.detach().numpy(), p0.detach().numpy())


def test_a_constant_not_linear_in_the_batch_retraces():
    f = ember.compile(lambda x: x * (x.shape[0] ** 2), dynamic=True)
    f(ember.ones(4, 2)); f(ember.ones(6, 2))
    with pytest.warns(UserWarning, match="the constant %\\d+ .* differs between the traces"):
        assert f(ember.ones(3, 2)).tolist()[0] == [9.0, 9.0]


@pytest.mark.parametrize("a, b, want", [
    ([4.0], [6.0], (1, 0, False)),              # B
    ([3.0], [5.0], (1, -1, False)),             # B - 1
    ([9.0], [13.0], (2, 1, False)),             # 2B + 1
    ([0.25], [1 / 6], (1, 0, True)),            # 1 / B, rounded once in float32
    ([1 / 7], [1 / 11], (2, -1, True)),         # 1 / (2B - 1)
    ([6.0, 6.0], [9.0, 9.0], (3 / 2, 0, False)),  # a fill: 1.5 B
])
def test_count_takes_batch_counts_and_their_reciprocals(a, b, want):
    from fractions import Fraction
    from ember.jit.dynamic import _count
    c = _count(np.array(a, np.float32), np.array(b, np.float32), 4, 6)
    assert (c.k, c.c, c.recip) == (Fraction(want[0]), want[1], want[2])
    v = c.value(10, np.dtype(np.float32))
    n = np.float32(want[0] * 10 + want[1])
    assert v == (np.float32(1) / n if want[2] else n)


@pytest.mark.parametrize("a, b, dtype", [
    ([4.0], [8.0], np.float32),       # 4 at batch 4, 8 at batch 6: B + 0 and 2B - 4 fit nothing
    ([6.0], [8.0], np.float32),       # B + 2: only c in -1, 0, 1
    ([0.3], [0.2], np.float32),       # not integers, not reciprocals of integers
    ([4.0], [1 / 6], np.float32),     # a count at one size, a reciprocal at the other
    ([4.0, 5.0], [6.0, 6.0], np.float32),   # not a fill at the first size
    ([4.0, 4.0], [6.0, 7.0], np.float32),   # nor at the second
    ([1.0], [1.0], bool),             # booleans are not counts
    ([], [], np.float32),
])
def test_count_refuses_what_is_not_a_batch_count(a, b, dtype):
    from ember.jit.dynamic import _count
    assert _count(np.array(a, dtype), np.array(b, dtype), 4, 6) is None


def test_count_refuses_constants_of_different_dtypes():
    from ember.jit.dynamic import _count
    assert _count(np.array([4.0], np.float32), np.array([6.0], np.float64), 4, 6) is None
    assert _count(np.array([4], np.int64), np.array([6], np.int64), 4, 6).k == 1


def test_several_draws_of_dynamic_size_follow_the_eager_stream():
    # each draw's counter offset is recomputed from the new sizes; with one draw only the first offset
    # (0) was ever checked, not the running sum that places the second and third
    def fn(x):
        a = ember.nn.functional.dropout(x, 0.5)
        b = ember.rand(x.shape[0], 5)                  # uniform, another block size
        c = ember.nn.functional.dropout(x * 2, 0.3)
        return a.sum(1) + b.sum(1) + c.sum(1)
    f = ember.compile(fn, dynamic=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for n in (4, 6, 9, 5, 13):
            x = ember.ones(n, 7)
            ember.manual_seed(n)
            got = f(x)
            after = ember.rand(1).item()          # the generator advanced by the graph's draws
            ember.manual_seed(n)
            want = fn(x)
            assert ember.rand(1).item() == after
            np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert f.cache_info().traces == 2


@pytest.mark.parametrize("fn", [
    lambda x: x[: x.shape[0] // 2] * 2,                                    # slice stop B / 2
    lambda x: x[x.shape[0] // 2: x.shape[0]] + 1,                          # start and stop
    lambda x: x.split([x.shape[0] // 2, x.shape[0] // 2])[1] * 3,           # split sizes
])
def test_sizes_in_slices_and_lists_follow_the_batch(fn):
    f = ember.compile(fn, dynamic=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for n in (4, 6, 8, 10):
            x = ember.arange(n * 3.0).reshape(n, 3)
            np.testing.assert_array_equal(f(x).numpy(), fn(x).numpy())
    assert f.cache_info().traces == 2
