#!/usr/bin/env bash
# Where an ncu run's seconds go, and what happens when two ncu runs overlap. Run on a GPU machine:
#   bash bench/ncu_startup.sh [OUT_DIR]
# Prints wall times of: a plain CUDA process; ncu around it profiling nothing; ncu profiling 4 and
# 16 launches; two ncu runs started together with separate TMPDIRs and with one shared TMPDIR
# (ncu keeps its own lock file, nsight-compute-lock, in the temp folder), on one GPU and, where the
# machine has two, on two.
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
pair() {  # LABEL GPU_A GPU_B TMP_A TMP_B: two ncu runs of 16 launches started together
  echo "== $1"; mkdir -p "$work/$4" "$work/$5"
  (CUDA_VISIBLE_DEVICES=$2 TMPDIR="$work/$4" timed ncu_run probe_kernel "$work/$4-a.log" 16 > "$work/$4-a.out" 2>&1) &
  (CUDA_VISIBLE_DEVICES=$3 TMPDIR="$work/$5" timed ncu_run probe_kernel "$work/$5-b.log" 16 > "$work/$5-b.out" 2>&1) &
  wait; cat "$work/$4-a.out" "$work/$5-b.out"; tail -2 "$work/$4-a.log" "$work/$5-b.log" | cut -c1-200
}
ncu_run() { ncu --clock-control none --csv --page raw --disable-extra-suffixes --metrics "$metrics" -k "regex:^$1\$" --log-file "$2" python3 "$work/probe.py" "$3"; }
{
  echo "== warm the CuPy kernel cache"; python3 "$work/probe.py" 1 >/dev/null
  echo "== ncu --version"; timed ncu --version >/dev/null
  for i in 1 2; do echo "== plain process, 4 launches"; timed python3 "$work/probe.py" 4; done
  for i in 1 2; do echo "== ncu, profiles nothing (kernel filter matches none)"; timed ncu_run nomatch "$work/none.log" 4; done
  for n in 1 4 16; do echo "== ncu, profiles $n launch(es)"; timed ncu_run probe_kernel "$work/p$n.log" "$n"; grep -c '"probe_kernel' "$work/p$n.log"; done
  pair "two ncu runs at once, separate TMPDIRs" 0 0 ta tb
  pair "two ncu runs at once, one shared TMPDIR" 0 0 ts ts
  if [ "$(nvidia-smi -L | wc -l)" -ge 2 ]; then
    echo "== one ncu run on GPU 1 alone"; CUDA_VISIBLE_DEVICES=1 timed ncu_run probe_kernel "$work/g1.log" 16
    pair "two ncu runs at once on GPUs 0 and 1, separate TMPDIRs" 0 1 ua ub
    pair "two ncu runs at once on GPUs 0 and 1, one shared TMPDIR" 0 1 us us
  fi
} 2>&1 | tee "$out/ncu-startup.log"
rm -rf "$work"
