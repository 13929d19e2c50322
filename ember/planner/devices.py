"""The devices the planner knows: memory and peak FLOP/s per dtype.

Values marked "notes" are the lecture notes' (/work/shared/seeds: the CPU-vs-GPU tables and the
"Deep Learning and GPUs" slides); the others are the vendors' datasheets, dense (no 2:4 sparsity), tensor
cores with FP32 accumulation where a GPU has them. Memory is the nominal size in GiB; the CUDA context
and the allocator's cache take a few hundred MiB of it in practice.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["Device", "DEVICES", "get_device"]

GiB = 1 << 30
T = 1e12


@dataclass(frozen=True)
class Device:
    """One device: `memory` in bytes (None: the host's RAM, give a byte count), peak FLOP/s per dtype."""
    name: str
    memory: int | None
    peak_flops: dict = field(default_factory=dict)   # dtype name -> FLOP/s

    def peak(self, dtype: str) -> float:
        if dtype not in self.peak_flops:
            known = ", ".join(self.peak_flops) or "none"
            raise ValueError(f"planner: no peak FLOP/s for dtype {dtype} on {self.name} (known: {known})")
        return self.peak_flops[dtype]


def _d(name, mem_gib, **flops):
    return Device(name, None if mem_gib is None else int(mem_gib * GiB), {k: v * T for k, v in flops.items()})


DEVICES: dict[str, Device] = {d.name: d for d in (
    # notes: 4 cores, 4.2 GHz, ~540 GFLOPs FP32 (AVX2: 2 FMA x 8 lanes x 2 = 32 FLOP/cycle/core); FP64 half that
    _d("i7-7700k", None, float32=0.54, float64=0.27),
    # datasheet: 8 GB GDDR5X (the notes: "GTX 1080 (8GB)"); 2560 cores x 1733 MHz x 2; FP16 at 1/64, FP64 1/32
    _d("GTX 1080", 8, float32=8.87, float16=0.139, float64=0.277),
    # notes: 11 GB GDDR6, ~13.4 TFLOPs FP32; datasheet: FP16 tensor 53.8 (FP32 accumulate), FP64 1/32
    _d("RTX 2080 Ti", 11, float32=13.4, float16=53.8, float64=0.42),
    # notes: 12 GB HBM2, ~14 TFLOPs FP32, ~112 TFLOPs FP16; datasheet: FP64 6.9
    _d("Titan V", 12, float32=14.0, float16=112.0, float64=6.9),
    # notes: 24 GB GDDR6X, ~35.6 TFLOPs FP32; datasheet: FP16/BF16 tensor 71 (FP32 accumulate), FP64 0.56
    _d("RTX 3090", 24, float32=35.6, float16=71.0, bfloat16=71.0, float64=0.56),
    # datasheet (Ada whitepaper): 24 GB, FP32 82.6, FP16/BF16 tensor 165.2 (FP32 accumulate), FP64 1.29
    _d("RTX 4090", 24, float32=82.6, float16=165.2, bfloat16=165.2, float64=1.29),
    # notes: "Tesla V100 for NVLink (15.7 tflops)"; datasheet: 16 GB HBM2, FP16 tensor 125, FP64 7.8
    _d("V100", 16, float32=15.7, float16=125.0, float64=7.8),
    _d("V100 32GB", 32, float32=15.7, float16=125.0, float64=7.8),
    # notes: 40/80 GB HBM2, ~9.7 TFLOPs FP64, ~20 (datasheet 19.5) FP32, ~312 FP16; BF16 as FP16
    _d("A100 40GB", 40, float32=19.5, float16=312.0, bfloat16=312.0, float64=9.7),
    _d("A100 80GB", 80, float32=19.5, float16=312.0, bfloat16=312.0, float64=9.7),
    # datasheet, H100 SXM: 80 GB HBM3, FP32 67, FP16/BF16 tensor 989 dense, FP64 34
    _d("H100", 80, float32=67.0, float16=989.0, bfloat16=989.0, float64=34.0),
    # datasheet: H200 SXM, 141 GB HBM3e, the H100's compute
    _d("H200", 141, float32=67.0, float16=989.0, bfloat16=989.0, float64=34.0),
    # notes: Cloud TPU v3 (4 chips, 8 cores), 128 GB HBM, ~420 TFLOPs in bfloat16 (its MXUs' format)
    _d("TPU v3", 128, bfloat16=420.0),
)}


def _key(name: str) -> str:
    """'GTX 1080', 'gtx-1080', 'gtx1080' and 'A100-80GB', 'a100 80 gb' are the same device."""
    return re.sub(r"[\s_\-]+", "", name.lower())


_BY_KEY = {_key(n): d for n, d in DEVICES.items()}
_BY_KEY.update({"a100": DEVICES["A100 40GB"], "tpuv3": DEVICES["TPU v3"], "i77700k": DEVICES["i7-7700k"],
                "titanv": DEVICES["Titan V"], "h100sxm": DEVICES["H100"]})


def get_device(device) -> Device:
    """A Device from a name in DEVICES (case, spaces and dashes do not matter) or a byte count.

    >>> get_device("gtx 1080").memory
    8589934592
    >>> get_device(12 * 2**30).memory
    12884901888
    """
    if isinstance(device, Device):
        return device
    if isinstance(device, bool):
        raise TypeError(f"planner: device must be a name or a byte count, got {device!r}")
    if isinstance(device, (int, float)):
        if device <= 0:
            raise ValueError(f"planner: a device's memory must be a positive byte count, got {device!r}")
        return Device(f"{int(device):,} bytes", int(device), {})
    if not isinstance(device, str):
        raise TypeError(f"planner: device must be a name or a byte count, got {type(device).__name__}")
    found = _BY_KEY.get(_key(device))
    if found is None:
        raise ValueError(f"planner: unknown device {device!r}; known devices: {', '.join(DEVICES)} "
                         f"(or pass the memory as a byte count)")
    return found
