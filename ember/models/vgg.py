"""VGG-11/13/16/19 with and without batch norm (Simonyan & Zisserman, 2014), torchvision's layout and names.

>>> model = vgg11(num_classes=10)
>>> model(ember.randn(1, 3, 32, 32)).shape
(1, 10)
"""
from __future__ import annotations

from typing import Dict, List, Union

import ember
from ember import nn
from ember.models._meta import imagenet_meta
from ember.models._weights import Weights, WeightsEnum, load_weights

__all__ = ["VGG", "make_layers", "vgg11", "vgg11_bn", "vgg13", "vgg13_bn", "vgg16", "vgg16_bn", "vgg19", "vgg19_bn"]


class VGG(nn.Module):
    def __init__(self, features: nn.Module, num_classes: int = 1000, init_weights: bool = True,
                 dropout: float = 0.5) -> None:
        super().__init__()
        self.features = features
        self.avgpool = nn.AdaptiveAvgPool2d((7, 7))
        self.classifier = nn.Sequential(
            nn.Linear(512 * 7 * 7, 4096), nn.ReLU(True), nn.Dropout(p=dropout),
            nn.Linear(4096, 4096), nn.ReLU(True), nn.Dropout(p=dropout),
            nn.Linear(4096, num_classes))
        if init_weights:
            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                    if m.bias is not None:
                        nn.init.constant_(m.bias, 0)
                elif isinstance(m, nn.BatchNorm2d):
                    nn.init.constant_(m.weight, 1)
                    nn.init.constant_(m.bias, 0)
                elif isinstance(m, nn.Linear):
                    nn.init.normal_(m.weight, 0, 0.01)
                    nn.init.constant_(m.bias, 0)

    def forward(self, x):
        x = self.avgpool(self.features(x))          # (B, 512, 7, 7)
        return self.classifier(ember.flatten(x, 1))


def make_layers(cfg: List[Union[str, int]], batch_norm: bool = False) -> nn.Sequential:
    """3x3 convolutions (an int: the output channels) and 2x2 max pools ("M"), as torchvision's."""
    layers: List[nn.Module] = []
    in_channels = 3
    for v in cfg:
        if v == "M":
            layers.append(nn.MaxPool2d(kernel_size=2, stride=2))
        else:
            conv = nn.Conv2d(in_channels, v, kernel_size=3, padding=1)
            layers += [conv, nn.BatchNorm2d(v), nn.ReLU(inplace=True)] if batch_norm else [conv, nn.ReLU(inplace=True)]
            in_channels = v
    return nn.Sequential(*layers)


cfgs: Dict[str, List[Union[str, int]]] = {
    "A": [64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    "B": [64, 64, "M", 128, 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    "D": [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"],
    "E": [64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M", 512, 512, 512, 512, "M", 512, 512, 512, 512, "M"],
}


def _meta(acc1, acc5, n):
    return imagenet_meta(acc1, acc5, n, min_size=(32, 32))


class VGG11_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights("https://download.pytorch.org/models/vgg11-8a719046.pth", _meta(69.02, 88.628, 132863336))
    DEFAULT = IMAGENET1K_V1


class VGG11_BN_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights("https://download.pytorch.org/models/vgg11_bn-6002323d.pth",
                            _meta(70.37, 89.81, 132868840))
    DEFAULT = IMAGENET1K_V1


class VGG13_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights("https://download.pytorch.org/models/vgg13-19584684.pth", _meta(69.928, 89.246, 133047848))
    DEFAULT = IMAGENET1K_V1


class VGG13_BN_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights("https://download.pytorch.org/models/vgg13_bn-abd245e5.pth",
                            _meta(71.586, 90.374, 133053736))
    DEFAULT = IMAGENET1K_V1


class VGG16_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights("https://download.pytorch.org/models/vgg16-397923af.pth", _meta(71.592, 90.382, 138357544))
    DEFAULT = IMAGENET1K_V1


class VGG16_BN_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights("https://download.pytorch.org/models/vgg16_bn-6c64b313.pth",
                            _meta(73.36, 91.516, 138365992))
    DEFAULT = IMAGENET1K_V1


class VGG19_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights("https://download.pytorch.org/models/vgg19-dcbb9e9d.pth", _meta(72.376, 90.876, 143667240))
    DEFAULT = IMAGENET1K_V1


class VGG19_BN_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights("https://download.pytorch.org/models/vgg19_bn-c79401a0.pth",
                            _meta(74.218, 91.842, 143678248))
    DEFAULT = IMAGENET1K_V1


def _vgg(cfg: str, batch_norm: bool, weights, table, kwargs) -> VGG:
    if isinstance(weights, str) and weights in table.__members__:
        weights = table.verify(weights)
    if weights is not None:
        kwargs["init_weights"] = False   # torchvision skips the initialisation the weights overwrite
    if isinstance(weights, table):
        kwargs.setdefault("num_classes", len(weights.meta["categories"]))
    model = VGG(make_layers(cfgs[cfg], batch_norm=batch_norm), **kwargs)
    load_weights(model, weights, table)
    return model


def vgg11(*, weights=None, progress: bool = True, **kwargs) -> VGG:
    """VGG-11 (configuration "A"); `weights`: None, `VGG11_Weights.*` / its name, or a local file."""
    return _vgg("A", False, weights, VGG11_Weights, kwargs)


def vgg11_bn(*, weights=None, progress: bool = True, **kwargs) -> VGG:
    """VGG-11 with batch norm; `weights`: None, `VGG11_BN_Weights.*` / its name, or a local file."""
    return _vgg("A", True, weights, VGG11_BN_Weights, kwargs)


def vgg13(*, weights=None, progress: bool = True, **kwargs) -> VGG:
    """VGG-13 (configuration "B"); `weights`: None, `VGG13_Weights.*` / its name, or a local file."""
    return _vgg("B", False, weights, VGG13_Weights, kwargs)


def vgg13_bn(*, weights=None, progress: bool = True, **kwargs) -> VGG:
    """VGG-13 with batch norm; `weights`: None, `VGG13_BN_Weights.*` / its name, or a local file."""
    return _vgg("B", True, weights, VGG13_BN_Weights, kwargs)


def vgg16(*, weights=None, progress: bool = True, **kwargs) -> VGG:
    """VGG-16 (configuration "D", 138,357,544 parameters); `weights`: None, `VGG16_Weights.*`, or a file."""
    return _vgg("D", False, weights, VGG16_Weights, kwargs)


def vgg16_bn(*, weights=None, progress: bool = True, **kwargs) -> VGG:
    """VGG-16 with batch norm; `weights`: None, `VGG16_BN_Weights.*` / its name, or a local file."""
    return _vgg("D", True, weights, VGG16_BN_Weights, kwargs)


def vgg19(*, weights=None, progress: bool = True, **kwargs) -> VGG:
    """VGG-19 (configuration "E"); `weights`: None, `VGG19_Weights.*` / its name, or a local file."""
    return _vgg("E", False, weights, VGG19_Weights, kwargs)


def vgg19_bn(*, weights=None, progress: bool = True, **kwargs) -> VGG:
    """VGG-19 with batch norm; `weights`: None, `VGG19_BN_Weights.*` / its name, or a local file."""
    return _vgg("E", True, weights, VGG19_BN_Weights, kwargs)
