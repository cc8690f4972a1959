// link_copier (link_copy.hpp): staged and straight copies between host memory and one GPU.
#include "link_copy.hpp"

#include <cuda_runtime.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(_M_X64)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gpusort/detail/core/cuda_resources.hpp"
#include "gpusort/detail/core/entry.hpp"  // throw_error
#include "gpusort/error.hpp"
#include "concurrency.hpp"
#include "gpu_pipeline.hpp"  // device_scope, impl::cuda_check
#include "stats.hpp"         // stage_clock

namespace gpusort::detail::external {

void cuda_check(cudaError_t e, const std::string& what) {
  if (e != cudaSuccess) {
    cudaGetLastError();
    gpusort::detail::throw_error(e, what);
  }
}

struct link_copier::lane {
  owned_stream stream;
  std::array<pinned_array<unsigned char>, 2> slots;
  std::array<owned_event, 2> done;
};

link_copier::link_copier(int device, unsigned threads, std::uint64_t chunk_bytes,
                         std::uint64_t staged_from)
    : device_(device),
      threads_(threads > 0 ? threads : link_threads(std::max(1u, std::thread::hardware_concurrency()), 1)),
      chunk_bytes_(std::max<std::uint64_t>(chunk_bytes, 4096)),
      staged_from_(staged_from) {}

link_copier::~link_copier() {
  if (!lanes_) return;
  int previous = 0;
  const bool entered = cudaGetDevice(&previous) == cudaSuccess && cudaSetDevice(device_) == cudaSuccess;
  for (unsigned t = 0; t < threads_; ++t)
    if (lanes_[t].stream) cudaStreamSynchronize(lanes_[t].stream.get());
  delete[] lanes_;
  if (entered) cudaSetDevice(previous);
}

bool is_pinned_host_memory(const void* p, std::uint64_t bytes) {
  if (bytes == 0) return false;
  const auto pinned = [](const void* at) {
    cudaPointerAttributes a{};
    const bool yes = cudaPointerGetAttributes(&a, at) == cudaSuccess && a.type == cudaMemoryTypeHost;
    cudaGetLastError();  // pageable memory may leave an error behind on older drivers
    return yes;
  };
  // Both ends: an array that starts in a pinned buffer but runs past it is pageable.
  return pinned(p) && pinned(static_cast<const unsigned char*>(p) + bytes - 1);
}

host_registration::host_registration(void* p, std::uint64_t bytes) : p_(p) {
  cuda_check(cudaHostRegister(p, bytes, cudaHostRegisterPortable),
             "cannot pin (cudaHostRegister) the host array");
}

host_registration::~host_registration() { cudaHostUnregister(p_); }

void stream_copy(void* to, const void* from, std::size_t bytes) {
#if defined(__x86_64__) || defined(_M_X64)
  auto* out = static_cast<unsigned char*>(to);
  const auto* in = static_cast<const unsigned char*>(from);
  // Up to the first 16-byte boundary of the target as memcpy does it, then 64 bytes a step.
  const std::size_t head = std::min<std::size_t>(bytes, (16 - reinterpret_cast<std::uintptr_t>(out) % 16) % 16);
  std::memcpy(out, in, head);
  std::size_t at = head;
  for (; bytes - at >= 64; at += 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + at));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + at + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + at + 32));
    const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + at + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(out + at), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(out + at + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(out + at + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(out + at + 48), d);
  }
  _mm_sfence();  // the streamed stores before anything the caller does next (a DMA, a flag)
  std::memcpy(out + at, in + at, bytes - at);
#else
  std::memcpy(to, from, bytes);
#endif
}

link_report link_copier::to_device(void* device_to, const void* host_from, std::uint64_t bytes) {
  return copy(device_to, host_from, bytes, true);
}

link_report link_copier::to_host(void* host_to, const void* device_from, std::uint64_t bytes) {
  return copy(host_to, device_from, bytes, false);
}

link_report link_copier::copy(void* to, const void* from, std::uint64_t bytes, bool to_device) {
  link_report report;
  if (bytes == 0) return report;
  stage_clock clock;
  const device_scope on(device_);
  void* host = to_device ? const_cast<void*>(from) : to;
  report.straight = is_pinned_host_memory(host, bytes);
  if (report.straight || bytes < staged_from_) {
    straight(to, from, bytes, to_device);
  } else if (to_device) {
    const auto* source = static_cast<const unsigned char*>(from);
    staged(static_cast<unsigned char*>(to), bytes, true,
           [source](std::uint64_t offset, unsigned char* slot, std::uint64_t size) {
             stream_copy(slot, source + offset, size);
           });
  } else {
    auto* target = static_cast<unsigned char*>(to);
    staged(static_cast<unsigned char*>(const_cast<void*>(from)), bytes, false,
           [target](std::uint64_t offset, unsigned char* slot, std::uint64_t size) {
             stream_copy(target + offset, slot, size);
           });
  }
  report.seconds = clock.lap();
  return report;
}

// Pinned memory: one copy on one stream runs at the link's rate (small pageable copies go this
// way too, through the driver's staging).
void link_copier::straight(void* to, const void* from, std::uint64_t bytes, bool to_device) {
  owned_stream stream;
  cuda_check(create(stream), "cannot create a stream");
  cuda_check(cudaMemcpyAsync(to, from, bytes, to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost,
                             stream.get()),
             to_device ? "a copy to the device failed" : "a copy from the device failed");
  cuda_check(cudaStreamSynchronize(stream.get()),
             to_device ? "a copy to the device failed" : "a copy from the device failed");
}

// Pageable memory: thread t takes chunks t, t + threads, ...; to the device it fills a slot
// (host_side) and queues its copy while its other slot's copy runs; to the host it queues two
// chunks' copies ahead and drains each slot (host_side) as its copy lands.
void link_copier::staged(unsigned char* device_bytes, std::uint64_t bytes, bool to_device,
                         const host_bytes& host_side) {
  const std::uint64_t chunks = link_chunk_count(bytes, chunk_bytes_);
  const unsigned threads = static_cast<unsigned>(std::min<std::uint64_t>(threads_, chunks));
  if (!lanes_) {
    auto* lanes = new lane[threads_];
    try {
      for (unsigned t = 0; t < threads_; ++t) {
        cuda_check(create(lanes[t].stream), "cannot create a stream");
        for (int s = 0; s < 2; ++s) {
          cuda_check(allocate(lanes[t].slots[s], chunk_bytes_), "cannot allocate pinned memory");
          cuda_check(create(lanes[t].done[s], cudaEventDisableTiming), "cannot create an event");
        }
      }
    } catch (...) {
      delete[] lanes;
      throw;
    }
    lanes_ = lanes;
  }
  std::atomic<bool> failed{false};
  std::exception_ptr failure;
  std::mutex m;
  const auto work = [&](unsigned t) {
    const one_of_many_scope lane_thread(threads > 1);
    try {
      cuda_check(cudaSetDevice(device_), "cannot use the GPU");
      lane& l = lanes_[t];
      const std::uint64_t mine = chunks_of_thread(chunks, threads, t);
      const auto chunk = [&](std::uint64_t k) { return nth_link_chunk(bytes, chunk_bytes_, t + k * threads); };
      const auto queue = [&](std::uint64_t k, cudaMemcpyKind kind, void* dst, const void* src) {
        cuda_check(cudaMemcpyAsync(dst, src, chunk(k).size, kind, l.stream.get()),
                   kind == cudaMemcpyHostToDevice ? "a copy to the device failed" : "a copy from the device failed");
        cuda_check(cudaEventRecord(l.done[k % 2].get(), l.stream.get()), "cannot record an event");
      };
      if (to_device) {
        for (std::uint64_t k = 0; k < mine && !failed; ++k) {
          unsigned char* slot = l.slots[k % 2].get();
          if (k >= 2) cuda_check(cudaEventSynchronize(l.done[k % 2].get()), "a copy to the device failed");
          const link_chunk c = chunk(k);
          host_side(c.offset, slot, c.size);
          queue(k, cudaMemcpyHostToDevice, device_bytes + c.offset, slot);
        }
      } else {
        for (std::uint64_t k = 0; k < std::min<std::uint64_t>(mine, 2); ++k)
          queue(k, cudaMemcpyDeviceToHost, l.slots[k % 2].get(), device_bytes + chunk(k).offset);
        for (std::uint64_t k = 0; k < mine && !failed; ++k) {
          cuda_check(cudaEventSynchronize(l.done[k % 2].get()), "a copy from the device failed");
          const link_chunk c = chunk(k);
          host_side(c.offset, l.slots[k % 2].get(), c.size);
          if (k + 2 < mine)
            queue(k + 2, cudaMemcpyDeviceToHost, l.slots[k % 2].get(), device_bytes + chunk(k + 2).offset);
        }
      }
      cuda_check(cudaStreamSynchronize(l.stream.get()), "a copy between host and device failed");
    } catch (...) {
      std::lock_guard lock(m);
      if (!failure) failure = std::current_exception();
      failed = true;
    }
  };
  run_concurrently(threads, work);
  if (failure) std::rethrow_exception(failure);
}

link_report link_copier::to_device_through(void* device_to, std::uint64_t bytes,
                                           const host_bytes& fill) {
  link_report report;
  if (bytes == 0) return report;
  stage_clock clock;
  const device_scope on(device_);
  staged(static_cast<unsigned char*>(device_to), bytes, true, fill);
  report.seconds = clock.lap();
  return report;
}

link_report link_copier::to_host_through(const void* device_from, std::uint64_t bytes,
                                         const host_bytes& drain) {
  link_report report;
  if (bytes == 0) return report;
  stage_clock clock;
  const device_scope on(device_);
  staged(static_cast<unsigned char*>(const_cast<void*>(device_from)), bytes, false, drain);
  report.seconds = clock.lap();
  return report;
}

pinned_pieces::pinned_pieces(void* host, std::uint64_t bytes, unsigned threads,
                             std::uint64_t piece_bytes)
    : host_(static_cast<unsigned char*>(host)),
      bytes_(bytes),
      threads_(std::max(1u, threads)),
      piece_bytes_(std::max<std::uint64_t>(piece_bytes, 4096)) {
  const long page = ::sysconf(_SC_PAGESIZE);
  pages_ = whole_pages(reinterpret_cast<std::uintptr_t>(host), bytes,
                       page > 0 ? static_cast<std::uint64_t>(page) : 4096);
  pinned_.assign(link_chunk_count(pages_.end - pages_.begin, piece_bytes_), 0);
}

pinned_pieces::~pinned_pieces() { unpin(); }

std::uint64_t pinned_pieces::pinned_bytes() const {
  std::uint64_t total = 0;
  for (std::size_t piece = 0; piece < pinned_.size(); ++piece)
    if (pinned_[piece]) total += nth_link_chunk(pages_.end - pages_.begin, piece_bytes_, piece).size;
  return total;
}

// work(thread, stream) on threads_ threads (the calling one among them) with `device` current
// and a stream each, which is synchronized after; the first exception is rethrown.
template <class Work>
void pinned_pieces::on_threads(int device, Work&& work) {
  const unsigned threads = static_cast<unsigned>(
      std::clamp<std::uint64_t>(pinned_.size(), 1, threads_));
  std::exception_ptr failure;
  std::mutex m;
  const auto run = [&](unsigned t) {
    try {
      cuda_check(cudaSetDevice(device), "cannot use the GPU");
      owned_stream stream;
      cuda_check(create(stream), "cannot create a stream");
      work(t, threads, stream.get());
      cuda_check(cudaStreamSynchronize(stream.get()), "a copy between host and device failed");
    } catch (...) {
      std::lock_guard lock(m);
      if (!failure) failure = std::current_exception();
    }
  };
  {
    const device_scope on(device);
    run_concurrently(threads, run);
  }
  if (failure) std::rethrow_exception(failure);
}

double pinned_pieces::to_device(int device, void* device_to) {
  return copy(device, static_cast<unsigned char*>(device_to), true);
}

double pinned_pieces::to_host(int device, const void* device_from) {
  return copy(device, static_cast<unsigned char*>(const_cast<void*>(device_from)), false);
}

// Either way: the partial pages at the ends on the first thread, the pieces on every thread
// (each pinned just before its copy on the way in).
double pinned_pieces::copy(int device, unsigned char* device_bytes, bool to_device) {
  stage_clock clock;
  const cudaMemcpyKind kind = to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
  const char* failed = to_device ? "a copy to the device failed" : "a copy from the device failed";
  // Bytes [offset, offset + size) of the array, queued on `stream`.
  const auto move = [&](std::uint64_t offset, std::uint64_t size, cudaStream_t stream) {
    if (size == 0) return;
    unsigned char* host = host_ + offset;
    unsigned char* dev = device_bytes + offset;
    cuda_check(cudaMemcpyAsync(to_device ? dev : host, to_device ? host : dev, size, kind, stream), failed);
  };
  const std::uint64_t interior = pages_.end - pages_.begin;
  on_threads(device, [&](unsigned t, unsigned threads, cudaStream_t stream) {
    if (t == 0) {  // all of it when no whole page fits
      move(0, pages_.begin == pages_.end ? bytes_ : pages_.begin, stream);
      if (pages_.end > pages_.begin) move(pages_.end, bytes_ - pages_.end, stream);
    }
    for (std::uint64_t piece = t; piece < pinned_.size(); piece += threads) {
      const link_chunk c = nth_link_chunk(interior, piece_bytes_, piece);
      if (to_device) {
        pinned_[piece] =
            cudaHostRegister(host_ + pages_.begin + c.offset, c.size, cudaHostRegisterPortable) == cudaSuccess;
        if (!pinned_[piece]) cudaGetLastError();  // staged by the driver instead
      }
      move(pages_.begin + c.offset, c.size, stream);
    }
  });
  return clock.lap();
}

double pinned_pieces::unpin() noexcept {
  stage_clock clock;
  const unsigned threads = static_cast<unsigned>(std::clamp<std::uint64_t>(pinned_.size(), 1, threads_));
  const auto run = [&](unsigned t) {
    for (std::uint64_t piece = t; piece < pinned_.size(); piece += threads)
      if (pinned_[piece]) {
        cudaHostUnregister(host_ + pages_.begin + piece * piece_bytes_);
        pinned_[piece] = 0;
      }
  };
  try {
    run_concurrently(threads, run);
  } catch (...) {  // no threads: the calling thread unpins it all
    for (unsigned t = 0; t < threads; ++t) run(t);
  }
  return clock.lap();
}

link_rate measure_link(int device, std::uint64_t bytes) {
  const device_scope on(device);
  link_rate rate;
  if (bytes == 0) return rate;
  pinned_array<unsigned char> host;
  device_array<unsigned char> dev;
  cuda_check(allocate(host, bytes), "cannot allocate pinned memory");
  cuda_check(allocate(dev, bytes), "cannot allocate device memory");
  std::memset(host.get(), 0x5a, bytes);
  owned_stream stream;
  cuda_check(create(stream), "cannot create a stream");
  stream_timer timer;
  cuda_check(timer.init(), "cannot create an event");
  for (int round = 0; round < 2; ++round) {  // the first warms the link up
    cuda_check(timer.start(stream.get()), "cannot record an event");
    cuda_check(cudaMemcpyAsync(dev.get(), host.get(), bytes, cudaMemcpyHostToDevice, stream.get()),
               "a copy to the device failed");
    cuda_check(timer.seconds(stream.get(), rate.to_device_seconds), "a copy to the device failed");
    cuda_check(timer.start(stream.get()), "cannot record an event");
    cuda_check(cudaMemcpyAsync(host.get(), dev.get(), bytes, cudaMemcpyDeviceToHost, stream.get()),
               "a copy from the device failed");
    cuda_check(timer.seconds(stream.get(), rate.to_host_seconds), "a copy from the device failed");
  }
  return rate;
}

}  // namespace gpusort::detail::external
