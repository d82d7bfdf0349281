#!/usr/bin/env python3
"""bench/bench.py: PyTorch's side of bench/run.sh, and the report.

  bench.py torch  --dir DIR [--reps 30] [--warmup 5] [--problems L1-60,L2-23] [--no-compile]
      makes the inputs of the issue-4 problems (float32, uniform [0, 1), fixed seeds; weights as the
      KernelBench modules initialise them, seeded), writes them and their float64 references (torch on
      float64 inputs, on the GPU) as .npy under DIR with DIR/problems.lua for scripts/bench.lua, and
      times PyTorch: eager at its defaults (cuDNN, TF32 allowed for convolutions), torch.compile, and
      cudnn.benchmark + channels_last_3d, each with TF32 on and off. Results: DIR/torch.json.
  bench.py report --dir DIR --out OUTDIR
      joins DIR/torch.json and DIR/volua.json (scripts/bench.lua) into the table, printed and written
      to OUTDIR/results-<date>.md, .csv and .json.

Timing (both sides): CUDA events around one call, a 256 MB write before each timed call (L2 flush),
warm-up calls first, the median of --reps (at least 30) calls.
"""
import argparse
import datetime
import json
import os
import statistics
import sys
import time

# Floors on an H200 from issue 4 (copy 4.2 TB/s, fp32 FMA 51 TFLOP/s, TF32 359 TFLOP/s); ms.
# bench/NOTES.md shows how each was computed.
FLOORS = {
    "L1-43": {"fp32": 1.14, "tf32": 1.14},
    "L1-77": {"fp32": 0.57, "tf32": 0.08},
    "L1-60": {"fp32": 2.72, "tf32": 0.39},
    "L1-66": {"fp32": 1.34, "tf32": 0.19},
    "L2-23": {"fp32": 0.19, "tf32": 0.03},
}
ORDER = ["L1-43", "L1-77", "L1-60", "L1-66", "L2-23"]
# Other 3D shapes, not issue 4's five (no floors, not in the geometric means): issue 4 asks that
# they be no slower than PyTorch. Shapes of volumetric networks (U-Net levels, pooling, up- and
# downsampling); run with the others unless PROBLEMS names a subset.
EXTRA = ["X-avg-k3s2", "X-avg-k3s1", "X-avg-k2s2", "X-pool-k3s1", "X-pool-k2s2", "X-conv-c32", "X-conv-s2",
         "X-convT-k2s2", "X-convT-k3s2"]
# other KernelBench level 1 3D problems (their files' shapes and arguments, as their models build them)
KB_EXTRA = ["L1-46", "L1-54", "L1-59", "L1-58", "L1-61", "L1-68", "L1-70", "L1-72", "L1-73", "X-convT-g4",
            "X-conv-g4", "X-conv-dw"]
EXTRA += KB_EXTRA
# KernelBench level 2 3D problems made of volua's ops (their files' shapes and modules, run as a
# volua script would write them: one op after the other; scripts/bench.lua's make_call)
KB2_EXTRA = ["L2-61", "L2-20", "L2-78", "L2-8"]
EXTRA += KB2_EXTRA
# the other level 2 3D problems, made of the activations, softmax and logsumexp, amax/amin, avg_pool3d,
# batch_norm, instance_norm and layer_norm added in the thirty-seventh session (all but L2-83, whose
# training-mode dropout draws random numbers PyTorch's way)
KB2_MORE = ["L2-3", "L2-6", "L2-7", "L2-13", "L2-15", "L2-24", "L2-26", "L2-27", "L2-34", "L2-38", "L2-43",
            "L2-47", "L2-48", "L2-49", "L2-50", "L2-58", "L2-60", "L2-72", "L2-74", "L2-77", "L2-79", "L2-89",
            "L2-90", "L2-96", "L2-100"]
EXTRA += KB2_MORE
# volua's tolerances per math mode (../shared/golden/README.md)
TOL = {"fp32": (1e-4, 1e-5), "tf32": (1e-2, 1e-2)}


def problems():
    """name -> (description, input shape, seed, module factory, volua call description)."""
    import torch
    import torch.nn as nn

    class ConvGnMean(nn.Module):  # KernelBench level 2, problem 23
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv3d(3, 24, 3)
            self.group_norm = nn.GroupNorm(8, 24)
            with torch.no_grad():  # the defaults (1, 0) make the answer 0: random affine parameters
                self.group_norm.weight.copy_(torch.rand(24) * 2)
                self.group_norm.bias.copy_(torch.rand(24) * 3 - 1.5)

        def forward(self, x):
            return self.group_norm(self.conv(x)).mean(dim=[1, 2, 3, 4])

    class ConvTReluGn(nn.Module):  # level 2, problem 61
        def __init__(self):
            super().__init__()
            self.conv_transpose = nn.ConvTranspose3d(64, 128, 3, bias=False)
            self.relu = nn.ReLU()
            self.group_norm = nn.GroupNorm(num_groups=8, num_channels=128)

        def forward(self, x):
            return self.group_norm(self.relu(self.conv_transpose(x)))

    class ConvTResidual(nn.Module):  # level 2, problem 20
        def __init__(self):
            super().__init__()
            self.conv_transpose = nn.ConvTranspose3d(32, 64, 3, stride=2, padding=1, output_padding=1)
            self.bias = nn.Parameter(torch.randn(64, 1, 1, 1))

        def forward(self, x):
            x = self.conv_transpose(x)
            original_x = x.clone().detach()
            x = x + self.bias
            x = x + original_x
            x = x * original_x
            x = x + original_x
            return x

    class ConvTPoolPoolSum(nn.Module):  # level 2, problem 78
        def __init__(self):
            super().__init__()
            self.conv_transpose = nn.ConvTranspose3d(32, 64, 5, stride=2, padding=2)
            self.max_pool1 = nn.MaxPool3d(kernel_size=2)
            self.max_pool2 = nn.MaxPool3d(kernel_size=3)

        def forward(self, x):
            x = self.max_pool2(self.max_pool1(self.conv_transpose(x)))
            return torch.sum(x, dim=1, keepdim=True)

    class ConvDivPoolMeanSum(nn.Module):  # level 2, problem 8
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv3d(8, 16, (3, 3, 3))
            self.max_pool = nn.MaxPool3d((2, 2, 2))
            self.global_avg_pool = nn.AdaptiveAvgPool3d((1, 1, 1))
            self.bias = nn.Parameter(torch.randn(16, 1, 1, 1))

        def forward(self, x):
            x = self.global_avg_pool(self.max_pool(self.conv(x) / 2.0)) + self.bias
            return torch.sum(x, dim=1)


    # -- the thirty-seventh session's level 2 problems (KernelBench's files: shapes, modules, forward) ----
    F = torch.nn.functional

    class L2_3(nn.Module):  # ConvTranspose3d_Sum_LayerNorm_AvgPool_GELU
        def __init__(self):
            super().__init__()
            self.conv_transpose = nn.ConvTranspose3d(32, 64, 3, stride=2, padding=1, output_padding=1)
            self.sum_weight = nn.Parameter(torch.tensor(1.0))
            self.norm = nn.LayerNorm((64,))
            self.avg_pool = nn.AvgPool3d(kernel_size=2)
            self.gelu = nn.GELU()

        def forward(self, x):
            return self.gelu(self.avg_pool(self.norm(self.conv_transpose(x) + self.sum_weight)))

    class L2_6(nn.Module):  # Conv3d_Softmax_MaxPool_MaxPool
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv3d(3, 16, 3)
            self.pool1, self.pool2 = nn.MaxPool3d(2), nn.MaxPool3d(2)

        def forward(self, x):
            return self.pool2(self.pool1(torch.softmax(self.conv(x), dim=1)))

    class L2_7(nn.Module):  # Conv3d_ReLU_LeakyReLU_GELU_Sigmoid_BiasAdd
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv3d(8, 32, 3)
            self.bias = nn.Parameter(torch.randn(32, 1, 1, 1))

        def forward(self, x):
            x = F.leaky_relu(torch.relu(self.conv(x)), negative_slope=0.01)
            return torch.sigmoid(F.gelu(x)) + self.bias

    class L2_13(nn.Module):  # ConvTranspose3d_Mean_Add_Softmax_Tanh_Scaling
        def __init__(self):
            super().__init__()
            self.conv_transpose = nn.ConvTranspose3d(16, 64, 3, stride=1, padding=1)
            self.bias = nn.Parameter(torch.randn(1, 64, 1, 1, 1))

        def forward(self, x):
            x = self.conv_transpose(x).mean(dim=2, keepdim=True) + self.bias
            return torch.tanh(torch.softmax(x, dim=1)) * 2.0

    class L2_15(nn.Module):  # ConvTranspose3d_BatchNorm_Subtract (training mode: batch statistics)
        def __init__(self):
            super().__init__()
            self.conv_transpose = nn.ConvTranspose3d(16, 32, 3, stride=2, padding=1)
            self.batch_norm = nn.BatchNorm3d(32)

        def forward(self, x):
            x = self.batch_norm(self.conv_transpose(x))
            return x - torch.mean(x, dim=(2, 3, 4), keepdim=True)

    class L2_24(nn.Module):  # Conv3d_Min_Softmax
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv3d(3, 24, 3)

        def forward(self, x):
            return torch.softmax(torch.min(self.conv(x), dim=2)[0], dim=1)

    class L2_26(nn.Module):  # ConvTranspose3d_Add_HardSwish (its bias parameter is unused, as in the file)
        def __init__(self):
            super().__init__()
            self.conv_transpose = nn.ConvTranspose3d(32, 64, 3, stride=2, padding=1, output_padding=1)

        def forward(self, x, add_input):
            x = self.conv_transpose(x) + add_input
            return x * F.hardswish(x)

    class L2_27(nn.Module):  # Conv3d_HardSwish_GroupNorm_Mean
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv3d(3, 16, 4)
            self.group_norm = nn.GroupNorm(4, 16)

        def forward(self, x):
            return torch.mean(self.group_norm(F.hardswish(self.conv(x))), dim=[2, 3, 4])

    class L2_34(nn.Module):  # ConvTranspose3d_LayerNorm_GELU_Scaling (LayerNorm(64) over W, which is 64)
        def __init__(self):
            super().__init__()
            self.conv_transpose = nn.ConvTranspose3d(32, 64, 4, stride=2, padding=1)
            self.layer_norm = nn.LayerNorm(64, eps=1e-5)

        def forward(self, x):
            return F.gelu(self.layer_norm(self.conv_transpose(x))) * 1.0

    class L2_38(nn.Module):  # ConvTranspose3d_AvgPool_Clamp_Softmax_Multiply
        def __init__(self):
            super().__init__()
            self.avg_pool = nn.AvgPool3d(2)
            self.conv_transpose = nn.ConvTranspose3d(32, 64, 3, stride=2, padding=1, output_padding=1)
            self.scale = nn.Parameter(torch.ones(1, 64, 1, 1, 1))

        def forward(self, x):
            x = torch.clamp(self.conv_transpose(self.avg_pool(x)), 0.0, 1.0)
            b, c, d, h, w = x.shape
            return torch.softmax(x.view(b, c, -1), dim=2).view(b, c, d, h, w) * self.scale

    class L2_43(nn.Module):  # Conv3d_Max_LogSumExp_ReLU
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv3d(32, 64, 3, stride=1, padding=1)
            self.max_pool = nn.MaxPool3d(kernel_size=2, stride=2)

        def forward(self, x):
            return torch.relu(torch.logsumexp(self.max_pool(self.conv(x)), dim=1, keepdim=True))

    class L2_47(nn.Module):  # Conv3d_Mish_Tanh
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv3d(32, 64, 3)

        def forward(self, x):
            return torch.tanh(F.mish(self.conv(x)))

    class L2_48(nn.Module):  # Conv3d_Scaling_Tanh_Multiply_Sigmoid
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv3d(3, 16, 3)
            self.scaling_factor = nn.Parameter(torch.randn(16, 1, 1, 1))
            self.bias = nn.Parameter(torch.randn(16, 1, 1, 1))

        def forward(self, x):
            return torch.sigmoid(torch.tanh(self.conv(x) * self.scaling_factor) * self.bias)

    class L2_49(nn.Module):  # ConvTranspose3d_Softmax_Sigmoid
        def __init__(self):
            super().__init__()
            self.conv_transpose = nn.ConvTranspose3d(32, 64, 3, stride=2, padding=1, output_padding=1)

        def forward(self, x):
            return torch.sigmoid(torch.softmax(self.conv_transpose(x), dim=1))

    class L2_50(nn.Module):  # ConvTranspose3d_Scaling_AvgPool_BiasAdd_Scaling
        def __init__(self):
            super().__init__()
            self.conv_transpose = nn.ConvTranspose3d(3, 16, 3, stride=2, padding=1)
            self.scale1 = nn.Parameter(torch.tensor(0.5))
            self.avg_pool = nn.AvgPool3d(kernel_size=2)
            self.bias = nn.Parameter(torch.randn(16, 1, 1, 1))
            self.scale2 = nn.Parameter(torch.tensor(1.0))

        def forward(self, x):
            return (self.avg_pool(self.conv_transpose(x) * self.scale1) + self.bias) * self.scale2

    class L2_58(nn.Module):  # ConvTranspose3d_LogSumExp_HardSwish_Subtract_Clamp
        def __init__(self):
            super().__init__()
            self.conv_transpose = nn.ConvTranspose3d(3, 16, 3, stride=2, padding=1)
            self.bias = nn.Parameter(torch.randn(1, 1, 1, 1))

        def forward(self, x):
            x = torch.logsumexp(self.conv_transpose(x), dim=1, keepdim=True)
            x = x * torch.sigmoid(x + 3) / 6
            return torch.clamp(x - self.bias, min=-1, max=1)

    class L2_60(nn.Module):  # ConvTranspose3d_Swish_GroupNorm_HardSwish
        def __init__(self):
            super().__init__()
            self.conv_transpose = nn.ConvTranspose3d(3, 16, 3, stride=2, padding=1)
            self.group_norm = nn.GroupNorm(num_groups=4, num_channels=16, eps=1e-5)

        def forward(self, x):
            x = self.conv_transpose(x)
            return F.hardswish(self.group_norm(torch.sigmoid(x) * x))

    class L2_72(nn.Module):  # ConvTranspose3d_BatchNorm_AvgPool_AvgPool (training mode)
        def __init__(self):
            super().__init__()
            self.conv_transpose = nn.ConvTranspose3d(3, 16, 3, stride=2, padding=1)
            self.batch_norm = nn.BatchNorm3d(16)
            self.avg_pool1, self.avg_pool2 = nn.AvgPool3d(kernel_size=2), nn.AvgPool3d(kernel_size=2)

        def forward(self, x):
            return self.avg_pool2(self.avg_pool1(self.batch_norm(self.conv_transpose(x))))

    class L2_74(nn.Module):  # ConvTranspose3d_LeakyReLU_Multiply_LeakyReLU_Max
        def __init__(self):
            super().__init__()
            self.conv_transpose = nn.ConvTranspose3d(16, 32, 3, stride=2, padding=1, output_padding=1)
            self.multiplier = nn.Parameter(torch.randn(32, 1, 1, 1))
            self.leaky_relu = nn.LeakyReLU(negative_slope=0.2)
            self.max_pool = nn.MaxPool3d(kernel_size=2)

        def forward(self, x):
            x = self.leaky_relu(self.leaky_relu(self.conv_transpose(x)) * self.multiplier)
            return self.max_pool(x)

    class L2_77(nn.Module):  # ConvTranspose3d_Scale_BatchNorm_GlobalAvgPool (training mode)
        def __init__(self):
            super().__init__()
            self.conv_transpose = nn.ConvTranspose3d(64, 128, 5)
            self.batch_norm = nn.BatchNorm3d(128, eps=1e-5, momentum=0.1)
            self.global_avg_pool = nn.AdaptiveAvgPool3d((1, 1, 1))

        def forward(self, x):
            return self.global_avg_pool(self.batch_norm(self.conv_transpose(x) * 2.0))

    class L2_79(nn.Module):  # Conv3d_Multiply_InstanceNorm_Clamp_Multiply_Max
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv3d(3, 16, 3)
            self.multiplier = nn.Parameter(torch.randn(16, 1, 1, 1))
            self.instance_norm = nn.InstanceNorm3d(16)

        def forward(self, x):
            x = torch.clamp(self.instance_norm(self.conv(x) * self.multiplier), -1.0, 1.0)
            return torch.max(x * self.multiplier, dim=1)[0]

    class L2_89(nn.Module):  # ConvTranspose3d_MaxPool_Softmax_Subtract_Swish_Max
        def __init__(self):
            super().__init__()
            self.conv_transpose = nn.ConvTranspose3d(3, 16, 3, stride=2, padding=1, output_padding=1)
            self.max_pool = nn.MaxPool3d(kernel_size=2, stride=2, padding=0)
            self.subtract = nn.Parameter(torch.randn(16))

        def forward(self, x):
            x = torch.softmax(self.max_pool(self.conv_transpose(x)), dim=1)
            x = x - self.subtract.view(1, -1, 1, 1, 1)
            return torch.max(torch.sigmoid(x) * x, dim=1)[0]

    class L2_90(nn.Module):  # Conv3d_LeakyReLU_Sum_Clamp_GELU
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv3d(8, 64, 3)
            self.sum_tensor = nn.Parameter(torch.randn(64, 1, 1, 1))

        def forward(self, x):
            x = F.leaky_relu(self.conv(x), negative_slope=0.2) + self.sum_tensor
            return F.gelu(torch.clamp(x, min=-1.0, max=1.0))

    class L2_96(nn.Module):  # ConvTranspose3d_Multiply_Max_GlobalAvgPool_Clamp
        def __init__(self):
            super().__init__()
            self.conv_transpose = nn.ConvTranspose3d(3, 16, 3, stride=2, padding=1)
            self.maxpool = nn.MaxPool3d(kernel_size=2)
            self.global_avg_pool = nn.AdaptiveAvgPool3d((1, 1, 1))

        def forward(self, x):
            x = self.global_avg_pool(self.maxpool(self.conv_transpose(x) * 0.5))
            return torch.clamp(x, min=0, max=1)

    class L2_100(nn.Module):  # ConvTranspose3d_Clamp_Min_Divide
        def __init__(self):
            super().__init__()
            self.conv_transpose = nn.ConvTranspose3d(64, 128, 3, stride=2, padding=1)

        def forward(self, x):
            return torch.clamp(self.conv_transpose(x), min=-1.0) / 2.0

    more = {
        "L2-3": ((32, 32, 16, 32, 32), L2_3, "convT 32->64 k3 s2 p1 op1, + w, LayerNorm(64) over W, avg_pool 2, GELU"),
        "L2-6": ((128, 3, 16, 32, 32), L2_6, "conv 3->16 k3, softmax over C, max_pool 2, max_pool 2"),
        "L2-7": ((64, 8, 32, 64, 64), L2_7, "conv 8->32 k3, relu, leaky_relu, GELU, sigmoid, + bias[c]"),
        "L2-13": ((16, 16, 32, 128, 128), L2_13, "convT 16->64 k3 p1, mean over D, + bias[c], softmax over C, tanh, * 2"),
        "L2-15": ((16, 16, 16, 32, 32), L2_15, "convT 16->32 k3 s2 p1, BatchNorm3d (train), - mean over DHW"),
        "L2-24": ((128, 3, 24, 32, 32), L2_24, "conv 3->24 k3, min over D, softmax over C"),
        "L2-26": ((128, 32, 16, 16, 16), L2_26, "convT 32->64 k3 s2 p1 op1, + input, * hardswish"),
        "L2-27": ((1024, 3, 16, 32, 32), L2_27, "conv 3->16 k4, hardswish, GroupNorm(4, 16), mean over DHW"),
        "L2-34": ((32, 32, 16, 32, 32), L2_34, "convT 32->64 k4 s2 p1, LayerNorm(64) over W, GELU, * 1"),
        "L2-38": ((32, 32, 32, 64, 64), L2_38, "avg_pool 2, convT 32->64 k3 s2 p1 op1, clamp, softmax over DHW, * scale[c]"),
        "L2-43": ((4, 32, 32, 128, 128), L2_43, "conv 32->64 k3 p1, max_pool 2, logsumexp over C, relu"),
        "L2-47": ((16, 32, 32, 64, 64), L2_47, "conv 32->64 k3, mish, tanh"),
        "L2-48": ((128, 3, 16, 64, 64), L2_48, "conv 3->16 k3, * s[c], tanh, * b[c], sigmoid"),
        "L2-49": ((16, 32, 16, 32, 32), L2_49, "convT 32->64 k3 s2 p1 op1, softmax over C, sigmoid"),
        "L2-50": ((128, 3, 16, 32, 32), L2_50, "convT 3->16 k3 s2 p1, * s, avg_pool 2, + bias[c], * s"),
        "L2-58": ((128, 3, 16, 32, 32), L2_58, "convT 3->16 k3 s2 p1, logsumexp over C, x sigmoid(x+3)/6, - b, clamp"),
        "L2-60": ((128, 3, 16, 32, 32), L2_60, "convT 3->16 k3 s2 p1, swish, GroupNorm(4, 16), hardswish"),
        "L2-72": ((64, 3, 32, 32, 32), L2_72, "convT 3->16 k3 s2 p1, BatchNorm3d (train), avg_pool 2, avg_pool 2"),
        "L2-74": ((16, 16, 16, 32, 32), L2_74, "convT 16->32 k3 s2 p1 op1, leaky_relu, * m[c], leaky_relu, max_pool 2"),
        "L2-77": ((16, 64, 16, 32, 32), L2_77, "convT 64->128 k5, * 2, BatchNorm3d (train), mean over DHW"),
        "L2-79": ((128, 3, 16, 32, 32), L2_79, "conv 3->16 k3, * m[c], InstanceNorm3d, clamp, * m[c], max over C"),
        "L2-89": ((128, 3, 16, 32, 32), L2_89, "convT 3->16 k3 s2 p1 op1, max_pool 2, softmax over C, - s[c], swish, max over C"),
        "L2-90": ((128, 8, 16, 64, 64), L2_90, "conv 8->64 k3, leaky_relu, + s[c], clamp, GELU"),
        "L2-96": ((128, 3, 16, 32, 32), L2_96, "convT 3->16 k3 s2 p1, * 0.5, max_pool 2, mean over DHW, clamp"),
        "L2-100": ((16, 64, 24, 48, 48), L2_100, "convT 64->128 k3 s2 p1, clamp(min=-1), / 2"),
    }
    extra_inputs = {"L2-26": {"add_input": (128, 64, 32, 32, 32)}}
    train_mode = {"L2-15", "L2-72", "L2-77"}  # KernelBench runs its models as built: BatchNorm in training mode

    table = {
        "L1-43": dict(op="max_pool3d", shape=(16, 32, 128, 128, 128), seed=43,
                      make=lambda: nn.MaxPool3d(kernel_size=3, stride=2, padding=1, dilation=3),
                      args={"kernel_size": 3, "stride": 2, "padding": 1, "dilation": 3},
                      desc="max_pool3d (16,32,128,128,128) k3 s2 p1 d3"),
        "L1-77": dict(op="conv_transpose3d", shape=(16, 32, 16, 32, 32), seed=77,
                      make=lambda: nn.ConvTranspose3d(32, 64, 3, stride=2, padding=1, dilation=2, bias=False),
                      args={"stride": 2, "padding": 1, "dilation": 2},
                      desc="conv_transpose3d (16,32,16,32,32) 32->64 k3 s2 p1 d2"),
        "L1-60": dict(op="conv3d", shape=(16, 3, 64, 64, 64), seed=60,
                      make=lambda: nn.Conv3d(3, 64, (3, 5, 7), bias=False), args={},
                      desc="conv3d (16,3,64,64,64) 3->64 k(3,5,7)"),
        "L1-66": dict(op="conv3d", shape=(8, 3, 16, 128, 128), seed=66,
                      make=lambda: nn.Conv3d(3, 64, (3, 5, 7), bias=False), args={},
                      desc="conv3d (8,3,16,128,128) 3->64 k(3,5,7)"),
        "L2-23": dict(op="conv3d_group_norm_mean", shape=(128, 3, 24, 32, 32), seed=23,
                      make=ConvGnMean, args={"num_groups": 8, "eps": 1e-5},
                      desc="conv3d 3->24 k3 + GroupNorm(8,24) + mean (128,3,24,32,32)"),
        # KernelBench level 1 problem 46 (its file's shape: 2^31 input elements; 8 GB of .npy in
        # BENCH_DIR, and on the GPU 8 GB of input beside 16 GB for its float64 reference)
        "L1-46": dict(op="avg_pool3d", shape=(16, 32, 128, 128, 256), seed=46,
                      make=lambda: nn.AvgPool3d(kernel_size=3, stride=2, padding=1),
                      args={"kernel_size": 3, "stride": 2, "padding": 1},
                      desc="avg_pool3d (16,32,128,128,256) k3 s2 p1"),
        "X-avg-k3s2": dict(op="avg_pool3d", shape=(16, 32, 64, 64, 64), seed=107,
                           make=lambda: nn.AvgPool3d(kernel_size=3, stride=2, padding=1),
                           args={"kernel_size": 3, "stride": 2, "padding": 1},
                           desc="avg_pool3d (16,32,64,64,64) k3 s2 p1"),
        # avg_pool3d's other kernels: k 3 s 1 p 1 (a smoothing that keeps the size) on the point
        # kernel, k 2 s 2 (the common downsampling) on the tiled kernel's 2 x 2 x 2 instance
        "X-avg-k3s1": dict(op="avg_pool3d", shape=(16, 32, 64, 64, 64), seed=108,
                           make=lambda: nn.AvgPool3d(kernel_size=3, stride=1, padding=1),
                           args={"kernel_size": 3, "stride": 1, "padding": 1},
                           desc="avg_pool3d (16,32,64,64,64) k3 s1 p1"),
        "X-avg-k2s2": dict(op="avg_pool3d", shape=(16, 32, 128, 128, 128), seed=109,
                           make=lambda: nn.AvgPool3d(kernel_size=2), args={"kernel_size": 2},
                           desc="avg_pool3d (16,32,128,128,128) k2 s2"),
        "X-pool-k3s1": dict(op="max_pool3d", shape=(16, 32, 64, 128, 128), seed=101,
                            make=lambda: nn.MaxPool3d(kernel_size=3, stride=1, padding=1),
                            args={"kernel_size": 3, "stride": 1, "padding": 1},
                            desc="max_pool3d (16,32,64,128,128) k3 s1 p1"),
        "X-pool-k2s2": dict(op="max_pool3d", shape=(16, 32, 128, 128, 128), seed=102,
                            make=lambda: nn.MaxPool3d(kernel_size=2, stride=2),
                            args={"kernel_size": 2, "stride": 2}, desc="max_pool3d (16,32,128,128,128) k2 s2"),
        "X-conv-c32": dict(op="conv3d", shape=(4, 32, 32, 64, 64), seed=103,
                           make=lambda: nn.Conv3d(32, 32, 3, padding=1), args={"padding": 1},
                           desc="conv3d (4,32,32,64,64) 32->32 k3 p1, bias"),
        "X-conv-s2": dict(op="conv3d", shape=(8, 16, 32, 64, 64), seed=104,
                          make=lambda: nn.Conv3d(16, 32, 3, stride=2, padding=1, bias=False),
                          args={"stride": 2, "padding": 1}, desc="conv3d (8,16,32,64,64) 16->32 k3 s2 p1"),
        "X-convT-k2s2": dict(op="conv_transpose3d", shape=(8, 32, 16, 32, 32), seed=105,
                             make=lambda: nn.ConvTranspose3d(32, 16, 2, stride=2), args={"stride": 2},
                             desc="conv_transpose3d (8,32,16,32,32) 32->16 k2 s2, bias"),
        "X-convT-k3s2": dict(op="conv_transpose3d", shape=(8, 32, 16, 32, 32), seed=106,
                             make=lambda: nn.ConvTranspose3d(32, 16, 3, stride=2, padding=1, output_padding=1),
                             args={"stride": 2, "padding": 1, "output_padding": 1},
                             desc="conv_transpose3d (8,32,16,32,32) 32->16 k3 s2 p1 op1, bias"),
        "L1-54": dict(op="conv3d", shape=(16, 3, 64, 64, 64), seed=154,
                      make=lambda: nn.Conv3d(3, 64, 3, bias=False), args={},
                      desc="conv3d (16,3,64,64,64) 3->64 k3"),
        "L1-59": dict(op="conv3d", shape=(16, 3, 256, 256, 10), seed=159,
                      make=lambda: nn.Conv3d(3, 64, (3, 3, 1), bias=False), args={},
                      desc="conv3d (16,3,256,256,10) 3->64 k(3,3,1)"),
        "L1-58": dict(op="conv_transpose3d", shape=(16, 32, 16, 32, 64), seed=158,
                      make=lambda: nn.ConvTranspose3d(32, 16, (3, 5, 7), bias=False), args={},
                      desc="conv_transpose3d (16,32,16,32,64) 32->16 k(3,5,7)"),
        "L1-61": dict(op="conv_transpose3d", shape=(8, 48, 64, 64, 64), seed=161,
                      make=lambda: nn.ConvTranspose3d(48, 48, 3, bias=False), args={},
                      desc="conv_transpose3d (8,48,64,64,64) 48->48 k3"),
        "L1-68": dict(op="conv_transpose3d", shape=(16, 32, 64, 64, 64), seed=168,
                      make=lambda: nn.ConvTranspose3d(32, 64, (3, 5, 5), bias=False), args={},
                      desc="conv_transpose3d (16,32,64,64,64) 32->64 k(3,5,5)"),
        "L1-70": dict(op="conv_transpose3d", shape=(8, 48, 96, 96, 96), seed=170,
                      make=lambda: nn.ConvTranspose3d(48, 24, 3, bias=False), args={},
                      desc="conv_transpose3d (8,48,96,96,96) 48->24 k3"),
        "L1-72": dict(op="conv_transpose3d", shape=(8, 32, 12, 24, 48), seed=172,
                      make=lambda: nn.ConvTranspose3d(32, 32, (3, 5, 7), stride=2, padding=(1, 2, 3),
                                                      output_padding=1, groups=4, bias=False),
                      args={"stride": 2, "padding": [1, 2, 3], "output_padding": 1, "groups": 4},
                      desc="conv_transpose3d (8,32,12,24,48) 32->32 k(3,5,7) s2 p(1,2,3) op1 groups 4"),
        # KernelBench's L1-73 file passes groups=4 where its model takes output_padding, and builds the
        # layer without either: what it runs is groups 1. X-convT-g4 is the grouped layer it names.
        "L1-73": dict(op="conv_transpose3d", shape=(4, 32, 32, 64, 128), seed=173,
                      make=lambda: nn.ConvTranspose3d(32, 32, 3, stride=2, padding=1, bias=False),
                      args={"stride": 2, "padding": 1}, desc="conv_transpose3d (4,32,32,64,128) 32->32 k3 s2 p1"),
        "X-conv-g4": dict(op="conv3d", shape=(8, 32, 32, 64, 64), seed=175,
                          make=lambda: nn.Conv3d(32, 64, 3, padding=1, groups=4, bias=False),
                          args={"padding": 1, "groups": 4}, desc="conv3d (8,32,32,64,64) 32->64 k3 p1 groups 4"),
        "X-conv-dw": dict(op="conv3d", shape=(8, 64, 32, 64, 64), seed=176,
                          make=lambda: nn.Conv3d(64, 64, 3, padding=1, groups=64),
                          args={"padding": 1, "groups": 64}, desc="conv3d (8,64,32,64,64) depthwise k3 p1, bias"),
        "L2-61": dict(op="convT_relu_gn", shape=(16, 64, 32, 32, 32), seed=261, make=ConvTReluGn, args={},
                      desc="conv_transpose3d 64->128 k3, relu, GroupNorm(8, 128) (16,64,32,32,32)"),
        "L2-20": dict(op="convT_residual", shape=(16, 32, 16, 32, 32), seed=220, make=ConvTResidual, args={},
                      desc="conv_transpose3d 32->64 k3 s2 p1 op1, + bias[c], + y, * y, + y (16,32,16,32,32)"),
        "L2-78": dict(op="convT_pool_pool_sum", shape=(16, 32, 32, 32, 32), seed=278, make=ConvTPoolPoolSum,
                      args={}, desc="conv_transpose3d 32->64 k5 s2 p2, max_pool3d 2, 3, sum over C (16,32,32,32,32)"),
        "L2-8": dict(op="conv_div_pool_mean_sum", shape=(128, 8, 16, 64, 64), seed=208, make=ConvDivPoolMeanSum,
                     args={}, desc="conv3d 8->16 k3, / 2, max_pool3d 2, mean over DHW, + bias[c], sum over C "
                                   "(128,8,16,64,64)"),
        "X-convT-g4": dict(op="conv_transpose3d", shape=(4, 32, 32, 64, 128), seed=174,
                           make=lambda: nn.ConvTranspose3d(32, 32, 3, stride=2, padding=1, groups=4, bias=False),
                           args={"stride": 2, "padding": 1, "groups": 4},
                           desc="conv_transpose3d (4,32,32,64,128) 32->32 k3 s2 p1 groups 4"),
    }
    for i, (name, (shape, make, desc)) in enumerate(more.items()):
        table[name] = dict(op="kb2_" + name[3:], shape=shape, seed=300 + int(name[3:]), make=make, args={},
                           desc=desc + " " + str(shape).replace(" ", ""), extra=extra_inputs.get(name, {}),
                           train=name in train_mode)
    return table


def lua_value(v):
    if v is None:
        return "nil"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, dict):
        return "{" + ", ".join(f"[{json.dumps(k)}] = {lua_value(x)}" for k, x in v.items()) + "}"
    if isinstance(v, (list, tuple)):
        return "{" + ", ".join(lua_value(x) for x in v) + "}"
    raise TypeError(type(v))


def time_cuda(fn, warmup, reps, flush):
    import torch
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        flush.zero_()
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times), times


def rel_err(out, ref):
    """max |out - ref| / max |ref|, and the worst |out - ref| / (atol + rtol |ref|) per math mode."""
    import torch
    d = (out.double() - ref).abs()
    scale = ref.abs().max().item()
    res = {"max_rel_err": (d.max().item() / scale) if scale > 0 else d.max().item()}
    for m, (rtol, atol) in TOL.items():
        res["tol_ratio_" + m] = (d / (atol + rtol * ref.abs())).max().item()
    return res


def cmd_torch(a):
    import torch

    os.makedirs(a.dir, exist_ok=True)
    dev = torch.device("cuda")
    flush = torch.empty(256 * 1024 * 1024, dtype=torch.uint8, device=dev)
    probs = problems()
    names = [n for n in ORDER + EXTRA if not a.problems or n in a.problems.split(",")]
    results = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
               "cudnn": torch.backends.cudnn.version(), "reps": a.reps, "warmup": a.warmup, "problems": {}}
    manifest = []
    for name in names:
        try:
            entry = torch_problem(a, name, probs[name], dev, flush, results)
        except Exception as ex:  # one problem failing (memory, a file) must not lose the others
            print(f"{name:6s} FAILED: {ex!r}"[:400], flush=True)
            results["problems"][name] = {"desc": probs[name]["desc"], "op": probs[name]["op"], "error": repr(ex)[:400]}
            torch.cuda.empty_cache()
            continue
        manifest.append(entry)
    with open(os.path.join(a.dir, "torch.json"), "w") as f:
        json.dump(results, f, indent=1)
    with open(os.path.join(a.dir, "problems.lua"), "w") as f:
        f.write("-- written by bench/bench.py: the problems scripts/bench.lua times\nreturn {\n")
        for m in manifest:
            f.write("  " + lua_value(m) + ",\n")
        f.write("}\n")


def torch_problem(a, name, p, dev, flush, results):
    """Inputs, reference and PyTorch timings of one problem; returns its problems.lua entry."""
    import numpy as np
    import torch
    import torch.nn as nn
    t0 = time.time()
    torch.manual_seed(p["seed"])
    model = p["make"]()
    model = model.train() if p.get("train") else model.eval()
    gen = torch.Generator().manual_seed(p["seed"] + 1000)
    x_cpu = torch.rand(p["shape"], generator=gen, dtype=torch.float32)
    pdir = os.path.join(a.dir, name)
    os.makedirs(pdir, exist_ok=True)
    files = {"x": "x.npy"}
    np.save(os.path.join(pdir, "x.npy"), x_cpu.numpy())
    extras = []  # more inputs of the forward, uniform [0, 1) as the file's get_inputs
    for k, shape in p.get("extra", {}).items():
        e = torch.rand(shape, generator=gen, dtype=torch.float32)
        np.save(os.path.join(pdir, k + ".npy"), e.numpy())
        files[k] = k + ".npy"
        extras.append(e.to(dev))
    for k, v in model.state_dict().items():
        np.save(os.path.join(pdir, k + ".npy"), v.detach().cpu().numpy())
        files[k] = k + ".npy"
    x = x_cpu.to(dev)
    model = model.to(dev)
    r = {"desc": p["desc"], "op": p["op"]}
    with torch.no_grad():
        # the float64 reference
        # (in training mode BatchNorm updates its running statistics at every call: volua's side
        # starts from the initial ones saved above, and its output does not depend on them)
        ref = model.double()(x.double(), *[e.double() for e in extras])
        model = model.float()
        if p["op"] == "max_pool3d":  # exact in float32: keep the file small
            np.save(os.path.join(pdir, "ref.npy"), ref.float().cpu().numpy())
        elif ref.numel() > 64 * 2 ** 20:  # (L2-20's 268 M values: rounding to float32 moves them by 6e-8 at most)
            np.save(os.path.join(pdir, "ref.npy"), ref.float().cpu().numpy())
        else:
            np.save(os.path.join(pdir, "ref.npy"), ref.cpu().numpy())
        files["ref"] = "ref.npy"

        def run_cfg(label, tf32, bench, cl, compiled=False):
            torch.backends.cudnn.allow_tf32 = tf32
            torch.backends.cuda.matmul.allow_tf32 = False  # PyTorch's default
            torch.backends.cudnn.benchmark = bench
            m, xi = model, x
            if cl:  # (the convolutions' weights only: level 2's (C, 1, 1, 1) biases have no such format)
                for mod in model.modules():
                    if isinstance(mod, (nn.Conv3d, nn.ConvTranspose3d)):
                        mod.to(memory_format=torch.channels_last_3d)
                xi = x.contiguous(memory_format=torch.channels_last_3d)
            if compiled:
                m = torch.compile(m)
            try:
                fn = lambda: m(xi, *extras)
                med, times = time_cuda(fn, a.warmup, a.reps, flush)
                out = fn()
                torch.cuda.synchronize()
                e = rel_err(out.contiguous(), ref)
                r[label] = {"ms": med, "min_ms": min(times), "max_ms": max(times), **e}
                print(f"{name:6s} {label:22s} {med:9.4f} ms  max rel err {e['max_rel_err']:.2e}", flush=True)
            except Exception as ex:  # one configuration failing must not lose the others
                r[label] = {"error": repr(ex)[:300]}
                print(f"{name:6s} {label:22s} failed: {ex!r}"[:300], flush=True)
            finally:
                for mod in model.modules():
                    if isinstance(mod, (nn.Conv3d, nn.ConvTranspose3d)):
                        mod.to(memory_format=torch.contiguous_format)

        run_cfg("eager", True, False, False)
        run_cfg("eager_tf32_off", False, False, False)
        run_cfg("cl_benchmark", True, True, True)
        run_cfg("cl_benchmark_tf32_off", False, True, True)
        if not a.no_compile:
            run_cfg("compile", True, False, False, compiled=True)
        torch.backends.cudnn.allow_tf32 = True
        torch.backends.cudnn.benchmark = False
    del ref, x
    torch.cuda.empty_cache()
    results["problems"][name] = r
    print(f"{name:6s} done in {time.time() - t0:.1f} s", flush=True)
    return {"name": name, "op": p["op"], "args": p["args"], "files": files,
            "floor_fp32": FLOORS.get(name, {}).get("fp32"), "floor_tf32": FLOORS.get(name, {}).get("tf32")}


def fmt(v, nd=3):
    if v is None:
        return "-"
    if isinstance(v, str):
        return v
    if v == 0:
        return "0"
    if abs(v) < 1e-3 or abs(v) >= 1e5:
        return f"{v:.1e}"
    return f"{v:.{nd}f}"


def err_cell(r, mode):
    """A row's max rel err in a math mode, marked ok or FAIL by allclose at the mode's tolerance."""
    ok = r[mode + "_allclose"]
    return fmt(r[mode + "_max_rel_err"]) + ("" if ok is None else (" ok" if ok else " FAIL"))


def cmd_report(a):
    with open(os.path.join(a.dir, "torch.json")) as f:
        tj = json.load(f)
    vpath = os.path.join(a.dir, "volua.json")
    vj = {"problems": {}}
    if os.path.exists(vpath):
        with open(vpath) as f:
            vj = json.load(f)
    rows = []
    for name in ORDER + EXTRA:
        t = tj["problems"].get(name)
        if t is None:
            continue
        v = vj["problems"].get(name, {})
        ms = lambda k: t.get(k, {}).get("ms")
        eager, comp = ms("eager"), ms("compile")
        best_on = min([x for x in (ms("eager"), ms("compile"), ms("cl_benchmark")) if x is not None], default=None)
        best_off = min([x for x in (ms("eager_tf32_off"), ms("cl_benchmark_tf32_off")) if x is not None], default=None)
        vf, vt = v.get("fp32", {}), v.get("tf32", {})
        f_ms, t_ms = vf.get("ms"), vt.get("ms")
        ratio = lambda num, den: (num / den) if (num is not None and den) else None
        fl_f, fl_t = FLOORS.get(name, {}).get("fp32"), FLOORS.get(name, {}).get("tf32")
        rows.append({
            "problem": name, "desc": t["desc"],
            "eager_ms": eager, "compile_ms": comp, "best_tf32_on_ms": best_on, "best_tf32_off_ms": best_off,
            "volua_fp32_ms": f_ms, "volua_tf32_ms": t_ms,
            "fp32_speedup_vs_eager": ratio(eager, f_ms), "tf32_speedup_vs_eager": ratio(eager, t_ms),
            "fp32_speedup_vs_best_off": ratio(best_off, f_ms), "tf32_speedup_vs_best_on": ratio(best_on, t_ms),
            "fp32_max_rel_err": vf.get("max_rel_err"), "tf32_max_rel_err": vt.get("max_rel_err"),
            "fp32_allclose": vf.get("allclose"), "tf32_allclose": vt.get("allclose"),
            "fp32_fast_path": vf.get("fast_path"), "tf32_fast_path": vt.get("fast_path"),
            "floor_fp32_ms": fl_f, "floor_tf32_ms": fl_t,
            "fp32_pct_of_floor": ratio(100 * fl_f, f_ms) if fl_f else None,
            "tf32_pct_of_floor": ratio(100 * fl_t, t_ms) if fl_t else None,
            "torch_eager_max_rel_err": t.get("eager", {}).get("max_rel_err"),
        })

    def geomean(xs):
        xs = [x for x in xs if x]
        if not xs:
            return None
        prod = 1.0
        for x in xs:
            prod *= x
        return prod ** (1.0 / len(xs))

    extra_rows = [r for r in rows if r["problem"] in EXTRA]
    main_rows = [r for r in rows if r["problem"] in ORDER]
    gm = {k: geomean([r[k] for r in main_rows]) for k in
          ("fp32_speedup_vs_eager", "tf32_speedup_vs_eager", "fp32_speedup_vs_best_off", "tf32_speedup_vs_best_on")}
    date = datetime.date.today().isoformat()
    lines = []
    lines.append(f"# volua vs PyTorch, {date}")
    lines.append("")
    lines.append(f"Device: {tj.get('device')}; PyTorch {tj.get('torch')}, cuDNN {tj.get('cudnn')}; "
                 f"{vj.get('device', '?')}. Median of {tj.get('reps')} calls after {tj.get('warmup')} warm-up calls, "
                 "CUDA events, a 256 MB write (L2 flush) before each call. Inputs uniform [0, 1), seeded; max rel err "
                 "= max|out - ref| / max|ref| against torch in float64 on the GPU; ok = allclose at the math mode's "
                 "tolerance (fp32 rtol 1e-4 atol 1e-5, tf32 1e-2/1e-2). Speedups: over eager at its defaults "
                 "(TF32 on for convolutions), and like with like: volua fp32 over the best PyTorch with TF32 off, "
                 "volua tf32 over the best with TF32 on (eager, torch.compile, cudnn.benchmark + channels_last_3d). "
                 "% of floor = floor / time.")
    lines.append("")
    hdr = ["problem", "eager ms", "compile ms", "best TF32-on ms", "best TF32-off ms", "volua fp32 ms",
           "volua tf32 ms", "fp32 x eager", "tf32 x eager", "fp32 x best-off", "tf32 x best-on",
           "fp32 max rel err", "tf32 max rel err", "floor fp32/tf32 ms", "% of floor fp32/tf32"]
    lines.append("| " + " | ".join(hdr) + " |")
    lines.append("|" + "---|" * len(hdr))
    for r in main_rows:
        cells = [r["problem"], fmt(r["eager_ms"]), fmt(r["compile_ms"]), fmt(r["best_tf32_on_ms"]),
                 fmt(r["best_tf32_off_ms"]), fmt(r["volua_fp32_ms"]), fmt(r["volua_tf32_ms"]),
                 fmt(r["fp32_speedup_vs_eager"], 2), fmt(r["tf32_speedup_vs_eager"], 2),
                 fmt(r["fp32_speedup_vs_best_off"], 2), fmt(r["tf32_speedup_vs_best_on"], 2),
                 err_cell(r, "fp32"), err_cell(r, "tf32"),
                 f"{fmt(r['floor_fp32_ms'])} / {fmt(r['floor_tf32_ms'])}",
                 f"{fmt(r['fp32_pct_of_floor'], 0)} / {fmt(r['tf32_pct_of_floor'], 0)}"]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("Geometric means of the speedups: fp32 x eager {}, tf32 x eager {}, fp32 x best-off {}, "
                 "tf32 x best-on {}.".format(*(fmt(gm[k], 2) for k in gm)))
    if extra_rows:
        lines.append("")
        lines.append("Other 3D shapes (not issue 4's five; no floors, not in the geometric means; issue 4 asks that "
                     "none be slower than PyTorch):")
        lines.append("")
        xh = ["problem", "what", "eager ms", "best TF32-on ms", "best TF32-off ms", "volua fp32 ms", "volua tf32 ms",
              "fp32 x eager", "tf32 x eager", "fp32 x best-off", "tf32 x best-on", "fp32 max rel err",
              "tf32 max rel err"]
        lines.append("| " + " | ".join(xh) + " |")
        lines.append("|" + "---|" * len(xh))
        for r in extra_rows:
            cells = [r["problem"], r["desc"], fmt(r["eager_ms"]), fmt(r["best_tf32_on_ms"]), fmt(r["best_tf32_off_ms"]),
                     fmt(r["volua_fp32_ms"]), fmt(r["volua_tf32_ms"]), fmt(r["fp32_speedup_vs_eager"], 2),
                     fmt(r["tf32_speedup_vs_eager"], 2), fmt(r["fp32_speedup_vs_best_off"], 2),
                     fmt(r["tf32_speedup_vs_best_on"], 2), err_cell(r, "fp32"), err_cell(r, "tf32")]
            lines.append("| " + " | ".join(cells) + " |")
    fast = [f"{r['problem']} fp32 {r['fp32_fast_path']}, tf32 {r['tf32_fast_path']}" for r in rows]
    lines.append("")
    lines.append("Tensor-core fast path taken: " + "; ".join(fast) + ".")
    lines.append("")
    lines.append("PyTorch configurations (ms): " + "; ".join(
        f"{name}: " + ", ".join(f"{k} {fmt(v.get('ms'))}" for k, v in tj["problems"][name].items()
                                if isinstance(v, dict))
        for name in ORDER + EXTRA if name in tj["problems"]) + ".")
    # variant passes of bench/run.sh (VARIANTS): volua ms per problem and math mode
    variants = []
    i = 1
    while os.path.exists(os.path.join(a.dir, f"variant-{i}.json")):
        with open(os.path.join(a.dir, f"variant-{i}.json")) as f:
            vv = json.load(f)
        label = f"variant {i}"
        if os.path.exists(os.path.join(a.dir, f"variant-{i}.name")):
            with open(os.path.join(a.dir, f"variant-{i}.name")) as f:
                label = f.read().strip()
        variants.append({"label": label, "problems": vv.get("problems", {})})
        i += 1
    if variants:
        lines.append("")
        lines.append("volua variants (ms fp32 / tf32; default = the main table's):")
        lines.append("")
        lines.append("| problem | default | " + " | ".join(v["label"] for v in variants) + " |")
        lines.append("|" + "---|" * (2 + len(variants)))
        for name in ORDER + EXTRA:
            cells = []
            for v in [{"problems": vj["problems"]}] + variants:
                pr = v["problems"].get(name)
                if not pr:
                    cells.append("-")
                    continue
                cell = f"{fmt(pr.get('fp32', {}).get('ms'))} / {fmt(pr.get('tf32', {}).get('ms'))}"
                if pr.get("fp32", {}).get("allclose") is False or pr.get("tf32", {}).get("allclose") is False:
                    cell += " (NOT CLOSE)"
                cells.append(cell)
            if any(c != "-" for c in cells[1:]):
                lines.append(f"| {name} | " + " | ".join(cells) + " |")
    text = "\n".join(lines) + "\n"
    print(text)
    os.makedirs(a.out, exist_ok=True)
    base = os.path.join(a.out, f"results-{date}")
    with open(base + ".md", "w") as f:
        f.write(text)
    with open(base + ".json", "w") as f:
        json.dump({"rows": rows, "geomean": gm, "torch": tj, "volua": vj, "variants": variants}, f, indent=1)
    with open(base + ".csv", "w") as f:
        keys = list(rows[0].keys()) if rows else []
        f.write(",".join(keys) + "\n")
        for r in rows:
            f.write(",".join("" if r[k] is None else str(r[k]) for k in keys) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("torch")
    t.add_argument("--dir", required=True)
    t.add_argument("--reps", type=int, default=30)
    t.add_argument("--warmup", type=int, default=5)
    t.add_argument("--problems", default="")
    t.add_argument("--no-compile", action="store_true")
    r = sub.add_parser("report")
    r.add_argument("--dir", required=True)
    r.add_argument("--out", required=True)
    a = ap.parse_args()
    if a.cmd == "torch":
        if a.reps < 30:
            sys.exit("bench.py: --reps must be at least 30 (issue 4's method)")
        cmd_torch(a)
    else:
        cmd_report(a)


if __name__ == "__main__":
    main()
