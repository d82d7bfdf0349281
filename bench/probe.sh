#!/usr/bin/env bash
# bench/probe.sh [PROBLEMS]: on the device machine, after the specs: the SASS of the tensor-core
# kernels and an ncu profile of one call per problem and math (bench/profile.lua), into $OUT.
# PROBLEMS defaults to all four convolutions. Text reports: ncu-details.txt (sections), ncu-sass-*.csv
# (per-instruction samples of the hottest kernels).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/volua_probe}
mkdir -p "$OUT"
PROBS=${1:-L2-23,L1-60,L1-66,L1-77}
for o in conv3d_gn_mean_tc conv3d_tc conv_transpose3d_tc; do
  cuobjdump --dump-sass "build/obj/kernels/$o.o" > "$OUT/sass-$o.txt" 2>&1 || echo "cuobjdump $o failed"
done
for pr in ${PROBS//,/ }; do
  for m in fp32 tf32; do
    r="$pr-$m"
    PROFILE_NOBENCH=1 timeout 100 ncu --clock-control none --set full -k regex:"tc_conv_kernel|tc_fill_kernel" -s 2 -c 2 -f \
      -o "/tmp/prof-$r" build/bin/volua bench/profile.lua "$pr" "$m" 3 > "$OUT/ncu-run-$r.log" 2>&1 || echo "ncu $r failed"
    ncu -i "/tmp/prof-$r.ncu-rep" --page details > "$OUT/ncu-details-$r.txt" 2>&1
    ncu -i "/tmp/prof-$r.ncu-rep" --page source --print-source sass --csv > "$OUT/ncu-sass-$r.csv" 2>&1
    rm -f "/tmp/prof-$r.ncu-rep"
    echo "== $r"
    grep -E "Duration|Registers Per|Achieved Occupancy|Issue Slots Busy|Compute \(SM\) Thr|Memory Thr|No Eligible|Warp Cycles Per Issued" "$OUT/ncu-details-$r.txt" | head -12
  done
done
# one archive: the device tool brings back a limited number of files
tar czf "$OUT/../probe.tgz" -C "$OUT" . && rm -rf "$OUT"
