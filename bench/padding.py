"""bench/padding.py: padding modes, PyTorch and volua in one command (on the device machine).

conv3d 32 -> 32 channels, kernel 3, padding 1 on a (4, 32, 32, 64, 64) float32 input, and
conv3d -> group_norm(8) -> mean on L2-23's shape with 16 samples, (16, 3, 24, 32, 32) -> 24 channels,
kernel 3, padding 1, and fused64 the same with 64 channels (beyond volua's one-pass kernel: conv,
group_norm and mean as three steps); with padding_mode zeros, reflect, replicate and circular. PyTorch as nn.Conv3d
runs the other modes: F.pad, then the convolution (defaults: cuDNN, TF32 allowed). CUDA events, a
256 MB write (L2 flush) before each call, median of 30. Then volua's bench/padding.lua, both maths.
Prints one table: volua fp32 against PyTorch's defaults, volua tf32 likewise.
Run: python3 bench/padding.py [path to volua, default build/bin/volua]
"""
import subprocess
import sys

import bench  # bench/bench.py (this directory): its time_cuda

import torch
import torch.nn.functional as F

MODES = ["zeros", "reflect", "replicate", "circular"]


def time_cuda(fn, flush):
    """bench.py's timing (CUDA events, the flush before each call): the median of 30 after 3 warm-ups."""
    return bench.time_cuda(fn, 3, 30, flush)[0]


def conv(x, w, b, mode):
    if mode == "zeros":
        return F.conv3d(x, w, b, padding=1)
    return F.conv3d(F.pad(x, (1, 1, 1, 1, 1, 1), mode=mode), w, b)


def main():
    volua = sys.argv[1] if len(sys.argv) > 1 else "build/bin/volua"
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(1)
    x = torch.rand((4, 32, 32, 64, 64), device=dev, generator=gen)
    w = torch.rand((32, 32, 3, 3, 3), device=dev, generator=gen) - 0.5
    b = torch.rand(32, device=dev, generator=gen)
    x2 = torch.rand((16, 3, 24, 32, 32), device=dev, generator=gen)
    w2 = torch.rand((24, 3, 3, 3, 3), device=dev, generator=gen) - 0.5
    b2, gw, gb = (torch.rand(24, device=dev, generator=gen) for _ in range(3))
    w3 = torch.rand((64, 3, 3, 3, 3), device=dev, generator=gen) - 0.5
    b3, gw3, gb3 = (torch.rand(64, device=dev, generator=gen) for _ in range(3))
    flush = torch.empty(256 * 1024 * 1024, dtype=torch.uint8, device=dev)
    t = {}
    for mode in MODES:
        t[("conv", mode)] = time_cuda(lambda: conv(x, w, b, mode), flush)
        t[("fused", mode)] = time_cuda(
            lambda: F.group_norm(conv(x2, w2, b2, mode), 8, gw, gb).mean(dim=(1, 2, 3, 4)), flush)
        t[("fused64", mode)] = time_cuda(
            lambda: F.group_norm(conv(x2, w3, b3, mode), 8, gw3, gb3).mean(dim=(1, 2, 3, 4)), flush)
    del x, w, b, x2, w2, b2, gw, gb, w3, b3, gw3, gb3, flush
    torch.cuda.empty_cache()
    out = subprocess.run([volua, "bench/padding.lua"], capture_output=True, text=True, check=True).stdout
    v = {}
    for line in out.splitlines():
        op, mode, math, ms = line.split()
        v[(op, mode, math)] = float(ms)
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}")
    print("| op | padding_mode | PyTorch ms | volua fp32 ms | volua tf32 ms | fp32 x PyTorch | tf32 x PyTorch |")
    print("|---|---|---|---|---|---|---|")
    for op in ("conv", "fused", "fused64"):
        for mode in MODES:
            p, f32, t32 = t[(op, mode)], v[(op, mode, "fp32")], v[(op, mode, "tf32")]
            print(f"| {op} | {mode} | {p:.4f} | {f32:.4f} | {t32:.4f} | {p / f32:.2f} | {p / t32:.2f} |")


if __name__ == "__main__":
    main()
