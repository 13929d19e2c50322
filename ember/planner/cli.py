"""`ember summary`: the planner from the command line.

    ember summary vgg16 --input 3,224,224 --batch 128 --optimizer sgd-momentum --device "GTX 1080"
    ember summary mypkg.nets:make_net --input 784 --device 8000000000

MODEL is a name of the model zoo (`ember.models.get_model`, built with "meta" as the default device)
or `module:callable` returning an `ember.nn.Module` (called with `device="meta"` when it takes a `device`
argument): nothing is allocated. The output is the table and report `ember.summary(...)` prints.
"""
from __future__ import annotations

import importlib
import inspect

__all__ = ["add_arguments", "main", "resolve_model"]


def add_arguments(parser) -> None:
    parser.add_argument("model", help="a model zoo name (vgg16, resnet18, ...) or module:callable")
    parser.add_argument("--input", required=True,
                        help="input size without the batch dim, comma-separated: 3,224,224")
    parser.add_argument("--batch", type=int, default=1, help="batch size (default 1)")
    parser.add_argument("--optimizer", default="sgd-momentum", help="sgd, sgd-momentum, adam, adamw")
    parser.add_argument("--device", default=None,
                        help='a device name ("GTX 1080", "A100 80GB", ...; see ember.planner.DEVICES) '
                             "or its memory in bytes")
    parser.add_argument("--dtype", default="float32", help="parameter and activation dtype (float32)")
    parser.add_argument("--input-dtype", default=None, help="input dtype when it differs (int64 for token ids)")
    parser.add_argument("--efficiency", type=float, default=0.5,
                        help="fraction of the device's peak FLOP/s for the step-time estimate (0.5)")


def _call(fn, name):
    if not callable(fn):
        raise SystemExit(f"ember summary: {name} is a {type(fn).__name__}, not a callable that returns a model")
    model = fn(device="meta") if "device" in inspect.signature(fn).parameters else fn()
    from ..nn.module import Module
    if not isinstance(model, Module):
        raise SystemExit(f"ember summary: {name} returned {type(model).__name__}, not an ember.nn.Module")
    return model


def resolve_model(spec: str):
    """The model `spec` names: `module:callable`, or a name `ember.models.get_model` knows."""
    if ":" in spec:
        mod_name, _, attr = spec.partition(":")
        try:
            mod = importlib.import_module(mod_name)
        except ImportError as e:
            raise SystemExit(f"ember summary: cannot import module {mod_name!r} of {spec!r}: {e}") from None
        fn: object = mod
        for part in attr.split("."):
            fn = getattr(fn, part, None)
            if fn is None:
                raise SystemExit(f"ember summary: module {mod_name!r} has no {attr!r}")
        return _call(fn, spec)
    try:
        models = importlib.import_module("ember.models")
    except ImportError:
        raise SystemExit(f"ember summary: model {spec!r}: the model zoo (ember.models) is not available in "
                         f"this install; pass module:callable instead (e.g. mypkg.nets:vgg16)") from None
    get_model = getattr(models, "get_model", None)
    if get_model is None:
        raise SystemExit("ember summary: ember.models has no get_model(); pass module:callable instead")
    from .. import get_default_device, set_default_device
    before = get_default_device()
    set_default_device("meta")   # the zoo's builders take no device=: their factory calls allocate nothing
    try:
        return _call(lambda: get_model(spec), spec)
    except ValueError as e:   # an unknown name: get_model's message lists the known ones
        raise SystemExit(f"ember summary: {e}") from None
    finally:
        set_default_device(before)


def _parse_input(text: str) -> tuple:
    try:
        size = tuple(int(s) for s in text.replace("x", ",").split(",") if s.strip())
    except ValueError:
        raise SystemExit(f"ember summary: --input must be integers separated by commas, got {text!r}") from None
    if not size or any(s <= 0 for s in size):
        raise SystemExit(f"ember summary: --input must be positive sizes, got {text!r}")
    return size


def _parse_device(text):
    if text is None:
        return None
    t = text.replace("_", "").replace(",", "")
    return int(t) if t.isdigit() else text


def main(args) -> int:
    from .report import summary
    size = _parse_input(args.input)
    model = resolve_model(args.model)
    try:
        summary(model, size, batch_size=args.batch, dtype=args.dtype, device=_parse_device(args.device),
                input_dtype=args.input_dtype, optimizer=args.optimizer, name=args.model,
                efficiency=args.efficiency)
    except ValueError as e:   # an unknown device or optimizer: the message lists the known ones
        raise SystemExit(f"ember summary: {e}") from None
    return 0
