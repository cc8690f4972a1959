// Launch helpers shared by the device algorithms.
#pragma once

#include <array>
#include <compare>
#include <cstdint>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include <cuda_runtime.h>

#include "gpusort/detail/core/cuda_resources.hpp"

namespace gpusort::detail::device {

// What the runtime says about a kernel on a device, asked once per process: the occupancy
// query and the function attributes cost microseconds each, on calls (top_k of decoding rows)
// that take tens. A reset device (cudaDeviceReset) is not seen.
namespace launch_facts {
struct occupancy_key {
  const void* kernel;
  int device, threads, smem_bytes;
  auto operator<=>(const occupancy_key&) const = default;
};
struct kernel_key {
  const void* kernel;
  int device;
  auto operator<=>(const kernel_key&) const = default;
};
struct table {
  std::mutex lock;
  std::map<occupancy_key, unsigned> resident;   // blocks a persistent grid holds
  std::map<kernel_key, int> shared_limit;       // the dynamic shared memory raised to
  std::map<kernel_key, int> ptx_version;        // cudaFuncAttributes::ptxVersion
  std::map<int, int> major;                     // compute capability's major number
};
inline table& facts() {
  static table* made = new table;  // never destroyed: calls may come from threads at exit
  return *made;
}
}  // namespace launch_facts

// How many blocks of `kernel` fit on the device at once (a persistent grid); raises the
// kernel's dynamic shared-memory limit first when it needs more than the default 48 KiB
// (never lowers it: another launch of the kernel may need more).
template <class Kernel>
cudaError_t resident_blocks(Kernel kernel, int threads, int smem_bytes, unsigned& blocks) {
  int device = 0;
  cudaError_t e = cudaGetDevice(&device);
  if (e != cudaSuccess) return e;
  const auto* address = reinterpret_cast<const void*>(kernel);
  const launch_facts::occupancy_key key{address, device, threads, smem_bytes};
  launch_facts::table& facts = launch_facts::facts();
  const std::lock_guard<std::mutex> held(facts.lock);
  if (const auto known = facts.resident.find(key); known != facts.resident.end()) {
    blocks = known->second;
    return cudaSuccess;
  }
  int sms = 0, per_sm = 0;
  e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  int& limit = facts.shared_limit[{address, device}];
  if (e == cudaSuccess && smem_bytes > 48 * 1024 && smem_bytes > limit) {
    e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes);
    if (e == cudaSuccess) limit = smem_bytes;
  }
  if (e == cudaSuccess)
    e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem_bytes);
  blocks = static_cast<unsigned>(sms * (per_sm > 0 ? per_sm : 1));
  if (e == cudaSuccess) facts.resident[key] = blocks;
  return e;
}

// A persistent grid (as many blocks as fit on the device at once), no larger than `needed`.
template <class Kernel>
cudaError_t grid_for(Kernel kernel, int threads, int smem_bytes, std::uint64_t needed,
                     unsigned& blocks) {
  const cudaError_t e = resident_blocks(kernel, threads, smem_bytes, blocks);
  if (needed < blocks) blocks = static_cast<unsigned>(needed > 0 ? needed : 1);
  return e;
}

// Programmatic dependent launch (compute capability 9.0 and later): a kernel launched by
// launch_overlapping may start before the kernel ahead of it on the stream has finished (once
// every block of that one has called let_next_grid_start, or exited), and must call
// wait_for_previous_grid before it reads what that kernel wrote or writes what it reads; what
// earlier launches wrote it may read at once. Elsewhere (overlap false, older devices) it is
// an ordinary launch and the two calls do nothing.
__device__ __forceinline__ void wait_for_previous_grid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cudaGridDependencySynchronize();
#endif
}
__device__ __forceinline__ void let_next_grid_start() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cudaTriggerProgrammaticLaunchCompletion();
#endif
}
template <class... Params, class... Args>
cudaError_t launch_overlapping(bool overlap, void (*kernel)(Params...), dim3 grid, dim3 block,
                               cudaStream_t stream, Args&&... args) {
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.stream = stream;
  config.attrs = &attribute;
  config.numAttrs = overlap ? 1 : 0;
  return cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
}
// Whether `kernels` may be launched overlapping on the current device: it takes the overlap
// (9.0 or later), and each kernel's code was made for 9.0 or later, where its wait is real
// (code JIT-compiled from an older PTX has none: it must not start early).
template <class... Kernels>
cudaError_t overlapping_launches(bool& supported, Kernels... kernels) {
  int device = 0;
  cudaError_t e = cudaGetDevice(&device);
  supported = false;
  if (e != cudaSuccess) return e;
  launch_facts::table& facts = launch_facts::facts();
  const std::lock_guard<std::mutex> held(facts.lock);
  auto major = facts.major.find(device);
  if (major == facts.major.end()) {
    int value = 0;
    e = cudaDeviceGetAttribute(&value, cudaDevAttrComputeCapabilityMajor, device);
    if (e != cudaSuccess) return e;
    major = facts.major.emplace(device, value).first;
  }
  const auto made_for_9 = [&](auto kernel) {
    const launch_facts::kernel_key key{reinterpret_cast<const void*>(kernel), device};
    auto known = facts.ptx_version.find(key);
    if (known == facts.ptx_version.end()) {
      cudaFuncAttributes attributes{};
      if (e == cudaSuccess) e = cudaFuncGetAttributes(&attributes, kernel);
      if (e != cudaSuccess) return false;
      known = facts.ptx_version.emplace(key, attributes.ptxVersion).first;
    }
    return known->second >= 90;
  };
  supported = major->second >= 9 && (made_for_9(kernels) && ...);
  return e;
}

// Independent launches of one call on streams beside the caller's, so that they overlap:
// the constructor makes every side stream wait for what the caller's stream has queued,
// join() makes the caller's stream wait for every side stream. Event order is all it uses,
// so it also holds inside graph capture (the side work becomes branches of the captured
// graph). The streams and events belong to the calling thread and the current device,
// created on first use: a thread capturing a graph never shares them with another thread.
class fork_join {
 public:
  static constexpr int max_sides = 8;

  fork_join(cudaStream_t caller, int sides)
      : caller_(caller), sides_(sides < max_sides ? sides : max_sides) {
    int device = 0;
    status_ = cudaGetDevice(&device);
    if (status_ == cudaSuccess) set_ = &thread_sets().of(device, status_);
    if (status_ == cudaSuccess) status_ = cudaEventRecord(set_->forked.get(), caller_);
    for (int i = 0; i < sides_ && status_ == cudaSuccess; ++i)
      status_ = cudaStreamWaitEvent(set_->streams[i].get(), set_->forked.get(), 0);
  }
  fork_join(const fork_join&) = delete;
  fork_join& operator=(const fork_join&) = delete;

  cudaError_t status() const { return status_; }
  cudaStream_t side(int i) const { return set_->streams[i].get(); }

  // The caller's stream waits for the side streams; the first error of the whole call.
  cudaError_t join(cudaError_t launches) {
    for (int i = 0; i < sides_ && set_ && status_ == cudaSuccess; ++i) {
      status_ = cudaEventRecord(set_->joined[i].get(), set_->streams[i].get());
      if (status_ == cudaSuccess) status_ = cudaStreamWaitEvent(caller_, set_->joined[i].get(), 0);
    }
    return launches != cudaSuccess ? launches : status_;
  }

 private:
  struct stream_set {
    std::array<owned_stream, max_sides> streams;
    std::array<owned_event, max_sides> joined;
    owned_event forked;
  };
  struct thread_stream_sets {
    std::vector<stream_set> devices;
    stream_set& of(int device, cudaError_t& status) {
      if (devices.size() <= static_cast<std::size_t>(device)) devices.resize(device + 1);
      stream_set& set = devices[device];
      if (set.forked) return set;  // created last: the set is complete
      // What a failed call left uncreated is created by the next one. Creating streams and
      // events is no graph work: allowed even while this thread, or another one, captures.
      cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
      cudaThreadExchangeStreamCaptureMode(&mode);
      for (int i = 0; i < max_sides && status == cudaSuccess; ++i) {
        if (!set.streams[i]) status = create(set.streams[i]);
        if (status == cudaSuccess && !set.joined[i])
          status = create(set.joined[i], cudaEventDisableTiming);
      }
      if (status == cudaSuccess) status = create(set.forked, cudaEventDisableTiming);
      cudaThreadExchangeStreamCaptureMode(&mode);
      return set;
    }
  };
  static thread_stream_sets& thread_sets() {
    static thread_local thread_stream_sets sets;
    return sets;
  }

  cudaStream_t caller_;
  int sides_;
  cudaError_t status_ = cudaSuccess;
  stream_set* set_ = nullptr;
};

}  // namespace gpusort::detail::device
