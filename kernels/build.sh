#!/bin/sh
# build.sh ROOT OUTDIR NVCC: compiles each kernels/*.cu for Hopper (sm_90a code, for wgmma, + compute_90 PTX) when it or a
# header is newer than its object, in parallel, and archives them into libvolua_kernels.a.
set -e
ROOT=$1; OUT=$2; NVCC=$3
mkdir -p "$OUT"
FLAGS="-O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -gencode arch=compute_90,code=compute_90 -Xcompiler -fPIC ${VOLUA_NVCC_EXTRA:-}" # (extra: -D switches, for measuring)
newest_header=$(ls -t "$ROOT"/kernels/*.h "$ROOT"/kernels/*.cuh "$ROOT"/src/op_params.h 2>/dev/null | head -n 1)
pids=""
built=0
for cu in "$ROOT"/kernels/*.cu; do
  [ -f "$cu" ] || continue
  obj="$OUT/$(basename "$cu" .cu).o"
  if [ ! -f "$obj" ] || [ "$cu" -nt "$obj" ] || [ "$newest_header" -nt "$obj" ]; then
    echo "nvcc $(basename "$cu")"
    "$NVCC" $FLAGS -I"$ROOT/src" -c "$cu" -o "$obj" &
    pids="$pids $!"
    built=1
  fi
done
status=0
for p in $pids; do wait $p || status=1; done
[ $status = 0 ] || { echo "kernels/build.sh: nvcc failed" >&2; exit 1; }
# Drop objects whose source is gone, then archive; relink the binary when anything changed.
[ $built = 1 ] && rm -f bin/volua
for obj in "$OUT"/*.o; do
  [ -f "$obj" ] || continue
  [ -f "$ROOT/kernels/$(basename "$obj" .o).cu" ] || rm -f "$obj"
done
rm -f "$OUT/libvolua_kernels.a"
if ls "$OUT"/*.o >/dev/null 2>&1; then ar rcs "$OUT/libvolua_kernels.a" "$OUT"/*.o; else ar rcs "$OUT/libvolua_kernels.a"; fi
