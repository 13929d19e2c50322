"""Export a model's forward pass to ONNX (torch.onnx's API): `ember.onnx.export(model, args, "m.onnx")`.

Importing this module does not import `onnx`; `export` does, and asks for `pip install ember[onnx]`
when it is missing. How it works: docs/onnx.md.
"""
from .exporter import export, UnsupportedOperatorError

__all__ = ["export", "UnsupportedOperatorError"]
