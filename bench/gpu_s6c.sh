#!/usr/bin/env bash
# Sixth session, on two H200s: warm slots on a GPU host, the batch of 100 on one GPU and on two (same
# session), with and without warm slots, hangs graded alone, and the hostile corpus through a GPU batch.
#   bash bench/gpu_s6c.sh OUT_DIR
set -u
out=${1:-.}
run() { echo "\$ $*"; "$@"; echo "[exit status $?]"; echo; }
{
  run nvidia-smi -L
  run timeout 60 python3 -m pytest -q -p no:cacheprovider tests/test_emu_workers.py -k gpu
  for f in tests/hostile/endless_loop_ragged.cu tests/hostile/endless_loop_all.cu; do
    echo "\$ grade exercises/level2 $f --backend gpu"
    s=$(date +%s.%N); timeout 150 python3 -m grader exercises/level2 "$f" --backend gpu --quiet --json "$out/hang-$(basename "$f" .cu).json"
    echo "[exit status $?] $(python3 -c "import sys; print(f'{float(sys.argv[2])-float(sys.argv[1]):.1f} s')" "$s" "$(date +%s.%N)")"
  done
  run env CUDA_VISIBLE_DEVICES=0 python3 bench/grading_speed.py --backend gpu --batch-only --class-size 100 --per-gpu 8 --profile-group 8 --batch-limit 130
  run python3 bench/grading_speed.py --backend gpu --batch-only --class-size 100 --per-gpu 8 --profile-group 8 --batch-limit 100
  run env CUDA_VISIBLE_DEVICES=0 python3 bench/grading_speed.py --backend gpu --batch-only --class-size 100 --per-gpu 8 --profile-group 8 --no-warm --batch-limit 130
  run timeout 170 python3 -m pytest -m gpu -q -p no:cacheprovider -k "whole_corpus_through_grade_batch and gpu" tests/test_hostile.py
} 2>&1 | tee "$out/gpu-s6c.log"
