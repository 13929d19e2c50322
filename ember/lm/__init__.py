"""Language models: training a character GPT (`ember.lm.train`, the `ember train-gpt` command) and looking
inside one (`ember.lm.attention`: a layer's attention weights and their heatmap)."""
from .attention import attention_maps, plot_attention

__all__ = ["attention_maps", "plot_attention"]
