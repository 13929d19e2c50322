"""torchvision as a test oracle: imported here, after the stub its CUDA-built wheel needs on CPU torch."""
import sys
import types

import torch

sys.modules.setdefault("torchvision._meta_registrations", types.ModuleType("torchvision._meta_registrations"))
import torchvision  # noqa: E402

tvm = torchvision.models


def save_torch_state(module: torch.nn.Module, path) -> None:
    """What a user does to export torch weights for Ember: a safetensors file of the state dict."""
    from safetensors.torch import save_file
    state = {k: v.detach().clone().contiguous() for k, v in module.state_dict().items()}  # unties shared weights
    save_file(state, str(path))

