#!/usr/bin/env bash
# The jail on the H200, call 4: cuInit under seccomp policies that differ by one permission, and
# (Landlock) with one more folder granted at a time. Set-up as call1.sh.
set -u
mkdir -p /tmp/jt/root && cp .jailtools/* /tmp/jt/ && for f in /tmp/jt/*.deb; do dpkg -x "$f" /tmp/jt/root; done
chmod -R a+rX /tmp/jt
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site /tmp/jt/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site PATH=/tmp/jt/root/usr/bin:$PATH PYTHONUNBUFFERED=1
{ echo "\$ python3 bench/jail_gpu_probe.py"; python3 bench/jail_gpu_probe.py; echo "\$ pytest tests/gpu/test_jail_gpu.py"; python3 -m pytest -q -p no:cacheprovider -rs tests/gpu/test_jail_gpu.py; } 2>&1 | tee "$OUT/call4.log"
