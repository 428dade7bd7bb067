#!/usr/bin/env bash
# Where an ncu run's seconds go, and what happens when two ncu runs overlap. Run on a GPU machine:
#   bash bench/ncu_startup.sh [OUT_DIR]
# Prints wall times of: a plain CUDA process; ncu around it profiling nothing; ncu profiling 4 and
# 16 launches; two ncu runs started together with separate TMPDIRs and with one shared TMPDIR
# (ncu keeps its own lock file, nsight-compute-lock, in the temp folder).
set -u
out=${1:-.}
work=$(mktemp -d)
metrics=l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum
cat > "$work/probe.py" <<'EOF'
import sys, time
t0 = time.time()
import cupy
src = r'''extern "C" __global__ void probe_kernel(float* x, int n)
{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] += 1.0f; }'''
kernel = cupy.RawKernel(src, "probe_kernel")
x = cupy.zeros(1 << 20, dtype=cupy.float32)
kernel((4096,), (256,), (x, cupy.int32(1 << 20)))  # compiles and loads the module
cupy.cuda.Device().synchronize()
t1 = time.time()
for _ in range(int(sys.argv[1])):
    kernel((4096,), (256,), (x, cupy.int32(1 << 20)))
cupy.cuda.Device().synchronize()
t2 = time.time()
print(f"probe: start {t0:.2f} imports+context+first launch {t1 - t0:.2f} s, {sys.argv[1]} launches {t2 - t1:.2f} s, end {t2:.2f}", flush=True)
EOF
timed() { local s; s=$(date +%s.%N); "$@"; local rc=$?; echo "  [$(python3 -c "print(f'{$(date +%s.%N) - $s:.2f}')") s, exit $rc: ${*: -3}]"; }
ncu_run() { ncu --clock-control none --csv --page raw --disable-extra-suffixes --metrics "$metrics" -k "regex:^$1\$" --log-file "$2" python3 "$work/probe.py" "$3"; }
{
  echo "== warm the CuPy kernel cache"; python3 "$work/probe.py" 1 >/dev/null
  echo "== ncu --version"; timed ncu --version >/dev/null
  for i in 1 2; do echo "== plain process, 4 launches"; timed python3 "$work/probe.py" 4; done
  for i in 1 2; do echo "== ncu, profiles nothing (kernel filter matches none)"; timed ncu_run nomatch "$work/none.log" 4; done
  for n in 1 4 16; do echo "== ncu, profiles $n launch(es)"; timed ncu_run probe_kernel "$work/p$n.log" "$n"; grep -c '"probe_kernel' "$work/p$n.log"; done
  echo "== two ncu runs at once, separate TMPDIRs"
  mkdir -p "$work/ta" "$work/tb"
  (TMPDIR="$work/ta" timed ncu_run probe_kernel "$work/a.log" 16 > "$work/a.out" 2>&1) &
  (TMPDIR="$work/tb" timed ncu_run probe_kernel "$work/b.log" 16 > "$work/b.out" 2>&1) &
  wait; cat "$work/a.out" "$work/b.out"; tail -3 "$work/a.log" "$work/b.log" | cut -c1-200; ls -la "$work/ta" "$work/tb"
  echo "== two ncu runs at once, one shared TMPDIR"
  mkdir -p "$work/ts"
  (TMPDIR="$work/ts" timed ncu_run probe_kernel "$work/c.log" 16 > "$work/c.out" 2>&1) &
  (TMPDIR="$work/ts" timed ncu_run probe_kernel "$work/d.log" 16 > "$work/d.out" 2>&1) &
  wait; cat "$work/c.out" "$work/d.out"; tail -3 "$work/c.log" "$work/d.log" | cut -c1-200; ls -la "$work/ts"; ls -la /tmp | grep -i nsight
} 2>&1 | tee "$out/ncu-startup.log"
rm -rf "$work"
