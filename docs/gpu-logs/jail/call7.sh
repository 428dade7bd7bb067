#!/usr/bin/env bash
# The jail on the H200, call 7: after the mends of call 6, again: the jail's own tests and the hostile corpus of student Python in both walls,
# on a machine where the sandbox uid applies (Ubuntu 24.04, Python under /usr). Set-up as call1.sh.
set -u
mkdir -p /tmp/jt/root && cp .jailtools/* /tmp/jt/ && for f in /tmp/jt/*.deb; do dpkg -x "$f" /tmp/jt/root; done
chmod -R a+rX /tmp/jt
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site /tmp/jt/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site PATH=/tmp/jt/root/usr/bin:$PATH PYTHONUNBUFFERED=1
{
  echo '$ python3 -c "from grader.run.jail import layers; print(layers.current())"'
  python3 -c "from grader.run.jail import layers; print(layers.current())"
  echo '$ python3 -m pytest -q -p no:cacheprovider -rs tests/test_jail.py tests/test_jail_uid.py tests/test_batch_isolation.py tests/test_hostile_py.py'
  timeout 560 python3 -m pytest -q -p no:cacheprovider -rs tests/test_jail.py tests/test_jail_uid.py tests/test_batch_isolation.py tests/test_hostile_py.py
} 2>&1 | tee "$OUT/call7.log"
