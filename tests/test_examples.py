"""Every script in examples/ runs (a few steps each) and its loss goes down."""
import pathlib
import runpy

import pytest

EXAMPLES = sorted((pathlib.Path(__file__).parent.parent / "examples").glob("[0-9][0-9]_*.py"))


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_runs_and_learns(path, capsys):
    main = runpy.run_path(str(path), run_name="example")["main"]
    losses = main(steps=25)
    assert len(losses) == 25
    assert losses[-1] < losses[0], f"{path.name}: loss did not decrease ({losses[0]} -> {losses[-1]})"


def test_all_nine_examples_present():
    assert len(EXAMPLES) == 9
