# Seventh session, call 2 (one H200): first contact on the GPU with relative paths (a student's
# `grade exercises/level2 submission.cu` from their own folder; a TA's `grade batch ... --out grades/level2`),
# then every gpu-marked test outside tests/gpu (the hostile corpus one by one and inside a batch; the launch budget).
source .devrun/prep.sh
REPO=$PWD
echo "== grade, relative paths"; (cd $REPO && timeout 60 python3 -m grader exercises/level2 reference/level2/solution.cu | tail -2)
D=$(mktemp -d) && cp reference/level2/wrong/no_tiling.cu $D/submission.cu && (cd $D && timeout 60 python3 -m grader $REPO/exercises/level2 submission.cu | tail -2)
echo "== grade batch, relative paths"; mkdir -p $D/subs && cp reference/level2/solution.cu $D/subs/alice.cu && cp reference/level2/wrong/no_tiling.cu $D/subs/bob.cu && cp tests/hostile/trap.cu $D/subs/eve.cu
ln -s $REPO/exercises $D/exercises && ln -s $REPO/reference $D/reference
(cd $D && timeout 120 python3 -m grader batch exercises/level2 subs --out grades/level2 > $OUT/rel-batch.log 2>&1; echo "rc=$?"; cut -c1-160 grades/level2/grades.csv; ls grades/level2/reports)
echo "== gpu tests outside tests/gpu"; timeout 430 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_hostile.py tests/test_launch_budget.py -rs --durations=8 > $OUT/gpu-marked.log 2>&1; echo "rc=$?"; tail -14 $OUT/gpu-marked.log | cut -c1-300
