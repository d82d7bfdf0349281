"""bench/norm.py: group_norm on shapes of volumetric networks, PyTorch and volua in one command (device
machine).

For each case: PyTorch's F.group_norm (eager; NORM_COMPILE=1 adds torch.compile) with CUDA events, a
256 MB write (L2 flush) before each call, median of 30 after 5 warm-ups; then volua's bench/norm.lua the
same way (vol.bench) for each binary given (default build/bin/volua; "path;A=1,B=2" sets environment
variables for that one), which also checks its GPU result
against its CPU reference (allclose, rtol 1e-4, atol 1e-5). Prints a table: PyTorch ms, volua ms per
binary, the ratio to eager, the byte floor (x read twice and y written once at FLOOR_TBS TB/s, 4.2 on an
H200: no normalisation can read x fewer than twice unless the whole tensor stays on chip) and volua's %
of it.
Run: python3 bench/norm.py [volua binaries, each "path" or "path;A=1,B=2"...]
"""
import os
import subprocess
import sys

import torch
import torch.nn.functional as F

import bench  # bench/bench.py (this directory): its time_cuda

# name, input shape, groups, affine
CASES = [
    ("c64-g8", (8, 64, 32, 64, 64), 8, True),
    ("c64-g8-plain", (8, 64, 32, 64, 64), 8, False),
    ("c128-g32", (4, 128, 32, 64, 64), 32, True),
    ("one-volume-g8", (1, 32, 128, 128, 128), 8, True),
    ("instance", (4, 64, 64, 64, 64), 64, True),
    ("unet-bottom", (16, 256, 8, 16, 16), 32, True),
    ("l2-23-conv-out", (128, 24, 22, 30, 30), 8, True),
    ("odd-s", (2, 16, 33, 65, 65), 4, True),
    ("small", (2, 32, 16, 16, 16), 8, True),
]


def main():
    bins = sys.argv[1:] or ["build/bin/volua"]
    tbs = float(os.environ.get("FLOOR_TBS", "4.2"))
    compile_too = os.environ.get("NORM_COMPILE", "0") == "1"
    dev = torch.device("cuda")
    flush = torch.empty(256 * 1024 * 1024, dtype=torch.uint8, device=dev)
    eager, compiled = {}, {}
    gn_c = torch.compile(F.group_norm) if compile_too else None
    for i, (name, shape, g, affine) in enumerate(CASES):
        gen = torch.Generator(device=dev).manual_seed(i + 1)
        x = torch.rand(shape, device=dev, generator=gen)
        w = torch.rand(shape[1], device=dev, generator=gen) if affine else None
        b = torch.rand(shape[1], device=dev, generator=gen) if affine else None
        eager[name] = bench.time_cuda(lambda: F.group_norm(x, g, w, b, 1e-5), 5, 30, flush)[0]
        if compile_too:
            torch._dynamo.reset()
            compiled[name] = bench.time_cuda(lambda: gn_c(x, g, w, b, 1e-5), 5, 30, flush)[0]
        del x, w, b
    del flush
    torch.cuda.empty_cache()
    spec = ";".join(f"{n},{','.join(map(str, s))},{g},{int(a)}" for n, s, g, a in CASES)
    got = []
    for arg in bins:
        path, _, sets = arg.partition(";")
        env = dict(os.environ)
        env.update(kv.split("=", 1) for kv in sets.split(",") if kv)
        out = subprocess.run([path, "bench/norm.lua", spec], capture_output=True, text=True, check=True,
                             env=env).stdout
        res = {}
        for line in out.splitlines():
            f = line.split()
            if len(f) == 3:
                res[f[0]] = (float(f[1]), f[2])
        got.append(res)
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}")
    head = "| case | shape, groups | eager ms |" + (" compile ms |" if compile_too else "")
    head += "".join(f" volua[{j}] ms | x eager [{j}] | check [{j}] |" for j in range(len(bins)))
    head += " floor ms | % of floor (last) |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for name, shape, g, affine in CASES:
        n = 1
        for s in shape:
            n *= s
        floor = 12 * n / (tbs * 1e12) * 1e3
        row = f"| {name} | {shape} G{g}{'' if affine else ' no affine'} | {eager[name]:.4f} |"
        if compile_too:
            row += f" {compiled[name]:.4f} |"
        for res in got:
            ms, ok = res[name]
            row += f" {ms:.4f} | {eager[name] / ms:.2f} | {ok} |"
        row += f" {floor:.4f} | {100 * floor / got[-1][name][0]:.0f} |"
        print(row)
    for j, path in enumerate(bins):
        print(f"[{j}] {path}")


if __name__ == "__main__":
    main()
