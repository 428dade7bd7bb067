#!/usr/bin/env bash
# Grade every held-out Triton file with the grader: grade_all.sh BACKEND OUTDIR [ROOT] [JOBS]
#   BACKEND: emu or gpu (the CLI's --backend); OUTDIR gets <exercise>/<name>.json and .log;
#   ROOT (default .heldout/triton) holds <exercise>/<name>.py; JOBS files at a time (default 3).
# Run from the repository root. A file whose exercise has no exercises/<id>/ yet (triton_matmul
# before its branch lands) is listed as skipped, not graded.
set -u
backend=${1:?usage: grade_all.sh BACKEND OUTDIR [ROOT] [JOBS]}
outdir=${2:?usage: grade_all.sh BACKEND OUTDIR [ROOT] [JOBS]}
root=${3:-.heldout/triton}
jobs=${4:-3}
python=${PYTHON:-python}
mkdir -p "$outdir"
grade_one() {
    local file=$1 ex name
    ex=$(basename "$(dirname "$file")")
    name=$(basename "$file" .py)
    mkdir -p "$outdir/$ex"
    if [ ! -f "exercises/$ex/spec.toml" ]; then
        echo "$ex/$name: skipped (no exercises/$ex)" | tee "$outdir/$ex/$name.log"
        return 0
    fi
    local t0=$SECONDS
    "$python" -m grader run "exercises/$ex" "$file" --backend "$backend" --json "$outdir/$ex/$name.json" \
        > "$outdir/$ex/$name.log" 2>&1
    local rc=$?
    echo "$ex/$name: exit $rc, $((SECONDS - t0)) s, $(tail -n 1 "$outdir/$ex/$name.log" | tr -s ' ')"
}
export -f grade_one
export outdir backend python
find "$root" -mindepth 2 -maxdepth 2 -name '*.py' | sort | xargs -P "$jobs" -I{} bash -c 'grade_one "$1"' _ {}
