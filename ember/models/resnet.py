"""ResNet-18/34/50/101 (torchvision's `ResNet`, `BasicBlock`, `Bottleneck`) and the CIFAR ResNet-20/56.

Names, constructor arguments, initialisation and parameter/buffer names are torchvision's, so a
torchvision state dict saved as safetensors loads with `model.load_state_dict(ember.load(path))`.

>>> model = resnet18(num_classes=10)
>>> model(ember.randn(2, 3, 64, 64)).shape
(2, 10)
"""
from __future__ import annotations

from typing import Callable, List, Optional, Type, Union

import ember
from ember import nn
from ember.models._meta import imagenet_meta
from ember.models._weights import Weights, WeightsEnum, load_weights

__all__ = ["ResNet", "BasicBlock", "Bottleneck", "resnet18", "resnet34", "resnet50", "resnet101",
           "CifarResNet", "resnet20", "resnet56", "ResNet18_Weights", "ResNet34_Weights", "ResNet50_Weights",
           "ResNet101_Weights"]


def conv3x3(in_planes: int, out_planes: int, stride: int = 1, groups: int = 1, dilation: int = 1) -> nn.Conv2d:
    return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=dilation, groups=groups,
                     bias=False, dilation=dilation)


def conv1x1(in_planes: int, out_planes: int, stride: int = 1) -> nn.Conv2d:
    return nn.Conv2d(in_planes, out_planes, kernel_size=1, stride=stride, bias=False)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes: int, planes: int, stride: int = 1, downsample: Optional[nn.Module] = None,
                 groups: int = 1, base_width: int = 64, dilation: int = 1,
                 norm_layer: Optional[Callable[..., nn.Module]] = None) -> None:
        super().__init__()
        norm_layer = norm_layer or nn.BatchNorm2d
        if groups != 1 or base_width != 64:
            raise ValueError("BasicBlock only supports groups=1 and base_width=64")
        if dilation > 1:
            raise NotImplementedError("Dilation > 1 not supported in BasicBlock")
        self.conv1 = conv3x3(inplanes, planes, stride)
        self.bn1 = norm_layer(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(planes, planes)
        self.bn2 = norm_layer(planes)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class Bottleneck(nn.Module):
    """torchvision's ResNet V1.5 bottleneck: the stride sits on the 3x3 convolution."""
    expansion = 4

    def __init__(self, inplanes: int, planes: int, stride: int = 1, downsample: Optional[nn.Module] = None,
                 groups: int = 1, base_width: int = 64, dilation: int = 1,
                 norm_layer: Optional[Callable[..., nn.Module]] = None) -> None:
        super().__init__()
        norm_layer = norm_layer or nn.BatchNorm2d
        width = int(planes * (base_width / 64.0)) * groups
        self.conv1 = conv1x1(inplanes, width)
        self.bn1 = norm_layer(width)
        self.conv2 = conv3x3(width, width, stride, groups, dilation)
        self.bn2 = norm_layer(width)
        self.conv3 = conv1x1(width, planes * self.expansion)
        self.bn3 = norm_layer(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + identity)


def _init_resnet(model: nn.Module, zero_init_residual: bool) -> None:
    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
        elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
            nn.init.constant_(m.weight, 1)
            nn.init.constant_(m.bias, 0)
    if zero_init_residual:  # each block then starts as the identity (Goyal et al., 2017)
        for m in model.modules():
            if isinstance(m, Bottleneck) and m.bn3.weight is not None:
                nn.init.constant_(m.bn3.weight, 0)
            elif isinstance(m, BasicBlock) and m.bn2.weight is not None:
                nn.init.constant_(m.bn2.weight, 0)


class ResNet(nn.Module):
    def __init__(self, block: Type[Union[BasicBlock, Bottleneck]], layers: List[int], num_classes: int = 1000,
                 zero_init_residual: bool = False, groups: int = 1, width_per_group: int = 64,
                 replace_stride_with_dilation: Optional[List[bool]] = None,
                 norm_layer: Optional[Callable[..., nn.Module]] = None) -> None:
        super().__init__()
        self._norm_layer = norm_layer or nn.BatchNorm2d
        self.inplanes = 64
        self.dilation = 1
        if replace_stride_with_dilation is None:
            replace_stride_with_dilation = [False, False, False]
        if len(replace_stride_with_dilation) != 3:
            raise ValueError("replace_stride_with_dilation should be None or a 3-element tuple, got "
                             f"{replace_stride_with_dilation}")
        self.groups = groups
        self.base_width = width_per_group
        self.conv1 = nn.Conv2d(3, self.inplanes, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = self._norm_layer(self.inplanes)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(block, 64, layers[0])
        self.layer2 = self._make_layer(block, 128, layers[1], stride=2, dilate=replace_stride_with_dilation[0])
        self.layer3 = self._make_layer(block, 256, layers[2], stride=2, dilate=replace_stride_with_dilation[1])
        self.layer4 = self._make_layer(block, 512, layers[3], stride=2, dilate=replace_stride_with_dilation[2])
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512 * block.expansion, num_classes)
        _init_resnet(self, zero_init_residual)

    def _make_layer(self, block, planes: int, blocks: int, stride: int = 1, dilate: bool = False) -> nn.Sequential:
        norm_layer = self._norm_layer
        downsample = None
        previous_dilation = self.dilation
        if dilate:
            self.dilation *= stride
            stride = 1
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(conv1x1(self.inplanes, planes * block.expansion, stride),
                                       norm_layer(planes * block.expansion))
        layers = [block(self.inplanes, planes, stride, downsample, self.groups, self.base_width, previous_dilation,
                        norm_layer)]
        self.inplanes = planes * block.expansion
        for _ in range(1, blocks):
            layers.append(block(self.inplanes, planes, groups=self.groups, base_width=self.base_width,
                                dilation=self.dilation, norm_layer=norm_layer))
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))       # (B, 64, H/4, W/4)
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))   # (B, 512*e, H/32, W/32)
        x = ember.flatten(self.avgpool(x), 1)                       # (B, 512*e)
        return self.fc(x)


class ResNet18_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights("https://download.pytorch.org/models/resnet18-f37072fd.pth",
                            imagenet_meta(69.758, 89.078, 11689512))
    DEFAULT = IMAGENET1K_V1


class ResNet34_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights("https://download.pytorch.org/models/resnet34-b627a593.pth",
                            imagenet_meta(73.314, 91.42, 21797672))
    DEFAULT = IMAGENET1K_V1


class ResNet50_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights("https://download.pytorch.org/models/resnet50-0676ba61.pth",
                            imagenet_meta(76.13, 92.862, 25557032))
    IMAGENET1K_V2 = Weights("https://download.pytorch.org/models/resnet50-11ad3fa6.pth",
                            imagenet_meta(80.858, 95.434, 25557032))
    DEFAULT = IMAGENET1K_V2


class ResNet101_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights("https://download.pytorch.org/models/resnet101-63fe2227.pth",
                            imagenet_meta(77.374, 93.546, 44549160))
    IMAGENET1K_V2 = Weights("https://download.pytorch.org/models/resnet101-cd907fc2.pth",
                            imagenet_meta(81.886, 95.78, 44549160))
    DEFAULT = IMAGENET1K_V2


def _resnet(block, layers, weights, table, kwargs) -> ResNet:
    weights = table.verify(weights) if isinstance(weights, str) and weights in table.__members__ else weights
    if isinstance(weights, table):
        kwargs.setdefault("num_classes", len(weights.meta["categories"]))
    model = ResNet(block, layers, **kwargs)
    load_weights(model, weights, table)
    return model


def resnet18(*, weights=None, progress: bool = True, **kwargs) -> ResNet:
    """ResNet-18 (He et al., 2015); `weights`: None, `ResNet18_Weights.*` / its name, or a local file."""
    return _resnet(BasicBlock, [2, 2, 2, 2], weights, ResNet18_Weights, kwargs)


def resnet34(*, weights=None, progress: bool = True, **kwargs) -> ResNet:
    """ResNet-34; `weights`: None, `ResNet34_Weights.*` / its name, or a local file."""
    return _resnet(BasicBlock, [3, 4, 6, 3], weights, ResNet34_Weights, kwargs)


def resnet50(*, weights=None, progress: bool = True, **kwargs) -> ResNet:
    """ResNet-50 (torchvision's V1.5 bottleneck); `weights`: None, `ResNet50_Weights.*` / its name, or a file."""
    return _resnet(Bottleneck, [3, 4, 6, 3], weights, ResNet50_Weights, kwargs)


def resnet101(*, weights=None, progress: bool = True, **kwargs) -> ResNet:
    """ResNet-101; `weights`: None, `ResNet101_Weights.*` / its name, or a local file."""
    return _resnet(Bottleneck, [3, 4, 23, 3], weights, ResNet101_Weights, kwargs)


class CifarResNet(nn.Module):
    """The CIFAR ResNet of He et al. (2015, section 4.2): a 3x3 stem of 16 channels, three stages of
    `depth` = 6n+2 layers with 16/32/64 channels, global average pooling and `fc`.

    Layer names follow torchvision's ResNet (`conv1`, `bn1`, `layer1..3`, `fc`, `BasicBlock`), with
    projection shortcuts (`downsample` = 1x1 conv + BN, the paper's option B) where the shape changes,
    as in the `cifar_resnet20` of chenyaofo/pytorch-cifar-models.
    """

    def __init__(self, layers: List[int], num_classes: int = 10, in_channels: int = 3,
                 zero_init_residual: bool = False) -> None:
        super().__init__()
        self.inplanes = 16
        self.conv1 = conv3x3(in_channels, 16)
        self.bn1 = nn.BatchNorm2d(16)
        self.relu = nn.ReLU(inplace=True)
        self.layer1 = self._make_layer(16, layers[0])
        self.layer2 = self._make_layer(32, layers[1], stride=2)
        self.layer3 = self._make_layer(64, layers[2], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(64, num_classes)
        _init_resnet(self, zero_init_residual)

    def _make_layer(self, planes: int, blocks: int, stride: int = 1) -> nn.Sequential:
        downsample = None
        if stride != 1 or self.inplanes != planes:
            downsample = nn.Sequential(conv1x1(self.inplanes, planes, stride), nn.BatchNorm2d(planes))
        layers = [BasicBlock(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes
        layers += [BasicBlock(planes, planes) for _ in range(1, blocks)]
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.relu(self.bn1(self.conv1(x)))                      # (B, 16, H, W)
        x = self.layer3(self.layer2(self.layer1(x)))                # (B, 64, H/4, W/4)
        return self.fc(ember.flatten(self.avgpool(x), 1))


def resnet20(*, weights=None, progress: bool = True, **kwargs) -> CifarResNet:
    """CIFAR ResNet-20 (3 stages of 3 basic blocks, 0.27M parameters); `weights`: None or a local file."""
    model = CifarResNet([3, 3, 3], **kwargs)
    load_weights(model, weights)
    return model


def resnet56(*, weights=None, progress: bool = True, **kwargs) -> CifarResNet:
    """CIFAR ResNet-56 (3 stages of 9 basic blocks, 0.86M parameters); `weights`: None or a local file."""
    model = CifarResNet([9, 9, 9], **kwargs)
    load_weights(model, weights)
    return model
