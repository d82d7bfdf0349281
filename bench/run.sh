#!/usr/bin/env bash
# bench/run.sh: issue 4's benchmark in one command on the device machine (repo root as cwd, a CUDA
# build of build/bin/volua carried, PyTorch in python3 there). PyTorch side (bench/bench.py torch:
# inputs, float64 references, timings), volua side (scripts/bench.lua), then the table, printed and
# written with the logs to $OUT (/tmp/volua_bench_out when unset): env.txt, torch.log, volua.log,
# results-<date>.md/.csv/.json (the .md is what bench/NOTES.md quotes).
# Environment: REPS (30, at least 30), WARMUP (5), PROBLEMS (e.g. L1-60,L2-23; all by default),
# BENCH_COMPILE=0 (skip torch.compile: it costs tens of seconds per problem), BENCH_DIR (scratch for
# the .npy files, /tmp/volua_bench), VARIANTS (extra volua passes over the convolutions, each an env
# setting or several separated by spaces, ";"-separated; default "VOLUA_TC_BN=32;VOLUA_TC_BN=64": the tensor-core kernel with 32 and
# with 64 output channels per block; VOLUA_FAST=0 times the simple kernels; "" for none), VARIANT_PROBLEMS
# (the problems the variants time, default L1-77,L1-60,L1-66).
# Takes about 3 to 6 minutes with torch.compile.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-${TMPDIR:-/tmp}/volua_bench_out}
DIR=${BENCH_DIR:-/tmp/volua_bench}
REPS=${REPS:-30}
WARMUP=${WARMUP:-5}
mkdir -p "$OUT"
rm -rf "$DIR" && mkdir -p "$DIR" || exit 1
export PYTHONUNBUFFERED=1

{
  # the git hash is the device copy's, which may lag the commit the carried binary was built from:
  # the binary's own hash says which one ran
  echo "== $(date -u '+%Y-%m-%d %H:%M:%S UTC') $(git rev-parse --short HEAD 2>/dev/null || echo '(no git)')," \
    "build/bin/volua sha256 $(sha256sum build/bin/volua 2>/dev/null | cut -c1-16)"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit \
    --format=csv 2>&1
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version())" 2>&1
  build/bin/volua -e 'print("volua", vol.cuda_info())' 2>&1
} | tee "$OUT/env.txt"

compile_flag=""
[ "${BENCH_COMPILE:-1}" = 0 ] && compile_flag="--no-compile"
python3 bench/bench.py torch --dir "$DIR" --reps "$REPS" --warmup "$WARMUP" ${PROBLEMS:+--problems "$PROBLEMS"} \
  $compile_flag 2>&1 | tee "$OUT/torch.log"
if [ ! -f "$DIR/problems.lua" ]; then
  echo "bench/run.sh: the PyTorch side wrote no $DIR/problems.lua; see $OUT/torch.log" >&2
  exit 1
fi

# VOLUA_TC_VERBOSE=1: the plan of each tensor-core launch (variant, chunks, shared memory) in the log
VOLUA_TC_VERBOSE=1 build/bin/volua scripts/bench.lua "$DIR" "$REPS" "$WARMUP" 2>&1 | tee "$OUT/volua.log"
volua_status=${PIPESTATUS[0]}

# the variant passes (not in the main table; the report lists them below it)
VARIANTS=${VARIANTS-VOLUA_TC_BN=32;VOLUA_TC_BN=64}
i=0
IFS=';' read -ra variant_list <<< "$VARIANTS"
for v in "${variant_list[@]}"; do
  [ -n "$v" ] || continue
  i=$((i + 1))
  echo "== variant $i: $v" | tee -a "$OUT/volua.log"
  env $v build/bin/volua scripts/bench.lua "$DIR" "$REPS" "$WARMUP" "$DIR/variant-$i.json" "${VARIANT_PROBLEMS:-L1-77,L1-60,L1-66}" \
    2>&1 | tee -a "$OUT/volua.log"
  echo "$v" > "$DIR/variant-$i.name"
done

python3 bench/bench.py report --dir "$DIR" --out "$OUT"
report_status=$?
[ "$volua_status" = 0 ] && [ "$report_status" = 0 ]
