#!/usr/bin/env bash
# gpu_check.sh [all | specs | memcheck | racecheck | initcheck | synccheck]: the whole GPU check, run on the
# device machine from the repository root with the carried build/bin/volua and .busted-bundle
# (see ../shared/device/README.md):
#   the GPU's line from nvidia-smi; every spec with VOLUA_TEST_DEVICE=cuda and every new GPU block
#   (tensors and the kernels' scratch) poisoned with NaN (VOLUA_POISON=1); the golden cases again
#   at math "tf32"; spec/fast_spec.lua again under the plan switches that force the variants the
#   default rules rarely take, the pooling specs under max_pool3d's kernel switches and avg_pool_spec
#   with avg_pool3d's ring kernel off; then the specs under
#   compute-sanitizer memcheck, racecheck, initcheck (without poisoning: a memset would hide
#   unwritten memory from initcheck) and synccheck (barrier use), each with its summary.
# Prints "N passed, N failed, N skipped" per run and exits non-zero on any failure or sanitizer error.
# Environment: VOLUA_SEED (reproduce the random specs), VOLUA_TEST_LARGE=1 (the > 2^31-element
# specs, first run only), SPECS (spec files or dirs, default spec), VOLUA_SANITIZER_TRIALS (random
# cases per op under the sanitizers, default 6), VOLUA (the binary).
set -uo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}
case "$what" in all | specs | memcheck | racecheck | initcheck | synccheck) ;;
  *) echo "usage: scripts/gpu_check.sh [all|specs|memcheck|racecheck|initcheck|synccheck]" >&2; exit 2 ;;
esac

VOLUA=${VOLUA:-build/bin/volua}
SPECS=${SPECS:-spec}
# Under compute-sanitizer every volua process the specs start runs under it too: the specs of the
# terminal and command-line host (which drive volua through a pty with Ctrl-C and timeouts, and
# run no GPU code of their own) are left out there; every other spec runs.
SANITIZER_SPECS=${SANITIZER_SPECS:-$(ls spec/*_spec.lua | grep -Ev '/(repl|host)_spec\.lua$' | tr '\n' ' ')}
[ -x "$VOLUA" ] || { echo "gpu_check: no $VOLUA (build here, carry build/)" >&2; exit 2; }
[ -f .busted-bundle/env.sh ] || { echo "gpu_check: no .busted-bundle (../shared/device/busted-bundle.sh .busted-bundle)" >&2; exit 2; }
. .busted-bundle/env.sh
export BUSTED="$PWD/.busted-bundle/usr/bin/busted"
export VOLUA_TEST_DEVICE=cuda
# ../shared does not travel to the device machine: carry a copy as .golden (README, "GPU")
[ -z "${VOLUA_GOLDEN:-}" ] && [ -d .golden ] && export VOLUA_GOLDEN=$PWD/.golden
export VOLUA_SEED=${VOLUA_SEED:-$(( $(date +%s) % 2147483629 ))}
SANITIZER=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)}
logs=${GPU_CHECK_LOGS:-$(mktemp -d)}
mkdir -p "$logs"
status=0

echo "== GPU"
nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv,noheader || status=1
"$VOLUA" -e 'print("volua sees: " .. (vol.cuda_info() or select(2, vol.cuda_info())))' || status=1
echo "random specs: VOLUA_SEED=$VOLUA_SEED"

# run_specs LABEL VOLUA_BINARY SPEC...: spec/run.sh with TAP; prints what is not a plain "ok".
run_specs() {
  local label=$1 bin=$2
  shift 2
  echo "== $label"
  VOLUA="$bin" bash spec/run.sh "$@" >"$logs/run.log" 2>&1
  local rc=$?
  cp "$logs/run.log" "$logs/$(echo "$label" | tr -c 'a-z0-9\n' '_' | cut -c1-40).log"
  grep -Ev '^ok ' "$logs/run.log" | tail -n 60
  [ "$rc" = 0 ] || status=1
}

# sanitized TOOL: runs the specs under compute-sanitizer TOOL and prints its summary.
sanitized() {
  local tool=$1
  [ -x "$SANITIZER" ] || { echo "== $tool: compute-sanitizer not found"; status=1; return; }
  local wrapper="$logs/volua-$tool" log="$logs/$tool.log"
  # spec/run.sh calls "$VOLUA" busted ...: a wrapper puts the sanitizer in front of volua
  cat >"$wrapper" <<EOF
#!/bin/sh
# the processes the specs start themselves (VOLUA) run the plain binary: one sanitizer, one log
export VOLUA="$PWD/$VOLUA"
exec "$SANITIZER" --tool $tool --target-processes application-only --error-exitcode 97 --log-file "$log" "$PWD/$VOLUA" "\$@"
EOF
  chmod +x "$wrapper"
  local poison=1
  [ "$tool" = initcheck ] && poison=0
  VOLUA_UNDER_SANITIZER=1 VOLUA_POISON=$poison VOLUA_TEST_LARGE=0 VOLUA_GPU_TRIALS=${VOLUA_SANITIZER_TRIALS:-6} \
    run_specs "specs under compute-sanitizer --tool $tool" "$wrapper" $SANITIZER_SPECS
  local summary
  summary=$(grep -E 'SUMMARY' "$log" | tail -n 1)
  if [ -z "$summary" ]; then
    echo "compute-sanitizer $tool: no summary (did it run?)"
    tail -n 20 "$log"
    status=1
  else
    echo "compute-sanitizer $tool: $summary"
    echo "$summary" | grep -Eq ': 0 errors|\(0 errors' || { grep -E '^=========' "$log" | head -n 40; status=1; }
  fi
}

if [ "$what" = all ] || [ "$what" = specs ]; then
  VOLUA_POISON=1 run_specs "specs on the GPU (math fp32, outputs poisoned with NaN)" "$VOLUA" $SPECS
  VOLUA_POISON=1 VOLUA_TEST_MATH=tf32 run_specs "golden cases on the GPU at math tf32" "$VOLUA" spec/golden_spec.lua
  # plans that the default rules give few of the specs' shapes on this GPU: fast_spec again under
  # the switches that force them (mma.sync k-loops; the channels-last path everywhere, with 256
  # positions a block, with 160 and 224 channels a block, with K in 3 and 16 parts; plain launches instead
  # of dependent ones; the 1x1x1 cases on the other paths, all on
  # conv3d_pointwise.cu, and there with C_in in 3 parts, all it can on its TMA kernel (and with C_in in
  # 3 parts), none on it; strided convolutions by space-to-depth; transposed convolutions phase by
  # phase, each with K in 3 parts; kept weight layouts under a 1-byte cap: every new one evicts all
  # but those the call in progress holds; conv3d_tc.cu's W-interleaved plan with one team, two teams,
  # and off)
  for v in "VOLUA_TC_WGMMA=0" "VOLUA_TC_CL=1" "VOLUA_TC_CL=1 VOLUA_TC_CL_BM=256" "VOLUA_TC_CL=1 VOLUA_TC_CL_BN=160" \
    "VOLUA_TC_CL=1 VOLUA_TC_CL_BN=224" \
    "VOLUA_TC_CL=1 VOLUA_TC_KSPLIT=3" "VOLUA_TC_CL=1 VOLUA_TC_KSPLIT=16" "VOLUA_TC_PDL=0 VOLUA_TC_CL_PDL=0" \
    "VOLUA_PW=0" "VOLUA_PW=1" "VOLUA_PW=1 VOLUA_PW_KSPLIT=3" "VOLUA_PW=1 VOLUA_PW_TMA=2" \
    "VOLUA_PW=1 VOLUA_PW_TMA=2 VOLUA_PW_KSPLIT=3" "VOLUA_PW_TMA=0" "VOLUA_S2D=1" \
    "VOLUA_TC_PHASES=0 VOLUA_TC_WPAIR=0 VOLUA_TC_KSPLIT=3" "VOLUA_WCACHE_BYTES=1" \
    "VOLUA_TC_KW_TEAMS=1" "VOLUA_TC_KW_TEAMS=2" "VOLUA_TC_KW=0"; do
    for kv in $v; do export "$kv"; done
    VOLUA_POISON=1 VOLUA_TEST_LARGE=0 run_specs "fast_spec with $v" "$VOLUA" spec/fast_spec.lua
    for kv in $v; do unset "${kv%%=*}"; done
  done
  # max_pool3d's kernels that the default rules give few of the specs' shapes: the pooling specs
  # again with the stream and ring kernels off (the slab, separable and slice kernels take their
  # shapes; and there with each second stage of the slice kernel), with both forced on every width
  # (and the ring kernel on k 5 without indices), and with the slab kernel off
  for v in "VOLUA_POOL_STREAM=0 VOLUA_POOL_RING=0" "VOLUA_POOL_STREAM=0 VOLUA_POOL_RING=0 VOLUA_POOL_IDX2=max" \
    "VOLUA_POOL_STREAM=0 VOLUA_POOL_RING=0 VOLUA_POOL_IDX2=merge" "VOLUA_POOL_STREAM=2 VOLUA_POOL_RING=2" \
    "VOLUA_POOL_SLAB=0"; do
    for kv in $v; do export "$kv"; done
    VOLUA_POISON=1 VOLUA_TEST_LARGE=0 run_specs "max_pool3d specs with $v" "$VOLUA" --filter max_pool3d spec/gpu_spec.lua
    for kv in $v; do unset "${kv%%=*}"; done
  done
  # avg_pool3d's point kernel on the k 3 s 2 shapes the ring kernel takes by default, the
  # > 2^31-element one too where VOLUA_TEST_LARGE=1
  VOLUA_AVG_RING=0 VOLUA_POISON=1 run_specs "avg_pool_spec with VOLUA_AVG_RING=0" "$VOLUA" spec/avg_pool_spec.lua
  echo "== Ctrl-C during a long GPU op in the REPL"
  python3 scripts/interrupt_check.py "$VOLUA" cuda || status=1
fi
for tool in memcheck racecheck initcheck synccheck; do
  if [ "$what" = all ] || [ "$what" = "$tool" ]; then sanitized "$tool"; fi
done

rm -rf "$logs"
echo "== gpu_check $what: $([ $status = 0 ] && echo passed || echo FAILED)"
exit $status
