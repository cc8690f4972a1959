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

// `#pragma unroll` for the loop that follows, in device code only (host compilers warn of a
// pragma they do not know).
#if defined(__CUDA_ARCH__)
#define GPUSORT_UNROLL _Pragma("unroll")
#else
#define GPUSORT_UNROLL
#endif
