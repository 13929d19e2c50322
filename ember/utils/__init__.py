"""Utilities: ``ember.utils.data`` (datasets, samplers, DataLoader), ``make_grid`` and ``save_image``."""
from ember.utils import data, dispatch
from ember.utils.image import make_grid, save_image

__all__ = ["data", "dispatch", "make_grid", "save_image"]
