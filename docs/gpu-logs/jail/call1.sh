#!/usr/bin/env bash
# The jail on the H200: which walls the machine allows, a jailed process running a kernel on its GPU,
# the Python kind's walls and the lesson_numpy reference in both modes. bubblewrap, libseccomp and
# pyseccomp travel in .jailtools (Debian 12 packages and the PyPI wheel): nothing can be installed there.
set -u
run() { echo "\$ $*"; "$@"; echo "[exit status $?]"; echo; }
mkdir -p /tmp/jt/root && cp .jailtools/* /tmp/jt/ && for f in /tmp/jt/*.deb; do dpkg -x "$f" /tmp/jt/root; done
chmod -R a+rX /tmp/jt
python3 -m pip install -q --no-index --no-deps --target /tmp/site /tmp/jt/*.whl
export PYTHONPATH=/tmp/site PATH=/tmp/jt/root/usr/bin:$PATH PYTHONUNBUFFERED=1
{
  run uname -r
  run sh -c 'head -2 /etc/os-release; id; ldconfig -p | grep -E "libseccomp|libcap.so|libselinux"'
  run bwrap --version
  run python3 -c "import sys; print(sys.version.split()[0], sys.executable, sys.base_prefix)"
  run python3 -c "from grader.run.jail import layers; print(layers._probe(False)); print(layers._probe(True))"
  run python3 -m pytest -q -p no:cacheprovider -rs tests/gpu/test_jail_gpu.py tests/test_pygrade.py
  run python3 -m grader exercises/lesson_numpy reference/lesson_numpy/solution.py
  KERNEL_GRADER_NO_NAMESPACES=1 run python3 -m grader exercises/lesson_numpy reference/lesson_numpy/solution.py
} 2>&1 | tee "$OUT/call1.log"
