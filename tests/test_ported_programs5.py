"""Fifth round of ported programs: pytorch/examples (VAE, DCGAN, REINFORCE, actor-critic, word_language_model,
time_sequence_prediction, super_resolution, GAT, GCN, forward-forward, language_translation, fast_neural_style)
and karpathy's makemore and minGPT, condensed to their model and training-step code. Each program is written
once as a function of the `torch` module it is given (the port is the import), run through Ember and, with
the same weights and inputs, through torch: the losses and the trained weights must agree."""
import collections
import math

import numpy as np
import pytest
import torch

import ember


def same_weights(theirs, ours):
    """Copy a torch module's state into the Ember module built by the same code."""
    ours.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})


def close(ours, theirs, rtol=1e-5, atol=1e-6, name=""):
    np.testing.assert_allclose(np.asarray(ours.detach().numpy() if hasattr(ours, "detach") else ours),
                               np.asarray(theirs.detach().numpy() if hasattr(theirs, "detach") else theirs),
                               rtol=rtol, atol=atol, err_msg=name)


def close_params(ours, theirs, rtol=1e-5, atol=1e-6, noise=(), moved=0.0):
    """Same names, same trained values. `noise` names parameters whose gradient is zero in exact arithmetic
    (an attention key bias, which softmax cancels; a conv bias that InstanceNorm subtracts): Adam turns
    each library's rounding noise into steps of up to lr, so those are only checked to within `moved`."""
    a, b = dict(ours.named_parameters()), dict(theirs.named_parameters())
    assert list(a) == list(b)
    for k in a:
        if any(k.endswith(n) for n in noise):
            close(a[k], b[k], 0, moved, k)
        else:
            close(a[k], b[k], rtol, atol, k)


def both(build, *args):
    """build(torch_or_ember, *args) for both libraries, the Ember module given torch's weights."""
    torch.manual_seed(0)
    theirs = build(torch, *args)
    ours = build(ember, *args)
    same_weights(theirs, ours)
    return ours, theirs


def data(*shape, seed=0, scale=1.0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32) * scale


# ----------------------------------------------------------------------------------------- vae/main.py

def vae(torch):
    nn, F = torch.nn, torch.nn.functional

    class VAE(nn.Module):
        def __init__(self):
            super(VAE, self).__init__()
            self.fc1, self.fc21, self.fc22 = nn.Linear(36, 16), nn.Linear(16, 4), nn.Linear(16, 4)
            self.fc3, self.fc4 = nn.Linear(4, 16), nn.Linear(16, 36)
            self.eps = None   # the test's noise (the example draws randn_like: another generator per library)

        def encode(self, x):
            h1 = F.relu(self.fc1(x))
            return self.fc21(h1), self.fc22(h1)

        def reparameterize(self, mu, logvar):
            std = torch.exp(0.5 * logvar)
            eps = torch.randn_like(std) if self.eps is None else self.eps
            return mu + eps * std

        def decode(self, z):
            return torch.sigmoid(self.fc4(F.relu(self.fc3(z))))

        def forward(self, x):
            mu, logvar = self.encode(x.view(-1, 36))
            return self.decode(self.reparameterize(mu, logvar)), mu, logvar

    def loss_function(recon_x, x, mu, logvar):
        BCE = F.binary_cross_entropy(recon_x, x.view(-1, 36), reduction='sum')
        KLD = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
        return BCE + KLD

    model = VAE()
    model.loss_function = loss_function
    return model


def test_vae_training_steps_match_torch():
    ours, theirs = both(vae)
    x = np.random.default_rng(0).random((8, 1, 6, 6), dtype=np.float32)
    for L, model in ((ember, ours), (torch, theirs)):
        optimizer = L.optim.Adam(model.parameters(), lr=1e-3)
        model.losses = []
        for step in range(3):
            model.eps = L.tensor(data(8, 4, seed=step))
            data_ = L.tensor(x)
            optimizer.zero_grad()
            recon_batch, mu, logvar = model(data_)
            loss = model.loss_function(recon_batch, data_, mu, logvar)
            loss.backward()
            model.losses.append(loss.item())
            optimizer.step()
        with L.no_grad():
            model.sample = model.decode(L.tensor(data(5, 4, seed=9))).cpu()
    np.testing.assert_allclose(ours.losses, theirs.losses, rtol=1e-5)
    close_params(ours, theirs)
    close(ours.sample, theirs.sample)
    assert ember.randn_like(ember.ones(3)).shape == (3,)   # the example's own noise


# ----------------------------------------------------------------------------------------- dcgan/main.py

def dcgan(torch, nz=8, ngf=4, ndf=4, nc=3):
    nn = torch.nn

    def weights_init(m):
        classname = m.__class__.__name__
        if classname.find('Conv') != -1:
            torch.nn.init.normal_(m.weight, 0.0, 0.02)
        elif classname.find('BatchNorm') != -1:
            torch.nn.init.normal_(m.weight, 1.0, 0.02)
            torch.nn.init.zeros_(m.bias)

    class Generator(nn.Module):
        def __init__(self, ngpu):
            super(Generator, self).__init__()
            self.ngpu = ngpu
            self.main = nn.Sequential(
                nn.ConvTranspose2d(nz, ngf * 8, 4, 1, 0, bias=False), nn.BatchNorm2d(ngf * 8), nn.ReLU(True),
                nn.ConvTranspose2d(ngf * 8, ngf * 4, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf * 4), nn.ReLU(True),
                nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf * 2), nn.ReLU(True),
                nn.ConvTranspose2d(ngf * 2, ngf, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf), nn.ReLU(True),
                nn.ConvTranspose2d(ngf, nc, 4, 2, 1, bias=False), nn.Tanh())

        def forward(self, input):
            if (input.is_cuda or input.is_xpu) and self.ngpu > 1:
                return nn.parallel.data_parallel(self.main, input, range(self.ngpu))
            return self.main(input)

    class Discriminator(nn.Module):
        def __init__(self, ngpu):
            super(Discriminator, self).__init__()
            self.ngpu = ngpu
            self.main = nn.Sequential(
                nn.Conv2d(nc, ndf, 4, 2, 1, bias=False), nn.LeakyReLU(0.2, inplace=True),
                nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 2), nn.LeakyReLU(0.2, inplace=True),
                nn.Conv2d(ndf * 2, ndf * 4, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 4),
                nn.LeakyReLU(0.2, inplace=True),
                nn.Conv2d(ndf * 4, ndf * 8, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 8),
                nn.LeakyReLU(0.2, inplace=True),
                nn.Conv2d(ndf * 8, 1, 4, 1, 0, bias=False), nn.Sigmoid())

        def forward(self, input):
            return self.main(input).view(-1, 1).squeeze(1)

    net = nn.Module()
    net.G, net.D = Generator(1), Discriminator(1)
    net.G.apply(weights_init)
    net.D.apply(weights_init)
    return net


def test_dcgan_discriminator_and_generator_steps_match_torch(monkeypatch):
    ours, theirs = both(dcgan)
    real = data(4, 3, 64, 64, seed=1, scale=0.5)
    for L, net in ((ember, ours), (torch, theirs)):
        netG, netD = net.G, net.D
        monkeypatch.setattr(L.backends.cudnn, "benchmark", True)      # the script's cudnn.benchmark = True
        criterion = L.nn.BCELoss()
        optimizerD = L.optim.Adam(netD.parameters(), lr=0.0002, betas=(0.5, 0.999))
        optimizerG = L.optim.Adam(netG.parameters(), lr=0.0002, betas=(0.5, 0.999))
        net.log = []
        for i in range(2):
            netD.zero_grad()
            real_cpu = L.tensor(real)
            batch_size = real_cpu.size(0)
            label = L.full((batch_size,), 1, dtype=real_cpu.dtype, device=L.device("cpu"))
            output = netD(real_cpu)
            errD_real = criterion(output, label)
            errD_real.backward()
            noise = L.tensor(data(batch_size, 8, 1, 1, seed=10 + i))
            fake = netG(noise)
            label.fill_(0)
            output = netD(fake.detach())
            errD_fake = criterion(output, label)
            errD_fake.backward()
            errD = errD_real + errD_fake
            optimizerD.step()
            netG.zero_grad()
            label.fill_(1)
            output = netD(fake)
            errG = criterion(output, label)
            errG.backward()
            optimizerG.step()
            net.log.append((errD.item(), errG.item(), output.mean().item()))
    np.testing.assert_allclose(ours.log, theirs.log, rtol=1e-4)
    close_params(ours, theirs, rtol=1e-4, atol=1e-5)
    for name, buf in theirs.named_buffers():
        close(dict(ours.named_buffers())[name], buf, rtol=1e-4, atol=1e-5)


# --------------------------------------------------------- reinforcement_learning/reinforce.py, actor_critic.py

def reinforce(torch, critic=False):
    nn, F = torch.nn, torch.nn.functional

    class Policy(nn.Module):
        def __init__(self):
            super(Policy, self).__init__()
            self.affine1 = nn.Linear(4, 16)
            self.dropout = nn.Dropout(p=0.6)
            self.affine2 = nn.Linear(16, 2)
            if critic:
                self.value_head = nn.Linear(16, 1)
            self.saved_log_probs, self.saved_values, self.rewards = [], [], []

        def forward(self, x):
            x = F.relu(self.dropout(self.affine1(x)))
            probs = F.softmax(self.affine2(x), dim=-1)
            return (probs, self.value_head(x)) if critic else probs

    return Policy()


@pytest.mark.parametrize("critic", [False, True], ids=["reinforce", "actor_critic"])
def test_policy_gradient_episodes_match_torch(critic):
    ours, theirs = both(reinforce, critic)
    eps = np.finfo(np.float32).eps.item()
    states = [data(4, seed=s).astype(np.float64) for s in range(6)]
    actions = [0, 1, 1, 0, 1, 0]
    for L, policy in ((ember, ours), (torch, theirs)):
        policy.eval()    # dropout's masks come from each library's own generator
        optimizer = L.optim.Adam(policy.parameters(), lr=1e-2)
        policy.losses = []
        for episode in range(2):
            for state, action in zip(states[episode:], actions[episode:]):
                state = L.from_numpy(state).float().unsqueeze(0)
                out = policy(state)
                m = L.distributions.Categorical(out[0] if critic else out)
                action = L.tensor([action])
                policy.saved_log_probs.append(m.log_prob(action))
                if critic:
                    policy.saved_values.append(out[1])
                policy.rewards.append(1.0 + action.item())
            R, returns = 0, collections.deque()
            for r in policy.rewards[::-1]:
                R = r + 0.99 * R
                returns.appendleft(R)
            returns = L.tensor(returns)
            returns = (returns - returns.mean()) / (returns.std() + eps)
            if critic:
                policy_losses, value_losses = [], []
                for log_prob, value, R in zip(policy.saved_log_probs, policy.saved_values, returns):
                    advantage = R - value.item()
                    policy_losses.append(-log_prob * advantage)
                    value_losses.append(F_smooth_l1(L, value, R))
                loss = L.stack(policy_losses).sum() + L.stack(value_losses).sum()
            else:
                loss = L.cat([-lp * R for lp, R in zip(policy.saved_log_probs, returns)]).sum()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            policy.losses.append(loss.item())
            del policy.rewards[:], policy.saved_log_probs[:], policy.saved_values[:]
    np.testing.assert_allclose(ours.losses, theirs.losses, rtol=1e-5, atol=2e-6)   # sums that nearly cancel
    close_params(ours, theirs)


def F_smooth_l1(L, value, R):
    return L.nn.functional.smooth_l1_loss(value, L.tensor([[R]]) if not hasattr(R, "dim") else R.reshape(1, 1))


# ------------------------------------------------------------------------------ word_language_model/model.py

def word_lm(torch, rnn_type, tie=False):
    nn, F = torch.nn, torch.nn.functional
    ntoken, ninp, nhid, nlayers = 11, 8, 8, 2

    class RNNModel(nn.Module):
        def __init__(self):
            super(RNNModel, self).__init__()
            self.drop = nn.Dropout(0.0)
            self.encoder = nn.Embedding(ntoken, ninp)
            if rnn_type in ['LSTM', 'GRU']:
                self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers, dropout=0.0)
            else:
                nonlinearity = {'RNN_TANH': 'tanh', 'RNN_RELU': 'relu'}[rnn_type]
                self.rnn = nn.RNN(ninp, nhid, nlayers, nonlinearity=nonlinearity, dropout=0.0)
            self.decoder = nn.Linear(nhid, ntoken)
            if tie:
                self.decoder.weight = self.encoder.weight
            initrange = 0.1
            nn.init.uniform_(self.encoder.weight, -initrange, initrange)
            nn.init.zeros_(self.decoder.bias)
            nn.init.uniform_(self.decoder.weight, -initrange, initrange)

        def forward(self, input, hidden):
            emb = self.drop(self.encoder(input))
            output, hidden = self.rnn(emb, hidden)
            decoded = self.decoder(self.drop(output)).view(-1, ntoken)
            return F.log_softmax(decoded, dim=1), hidden

        def init_hidden(self, bsz):
            weight = next(self.parameters())
            if rnn_type == 'LSTM':
                return (weight.new_zeros(nlayers, bsz, nhid), weight.new_zeros(nlayers, bsz, nhid))
            return weight.new_zeros(nlayers, bsz, nhid)

    class PositionalEncoding(nn.Module):
        def __init__(self, d_model, dropout=0.1, max_len=5000):
            super(PositionalEncoding, self).__init__()
            self.dropout = nn.Dropout(p=dropout)
            pe = torch.zeros(max_len, d_model)
            position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
            div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
            pe[:, 0::2] = torch.sin(position * div_term)
            pe[:, 1::2] = torch.cos(position * div_term)
            pe = pe.unsqueeze(0).transpose(0, 1)
            self.register_buffer('pe', pe)

        def forward(self, x):
            return self.dropout(x + self.pe[:x.size(0), :])

    class TransformerModel(nn.Transformer):
        def __init__(self):
            super(TransformerModel, self).__init__(d_model=ninp, nhead=2, dim_feedforward=nhid,
                                                   num_encoder_layers=nlayers, dropout=0.0)
            self.model_type = 'Transformer'
            self.src_mask = None
            self.pos_encoder = PositionalEncoding(ninp, 0.0)
            self.input_emb = nn.Embedding(ntoken, ninp)
            self.ninp = ninp
            self.decoder = nn.Linear(ninp, ntoken)
            nn.init.uniform_(self.input_emb.weight, -0.1, 0.1)
            nn.init.zeros_(self.decoder.bias)
            nn.init.uniform_(self.decoder.weight, -0.1, 0.1)

        def _generate_square_subsequent_mask(self, sz):
            return torch.log(torch.tril(torch.ones(sz, sz)))

        def forward(self, src, has_mask=True):
            if has_mask:
                device = src.device
                if self.src_mask is None or self.src_mask.size(0) != len(src):
                    self.src_mask = self._generate_square_subsequent_mask(len(src)).to(device)
            else:
                self.src_mask = None
            src = self.input_emb(src) * math.sqrt(self.ninp)
            src = self.pos_encoder(src)
            output = self.encoder(src, mask=self.src_mask)
            return F.log_softmax(self.decoder(output), dim=-1)

    return TransformerModel() if rnn_type == "Transformer" else RNNModel()


def batchify(L, data, bsz):
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    return data.view(bsz, -1).t().contiguous()


def get_batch(source, i, bptt=5):
    seq_len = min(bptt, len(source) - 1 - i)
    return source[i:i + seq_len], source[i + 1:i + 1 + seq_len].view(-1)


def repackage_hidden(L, h):
    return h.detach() if isinstance(h, L.Tensor) else tuple(repackage_hidden(L, v) for v in h)


@pytest.mark.parametrize("rnn_type,tie", [("LSTM", False), ("GRU", True), ("RNN_TANH", False), ("RNN_RELU", False),
                                          ("Transformer", False)])
def test_word_language_model_training_matches_torch(rnn_type, tie):
    ours, theirs = both(word_lm, rnn_type, tie)
    corpus = np.random.default_rng(0).integers(0, 11, 46)
    for L, model in ((ember, ours), (torch, theirs)):
        train_data = batchify(L, L.tensor(corpus), 3)
        criterion = L.nn.NLLLoss()
        model.train()
        lr, model.losses = 20.0, []
        if rnn_type != 'Transformer':
            hidden = model.init_hidden(3)
        for batch, i in enumerate(range(0, train_data.size(0) - 1, 5)):
            data_, targets = get_batch(train_data, i)
            model.zero_grad()
            if rnn_type == 'Transformer':
                output = model(data_).view(-1, 11)
            else:
                hidden = repackage_hidden(L, hidden)
                output, hidden = model(data_, hidden)
            loss = criterion(output, targets)
            loss.backward()
            L.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
            for p in model.parameters():
                p.data.add_(p.grad, alpha=-lr)
            model.losses.append(loss.item())
        if rnn_type != 'Transformer':
            model.rnn.flatten_parameters()
    np.testing.assert_allclose(ours.losses, theirs.losses, rtol=2e-5)
    close_params(ours, theirs, rtol=1e-4, atol=1e-5)


def test_word_language_model_safe_globals_paths_exist():
    # main.py allow-lists the classes it loads by their torch.nn.modules paths
    import ember.nn.modules  # noqa: F401
    for L in (torch, ember):
        [L.nn.functional.relu, L.nn.modules.activation.MultiheadAttention, L.nn.modules.container.ModuleList,
         L.nn.modules.dropout.Dropout, L.nn.modules.linear.Linear, L.nn.modules.linear.NonDynamicallyQuantizableLinear,
         L.nn.modules.normalization.LayerNorm, L.nn.modules.sparse.Embedding,
         L.nn.modules.transformer.TransformerEncoder, L.nn.modules.transformer.TransformerEncoderLayer,
         L.nn.modules.rnn.GRU, L.nn.modules.rnn.LSTM, L.nn.modules.rnn.RNN]


# -------------------------------------------------------------------- time_sequence_prediction/train.py (LBFGS)

def sine_seq(torch):
    nn = torch.nn

    class Sequence(nn.Module):
        def __init__(self):
            super(Sequence, self).__init__()
            self.lstm1 = nn.LSTMCell(1, 7)
            self.lstm2 = nn.LSTMCell(7, 7)
            self.linear = nn.Linear(7, 1)

        def forward(self, input, future=0):
            outputs = []
            h_t = torch.zeros(input.size(0), 7, dtype=torch.double)
            c_t = torch.zeros(input.size(0), 7, dtype=torch.double)
            h_t2 = torch.zeros(input.size(0), 7, dtype=torch.double)
            c_t2 = torch.zeros(input.size(0), 7, dtype=torch.double)
            for input_t in input.split(1, dim=1):
                h_t, c_t = self.lstm1(input_t, (h_t, c_t))
                h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
                output = self.linear(h_t2)
                outputs += [output]
            for i in range(future):
                h_t, c_t = self.lstm1(output, (h_t, c_t))
                h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
                output = self.linear(h_t2)
                outputs += [output]
            return torch.cat(outputs, dim=1)

    seq = Sequence()
    seq.double()
    return seq


def test_time_sequence_prediction_lbfgs_matches_torch(tmp_path):
    # generate_sine_wave.py saves a NumPy array with torch.save; train.py loads it back
    rs = np.random.RandomState(2)
    x = np.empty((5, 30), 'int64')
    x[:] = np.array(range(30)) + rs.randint(-80, 80, 5).reshape(5, 1)
    ember.save(np.sin(x / 1.0 / 20).astype('float64'), tmp_path / "traindata.pt")
    waves = ember.load(tmp_path / "traindata.pt")
    ours, theirs = both(sine_seq)
    for L, seq in ((ember, ours), (torch, theirs)):
        input, target = L.from_numpy(waves[2:, :-1]), L.from_numpy(waves[2:, 1:])
        test_input, test_target = L.from_numpy(waves[:2, :-1]), L.from_numpy(waves[:2, 1:])
        criterion = L.nn.MSELoss()
        optimizer = L.optim.LBFGS(seq.parameters(), lr=0.8)
        seq.losses = []
        for i in range(2):
            def closure():
                optimizer.zero_grad()
                loss = criterion(seq(input), target)
                seq.losses.append(loss.item())
                loss.backward()
                return loss
            optimizer.step(closure)
            with L.no_grad():
                pred = seq(test_input, future=5)
                seq.losses.append(criterion(pred[:, :-5], test_target).item())
                seq.pred = pred.detach().numpy()
    np.testing.assert_allclose(ours.losses, theirs.losses, rtol=1e-9)
    np.testing.assert_allclose(ours.pred, theirs.pred, rtol=1e-8, atol=1e-10)


# ------------------------------------------------------------------------ super_resolution/model.py (PixelShuffle)

def super_res(torch, upscale_factor=3):
    nn, init = torch.nn, torch.nn.init

    class Net(nn.Module):
        def __init__(self):
            super(Net, self).__init__()
            self.relu = nn.ReLU()
            self.conv1 = nn.Conv2d(1, 8, (5, 5), (1, 1), (2, 2))
            self.conv2 = nn.Conv2d(8, 8, (3, 3), (1, 1), (1, 1))
            self.conv3 = nn.Conv2d(8, 4, (3, 3), (1, 1), (1, 1))
            self.conv4 = nn.Conv2d(4, upscale_factor ** 2, (3, 3), (1, 1), (1, 1))
            self.pixel_shuffle = nn.PixelShuffle(upscale_factor)
            init.orthogonal_(self.conv1.weight, init.calculate_gain('relu'))
            init.orthogonal_(self.conv2.weight, init.calculate_gain('relu'))
            init.orthogonal_(self.conv3.weight, init.calculate_gain('relu'))
            init.orthogonal_(self.conv4.weight)

        def forward(self, x):
            x = self.relu(self.conv1(x))
            x = self.relu(self.conv2(x))
            x = self.relu(self.conv3(x))
            return self.pixel_shuffle(self.conv4(x))

    return Net()


def test_super_resolution_matches_torch():
    ours, theirs = both(super_res)
    hr = np.random.default_rng(0).random((4, 1, 12, 12), dtype=np.float32)
    for L, model in ((ember, ours), (torch, theirs)):
        target = L.tensor(hr)
        input = L.nn.functional.avg_pool2d(target, 3)
        train_set = L.utils.data.TensorDataset(input, target)
        loader = L.utils.data.DataLoader(dataset=train_set, batch_size=2, shuffle=False)
        criterion = L.nn.MSELoss()
        optimizer = L.optim.Adam(model.parameters(), lr=0.01)
        model.losses = []
        for batch in loader:
            optimizer.zero_grad()
            loss = criterion(model(batch[0]), batch[1])
            loss.backward()
            optimizer.step()
            model.losses.append(loss.item())
        with L.no_grad():
            model.psnr = 10 * math.log10(1 / criterion(model(input), target).item())
    np.testing.assert_allclose(ours.losses + [ours.psnr], theirs.losses + [theirs.psnr], rtol=1e-5)
    close_params(ours, theirs, rtol=1e-4, atol=1e-6)
    # the orthogonal initialisation itself: W W^T = gain^2 I for the (out, in*k*k) matrix
    w = super_res(ember).conv1.weight.detach().reshape(8, -1)
    close(w @ w.T, ember.eye(8) * 2.0, atol=1e-5)


# ---------------------------------------------------------------------------------- gat/main.py, gcn/main.py

def graph_net(torch, kind):
    nn, F = torch.nn, torch.nn.functional

    class GraphAttentionLayer(nn.Module):
        def __init__(self, in_features, out_features, n_heads, concat=False, dropout=0.4, leaky_relu_slope=0.2):
            super(GraphAttentionLayer, self).__init__()
            self.n_heads, self.concat, self.dropout = n_heads, concat, dropout
            if concat:
                self.out_features = out_features
                self.n_hidden = out_features // n_heads
            else:
                self.n_hidden = out_features
            self.W = nn.Parameter(torch.empty(size=(in_features, self.n_hidden * n_heads)))
            self.a = nn.Parameter(torch.empty(size=(n_heads, 2 * self.n_hidden, 1)))
            self.leakyrelu = nn.LeakyReLU(leaky_relu_slope)
            nn.init.xavier_normal_(self.W)
            nn.init.xavier_normal_(self.a)

        def forward(self, h, adj_mat):
            n_nodes = h.shape[0]
            h_transformed = torch.mm(h, self.W)
            h_transformed = F.dropout(h_transformed, self.dropout, training=self.training)
            h_transformed = h_transformed.view(n_nodes, self.n_heads, self.n_hidden).permute(1, 0, 2)
            source_scores = torch.matmul(h_transformed, self.a[:, :self.n_hidden, :])
            target_scores = torch.matmul(h_transformed, self.a[:, self.n_hidden:, :])
            e = self.leakyrelu(source_scores + target_scores.mT)
            connectivity_mask = -9e16 * torch.ones_like(e)
            e = torch.where(adj_mat > 0, e, connectivity_mask)
            attention = F.softmax(e, dim=-1)
            attention = F.dropout(attention, self.dropout, training=self.training)
            h_prime = torch.matmul(attention, h_transformed)
            if self.concat:
                return h_prime.permute(1, 0, 2).contiguous().view(n_nodes, self.out_features)
            return h_prime.mean(dim=0)

    class GAT(nn.Module):
        def __init__(self, in_features, n_hidden, n_heads, num_classes, concat=False, dropout=0.4):
            super(GAT, self).__init__()
            self.gat1 = GraphAttentionLayer(in_features, n_hidden, n_heads, concat=concat, dropout=dropout)
            self.gat2 = GraphAttentionLayer(n_hidden, num_classes, 1, concat=False, dropout=dropout)

        def forward(self, input_tensor, adj_mat):
            x = F.elu(self.gat1(input_tensor, adj_mat))
            return F.log_softmax(self.gat2(x, adj_mat), dim=1)

    class GraphConv(nn.Module):
        def __init__(self, input_dim, output_dim, use_bias=False):
            super(GraphConv, self).__init__()
            self.kernel = nn.Parameter(torch.Tensor(input_dim, output_dim))
            nn.init.xavier_normal_(self.kernel)
            self.bias = None
            if use_bias:
                self.bias = nn.Parameter(torch.Tensor(output_dim))
                nn.init.zeros_(self.bias)

        def forward(self, input_tensor, adj_mat):
            support = torch.mm(input_tensor, self.kernel)
            output = torch.spmm(adj_mat, support)
            return output + self.bias if self.bias is not None else output

    class GCN(nn.Module):
        def __init__(self, input_dim, hidden_dim, output_dim, use_bias=True, dropout_p=0.1):
            super(GCN, self).__init__()
            self.gc1 = GraphConv(input_dim, hidden_dim, use_bias=use_bias)
            self.gc2 = GraphConv(hidden_dim, output_dim, use_bias=use_bias)
            self.dropout = nn.Dropout(dropout_p)

        def forward(self, input_tensor, adj_mat):
            x = self.dropout(F.relu(self.gc1(input_tensor, adj_mat)))
            return F.log_softmax(self.gc2(x, adj_mat), dim=1)

    return GAT(10, 8, 2, 3, concat=True) if kind == "gat" else GCN(10, 8, 3)


@pytest.mark.parametrize("kind", ["gat", "gcn"])
def test_graph_networks_match_torch(kind):
    ours, theirs = both(graph_net, kind)
    rng = np.random.default_rng(1)
    x, adj = rng.random((12, 10), dtype=np.float32), (rng.random((12, 12)) > 0.6).astype(np.float32)
    labels = rng.integers(0, 3, 12)
    for L, model in ((ember, ours), (torch, theirs)):
        features, adj_mat = L.tensor(x), L.tensor(adj) + L.eye(12)
        degree_mat = L.sqrt(1 / L.sum(adj_mat, dim=1))
        degree_mat[degree_mat == float('inf')] = 0
        adj_mat = L.diag(degree_mat) @ adj_mat @ L.diag(degree_mat)
        target, idx = L.tensor(labels), L.tensor([3, 1, 4, 0, 5, 9, 2, 6])
        optimizer = L.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
        criterion = L.nn.NLLLoss()
        model.eval()                   # dropout's masks come from each library's own generator
        model.losses = []
        for epoch in range(3):
            optimizer.zero_grad()
            output = model(features, adj_mat)
            loss = criterion(output[idx], target[idx])
            loss.backward()
            optimizer.step()
            with L.no_grad():
                acc = (output.argmax(dim=1) == target).float().sum() / len(target)
            model.losses += [loss.item(), acc.item()]
    np.testing.assert_allclose(ours.losses, theirs.losses, rtol=1e-5)
    close_params(ours, theirs, rtol=1e-4, atol=1e-6)


# ---------------------------------------------------------------------------- mnist_forward_forward/main.py

def forward_forward(torch, dims=(20, 12, 12), threshold=2.0, epochs=3):
    nn = torch.nn

    class Layer(nn.Linear):
        def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
            super().__init__(in_features, out_features, bias, device, dtype)
            self.relu = torch.nn.ReLU()
            self.opt = torch.optim.Adam(self.parameters(), lr=0.03)
            self.threshold, self.num_epochs = threshold, epochs

        def forward(self, x):
            x_direction = x / (x.norm(2, 1, keepdim=True) + 1e-4)
            return self.relu(torch.mm(x_direction, self.weight.T) + self.bias.unsqueeze(0))

        def train(self, x_pos, x_neg):       # overrides Module.train, as the example does
            self.losses = []
            for i in range(self.num_epochs):
                g_pos = self.forward(x_pos).pow(2).mean(1)
                g_neg = self.forward(x_neg).pow(2).mean(1)
                loss = torch.log1p(torch.exp(torch.cat([-g_pos + self.threshold, g_neg - self.threshold]))).mean()
                self.opt.zero_grad()
                loss.backward()
                self.opt.step()
                self.losses.append(loss.item())
            return self.forward(x_pos).detach(), self.forward(x_neg).detach()

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = []
            for d in range(len(dims) - 1):
                self.layers = self.layers + [Layer(dims[d], dims[d + 1])]
            self.stack = nn.ModuleList(self.layers)   # (the example keeps them in a plain list)

        def predict(self, x):
            goodness_per_label = []
            for label in range(10):
                h = overlay_y_on_x(torch, x, label)
                goodness = []
                for layer in self.layers:
                    h = layer(h)
                    goodness = goodness + [h.pow(2).mean(1)]
                goodness_per_label += [sum(goodness).unsqueeze(1)]
            return torch.cat(goodness_per_label, 1).argmax(1)

        def train(self, x_pos, x_neg):
            h_pos, h_neg = x_pos, x_neg
            for layer in self.layers:
                h_pos, h_neg = layer.train(h_pos, h_neg)

    return Net()


def overlay_y_on_x(torch, x, y, classes=10):
    x_ = x.clone()
    x_[:, :classes] *= 0.0
    x_[range(x.shape[0]), y] = x.max()
    return x_


def test_forward_forward_matches_torch():
    ours, theirs = both(forward_forward)
    rng = np.random.default_rng(0)
    xs, ys, y_negs = rng.random((6, 20), dtype=np.float32), rng.integers(0, 10, 6), rng.integers(0, 10, 6)
    for L, net in ((ember, ours), (torch, theirs)):
        x, y = L.tensor(xs), L.tensor(ys)
        x_pos = overlay_y_on_x(L, x, y)
        x_neg = overlay_y_on_x(L, x, L.tensor(y_negs))
        net.train(x_pos, x_neg)
        net.out = [net.predict(x).eq(y).float().mean().item()] + [v for layer in net.layers for v in layer.losses]
        net.overlay = x_pos
    close(ours.overlay, theirs.overlay)
    np.testing.assert_allclose(ours.out, theirs.out, rtol=1e-5)
    close_params(ours, theirs, rtol=1e-4, atol=1e-6)
    assert ours.training   # Layer.train(x_pos, x_neg) replaced Module.train: the mode never changed


# ------------------------------------------------------------------------ language_translation/src/model.py

def translator(torch):
    nn = torch.nn

    class PositionalEncoding(nn.Module):
        def __init__(self, emb_size, dropout, maxlen=50):
            super(PositionalEncoding, self).__init__()
            den = torch.exp(- torch.arange(0, emb_size, 2) * math.log(10000) / emb_size)
            pos = torch.arange(0, maxlen).reshape(maxlen, 1)
            pos_embedding = torch.zeros((maxlen, emb_size))
            pos_embedding[:, 0::2] = torch.sin(pos * den)
            pos_embedding[:, 1::2] = torch.cos(pos * den)
            self.dropout = nn.Dropout(dropout)
            self.register_buffer('pos_embedding', pos_embedding.unsqueeze(-2))

        def forward(self, token_embedding):
            return self.dropout(token_embedding + self.pos_embedding[:token_embedding.size(0), :])

    class Translator(nn.Module):
        def __init__(self):
            super(Translator, self).__init__()
            self.src_embedding, self.tgt_embedding = nn.Embedding(20, 16), nn.Embedding(22, 16)
            self.pos_enc = PositionalEncoding(16, 0.0)
            self.transformer = nn.Transformer(d_model=16, nhead=2, num_encoder_layers=2, num_decoder_layers=2,
                                              dim_feedforward=32, dropout=0.0)
            self.ff = nn.Linear(16, 22)
            for p in self.parameters():
                if p.dim() > 1:
                    nn.init.xavier_uniform_(p)

        def forward(self, src, trg, src_mask, tgt_mask, src_padding_mask, tgt_padding_mask, memory_key_padding_mask):
            src_emb = self.pos_enc(self.src_embedding(src))
            tgt_emb = self.pos_enc(self.tgt_embedding(trg))
            outs = self.transformer(src_emb, tgt_emb, src_mask, tgt_mask, None, src_padding_mask, tgt_padding_mask,
                                    memory_key_padding_mask)
            return self.ff(outs)

        def encode(self, src, src_mask):
            return self.transformer.encoder(self.pos_enc(self.src_embedding(src)), src_mask)

        def decode(self, tgt, memory, tgt_mask):
            return self.transformer.decoder(self.pos_enc(self.tgt_embedding(tgt)), memory, tgt_mask)

    return Translator()


def square_subsequent_mask(torch, size):
    mask = (torch.triu(torch.ones((size, size))) == 1).transpose(0, 1)
    return mask.float().masked_fill(mask == 0, float('-inf')).masked_fill(mask == 1, float(0.0))


def greedy_decode(torch, model, src, src_mask, max_len, start_symbol, end_symbol):
    memory = model.encode(src, src_mask)
    ys = torch.ones(1, 1).fill_(start_symbol).type(torch.long)
    for _ in range(max_len - 1):
        tgt_mask = square_subsequent_mask(torch, ys.size(0)).type(torch.bool)
        out = model.decode(ys, memory, tgt_mask).transpose(0, 1)
        _, next_word = torch.max(model.ff(out[:, -1]), dim=1)
        next_word = next_word.item()
        ys = torch.cat([ys, torch.ones(1, 1).type_as(src.data).fill_(next_word)], dim=0)
        if next_word == end_symbol:
            break
    return ys


def test_language_translation_matches_torch():
    ours, theirs = both(translator)
    rng = np.random.default_rng(0)
    src_np, tgt_np = rng.integers(3, 20, (7, 3)), rng.integers(3, 22, (6, 3))
    src_np[5:, 0], tgt_np[4:, 1] = 1, 1
    for L, model in ((ember, ours), (torch, theirs)):
        src, tgt = L.tensor(src_np), L.tensor(tgt_np)
        loss_fn = L.nn.CrossEntropyLoss(ignore_index=1)
        optim = L.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.98), eps=1e-9)
        model.train()
        model.losses = []
        for step in range(2):
            tgt_input = tgt[:-1, :]
            tgt_mask = square_subsequent_mask(L, tgt_input.shape[0])
            src_mask = L.zeros((src.shape[0], src.shape[0])).type(L.bool)
            src_padding_mask, tgt_padding_mask = (src == 1).transpose(0, 1), (tgt_input == 1).transpose(0, 1)
            with __import__("warnings").catch_warnings():
                __import__("warnings").simplefilter("ignore")   # torch: mismatched mask types, nested tensors
                logits = model(src, tgt_input, src_mask, tgt_mask, src_padding_mask, tgt_padding_mask,
                               src_padding_mask)
            optim.zero_grad()
            loss = loss_fn(logits.reshape(-1, logits.shape[-1]), tgt[1:, :].reshape(-1))
            loss.backward()
            optim.step()
            model.losses.append(loss.item())
        model.eval()
        with L.no_grad():
            model.decoded = greedy_decode(L, model, src[:, :1], L.zeros(7, 7).type(L.bool), 6, 2, 3).flatten().tolist()
    np.testing.assert_allclose(ours.losses, theirs.losses, rtol=1e-5)
    assert ours.decoded == theirs.decoded
    close_params(ours, theirs, rtol=1e-4, atol=1e-6, noise=("in_proj_bias",), moved=4e-3)


# ------------------------------------------------------------- fast_neural_style/neural_style/transformer_net.py

def transformer_net(torch):
    nn = torch.nn

    class ConvLayer(nn.Module):
        def __init__(self, in_channels, out_channels, kernel_size, stride):
            super(ConvLayer, self).__init__()
            self.reflection_pad = nn.ReflectionPad2d(kernel_size // 2)
            self.conv2d = nn.Conv2d(in_channels, out_channels, kernel_size, stride)

        def forward(self, x):
            return self.conv2d(self.reflection_pad(x))

    class ResidualBlock(nn.Module):
        def __init__(self, channels):
            super(ResidualBlock, self).__init__()
            self.conv1, self.in1 = ConvLayer(channels, channels, 3, 1), nn.InstanceNorm2d(channels, affine=True)
            self.conv2, self.in2 = ConvLayer(channels, channels, 3, 1), nn.InstanceNorm2d(channels, affine=True)
            self.relu = nn.ReLU()

        def forward(self, x):
            out = self.relu(self.in1(self.conv1(x)))
            return self.in2(self.conv2(out)) + x

    class UpsampleConvLayer(nn.Module):
        def __init__(self, in_channels, out_channels, kernel_size, stride, upsample=None):
            super(UpsampleConvLayer, self).__init__()
            self.upsample = upsample
            self.reflection_pad = nn.ReflectionPad2d(kernel_size // 2)
            self.conv2d = nn.Conv2d(in_channels, out_channels, kernel_size, stride)

        def forward(self, x):
            if self.upsample:
                x = torch.nn.functional.interpolate(x, mode='nearest', scale_factor=self.upsample)
            return self.conv2d(self.reflection_pad(x))

    class TransformerNet(nn.Module):
        def __init__(self):
            super(TransformerNet, self).__init__()
            self.conv1, self.in1 = ConvLayer(3, 4, 9, 1), nn.InstanceNorm2d(4, affine=True)
            self.conv2, self.in2 = ConvLayer(4, 8, 3, 2), nn.InstanceNorm2d(8, affine=True)
            self.res1 = ResidualBlock(8)
            self.deconv1 = UpsampleConvLayer(8, 4, 3, 1, upsample=2)
            self.in4 = nn.InstanceNorm2d(4, affine=True)
            self.deconv3 = ConvLayer(4, 3, 9, 1)
            self.relu = nn.ReLU()

        def forward(self, X):
            y = self.relu(self.in1(self.conv1(X)))
            y = self.relu(self.in2(self.conv2(y)))
            y = self.res1(y)
            y = self.relu(self.in4(self.deconv1(y)))
            return self.deconv3(y)

    return TransformerNet()


def gram_matrix(y):
    (b, ch, h, w) = y.size()
    features = y.view(b, ch, w * h)
    return features.bmm(features.transpose(1, 2)) / (ch * h * w)


def test_fast_neural_style_transformer_net_matches_torch():
    ours, theirs = both(transformer_net)
    x_np = np.random.default_rng(0).random((2, 3, 12, 12), dtype=np.float32) * 255
    for L, model in ((ember, ours), (torch, theirs)):
        x = L.tensor(x_np)
        opt, mse = L.optim.Adam(model.parameters(), 1e-3), L.nn.MSELoss()
        model.losses = []
        for i in range(2):
            opt.zero_grad()
            y = model(x)
            loss = mse(y, x) * 1e-3 + mse(gram_matrix(y), gram_matrix(x)) * 1e-6
            loss.backward()
            opt.step()
            model.losses.append(loss.item())
    np.testing.assert_allclose(ours.losses, theirs.losses, rtol=1e-5)
    # every bias before an InstanceNorm (res1.in2's too: its per-channel constant reaches in4 through linear
    # layers) has a zero gradient in exact arithmetic
    close_params(ours, theirs, rtol=1e-4, atol=1e-5, noise=("conv1.conv2d.bias", "conv2.conv2d.bias",
                                                           "deconv1.conv2d.bias", "res1.in2.bias"), moved=4e-3)


# ------------------------------------------------------------------------ karpathy/makemore (RNN/GRU cells, BoW)

def makemore(torch, cell_type):
    nn, F = torch.nn, torch.nn.functional
    vocab_size, block_size, n_embd, n_embd2 = 7, 5, 6, 8

    class RNNCell(nn.Module):
        def __init__(self):
            super().__init__()
            self.xh_to_h = nn.Linear(n_embd + n_embd2, n_embd2)

        def forward(self, xt, hprev):
            return F.tanh(self.xh_to_h(torch.cat([xt, hprev], dim=1)))

    class GRUCell(nn.Module):
        def __init__(self):
            super().__init__()
            self.xh_to_z = nn.Linear(n_embd + n_embd2, n_embd2)
            self.xh_to_r = nn.Linear(n_embd + n_embd2, n_embd2)
            self.xh_to_hbar = nn.Linear(n_embd + n_embd2, n_embd2)

        def forward(self, xt, hprev):
            xh = torch.cat([xt, hprev], dim=1)
            r = F.sigmoid(self.xh_to_r(xh))
            hbar = F.tanh(self.xh_to_hbar(torch.cat([xt, r * hprev], dim=1)))
            z = F.sigmoid(self.xh_to_z(xh))
            return (1 - z) * hprev + z * hbar

    class RNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.start = nn.Parameter(torch.zeros(1, n_embd2))
            self.wte = nn.Embedding(vocab_size, n_embd)
            self.cell = RNNCell() if cell_type == 'rnn' else GRUCell()
            self.lm_head = nn.Linear(n_embd2, vocab_size)

        def forward(self, idx, targets=None):
            b, t = idx.size()
            emb = self.wte(idx)
            hprev = self.start.expand((b, -1))
            hiddens = []
            for i in range(t):
                hprev = self.cell(emb[:, i, :], hprev)
                hiddens.append(hprev)
            logits = self.lm_head(torch.stack(hiddens, 1))
            loss = None
            if targets is not None:
                loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
            return logits, loss

    class CausalBoW(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("bias", torch.tril(torch.ones(block_size, block_size)).view(1, block_size, block_size))

        def forward(self, x):
            B, T, C = x.size()
            att = torch.zeros((B, T, T), device=x.device)
            att = att.masked_fill(self.bias[:, :T, :T] == 0, float('-inf'))
            att = F.softmax(att, dim=-1)
            return att @ x

    class BoW(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(vocab_size, n_embd), nn.Embedding(block_size, n_embd)
            self.cbow = CausalBoW()
            self.mlp = nn.ModuleDict(dict(c_fc=nn.Linear(n_embd, n_embd2), c_proj=nn.Linear(n_embd2, n_embd)))
            self.lm_head = nn.Linear(n_embd, vocab_size)

        def forward(self, idx, targets=None):
            b, t = idx.size()
            pos = torch.arange(0, t, dtype=torch.long, device=idx.device).unsqueeze(0)
            x = self.wte(idx) + self.wpe(pos)
            x = x + self.cbow(x)
            m = self.mlp
            x = x + m.c_proj(F.tanh(m.c_fc(x)))
            logits = self.lm_head(x)
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
            return logits, loss

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(vocab_size + 1, n_embd)
            self.mlp = nn.Sequential(nn.Linear(block_size * n_embd, n_embd2), nn.Tanh(),
                                     nn.Linear(n_embd2, vocab_size))

        def forward(self, idx, targets=None):
            embs = []
            for k in range(block_size):
                tok_emb = self.wte(idx)
                idx = torch.roll(idx, 1, 1)
                idx[:, 0] = vocab_size
                embs.append(tok_emb)
            logits = self.mlp(torch.cat(embs, -1))
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
            return logits, loss

    return {"rnn": RNN, "gru": RNN, "bow": BoW, "mlp": MLP}[cell_type]()


@pytest.mark.parametrize("cell_type", ["rnn", "gru", "bow", "mlp"])
def test_makemore_models_match_torch(cell_type):
    ours, theirs = both(makemore, cell_type)
    rng = np.random.default_rng(0)
    X = rng.integers(0, 7, (4, 5))
    Y = np.concatenate([X[:, 1:], rng.integers(0, 7, (4, 1))], 1)
    Y[0, 3:] = -1
    for L, model in ((ember, ours), (torch, theirs)):
        optimizer = L.optim.AdamW(model.parameters(), lr=5e-3, weight_decay=0.01, betas=(0.9, 0.99), eps=1e-8)
        model.losses = []
        for step in range(3):
            logits, loss = model(L.tensor(X), L.tensor(Y))
            model.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            model.losses.append(loss.item())
        with L.inference_mode():
            model.losses.append(L.tensor([model(L.tensor(X), L.tensor(Y))[1].item()]).mean().item())
    np.testing.assert_allclose(ours.losses, theirs.losses, rtol=1e-5)
    close_params(ours, theirs, rtol=1e-4, atol=1e-6)


# ------------------------------------------------------------------- karpathy/minGPT (configure_optimizers, GPT)

def min_gpt(torch):
    nn, F = torch.nn, torch.nn.functional
    n_embd, n_head, block_size, vocab_size, n_layer = 8, 2, 6, 9, 2

    class NewGELU(nn.Module):
        def forward(self, x):
            return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))

    class CausalSelfAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn, self.c_proj = nn.Linear(n_embd, 3 * n_embd), nn.Linear(n_embd, n_embd)
            self.attn_dropout, self.resid_dropout = nn.Dropout(0.0), nn.Dropout(0.0)
            self.register_buffer("bias", torch.tril(torch.ones(block_size, block_size))
                                 .view(1, 1, block_size, block_size))

        def forward(self, x):
            B, T, C = x.size()
            q, k, v = self.c_attn(x).split(n_embd, dim=2)
            k = k.view(B, T, n_head, C // n_head).transpose(1, 2)
            q = q.view(B, T, n_head, C // n_head).transpose(1, 2)
            v = v.view(B, T, n_head, C // n_head).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float('-inf'))
            att = self.attn_dropout(F.softmax(att, dim=-1))
            y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
            return self.resid_dropout(self.c_proj(y))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1, self.attn, self.ln_2 = nn.LayerNorm(n_embd), CausalSelfAttention(), nn.LayerNorm(n_embd)
            self.mlp = nn.ModuleDict(dict(c_fc=nn.Linear(n_embd, 4 * n_embd), c_proj=nn.Linear(4 * n_embd, n_embd),
                                          act=NewGELU(), dropout=nn.Dropout(0.0)))
            m = self.mlp
            self.mlpf = lambda x: m.dropout(m.c_proj(m.act(m.c_fc(x))))

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlpf(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.transformer = nn.ModuleDict(dict(wte=nn.Embedding(vocab_size, n_embd),
                                                  wpe=nn.Embedding(block_size, n_embd), drop=nn.Dropout(0.0),
                                                  h=nn.ModuleList([Block() for _ in range(n_layer)]),
                                                  ln_f=nn.LayerNorm(n_embd)))
            self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
            self.apply(self._init_weights)
            for pn, p in self.named_parameters():
                if pn.endswith('c_proj.weight'):
                    torch.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * n_layer))
            self.n_params = sum(p.numel() for p in self.transformer.parameters())

        def _init_weights(self, module):
            if isinstance(module, nn.Linear):
                torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
                if module.bias is not None:
                    torch.nn.init.zeros_(module.bias)
            elif isinstance(module, nn.Embedding):
                torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            elif isinstance(module, nn.LayerNorm):
                torch.nn.init.zeros_(module.bias)
                torch.nn.init.ones_(module.weight)

        def configure_optimizers(self, learning_rate, weight_decay, betas):
            decay, no_decay = set(), set()
            whitelist_weight_modules = (torch.nn.Linear, )
            blacklist_weight_modules = (torch.nn.LayerNorm, torch.nn.Embedding)
            for mn, m in self.named_modules():
                for pn, p in m.named_parameters():
                    fpn = '%s.%s' % (mn, pn) if mn else pn
                    if pn.endswith('bias'):
                        no_decay.add(fpn)
                    elif pn.endswith('weight') and isinstance(m, whitelist_weight_modules):
                        decay.add(fpn)
                    elif pn.endswith('weight') and isinstance(m, blacklist_weight_modules):
                        no_decay.add(fpn)
            param_dict = {pn: p for pn, p in self.named_parameters()}
            assert len(decay & no_decay) == 0 and len(param_dict.keys() - (decay | no_decay)) == 0
            optim_groups = [
                {"params": [param_dict[pn] for pn in sorted(list(decay))], "weight_decay": weight_decay},
                {"params": [param_dict[pn] for pn in sorted(list(no_decay))], "weight_decay": 0.0},
            ]
            return torch.optim.AdamW(optim_groups, lr=learning_rate, betas=betas)

        def forward(self, idx, targets=None):
            b, t = idx.size()
            pos = torch.arange(0, t, dtype=torch.long, device=idx.device).unsqueeze(0)
            x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))
            for block in self.transformer.h:
                x = block(x)
            logits = self.lm_head(self.transformer.ln_f(x))
            loss = None
            if targets is not None:
                loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
            return logits, loss

        @torch.no_grad()
        def generate(self, idx, max_new_tokens, top_k=None):
            for _ in range(max_new_tokens):
                idx_cond = idx if idx.size(1) <= block_size else idx[:, -block_size:]
                logits, _ = self(idx_cond)
                logits = logits[:, -1, :]
                if top_k is not None:
                    v, _ = torch.topk(logits, top_k)
                    logits[logits < v[:, [-1]]] = -float('Inf')
                probs = F.softmax(logits, dim=-1)
                _, idx_next = torch.topk(probs, k=1, dim=-1)
                idx = torch.cat((idx, idx_next), dim=1)
            return idx

    return GPT()


def test_min_gpt_trainer_steps_match_torch():
    ours, theirs = both(min_gpt)
    assert ours.n_params == theirs.n_params
    rng = np.random.default_rng(0)
    x = rng.integers(0, 9, (3, 6))
    y = np.concatenate([x[:, 1:], np.full((3, 1), -1)], 1)
    for L, model in ((ember, ours), (torch, theirs)):
        optimizer = model.configure_optimizers(5e-3, 0.1, (0.9, 0.95))
        model.train()
        model.losses = [[len(g["params"]) for g in optimizer.param_groups]]
        for it in range(3):
            logits, loss = model(L.tensor(x), L.tensor(y))
            model.zero_grad(set_to_none=True)
            loss.backward()
            L.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            model.losses.append(loss.item())
        model.eval()
        model.generated = model.generate(L.tensor(x[:1, :2]), 6, top_k=3).tolist()
    assert ours.losses[0] == theirs.losses[0]
    np.testing.assert_allclose(ours.losses[1:], theirs.losses[1:], rtol=1e-5)
    assert ours.generated == theirs.generated
    close_params(ours, theirs, rtol=1e-4, atol=1e-6, noise=("c_attn.bias",), moved=3e-2)


# -------------------------------------------- pytorch/examples distributed/minGPT-ddp (nn.MultiheadAttention, amp)

def gpt_ddp(torch):
    nn, F = torch.nn, torch.nn.functional
    n_embd, block_size, vocab = 8, 6, 11

    class MultiheadAttentionLayer(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_proj = nn.Linear(n_embd, n_embd, device="cpu", dtype=torch.float32)
            # a float 0/1 mask: added to the scores (not a causal mask), as torch reads it
            self.register_buffer("mask", torch.tril(torch.ones(block_size, block_size))
                                 .view(1, 1, block_size, block_size))
            self.attn = torch.nn.MultiheadAttention(embed_dim=n_embd, num_heads=2, dropout=0.0, batch_first=True,
                                                    device="cpu", dtype=torch.float32)

        def forward(self, x):
            _, seq_size, _ = x.size()
            return self.c_proj(self.attn(x, x, x, attn_mask=self.mask[0, 0, :seq_size, :seq_size])[0])

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok_emb = nn.Embedding(vocab, n_embd)
            self.pos_emb = nn.Parameter(torch.zeros(1, block_size, n_embd))
            self.ln1, self.attn, self.ln2 = nn.LayerNorm(n_embd), MultiheadAttentionLayer(), nn.LayerNorm(n_embd)
            self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(), nn.Linear(4 * n_embd, n_embd))
            self.head = nn.Linear(n_embd, vocab, bias=False)
            for pn, p in self.named_parameters():
                if pn.endswith('c_proj.weight'):
                    p.data.normal_(mean=0.0, std=0.02)

        def forward(self, idx, targets):
            x = self.tok_emb(idx) + self.pos_emb[:, :idx.size(1), :]
            x = x + self.attn(self.ln1(x))
            x = x + self.mlp(self.ln2(x))
            logits = self.head(x)
            return logits, F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)

    return GPT()


@pytest.mark.parametrize("use_amp", [False, True], ids=["fp32", "amp_fp16"])
def test_min_gpt_ddp_trainer_batches_match_torch(use_amp):
    ours, theirs = both(gpt_ddp)
    rng = np.random.default_rng(0)
    x, y = rng.integers(0, 11, (3, 6)), rng.integers(0, 11, (3, 6))
    for L, model in ((ember, ours), (torch, theirs)):
        optimizer = L.optim.AdamW(model.parameters(), lr=1e-2, betas=(0.9, 0.95))
        scaler = L.amp.GradScaler("cpu")
        model.losses = []
        for it in range(3):           # Trainer._run_batch, one process
            with L.set_grad_enabled(True), L.amp.autocast(device_type="cpu", dtype=L.float16, enabled=use_amp):
                _, loss = model(L.tensor(x), L.tensor(y))
            optimizer.zero_grad(set_to_none=True)
            if use_amp:
                scaler.scale(loss).backward()
                L.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                scaler.step(optimizer)
                scaler.update()
            else:
                loss.backward()
                L.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
            model.losses += [loss.item(), scaler.get_scale() if use_amp else 0.0]
    np.testing.assert_allclose(ours.losses, theirs.losses, rtol=1e-4 if use_amp else 1e-5)   # float16 GEMMs: an ulp is 1e-3
    # (float16 gradients: Adam at lr 1e-2 turns their rounding into weight differences up to ~1e-3)
    close_params(ours, theirs, rtol=1e-3 if use_amp else 1e-4, atol=1e-3 if use_amp else 1e-6,
                 noise=("in_proj_bias",), moved=6e-2)
