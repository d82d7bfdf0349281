#!/bin/sh
# scripts/pool_emulate.sh [trials [seed]] (default 20000, about a minute): runs the kernels of kernels/avg_pool3d.cu and
# kernels/adaptive_pool3d.cu on the CPU, every thread of every block in turn (g++ and the CUDA
# headers, no GPU), against the CPU references (src/cpu/avg_pool3d.c, adaptive_pool3d.c) on random
# geometries, bit for bit; each vector load is checked for bounds and alignment, and the outputs
# are poisoned with NaN and guarded past their end. A second run forces the 64-bit index paths
# (taken on the GPU from 2^30 threads). It checks the index arithmetic and the launchers' choices;
# not nvcc's code, nor the GPU's speed. The point and tiled kernels have no shared memory nor
# barriers: their threads do not interact, so one at a time is a faithful schedule. The ring
# kernel's do (shared memory, cp.async, __syncthreads): its cases (trials / 50, at least 20, run
# first) run each block's threads as fibers between its barriers, under four schedules (each
# copy landing at its issue or at its wait; threads ascending or descending), with the shared
# memory poisoned and guarded (scripts/pool_emulate.cpp says what each schedule would catch).
set -e
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
CUDA_INC=${CUDA_INC:-/usr/local/cuda/include}
# <<<grid, block, 0, s>>>(args) -> emu_launch(kernel, grid, block, args)
for f in avg_pool3d adaptive_pool3d; do
  sed -E 's/([A-Za-z_][A-Za-z0-9_]*(<[^<>]*>)?)<<<([^,]+), ([^,]+), 0, s>>>\(/emu_launch(\1, \3, \4, /;
          s/([A-Za-z_][A-Za-z0-9_]*(<[^<>]*>)?)<<<([^,]+), ([^,]+), ([^,>]+), s>>>\(/emu_launch_smem(\1, \3, \4, \5, /;
          s/extern __shared__ __align__\(16\) float ([A-Za-z_]+)\[\];/float *\1 = emu_shared;/;
          s/\bNULL\b/nullptr/g' kernels/$f.cu >"$tmp/$f.cpp"
  sed -E 's/\(\(int64_t\)1 << 30\)/((int64_t)1 << 7)/g' "$tmp/$f.cpp" >"$tmp/${f}_64.cpp"
done
for c in src/cpu/avg_pool3d.c src/cpu/adaptive_pool3d.c src/ops/pool3d.c src/ops/checks.c; do
  gcc -std=gnu11 -O2 -fopenmp -Isrc -c "$c" -o "$tmp/$(basename "$c" .c).o"
done
for v in "" _64; do
  g++ -std=c++17 -O2 -fopenmp -w -DVOLUA_POOL_EMU -Isrc -Ikernels -I"$CUDA_INC" -I"$tmp" -DEMU_SUFFIX="$v" \
    -DEMU_AVG="\"avg_pool3d$v.cpp\"" -DEMU_ADAPTIVE="\"adaptive_pool3d$v.cpp\"" \
    scripts/pool_emulate.cpp "$tmp"/*.o -o "$tmp/emulate$v"
  if [ -z "$v" ]; then echo "== int index paths"; else echo "== int64_t index paths (from 2^7 threads here)"; fi
  "$tmp/emulate$v" "$@"
done
