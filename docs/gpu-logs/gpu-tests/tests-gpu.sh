#!/usr/bin/env bash
# The jail on the H200, call 5: the whole GPU suite (tests/gpu, the jail's GPU test among them) on this
# tree (the CUDA path's student-text changes have not run on a GPU). Set-up as call1.sh.
set -u
mkdir -p /tmp/jt/root && cp .jailtools/* /tmp/jt/ && for f in /tmp/jt/*.deb; do dpkg -x "$f" /tmp/jt/root; done
chmod -R a+rX /tmp/jt
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site /tmp/jt/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site PATH=/tmp/jt/root/usr/bin:$PATH PYTHONUNBUFFERED=1
{
  git log --oneline -1 2>/dev/null || true
  echo '$ python3 -m pytest -q -p no:cacheprovider tests/gpu -rs --durations=5'
  timeout 560 python3 -m pytest -q -p no:cacheprovider tests/gpu -rs --durations=5
} 2>&1 | tee "$OUT/call5.log"
