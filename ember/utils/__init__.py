"""Utilities: ``ember.utils.data`` (datasets, samplers, DataLoader), ``ember.utils.checkpoint``
(activation checkpointing), ``make_grid`` and ``save_image``."""
from ember.utils import checkpoint, data, dispatch
from ember.utils.image import make_grid, save_image

__all__ = ["checkpoint", "data", "dispatch", "make_grid", "save_image"]
