"""Random numbers: ember.manual_seed, ember.Generator and the sampling functions.

A Generator is a seed and an offset. Each draw sends [seed, offset] to the target device as a small
int64 tensor and runs the counter-based Philox4x32-10 primitive there (`ember/ops/random_prims.py`),
then advances the offset by the number of counters the draw used (torch's Philox offset). So:

- a seed gives the same numbers on every device (NumPy and CuPy run the same integer arithmetic);
- the numbers are made where they are used: nothing is drawn on the host and copied;
- the contract between draws: a draw at offset o uses the counters (j, o) for its blocks j = 0 .. b-1,
  b = ceil(n w / 4) for n elements of w 32-bit words each (w = 1 for float32 uniforms and normals, bits,
  integers in a range up to 2**32, bernoulli; 2 for float64 and 64-bit values; 1/2 for dropout's masks),
  and leaves the offset at o + b. Consecutive draws therefore share no counter, hence are independent,
  and a draw is a function of (seed, offset, distribution, shape, dtype) only: restoring a state replays
  exactly the draws made after it. (Draws of n then m are not the halves of one draw of n + m: the
  second one's blocks are (j, o + b), not (b + j, o).)

The state is (seed, offset): `get_state` returns it as 16 bytes (a uint8 tensor, as torch's CUDA
generators do) and `set_state` takes it back. Host-side samplers (the data pipeline's augmentations)
take a NumPy generator derived from the state with `Generator.numpy_generator()`.
"""
from __future__ import annotations

import contextlib
import math
import threading

import numpy as np

from . import _dtype
from .backends import host
from ._tensor import Tensor
from .ops import random_prims as P

__all__ = ["Generator", "manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state",
           "default_generator", "rand", "randn", "randint", "randperm", "normal", "bernoulli",
           "multinomial", "rand_like", "randn_like", "randint_like", "poisson", "binomial", "fork_rng"]

_U64 = (1 << 64) - 1


def _fresh_seed() -> int:
    return int(np.random.SeedSequence().entropy % (2 ** 63))


class Generator:
    """A source of random numbers with its own state (torch.Generator): a seed and a counter offset.

    >>> g = ember.Generator().manual_seed(0)
    >>> ember.rand(2, generator=g).shape
    (2,)
    """

    def __init__(self, device="cpu"):
        self.device = device
        self._seed = _fresh_seed()
        self._offset = 0
        self._host = None        # the NumPy generator numpy_generator() handed out, while still valid
        self._handouts = 0       # numpy_generator() calls (ember.compile: host draws it cannot replay)
        self._lock = threading.Lock()   # two threads drawing at once must not get the same offset

    def manual_seed(self, seed: int) -> "Generator":
        self._seed = int(seed) & _U64    # torch keeps the seed's 64 bits: manual_seed(-1) -> 2**64 - 1
        self._offset = 0
        self._host = None
        return self

    def seed(self) -> int:
        s = _fresh_seed()
        self.manual_seed(s)
        return s

    def initial_seed(self) -> int:
        return self._seed

    def get_state(self) -> Tensor:
        """The state as a uint8 tensor of 16 bytes: seed and offset, little-endian 64-bit words."""
        from .ops.creation import _from_host
        self._host = None        # a host stream handed out before this point is not part of the state
        words = host.uint64_words(self._seed, self._offset)
        return _from_host(words.view(np.uint8).copy(), None)

    def set_state(self, state) -> "Generator":
        arr = host.asarray(state.detach().cpu()._data if isinstance(state, Tensor) else state)
        if arr.dtype != np.uint8 or arr.shape != (16,):
            raise TypeError(f"Generator.set_state: expected the 16-byte uint8 tensor get_state returns, got "
                            f"{getattr(state, 'dtype', type(state).__name__)} of shape {tuple(arr.shape)}")
        seed, offset = (int(v) for v in arr.view("<u8"))
        self._seed, self._offset, self._host = seed, offset, None
        return self

    def numpy_generator(self) -> np.random.Generator:
        """A NumPy generator for samplers that run on the host on purpose (data augmentation).

        It is seeded from (seed, offset) and the offset advances by one counter, so it is reproducible
        under manual_seed and independent of the device draws. The same NumPy generator is returned
        again (its stream continuing) until a device draw, manual_seed, get_state or set_state
        happens; the next call after one of those derives a new one.

        >>> ember.manual_seed(0); u = ember.default_generator.numpy_generator().random()
        """
        self._handouts += 1
        if self._host is None:
            ss = np.random.SeedSequence([self._seed, self._offset, 0x686F7374])   # 'host'
            self._host = np.random.Generator(np.random.PCG64(ss))
            self._offset += 1
        return self._host

    def _state_on(self, device, nblocks: int) -> Tensor:
        """[seed, offset] as an int64 tensor on `device` for the next draw, and advance past its counters."""
        from .ops.creation import _from_host
        with self._lock:
            offset = self._offset
            state = host.uint64_words(self._seed, offset).view(np.int64)
            self._offset = (offset + nblocks) & _U64
            self._host = None
        t = _from_host(state, device)
        if DRAW_HOOKS:   # the compiler's tracer: this state tensor is an RNG leaf (ember/jit/capture.py)
            for hook in DRAW_HOOKS:
                hook(self, t, offset)
        return t


# Called as hook(generator, state_tensor, offset) for every device draw (see Generator._state_on).
DRAW_HOOKS: list = []

default_generator = Generator()


def manual_seed(seed: int) -> Generator:
    """Seed the default generator (and so every random op that gets no generator)."""
    return default_generator.manual_seed(seed)


def seed() -> int:
    return default_generator.seed()


def initial_seed() -> int:
    return default_generator.initial_seed()


def get_rng_state() -> Tensor:
    return default_generator.get_state()


def set_rng_state(state) -> None:
    default_generator.set_state(state)


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices", device_type="cuda"):
    """torch.random.fork_rng: the default generator's state is restored on leaving the block, so draws
    inside it do not change the numbers drawn after. Ember's one default generator serves every device,
    so `devices` and `device_type` select nothing more.

    >>> ember.manual_seed(0); a = ember.rand(2)
    >>> ember.manual_seed(0)
    >>> with ember.random.fork_rng():
    ...     _ = ember.rand(5)
    >>> bool((ember.rand(2) == a).all())
    True
    """
    if not enabled:
        yield
        return
    state = default_generator.get_state()
    try:
        yield
    finally:
        default_generator.set_state(state)


def _draw(dist, shape, np_dtype, device, generator, prob=None, **params) -> Tensor:
    """Run the Random primitive on `device` with the next counters of `generator`."""
    from .ops.creation import _resolve_device
    g = generator if generator is not None else default_generator
    dev = _resolve_device(device)
    shape = tuple(shape)
    if dev.type == "meta":   # no values to draw
        from .ops.creation import empty
        return empty(*shape, dtype=_dtype.to_dtype(np.dtype(np_dtype)), device=dev)
    nblocks = P.blocks(dist, np_dtype, math.prod(shape), params.get("words", 1), params.get("span", 0),
                       params.get("bits", 32))
    state = g._state_on(dev, nblocks)
    inputs = (state,) if prob is None else (state, prob)
    return P.Random.apply(*inputs, dist=dist, shape=shape, dtype=np.dtype(np_dtype), **params)


def _float_dtype(dtype, op):
    dt = _dtype.to_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()
    if not dt.is_floating_point:
        raise RuntimeError(f"{op}: expects a floating point dtype, got {dt.name}")
    return dt


_UNSET = object()   # rand/randn's size= left out (torch's size=None is a TypeError)


def _size(size, kw=_UNSET, op=None):
    from .ops import creation
    return creation._size(size, creation._NO_SIZE if kw is _UNSET else kw, op) if op else creation._size(size)


def rand(*shape, size=_UNSET, generator=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Uniform samples from [0, 1), made on `device`: `rand(2, 3)`, `rand((2, 3))` or `rand(size=(2, 3))`."""
    t = _draw("uniform", _size(shape, size, "rand"), _float_dtype(dtype, "rand").np, device, generator)
    return t.requires_grad_(True) if requires_grad else t


def randn(*shape, size=_UNSET, generator=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Standard normal samples (Box-Muller), made on `device`."""
    t = _draw("normal", _size(shape, size, "randn"), _float_dtype(dtype, "randn").np, device, generator)
    return t.requires_grad_(True) if requires_grad else t


def _integers(low, high, shape, device, generator) -> Tensor:
    """int64 values uniformly from [low, high) (high - low up to 2**64)."""
    return _draw("integers", shape, np.int64, device, generator, low=int(low), span=int(high) - int(low))


def randint(low=0, high=None, size=None, *, generator=None, dtype=None, device=None) -> Tensor:
    """Integers uniformly from [low, high); `randint(high, size)` also works, as in torch."""
    if size is None:
        low, high, size = 0, low, high
    if high is None:
        low, high = 0, low
    if low >= high:
        raise ValueError(f"randint: expects 'low' < 'high', got low={low}, high={high}")
    t = _integers(low, high, _size((size,) if isinstance(size, int) else (tuple(size),)), device, generator)
    return t if dtype is None or _dtype.to_dtype(dtype) is _dtype.int64 else t.to(dtype)


def randperm(n, *, generator=None, dtype=None, device=None) -> Tensor:
    """A random permutation of 0..n-1: the order of n random 64-bit keys, sorted on `device`."""
    t = _draw("permutation", (int(n),), np.int64, device, generator)
    return t if dtype is None or _dtype.to_dtype(dtype) is _dtype.int64 else t.to(dtype)


def normal(mean=0.0, std=1.0, size=None, *, generator=None, dtype=None, device=None) -> Tensor:
    if isinstance(mean, Tensor) or isinstance(std, Tensor):
        shape = np.broadcast_shapes(*(t.shape for t in (mean, std) if isinstance(t, Tensor)))
        ref = mean if isinstance(mean, Tensor) else std
        z = randn(*shape, generator=generator, dtype=ref.dtype, device=ref.device)
        return z * std + mean
    return randn(*_size(tuple(size)), generator=generator, dtype=dtype, device=device) * std + mean


def bernoulli(input, p=None, *, generator=None) -> Tensor:
    """0/1 samples in input's dtype: with probabilities `input`, or with the scalar `p` for input's shape."""
    if p is None or isinstance(p, Tensor):
        probs = (input if p is None else p).detach()
        if tuple(probs.shape) != tuple(input.shape):
            probs = probs.expand(*input.shape)
        return _draw("bernoulli", input.shape, input.dtype.np, input.device, generator, prob=probs)
    return _bernoulli_scalar(input.shape, float(p), input.dtype.np, input.device, generator)


def _bernoulli_scalar(shape, p, np_dtype, device, generator=None, bits=32, value=1.0) -> Tensor:
    """A mask of `shape` in `np_dtype`: `value` (True for bool) with probability p, else 0.

    bits=16 (dropout's masks) resolves p to 2**-16 and costs half the random words."""
    threshold = min(max(int(round(p * 2.0 ** bits)), 0), 1 << bits)
    return _draw("bernoulli", shape, np_dtype, device, generator, threshold=threshold, bits=bits,
                 value=float(value))


def poisson(input, generator=None) -> Tensor:
    # Host-side on purpose: Poisson sampling is a rejection loop (a data-dependent number of draws),
    # which the fixed-counter primitive does not do. Drawn from the generator's NumPy stream.
    from .ops.creation import _from_host
    g = generator if generator is not None else default_generator
    rates = host.asarray(input.detach().cpu()._data, dtype=np.float64)
    out = g.numpy_generator().poisson(rates).astype(input.dtype.np)
    g._host = None     # one NumPy stream per call: the next draw starts from a fresh offset
    return _from_host(out, input.device)


def binomial(count, prob, generator=None) -> Tensor:
    """Successes in `count` trials of probability `prob` each (elementwise, broadcast), in count's dtype.
    Host-side like poisson (NumPy's binomial sampler).

    >>> ember.binomial(ember.tensor([5.0, 10.0]), ember.tensor([0.0, 1.0]))
    tensor([ 0., 10.])
    """
    from ._errors import op_error
    from .ops.creation import _from_host
    if not count.dtype.is_floating_point or not prob.dtype.is_floating_point:
        bad = count if not count.dtype.is_floating_point else prob
        raise op_error("binomial", f"only supports floating-point dtypes for count and prob, got "
                                   f"{bad.dtype.name}", TypeError)
    g = generator if generator is not None else default_generator
    n = host.asarray(count.detach().cpu()._data, dtype=np.float64)
    p = host.clip(host.asarray(prob.detach().cpu()._data, dtype=np.float64), 0.0, 1.0)
    out = g.numpy_generator().binomial(n.astype(np.int64), p).astype(count.dtype.np)
    g._host = None     # one NumPy stream per call, as poisson
    return _from_host(out, count.device)


def multinomial(input, num_samples, replacement=False, *, generator=None) -> Tensor:
    """Sample indices by the (unnormalised) weights in each row of `input`, on input's device.

    An exponential race: category i of a row gets the key E_i / w_i with E_i ~ Exp(1); the smallest key
    wins with probability w_i / sum(w). With replacement each sample runs its own race; without, the
    first `num_samples` of one race in key order are a sample without replacement (Gumbel top-k).
    """
    from .ops import math as M
    w = input.detach().to(_dtype.float64)
    if bool(((w < 0) | ~M.isfinite(w)).any()):
        raise RuntimeError("multinomial: probability tensor contains either inf, nan or element < 0")
    if bool((w.sum(-1) <= 0).any()):
        raise RuntimeError("multinomial: invalid probability distribution (sum of probabilities <= 0)")
    if not replacement and bool(((w > 0).sum(-1) < num_samples).any()):
        raise RuntimeError(f"multinomial: cannot sample n_sample={num_samples} > prob_dist.size(-1) "
                           f"non-zero categories without replacement")
    k = w.shape[-1]
    positive = w > 0
    safe_w = M.where(positive, w, w * 0 + 1)
    if replacement:
        shape = tuple(w.shape[:-1]) + (num_samples, k)
        e = -M.log1p(-rand(*shape, generator=generator, dtype=_dtype.float64, device=w.device))
        keys = M.where(positive.unsqueeze(-2), e / safe_w.unsqueeze(-2), math.inf)
        return keys.argmin(-1)
    e = -M.log1p(-rand(*w.shape, generator=generator, dtype=_dtype.float64, device=w.device))
    keys = M.where(positive, e / safe_w, math.inf)
    return keys.argsort(-1)[..., :num_samples]


def rand_like(input, *, dtype=None, device=None) -> Tensor:
    return rand(*input.shape, dtype=dtype or input.dtype, device=device or input.device)


def randn_like(input, *, dtype=None, device=None) -> Tensor:
    return randn(*input.shape, dtype=dtype or input.dtype, device=device or input.device)


def randint_like(input, low=0, high=None, *, dtype=None, device=None) -> Tensor:
    return randint(low, high, input.shape, dtype=dtype or input.dtype, device=device or input.device)
