"""Image transforms with torchvision's names, on ember Tensors and NumPy arrays, one image or a batch.

Example:
    >>> import numpy as np
    >>> from ember import transforms as T
    >>> augment = T.Compose([T.RandomCrop(28, padding=4), T.RandomHorizontalFlip(), T.ToTensor(),
    ...                      T.Normalize((0.1307,), (0.3081,))])
    >>> augment(np.zeros((28, 28), dtype=np.uint8)).shape
    (1, 28, 28)
"""
from ember.transforms import functional
from ember.transforms.transforms import (CenterCrop, ColorJitter, Compose, Lambda, Normalize, RandomCrop,
                                         RandomHorizontalFlip, RandomResizedCrop, RandomRotation,
                                         RandomVerticalFlip, Resize, ToTensor)

__all__ = [
    "functional", "Compose", "ToTensor", "Normalize", "Lambda", "Resize", "CenterCrop", "RandomCrop",
    "RandomHorizontalFlip", "RandomVerticalFlip", "RandomRotation", "RandomResizedCrop", "ColorJitter",
]
