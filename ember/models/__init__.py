"""`ember.models`: torchvision's image classifiers and nanoGPT's GPT, with their names, constructor
arguments and parameter names, so their state dicts (saved as safetensors) load as they are.

>>> model = ember.models.get_model("resnet18", num_classes=10)
>>> model(ember.randn(2, 3, 32, 32)).shape
(2, 10)
>>> "vgg16_bn" in ember.models.list_models()
True

`weights=` takes None, a weights entry (`ResNet18_Weights.IMAGENET1K_V1`, or the string "DEFAULT";
downloaded from torchvision's URL and checked against its checksum) or the path of a local safetensors
(or torch .pth) file. See docs/models.md.
"""
from __future__ import annotations

from typing import Callable, Dict, List

from ember.models._weights import Weights, WeightsEnum, load_weights, read_state_dict, weights_cache_dir
from ember.models.alexnet import AlexNet, AlexNet_Weights, alexnet
from ember.models.gpt import GPT, GPTConfig, gpt
from ember.models.lenet import LeNet5, lenet5
from ember.models.mobilenetv2 import MobileNet_V2_Weights, MobileNetV2, mobilenet_v2
from ember.models.resnet import (BasicBlock, Bottleneck, CifarResNet, ResNet, ResNet18_Weights, ResNet34_Weights,
                                 ResNet50_Weights, ResNet101_Weights, resnet18, resnet20, resnet34, resnet50,
                                 resnet56, resnet101)
from ember.models.transfer import freeze, get_head, param_groups, replace_head, unfreeze
from ember.models.vgg import (VGG, VGG11_BN_Weights, VGG11_Weights, VGG13_BN_Weights, VGG13_Weights,
                              VGG16_BN_Weights, VGG16_Weights, VGG19_BN_Weights, VGG19_Weights, vgg11, vgg11_bn,
                              vgg13, vgg13_bn, vgg16, vgg16_bn, vgg19, vgg19_bn)

_BUILDERS: Dict[str, Callable] = {
    "lenet5": lenet5, "alexnet": alexnet,
    "vgg11": vgg11, "vgg11_bn": vgg11_bn, "vgg13": vgg13, "vgg13_bn": vgg13_bn,
    "vgg16": vgg16, "vgg16_bn": vgg16_bn, "vgg19": vgg19, "vgg19_bn": vgg19_bn,
    "resnet18": resnet18, "resnet34": resnet34, "resnet50": resnet50, "resnet101": resnet101,
    "resnet20": resnet20, "resnet56": resnet56, "mobilenet_v2": mobilenet_v2, "gpt": gpt,
}

_WEIGHTS = {"alexnet": AlexNet_Weights, "vgg11": VGG11_Weights, "vgg11_bn": VGG11_BN_Weights,
            "vgg13": VGG13_Weights, "vgg13_bn": VGG13_BN_Weights, "vgg16": VGG16_Weights,
            "vgg16_bn": VGG16_BN_Weights, "vgg19": VGG19_Weights, "vgg19_bn": VGG19_BN_Weights,
            "resnet18": ResNet18_Weights, "resnet34": ResNet34_Weights, "resnet50": ResNet50_Weights,
            "resnet101": ResNet101_Weights, "mobilenet_v2": MobileNet_V2_Weights}


def list_models() -> List[str]:
    """The names `get_model` accepts, sorted."""
    return sorted(_BUILDERS)


def get_model(name: str, **config):
    """Build a model by name with its constructor's keyword arguments (`weights=`, `num_classes=`, ...)."""
    try:
        builder = _BUILDERS[name.lower()]
    except KeyError:
        raise ValueError(f"get_model: unknown model {name!r}; available: {', '.join(list_models())}") from None
    return builder(**config)


def get_model_weights(name: str) -> type:
    """The weights table of a model (`get_model_weights("resnet18") is ResNet18_Weights`)."""
    if name.lower() not in _WEIGHTS:
        raise ValueError(f"get_model_weights: no pretrained weights are published for {name!r}; models with "
                         f"weights: {', '.join(sorted(_WEIGHTS))}")
    return _WEIGHTS[name.lower()]


__all__ = ["list_models", "get_model", "get_model_weights", "Weights", "WeightsEnum", "load_weights",
           "read_state_dict", "weights_cache_dir", "freeze", "unfreeze", "get_head", "replace_head",
           "param_groups", "LeNet5", "lenet5", "AlexNet", "alexnet", "AlexNet_Weights", "VGG", "vgg11", "vgg11_bn",
           "vgg13", "vgg13_bn", "vgg16", "vgg16_bn", "vgg19", "vgg19_bn", "VGG11_Weights", "VGG11_BN_Weights",
           "VGG13_Weights", "VGG13_BN_Weights", "VGG16_Weights", "VGG16_BN_Weights", "VGG19_Weights",
           "VGG19_BN_Weights", "ResNet", "BasicBlock", "Bottleneck", "resnet18", "resnet34", "resnet50",
           "resnet101", "ResNet18_Weights", "ResNet34_Weights", "ResNet50_Weights", "ResNet101_Weights",
           "CifarResNet", "resnet20", "resnet56", "MobileNetV2", "mobilenet_v2", "MobileNet_V2_Weights",
           "GPT", "GPTConfig", "gpt"]
