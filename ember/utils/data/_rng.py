# The few random draws the data pipeline needs, in one place, on top of ember's RNG.
# Samplers follow torch's recipe: with no generator, draw a fresh seed from the global RNG each epoch.
import ember


def draw_seed(generator=None) -> int:
    """A 63-bit seed drawn from ``generator`` (or ember's global RNG): ``torch.empty((), dtype=int64).random_()``."""
    t = ember.empty((), dtype=ember.int64).random_(0, 2 ** 63 - 1, generator=generator)  # torch's int64 range
    return int(t.item())


def new_generator(seed: int):
    g = ember.Generator()
    g.manual_seed(seed)
    return g


def randperm(n: int, generator) -> list:
    return ember.randperm(n, generator=generator).tolist()


def randint(high: int, size: int, generator) -> list:
    return ember.randint(0, high, (size,), generator=generator).tolist()


def multinomial(weights, num_samples: int, replacement: bool, generator) -> list:
    return ember.multinomial(weights, num_samples, replacement, generator=generator).tolist()
