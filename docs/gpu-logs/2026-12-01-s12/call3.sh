source .devrun/prep.sh
echo "cupy kernel cache: $(ls ~/.cupy/kernel_cache 2>/dev/null | wc -l) files"
for i in 1 2 3; do echo "== lone solution.cu, run $i"; timeout 60 python3 bench/grading_speed.py --backend gpu --limit 1 --class-size 0 2>&1 | grep -E "solution.cu|stages" | cut -c1-900; echo "cupy kernel cache: $(ls ~/.cupy/kernel_cache 2>/dev/null | wc -l) files"; done
echo "== ncu launch cost, 8 jobs"; timeout 300 python3 bench/ncu_launch_cost.py --jobs 8 2>&1 | tail -8
