#include "dist_common.hpp"

#include <cstdint>
#include <mutex>
#include <utility>

#include "gpusort/detail/core/cuda_resources.hpp"

namespace gpusort::dist::detail {

void check_cuda(cudaError_t e, const std::string& what) {
  if (e == cudaSuccess) return;
  cudaGetLastError();
  throw gpusort::error(e, what);
}

void check_nccl(ncclResult_t r, const std::string& what) {
  if (r == ncclSuccess) return;
  // NCCL's own result code has no cudaError_t; the message carries it.
  throw gpusort::error(cudaErrorUnknown, what + ": NCCL: " + ncclGetErrorString(r) +
                                             (ncclGetLastError(nullptr)
                                                  ? std::string(" (") + ncclGetLastError(nullptr) + ")"
                                                  : std::string()));
}

void throw_internal(const std::string& what) {
  throw gpusort::error(cudaErrorUnknown, what + " (a bug in gpusort::dist; please report it)");
}

device_memory::device_memory(std::size_t bytes, cudaStream_t stream, const std::string& what) {
  check_cuda(allocate(bytes, stream), what + ": cannot allocate " + std::to_string(bytes) +
                                          " bytes of device memory");
}

device_memory::device_memory(device_memory&& other) noexcept
    : ptr_(std::exchange(other.ptr_, nullptr)), stream_(other.stream_) {}

device_memory& device_memory::operator=(device_memory&& other) noexcept {
  if (this != &other) {
    reset(stream_);
    ptr_ = std::exchange(other.ptr_, nullptr);
    stream_ = other.stream_;
  }
  return *this;
}

void* device_memory::release() { return std::exchange(ptr_, nullptr); }

void device_memory::reset(cudaStream_t stream) {
  if (ptr_) cudaFreeAsync(ptr_, stream);
  ptr_ = nullptr;
}

cudaError_t device_memory::allocate(std::size_t bytes, cudaStream_t stream) {
  reset(stream_);
  stream_ = stream;
  const cudaError_t e = allocate_from_pool(&ptr_, bytes, stream);
  if (e != cudaSuccess) ptr_ = nullptr;
  return e;
}

namespace {

constexpr int max_devices = 64;

// Each GPU's pool (made at its first use, never destroyed: allocations may outlive any call)
// and how many kept_memory objects are open on it.
struct call_pools {
  std::mutex lock;
  cudaMemPool_t pool[max_devices] = {};
  int open_scopes[max_devices] = {};
};

call_pools& pools() {
  static call_pools* made = new call_pools;  // never destroyed: frees may come at exit
  return *made;
}

// The device's pool; the caller holds pools().lock.
cudaError_t pool_of(int device, cudaMemPool_t& pool) {
  if (device < 0 || device >= max_devices) return cudaErrorInvalidDevice;
  cudaMemPool_t& slot = pools().pool[device];
  if (!slot) {
    const cudaError_t e = gpusort::detail::create_device_pool(device, 0, slot);
    if (e != cudaSuccess) return e;
  }
  pool = slot;
  return cudaSuccess;
}

// Gives the other devices of `devices` access to gpusort's pool on `device`: its allocations
// are otherwise this device's alone, whatever peer access says.
cudaError_t open_pool_to(int device, const std::vector<int>& devices) {
  const std::lock_guard<std::mutex> held(pools().lock);
  cudaMemPool_t pool = nullptr;
  if (const cudaError_t e = pool_of(device, pool); e != cudaSuccess) return e;
  std::vector<cudaMemAccessDesc> access;
  for (const int d : devices)
    if (d != device)
      access.push_back({{cudaMemLocationTypeDevice, d}, cudaMemAccessFlagsProtReadWrite});
  return access.empty() ? cudaSuccess
                        : cudaMemPoolSetAccess(pool, access.data(), access.size());
}

cudaError_t set_release_threshold(cudaMemPool_t pool, std::uint64_t bytes) {
  return cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &bytes);
}

}  // namespace

}  // namespace gpusort::dist::detail

namespace gpusort::dist {

kept_memory::kept_memory(int device) {
  const std::lock_guard<std::mutex> held(detail::pools().lock);
  cudaMemPool_t pool = nullptr;
  if (detail::pool_of(device, pool) != cudaSuccess) {
    cudaGetLastError();
    return;  // allocations then fail with the error, where they can report it
  }
  device_ = device;
  if (detail::pools().open_scopes[device]++ == 0 &&
      detail::set_release_threshold(pool, UINT64_MAX) != cudaSuccess)
    cudaGetLastError();
}

kept_memory::~kept_memory() {
  if (device_ < 0) return;
  const std::lock_guard<std::mutex> held(detail::pools().lock);
  if (--detail::pools().open_scopes[device_] > 0) return;
  cudaMemPool_t pool = detail::pools().pool[device_];
  if (detail::set_release_threshold(pool, 0) != cudaSuccess ||
      cudaMemPoolTrimTo(pool, 0) != cudaSuccess)
    cudaGetLastError();
}

}  // namespace gpusort::dist

namespace gpusort::dist::detail {

cudaError_t allocate_from_pool(void** out, std::size_t bytes, cudaStream_t stream) {
  *out = nullptr;
  int device = -1;
  cudaMemPool_t pool = nullptr;
  cudaError_t e = cudaGetDevice(&device);
  if (e == cudaSuccess) {
    const std::lock_guard<std::mutex> held(pools().lock);
    e = pool_of(device, pool);
  }
  if (e == cudaSuccess) e = cudaMallocFromPoolAsync(out, bytes, pool, stream);
  if (e == cudaErrorMemoryAllocation) {
    // What the pool keeps for reuse may be the memory missing: give it back, then once more.
    cudaGetLastError();
    if (cudaStreamSynchronize(stream) == cudaSuccess && cudaMemPoolTrimTo(pool, 0) == cudaSuccess)
      e = cudaMallocFromPoolAsync(out, bytes, pool, stream);
  }
  if (e != cudaSuccess) {
    cudaGetLastError();
    *out = nullptr;
  }
  return e;
}

std::uint64_t pool_reserved_bytes(int device) {
  const std::lock_guard<std::mutex> held(pools().lock);
  if (device < 0 || device >= max_devices || !pools().pool[device]) return 0;
  std::uint64_t bytes = 0;
  if (cudaMemPoolGetAttribute(pools().pool[device], cudaMemPoolAttrReservedMemCurrent, &bytes) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return bytes;
}

const char* describe(failure f) {
  switch (f) {
    case failure::none: return "no failure";
    case failure::keys: return "its keys are not an aligned array in the device memory of its GPU";
    case failure::values: return "its values are not an aligned array in the device memory of its GPU";
    case failure::oversampling: return "options::oversampling is 0 or above 2^24";
    case failure::merge_fan_in: return "options::merge_fan_in is not from 2 to 8";
    case failure::local_sort: return "the local sort refused the shard";
    case failure::local_workspace: return "no device memory for the local sort's workspace";
    case failure::receive_buffers: return "no device memory for the keys it would receive";
    case failure::slice: return "no device memory for its slice of the keys";
    case failure::sub_buckets: return "options::sub_buckets is not from 0 to 8";
  }
  return "unknown failure";
}

void rank_status::fail(failure why, cudaError_t code) {
  if (!ok()) return;  // the first failure is the one reported
  why_ = why;
  code_ = static_cast<std::uint32_t>(code);
}

void rank_status::check_array(const void* ptr, std::uint64_t count, std::size_t elem_bytes,
                              std::size_t alignment, int device, failure why) {
  cudaError_t e = gpusort::detail::validate_device_array(ptr, count, elem_bytes, alignment);
  if (e == cudaSuccess && count > 0) {
    cudaPointerAttributes attr{};
    e = cudaPointerGetAttributes(&attr, ptr);
    if (e == cudaSuccess && attr.type == cudaMemoryTypeDevice && attr.device != device)
      e = cudaErrorInvalidDevice;
  }
  if (e != cudaSuccess) {
    cudaGetLastError();
    fail(why, e);
  }
}

void rank_status::try_allocate(device_memory& memory, std::size_t bytes, cudaStream_t stream,
                               failure why) {
  const cudaError_t e = memory.allocate(bytes, stream);
  if (e != cudaSuccess) fail(why, e);
}

std::vector<std::uint64_t> agree(const communicator& comm, const rank_status& status,
                                 std::uint64_t n, std::uint64_t signature, cudaStream_t stream,
                                 const std::string& call, const char* data_state) {
  namespace math = gpusort::detail::index_math::dist;
  constexpr int words = 3;  // n, status, signature
  const int p = comm.size();
  device_memory buffer(sizeof(std::uint64_t) * words * (p + 1), stream, call);
  auto* mine = static_cast<std::uint64_t*>(buffer.get());
  const std::uint64_t local[words] = {n, status.encode(), signature};
  copy_async(mine, local, words, stream);
  all_gather(comm, mine, mine + words, words * sizeof(std::uint64_t), stream,
             call + ": agreeing on the sizes");
  std::vector<std::uint64_t> all(words * static_cast<std::size_t>(p));
  copy_to_host(all.data(), mine + words, all.size(), stream, call);
  std::vector<std::uint64_t> sizes(p), signatures(p);
  for (int q = 0; q < p; ++q) {
    sizes[q] = all[words * q];
    signatures[q] = all[words * q + 2];
    const std::uint64_t word = all[words * q + 1];
    if (rank_status::reason_of(word) != failure::none)
      throw gpusort::error(rank_status::code_of(word),
                           call + ": rank " + std::to_string(q) + " cannot go on: " +
                               describe(rank_status::reason_of(word)) + "; " +
                               data_state);
  }
  if (const int q = math::first_disagreeing(signatures); q >= 0)
    throw gpusort::error(cudaErrorInvalidValue,
                         call + ": rank " + std::to_string(q) + " differs from rank 0 in " +
                             math::signature_difference(signatures[0], signatures[q]) + "; " +
                             data_state);
  return sizes;
}

std::shared_ptr<thread_group> peer_group(const std::vector<int>& devices) {
  const int ranks = static_cast<int>(devices.size());
  int current = 0;
  if (ranks < 2 || cudaGetDevice(&current) != cudaSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  auto g = std::make_shared<thread_group>(ranks);
  g->devices = devices;
  g->ready.resize(ranks);
  g->sent.resize(ranks);
  g->pool_opened.assign(ranks, 0);
  g->failed.assign(ranks, 0);
  bool ok = true;
  for (int r = 0; r < ranks && ok; ++r) {
    ok = cudaSetDevice(devices[r]) == cudaSuccess;
    for (int q = 0; q < ranks && ok; ++q) {
      int can = 0;
      if (q == r) continue;
      ok = cudaDeviceCanAccessPeer(&can, devices[r], devices[q]) == cudaSuccess && can;
      if (!ok) break;
      const cudaError_t e = cudaDeviceEnablePeerAccess(devices[q], 0);
      ok = e == cudaSuccess || e == cudaErrorPeerAccessAlreadyEnabled;
    }
    ok = ok && gpusort::detail::create(g->ready[r], cudaEventDisableTiming) == cudaSuccess &&
         gpusort::detail::create(g->sent[r], cudaEventDisableTiming) == cudaSuccess;
  }
  cudaGetLastError();  // an access already enabled, or the failure that ends the group
  cudaSetDevice(current);
  return ok ? g : nullptr;
}

void all_gather(const communicator& comm, const void* send, void* recv, std::size_t bytes,
                cudaStream_t stream, const std::string& what) {
  if (comm.get()) {
    check_nccl(ncclAllGather(send, recv, bytes, ncclUint8, comm.get(), stream), what);
    return;
  }
  thread_group& g = *comm.group();
  check_cuda(cudaStreamSynchronize(stream), what);  // send is ready before others read it
  g.sends[comm.rank()] = send;
  g.meet.arrive_and_wait();
  for (int q = 0; q < comm.size(); ++q)
    if (bytes > 0)
      check_cuda(cudaMemcpyAsync(static_cast<char*>(recv) + q * bytes, g.sends[q], bytes,
                                 cudaMemcpyDefault, stream), what);
  check_cuda(cudaStreamSynchronize(stream), what);
  g.meet.arrive_and_wait();  // nobody reuses its send buffer before all have read it
}

namespace {

// The k-th transfer of `list` with rank `rank`, or null.
const transfer* kth_with(const std::vector<transfer>& list, int rank, int k) {
  for (const transfer& u : list)
    if (u.peer == rank && k-- == 0) return &u;
  return nullptr;
}

// A peer group's exchange: each rank pushes its parts into the receivers' buffers by its
// GPU's copy engines, its stream first waiting for theirs to have made the buffers; each
// receiver's stream then waits for its senders' pushes. The threads meet four times and no
// stream is synchronized; a failure on any rank is thrown by every rank once all are past the
// last meeting, so none is left waiting in this exchange or a later collective.
void exchange_by_copy_engines(const communicator& comm, thread_group& g,
                              const std::vector<transfer>& transfers, cudaStream_t stream,
                              const std::string& what) {
  const int self = comm.rank();
  cudaError_t failed = cudaSuccess;
  std::string why, mismatch;
  const auto note = [&](cudaError_t e, const std::string& step) {
    if (e == cudaSuccess) return;
    cudaGetLastError();
    if (failed == cudaSuccess) failed = e, why = step;
  };
  if (!g.pool_opened[self]) {  // the receive buffers come from gpusort's pool on this GPU
    note(open_pool_to(comm.device(), g.devices), "opening the pool to the peers");
    g.pool_opened[self] = 1;
  }
  note(cudaEventRecord(g.ready[self].get(), stream), "cudaEventRecord");
  g.lists[self] = &transfers;
  g.meet.arrive_and_wait();
  std::vector<int> seen(comm.size(), 0);  // transfers met so far, per peer
  for (const transfer& t : transfers) {
    const transfer* u = kth_with(*g.lists[t.peer], self, seen[t.peer]++);
    if (!u || u->recv_bytes != t.send_bytes) {
      if (mismatch.empty())
        mismatch = "rank " + std::to_string(t.peer) + " expects another size from rank " +
                   std::to_string(self);
      continue;
    }
    if (t.send_bytes == 0) continue;
    note(cudaStreamWaitEvent(stream, g.ready[t.peer].get()), "cudaStreamWaitEvent");
    note(cudaMemcpyPeerAsync(u->recv, g.devices[t.peer], t.send, comm.device(), t.send_bytes,
                             stream),
         "cudaMemcpyPeerAsync");
  }
  note(cudaEventRecord(g.sent[self].get(), stream), "cudaEventRecord");
  g.meet.arrive_and_wait();
  for (int q = 0; q < comm.size(); ++q)
    if (q != self && kth_with(*g.lists[q], self, 0))
      note(cudaStreamWaitEvent(stream, g.sent[q].get()), "cudaStreamWaitEvent");
  g.failed[self] = failed != cudaSuccess || !mismatch.empty();
  g.meet.arrive_and_wait();  // every wait queued before any rank records its events again
  int first_failed = -1;
  for (int q = 0; q < comm.size() && first_failed < 0; ++q)
    if (g.failed[q]) first_failed = q;
  g.meet.arrive_and_wait();  // every rank has read the flags before the next exchange sets them
  if (!mismatch.empty()) throw_internal(what + ": " + mismatch);
  if (failed != cudaSuccess) throw gpusort::error(failed, what + ": " + why);
  if (first_failed >= 0)
    throw gpusort::error(cudaErrorUnknown, what + ": rank " + std::to_string(first_failed) +
                                               " could not exchange by copy engines");
}

}  // namespace

void exchange(const communicator& comm, const std::vector<transfer>& transfers,
              cudaStream_t stream, const std::string& what, bool copy_engines) {
  if (comm.get() && copy_engines && comm.group())
    return exchange_by_copy_engines(comm, *comm.group(), transfers, stream, what);
  if (comm.get()) {
    check_nccl(ncclGroupStart(), what);
    for (const transfer& t : transfers) {
      if (t.send_bytes > 0)
        check_nccl(ncclSend(t.send, t.send_bytes, ncclUint8, t.peer, comm.get(), stream), what);
      if (t.recv_bytes > 0)
        check_nccl(ncclRecv(t.recv, t.recv_bytes, ncclUint8, t.peer, comm.get(), stream), what);
    }
    check_nccl(ncclGroupEnd(), what);
    return;
  }
  thread_group& g = *comm.group();
  check_cuda(cudaStreamSynchronize(stream), what);
  g.lists[comm.rank()] = &transfers;
  g.meet.arrive_and_wait();
  std::vector<int> seen(comm.size(), 0);  // transfers met so far, per peer
  for (const transfer& t : transfers) {
    const transfer* u = kth_with(*g.lists[t.peer], comm.rank(), seen[t.peer]++);
    if (!u) continue;
    if (u->send_bytes != t.recv_bytes)
      throw_internal(what + ": rank " + std::to_string(t.peer) + " sends " +
                     std::to_string(u->send_bytes) + " bytes, rank " +
                     std::to_string(comm.rank()) + " expects " + std::to_string(t.recv_bytes));
    if (t.recv_bytes > 0)
      check_cuda(cudaMemcpyAsync(t.recv, u->send, t.recv_bytes, cudaMemcpyDefault, stream), what);
  }
  check_cuda(cudaStreamSynchronize(stream), what);
  g.meet.arrive_and_wait();
}

event_timeline::event_timeline(cudaStream_t stream, int marks) : stream_(stream), events_(marks) {
  for (auto& e : events_) check_cuda(gpusort::detail::create(e), "gpusort::dist: cudaEventCreate");
}

void event_timeline::mark(int i) {
  check_cuda(cudaEventRecord(events_[i].get(), stream_), "gpusort::dist: cudaEventRecord");
}

double event_timeline::ms(int from, int to) const {
  float ms = 0;
  check_cuda(cudaEventElapsedTime(&ms, events_[from].get(), events_[to].get()),
             "gpusort::dist: timing");
  return ms;
}

}  // namespace gpusort::dist::detail
