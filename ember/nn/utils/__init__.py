"""`ember.nn.utils`: gradient clipping, flat parameter vectors, weight and spectral normalisation (hooks and
parametrizations), functional_call, conv-bn fusion, pruning (`prune`, imported on demand as torch's), skip_init, variable-length sequences (`rnn`)."""
from .clip_grad import clip_grad_norm_, clip_grad_norm, clip_grad_value_, clip_grads_with_norm_, get_total_norm
from .convert_parameters import parameters_to_vector, vector_to_parameters
from .weight_norm import weight_norm, remove_weight_norm
from .spectral_norm import spectral_norm, remove_spectral_norm
from .fusion import fuse_conv_bn_eval, fuse_conv_bn_weights, fuse_linear_bn_eval, fuse_linear_bn_weights
from .init import skip_init
from . import rnn, parametrize, parametrizations, stateless

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm", "parameters_to_vector", "vector_to_parameters", "weight_norm",
           "remove_weight_norm", "spectral_norm", "remove_spectral_norm", "fuse_conv_bn_eval",
           "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights", "skip_init"]
