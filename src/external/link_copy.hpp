// Moving bytes between host memory and a GPU at the speed of its PCIe link (issue 71).
//
// Pinned host memory (cudaHostAlloc'd, or registered) goes straight over the link. Pageable
// memory cannot: the copy engine reads and writes only pinned pages, and the driver's own
// staging for cudaMemcpy of pageable memory moves 4.5-7 GB/s on H200 hosts. So pageable bytes
// are staged through pinned slots by several host threads at once: each thread owns a stream
// and two slots, and takes every `threads`-th chunk, filling one slot while the other is on
// the link. A host thread copies about 8-10 GB/s, the link 50 GB/s each way: it takes several.
// Or the caller registers its pageable memory (host_registration: cudaHostRegister) for the
// call, and it is then copied straight.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace gpusort::detail::external {

// A CUDA failure of the host-array layer (a copy, an allocation, the sort): gpusort::error with
// the CUDA error's code, as the library's own.
void cuda_check(cudaError_t e, const std::string& what);

// Chunk c of a copy of `bytes` in chunks of `chunk_bytes`: [offset, offset + size).
struct link_chunk {
  std::uint64_t offset = 0, size = 0;
};

constexpr std::uint64_t link_chunk_count(std::uint64_t bytes, std::uint64_t chunk_bytes) {
  return chunk_bytes == 0 ? 0 : (bytes + chunk_bytes - 1) / chunk_bytes;
}

constexpr link_chunk nth_link_chunk(std::uint64_t bytes, std::uint64_t chunk_bytes,
                                    std::uint64_t c) {
  const std::uint64_t offset = c * chunk_bytes;
  if (offset >= bytes) return {bytes, 0};
  return {offset, bytes - offset < chunk_bytes ? bytes - offset : chunk_bytes};
}

// How many of thread t's chunks there are when `threads` threads take chunks t, t + threads,
// t + 2 threads ... of `chunks`.
constexpr std::uint64_t chunks_of_thread(std::uint64_t chunks, std::uint64_t threads,
                                         std::uint64_t t) {
  return t >= chunks || threads == 0 ? 0 : (chunks - t + threads - 1) / threads;
}

// Staging threads for one GPU's link when `gpus` links share `cores` cores: enough to fill
// the link (8 measure above it on H200 hosts), never more than the cores give each GPU, at
// least 2 (one fills a slot while another's copy runs).
constexpr unsigned link_threads(unsigned cores, unsigned gpus) {
  const unsigned share = gpus == 0 ? cores : cores / gpus;
  return share < 2 ? 2 : (share > 8 ? 8 : share);
}

inline constexpr std::uint64_t default_link_chunk_bytes = std::uint64_t{8} << 20;
inline constexpr std::uint64_t smallest_link_chunk_bytes = std::uint64_t{64} << 10;
// Below this, pageable memory goes through the driver's own staging (a plain cudaMemcpy): as
// fast for so few bytes, with no slots to pin and no threads to start.
inline constexpr std::uint64_t staged_min_bytes = std::uint64_t{4} << 20;

// The chunk for copies of up to `bytes` over `threads` threads: default_link_chunk_bytes, less
// for a small array (a chunk a thread, in 64 KiB steps), which then pins no more slots than it
// needs (8 threads' slots of 8 MiB are 128 MiB).
constexpr std::uint64_t link_chunk_bytes_for(std::uint64_t bytes, unsigned threads) {
  const std::uint64_t share = (bytes + (threads == 0 ? 1 : threads) - 1) / (threads == 0 ? 1 : threads);
  const std::uint64_t steps = (share + smallest_link_chunk_bytes - 1) / smallest_link_chunk_bytes;
  const std::uint64_t chunk = (steps == 0 ? 1 : steps) * smallest_link_chunk_bytes;
  return chunk < default_link_chunk_bytes ? chunk : default_link_chunk_bytes;
}

// memcpy's bytes with stores that bypass the caches where the CPU has them (x86's streaming
// stores; elsewhere memcpy): a staging copy writes each byte once and reads none of it back, so
// an ordinary store's read of the line first (its read for ownership) is a third stream of
// memory traffic. 8 MiB chunks on a 2-core x86 host: 7.8-8.4 GB/s against memcpy's 5.7 on one
// thread, 14.0-15.2 against 11.2-11.6 on two. The bytes are in memory, not in the caches,
// when it returns.
void stream_copy(void* to, const void* from, std::size_t bytes);

// What a copy did: its wall seconds, and whether the host memory was pinned (copied straight)
// rather than staged.
struct link_report {
  double seconds = 0;
  bool straight = false;
};

// Copies between host memory and device memory on one GPU, reusing its pinned slots and
// streams from call to call. Calls run on the calling thread (plus the staging threads it
// starts); the GPU need not be the calling thread's current one. Throws io_failure naming the
// CUDA error.
class link_copier {
 public:
  // Pageable copies of fewer than staged_from bytes go through the driver's staging.
  link_copier(int device, unsigned threads = 0,
              std::uint64_t chunk_bytes = default_link_chunk_bytes,
              std::uint64_t staged_from = staged_min_bytes);
  ~link_copier();
  link_copier(const link_copier&) = delete;
  link_copier& operator=(const link_copier&) = delete;

  link_report to_device(void* device_to, const void* host_from, std::uint64_t bytes);
  link_report to_host(void* host_to, const void* device_from, std::uint64_t bytes);

  // The host side of a staged copy, called on the staging threads at once for disjoint
  // ranges: fills `slot` with bytes [offset, offset + size) of the source (to the device), or
  // takes them from it (to the host). Its exception ends the copy and is rethrown. The chunks
  // are whole multiples of the chunk size but the last, so records of a size dividing it are
  // never split.
  using host_bytes = std::function<void(std::uint64_t offset, unsigned char* slot, std::uint64_t size)>;
  // `bytes` to or from device memory staged through the slots whatever their size, the host
  // side given by a function (a file read or written in place, a conversion) instead of an
  // array.
  link_report to_device_through(void* device_to, std::uint64_t bytes, const host_bytes& fill);
  link_report to_host_through(const void* device_from, std::uint64_t bytes, const host_bytes& drain);
  std::uint64_t chunk_bytes() const { return chunk_bytes_; }

  int device() const { return device_; }
  unsigned threads() const { return threads_; }

 private:
  struct lane;  // a staging thread's stream, slots and events
  link_report copy(void* to, const void* from, std::uint64_t bytes, bool to_device);
  void straight(void* to, const void* from, std::uint64_t bytes, bool to_device);
  void staged(unsigned char* device_bytes, std::uint64_t bytes, bool to_device,
              const host_bytes& host_side);
  int device_;
  unsigned threads_;
  std::uint64_t chunk_bytes_;
  std::uint64_t staged_from_;
  lane* lanes_ = nullptr;  // threads_ of them, made on first staged use
};

// Whether [p, p + bytes) is pinned host memory that the copy engines can reach directly.
bool is_pinned_host_memory(const void* p, std::uint64_t bytes);

// Host memory pinned (cudaHostRegister, portable: every GPU copies it straight) for the
// object's life. gpusort::error when the driver refuses.
class host_registration {
 public:
  host_registration(void* p, std::uint64_t bytes);
  ~host_registration();
  host_registration(const host_registration&) = delete;
  host_registration& operator=(const host_registration&) = delete;

 private:
  void* p_;
};

// The part of [address, address + bytes) made of whole pages of `page` bytes: offsets
// [begin, end) from address; begin == end where no whole page fits. The partial pages at the
// ends may be shared with other memory (pinned already, say), so they are never pinned.
struct page_span {
  std::uint64_t begin = 0, end = 0;
};
constexpr page_span whole_pages(std::uint64_t address, std::uint64_t bytes, std::uint64_t page) {
  const std::uint64_t first = (address + page - 1) / page * page;
  const std::uint64_t last = (address + bytes) / page * page;
  if (page == 0 || first >= last || first - address >= bytes) return {0, 0};
  return {first - address, last - address};
}

inline constexpr std::uint64_t default_pin_piece_bytes = std::uint64_t{64} << 20;

// A pageable array pinned piece by piece as it is copied to the device: several threads each
// pin a piece of whole pages (cudaHostRegister) and queue its copy at once, so that pinning
// overlaps the copies instead of preceding them. The pieces stay pinned for the copy back
// (straight, no staging) and are unpinned, again on several threads, when the object goes. The
// partial pages at the ends, and a piece the driver refuses to pin, go through the driver's
// own staging. Throws gpusort::error on a failed copy.
class pinned_pieces {
 public:
  pinned_pieces(void* host, std::uint64_t bytes, unsigned threads,
                std::uint64_t piece_bytes = default_pin_piece_bytes);
  ~pinned_pieces();
  pinned_pieces(const pinned_pieces&) = delete;
  pinned_pieces& operator=(const pinned_pieces&) = delete;

  // The whole array to device_to on `device`, pinning as it goes; the wall seconds.
  double to_device(int device, void* device_to);
  // The whole array back from device_from; the wall seconds.
  double to_host(int device, const void* device_from);
  // Unpins every piece now (else the destructor does); the wall seconds.
  double unpin() noexcept;
  std::uint64_t pinned_bytes() const;

 private:
  template <class Work>
  void on_threads(int device, Work&& work);
  double copy(int device, unsigned char* device_bytes, bool to_device);
  unsigned char* host_;
  std::uint64_t bytes_;
  unsigned threads_;
  std::uint64_t piece_bytes_;
  page_span pages_;
  std::vector<unsigned char> pinned_;  // per piece: 1 once registered
};

// The bare link rate: seconds of a pinned cudaMemcpy of `bytes` each way on `device`, for the
// benchmarks' "link" columns.
struct link_rate {
  double to_device_seconds = 0, to_host_seconds = 0;
};
link_rate measure_link(int device, std::uint64_t bytes);

}  // namespace gpusort::detail::external
