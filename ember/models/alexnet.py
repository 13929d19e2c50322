"""AlexNet (Krizhevsky et al., 2012, the one-GPU variant of "One weird trick"), torchvision's layout and names.

>>> model = alexnet(num_classes=10)
>>> model(ember.randn(1, 3, 64, 64)).shape
(1, 10)
"""
from __future__ import annotations

import ember
from ember import nn
from ember.models._meta import imagenet_meta
from ember.models._weights import Weights, WeightsEnum, load_weights

__all__ = ["AlexNet", "alexnet", "AlexNet_Weights"]


class AlexNet(nn.Module):
    def __init__(self, num_classes: int = 1000, dropout: float = 0.5) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 64, kernel_size=11, stride=4, padding=2), nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
            nn.Conv2d(64, 192, kernel_size=5, padding=2), nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
            nn.Conv2d(192, 384, kernel_size=3, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(384, 256, kernel_size=3, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(256, 256, kernel_size=3, padding=1), nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2))
        self.avgpool = nn.AdaptiveAvgPool2d((6, 6))
        self.classifier = nn.Sequential(
            nn.Dropout(p=dropout), nn.Linear(256 * 6 * 6, 4096), nn.ReLU(inplace=True),
            nn.Dropout(p=dropout), nn.Linear(4096, 4096), nn.ReLU(inplace=True),
            nn.Linear(4096, num_classes))

    def forward(self, x):
        x = self.avgpool(self.features(x))          # (B, 256, 6, 6)
        return self.classifier(ember.flatten(x, 1))


class AlexNet_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights("https://download.pytorch.org/models/alexnet-owt-7be5be79.pth",
                            imagenet_meta(56.522, 79.066, 61100840, min_size=(63, 63)))
    DEFAULT = IMAGENET1K_V1


def alexnet(*, weights=None, progress: bool = True, **kwargs) -> AlexNet:
    """AlexNet; `weights`: None, `AlexNet_Weights.*` / its name, or a local file."""
    if isinstance(weights, str) and weights in AlexNet_Weights.__members__:
        weights = AlexNet_Weights.verify(weights)
    if isinstance(weights, AlexNet_Weights):
        kwargs.setdefault("num_classes", 1000)
    model = AlexNet(**kwargs)
    load_weights(model, weights, AlexNet_Weights)
    return model
