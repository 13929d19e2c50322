"""Utilities: ``ember.utils.data`` (datasets, samplers, DataLoader)."""
from ember.utils import data, dispatch

__all__ = ["data", "dispatch"]
