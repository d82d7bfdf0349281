"""bench/ops.py: elementwise ops, reductions and means, PyTorch and volua in one command (device machine).

Times fill(0), fill(1.5), a + b, a * 1.5, relu(a), -a, a * w (w of shape (1, 32, 1, 1, 1)) and a + v
(v of shape (1, 1, 32, 128, 128)), sum, max, mean of everything, over (D, H, W) and over C, on a
(8, 32, 32, 128, 128) float32 volume (537 MB): PyTorch with CUDA events, a 256 MB write (L2 flush) before each call, median of 30 after 3
warm-up calls; then volua's bench/ops.lua the same way (vol.bench). Prints per op both
times, their ratio, and each side's bytes moved over time (the floor is bytes over the copy
bandwidth, about 4.2 TB/s on an H200).
Run: python3 bench/ops.py [path to volua, default build/bin/volua]
"""
import subprocess
import sys

import bench  # bench/bench.py (this directory): its time_cuda

import torch

OPS = ["fill(0)", "fill(1.5)", "a+b", "a*1.5", "relu(a)", "-a", "a*w[c]", "a+v[dhw]", "sum", "max", "mean",
       "mean[dhw]", "mean[c]"]
# bytes moved per output element (the broadcast operand is small beside the volume: not counted)
BYTES_PER_ELEM = {"fill(0)": 4, "fill(1.5)": 4, "a+b": 12, "a*1.5": 8, "relu(a)": 8, "-a": 8, "a*w[c]": 8, "a+v[dhw]": 8,
                  "sum": 4, "max": 4, "mean": 4, "mean[dhw]": 4, "mean[c]": 4}


def time_cuda(fn, flush):
    """bench.py's timing (CUDA events, the flush before each call): the median of 30 after 3 warm-ups."""
    return bench.time_cuda(fn, 3, 30, flush)[0]


def main():
    volua = sys.argv[1] if len(sys.argv) > 1 else "build/bin/volua"
    dev = torch.device("cuda")
    shape = (8, 32, 32, 128, 128)
    gen = torch.Generator(device=dev).manual_seed(1)
    a = torch.rand(shape, device=dev, generator=gen)
    b = torch.rand(shape, device=dev, generator=gen)
    y = torch.empty(shape, device=dev)
    w = torch.rand((1, 32, 1, 1, 1), device=dev, generator=gen)
    v = torch.rand((1, 1, 32, 128, 128), device=dev, generator=gen)
    flush = torch.empty(256 * 1024 * 1024, dtype=torch.uint8, device=dev)
    fns = {"fill(0)": lambda: y.fill_(0), "fill(1.5)": lambda: y.fill_(1.5), "a+b": lambda: a + b,
           "a*1.5": lambda: a * 1.5, "relu(a)": lambda: torch.relu(a), "-a": lambda: -a,
           "a*w[c]": lambda: a * w, "a+v[dhw]": lambda: a + v,
           # (sum and max return numbers in volua: .item() here too)
           "sum": lambda: a.sum().item(), "max": lambda: a.max().item(), "mean": lambda: a.mean(),
           "mean[dhw]": lambda: a.mean(dim=(2, 3, 4)), "mean[c]": lambda: a.mean(dim=1)}
    torch_ms = {name: time_cuda(fns[name], flush) for name in OPS}
    del a, b, y, w, v, flush
    torch.cuda.empty_cache()
    out = subprocess.run([volua, "bench/ops.lua"], capture_output=True, text=True, check=True).stdout
    volua_ms = {line.split()[0]: float(line.split()[1]) for line in out.splitlines() if line.strip()}
    n = 1
    for s in shape:
        n *= s
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, shape {shape} float32")
    print("| op | PyTorch ms | volua ms | volua x PyTorch | PyTorch TB/s | volua TB/s |")
    print("|---|---|---|---|---|---|")
    for name in OPS:
        t, v = torch_ms[name], volua_ms[name]
        gb = n * BYTES_PER_ELEM[name] / 1e12
        print(f"| {name} | {t:.4f} | {v:.4f} | {t / v:.2f} | {gb / (t / 1e3):.2f} | {gb / (v / 1e3):.2f} |")


if __name__ == "__main__":
    main()
