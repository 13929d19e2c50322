"""`ember summary` (ember/planner/cli.py): the same table and report as ember.summary."""
import importlib.util
import sys
import types

import pytest

import ember
import ember.cli
import planner_models as M
from ember.planner import cli


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


def test_cli_options_reach_summary(capsys):
    ember.summary(M.keras_mlp(device="meta"), (784,), batch_size=4, dtype="float64", device="A100 80GB",
                  optimizer="adam", name="planner_models:keras_mlp", efficiency=0.25)
    expected = capsys.readouterr().out
    rc = ember.cli.main(["summary", "planner_models:keras_mlp", "--input", "784", "--batch", "4", "--dtype", "float64",
                         "--device", "A100 80GB", "--optimizer", "adam", "--efficiency", "0.25"])
    assert rc == 0 and capsys.readouterr().out == expected
    assert "float64" in expected and "adam" in expected


def test_cli_defaults_are_summarys(capsys):
    ember.summary(M.tiny(device="meta"), (4,), device=None, name="planner_models:tiny")
    expected = capsys.readouterr().out
    assert ember.cli.main(["summary", "planner_models:tiny", "--input", "4"]) == 0
    assert capsys.readouterr().out == expected and "batch 1" in expected and "sgd-momentum" in expected


def test_cli_input_and_device_forms(capsys):
    assert cli._parse_input("3x32x32") == cli._parse_input("3, 32, 32,") == (3, 32, 32)
    assert cli._parse_input("1") == (1,)
    for bad in ("0,4", "-1", ",", ""):
        with pytest.raises(SystemExit, match=f"--input must be positive sizes, got '{bad}'"):
            cli._parse_input(bad)
    assert cli._parse_device("8,000,000,000") == cli._parse_device("8_000_000_000") == 8 * 10 ** 9
    assert cli._parse_device("GTX 1080") == "GTX 1080" and cli._parse_device(None) is None
    with pytest.raises(SystemExit):                   # --input is required: argparse says so
        ember.cli.main(["summary", "planner_models:tiny"])
    assert "the following arguments are required: --input" in capsys.readouterr().err


def test_cli_help_describes_every_option(capsys):
    with pytest.raises(SystemExit):
        ember.cli.main(["summary", "--help"])
    out = " " + " ".join(capsys.readouterr().out.split()) + " "
    for text in ("a model zoo name (vgg16, resnet18, ...) or module:callable",
                 "input size without the batch dim, comma-separated: 3,224,224", "batch size (default 1)",
                 "sgd, sgd-momentum, adam, adamw",
                 'a device name ("GTX 1080", "A100 80GB", ...; see ember.planner.DEVICES) or its memory in bytes',
                 "parameter and activation dtype (float32)", "input dtype when it differs (int64 for token ids)",
                 "fraction of the device's peak FLOP/s for the step-time estimate (0.5)"):
        assert f" {text} " in out


def test_cli_module_callable_specs():
    M.CALLS.clear()
    assert cli.resolve_model("planner_models:tiny").weight.is_meta and M.CALLS == ["meta"]
    assert cli.resolve_model("planner_models:Factories.tiny").weight.is_meta
    assert not cli.resolve_model("planner_models:tiny_no_device").weight.is_meta   # no device=: called as is
    for spec, message in (
            ("planner_models:not_a_model", "planner_models:not_a_model returned int, not an ember.nn.Module"),
            ("planner_models:VGG16_CFG", "planner_models:VGG16_CFG is a tuple, not a callable"),
            ("no_such_module_xyz:f", "cannot import module 'no_such_module_xyz' of 'no_such_module_xyz:f': "),
            ("planner_models:Factories.nope", "module 'planner_models' has no 'Factories.nope'"),
            ("planner_models:tiny:x", "module 'planner_models' has no 'tiny:x'")):
        with pytest.raises(SystemExit, match=f"^ember summary: {message}"):
            cli.resolve_model(spec)


def test_cli_zoo_models_are_built_on_meta(monkeypatch):
    pytest.importorskip("ember.models", reason="the model zoo (ember.models) is not merged yet")
    model = cli.resolve_model("lenet5")
    assert type(model).__name__ == "LeNet5" and all(p.is_meta for p in model.parameters())
    assert ember.get_default_device().type == "cpu"
    ember.set_default_device("meta")                  # the caller's default device comes back
    try:
        cli.resolve_model("lenet5")
        assert ember.get_default_device().type == "meta"
    finally:
        ember.set_default_device(None)
    with pytest.raises(SystemExit, match="^ember summary: get_model: unknown model 'nope'; available: "):
        cli.resolve_model("nope")
    assert ember.get_default_device().type == "cpu"
    monkeypatch.setitem(sys.modules, "ember.models", types.ModuleType("ember.models"))
    with pytest.raises(SystemExit, match=r"^ember summary: ember.models has no get_model\(\); pass module:callable"):
        cli.resolve_model("lenet5")
    monkeypatch.setitem(sys.modules, "ember.models", None)   # import fails
    with pytest.raises(SystemExit, match=r"^ember summary: model 'lenet5': the model zoo \(ember.models\) is not"):
        cli.resolve_model("lenet5")
