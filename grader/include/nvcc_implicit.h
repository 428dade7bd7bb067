/* kernel-grader: what nvcc gives every .cu file without an #include. nvcc includes cuda_runtime.h on
   its own, which brings the macros of a host <math.h> (INFINITY, NAN, M_PI, ...) and <limits.h>
   (INT_MAX, UINT_MAX, ...); kernels written for nvcc use them bare. NVRTC includes nothing, so the
   grader pre-includes this file in every compile. (<float.h>'s FLT_MAX is not among them: nvcc
   refuses it without the include too.) */
#pragma once
#include <math.h>
#include <limits.h>
