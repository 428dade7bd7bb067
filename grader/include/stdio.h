/* kernel-grader: stdio for device code. NVRTC declares printf itself, so nothing is needed here;
   the header exists so that a kernel written for nvcc compiles unchanged. */
#pragma once
