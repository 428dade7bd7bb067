# Session 6 of 2026-12-01, call 4 on nvidia-h200-x2: the scaling pair (one GPU, then two) twice.
source .devrun/prep.sh
mkdir -p $OUT/pair1 $OUT/pair2
bash bench/gpu_scaling.sh $OUT/pair1 120
bash bench/gpu_scaling.sh $OUT/pair2 120
