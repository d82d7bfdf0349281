#!/usr/bin/env bash
# spec/run.sh [busted args]: runs the specs under volua with busted's TAP output, then prints
# "N passed, N failed, N skipped" and exits with busted's status (non-zero also when the run
# died before its plan). VOLUA=path picks another binary (the sanitizer build);
# VOLUA_TEST_DEVICE=cuda runs the device-aware specs on the GPU.
cd "$(dirname "$0")/.."
VOLUA=${VOLUA:-build/bin/volua}
BUSTED=${BUSTED:-$(command -v busted || echo /usr/bin/busted)}
log=$(mktemp)
set -o pipefail
"$VOLUA" "$BUSTED" -o TAP "${@:-spec}" 2>&1 | tee "$log"
status=$?
skipped=$(grep -c '^ok .*# SKIP' "$log")
passed=$(( $(grep -c '^ok ' "$log") - skipped ))
failed=$(grep -c '^not ok ' "$log")
planned=$(sed -n 's/^1\.\.\([0-9]*\)$/\1/p' "$log" | tail -n 1)
rm -f "$log"
if [ -z "$planned" ] || [ "$planned" != $((passed + failed + skipped)) ]; then
  echo "spec/run.sh: the run ended before its TAP plan (planned '${planned}', saw $((passed + failed + skipped)))"
  failed=$((failed + 1))
  [ "$status" = 0 ] && status=1
fi
echo "$passed passed, $failed failed, $skipped skipped"
exit "$status"
