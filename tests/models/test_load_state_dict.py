"""load_state_dict on a zoo model: every missing, unexpected or wrong-shaped key is named, and a failed
load changes nothing (the checks run before any copy)."""
import numpy as np
import pytest

import ember


def _snapshot(model):
    return {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}


def _bad_state(model):
    sd = {k: v.detach().clone() + 1 for k, v in model.state_dict().items()
          if v.dtype.is_floating_point}                       # good values everywhere else: a partial copy shows
    sd.update({k: v.detach().clone() for k, v in model.state_dict().items() if not v.dtype.is_floating_point})
    del sd["fc.bias"], sd["layer2.0.downsample.1.running_var"]              # missing: a parameter and a buffer
    sd["head.weight"] = ember.zeros(3)                                        # unexpected
    sd["layer1.0.bn1.num_batches_tracked_typo"] = ember.zeros(())
    sd["conv1.weight"] = ember.zeros(16, 3, 5, 5)                             # wrong shapes
    sd["layer3.2.bn2.running_mean"] = ember.zeros(65)
    return sd


def test_every_offending_key_is_listed_and_nothing_changes():
    model = ember.models.resnet20()
    before = _snapshot(model)
    with pytest.raises(RuntimeError) as info:
        model.load_state_dict(_bad_state(model))
    msg = str(info.value)
    for key in ("fc.bias", "layer2.0.downsample.1.running_var", "head.weight",
                "layer1.0.bn1.num_batches_tracked_typo", "conv1.weight", "layer3.2.bn2.running_mean"):
        assert f"{key}" in msg, key
    assert "Missing key(s)" in msg and "Unexpected key(s)" in msg and "size mismatch for conv1.weight" in msg
    assert "(16, 3, 5, 5)" in msg and "(16, 3, 3, 3)" in msg
    after = _snapshot(model)
    for k in before:
        np.testing.assert_array_equal(after[k], before[k], err_msg=k)


def test_non_strict_still_refuses_wrong_shapes_and_reports_keys():
    model = ember.models.resnet20()
    before = _snapshot(model)
    with pytest.raises(RuntimeError, match="size mismatch for conv1.weight") as info:
        model.load_state_dict(_bad_state(model), strict=False)
    assert "layer3.2.bn2.running_mean" in str(info.value)
    for k, v in _snapshot(model).items():
        np.testing.assert_array_equal(v, before[k], err_msg=k)

    sd = _bad_state(model)
    sd["conv1.weight"] = model.conv1.weight.detach().clone()
    sd["layer3.2.bn2.running_mean"] = ember.zeros(64)
    result = model.load_state_dict(sd, strict=False)
    assert sorted(result.missing_keys) == ["fc.bias", "layer2.0.downsample.1.running_var"]
    assert sorted(result.unexpected_keys) == ["head.weight", "layer1.0.bn1.num_batches_tracked_typo"]
    np.testing.assert_array_equal(model.fc.weight.detach().numpy(), before["fc.weight"] + 1)   # the rest loaded
    np.testing.assert_array_equal(model.fc.bias.detach().numpy(), before["fc.bias"])
