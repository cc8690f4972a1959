// Host-side helpers of gpusort::dist (src/dist/): errors, device memory, the agreement step
// that makes a failure on one rank a failure on all, and event timing.
#pragma once

#include <barrier>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "gpusort/detail/core/cuda_resources.hpp"
#include "gpusort/detail/index_math/dist.hpp"
#include "gpusort/dist.hpp"

namespace gpusort::dist::detail {

using gpusort::detail::index_math::dist::exchange_plan;

// Ranks that are threads of this process: on one device (communicators_on_one_device), where
// they meet at a barrier and copy from each other's posted buffers; or each on its own GPU
// beside an NCCL communicator (communicators_for_devices, peer access between every pair:
// peer_group), where options::copy_engines moves the keys by copy engines. Then each rank has
// two events on its GPU, its receive buffers ready and its pushes sent, and opens its pool of
// device memory to the others at its first such exchange.
struct thread_group {
  explicit thread_group(int ranks) : meet(ranks), sends(ranks), lists(ranks) {}
  std::barrier<> meet;
  std::vector<const void*> sends;
  std::vector<const std::vector<struct transfer>*> lists;
  std::vector<int> devices;                                // peer groups: each rank's GPU
  std::vector<gpusort::detail::owned_event> ready, sent;   // peer groups: on each rank's GPU
  std::vector<char> pool_opened;                           // peer groups: by each rank
  std::vector<char> failed;  // peer groups: each rank's last exchange failed, seen by all
};

// The peer group of ranks on `devices` (one each, in rank order), or none where a pair lacks
// peer access or the events cannot be made.
std::shared_ptr<thread_group> peer_group(const std::vector<int>& devices);

void check_cuda(cudaError_t e, const std::string& what);
void check_nccl(ncclResult_t r, const std::string& what);
[[noreturn]] void throw_internal(const std::string& what);

// Device memory freed on a stream (or by its new owner after release()).
class device_memory {
 public:
  device_memory() = default;
  device_memory(std::size_t bytes, cudaStream_t stream, const std::string& what);
  device_memory(device_memory&& other) noexcept;
  device_memory& operator=(device_memory&& other) noexcept;
  device_memory(const device_memory&) = delete;
  device_memory& operator=(const device_memory&) = delete;
  ~device_memory() { reset(stream_); }

  void* get() const { return ptr_; }
  void* release();
  void reset(cudaStream_t stream);
  // cudaMallocAsync; the error (cleared) instead of an exception.
  cudaError_t allocate(std::size_t bytes, cudaStream_t stream);

 private:
  void* ptr_ = nullptr;
  cudaStream_t stream_ = nullptr;
};

template <class T>
void copy_async(T* to, const T* from, std::uint64_t count, cudaStream_t stream) {
  if (count == 0) return;
  check_cuda(cudaMemcpyAsync(to, from, sizeof(T) * count, cudaMemcpyDefault, stream),
             "gpusort::dist: copy");
}

template <class T>
void copy_to_host(T* to, const T* from, std::uint64_t count, cudaStream_t stream,
                  const std::string& call) {
  copy_async(to, from, count, stream);
  check_cuda(cudaStreamSynchronize(stream), call);
}

// Why a rank cannot go on; shared with the other ranks as one number.
enum class failure : std::uint32_t {
  none,
  keys,              // not device memory of the rank's GPU, null, misaligned
  values,
  oversampling,      // options::oversampling is 0 or above max_oversampling
  merge_fan_in,      // options::merge_fan_in is not 2 to mm::max_runs
  local_sort,        // the local sort's query failed
  local_workspace,   // no room for the local sort's workspace
  receive_buffers,   // no room for the received keys (and the merge's second buffer)
  slice,             // sort_spread: no room for the slice
  sub_buckets,       // options::sub_buckets is not 0 to math::max_sub_buckets
};
const char* describe(failure f);

class rank_status {
 public:
  bool ok() const { return why_ == failure::none; }
  void fail(failure why, cudaError_t code);
  // Checks a shard array: device memory on `device` (or managed), aligned, non-null.
  void check_array(const void* ptr, std::uint64_t count, std::size_t elem_bytes,
                   std::size_t alignment, int device, failure why);
  void try_allocate(device_memory& memory, std::size_t bytes, cudaStream_t stream, failure why);
  std::uint64_t encode() const { return (std::uint64_t{static_cast<std::uint32_t>(why_)} << 32) | code_; }
  static failure reason_of(std::uint64_t word) { return static_cast<failure>(word >> 32); }
  static cudaError_t code_of(std::uint64_t word) { return static_cast<cudaError_t>(word & 0xffffffffu); }

 private:
  failure why_ = failure::none;
  std::uint32_t code_ = 0;
};

// Collective: every rank's (n, status, signature). Throws on every rank, naming the first
// rank that failed, or that called with another signature (index_math/dist.hpp call_signature)
// than rank 0, and what became of the data (data_state); else returns every rank's n.
std::vector<std::uint64_t> agree(const communicator& comm, const rank_status& status,
                                 std::uint64_t n, std::uint64_t signature, cudaStream_t stream,
                                 const std::string& call, const char* data_state);

// The two collectives dist::sort needs, over NCCL or between threads on one device.
// all_gather: recv holds every rank's `bytes` bytes of send, in rank order.
void all_gather(const communicator& comm, const void* send, void* recv, std::size_t bytes,
                cudaStream_t stream, const std::string& what);
// One point-to-point transfer of a grouped exchange: every rank lists its transfers in the
// same order (per peer: keys, then values), and a send to a peer meets the receive that the
// peer lists at the same place.
struct transfer {
  int peer;
  const void* send;
  std::size_t send_bytes;
  void* recv;
  std::size_t recv_bytes;
};
// By NCCL; by device copies where the ranks are threads on one device; by copy engines where
// copy_engines asks and the ranks are a peer group.
void exchange(const communicator& comm, const std::vector<transfer>& transfers,
              cudaStream_t stream, const std::string& what, bool copy_engines = false);

// CUDA events at the phase boundaries of one call.
class event_timeline {
 public:
  event_timeline(cudaStream_t stream, int marks);
  event_timeline(const event_timeline&) = delete;
  event_timeline& operator=(const event_timeline&) = delete;
  void mark(int i);
  double ms(int from, int to) const;  // after the stream has finished

 private:
  cudaStream_t stream_;
  std::vector<gpusort::detail::owned_event> events_;
};

}  // namespace gpusort::dist::detail
