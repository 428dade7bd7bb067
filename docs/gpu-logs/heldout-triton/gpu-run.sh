#!/usr/bin/env bash
# The held-out Triton corpus on a CUDA GPU, end to end, from the repository root:
#   bash docs/gpu-logs/heldout-triton/gpu-run.sh [ROOT] [JOBS]
# ROOT (default .heldout/triton) holds <exercise>/<name>.py (README.md, "The corpus"); through the
# device tool it travels as the ignored folder `.heldout`, named in carry. JOBS (default 6) files are
# graded at a time per backend. Four truth.py processes run side by side, one per exercise (truth.py
# runs its files one after another, and its memcheck pass is the slow part), while grade_all.sh
# grades every file with --backend gpu and with --backend emu; compare.py then writes compare.md.
# Every stage is capped (timeout) so that the whole run ends inside the device tool's 10 minutes and
# what was finished still comes back: everything lands in $OUT/heldout.tgz.
set -u
source docs/gpu-logs/setup.sh
root=${1:-.heldout/triton}
jobs=${2:-6}
python=${PYTHON:-python}
dir=$(mktemp -d /tmp/heldout-gpu.XXXX)
cap=${CAP_S:-480}
t0=$SECONDS
if [ ! -d "$root" ]; then
    echo "no corpus at $root (copy it into the checkout's .heldout/triton and carry .heldout)" >&2
    exit 2
fi
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; "$python" -c \
    'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)'; \
    command -v compute-sanitizer || echo "compute-sanitizer: not on PATH"; } > "$dir/versions.txt" 2>&1
for ex in triton_vector_add triton_softmax triton_rmsnorm triton_matmul; do
    PYTHONPATH= timeout "$cap" "$python" docs/gpu-logs/heldout-triton/truth.py "$root" --only "$ex/" \
        --out "$dir/truth-$ex" --timeout 200 > "$dir/truth-$ex.log" 2>&1 &
done
PYTHON=$python timeout "$cap" docs/gpu-logs/heldout-triton/grade_all.sh gpu "$dir/grade-gpu" "$root" "$jobs" \
    > "$dir/grade-gpu.log" 2>&1 &
PYTHON=$python timeout "$cap" docs/gpu-logs/heldout-triton/grade_all.sh emu "$dir/grade-emu" "$root" "$jobs" \
    > "$dir/grade-emu.log" 2>&1 &
wait
# One truth folder, as compare.py reads it; the per-exercise summaries joined into one.
mkdir -p "$dir/truth"
cp -r "$dir"/truth-triton_*/triton_* "$dir/truth/" 2>/dev/null
"$python" - "$dir" <<'PY'
import json, pathlib, sys
d = pathlib.Path(sys.argv[1])
rows = []
for s in sorted(d.glob("truth-triton_*/summary.json")):
    rows += json.loads(s.read_text())
(d / "truth" / "summary.json").write_text(json.dumps(rows, indent=1))
PY
"$python" docs/gpu-logs/heldout-triton/compare.py "$dir/truth" emu="$dir/grade-emu" gpu="$dir/grade-gpu" \
    > "$dir/compare.md" 2>&1
echo "total $((SECONDS - t0)) s" >> "$dir/versions.txt"
tar czf "$OUT/heldout.tgz" -C "$dir" .
cat "$dir/compare.md" | head -n 80
