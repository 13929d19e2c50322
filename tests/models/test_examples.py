"""The zoo's examples run: a quick smoke run of each, and (slow) the full Fashion-MNIST CNN to >= 91%."""
import importlib.util
import pathlib

import pytest

EXAMPLES = pathlib.Path(__file__).parent.parent.parent / "examples"


def _load(name):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def fashion_mnist():
    from ember.datasets import DatasetNotFoundError, FashionMNIST
    try:
        FashionMNIST("~/data", train=False)
    except DatasetNotFoundError:
        pytest.skip("Fashion-MNIST is not installed (apt-get install dataset-fashion-mnist)")


def test_fashion_mnist_cnn_smoke(tmp_path, fashion_mnist):
    pytest.importorskip("PIL", reason="save_image needs Pillow (ember[plot])")
    acc, times = _load("fashion_mnist_cnn").main(["--epochs", "1", "--limit", "128", "--test-limit", "100",
                                                  "--batch", "64", "--out", str(tmp_path)])
    assert 0.0 <= acc <= 1.0 and len(times) == 1
    assert (tmp_path / "test_inputs.png").stat().st_size > 0 and (tmp_path / "misclassified.png").stat().st_size > 0


@pytest.mark.slow
def test_transfer_example_smoke(fashion_mnist):
    result = _load("transfer_fashion_mnist").main(
        ["--source-train", "64", "--source-epochs", "1", "--target-train", "32", "--target-epochs", "1",
         "--test", "40", "--batch", "32", "--no-scratch"])
    assert set(result) == {"source", "before", "after"}


@pytest.mark.slow
def test_fashion_mnist_cnn_reaches_91_percent_in_5_epochs(tmp_path, fashion_mnist):
    acc, times = _load("fashion_mnist_cnn").main(["--epochs", "5", "--out", str(tmp_path)])
    assert acc >= 0.91
