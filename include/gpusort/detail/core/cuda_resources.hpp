// Owners of CUDA resources: device, managed and pinned memory, streams and events, each
// released once, by its owner's destructor, in reverse order of creation. Creating one
// returns the cudaError_t (the core never throws); the layers that throw check it themselves.
// Destructors ignore errors: at exit the runtime may be gone already.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>

#include <cuda_runtime_api.h>

namespace gpusort::detail {

struct device_free {
  void operator()(void* p) const noexcept { cudaFree(p); }
};
struct pinned_free {
  void operator()(void* p) const noexcept { cudaFreeHost(p); }
};
struct stream_destroy {
  void operator()(cudaStream_t s) const noexcept { cudaStreamDestroy(s); }
};
struct event_destroy {
  void operator()(cudaEvent_t e) const noexcept { cudaEventDestroy(e); }
};

// Device (or managed) memory and pinned host memory of `count` T.
template <class T>
using device_array = std::unique_ptr<T[], device_free>;
template <class T>
using pinned_array = std::unique_ptr<T[], pinned_free>;
using owned_stream = std::unique_ptr<CUstream_st, stream_destroy>;
using owned_event = std::unique_ptr<CUevent_st, event_destroy>;

enum class memory_kind { device, managed };

// A stream-ordered memory pool of device memory on `device` (freed with cudaFreeAsync like any
// other), holding up to `keep` bytes it has mapped between synchronizations (0, the default
// pool's choice: everything unused goes back at each; UINT64_MAX: nothing does).
inline cudaError_t create_device_pool(int device, std::uint64_t keep, cudaMemPool_t& pool) {
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device;
  cudaMemPool_t created = nullptr;
  cudaError_t e = cudaMemPoolCreate(&created, &props);
  if (e != cudaSuccess) return e;
  e = cudaMemPoolSetAttribute(created, cudaMemPoolAttrReleaseThreshold, &keep);
  if (e != cudaSuccess) {
    cudaMemPoolDestroy(created);
    return e;
  }
  pool = created;
  return cudaSuccess;
}

// At least one element, so that an empty array is still a valid, distinct pointer.
template <class T>
cudaError_t allocate(device_array<T>& out, std::size_t count,
                     memory_kind kind = memory_kind::device) {
  T* p = nullptr;
  const std::size_t bytes = sizeof(T) * std::max<std::size_t>(count, 1);
  const cudaError_t e = kind == memory_kind::managed ? cudaMallocManaged(&p, bytes)
                                                     : cudaMalloc(&p, bytes);
  out.reset(e == cudaSuccess ? p : nullptr);
  return e;
}

template <class T>
cudaError_t allocate(pinned_array<T>& out, std::size_t count) {
  T* p = nullptr;
  const cudaError_t e = cudaMallocHost(&p, sizeof(T) * std::max<std::size_t>(count, 1));
  out.reset(e == cudaSuccess ? p : nullptr);
  return e;
}

inline cudaError_t create(owned_stream& out, unsigned flags = cudaStreamNonBlocking) {
  cudaStream_t s = nullptr;
  const cudaError_t e = cudaStreamCreateWithFlags(&s, flags);
  out.reset(e == cudaSuccess ? s : nullptr);
  return e;
}

// A non-blocking stream of the device's highest priority: where kernels of two streams share
// the SMs, the block scheduler starts this one's blocks first (dist's exchange beside a sort).
inline cudaError_t create_urgent(owned_stream& out) {
  int least = 0, greatest = 0;
  cudaError_t e = cudaDeviceGetStreamPriorityRange(&least, &greatest);
  cudaStream_t s = nullptr;
  if (e == cudaSuccess) e = cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, greatest);
  out.reset(e == cudaSuccess ? s : nullptr);
  return e;
}

inline cudaError_t create(owned_event& out, unsigned flags = cudaEventDefault) {
  cudaEvent_t ev = nullptr;
  const cudaError_t e = cudaEventCreateWithFlags(&ev, flags);
  out.reset(e == cudaSuccess ? ev : nullptr);
  return e;
}

// Device time of the work queued on a stream between start() and seconds().
class stream_timer {
 public:
  cudaError_t init() {
    cudaError_t e = create(start_);
    if (e == cudaSuccess) e = create(end_);
    return e;
  }
  cudaError_t start(cudaStream_t stream) { return cudaEventRecord(start_.get(), stream); }
  // Waits for the stream to reach this point; the seconds since start().
  cudaError_t seconds(cudaStream_t stream, double& out) {
    float ms = 0;
    cudaError_t e = cudaEventRecord(end_.get(), stream);
    if (e == cudaSuccess) e = cudaEventSynchronize(end_.get());
    if (e == cudaSuccess) e = cudaEventElapsedTime(&ms, start_.get(), end_.get());
    out = ms / 1e3;
    return e;
  }

 private:
  owned_event start_, end_;
};

}  // namespace gpusort::detail
