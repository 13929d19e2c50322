"""Utilities: ``ember.utils.data`` (datasets, samplers, DataLoader)."""
from ember.utils import data

__all__ = ["data"]
