#!/bin/sh
# run.sh SECONDS [TARGET...]: builds the libFuzzer targets (clang, ASan + UBSan) over the file
# readers and runs each for SECONDS on a copy of its seed corpus, then prints its final
# statistics. Exits non-zero if a target finds anything (the input is left in fuzz/out/, or in
# $FUZZ_OUT). Needs clang with libFuzzer (Debian: apt-get install clang).
#   sh fuzz/run.sh 600                # ten minutes per target
#   sh fuzz/run.sh 60 safetensors     # one target
set -eu
secs=${1:-60}
shift || true
targets=${*:-"npy safetensors"}
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
out=${FUZZ_OUT:-"$here/out"}
mkdir -p "$out"
cc=${CC_FUZZ:-clang}
flags="-g -O1 -std=gnu11 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -I$root/src"
status=0
for t in $targets; do
  bin="$out/fuzz_$t"
  $cc $flags -o "$bin" "$here/fuzz_$t.c" "$root/src/io_npy.c" "$root/src/io_safetensors.c" "$root/src/io_common.c" \
    "$root/src/tensor.c" "$here/stubs.c"
  # work on a copy: new inputs libFuzzer finds stay out of the committed seed corpus
  rm -rf "$out/corpus_$t"
  mkdir -p "$out/corpus_$t"
  cp "$here/corpus/$t"/* "$out/corpus_$t/"
  log="$out/fuzz_$t.log"
  echo "== fuzz_$t: $secs s, seeds: $(ls "$here/corpus/$t" | wc -l)"
  if ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
     UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
     "$bin" -max_total_time="$secs" -max_len=65536 -rss_limit_mb=2048 -timeout=10 -dict="$here/$t.dict" \
       -artifact_prefix="$out/" -print_final_stats=1 "$out/corpus_$t" >"$log" 2>&1; then
    grep -E '^(Done|stat::number_of_executed_units|stat::average_exec_per_sec|stat::peak_rss_mb|stat::new_units_added)' "$log" || true
    echo "fuzz_$t: corpus $(ls "$out/corpus_$t" | wc -l) files, no finding"
  else
    status=1
    tail -n 60 "$log"
    echo "fuzz_$t: FOUND A PROBLEM (see $log and $out/crash-* / leak-* / timeout-*)"
  fi
done
exit $status
