"""The planner (ember.summary, ember/planner/): the notes' numbers for VGG16, hand counts for ResNet-18,
the Keras MLP and a small GPT, the dry-run peak against a real training step's peak, devices, errors.

Models are built on device='meta' (no memory, no init time) except where a real step is measured."""
import math

import pytest

import ember
import ember.nn as nn
from ember.planner import DEVICES, PlanError, get_device
from ember.planner.dryrun import check_optimizer, count_forward, dry_run_step, measure_training_peak, meta_twin, \
    target_shape
from ember.planner.tracker import reshape_strides
import planner_models as M

GiB = 1 << 30


@pytest.fixture(scope="module")
def vgg():
    return ember.summary(M.vgg16(device="meta"), (3, 224, 224), batch_size=128, verbose=False)


# ---------------------------------------------------------------- the notes' VGG16 accounting
def test_vgg16_224_reproduces_the_notes(vgg):
    assert vgg.total_params == vgg.trainable_params == 138_357_544
    assert round(vgg.param_bytes / 2**20, 2) == 527.79
    assert vgg.activation_values == 15_237_608
    assert vgg.activation_bytes == 60_950_432 and round(vgg.activation_bytes / 2**20, 2) == 58.13
    assert vgg.macs == 15_470_264_320
    b = vgg.training_bytes(128, "sgd-momentum")
    assert b == 17_263_601_120 and round(b / GiB, 2) == 16.08
    # weights x 2 for plain SGD, x 4 for Adam
    assert vgg.training_bytes(128, "sgd") == b - vgg.param_bytes
    assert vgg.training_bytes(128, "adam") == b + vgg.param_bytes


def test_vgg16_layer_table_matches_the_notes_columns(vgg):
    convs = [r for r in vgg.rows if r.kind == "Conv2d"]
    # the notes' "FLOPs" column, bottom to top: 224*224*3*64*3*3 = 86,704,128 for the first conv
    assert [r.macs // 128 for r in convs][:2] == [86_704_128, 1_849_688_064]
    assert [r.params for r in convs][:2] == [1_728 + 64, 36_864 + 64]
    assert sum(r.activations for r in vgg.rows if r.kind == "ReLU") == 0   # in place: not counted twice
    assert sum(r.activations for r in vgg.rows if r.kind == "Dropout") == 0
    assert sum(r.activations for r in vgg.rows if r.kind in ("AdaptiveAvgPool2d", "Flatten")) == 0   # views


def test_vgg16_notes_variant_without_avgpool_counts_the_same():
    s = ember.summary(M.vgg16(avgpool=False, device="meta"), (3, 224, 224), verbose=False)
    assert (s.total_params, s.activation_values, s.macs) == (138_357_544, 15_237_608, 15_470_264_320)


def test_vgg16_at_batch_128_does_not_fit_a_gtx_1080(vgg):
    assert not vgg.fits("GTX 1080", 128)
    assert vgg.training_bytes(128) > get_device("GTX 1080").memory
    assert vgg.max_batch_size("GTX 1080", rule="notes") == 56   # (8 GiB - 3 x 527.79 MiB) / (2 x 58.13 MiB)
    b = vgg.max_batch_size("GTX 1080")
    assert 1 <= b < 128
    assert vgg.peak_training_bytes(b) <= 8 * GiB < vgg.peak_training_bytes(b + 1)


def test_vgg16_cifar_of_the_appendix():
    s = ember.summary(M.vgg16(10, cifar=True, device="meta"), (3, 32, 32), verbose=False)
    assert s.macs == 332_111_872
    convs = 14_714_688   # the 13 convolutions' weights and biases, as at 224
    assert s.total_params == convs + (512 * 4096 + 4096) + (4096 * 4096 + 4096) + (4096 * 10 + 10)
    maps = [32 * 32 * 64] * 2 + [16 * 16 * 64] + [16 * 16 * 128] * 2 + [8 * 8 * 128] + [8 * 8 * 256] * 3 \
        + [4 * 4 * 256] + [4 * 4 * 512] * 3 + [2 * 2 * 512] + [2 * 2 * 512] * 3 + [512] + [4096, 4096, 10]
    assert s.activation_values == 3 * 32 * 32 + sum(maps)


def test_vgg16_at_batch_1024_is_planned_without_memory():
    s = ember.summary(M.vgg16(device="meta"), (3, 224, 224), verbose=False)
    peak = s.peak_training_bytes(1024)
    assert peak > 1024 * s.activation_bytes   # ~190 GB: planned, nothing allocated


# ---------------------------------------------------------------- hand counts
def _conv(h, w, cout, cin, k):
    return h * w * cout * cin * k * k


def test_resnet18_hand_count():
    s = ember.summary(M.resnet18(device="meta"), (3, 224, 224), verbose=False)
    assert s.total_params == 11_689_512   # torchvision's count
    macs = _conv(112, 112, 64, 3, 7) + 4 * _conv(56, 56, 64, 64, 3)
    for cin, cout, hw in ((64, 128, 28), (128, 256, 14), (256, 512, 7)):
        macs += _conv(hw, hw, cout, cin, 3) + 3 * _conv(hw, hw, cout, cout, 3) + _conv(hw, hw, cout, cin, 1)
    macs += 512 * 1000            # fc
    # the adaptive average pool (7x7 -> 1) is a reshape and a mean since session 10: no multiply-adds (an
    # averaging matmul per spatial dim counted 512 * 7 * 7 + 512 * 7 before)
    assert s.macs == macs == 1_814_073_344


def test_keras_mlp_hand_count():
    s = ember.summary(M.keras_mlp(device="meta"), (1, 28, 28), verbose=False)
    assert s.total_params == 79_510 == 784 * 100 + 100 + 100 * 10 + 10
    assert s.macs == 784 * 100 + 100 * 10
    assert s.activation_values == 784 + 100 + 100 + 10   # input, linear, relu (not in place), linear


def test_small_gpt_hand_count():
    V, T, d, H, n = 512, 64, 128, 4, 2
    s = ember.summary(M.GPT(V, T, d, H, n, device="meta"), (T,), input_dtype="int64", verbose=False)
    block = 2 * 2 * d + (d * 3 * d + 3 * d) + (d * d + d) + (d * 4 * d + 4 * d) + (4 * d * d + d)
    assert s.total_params == V * d + T * d + n * block + 2 * d + d * V + V
    attn = 2 * H * T * T * (d // H)   # q @ k^T and att @ v
    per_block = T * d * 3 * d + attn + T * d * d + 2 * T * d * 4 * d
    assert s.macs == n * per_block + T * d * V
    assert s.output_shape == (1, T, V)


# ---------------------------------------------------------------- planned peak vs measured peak
CASES = {
    "mlp": (M.mlp, (512,), 64, "float32", 10),
    "cnn_bn": (M.cnn_bn, (3, 32, 32), 16, "float32", 10),
    "resnet18_64": (M.resnet18, (3, 64, 64), 2, "float32", 1000),
    "gpt": (M.GPT, (64,), 8, "int64", 512),
}
RUNS = [("mlp", "sgd-momentum"), ("mlp", "adam"), ("cnn_bn", "sgd-momentum"), ("cnn_bn", "adam"),
        ("resnet18_64", "sgd-momentum"), ("gpt", "adam")]   # ResNet-18 once: its real steps take seconds


@pytest.mark.parametrize("name,optimizer", RUNS)
def test_planned_peak_within_10_percent_of_a_real_step(name, optimizer):
    """Two real training steps on the CPU under tracemalloc (NumPy reports its allocations to it) against
    the dry run on meta. Both are deterministic byte counts."""
    build, size, batch, in_dtype, classes = CASES[name]
    ember.manual_seed(0)
    model = build()
    plan = dry_run_step(model, size, batch, optimizer, input_dtype=in_dtype)
    if in_dtype == "int64":
        x, y = ember.randint(0, classes, (batch,) + size), ember.randint(0, classes, (batch,) + size)
    else:
        x, y = ember.randn(batch, *size), ember.randint(0, classes, (batch,))
    measured = measure_training_peak(model, x, y, optimizer)
    assert abs(plan.peak / measured - 1) < 0.10, (plan.peak, measured)    # the bound
    assert abs(plan.peak / measured - 1) < 0.05, (plan.peak, measured)    # what the plan reaches (~1%)
    # what backward keeps is most of a step's transient memory, and the rule of thumb leaves it out
    assert 0 < plan.saved < plan.peak - plan.resident


def test_saved_bytes_grow_with_the_batch():
    s = ember.summary(M.cnn_bn(device="meta"), (3, 32, 32), batch_size=4, verbose=False)
    assert s.saved_bytes == s.plan(4).saved
    assert s.plan(8).saved > s.plan(4).saved


def test_reshape_strides_follow_numpy():
    import numpy as np
    base = np.zeros((4, 6, 5))
    for view, shape in ((base[:, 2:4], (4, 2, 5)), (base.transpose(1, 0, 2), (6, 20)), (base[:, :, 1:3], (4, 12)),
                        (base, (24, 5)), (base[::2], (2, 3, 2, 5)), (base.transpose(2, 0, 1), (5, 24)),
                        (base.reshape(-1), (2, 3, 4, 5)), (base[:, ::2], (2, 2, 3, 1, 5, 1)),   # 3-way split, ones
                        (base[:, 0, 0], (4, 1)), (base[:1, :1, 0], (1,)), (base[:1, 0, 0], (1, 1))):
        st = tuple(s // 8 for s in view.strides)
        got = reshape_strides(view.shape, st, shape)
        try:
            expect = tuple(s // 8 for s in view.view().reshape(shape, copy=False).strides)
        except (AttributeError, ValueError, TypeError):
            expect = None
        assert got == expect, (view.shape, view.strides, shape)


# ---------------------------------------------------------------- devices
def test_device_table_and_byte_counts():
    for name in ("i7-7700k", "GTX 1080", "RTX 2080 Ti", "Titan V", "RTX 3090", "RTX 4090", "V100", "A100 40GB",
                 "A100 80GB", "H100", "H200", "TPU v3"):
        assert name in DEVICES
    assert get_device("gtx-1080") is DEVICES["GTX 1080"] and get_device("a100 80gb").memory == 80 * GiB
    assert DEVICES["RTX 2080 Ti"].peak("float32") == 13.4e12   # the notes' figures
    assert DEVICES["Titan V"].peak("float16") == 112e12
    assert get_device(10**9).memory == 10**9
    s = ember.summary(M.keras_mlp(device="meta"), (784,), verbose=False)
    b = s.max_batch_size(10**7)
    assert s.peak_training_bytes(b) <= 10**7 < s.peak_training_bytes(b + 1)
    assert s.max_batch_size(1000) == 0


def test_unknown_device_lists_the_known_ones():
    with pytest.raises(ValueError, match=r"unknown device 'GTX 1070'.*GTX 1080.*A100 80GB.*TPU v3"):
        get_device("GTX 1070")
    with pytest.raises(ValueError, match="known devices"):
        ember.summary(M.keras_mlp(device="meta"), (784,), device="RTX 9090", verbose=False)
    with pytest.raises(ValueError, match="unknown optimizer 'lion'; known: sgd, sgd-momentum, adam"):
        ember.summary(M.keras_mlp(device="meta"), (784,), optimizer="lion", verbose=False)


def test_step_time_from_the_dry_run_flops():
    s = ember.summary(M.keras_mlp(device="meta"), (784,), verbose=False)
    t = s.step_time(32, "A100 40GB", efficiency=0.5)
    # forward 784x100 and 100x10; backward: both weight grads, and the input grad of the second layer only
    assert s.plan(32).step_macs == 32 * (2 * 784 * 100 + 3 * 100 * 10)
    assert t.flops > 2 * s.plan(32).step_macs
    assert t.at_peak == pytest.approx(t.flops / 19.5e12)
    assert t.at_efficiency == pytest.approx(2 * t.at_peak)
    with pytest.raises(ValueError, match="no peak FLOP/s for dtype float32 on TPU v3"):
        s.step_time(32, "TPU v3")


# ---------------------------------------------------------------- errors name the layer and the op
class _ReadsValues(nn.Module):
    def forward(self, x):
        return x * x.sum().item()


class _Caught(nn.Module):
    def forward(self, x):
        try:
            x.sum().item()
        except NotImplementedError:                  # a failed primitive the model handles itself
            pass
        return x


class _CatchesThenFails(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = _Caught(), nn.Linear(9, 2, device="meta")

    def forward(self, x):
        return self.b(self.a(x))


class _Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 8, device="meta"), _ReadsValues())

    def forward(self, x):
        return self.body(x)


def test_a_forward_that_fails_on_meta_names_the_layer_and_the_op():
    with pytest.raises(PlanError, match=r"layer 'body\.1' \(_ReadsValues\), op 'to_device'"):
        ember.summary(_Head(), (4,), verbose=False)
    with pytest.raises(PlanError, match=r"layer '1' \(Linear\), code outside a primitive \(it reads values\) "
                                        r"failed: RuntimeError: linear: input's last dim 8"):
        ember.summary(nn.Sequential(nn.Linear(4, 8, device="meta"), nn.Linear(9, 2, device="meta")), (4,),
                      verbose=False)
    with pytest.raises(PlanError, match=r"layer 'b' \(Linear\), code outside a primitive \(it reads values\) failed: "
                                        r"RuntimeError: linear"):   # not the failure 'a' caught
        ember.summary(_CatchesThenFails(), (4,), verbose=False)
    with pytest.raises(PlanError, match=r"the model's own forward, op 'to_device'"):
        ember.summary(_ReadsValues(), (4,), verbose=False)

    with pytest.raises(PlanError, match=r"layer 'body\.1' \(_ReadsValues\), op 'to_device' failed: NotImplementedErr"):
        dry_run_step(_Head(), (4,), 2)                 # the training step's own forward names the layer too

    def loss_reads_values(out, target):
        return out.to("cpu").sum()
    with pytest.raises(PlanError, match=r"the loss, outside the model, op 'to_device' failed: NotImplementedError"):
        dry_run_step(M.keras_mlp(device="meta"), (784,), 2, loss_fn=loss_reads_values)


def test_the_user_model_is_not_touched():
    model = M.keras_mlp()                     # real CPU weights
    w = model[1].weight
    before = w._data.copy()
    s = ember.summary(model, (784,), batch_size=8, verbose=False)
    s.peak_training_bytes(8, "adam")
    assert model[1].weight is w and not w.is_meta and w.grad is None
    assert (w._data == before).all()


def test_summary_prints_the_table(capsys):
    ember.summary(M.keras_mlp(device="meta"), (1, 28, 28), batch_size=2, device="GTX 1080")
    out = capsys.readouterr().out
    assert "1 (Linear)" in out and "78,500" in out and "79,510" in out
    assert "GTX 1080 (8.00 GiB): fits" in out and "step time" in out
    assert math.isfinite(1.0)


# ---------------------------------------------------------------- the printed table, the devices' errors, step time
class Scaled(nn.Module):
    """A container with a parameter of its own (shown though it is no leaf)."""
    def __init__(self):
        super().__init__()
        self.gain = nn.Parameter(ember.ones(3, device="meta"))
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(x) * self.gain


class Proj(nn.Module):
    """A container with multiply-adds of its own (a matmul by a buffer) and no parameter."""
    def __init__(self):
        super().__init__()
        self.register_buffer("proj", ember.ones(3, 2, device="meta"))
        self.drop = nn.Dropout(0.0)

    def forward(self, x):
        return self.drop(x) @ self.proj


class _Unused(nn.Module):
    def __init__(self):
        super().__init__()
        self.skip = nn.Identity()

    def forward(self, x):
        return x * 2


def test_table_and_totals_by_hand():
    """Linear 4->3: 15 params, 12 mult-adds and 3 values per sample; ReLU 3 values (not in place);
    Scaled's own gain 3 params; Proj 3x2 = 6 mult-adds; dropout nothing. Containers without parameters or
    multiply-adds of their own are left out, the others indented by depth."""
    m = nn.Sequential(nn.Linear(4, 3, device="meta"), nn.Sequential(Scaled(), Proj()))
    s = ember.summary(m, (4,), batch_size=2, verbose=False)
    assert s.table() == "\n".join([
        "---------------------------------------------------------------------",
        "Layer (type)            Output shape  Param #  Activations  Mult-adds",
        "=====================================================================",
        "0 (Linear)              [2, 3]             15            3         12",
        "  1.0 (Scaled)          [2, 3]              3            0          0",
        "    1.0.act (ReLU)      [2, 3]              0            3          0",
        "  1.1 (Proj)            [2, 2]              0            0          6",
        "    1.1.drop (Dropout)  [2, 3]              0            0          0",
        "---------------------------------------------------------------------"])
    # forward FLOPs per sample: linear 2 x 12, relu 3, the gain 3, the matmul 2 x 6
    assert s.totals() == "\n".join([
        "Model: Sequential, input (4,) float32, dtype float32, counted at batch 2",
        "Total params: 18 (0.00 MiB)",
        "Trainable params: 18",
        "Activation values per sample: 10 (0.00 MiB, 4 bytes each)",
        "Mult-adds per sample: 18 (0.000 G)",
        "FLOPs per sample (forward): 42"])
    assert str(s) == s.table() + "\n" + s.totals()
    one = ember.summary(nn.Linear(4, 3, device="meta"), (4,), batch_size=2, verbose=False)
    assert one.table().splitlines()[3] == "(Linear)      [2, 3]             15            3         12"
    empty = ember.summary(_Unused(), (4,), verbose=False)   # no row to show: the header alone
    assert empty.table().splitlines() == ["-" * 59, "Layer (type)  Output shape  Param #  Activations  Mult-adds",
                                          "=" * 59, "-" * 59]


def test_peak_flops_errors_list_the_known_dtypes():
    with pytest.raises(ValueError, match=r"^planner: no peak FLOP/s for dtype bfloat16 on GTX 1080 \(known: float32, "
                                         r"float16, float64\)$"):
        get_device("GTX 1080").peak("bfloat16")
    with pytest.raises(ValueError, match=r"^planner: no peak FLOP/s for dtype float32 on 1,000,000,000 bytes "
                                         r"\(known: none\)$"):
        get_device(10**9).peak("float32")


def test_step_time_defaults_bounds_and_optimizer():
    s = ember.summary(M.keras_mlp(device="meta"), (784,), verbose=False)
    assert s.step_time(32) == s.step_time(32, "A100 40GB", 0.5, "sgd-momentum")   # torch-free defaults
    assert s.step_time(32).efficiency == 0.5
    full = s.step_time(32, efficiency=1)                       # 1 is allowed: the device's peak itself
    assert full.at_efficiency == full.at_peak and full.efficiency == 1
    for bad in (0, 1.5, -0.1):
        with pytest.raises(ValueError, match=rf"^step_time: efficiency must be in \(0, 1\], got {bad}$"):
            s.step_time(32, efficiency=bad)
    # the optimizer's update is part of the step: its FLOPs come from that optimizer's dry run
    assert s.step_time(32).flops == s.plan(32).step_flops
    assert s.step_time(32, optimizer="adam").flops == s.plan(32, "adam").step_flops != s.plan(32).step_flops


def test_fits_uses_the_batch_and_optimizer_asked_for_and_a_peak_equal_to_the_memory_fits():
    s = ember.summary(M.keras_mlp(device="meta"), (784,), batch_size=2, verbose=False)
    small, big = s.peak_training_bytes(2), s.peak_training_bytes(64)
    assert s.fits(small, 2) and not s.fits(small, 64) and s.fits(big, 64)       # exactly the peak fits
    assert not s.fits(big - 1, 64)
    sgd, adam = s.peak_training_bytes(64, "sgd-momentum"), s.peak_training_bytes(64, "adam")
    assert sgd < adam and s.fits(sgd, 64) and not s.fits(sgd, 64, "adam")


class TwoHeads(nn.Module):
    """Two outputs, and a product of its own weight by itself that does not grow with the batch."""
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 3, device="meta")
        self.w = nn.Parameter(ember.ones(3, 3, device="meta"))

    def forward(self, x):
        return self.a(x), self.w @ self.w          # 27 mult-adds per batch


def test_report_wires_the_batch_optimizer_device_and_efficiency_through():
    s = ember.summary(M.keras_mlp(device="meta"), (784,), batch_size=2, verbose=False, name="mlp")
    got = s.report(16, "adam", "GTX 1080", efficiency=0.25).split("\n")
    plan, rule = s.plan(16, "adam"), s.training_bytes(16, "adam")
    assert rule == 4 * 79_510 * 4 + 2 * 16 * (784 + 100 + 100 + 10) * 4          # the notes' rule, by hand
    t = s.step_time(16, "GTX 1080", 0.25, "adam")
    assert got == s.table().split("\n") + s.totals().split("\n") + [
        "",
        "Training at batch 16 with adam:",
        f"  notes' estimate (weights x 4, activations x 2): {rule:,} bytes ({rule / GiB:,.2f} GiB)",
        f"  saved for backward (dry run): {plan.saved:,} bytes ({plan.saved / GiB:,.2f} GiB)",
        f"  peak (dry run on meta): {plan.peak:,} bytes ({plan.peak / GiB:,.2f} GiB)",
        f"  GTX 1080 (8.00 GiB): fits; max batch {s.max_batch_size('GTX 1080', 'adam')} (dry runs), "
        f"{s.max_batch_size('GTX 1080', 'adam', rule='notes')} (notes' estimate)",
        f"  step time: {t.flops / 1e12:.3f} TFLOP per step; {t.at_peak * 1e3:.1f} ms at GTX 1080's peak, "
        f"{t.at_efficiency * 1e3:.1f} ms at 25% of it"]
    assert s.totals().startswith("Model: mlp, input (784,) float32, dtype float32, counted at batch 2\n")
    assert s.report() == s.report(2, "sgd-momentum", None, 0.5) and s.report().endswith(
        f"  peak (dry run on meta): {s.plan(2).peak:,} bytes ({s.plan(2).peak / GiB:,.2f} GiB)")
    host = s.report(device="i7-7700k").split("\n")
    assert host[-2] == "  i7-7700k: memory is the host's RAM; pass it as a byte count to plan for it"
    assert host[-1].startswith("  step time: ") and host[-1].endswith("ms at 50% of it")
    exact = s.report(device=s.plan(2).peak).split("\n")[-1]   # a peak equal to the memory fits
    assert exact.startswith(f"  {s.plan(2).peak:,} bytes (") and "): fits; max batch 2 (dry runs)" in exact


def test_summary_prints_the_report_at_its_efficiency(capsys):
    ember.summary(M.keras_mlp(device="meta"), (784,), batch_size=4, device="GTX 1080", efficiency=0.25)
    assert "ms at 25% of it" in capsys.readouterr().out


def test_max_batch_size_by_hand_and_at_the_boundary():
    s = ember.summary(M.keras_mlp(device="meta"), (784,), verbose=False)
    # notes: (memory - weights x multiple) // (2 x 994 values x 4 bytes)
    assert s.max_batch_size(10**7, rule="notes") == (10**7 - 3 * 318_040) // 7952 == 1137
    assert s.max_batch_size(10**7, "adam", rule="notes") == (10**7 - 4 * 318_040) // 7952 == 1097
    assert s.max_batch_size(10**5, rule="notes") == 0                     # not even the weights fit
    with pytest.raises(ValueError, match="^max_batch_size: rule must be 'peak' or 'notes', got 'both'$"):
        s.max_batch_size(10**7, rule="both")
    for opt in ("sgd-momentum", "adam"):
        mem = s.peak_training_bytes(5, opt)                              # exactly batch 5's peak
        assert s.max_batch_size(mem, opt) == 5 and s.max_batch_size(mem - 1, opt) == 4
    assert s.max_batch_size(s.peak_training_bytes(1)) == 1 and s.max_batch_size(s.peak_training_bytes(1) - 1) == 0
    assert s.max_batch_size(s.peak_training_bytes(5, "sgd-momentum"), "adam") < 5   # Adam's state is larger


def test_summary_defaults_inputs_and_errors():
    from ember.planner.report import summary
    mlp = M.keras_mlp(device="meta")
    s = summary(mlp, 784, verbose=False)                       # an int size; batch 1, float32, default name
    assert (s.input_size, s.batch_size, s.dtype, s.name) == ((784,), 1, ember.float32, "Sequential")
    assert s.plan().optimizer == "sgd-momentum"
    d = ember.summary(mlp, (784,), dtype="float64", verbose=False)   # a float32 model planned in float64
    assert d.param_bytes == 79_510 * 8 and d.activation_bytes == 994 * 8 and d.macs == s.macs
    with pytest.raises(TypeError, match="^summary: model must be an ember.nn.Module, got str$"):
        ember.summary("vgg16", (3, 224, 224))
    with pytest.raises(ValueError, match="^summary: batch_size must be at least 1, got 0$"):
        ember.summary(mlp, (784,), batch_size=0)
    lazy = nn.Sequential(nn.LazyLinear(3), nn.ReLU())
    with pytest.raises(ValueError, match=r"^summary: the model has uninitialized parameters \(0\.weight, 0\.bias\) "
                                         r"of lazy modules \(nn\.LazyLinear \.\.\.\): run one forward"):
        ember.summary(lazy, (4,))


def test_two_outputs_and_work_that_does_not_grow_with_the_batch():
    s = ember.summary(TwoHeads(), (4,), batch_size=2, verbose=False)
    assert s.output_shape == () and s.rows[0].output_shape == ((2, 3), (3, 3))
    assert s.macs == (2 * 12 + 27) / 2 == 25.5                 # per sample: not a whole number
    assert s.table().split("\n")[3] == "(TwoHeads)    [2, 3], [3, 3]        9            0       13.5"


def test_a_custom_loss_is_the_one_planned():
    def loss(out, target):                                       # no softmax, no log: keeps less for backward
        return out.sum()
    mlp = M.keras_mlp(device="meta")
    s = ember.summary(mlp, (784,), batch_size=8, loss_fn=loss, verbose=False)
    mine = dry_run_step(mlp, (784,), 8, loss_fn=loss)
    default = dry_run_step(mlp, (784,), 8)
    assert (s.plan().peak, s.plan().step_flops) == (mine.peak, mine.step_flops)
    assert mine.step_flops != default.step_flops


def test_step_time_line_at_a_slow_device_shows_the_batch_and_optimizer():
    """A made-up device of 1 MFLOP/s makes the step time visible in milliseconds: the report's line comes from
    step_time at the report's batch and optimizer."""
    from ember.planner import Device
    toy = Device("toy", 10**9, {"float32": 1e6})
    s = ember.summary(M.keras_mlp(device="meta"), (784,), batch_size=2, verbose=False)
    t = s.step_time(16, toy, 0.25, "adam")
    assert t.at_peak == t.flops / 1e6 and t.flops == s.plan(16, "adam").step_flops
    assert s.report(16, "adam", toy, 0.25).split("\n")[-1] == (
        f"  step time: {t.flops / 1e12:.3f} TFLOP per step; {t.flops / 1e3:.1f} ms at toy's peak, "
        f"{4 * t.flops / 1e3:.1f} ms at 25% of it")
    assert s.step_time(16, toy, optimizer="adam").flops != s.step_time(16, toy).flops != s.step_time(2, toy).flops


def test_max_batch_size_search_is_exact_when_the_peak_is_not_linear():
    """The guess from batches 1 and 2 assumes a linear peak; the doubling and bisection after it make the
    answer exact anyway (here a made-up quadratic peak, checked against a linear scan)."""
    s = ember.summary(M.keras_mlp(device="meta"), (784,), verbose=False)
    s.peak_training_bytes = lambda b, optimizer="sgd-momentum": 1000 + 10 * b * b
    for mem in range(1010, 5000, 37):
        want = max(b for b in range(1, 30) if 1000 + 10 * b * b <= mem)
        assert s.max_batch_size(mem) == want, mem


def test_planner_argument_errors():
    s = ember.summary(M.keras_mlp(device="meta"), (784,), batch_size=3, verbose=False)
    assert s.training_bytes() == s.training_bytes(3)
    for bad in (-1, 2.5, True):
        with pytest.raises(ValueError, match=f"^planner: batch_size must be a non-negative integer, got {bad}$"):
            s.plan(bad)
    with pytest.raises(ValueError, match="^planner: i7-7700k uses the host's RAM; pass the memory as a byte count$"):
        s.fits("i7-7700k")
    with pytest.raises(TypeError, match="^planner: device must be a name or a byte count, got True$"):
        get_device(True)
    with pytest.raises(TypeError, match="^planner: device must be a name or a byte count, got list$"):
        get_device([8])
    for bad in (0, -1.5):
        with pytest.raises(ValueError, match=f"^planner: a device's memory must be a positive byte count, got {bad}$"):
            get_device(bad)
    one = get_device(1)                                        # one byte is a (tiny) device
    assert (one.name, one.memory, one.peak_flops) == ("1 bytes", 1, {})
    d = ember.summary(M.keras_mlp(device="meta"), (784,), dtype="float64", verbose=False)
    assert d.plan().peak == dry_run_step(M.keras_mlp(device="meta"), (784,), 1, dtype="float64").peak
    assert d.plan().resident > s.plan(1).resident               # float64 weights and batch


# ---------------------------------------------------------------- dryrun.py's pieces
class _Split(nn.Module):
    def forward(self, x):
        return {"double": x * 2, "more": [x * 3]}   # tensors in a dict and a list


class _Holes(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_parameter("gone", None)         # a None before a real parameter
        self.w = nn.Parameter(ember.ones(2, 4, dtype=ember.float64))
        self.frozen = nn.Parameter(ember.ones(2), requires_grad=False)
        self.register_buffer("count", ember.zeros((), dtype=ember.int64))
        self.mask = ember.ones(2, 2)                  # a plain tensor attribute
        self.table = ember.arange(3)


def test_meta_twin_copies_dtypes_ties_and_attributes():
    model = nn.Sequential(_Holes(), nn.Linear(4, 4), nn.Linear(4, 4))
    model[2].weight = model[1].weight                 # tied
    same, half = meta_twin(model), meta_twin(model, ember.float16)
    assert same[0].w.dtype == ember.float64 and same[0].w.is_meta and same[0].mask.dtype == ember.float32
    assert half[0].w.dtype == half[0].mask.dtype == ember.float16 and half[0].mask.is_meta
    for twin in (same, half):
        h = twin[0]
        assert h.count.dtype == h.table.dtype == ember.int64 and h.count.is_meta and h.table.is_meta
        assert h.gone is None and isinstance(h.w, nn.Parameter) and not h.frozen.requires_grad
        assert twin[2].weight is twin[1].weight and sum(p.numel() for p in twin.parameters()) == 8 + 2 + 16 + 4 + 4
    assert not model[0].w.is_meta


class _Twice(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4, device="meta")
        self.split = _Split()

    def forward(self, x):
        return self.split(self.lin(self.lin(x)))


def test_count_forward_rows_of_a_module_called_twice_and_nested_outputs():
    model = _Twice()
    rows, out, _ = count_forward(model, ember.empty(2, 4, device="meta"))
    assert [(r.name, r.depth, r.params, r.macs, r.flops, r.activations) for r in rows] == [
        ("", 0, 0, 0, 0, 0), ("lin", 1, 20, 32, 64, 8), ("lin", 1, 0, 32, 64, 8), ("split", 1, 0, 0, 16, 16)]
    assert rows[0].output_shape == rows[3].output_shape == ((2, 4), (2, 4)) and len(out) == 2


def test_optimizer_names_and_targets():
    for name in ("SGD_Momentum", "sgd+momentum", "sgd momentum", "momentum", "sgdm", "SGDM"):
        assert check_optimizer(name) == "sgd-momentum"
    assert check_optimizer("AdamW") == "adamw"
    assert target_shape((5,)) == (1,) and target_shape((4, 10)) == (4,) and target_shape((2, 3, 7)) == (2, 3)


def test_dry_run_step_fields_by_hand():
    lin = nn.Linear(4, 2, bias=False, device="meta")
    plain = dry_run_step(lin, (4,), 3, "sgd")
    # resident: the weight (32 bytes), the batch (3, 4) float32 and its (3,) int64 targets
    assert (plain.batch_size, plain.optimizer, plain.resident) == (3, "sgd", 32 + 48 + 24)
    mom = dry_run_step(lin, (4,), 3)                  # the default: SGD with momentum, one buffer more
    assert mom.optimizer == "sgd-momentum" and mom.state == plain.state + 32
    one = dry_run_step(lin, (4,), 3, "sgd", loss_fn=lambda out, target: out.sum(), steps=1)
    assert one.step_flops == dry_run_step(lin, (4,), 3, "sgd", loss_fn=lambda out, target: out.sum()).step_flops
    assert one.saved == 4                             # the loss: the product keeps x and w, both resident


def test_measured_peak_keeps_the_model_and_the_callers_tracing():
    import tracemalloc
    import numpy as np
    ember.manual_seed(0)
    model, x, y = M.keras_mlp(), ember.randn(8, 784), ember.randint(0, 10, (8,))
    w = model[1].weight._data.copy()
    alone = measure_training_peak(model, x, y)        # the default optimizer
    assert not tracemalloc.is_tracing() and (model[1].weight._data == w).all() and model[1].weight.grad is None
    tracemalloc.start()
    try:
        kept, big = np.ones(200_000), np.ones(1_000_000)
        del big                                       # the caller's traced memory and a higher peak before
        assert measure_training_peak(model, x, y, "sgd-momentum") == pytest.approx(alone, rel=0.01)
        assert tracemalloc.is_tracing() and kept.size
    finally:
        tracemalloc.stop()
    wide, xw, yw = nn.Linear(50_000, 2), ember.randn(8, 50_000), ember.randint(0, 2, (8,))   # the batch: most bytes
    assert measure_training_peak(wide, xw, yw) == pytest.approx(dry_run_step(wide, (50_000,), 8).peak, rel=0.05)


def test_lazy_names_of_the_package():
    import ember.planner as planner
    from ember.planner import dryrun, report
    assert planner.Summary is report.Summary and planner.dry_run_step is dryrun.dry_run_step
    with pytest.raises(AttributeError, match="^module 'ember.planner' has no attribute 'nope'$"):
        planner.nope
