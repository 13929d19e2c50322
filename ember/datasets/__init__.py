"""Real datasets with torchvision's names: file-format loaders (MNIST, FashionMNIST, KMNIST, CIFAR10/100)
and datasets that arrive inside packages and so work offline (MNIST1D, Digits, MNISTSubset, Shakespeare, BrownCorpus).

Example:
    >>> from ember.datasets import FashionMNIST
    >>> from ember import transforms as T
    >>> ds = FashionMNIST("~/data", train=True, transform=T.ToTensor())
    >>> ds[0][0].shape
    (1, 28, 28)
"""
from ember.datasets._files import CorruptFileError, DatasetNotFoundError, data_home
from ember.datasets.cifar import CIFAR10, CIFAR100
from ember.datasets.mnist import KMNIST, MNIST, FashionMNIST
from ember.datasets.packaged import MNIST1D, Digits, MNISTSubset
from ember.datasets.shakespeare import Shakespeare
from ember.datasets.brown import BrownCorpus

__all__ = ["MNIST", "FashionMNIST", "KMNIST", "CIFAR10", "CIFAR100", "MNIST1D", "Digits", "MNISTSubset",
           "Shakespeare", "BrownCorpus", "DatasetNotFoundError", "CorruptFileError", "data_home"]
