#!/usr/bin/env bash
# bench/avg_ring.sh: the first GPU run of avg_pool3d's ring kernel (kernels/avg_pool3d.cu, off
# unless VOLUA_AVG_RING=1), in one device command from the repository root, with build/bin,
# .busted-bundle and .golden carried (README, "The GPU"): avg_pool_spec and gpu_spec on the GPU with
# the ring kernel on, poisoned; its spec case under compute-sanitizer memcheck, racecheck and
# synccheck; its > 2^31-element case; then bench/run.sh on L1-46 and X-avg-k3s2 beside PyTorch,
# the point kernel (the default) in the main table and the ring kernel, with and without its
# carried slice, as variants. Logs and the results under $OUT. About 6 minutes on an H100.
# It ran as s40r1 (bench/NOTES.md, fortieth session); the ring kernel is the default since, so the
# main table and the first variant are now the same kernel (VOLUA_AVG_RING=0 is the point kernel).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/avg_ring_out}
mkdir -p "$OUT"
export PATH=$PATH:/usr/local/cuda/bin PYTHONUNBUFFERED=1
. .busted-bundle/env.sh
B=$PWD/.busted-bundle/usr/bin/busted
export BUSTED=$B
[ -d .golden ] && export VOLUA_GOLDEN=$PWD/.golden
status=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.total --format=csv,noheader
echo "build/bin/volua sha256 $(sha256sum build/bin/volua | cut -c1-16)"
t0=$(date +%s)
echo "== avg_pool_spec and gpu_spec on the GPU, VOLUA_AVG_RING=1, poisoned"
VOLUA_AVG_RING=1 VOLUA_TEST_DEVICE=cuda VOLUA_POISON=1 bash spec/run.sh spec/avg_pool_spec.lua spec/gpu_spec.lua \
  >"$OUT/specs.log" 2>&1 || status=1
grep -v '^ok ' "$OUT/specs.log" | tail -n 25
for tool in memcheck racecheck synccheck; do
  echo "== compute-sanitizer $tool on the ring kernel's spec case"
  VOLUA_AVG_RING=1 VOLUA_TEST_DEVICE=cuda compute-sanitizer --tool $tool --print-limit 5 --error-exitcode 9 \
    build/bin/volua "$B" -o TAP --filter "k 3 s 2 shapes" spec/avg_pool_spec.lua >"$OUT/$tool.log" 2>&1 || status=1
  grep -v '^ok ' "$OUT/$tool.log" | tail -n 6
done
echo "== the > 2^31-element ring case (elapsed $(( $(date +%s) - t0 )) s)"
VOLUA_AVG_RING=1 VOLUA_TEST_LARGE=1 VOLUA_TEST_DEVICE=cuda bash spec/run.sh --filter "k 3 s 2 p 1" \
  spec/avg_pool_spec.lua 2>&1 | grep -v '^ok ' | tail -n 6
[ "${PIPESTATUS[0]}" = 0 ] || status=1
echo "== bench/run.sh on L1-46 and X-avg-k3s2 (elapsed $(( $(date +%s) - t0 )) s)"
mkdir -p "$OUT/bench"
OUT=$OUT/bench PROBLEMS=L1-46,X-avg-k3s2 VARIANTS="VOLUA_AVG_RING=1;VOLUA_AVG_RING=1 VOLUA_AVG_CARRY=0" \
  VARIANT_PROBLEMS=L1-46,X-avg-k3s2 bash bench/run.sh >"$OUT/bench.log" 2>&1 || status=1
tail -n 30 "$OUT/bench.log"
echo "== avg_ring.sh: $([ $status = 0 ] && echo passed || echo FAILED) in $(( $(date +%s) - t0 )) s"
exit $status
