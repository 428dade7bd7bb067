"""The jail on a GPU: a jailed process given GPU 0 runs a CUDA kernel on it, and sees nothing else.

It talks to the driver directly (libcuda through ctypes: cuInit, a PTX module, a launch, a copy back),
so the test needs no CUDA package inside the jail. Each wall this machine allows is tried: bubblewrap's
namespaces and Landlock.
"""
from __future__ import annotations

import json

import pytest

from grader.run.jail import layers as jail_layers
from grader.run.jail.launch import Cell, Jailed
from grader.run.jail.syscalls import SyscallPolicy

pytestmark = pytest.mark.gpu

PTX = r"""
.version 7.0
.target sm_70
.address_size 64
.visible .entry add_one(.param .u64 p, .param .u32 n) {
  .reg .pred %p; .reg .b32 %r<5>; .reg .b64 %rd<4>; .reg .f32 %f<3>;
  ld.param.u64 %rd1, [p]; ld.param.u32 %r1, [n];
  mov.u32 %r2, %ctaid.x; mov.u32 %r3, %ntid.x; mov.u32 %r4, %tid.x; mad.lo.s32 %r2, %r2, %r3, %r4;
  setp.ge.u32 %p, %r2, %r1; @%p bra DONE;
  cvta.to.global.u64 %rd2, %rd1; mul.wide.u32 %rd3, %r2, 4; add.s64 %rd2, %rd2, %rd3;
  ld.global.f32 %f1, [%rd2]; add.f32 %f2, %f1, 0f3F800000; st.global.f32 [%rd2], %f2;
DONE:
  ret;
}
"""

INSIDE = r'''
import ctypes, json, os, sys
try:
    seen = {"dev": sorted(os.listdir("/dev"))}
except OSError as exc:  # Landlock: /dev itself is not listable, only the nodes granted
    seen = {"dev": type(exc).__name__}
for path in ("/etc/passwd", "/root", "/work"):
    try:
        open(path).close() if not os.path.isdir(path) else os.listdir(path)
        seen[path] = "readable"
    except OSError as exc:
        seen[path] = type(exc).__name__
cuda = ctypes.CDLL("libcuda.so.1")
def check(what, code):
    if code:
        raise SystemExit(f"{what} failed: CUDA error {code}")
check("cuInit", cuda.cuInit(0))
count = ctypes.c_int()
check("cuDeviceGetCount", cuda.cuDeviceGetCount(ctypes.byref(count)))
device = ctypes.c_int()
check("cuDeviceGet", cuda.cuDeviceGet(ctypes.byref(device), 0))
name = ctypes.create_string_buffer(100)
check("cuDeviceGetName", cuda.cuDeviceGetName(name, 100, device))
ctx = ctypes.c_void_p()
check("cuDevicePrimaryCtxRetain", cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), device))
check("cuCtxSetCurrent", cuda.cuCtxSetCurrent(ctx))
module = ctypes.c_void_p()
check("cuModuleLoadData", cuda.cuModuleLoadData(ctypes.byref(module), ctypes.c_char_p(sys.argv[1].encode())))
fn = ctypes.c_void_p()
check("cuModuleGetFunction", cuda.cuModuleGetFunction(ctypes.byref(fn), module, b"add_one"))
n = 1000
host = (ctypes.c_float * n)(*range(n))
dptr = ctypes.c_uint64()
check("cuMemAlloc", cuda.cuMemAlloc_v2(ctypes.byref(dptr), ctypes.c_size_t(4 * n)))
check("cuMemcpyHtoD", cuda.cuMemcpyHtoD_v2(dptr, host, ctypes.c_size_t(4 * n)))
nn = ctypes.c_uint32(n)
params = (ctypes.c_void_p * 2)(ctypes.cast(ctypes.byref(dptr), ctypes.c_void_p), ctypes.cast(ctypes.byref(nn), ctypes.c_void_p))
check("cuLaunchKernel", cuda.cuLaunchKernel(fn, 4, 1, 1, 256, 1, 1, 0, None, params, None))
check("cuCtxSynchronize", cuda.cuCtxSynchronize())
check("cuMemcpyDtoH", cuda.cuMemcpyDtoH_v2(host, dptr, ctypes.c_size_t(4 * n)))
seen.update(count=count.value, name=name.value.decode(), right=all(host[i] == i + 1 for i in range(n)))
print(json.dumps(seen))
'''


@pytest.mark.parametrize("no_namespaces", [False, True], ids=["namespaces", "landlock"])
def test_a_jailed_process_runs_a_kernel_on_its_gpu_and_sees_nothing_else(no_namespaces):
    walls = jail_layers._probe(no_namespaces)
    if walls.namespaces == no_namespaces or not walls.kernel_wall:
        pytest.skip(f"not this wall here: {walls.describe()}; {walls.missing}")
    # The driver starts threads of its own and opens a UNIX socket (to nvidia-persistenced: cuInit
    # fails with 304 where socket() is refused); nothing else is allowed beyond what Python needs.
    cell = Cell(packages=(), gpu=0, syscalls=SyscallPolicy(threads=True, unix_sockets=True))
    with Jailed(cell, walls) as jail:
        jail.write("inside.py", INSIDE)
        proc = jail.popen([jail.python, "-I", "-S", "-B", "inside.py", PTX], env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"})
        out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, (walls.describe(), out, err.decode(errors="replace")[-3000:])
    seen = json.loads(out.decode().strip().splitlines()[-1])
    assert seen["right"] and seen["count"] == 1 and "NVIDIA" in seen["name"], seen
    for path in ("/etc/passwd", "/root", "/work"):
        assert seen[path] != "readable", seen
    if walls.namespaces:  # its own /dev: the one GPU's node and the driver's, no other GPU's
        nodes = {d for d in seen["dev"] if d.startswith("nvidia")}
        assert "nvidia0" in nodes and not any(d[6:].isdigit() and d != "nvidia0" for d in nodes), seen["dev"]
