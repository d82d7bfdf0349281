#!/usr/bin/env python3
"""make_cases.py: volua's own reference cases for the nn library and the pipeline, computed
here by an independent float64 numpy implementation of conv3d -> group_norm -> mean (no
PyTorch needed; bench/export_model.py checks the same cases against PyTorch where it runs).

Writes, in the golden format of ../shared/golden (cases.lua beside the .npy files):
  spec/cases/cases.lua
  spec/cases/strided_groups/...   a Conv3d with stride, padding and groups, GroupNorm eps 1e-3
  scripts/example/                the example the README walks through (and a case here):
    model.lua is written by hand; this script writes model.safetensors (PyTorch's state_dict
    names), volumes/*.npy (a directory of input volumes, one or two per file) and
    expected.npy (the float64 reference of the mean for every volume, in file order).

Usage: python3 spec/cases/make_cases.py   (from the repository root; numpy and safetensors)
"""
import os
import sys

import numpy as np
from safetensors.numpy import save_file

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CASES = os.path.join(ROOT, "spec", "cases")
EXAMPLE = os.path.join(ROOT, "scripts", "example")


# -- the reference, in float64 ----

def triple(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v, v)


def conv3d(x, w, b, stride=1, padding=0, dilation=1, groups=1):
    """F.conv3d with zero padding: x (N, C, D, H, W), w (O, C/groups, kd, kh, kw)."""
    stride, padding, dilation = triple(stride), triple(padding), triple(dilation)
    x = np.asarray(x, np.float64)
    w = np.asarray(w, np.float64)
    n, c = x.shape[:2]
    o, cg, kd, kh, kw = w.shape
    assert c == cg * groups and o % groups == 0
    xp = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in padding])
    out_sz = [(xp.shape[2 + i] - dilation[i] * (k - 1) - 1) // stride[i] + 1
              for i, k in enumerate((kd, kh, kw))]
    og = o // groups
    y = np.zeros((n, o) + tuple(out_sz))
    for g in range(groups):
        xg = xp[:, g * cg:(g + 1) * cg]
        wg = w[g * og:(g + 1) * og]
        for a in range(kd):
            for bb in range(kh):
                for cc in range(kw):
                    d0, h0, w0 = a * dilation[0], bb * dilation[1], cc * dilation[2]
                    patch = xg[:, :,
                               d0:d0 + stride[0] * (out_sz[0] - 1) + 1:stride[0],
                               h0:h0 + stride[1] * (out_sz[1] - 1) + 1:stride[1],
                               w0:w0 + stride[2] * (out_sz[2] - 1) + 1:stride[2]]
                    y[:, g * og:(g + 1) * og] += np.einsum("ncdhw,oc->nodhw", patch, wg[:, :, a, bb, cc])
    if b is not None:
        y += np.asarray(b, np.float64).reshape(1, o, 1, 1, 1)
    return y


def group_norm(x, groups, weight, bias, eps):
    n, c = x.shape[:2]
    xg = x.reshape(n, groups, -1)
    mu = xg.mean(axis=2, keepdims=True)
    var = ((xg - mu) ** 2).mean(axis=2, keepdims=True)  # biased, as PyTorch
    y = ((xg - mu) / np.sqrt(var + eps)).reshape(x.shape)
    shape = (1, c) + (1,) * (x.ndim - 2)
    return y * np.asarray(weight, np.float64).reshape(shape) + np.asarray(bias, np.float64).reshape(shape)


def model(x, p, conv_args, groups, eps):
    feat = group_norm(conv3d(x, p["conv.weight"], p["conv.bias"], **conv_args), groups,
                      p["group_norm.weight"], p["group_norm.bias"], eps)
    return feat, feat.mean(axis=(1, 2, 3, 4))


def self_check():
    """The reference against a direct loop on a tiny input (guards the einsum slicing)."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 2, 4, 5, 3))
    w = rng.standard_normal((2, 1, 2, 3, 2))
    st, pd, dl = (2, 1, 1), (1, 0, 1), (1, 2, 1)
    y = conv3d(x, w, None, st, pd, dl, groups=2)
    xp = np.pad(x, [(0, 0), (0, 0), (1, 1), (0, 0), (1, 1)])
    for o in range(2):
        for i in range(y.shape[2]):
            for j in range(y.shape[3]):
                for k in range(y.shape[4]):
                    s = 0.0
                    for a in range(2):
                        for b in range(3):
                            for c in range(2):
                                s += xp[0, o, i * st[0] + a * dl[0], j * st[1] + b * dl[1],
                                        k * st[2] + c * dl[2]] * w[o, 0, a, b, c]
                    assert abs(s - y[0, o, i, j, k]) < 1e-12
    g = group_norm(x, 1, np.ones(2), np.zeros(2), 0.0)
    assert abs(g.mean()) < 1e-12 and abs(g.std() - 1) < 1e-12


# -- weights as PyTorch initialises them (uniform bounds 1/sqrt(fan_in)); float32 ----

def init_params(rng, cin, cout, k, groups, gn_channels, affine_random=True):
    k = triple(k)
    fan_in = cin // groups * k[0] * k[1] * k[2]
    bound = 1 / np.sqrt(fan_in)
    p = {
        "conv.weight": rng.uniform(-bound, bound, (cout, cin // groups) + k),
        "conv.bias": rng.uniform(-bound, bound, (cout,)),
        # PyTorch starts GroupNorm at weight 1 and bias 0, which makes the mean exactly 0;
        # a trained model's are not, so these are drawn around them.
        "group_norm.weight": rng.uniform(0.5, 1.5, (gn_channels,)),
        "group_norm.bias": rng.uniform(-0.5, 0.5, (gn_channels,)),
    }
    return {k_: v.astype(np.float32) for k_, v in p.items()}


def lua_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (tuple, list)):
        return "{" + ", ".join(lua_value(e) for e in v) + "}"
    if isinstance(v, dict):
        return "{" + ", ".join(
            (k if k.isidentifier() else '["%s"]' % k) + " = " + lua_value(v[k]) for k in v) + "}"
    if isinstance(v, str):
        return '"%s"' % v
    return repr(v)


def save_weights(p, path):
    save_file(p, path)
    os.chmod(path, 0o644)  # safetensors writes through a private temporary file


def save_npy(path, a):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    np.save(path, a)


def main():
    self_check()
    cases = []

    # 1. the example: KernelBench L2-23's architecture (Conv3d(3, 24, 3) -> GroupNorm(8, 24) ->
    #    mean over all but the batch) on five small volumes spread over four files.
    rng = np.random.default_rng(2023)
    p = init_params(rng, 3, 24, 3, 1, 24)
    vols = rng.uniform(0, 1, (5, 3, 8, 12, 10)).astype(np.float32)
    _, out = model(vols, p, {}, 8, 1e-5)
    os.makedirs(EXAMPLE, exist_ok=True)
    save_weights(p, os.path.join(EXAMPLE, "model.safetensors"))
    files = [("vol_000.npy", vols[0]), ("vol_001.npy", vols[1:3]), ("vol_002.npy", vols[3]),
             ("vol_003.npy", vols[4])]
    for name, a in files:
        save_npy(os.path.join(EXAMPLE, "volumes", name), a)
    save_npy(os.path.join(EXAMPLE, "expected.npy"), out)
    ex = "../../scripts/example/"
    cases.append({
        "name": "example", "op": "conv3d_group_norm_mean",
        "args": {"kernel_size": (3, 3, 3), "num_groups": 8, "eps": 1e-5,
                 "weights": ex + "model.safetensors", "input_dir": ex + "volumes"},
        "inputs": {"x": "example/x.npy"},
        "outputs": {"out": ex + "expected.npy"},
    })
    save_npy(os.path.join(CASES, "example", "x.npy"), vols)

    # 2. a strided, padded, grouped convolution with a GroupNorm eps of 1e-3: the fused path
    #    with every conv argument, and the GroupNorm output itself (feat) for the unfused one.
    rng = np.random.default_rng(7)
    p = init_params(rng, 4, 8, (3, 2, 3), 2, 8)
    conv_args = {"stride": (1, 2, 1), "padding": (1, 0, 1), "dilation": (1, 1, 2), "groups": 2}
    x = rng.standard_normal((2, 4, 7, 9, 8)).astype(np.float32)
    feat, out = model(x, p, conv_args, 4, 1e-3)
    d = os.path.join(CASES, "strided_groups")
    os.makedirs(d, exist_ok=True)
    save_weights(p, os.path.join(d, "model.safetensors"))
    save_npy(os.path.join(d, "x.npy"), x)
    save_npy(os.path.join(d, "feat.npy"), feat)
    save_npy(os.path.join(d, "out.npy"), out)
    args = {"kernel_size": (3, 2, 3), "num_groups": 4, "eps": 1e-3,
            "weights": "strided_groups/model.safetensors"}
    args.update(conv_args)
    cases.append({"name": "strided_groups", "op": "conv3d_group_norm_mean", "args": args,
                  "inputs": {"x": "strided_groups/x.npy"},
                  "outputs": {"out": "strided_groups/out.npy", "feat": "strided_groups/feat.npy"}})

    with open(os.path.join(CASES, "cases.lua"), "w") as f:
        f.write("-- volua's own reference cases (golden format), written by make_cases.py with an\n"
                "-- independent float64 numpy reference from float32 inputs; paths are relative to\n"
                "-- this file. args carry the Conv3d's arguments (stride, padding, dilation, groups:\n"
                "-- PyTorch's defaults where absent); weights use PyTorch's state_dict names; outputs\n"
                "-- are the per-sample mean (out) and, where given, the GroupNorm output (feat).\n"
                "return {\n")
        for c in cases:
            f.write("  " + lua_value(c) + ",\n")
        f.write("}\n")
    print("wrote", len(cases), "cases", file=sys.stderr)


if __name__ == "__main__":
    main()
