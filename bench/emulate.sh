#!/bin/sh
# bench/emulate.sh [random cases per mode [seed]] | plans | accuracy [N [side]]: builds bench/tc_emulate.cpp with
# g++ (no CUDA needed) and runs the tensor-core fast paths on the CPU against float64 references
# (about 4 minutes); `accuracy`: math "fp32" on KernelBench's L2-61 at (N, 64, side^3) through GroupNorm.
# VOLUA_EMU_SMS=n emulates n SMs (default 2).
set -e
cd "$(dirname "$0")/.."
out=${TMPDIR:-/tmp}/volua_tc_emulate
g++ -std=c++20 -O2 -pthread -Wall -Wextra -Wno-unused-parameter -Wno-unused-function -Wno-unknown-pragmas -Isrc -Ikernels \
  bench/tc_emulate.cpp -o "$out"
"$out" "$@"
