# Seventh session, call 6 (one H200, the last 100 s): what is still running after the hostile test
# grades printf_flood.cu (calls 3 and 5: a lone grading right after it stalled past 45 to 120 s;
# on a fresh machine, call 4, it took 15 s).
python3 -m pip install -q --no-index --no-deps --no-cache-dir --target /tmp/site .whl/*.whl; export PYTHONPATH=/tmp/site:$PWD
timeout 25 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_hostile.py -k printf_flood 2>&1 | tail -1
echo "== processes after pytest"; ps -eo pid,ppid,sid,etimes,pcpu,stat,args --forest | grep -E "grader|ncu|sanitizer|python" | grep -v grep | cut -c1-200 | head -20
nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv 2>&1 | head -8
sleep 5; echo "== 5 s later"; ps -eo pid,etimes,args | grep -E "grader|sanitizer|ncu" | grep -v grep | cut -c1-160 | head
