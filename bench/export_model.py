#!/usr/bin/env python3
"""export_model.py: the path from PyTorch to volua, end to end. Run where PyTorch is.

1. Builds the example model in PyTorch (Conv3d(3, 24, 3) -> GroupNorm(8, 24) -> mean over all
   but the batch: KernelBench level 2 #23), seeded, and saves its state_dict with
   safetensors.torch.save_file as OUT/model.safetensors (keys conv.weight, conv.bias,
   group_norm.weight, group_norm.bias: what volua's nn.Sequential({{"conv", ...},
   {"group_norm", ...}}) loads with load_state_dict).
2. Writes a few input volumes (C, D, H, W) as OUT/volumes/vol_NNN.npy (float32), and PyTorch's
   outputs for them, computed in float64, as OUT/expected.npy.
3. Checks volua's own reference cases (scripts/example and spec/cases/strided_groups, made by
   spec/cases/make_cases.py with numpy alone) against PyTorch in float64.
4. If a volua binary is there (--volua, default build/bin/volua), runs
     volua scripts/pipeline.lua --model scripts/example/model.lua --weights OUT/model.safetensors
       --input OUT/volumes/ --out OUT/volua.npy
   and compares its output with PyTorch's at float32 tolerance (rtol 1e-4, atol 1e-5).

Usage (from the repository root):
  python3 bench/export_model.py [--out-dir export] [--seed 0] [--count 6] [--shape 3,16,32,32]
                                [--pytorch-init] [--volua build/bin/volua] [--device cpu|cuda]
Needs numpy, torch and safetensors. Exits non-zero when a check fails.
"""
import argparse
import os
import subprocess
import sys

import numpy as np
import torch
import torch.nn as nn
from safetensors.torch import load_file, save_file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RTOL, ATOL = 1e-4, 1e-5  # float32 tolerance, as the golden cases


class Model(nn.Module):
    """KernelBench level 2 #23: Conv3d -> GroupNorm -> mean over all but the batch."""

    def __init__(self, in_channels=3, out_channels=24, kernel_size=3, num_groups=8, eps=1e-5,
                 **conv_args):
        super().__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, kernel_size, **conv_args)
        self.group_norm = nn.GroupNorm(num_groups, out_channels, eps=eps)

    def features(self, x):
        return self.group_norm(self.conv(x))

    def forward(self, x):
        return self.features(x).mean(dim=[1, 2, 3, 4])


def float64_run(model, x, device):
    """The model in float64 on float32 inputs (the golden cases' convention)."""
    m = model.to(device=device, dtype=torch.float64)
    with torch.no_grad():
        xt = torch.from_numpy(np.asarray(x, np.float32)).to(device=device, dtype=torch.float64)
        return m.features(xt).cpu().numpy(), m(xt).cpu().numpy()


def report(name, got, want, rtol, atol):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if got.shape != want.shape:
        print(f"FAIL {name}: shape {got.shape}, expected {want.shape}")
        return False
    err = np.abs(got - want)
    ok = bool(np.all(err <= atol + rtol * np.abs(want)))
    print(f"{'ok  ' if ok else 'FAIL'} {name}: max abs diff {err.max():.3g} "
          f"(rtol {rtol:g}, atol {atol:g}, {got.size} values)")
    return ok


def load_volumes(directory):
    """Every .npy of a directory, sorted, stacked: the pipeline's --input dir/ order."""
    vols = []
    for name in sorted(n for n in os.listdir(directory) if n.endswith(".npy")):
        a = np.load(os.path.join(directory, name))
        vols.extend(a if a.ndim == 5 else [a])
    return np.stack(vols)


def check_stored_cases(device):
    """volua's numpy-made reference cases against PyTorch (both float64: tight tolerance)."""
    ok = True
    ex = os.path.join(ROOT, "scripts", "example")
    m = Model()
    m.load_state_dict(load_file(os.path.join(ex, "model.safetensors")))
    _, out = float64_run(m, load_volumes(os.path.join(ex, "volumes")), device)
    ok &= report("scripts/example/expected.npy vs PyTorch", np.load(os.path.join(ex, "expected.npy")),
                 out, 1e-9, 1e-12)
    x = np.load(os.path.join(ROOT, "spec", "cases", "example", "x.npy"))
    ok &= report("spec/cases/example/x.npy is the example's volumes", x,
                 load_volumes(os.path.join(ex, "volumes")), 0, 0)

    d = os.path.join(ROOT, "spec", "cases", "strided_groups")  # as make_cases.py builds it
    m = Model(4, 8, (3, 2, 3), 4, 1e-3, stride=(1, 2, 1), padding=(1, 0, 1), dilation=(1, 1, 2),
              groups=2)
    m.load_state_dict(load_file(os.path.join(d, "model.safetensors")))
    feat, out = float64_run(m, np.load(os.path.join(d, "x.npy")), device)
    ok &= report("spec/cases/strided_groups feat vs PyTorch", np.load(os.path.join(d, "feat.npy")),
                 feat, 1e-9, 1e-12)
    ok &= report("spec/cases/strided_groups out vs PyTorch", np.load(os.path.join(d, "out.npy")),
                 out, 1e-9, 1e-12)
    return ok


def export(args):
    torch.manual_seed(args.seed)
    model = Model()
    if not args.pytorch_init:
        # PyTorch starts GroupNorm at weight 1, bias 0, which makes this model's output exactly
        # 0 up to rounding: a poor test. A trained model's are not; these stand in for training.
        with torch.no_grad():
            model.group_norm.weight.uniform_(0.5, 1.5)
            model.group_norm.bias.uniform_(-0.5, 0.5)
    os.makedirs(os.path.join(args.out_dir, "volumes"), exist_ok=True)
    weights = os.path.join(args.out_dir, "model.safetensors")
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, weights)

    shape = tuple(int(s) for s in args.shape.split(","))
    gen = torch.Generator().manual_seed(args.seed + 1)
    x = torch.rand((args.count,) + shape, generator=gen, dtype=torch.float32).numpy()
    for i in range(args.count):
        np.save(os.path.join(args.out_dir, "volumes", f"vol_{i:03d}.npy"), x[i])
    _, out = float64_run(model, x, args.device)
    np.save(os.path.join(args.out_dir, "expected.npy"), out)
    print(f"wrote {weights}, {args.count} volumes of {shape} in {args.out_dir}/volumes/, "
          f"PyTorch's float64 output in {args.out_dir}/expected.npy")
    return out


def run_volua(args, expected):
    volua = args.volua
    if not os.path.isfile(volua):
        print(f"skip volua: no {volua} (build it, or pass --volua PATH)")
        return True
    y = os.path.join(args.out_dir, "volua.npy")
    cmd = [volua, os.path.join(ROOT, "scripts", "pipeline.lua"),
           "--model", os.path.join(ROOT, "scripts", "example", "model.lua"),
           "--weights", os.path.join(args.out_dir, "model.safetensors"),
           "--input", os.path.join(args.out_dir, "volumes") + "/",
           "--batch", "4", "--out", y, "--device", args.device, "--quiet"]
    print("$", " ".join(cmd))
    r = subprocess.run(cmd)
    if r.returncode != 0:
        print(f"FAIL volua exited with {r.returncode}")
        return False
    return report("volua's pipeline vs PyTorch", np.load(y), expected, RTOL, ATOL)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out-dir", default="export")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--count", type=int, default=6)
    p.add_argument("--shape", default="3,16,32,32", help="C,D,H,W of each volume (C must be 3)")
    p.add_argument("--pytorch-init", action="store_true",
                   help="keep GroupNorm's initial weight 1 and bias 0 (the output is then ~0)")
    p.add_argument("--volua", default=os.path.join(ROOT, "build", "bin", "volua"))
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = p.parse_args()
    if args.shape.split(",")[0] != "3" or len(args.shape.split(",")) != 4:
        p.error("--shape must be 3,D,H,W (the example model takes 3 channels)")

    ok = check_stored_cases(args.device)
    expected = export(args)
    ok &= run_volua(args, expected)
    print("all checks passed" if ok else "some checks FAILED")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
