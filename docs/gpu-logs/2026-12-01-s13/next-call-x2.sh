# Ready for the next session with nvidia-h200-x2 (~300 s): does one profiler lane for both GPUs do as
# well as two? This session's runs records show two ncu children on two GPUs each profiling at half
# speed while both profile (0.61 to 0.67 s a launch against 0.34 to 0.35 s alone), so one lane may
# profile as much with less waiting. Then the scaling pair at the defaults, with the batch's timeline.
source .devrun/prep.sh
G='graded after|last result|timeline|batch CPU|profiler:|per minute'
echo "== two GPUs, one profiler lane"; env KERNEL_GRADER_PROFILER_LANES=1 KERNEL_GRADER_PROFILER_LOG=$OUT/runs-two-gpus-one-lane.json timeout 100 python3 bench/grading_speed.py --backend gpu --batch-only --class-size 100 --batch-limit 90 > $OUT/two-gpus-one-lane.log 2>&1; grep -E "$G" $OUT/two-gpus-one-lane.log | cut -c1-300
mkdir -p $OUT/pair; bash bench/gpu_scaling.sh $OUT/pair 120 | grep -E "$G|^\\$" | cut -c1-300
