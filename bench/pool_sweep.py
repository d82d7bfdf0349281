"""bench/pool_sweep.py: max_pool3d on shapes of volumetric networks, PyTorch and volua in one command
(device machine), with and without indices.

For each case: PyTorch eager with CUDA events, a 256 MB write (L2 flush) before each call, median of 30
after 5 warm-ups; then volua's bench/pool_sweep.lua the same way (vol.bench), once per setting given
(default: the binary's defaults only; POOL_SETTINGS="A=1,B=0;C=0" adds settings, ";"-separated, each a
","-separated list of environment variables). Each case also gets an exact check: PyTorch writes a
small version of it (N 1, C 2, integer values in {0, 1, 2} with NaN and infinities) and its outputs
and indices, which volua's side compares. Prints a table: PyTorch ms, volua ms per setting, the ratio,
the byte floor (input read once, values and int64 indices written once, at FLOOR_TBS TB/s, 4.2 on an
H200) and volua's % of it.
Run: python3 bench/pool_sweep.py [path to volua, default build/bin/volua]
"""
import os
import subprocess
import sys

import numpy as np
import torch
import torch.nn.functional as F

import bench  # bench/bench.py (this directory): its time_cuda

# name, input shape, kernel, stride, padding, dilation, ceil_mode (triples)
CASES = [
    ("L1-43", (16, 32, 128, 128, 128), 3, 2, 1, 3, False),
    ("k3s2p1", (16, 32, 64, 128, 128), 3, 2, 1, 1, False),
    ("k3s1p1", (16, 32, 64, 128, 128), 3, 1, 1, 1, False),
    ("k3s1p1-64", (16, 64, 32, 64, 64), 3, 1, 1, 1, False),
    ("k2s2", (16, 32, 128, 128, 128), 2, 2, 0, 1, False),
    ("unet-l3-k2s2", (8, 128, 32, 32, 32), 2, 2, 0, 1, False),
    ("small-k3s2p1", (32, 64, 32, 32, 32), 3, 2, 1, 1, False),
    ("i3d-pool1", (8, 64, 32, 112, 112), (1, 3, 3), (1, 2, 2), (0, 1, 1), 1, False),
    ("i3d-pool3", (8, 480, 16, 28, 28), 3, 2, 1, 1, False),
    ("i3d-branch-k3s1", (8, 480, 8, 28, 28), 3, 1, 1, 1, False),
    ("i3d-branch-k3s1-14", (8, 832, 8, 14, 14), 3, 1, 1, 1, False),
    ("i3d-branch-k3s1-7", (8, 832, 4, 7, 7), 3, 1, 1, 1, False),
    ("odd-k3s2-ceil", (8, 32, 63, 63, 63), 3, 2, 0, 1, True),
    ("k5s2p2", (8, 32, 64, 64, 64), 5, 2, 2, 1, False),
]


def trip(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v, v)


def main():
    volua = sys.argv[1] if len(sys.argv) > 1 else "build/bin/volua"
    d = os.environ.get("POOL_DIR", "/tmp/volua_pool_sweep")
    tbs = float(os.environ.get("FLOOR_TBS", "4.2"))
    os.makedirs(d, exist_ok=True)
    dev = torch.device("cuda")
    flush = torch.empty(256 * 1024 * 1024, dtype=torch.uint8, device=dev)
    rows = []
    with open(f"{d}/cases.txt", "w") as f:
        for i, (name, shape, k, s, p, dl, ceil) in enumerate(CASES):
            args = dict(kernel_size=trip(k), stride=trip(s), padding=trip(p), dilation=trip(dl), ceil_mode=ceil)
            x = torch.rand(shape, device=dev, generator=torch.Generator(device=dev).manual_seed(i + 1))
            for ri in (False, True):
                ms = bench.time_cuda(lambda: F.max_pool3d(x, return_indices=ri, **args), 5, 30, flush)[0]
                y = F.max_pool3d(x, **args)
                gb = (x.numel() * 4 + y.numel() * (12 if ri else 4)) / 1e9
                rows.append((name + ("+idx" if ri else ""), ms, gb))
            del x, y
            torch.cuda.empty_cache()
            # the exact check's data: N 1, C 2, values in {0, 1, 2}, ~1 % NaN, a few infinities
            g = torch.Generator(device=dev).manual_seed(100 + i)
            xs = torch.randint(0, 3, (1, 2) + shape[2:], device=dev, generator=g).float()
            n = xs.numel()
            xs.view(-1)[torch.randint(0, n, (n // 100 + 1,), device=dev, generator=g)] = float("nan")
            xs.view(-1)[torch.randint(0, n, (n // 200 + 1,), device=dev, generator=g)] = float("inf")
            xs.view(-1)[torch.randint(0, n, (n // 200 + 1,), device=dev, generator=g)] = float("-inf")
            ys, idx = F.max_pool3d(xs, return_indices=True, **args)
            np.save(f"{d}/{name}-x.npy", xs.cpu().numpy())
            np.save(f"{d}/{name}-y.npy", ys.cpu().numpy())
            np.save(f"{d}/{name}-i.npy", idx.cpu().numpy())
            f.write(" ".join([name] + [str(v) for v in shape] + [str(v) for t in (k, s, p, dl) for v in trip(t)] +
                             ["1" if ceil else "0"]) + "\n")
    del flush
    torch.cuda.empty_cache()
    settings = [("default", {})]
    for spec in filter(None, os.environ.get("POOL_SETTINGS", "").split(";")):
        settings.append((spec, dict(kv.split("=", 1) for kv in spec.split(","))))
    runs = {}
    for label, env in settings:
        out = subprocess.run([volua, "bench/pool_sweep.lua", d], capture_output=True, text=True,
                             env={**os.environ, **env})
        print(f"-- volua, {label}\n" + out.stdout + out.stderr, end="")
        runs[label] = {l.split()[0]: l.split()[1:] for l in out.stdout.splitlines() if l.strip()}
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}; floor at {tbs} TB/s")
    head = "| case | PyTorch ms | " + " | ".join(f"volua ms ({l})" for l, _ in settings) + \
           " | PyTorch / volua | floor ms | % of floor | exact |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for name, ms, gb in rows:
        ts = [runs[l].get(name, ["nan"])[0] for l, _ in settings]
        v = float(ts[0])
        floor = gb / tbs
        chk = runs["default"].get(name.replace("+idx", "") + ":check", ["?", "?"])
        ok = ",".join(sorted({"ok" if runs[l].get(name.replace("+idx", "") + ":check", ["?", "?"]) == ["0", "0"]
                              else "WRONG" for l, _ in settings}))
        print(f"| {name} | {ms:.3f} | " + " | ".join(f"{float(t):.3f}" for t in ts) +
              f" | {ms / v:.2f} | {floor:.3f} | {100 * floor / v:.0f} | {ok} |")


if __name__ == "__main__":
    main()
