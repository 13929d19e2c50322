"""docs/primitives.md (the table of every primitive) is generated from the code and kept current."""
import os

from helpers import assert_generated_is_current

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_primitive_table_is_up_to_date():
    assert_generated_is_current("primitive_table", "docs/primitives.md")


def test_every_primitive_is_in_the_table():
    from ember.autograd.function import Primitive
    import ember.linalg  # noqa: F401  (load every family)
    import ember.ops.optim_prims  # noqa: F401
    with open(os.path.join(ROOT, "docs", "primitives.md")) as f:
        text = f.read()

    def subclasses(c):
        for s in c.__subclasses__():
            yield s
            yield from subclasses(s)
    names = {c.__name__ for c in subclasses(Primitive) if c.__module__.startswith("ember.")}
    missing = sorted(n for n in names if f"| `{n}` |" not in text)
    assert not missing, f"primitives missing from docs/primitives.md (add their module to FAMILIES): {missing}"
