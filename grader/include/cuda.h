/* kernel-grader: nvcc includes the CUDA runtime headers in every .cu file on its own; under NVRTC the
   device built-ins (threadIdx, __syncthreads, atomics, math, vector types) are always there, and
   the host API has no use in a kernel. The header exists so that a kernel written for nvcc
   compiles unchanged. */
#pragma once
