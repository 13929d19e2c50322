"""Transfer-learning helpers: freeze up to a layer, replace the head, parameter groups."""
import numpy as np
import pytest

import ember
from ember.models import freeze, get_head, param_groups, replace_head, unfreeze


def _trainable(model):
    return {n for n, p in model.named_parameters() if p.requires_grad}


def test_freeze_until_layer3_of_a_resnet():
    model = ember.models.resnet18(num_classes=4)
    frozen = freeze(model, until="layer3")
    assert frozen == ["conv1", "bn1", "relu", "maxpool", "layer1", "layer2", "layer3"]
    assert {n.split(".")[0] for n in _trainable(model)} == {"layer4", "fc"}
    assert not model.bn1.training and not model.layer3[1].bn2.training and model.layer4[0].bn1.training
    model(ember.randn(2, 3, 32, 32)).sum().backward()
    assert model.conv1.weight.grad is None and model.layer3[0].conv1.weight.grad is None
    assert model.layer4[0].conv1.weight.grad is not None and model.fc.weight.grad is not None


def test_frozen_batch_norm_keeps_its_statistics():
    model = ember.models.resnet20()
    freeze(model, until="layer2")
    before = model.layer2[0].bn1.running_mean.numpy().copy()
    model(ember.randn(4, 3, 16, 16))
    np.testing.assert_array_equal(model.layer2[0].bn1.running_mean.numpy(), before)
    assert not np.array_equal(model.layer3[0].bn1.running_mean.numpy(), np.zeros(64))   # not frozen: updated


def test_freeze_before_a_layer_and_dotted_paths():
    model = ember.models.resnet20()
    assert freeze(model, until="layer3", include=False)[-1] == "layer2"
    assert {n.split(".")[0] for n in _trainable(model)} == {"layer3", "fc"}
    mobile = ember.models.mobilenet_v2(num_classes=3)
    frozen = freeze(mobile, until="features.10")
    assert frozen == [f"features.{i}" for i in range(11)]
    assert {n.split(".")[1] for n in _trainable(mobile)} == {str(i) for i in range(11, 19)} | {"1"}


def test_freeze_everything_but_the_head():
    model = ember.models.vgg11(num_classes=3, init_weights=False)
    freeze(model)
    assert _trainable(model) == {"classifier.6.weight", "classifier.6.bias"}
    unfreeze(model)
    assert len(_trainable(model)) == len(list(model.parameters()))


def test_freeze_names_the_children_when_the_layer_is_unknown():
    with pytest.raises(ValueError, match=r"no submodule 'layer9'.*'layer4', 'avgpool', 'fc'"):
        freeze(ember.models.resnet18(), until="layer9")


@pytest.mark.parametrize("name,head", [("resnet18", "fc"), ("resnet20", "fc"), ("alexnet", "classifier.6"),
                                       ("mobilenet_v2", "classifier.1"), ("lenet5", "classifier.4")])
def test_replace_head(name, head):
    model = ember.models.get_model(name)
    assert get_head(model)[0] == head
    freeze(model)
    new = replace_head(model, 5)
    assert model.get_submodule(head) is new and new.out_features == 5 and new.weight.requires_grad
    size = 28 if name == "lenet5" else 64
    out = model.eval()(ember.randn(1, 1 if name == "lenet5" else 3, size, size))
    assert out.shape == (1, 5)


def test_param_groups_give_the_backbone_a_lower_rate():
    model = ember.models.resnet20(num_classes=3)
    freeze(model, until="layer1")
    backbone, head = param_groups(model, lr=0.1, backbone_lr_mult=0.01, weight_decay=5e-4)
    assert head["lr"] == 0.1 and backbone["lr"] == pytest.approx(0.001)
    assert [id(p) for p in head["params"]] == [id(model.fc.weight), id(model.fc.bias)]
    trainable = [p for p in model.parameters() if p.requires_grad]
    assert len(backbone["params"]) + len(head["params"]) == len(trainable)
    assert backbone["weight_decay"] == head["weight_decay"] == 5e-4
    opt = ember.optim.SGD([backbone, head], lr=0.1, momentum=0.9)
    w_head, w_back = model.fc.weight.detach().numpy().copy(), model.layer3[0].conv1.weight.detach().numpy().copy()
    model.fc.weight.grad = ember.ones_like(model.fc.weight)
    model.layer3[0].conv1.weight.grad = ember.ones_like(model.layer3[0].conv1.weight)
    opt.step()
    step_head = w_head - model.fc.weight.detach().numpy()
    step_back = w_back - model.layer3[0].conv1.weight.detach().numpy()
    np.testing.assert_allclose(step_head, 0.1 * (1 + 5e-4 * w_head), rtol=1e-5)
    np.testing.assert_allclose(step_back, 0.001 * (1 + 5e-4 * w_back), rtol=1e-5)
