"""`ember.backends.mps`: torch.backends.mps's queries, so that device-picking code written for torch
(`"mps" if torch.backends.mps.is_available() else "cpu"`) ports. Ember has no Apple GPU backend.

>>> ember.backends.mps.is_available()
False
"""
from __future__ import annotations

__all__ = ["is_available", "is_built"]


def is_available() -> bool:
    """Whether an Apple GPU can be used: never in Ember (cpu, cuda and meta are its devices)."""
    return False


def is_built() -> bool:
    """Whether Ember was built with an MPS backend: no."""
    return False
