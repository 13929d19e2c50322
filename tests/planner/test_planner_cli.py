"""`ember summary` (ember/planner/cli.py): the same table and report as ember.summary."""
import importlib.util

import pytest

import ember
import ember.cli
import planner_models as M


def test_cli_prints_what_summary_prints(capsys):
    ember.summary(M.vgg16(device="meta"), (3, 224, 224), batch_size=128, device="GTX 1080",
                  optimizer="sgd-momentum", name="planner_models:vgg16")
    expected = capsys.readouterr().out
    rc = ember.cli.main(["summary", "planner_models:vgg16", "--input", "3,224,224", "--batch", "128",
                         "--optimizer", "sgd-momentum", "--device", "GTX 1080"])
    out = capsys.readouterr().out
    assert rc == 0 and out == expected
    assert "138,357,544" in out and "15,237,608" in out and "17,263,601,120 bytes (16.08 GiB)" in out
    assert "GTX 1080 (8.00 GiB): does NOT fit; max batch" in out


def test_cli_takes_a_byte_count_and_token_inputs(capsys):
    rc = ember.cli.main(["summary", "planner_models:GPT", "--input", "64", "--input-dtype", "int64",
                         "--batch", "4", "--optimizer", "adam", "--device", "2_000_000_000"])
    out = capsys.readouterr().out
    assert rc == 0 and "2,000,000,000 bytes" in out and "fits" in out


def test_cli_errors_are_clear(capsys):
    with pytest.raises(SystemExit, match="unknown device 'GTX 1070'; known devices: i7-7700k, GTX 1080"):
        ember.cli.main(["summary", "planner_models:keras_mlp", "--input", "784", "--device", "GTX 1070"])
    with pytest.raises(SystemExit, match="has no 'nope'"):
        ember.cli.main(["summary", "planner_models:nope", "--input", "784"])
    with pytest.raises(SystemExit, match="--input must be integers"):
        ember.cli.main(["summary", "planner_models:keras_mlp", "--input", "a,b"])


@pytest.mark.skipif(importlib.util.find_spec("ember.models") is not None, reason="the model zoo is installed")
def test_cli_names_need_the_model_zoo():
    with pytest.raises(SystemExit, match=r"model zoo \(ember.models\) is not available.*module:callable"):
        ember.cli.main(["summary", "vgg16", "--input", "3,224,224"])


def test_cli_vgg16_from_the_model_zoo(capsys):
    pytest.importorskip("ember.models", reason="the model zoo (ember.models) is not merged yet")
    rc = ember.cli.main(["summary", "vgg16", "--input", "3,224,224", "--batch", "128",
                         "--optimizer", "sgd-momentum", "--device", "GTX 1080"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "Total params: 138,357,544 (527.79 MiB)" in out
    assert "Activation values per sample: 15,237,608 (58.13 MiB" in out
    assert "Mult-adds per sample: 15,470,264,320" in out
    assert "17,263,601,120 bytes (16.08 GiB)" in out and "does NOT fit" in out
