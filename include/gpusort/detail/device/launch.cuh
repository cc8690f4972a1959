// Launch helpers shared by the device algorithms.
#pragma once

#include <cuda_runtime.h>

namespace gpusort::detail::device {

// How many blocks of `kernel` fit on the device at once (a persistent grid); raises the
// kernel's dynamic shared-memory limit first when it needs more than the default 48 KiB.
template <class Kernel>
cudaError_t resident_blocks(Kernel kernel, int threads, int smem_bytes, unsigned& blocks) {
  int device = 0, sms = 0, per_sm = 0;
  cudaError_t e = cudaGetDevice(&device);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  if (e == cudaSuccess && smem_bytes > 48 * 1024)
    e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes);
  if (e == cudaSuccess)
    e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem_bytes);
  blocks = static_cast<unsigned>(sms * (per_sm > 0 ? per_sm : 1));
  return e;
}

}  // namespace gpusort::detail::device
