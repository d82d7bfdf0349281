"""bench/pool_indices.py: max_pool3d with return_indices, PyTorch and volua in one command (device machine).

PyTorch eager (its CUDA kernel computes the indices with or without return_indices) with CUDA events,
a 256 MB write (L2 flush) before each call, median of 30 after 5 warm-ups; then volua's
bench/pool_indices.lua the same way (vol.bench), with the default kernels and with
VOLUA_POOL_SEPIDX=0 (the plane kernel for indices, as before the slice kernel with indices).
Also writes (1, 4, 40, 128, 128) integer-valued data with NaN and PyTorch's outputs and indices for
L1-43's window, which volua's side compares exactly. Prints a table: PyTorch ms, volua ms, the ratio,
and bytes over time (input read once, outputs and int64 indices written once).
Run: python3 bench/pool_indices.py [path to volua, default build/bin/volua]
"""
import os
import subprocess
import sys

import numpy as np
import torch
import torch.nn.functional as F

import bench  # bench/bench.py (this directory): its time_cuda

CASES = [("L1-43+idx", (16, 32, 128, 128, 128), dict(kernel_size=3, stride=2, padding=1, dilation=3), True),
         ("k3s2p1+idx", (16, 32, 64, 128, 128), dict(kernel_size=3, stride=2, padding=1), True),
         ("k3s1p1+idx", (16, 32, 64, 128, 128), dict(kernel_size=3, stride=1, padding=1), True),
         ("L1-43", (16, 32, 128, 128, 128), dict(kernel_size=3, stride=2, padding=1, dilation=3), False)]


def main():
    volua = sys.argv[1] if len(sys.argv) > 1 else "build/bin/volua"
    d = os.environ.get("POOL_DIR", "/tmp/volua_pool")
    os.makedirs(d, exist_ok=True)
    dev = torch.device("cuda")
    flush = torch.empty(256 * 1024 * 1024, dtype=torch.uint8, device=dev)
    rows = []
    for i, (name, shape, args, ri) in enumerate(CASES):
        x = torch.rand(shape, device=dev, generator=torch.Generator(device=dev).manual_seed(i + 1))
        ms = bench.time_cuda(lambda: F.max_pool3d(x, return_indices=ri, **args), 5, 30, flush)[0]
        y = F.max_pool3d(x, **args)
        gb = (x.numel() * 4 + y.numel() * (12 if ri else 4)) / 1e9
        rows.append((name, ms, gb))
        del x, y
        torch.cuda.empty_cache()
    g = torch.Generator(device=dev).manual_seed(99)
    x = torch.randint(0, 3, (1, 4, 40, 128, 128), device=dev, generator=g).float()
    x.view(-1)[torch.randint(0, x.numel(), (200,), device=dev, generator=g)] = float("nan")
    y, idx = F.max_pool3d(x, kernel_size=3, stride=2, padding=1, dilation=3, return_indices=True)
    np.save(f"{d}/x.npy", x.cpu().numpy())
    np.save(f"{d}/y.npy", y.cpu().numpy())
    np.save(f"{d}/i.npy", idx.cpu().numpy())
    del flush, x, y, idx
    torch.cuda.empty_cache()
    runs = {}
    for label, env in (("new", {}), ("VOLUA_POOL_SEPIDX=0", {"VOLUA_POOL_SEPIDX": "0"})):
        out = subprocess.run([volua, "bench/pool_indices.lua", d], capture_output=True, text=True,
                             env={**os.environ, **env})
        print(out.stdout + out.stderr, end="")
        runs[label] = {l.split()[0]: l.split()[1:] for l in out.stdout.splitlines() if l.strip()}
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}")
    print("| case | PyTorch ms | volua ms | volua, VOLUA_POOL_SEPIDX=0 | PyTorch / volua | volua TB/s |")
    print("|---|---|---|---|---|---|")
    for name, ms, gb in rows:
        v, o = float(runs["new"][name][0]), float(runs["VOLUA_POOL_SEPIDX=0"][name][0])
        print(f"| {name} | {ms:.3f} | {v:.3f} | {o:.3f} | {ms / v:.2f} | {gb / v:.2f} |")
    for label in runs:
        print(f"exact against PyTorch ({label}): max |dy| and |d index|: {' '.join(runs[label]['check'])}")


if __name__ == "__main__":
    main()
