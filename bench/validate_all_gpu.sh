#!/usr/bin/env bash
# Every exercise validated on the GPU at once (each validation grades its reference, skeleton and
# wrong files), each into OUT_DIR/validate-NAME.log, then the lines that matter from each log.
#   bash bench/validate_all_gpu.sh OUT_DIR SECONDS [SUMMARY_PATTERN]
set -u
out=$1
limit=$2
pattern=${3:-FAIL|valid|exit status}
for ex in exercises/*/; do
  name=$(basename "$ex")
  ( timeout "$limit" python3 -m grader validate "$ex" --backend gpu > "$out/validate-$name.log" 2>&1; echo "[exit status $?]" >> "$out/validate-$name.log" ) &
done
wait
for f in "$out"/validate-*.log; do echo "== $f"; grep -E "$pattern" "$f"; done
