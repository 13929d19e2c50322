"""Transfer learning helpers: freeze a backbone up to a named layer, replace the classifier head, and
build optimizer parameter groups with a lower learning rate for the backbone.

>>> model = resnet18(num_classes=5)
>>> freeze(model, until="layer3")                 # conv1, bn1, layer1..layer3 stop learning
['conv1', 'bn1', 'relu', 'maxpool', 'layer1', 'layer2', 'layer3']
>>> model.layer3[0].conv1.weight.requires_grad, model.layer4[0].conv1.weight.requires_grad
(False, True)
>>> head = replace_head(model, 3)                 # a new fc of 3 outputs
>>> groups = param_groups(model, lr=0.01, backbone_lr_mult=0.1)
>>> [len(g["params"]) for g in groups], [g["lr"] for g in groups]
([15, 2], [0.001, 0.01])
>>> opt = ember.optim.SGD(groups, lr=0.01, momentum=0.9)
"""
from __future__ import annotations

from typing import Iterable, List, Optional, Tuple

from ember import nn

__all__ = ["freeze", "unfreeze", "get_head", "replace_head", "param_groups"]

# the attribute holding the last classifier layer, by model type name
_HEADS = {"ResNet": "fc", "CifarResNet": "fc", "VGG": "classifier.6", "AlexNet": "classifier.6",
          "MobileNetV2": "classifier.1", "LeNet5": "classifier.4", "GPT": "lm_head"}


def _top_level(model: nn.Module) -> List[Tuple[str, nn.Module]]:
    return list(model.named_children())


def freeze(model: nn.Module, until: Optional[str] = None, *, include: bool = True,
           freeze_bn_stats: bool = True) -> List[str]:
    """Stop gradients for the model's submodules in registration order, up to and including `until`
    (a child or a dotted path such as "features.10"; `include=False` stops just before it). With
    `until=None` everything but the head (`get_head`) is frozen. Frozen batch-norm layers are put in
    eval mode too, so their running statistics stay those of the pretrained model (undone by a later
    `model.train()`; call `freeze` after it, or set `freeze_bn_stats=False`).

    Returns the names of the frozen submodules (top-level children, or the dotted prefix path)."""
    names = [n for n, _ in model.named_modules() if n]
    if until is None:
        head = _head_name(model)
        targets = [n for n, _ in _top_level(model) if not (head == n or head.startswith(n + "."))]
        if "." in head:  # e.g. VGG's classifier.6: freeze the rest of the classifier too
            parent, _, last = head.rpartition(".")
            targets += [f"{parent}.{n}" for n, _ in model.get_submodule(parent).named_children() if n != last]
    else:
        if until not in names:
            raise ValueError(f"freeze: {type(model).__name__} has no submodule {until!r}; its top-level "
                             f"children are {[n for n, _ in _top_level(model)]}")
        targets = _prefix(model, until, include)
    frozen = []
    for name in targets:
        m = model.get_submodule(name)
        m.requires_grad_(False)
        if freeze_bn_stats:
            for sub in m.modules():
                if isinstance(sub, (nn.BatchNorm1d, nn.BatchNorm2d)):
                    sub.eval()
        frozen.append(name)
    return frozen


def _prefix(model: nn.Module, until: str, include: bool) -> List[str]:
    """The submodules that come before `until` in registration order, walking down its dotted path."""
    out: List[str] = []
    parent, path = model, ""
    parts = until.split(".")
    for depth, part in enumerate(parts):
        for name, _ in parent.named_children():
            full = f"{path}{name}"
            if name == part:
                if depth == len(parts) - 1 and include:
                    out.append(full)
                break
            out.append(full)
        parent = parent.get_submodule(part)
        path += part + "."
    return out


def unfreeze(model: nn.Module) -> None:
    """Let every parameter learn again (and batch norm layers follow the model's train/eval mode)."""
    model.requires_grad_(True)
    model.train(model.training)


def _head_name(model: nn.Module) -> str:
    name = _HEADS.get(type(model).__name__)
    if name is None:
        linears = [n for n, m in model.named_modules() if isinstance(m, nn.Linear)]
        if not linears:
            raise ValueError(f"get_head: {type(model).__name__} has no Linear layer to use as its head")
        name = linears[-1]
    return name


def get_head(model: nn.Module) -> Tuple[str, nn.Module]:
    """The classifier head: (its dotted name, the module), e.g. ("fc", Linear(512, 1000)) for a ResNet."""
    name = _head_name(model)
    return name, model.get_submodule(name)


def replace_head(model: nn.Module, num_classes_or_module) -> nn.Module:
    """Put a new head in place of the old one: an int makes a fresh `Linear(in_features, n)`.
    Returns the new head (trainable, on the old head's device and dtype)."""
    name, old = get_head(model)
    if isinstance(num_classes_or_module, int):
        new = nn.Linear(old.in_features, num_classes_or_module, bias=old.bias is not None,
                        device=old.weight.device, dtype=old.weight.dtype)
    elif isinstance(num_classes_or_module, nn.Module):
        new = num_classes_or_module
    else:
        raise TypeError(f"replace_head: expected an int (number of classes) or a Module, got "
                        f"{type(num_classes_or_module).__name__}")
    parent_name, _, attr = name.rpartition(".")
    parent = model.get_submodule(parent_name) if parent_name else model
    setattr(parent, attr, new)
    return new


def param_groups(model: nn.Module, lr: float, backbone_lr_mult: float = 0.1,
                 head: Optional[Iterable[str]] = None, **group_options) -> List[dict]:
    """Two optimizer parameter groups: the backbone at `lr * backbone_lr_mult`, the head at `lr`.
    Only trainable parameters are included. `head`: names of the head's submodules (default: `get_head`).
    """
    heads = list(head) if head is not None else [_head_name(model)]
    head_params, backbone_params = [], []
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        in_head = any(name == h or name.startswith(h + ".") for h in heads)
        (head_params if in_head else backbone_params).append(p)
    return [dict(params=backbone_params, lr=lr * backbone_lr_mult, **group_options),
            dict(params=head_params, lr=lr, **group_options)]
