"""Saving Keras models: one safetensors file, never pickle.

`model.save(path)` writes, through `ember.save` (atomic: a temporary file renamed over the target):
the architecture as JSON (`get_config()` of the model and each layer), the weights in `model.weights`
order, the compile settings (names or serialised objects) and the optimizer's state. `load_model(path)`
rebuilds the layers from their configs, replays the functional graph node by node, copies the weights in
(checking count and shapes) and compiles again. Subclassed models have no config: save their weights
with `save_weights` and rebuild them in code.
"""
from __future__ import annotations

import inspect
import json
import os

from .. import serialization

__all__ = ["save_model", "load_model", "save_weights", "load_weights", "model_from_config"]

FORMAT = "ember.keras/1"
_MODEL_EXTS = (".keras", ".safetensors")


def _layer_classes(custom_objects=None):
    from . import layers, models
    # the layer classes only: `Input` is a function and `InputSpec` no layer, so an edited file naming them is
    # an unknown layer like any other
    table = {name: getattr(layers, name) for name in layers.__all__
             if isinstance(getattr(layers, name), type) and issubclass(getattr(layers, name), layers.Layer)}
    table.update({"Sequential": models.Sequential, "Functional": models.Functional, "Model": models.Functional,
                  "InputLayer": layers.InputLayer})
    table.update(custom_objects or {})
    return table


def _check_path(filepath, overwrite):
    path = os.fspath(filepath)
    if not overwrite and os.path.exists(path):
        raise FileExistsError(f"{path} exists and overwrite=False")
    return path


def _serialize_compile(model):
    from . import losses, optimizers
    cfg = model._compile_config
    if not cfg:
        return None

    def loss_spec(spec):
        if spec is None or isinstance(spec, str):
            return spec
        if isinstance(spec, (list, tuple)):
            return [loss_spec(s) for s in spec]
        if isinstance(spec, dict):
            return {k: loss_spec(v) for k, v in spec.items()}
        return losses.serialize(losses.get(spec))

    def metric_spec(spec):
        if spec is None or isinstance(spec, str):
            return spec
        if isinstance(spec, (list, tuple)):
            return [m for m in map(metric_spec, spec) if m is not None]
        if isinstance(spec, dict):
            return {k: metric_spec(v) for k, v in spec.items()}
        return None   # a metric object or function: not saved (left out), as Keras needs custom_objects for them

    return {"optimizer": optimizers.serialize(model.optimizer), "loss": loss_spec(cfg["loss"]),
            "metrics": metric_spec(cfg["metrics"]), "loss_weights": cfg["loss_weights"],
            "weighted_metrics": metric_spec(cfg.get("weighted_metrics"))}


def save_model(model, filepath, overwrite=True):
    path = _check_path(filepath, overwrite)
    if not path.endswith(_MODEL_EXTS):
        raise ValueError(f"Invalid filepath extension for saving: {path!r}. Please add a `.keras` extension (the "
                         f"file is a safetensors file with the architecture as JSON) or `.safetensors`; for "
                         f"weights only use model.save_weights(path)")
    config = {"class_name": type(model).__name__, "config": model.get_config()}
    try:
        compile_config = _serialize_compile(model)
    except ValueError:
        compile_config = None   # a custom loss: saved without its compile settings, as Keras without custom_objects
    opt = model.optimizer
    obj = {"format": FORMAT, "model": json.dumps(config), "compile": json.dumps(compile_config),
           "weights": [w.detach() for w in model.weights],
           "optimizer_state": opt._impl.state_dict() if opt is not None and opt.built else None,
           "optimizer_iterations": opt.iterations if opt is not None else 0}
    serialization.save(obj, path)


def _read(path, what):
    obj = serialization.load(os.fspath(path), map_location="cpu")
    if not isinstance(obj, dict) or obj.get("format") != FORMAT:
        raise ValueError(f"{what}: {path} is not a model file written by ember.keras (model.save / "
                         f"model.save_weights)")
    return obj


def model_from_config(config, custom_objects=None):
    classes = _layer_classes(custom_objects)
    cls_name, cfg = config["class_name"], dict(config["config"])
    if cls_name == "Sequential":
        from .models import Sequential
        layers = [layer_from_config(c, classes) for c in cfg["layers"]]
        model = Sequential(layers, name=cfg.get("name"), trainable=cfg.get("trainable", True))
        if not model.built and cfg.get("batch_input_shape"):
            model.build(tuple(cfg["batch_input_shape"]))
        return model
    if cls_name in ("Functional", "Model"):
        return _functional_from_config(cfg, classes)
    raise ValueError(f"cannot rebuild a {cls_name} from its config: subclassed models are rebuilt in code "
                     f"(pass custom_objects={{'{cls_name}': {cls_name}}} if it defines from_config)")


def layer_from_config(c, classes):
    name = c["class_name"]
    if name not in classes:
        raise ValueError(f"Unknown layer: '{name}'. Please ensure you are using a `keras.utils.custom_object_scope` "
                         f"equivalent: pass custom_objects={{'{name}': {name}}} to load_model")
    cls = classes[name]
    if name in ("Sequential", "Functional", "Model"):
        return model_from_config(c, classes)
    if "custom_objects" in inspect.signature(cls.from_config).parameters:   # a wrapper (Bidirectional) of layers
        return cls.from_config(dict(c["config"]), custom_objects=classes)
    return cls.from_config(dict(c["config"]))


def _functional_from_config(cfg, classes):
    from .layers.base import InputLayer
    from .models import Functional
    by_name, outputs_of = {}, {}
    for c in cfg["layers"]:
        if c["class_name"] == "InputLayer":
            conf = c["config"]
            layer = InputLayer(batch_shape=tuple(conf["batch_shape"]), dtype=conf.get("dtype"), name=conf["name"])
            outputs_of[(layer.name, 0)] = [layer.output]
        else:
            layer = layer_from_config(c, classes)
        by_name[layer.name] = layer

    def resolve(ref):
        if isinstance(ref, list):
            return [resolve(r) for r in ref]
        if "ref" not in ref:
            return {k: resolve(v) for k, v in ref.items()}
        name, node_index, tensor_index = ref["ref"]
        return outputs_of[(name, node_index)][tensor_index]

    old_index = {}
    for node in cfg["nodes"]:
        layer = by_name[node["layer"]]
        args = resolve(node["inputs"])
        out = layer(args)
        # the node index this call had in the saved model: read from the references that point at it
        old_index.setdefault(layer.name, [])
        outs = out if isinstance(out, list) else [out]
        key = node["index"] if "index" in node else _saved_node_index(cfg, layer.name, len(old_index[layer.name]))
        old_index[layer.name].append(key)
        outputs_of[(layer.name, key)] = outs
    inputs, outputs = resolve(cfg["input_layers"]), resolve(cfg["output_layers"])
    return Functional(inputs, outputs, name=cfg.get("name"), trainable=cfg.get("trainable", True))


def _saved_node_index(cfg, layer_name, k):
    """The saved node index of the k-th call of `layer_name` in this model (references name them)."""
    seen = sorted({ref[1] for ref in _all_refs(cfg) if ref[0] == layer_name})
    return seen[k] if k < len(seen) else k


def _all_refs(cfg):
    out = []

    def walk(x):
        if isinstance(x, dict) and "ref" in x:
            out.append(x["ref"])
        elif isinstance(x, (list, dict)):
            for v in (x.values() if isinstance(x, dict) else x):
                walk(v)
    for node in cfg["nodes"]:
        walk(node["inputs"])
    walk(cfg["input_layers"])
    walk(cfg["output_layers"])
    return out


def _set_weights(model, weights, path):
    mine = model.weights
    if len(weights) != len(mine):
        raise ValueError(f"{path} holds {len(weights)} weights but the model {model.name!r} has {len(mine)}: it was "
                         f"saved from a different architecture")
    model.set_weights([w.numpy() for w in weights])


def load_model(filepath, custom_objects=None, compile=True):
    path = os.fspath(filepath)
    obj = _read(path, "load_model")
    if "model" not in obj:
        raise ValueError(f"load_model: {path} holds only weights (model.save_weights): build the model in code and "
                         f"call model.load_weights(path)")
    model = model_from_config(json.loads(obj["model"]), custom_objects)
    _set_weights(model, obj["weights"], path)
    compile_config = json.loads(obj["compile"]) if obj.get("compile") else None
    if compile and compile_config:
        model.compile(optimizer=compile_config["optimizer"], loss=_loss_back(compile_config["loss"]),
                      metrics=compile_config["metrics"], loss_weights=compile_config["loss_weights"],
                      weighted_metrics=compile_config.get("weighted_metrics"))
        if obj.get("optimizer_state") is not None:
            model.optimizer.build(model.trainable_weights)
            model.optimizer._impl.load_state_dict(obj["optimizer_state"])
            model.optimizer.iterations = int(obj.get("optimizer_iterations") or 0)
    return model


def _loss_back(spec):
    from . import losses
    if isinstance(spec, dict) and "class_name" in spec:
        return losses.get(spec)
    if isinstance(spec, dict):
        return {k: _loss_back(v) for k, v in spec.items()}
    if isinstance(spec, list):
        return [_loss_back(v) for v in spec]
    return spec


def save_weights(model, filepath, overwrite=True):
    path = _check_path(filepath, overwrite)
    serialization.save({"format": FORMAT, "weights": [w.detach() for w in model.weights],
                        "paths": [w.path for w in model.weights]}, path)


def load_weights(model, filepath):
    path = os.fspath(filepath)
    obj = _read(path, "load_weights")
    _set_weights(model, obj["weights"], path)

