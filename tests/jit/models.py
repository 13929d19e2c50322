"""The reference models of the compiler tests: an MLP, a CNN with BatchNorm and dropout, an LSTM
classifier and a tiny GPT, each with a training step (forward, backward, AdamW, zero_grad)."""
import ember
import ember.nn as nn
import ember.nn.functional as F


class TinyGPT(nn.Module):
    def __init__(self, vocab=11, block=8, dim=16, heads=2, layers=2, p=0.1):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(block, dim)
        self.drop = nn.Dropout(p)
        self.blocks = nn.ModuleList(
            nn.TransformerEncoderLayer(dim, heads, dim_feedforward=4 * dim, dropout=p, activation="gelu",
                                       batch_first=True, norm_first=True) for _ in range(layers))
        self.ln = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, idx):
        T = idx.shape[1]
        x = self.drop(self.tok(idx) + self.pos(ember.arange(T)))     # (B, T, C)
        mask = ember.triu(ember.full((T, T), float("-inf")), diagonal=1)
        for b in self.blocks:
            x = b(x, src_mask=mask, is_causal=True)
        return self.head(self.ln(x))                                  # (B, T, vocab)


class ZooGPT(nn.Module):
    """The model zoo's GPT without dropout: its attention is F.scaled_dot_product_attention(is_causal=True)
    with no mask, the one-node Attention primitive. Logits of every position (B, T, vocab)."""
    def __init__(self):
        super().__init__()
        from ember.models.gpt import GPT, GPTConfig
        self.gpt = GPT(GPTConfig(block_size=8, vocab_size=11, n_layer=2, n_head=2, n_embd=16, dropout=0.0))

    def forward(self, idx):
        x = self.gpt.transformer.wte(idx) + self.gpt.transformer.wpe(ember.arange(idx.shape[1]))
        for block in self.gpt.transformer.h:
            x = block(x)
        return self.gpt.lm_head(self.gpt.transformer.ln_f(x))


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(4)
        self.conv2 = nn.Conv2d(4, 8, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(8)
        self.drop = nn.Dropout(0.25)
        self.fc = nn.Linear(8 * 2 * 2, 5)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)        # (B, 4, 4, 4)
        x = F.max_pool2d(F.relu(self.bn2(self.conv2(x))), 2)        # (B, 8, 2, 2)
        return self.fc(self.drop(x.flatten(1)))


class LSTMClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(5, 12, batch_first=True)
        self.fc = nn.Linear(12, 3)

    def forward(self, x):
        out, _ = self.lstm(x)                                        # (B, T, 12)
        return self.fc(out[:, -1])


def make(kind, seed=0):
    """(model, optimizer, x, y) for one of 'mlp', 'cnn', 'lstm', 'gpt', 'zoo_gpt', seeded, in training mode."""
    ember.manual_seed(seed)
    if kind == "mlp":
        model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Dropout(0.2), nn.Linear(16, 4))
        x, y = ember.randn(8, 6), ember.randint(0, 4, (8,))
    elif kind == "cnn":
        model = CNN()
        x, y = ember.randn(6, 1, 8, 8), ember.randint(0, 5, (6,))
    elif kind == "lstm":
        model = LSTMClassifier()
        x, y = ember.randn(4, 7, 5), ember.randint(0, 3, (4,))
    elif kind == "gpt":
        model = TinyGPT()
        x, y = ember.randint(0, 11, (3, 8)), ember.randint(0, 11, (3, 8))
    else:
        model = ZooGPT()
        x, y = ember.randint(0, 11, (3, 8)), ember.randint(0, 11, (3, 8))
    model.train()
    opt = ember.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)
    return model, opt, x, y


def step_fn(model, opt):
    def step(x, y):
        opt.zero_grad()
        out = model(x)
        loss = F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))
        loss.backward()
        opt.step()
        return loss
    return step
