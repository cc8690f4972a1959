// Macros shared by host-only and CUDA translation units.
#pragma once

#if defined(__CUDACC__)
#define GPUSORT_HD __host__ __device__
#define GPUSORT_DEVICE __device__
#define GPUSORT_FORCEINLINE __forceinline__
#else
#define GPUSORT_HD
#define GPUSORT_DEVICE
#define GPUSORT_FORCEINLINE inline
#endif
