"""bench/small.py: convolutions with few tiles for the GPU (deep layers on small volumes), PyTorch
and volua in one command (on the device machine).

Each shape is timed by PyTorch at its defaults (cuDNN, TF32 allowed) and with TF32 off, with
bench.py's method (CUDA events, a 256 MB write before each call, median of 30 after 3 warm-ups);
volua's "fp32" is compared with PyTorch's TF32 off and its "tf32" with TF32 on (like with like,
../shared/device/README.md). Then volua is timed by its vol.bench
(the same method) in math "fp32" and "tf32", once per volua environment given: each is a
';'-separated list entry of space-separated NAME=VALUE settings ("" is volua's defaults), e.g.
  python3 bench/small.py build/bin/volua ";VOLUA_TC_KSPLIT=1"
times the default plans beside the plans without split K. SMALL_SET=sweep times the other layers
(SWEEP, below) instead, SMALL_SET=up the upsampling layers (UP); SMALL_PICK=1,4,7 only those rows. Timing only: spec/fast_spec.lua's split
K cases and the golden cases check the results. Inputs uniform in [0, 1), weights in [-0.5, 0.5).
"""
import os
import subprocess
import sys
import tempfile

import bench  # bench/bench.py (this directory): its time_cuda

import torch
import torch.nn.functional as F

# name, op, input shape, weight shape, bias, arguments
SHAPES = [
    ("conv 128->128 (2,128,16,32,32) k3 p1", "conv", (2, 128, 16, 32, 32), (128, 128, 3, 3, 3), dict(padding=1)),
    ("convT 128->64 (2,128,8,16,16) k3 s2 p1 op1", "convT", (2, 128, 8, 16, 16), (128, 64, 3, 3, 3),
     dict(stride=2, padding=1, output_padding=1)),
    ("conv 64->64 (1,64,16,32,32) k3 p1", "conv", (1, 64, 16, 32, 32), (64, 64, 3, 3, 3), dict(padding=1)),
    ("conv 64->128 (4,64,8,16,16) k3 p1", "conv", (4, 64, 8, 16, 16), (128, 64, 3, 3, 3), dict(padding=1)),
    ("conv 256->256 (2,256,8,16,16) k3 p1", "conv", (2, 256, 8, 16, 16), (256, 256, 3, 3, 3), dict(padding=1)),
    ("convT 64->32 (4,64,8,16,16) k3 s2 p1 op1", "convT", (4, 64, 8, 16, 16), (64, 32, 3, 3, 3),
     dict(stride=2, padding=1, output_padding=1)),
    ("conv 32->32 (1,32,32,64,64) k3 p1", "conv", (1, 32, 32, 64, 64), (32, 32, 3, 3, 3), dict(padding=1)),
    ("conv 512->512 (1,512,4,8,8) k3 p1", "conv", (1, 512, 4, 8, 8), (512, 512, 3, 3, 3), dict(padding=1)),
    ("conv 128->64 (2,128,16,32,32) k3 p1", "conv", (2, 128, 16, 32, 32), (64, 128, 3, 3, 3), dict(padding=1)),
    ("conv 192->192 (2,192,8,16,16) k3 p1", "conv", (2, 192, 8, 16, 16), (192, 192, 3, 3, 3), dict(padding=1)),
    ("conv 128->128 (1,128,32,64,64) k3 p1", "conv", (1, 128, 32, 64, 64), (128, 128, 3, 3, 3), dict(padding=1)),
    ("conv 256->128 (2,256,16,16,16) k3 s2 p1", "conv", (2, 256, 16, 16, 16), (128, 256, 3, 3, 3),
     dict(stride=2, padding=1)),
    ("conv 160->160 (2,160,8,16,16) k3 p1", "conv", (2, 160, 8, 16, 16), (160, 160, 3, 3, 3), dict(padding=1)),
    ("conv 320->320 (2,320,8,16,16) k3 p1", "conv", (2, 320, 8, 16, 16), (320, 320, 3, 3, 3), dict(padding=1)),
]

# SMALL_SET=sweep: other layers of 3D networks (stems and heads on whole volumes, pointwise, grouped,
# depthwise, strided, (2+1)D video factorisations, dilated, upsampling), for the "not slower than
# PyTorch on other shapes" check; the default set is the deep layers above.
SWEEP = [
    ("conv 1->32 (1,1,128,128,128) k3 p1", "conv", (1, 1, 128, 128, 128), (32, 1, 3, 3, 3), dict(padding=1)),
    ("conv 4->32 (2,4,128,128,128) k3 p1", "conv", (2, 4, 128, 128, 128), (32, 4, 3, 3, 3), dict(padding=1)),
    ("conv 32->2 (1,32,128,128,128) k1", "conv", (1, 32, 128, 128, 128), (2, 32, 1, 1, 1), {}),
    ("conv 16->16 (4,16,32,64,64) k5 p2", "conv", (4, 16, 32, 64, 64), (16, 16, 5, 5, 5), dict(padding=2)),
    ("conv 48->48 (2,48,32,32,32) k3 p1", "conv", (2, 48, 32, 32, 32), (48, 48, 3, 3, 3), dict(padding=1)),
    ("conv 96->96 (2,96,16,32,32) k3 p1", "conv", (2, 96, 16, 32, 32), (96, 96, 3, 3, 3), dict(padding=1)),
    ("conv 224->224 (2,224,8,16,16) k3 p1", "conv", (2, 224, 8, 16, 16), (224, 224, 3, 3, 3), dict(padding=1)),
    ("conv 256->64 (2,256,16,32,32) k1", "conv", (2, 256, 16, 32, 32), (64, 256, 1, 1, 1), {}),
    ("conv 64->256 (2,64,16,32,32) k1", "conv", (2, 64, 16, 32, 32), (256, 64, 1, 1, 1), {}),
    ("conv 128->128 g4 (2,128,16,32,32) k3 p1", "conv", (2, 128, 16, 32, 32), (128, 32, 3, 3, 3),
     dict(padding=1, groups=4)),
    ("conv 64->64 depthwise (2,64,32,64,64) k3 p1", "conv", (2, 64, 32, 64, 64), (64, 1, 3, 3, 3),
     dict(padding=1, groups=64)),
    ("conv 64->128 (2,64,32,64,64) k3 s2 p1", "conv", (2, 64, 32, 64, 64), (128, 64, 3, 3, 3),
     dict(stride=2, padding=1)),
    ("conv 64->64 (8,64,16,56,56) k(1,3,3) p(0,1,1)", "conv", (8, 64, 16, 56, 56), (64, 64, 1, 3, 3),
     dict(padding=(0, 1, 1))),
    ("conv 64->64 (8,64,16,56,56) k(3,1,1) p(1,0,0)", "conv", (8, 64, 16, 56, 56), (64, 64, 3, 1, 1),
     dict(padding=(1, 0, 0))),
    ("conv 32->32 (1,32,64,128,128) k3 p2 d2", "conv", (1, 32, 64, 128, 128), (32, 32, 3, 3, 3),
     dict(padding=2, dilation=2)),
    ("conv 128->128 (2,128,16,32,32) k1", "conv", (2, 128, 16, 32, 32), (128, 128, 1, 1, 1), {}),
    ("conv 512->128 (1,512,8,16,16) k1", "conv", (1, 512, 8, 16, 16), (128, 512, 1, 1, 1), {}),
    ("conv 64->64 (2,64,32,64,64) k1", "conv", (2, 64, 32, 64, 64), (64, 64, 1, 1, 1), {}),
    ("conv 32->32 (1,32,128,128,128) k3 p1", "conv", (1, 32, 128, 128, 128), (32, 32, 3, 3, 3), dict(padding=1)),
    ("conv 16->32 (2,16,64,128,128) k3 s2 p1", "conv", (2, 16, 64, 128, 128), (32, 16, 3, 3, 3),
     dict(stride=2, padding=1)),
    ("conv 3->64 (2,3,32,224,224) k7 s2 p3", "conv", (2, 3, 32, 224, 224), (64, 3, 7, 7, 7), dict(stride=2, padding=3)),
    ("conv 3->64 (8,3,16,112,112) k3 p1", "conv", (8, 3, 16, 112, 112), (64, 3, 3, 3, 3), dict(padding=1)),
    ("conv 256->256 (2,256,8,14,14) k3 p1", "conv", (2, 256, 8, 14, 14), (256, 256, 3, 3, 3), dict(padding=1)),
    ("conv 512->512 (2,512,2,7,7) k3 p1", "conv", (2, 512, 2, 7, 7), (512, 512, 3, 3, 3), dict(padding=1)),
    ("conv 256->1024 (2,256,8,14,14) k1", "conv", (2, 256, 8, 14, 14), (1024, 256, 1, 1, 1), {}),
    ("conv 1024->256 (2,1024,8,14,14) k1", "conv", (2, 1024, 8, 14, 14), (256, 1024, 1, 1, 1), {}),
    ("convT 64->32 (1,64,64,64,64) k2 s2", "convT", (1, 64, 64, 64, 64), (64, 32, 2, 2, 2), dict(stride=2)),
    ("convT 128->64 (2,128,32,32,32) k2 s2", "convT", (2, 128, 32, 32, 32), (128, 64, 2, 2, 2), dict(stride=2)),
    ("convT 256->128 (2,256,8,16,16) k2 s2", "convT", (2, 256, 8, 16, 16), (256, 128, 2, 2, 2), dict(stride=2)),
    ("convT 64->32 (2,64,16,32,32) k4 s2 p1", "convT", (2, 64, 16, 32, 32), (64, 32, 4, 4, 4),
     dict(stride=2, padding=1)),
]
# SMALL_SET=up: upsampling layers (transposed convolutions of stride 2) of decoders, U-Nets and
# generative models, kernels 4 (padding 1), 3 (padding 1, output padding 1) and 2
UP = [
    ("convT 64->32 (2,64,16,32,32) k4 s2 p1", "convT", (2, 64, 16, 32, 32), (64, 32, 4, 4, 4), dict(stride=2, padding=1)),
    ("convT 128->64 (2,128,16,32,32) k4 s2 p1", "convT", (2, 128, 16, 32, 32), (128, 64, 4, 4, 4),
     dict(stride=2, padding=1)),
    ("convT 32->16 (2,32,32,64,64) k4 s2 p1", "convT", (2, 32, 32, 64, 64), (32, 16, 4, 4, 4), dict(stride=2, padding=1)),
    ("convT 256->128 (2,256,8,16,16) k4 s2 p1", "convT", (2, 256, 8, 16, 16), (256, 128, 4, 4, 4),
     dict(stride=2, padding=1)),
    ("convT 512->256 (1,512,4,8,8) k4 s2 p1", "convT", (1, 512, 4, 8, 8), (512, 256, 4, 4, 4), dict(stride=2, padding=1)),
    ("convT 64->64 (4,64,8,32,32) k4 s2 p1", "convT", (4, 64, 8, 32, 32), (64, 64, 4, 4, 4), dict(stride=2, padding=1)),
    ("convT 64->32 (2,64,16,32,32) k3 s2 p1 op1", "convT", (2, 64, 16, 32, 32), (64, 32, 3, 3, 3),
     dict(stride=2, padding=1, output_padding=1)),
    ("convT 128->64 (2,128,16,32,32) k3 s2 p1 op1", "convT", (2, 128, 16, 32, 32), (128, 64, 3, 3, 3),
     dict(stride=2, padding=1, output_padding=1)),
    ("convT 64->32 (2,64,16,32,32) k2 s2", "convT", (2, 64, 16, 32, 32), (64, 32, 2, 2, 2), dict(stride=2)),
]
if os.environ.get("SMALL_SET") == "sweep":
    SHAPES = SWEEP
elif os.environ.get("SMALL_SET") == "up":
    SHAPES = UP
# SMALL_PICK=1,4,7: only those rows of the set (1-based), for measuring a few shapes
if os.environ.get("SMALL_PICK"):
    SHAPES = [SHAPES[int(i) - 1] for i in os.environ["SMALL_PICK"].split(",")]


def lua_script():
    lines = ["local vol = require 'volua'", "local cases = {}"]
    for i, (_, op, xs, ws, a) in enumerate(SHAPES):
        nb = ws[0] if op == "conv" else ws[1]
        fn = "conv3d" if op == "conv" else "conv_transpose3d"
        lines.append(f"cases[{i + 1}] = function() local x = vol.rand({bench.lua_value(xs)}):cuda(); "
                     f"local w = (vol.rand({bench.lua_value(ws)}) - 0.5):cuda(); local b = vol.rand({{{nb}}}):cuda(); "
                     f"return function() return vol.{fn}(x, w, b, {bench.lua_value(a)}) end end")
    lines.append("for i, make in ipairs(cases) do local f = make(); for _, m in ipairs({'fp32', 'tf32'}) do "
                 "vol.set_math(m); print(i, m, (vol.bench(f, {warmup = 3, reps = 30}))) end; f = nil; "
                 "collectgarbage() end")
    return "\n".join(lines) + "\n"


def main():
    volua = sys.argv[1] if len(sys.argv) > 1 else "build/bin/volua"
    variants = sys.argv[2].split(";") if len(sys.argv) > 2 else [""]
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(1)
    flush = torch.empty(256 * 1024 * 1024, dtype=torch.uint8, device=dev)
    torch_ms, torch_fp32_ms = [], []
    for _, op, xs, ws, a in SHAPES:
        x = torch.rand(xs, device=dev, generator=gen)
        w = torch.rand(ws, device=dev, generator=gen) - 0.5
        b = torch.rand(ws[0] if op == "conv" else ws[1], device=dev, generator=gen)
        f = (lambda: F.conv3d(x, w, b, **a)) if op == "conv" else (lambda: F.conv_transpose3d(x, w, b, **a))
        torch_ms.append(bench.time_cuda(f, 3, 30, flush)[0])
        torch.backends.cudnn.allow_tf32 = False
        torch_fp32_ms.append(bench.time_cuda(f, 3, 30, flush)[0])
        torch.backends.cudnn.allow_tf32 = True
        del x, w, b
    del flush
    torch.cuda.empty_cache()
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as f:
        f.write(lua_script())
        script = f.name
    results = []
    for var in variants:
        env = dict(os.environ)
        for kv in var.split():
            k, v = kv.split("=", 1)
            env[k] = v
        out = subprocess.run([volua, script], capture_output=True, text=True, env=env, check=True).stdout
        r = {}
        for line in out.splitlines():
            i, m, ms = line.split()
            r[(int(i), m)] = float(ms)
        results.append(r)
    os.unlink(script)
    head = "| shape | PyTorch ms | PyTorch TF32 off ms |" + "".join(f" volua fp32 [{v or 'default'}] | volua tf32 [{v or 'default'}] |" for v in variants)
    print(head)
    print("|---|---|---|" + "---|---|" * len(variants))
    for i, (name, *_rest) in enumerate(SHAPES):
        row = f"| {name} | {torch_ms[i]:.4f} | {torch_fp32_ms[i]:.4f} |"
        for r in results:
            for m, ref in (("fp32", torch_fp32_ms[i]), ("tf32", torch_ms[i])):
                ms = r[(i + 1, m)]
                row += f" {ms:.4f} ({ref / ms:.2f}x) |"
        print(row)


if __name__ == "__main__":
    main()
