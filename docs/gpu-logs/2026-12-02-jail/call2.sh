#!/usr/bin/env bash
# The jail on the H200, call 2: which settings let a jailed process initialise CUDA (the device nodes
# before and after), then the GPU jail test. Set-up as call1.sh.
set -u
run() { echo "\$ $*"; "$@"; echo "[exit status $?]"; echo; }
mkdir -p /tmp/jt/root && cp .jailtools/* /tmp/jt/ && for f in /tmp/jt/*.deb; do dpkg -x "$f" /tmp/jt/root; done
chmod -R a+rX /tmp/jt
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site /tmp/jt/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site PATH=/tmp/jt/root/usr/bin:$PATH PYTHONUNBUFFERED=1
{
  run sh -c 'ls -l /dev/nvidia* /dev/shm; which nvidia-modprobe; ls /run | head'
  run python3 bench/jail_gpu_probe.py
  run python3 -c "import ctypes; print('host cuInit', ctypes.CDLL('libcuda.so.1').cuInit(0))"
  run sh -c 'ls -l /dev/nvidia*'
  run python3 bench/jail_gpu_probe.py
  run python3 -m pytest -q -p no:cacheprovider -rs tests/gpu/test_jail_gpu.py
} 2>&1 | tee "$OUT/call2.log"
