// `gpusort sort` of a keys file on the GPU, file to file, in a pipeline: keys move between the
// files and the device through pinned staging slots, so that the CPU threads filling slot i+1
// (pread from the input on all cores) work while the copy engine moves slot i, and the output
// is written from slot i (pwrite) while slot i+1 comes back.
//
// When the keys and the sort's workspace fit the device budget, that is the whole sort: read and
// upload, sort, download and write. Otherwise the input is cut into runs that fit; each is
// uploaded, sorted and stored (in host memory when it fits there, else in a scratch file), and the
// runs are merged in windows (src/external/merge_windows.hpp): each window's slices are
// gathered from the stored runs into the device buffer, sorted there, and written to their place in
// the output. Every key thus crosses the bus four times, but the merge costs one GPU sort per
// window instead of a CPU heap merge.
//
// With several GPUs, each has its own buffer, slots and host thread: the threads take runs,
// then windows, from a shared counter (every window's cuts are found before the merge
// starts), so the copies go over every GPU's own link at once. The calling thread reports
// progress meanwhile.
//
// The output is checked before it replaces OUT: in order, and the same keys as the input
// (order-independent checksums taken while the slots are filled and drained).
#pragma once

#include <cuda_runtime.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <span>
#include <thread>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "gpusort/detail/core/cuda_resources.hpp"
#include "concurrency.hpp"
#include "link_copy.hpp"
#include "run_merge.hpp"
#include "run_plan.hpp"
#include "file_io.hpp"
#include "merge_windows.hpp"
#include "stats.hpp"
#include "gpusort/sort.hpp"
#include "progress_sink.hpp"
#include "records.hpp"

namespace gpusort::detail::external {

namespace impl {

inline void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw io_failure(std::string(what) + ": " + cudaGetErrorString(e));
}

}  // namespace impl

// Makes `device` the calling thread's device for the scope; the one in use before comes back.
class device_scope {
 public:
  explicit device_scope(int device) {
    impl::cuda_check(cudaGetDevice(&previous_), "cannot ask for the current GPU");
    if (device != previous_)
      impl::cuda_check(cudaSetDevice(device), ("cannot use GPU " + std::to_string(device)).c_str());
  }
  ~device_scope() { cudaSetDevice(previous_); }
  device_scope(const device_scope&) = delete;
  device_scope& operator=(const device_scope&) = delete;

 private:
  int previous_ = 0;
};

// An owner's GPU for the release of its members: the owner's destructor enter()s it, the
// members are released, then this member (declared first, so destroyed last) puts back the
// thread's GPU.
class release_on_device {
 public:
  explicit release_on_device(int device) : device_(device) {}
  ~release_on_device() {
    if (entered_) cudaSetDevice(previous_);
  }
  release_on_device(const release_on_device&) = delete;
  release_on_device& operator=(const release_on_device&) = delete;
  void enter() {
    entered_ = cudaGetDevice(&previous_) == cudaSuccess && cudaSetDevice(device_) == cudaSuccess;
  }

 private:
  int device_, previous_ = 0;
  bool entered_ = false;
};

// Units of work done, for the progress sink: reported at once when counted on the calling
// thread, else by the calling thread as it waits (share_out).
class shared_progress {
 public:
  shared_progress(progress_sink& meter, std::uint64_t total) : meter_(meter), total_(total) {}
  void add(std::uint64_t units) {
    const std::uint64_t done = done_ += units;
    if (std::this_thread::get_id() == caller_) meter_.advance(done, total_);
  }
  void report() { meter_.advance(done_.load(), total_); }

 private:
  progress_sink& meter_;
  const std::uint64_t total_;
  std::atomic<std::uint64_t> done_{0};
  const std::thread::id caller_ = std::this_thread::get_id();
};

// Pieces [0, pieces) of work shared out over `workers` threads, each taking the next piece as
// it finishes one: work(worker, piece). One worker works on the calling thread. Otherwise the
// calling thread reports progress (and so notices a cancel) every 50 ms; the first exception
// of any thread stops the others before their next piece and is rethrown once all stopped.
template <class Work>
void share_out(std::size_t workers, std::uint64_t pieces, shared_progress& progress,
               Work&& work) {
  if (workers <= 1) {
    for (std::uint64_t piece = 0; piece < pieces; ++piece) work(std::size_t{0}, piece);
    return;
  }
  std::atomic<std::uint64_t> next{0};
  std::atomic<bool> stop{false};
  std::mutex m;
  std::condition_variable finished;
  std::size_t running = workers;
  // Worker 0 is the calling thread, which watches; 1..workers take pieces.
  run_concurrently(static_cast<unsigned>(workers + 1), [&](unsigned w) {
    if (w > 0) {
      try {
        for (std::uint64_t piece = next++; piece < pieces && !stop; piece = next++) work(w - 1, piece);
      } catch (...) {
        stop = true;
        std::lock_guard lock(m);
        --running;
        finished.notify_all();
        throw;
      }
      std::lock_guard lock(m);
      --running;
      finished.notify_all();
      return;
    }
    std::unique_lock lock(m);
    while (running > 0) {
      finished.wait_for(lock, std::chrono::milliseconds(50));
      lock.unlock();
      try {
        if (!stop) progress.report();
      } catch (...) {
        stop = true;  // a cancel: the workers stop before their next piece
        throw;
      }
      lock.lock();
    }
  });
  progress.report();
}

// Busy seconds of each stage (they overlap, so they add up to more than the wall time).
struct pipeline_times {
  double read = 0, upload = 0, sort = 0, download = 0, store = 0, gather = 0, write = 0;
};

// The device side: one buffer of `capacity` keys, the sort's workspace for it, a stream, and
// the pinned staging slots with an event each.
template <class K>
class device_keys {
 public:
  // On GPU `device`; its calls must run where that GPU is the current one (device_scope).
  device_keys(int device, std::uint64_t capacity, const gpusort::options& opt,
              std::uint64_t slot_bytes)
      : release_(device),
        slot_keys_(std::max<std::uint64_t>(1, slot_bytes / sizeof(K))),
        opt_(opt) {
    using impl::cuda_check;
    const device_scope on(device);
    cuda_check(create(stream_), "cannot create a stream");
    opt_.stream = stream_.get();
    cuda_check(allocate(keys_, capacity), "cannot allocate the device run buffer");
    cuda_check(gpusort::sort_keys(nullptr, temp_bytes_, keys_.get(), capacity, opt_),
               "the sort's workspace query failed");
    cuda_check(allocate(temp_, temp_bytes_), "cannot allocate the sort's workspace");
    for (slot& s : slots_) {
      cuda_check(allocate(s.keys, slot_keys_), "cannot allocate pinned memory");
      cuda_check(create(s.copied, cudaEventDisableTiming), "cannot create an event");
    }
    cuda_check(timer_.init(), "cannot create an event");
  }
  // The queued work finishes, then the members are released on this object's GPU.
  ~device_keys() {
    release_.enter();
    if (stream_) cudaStreamSynchronize(stream_.get());
  }
  device_keys(const device_keys&) = delete;
  device_keys& operator=(const device_keys&) = delete;

  // Copies n keys into the device buffer: fill(slot, first, count) puts keys [first, first +
  // count) of them into the pinned slot, while earlier slots are on their way.
  template <class Fill>
  void upload(std::uint64_t n, Fill&& fill) {
    for (std::uint64_t first = 0, chunk = 0; first < n; first += slot_keys_, ++chunk) {
      slot& s = slots_[chunk % slots_.size()];
      impl::cuda_check(cudaEventSynchronize(s.copied.get()), "a copy to the device failed");
      const std::uint64_t count = std::min(slot_keys_, n - first);
      fill(s.keys.get(), first, count);
      impl::cuda_check(cudaMemcpyAsync(keys_.get() + first, s.keys.get(), count * sizeof(K),
                                         cudaMemcpyHostToDevice, stream_.get()),
                         "a copy to the device failed");
      impl::cuda_check(cudaEventRecord(s.copied.get(), stream_.get()), "cannot record an event");
    }
  }

  // The device buffer, for copies that fill or drain it another way (link_copier).
  K* data() { return keys_.get(); }

  // Sorts the first n keys of the device buffer; the seconds it took on the device.
  double sort(std::uint64_t n) {
    using impl::cuda_check;
    cuda_check(timer_.start(stream_.get()), "cannot record an event");
    std::size_t bytes = temp_bytes_;
    cuda_check(gpusort::sort_keys(temp_.get(), bytes, keys_.get(), n, opt_), "the sort failed");
    double seconds = 0;
    cuda_check(timer_.seconds(stream_.get(), seconds), "the sort failed");
    return seconds;
  }

  // Copies the first n keys back: drain(slot, first, count) takes keys [first, first + count)
  // from a slot while the next slots are being filled by the copy engine.
  template <class Drain>
  void download(std::uint64_t n, Drain&& drain) {
    const std::uint64_t chunks = (n + slot_keys_ - 1) / slot_keys_;
    const auto issue = [&](std::uint64_t chunk) {
      const slot& s = slots_[chunk % slots_.size()];
      const std::uint64_t first = chunk * slot_keys_;
      impl::cuda_check(cudaMemcpyAsync(s.keys.get(), keys_.get() + first,
                                         std::min(slot_keys_, n - first) * sizeof(K),
                                         cudaMemcpyDeviceToHost, stream_.get()),
                         "a copy from the device failed");
      impl::cuda_check(cudaEventRecord(s.copied.get(), stream_.get()), "cannot record an event");
    };
    for (std::uint64_t chunk = 0; chunk < std::min<std::uint64_t>(chunks, slots_.size()); ++chunk)
      issue(chunk);
    for (std::uint64_t chunk = 0; chunk < chunks; ++chunk) {
      const slot& s = slots_[chunk % slots_.size()];
      impl::cuda_check(cudaEventSynchronize(s.copied.get()), "a copy from the device failed");
      const std::uint64_t first = chunk * slot_keys_;
      drain(static_cast<const K*>(s.keys.get()), first, std::min(slot_keys_, n - first));
      if (chunk + slots_.size() < chunks) issue(chunk + slots_.size());
    }
  }

 private:
  struct slot {
    pinned_array<K> keys;
    owned_event copied;
  };
  release_on_device release_;  // first: its destructor runs after every other member's
  std::uint64_t slot_keys_;
  gpusort::options opt_;
  owned_stream stream_;
  device_array<K> keys_;
  std::size_t temp_bytes_ = 0;
  device_array<char> temp_;
  std::array<slot, 4> slots_;
  stream_timer timer_;
};

// Anonymous host memory in transparent huge pages where the kernel has them: the run store's
// first touch costs a page fault per 2 MiB instead of per 4 KiB (with 4 KiB pages, storing the
// runs of 2^33 keys took 11.9 s on an H200 host, page faults all but alone).
class huge_page_memory {
 public:
  explicit huge_page_memory(std::uint64_t bytes) : bytes_(std::max<std::uint64_t>(bytes, 1)) {
    void* p = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
      throw io_failure("cannot map " + std::to_string(bytes_) + " bytes of host memory for the runs: " +
                       system_error_text());
    ::madvise(p, bytes_, MADV_HUGEPAGE);  // a hint: without huge pages, 4 KiB ones
    data_ = static_cast<unsigned char*>(p);
  }
  ~huge_page_memory() { ::munmap(data_, bytes_); }
  huge_page_memory(const huge_page_memory&) = delete;
  huge_page_memory& operator=(const huge_page_memory&) = delete;
  unsigned char* get() const { return data_; }

 private:
  std::uint64_t bytes_;
  unsigned char* data_ = nullptr;
};

// The sorted runs, one after another: in host memory, or in a scratch file when the host
// budget (or half the machine's memory, without one) cannot hold them.
class run_store {
 public:
  run_store(std::uint64_t bytes, bool in_memory, const scratch_directory& scratch) {
    if (in_memory) {
      memory_ = std::make_unique<huge_page_memory>(bytes);  // the runs overwrite it
      return;
    }
    path_ = (scratch.path() / "runs").string();
    fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd_ < 0) throw io_failure(path_ + ": cannot create: " + system_error_text());
    reserve_file(fd_, bytes, path_);
  }
  ~run_store() {
    if (fd_ >= 0) ::close(fd_);
  }
  run_store(const run_store&) = delete;
  run_store& operator=(const run_store&) = delete;

  bool in_memory() const { return memory_ != nullptr; }
  void put(std::uint64_t offset, const void* data, std::uint64_t size) {
    if (memory_)
      copy_in_parallel(memory_->get() + offset, data, size);
    else
      write_at(fd_, offset, data, size, path_);
  }
  void get(std::uint64_t offset, void* data, std::uint64_t size) const {
    if (memory_)
      copy_in_parallel(data, memory_->get() + offset, size);
    else
      read_at(fd_, offset, data, size, path_);
  }
  template <class K>
  K key_at(std::uint64_t index) const {
    K key;
    if (memory_) {
      std::memcpy(&key, memory_->get() + index * sizeof(K), sizeof(K));
    } else if (::pread(fd_, &key, sizeof(K), static_cast<off_t>(index * sizeof(K))) !=
               static_cast<ssize_t>(sizeof(K))) {
      throw io_failure(path_ + ": read failed: " + system_error_text());
    }
    return key;
  }

 private:
  std::unique_ptr<huge_page_memory> memory_;
  std::string path_;
  int fd_ = -1;
};

namespace impl {

// The checks of keys that pass through the slots: an order-independent checksum, and (for
// the output) how many keys are out of order, across chunk boundaries too. Chunks may come
// from several threads in any order: each chunk's end keys are kept, and the boundaries
// between neighbouring chunks are checked at the end.
template <class K>
class key_tally {
 public:
  explicit key_tally(bool descending = false) : descending_(descending) {}

  // The staging threads call these on every slot, one after its read or before its write, so
  // the hash is one mix64 a key (a bijection of the key's bits: two keys that differ hash
  // differently), not record_hash_of's two: 2.7 against 1.7 GB/s a thread for u32 keys.
  void add(const K* keys, std::uint64_t count) { add_checked(keys, count, false); }
  // Keys [first, first + count) of the output: hashed and checked in order in one pass.
  void add_in_order(std::uint64_t first, const K* keys, std::uint64_t count) {
    const std::uint64_t bad = add_checked(keys, count, true);
    if (count == 0) return;
    std::lock_guard lock(m_);
    inside_ += bad;
    chunks_[first] = {count, keys[0], keys[count - 1]};
  }
  checksum sum() const {
    std::lock_guard lock(m_);
    return sum_;
  }
  std::uint64_t out_of_order() const {
    std::lock_guard lock(m_);
    std::uint64_t bad = inside_;
    for (auto it = chunks_.begin(); it != chunks_.end() && std::next(it) != chunks_.end(); ++it) {
      const auto next = std::next(it);
      if (it->first + it->second.count == next->first && wrong(it->second.back, next->second.front))
        ++bad;
    }
    return bad;
  }

 private:
  struct ends {
    std::uint64_t count;
    K front, back;
  };
  // Adds the keys' hashes to the checksum; with `in_order`, returns how many keys follow one
  // that must not precede them.
  std::uint64_t add_checked(const K* keys, std::uint64_t count, bool in_order) {
    std::uint64_t total = 0, x = 0, bad = 0;
    const std::int64_t n = static_cast<std::int64_t>(count);
#pragma omp parallel for reduction(+ : total, bad) reduction(^ : x) if (!one_of_many)
    for (std::int64_t i = 0; i < n; ++i) {
      std::uint64_t bits = 0;
      std::memcpy(&bits, &keys[i], sizeof(K));
      const std::uint64_t h = mix64(bits);
      total += h;
      x ^= h;
      if (in_order && i > 0) bad += wrong(keys[i - 1], keys[i]) ? 1 : 0;
    }
    std::lock_guard lock(m_);
    sum_.sum += total;
    sum_.xor_all ^= x;
    return bad;
  }
  bool wrong(const K& previous, const K& next) const {
    const less<K> before;
    return descending_ ? before(previous, next) : before(next, previous);
  }
  bool descending_;
  mutable std::mutex m_;
  checksum sum_;
  std::uint64_t inside_ = 0;
  std::map<std::uint64_t, ends> chunks_;
};

}  // namespace impl

// How keys of type K travel through the keys pipeline: 32- and 64-bit keys as themselves;
// narrow keys (i8 ... bf16) as their u32 codes (narrow_keys.hpp), which the u32 sorts and
// merges put in K's order, 16-bit float NaNs where options::nans asks. That is how the
// library sorts narrow keys on the device too, so every pipeline path (runs, windows, several
// GPUs) takes them, at 4 bytes a key on the bus.
template <class K>
using pipeline_key = std::conditional_t<narrow_key<K>, std::uint32_t, K>;

// n narrow keys to their codes and back, on all cores; nans_lowest: gpusort::nans_lowest of
// the sort's direction and NaN placement (as the run path's key_code).
template <class K>
void narrow_to_codes(const K* keys, std::uint32_t* codes, std::uint64_t n, bool nans_lowest) {
  using B = typename narrow_format<K>::bits_type;
  io_detail::in_parallel_pieces(n, [&](std::uint64_t at, std::uint64_t length) {
    for (std::uint64_t i = at; i < at + length; ++i)
      codes[i] = narrow_code<K>(bit_cast<B>(keys[i]), nans_lowest);
    return true;
  });
}
template <class K>
void codes_to_narrow(const std::uint32_t* codes, K* keys, std::uint64_t n, bool nans_lowest) {
  io_detail::in_parallel_pieces(n, [&](std::uint64_t at, std::uint64_t length) {
    for (std::uint64_t i = at; i < at + length; ++i)
      keys[i] = bit_cast<K>(narrow_bits<K>(codes[i], nans_lowest));
    return true;
  });
}

// Whether the runs of `bytes` stay in host memory: within the host budget beside the slots, or
// without a budget within default_host_budget (half of what the process may use).
inline bool runs_fit_in_memory(std::uint64_t bytes, std::uint64_t host_budget_bytes,
                               std::uint64_t slot_bytes) {
  if (host_budget_bytes > 0) return bytes + 4 * slot_bytes <= host_budget_bytes;
  return bytes <= default_host_budget();
}

// Pinned slot size: large enough for the copy engine's full speed, small next to a run.
inline std::uint64_t pinned_slot_bytes(std::uint64_t run_bytes, std::uint64_t host_budget_bytes) {
  std::uint64_t bytes = std::min<std::uint64_t>(std::uint64_t{64} << 20, std::max<std::uint64_t>(run_bytes, 4096));
  if (host_budget_bytes > 0) bytes = std::max<std::uint64_t>(4096, std::min(bytes, host_budget_bytes / 16));
  return bytes;
}

// What the keys pipeline did, for the statistics.
struct keys_pipeline_report {
  pipeline_times busy;  // summed over the GPUs
  std::uint64_t runs = 0;
  std::size_t gpus = 1;
  bool runs_in_memory = true;
};

// The GPUs a keys pipeline of `runs` runs uses: `devices` (the current one if empty), no
// more than there are runs.
inline std::vector<int> pipeline_devices(std::span<const int> devices, std::uint64_t runs) {
  std::vector<int> gpus(devices.begin(), devices.end());
  if (gpus.empty()) {
    int current = 0;
    impl::cuda_check(cudaGetDevice(&current), "cannot ask for the current GPU");
    gpus.push_back(current);
  }
  gpus.resize(static_cast<std::size_t>(std::clamp<std::uint64_t>(runs, 1, gpus.size())));
  return gpus;
}

// Sorts count keys on the GPUs `devices` (the current one if empty), runs of at most run_keys
// keys (the device budget's): read(slot, first, n) puts keys [first, first + n) of the input
// into a pinned slot, and write(first, slot, n) takes keys [first, first + n) of the output
// from one; with several GPUs both are called from several threads at once, for disjoint
// ranges. The runs of a multi-run sort are kept in host memory within the host budget (else
// in a scratch directory beside scratch_anchor). Every input key is read before the first
// output key is written, so the input and output may be the same memory.
template <class K, class Read, class Write>
keys_pipeline_report sort_keys_through_gpu(std::uint64_t count, std::uint64_t run_keys,
                                           const gpusort::options& opt,
                                           std::uint64_t host_budget_bytes,
                                           const std::filesystem::path& scratch_anchor,
                                           std::span<const int> devices, Read&& read,
                                           Write&& write, progress_sink& meter) {
  const bool descending = opt.direction == gpusort::order::descending;
  keys_pipeline_report report;
  report.runs = count == 0 ? 0 : (count + run_keys - 1) / run_keys;
  const std::uint64_t runs = report.runs;
  const std::uint64_t slot_bytes = pinned_slot_bytes(std::min(count, run_keys) * sizeof(K), host_budget_bytes);
  const std::vector<int> gpus = pipeline_devices(devices, runs);
  report.gpus = gpus.size();
  std::vector<pipeline_times> busy(gpus.size());
  const auto timed = [](double& seconds, auto&& work) {
    stage_clock clock;
    work();
    seconds += clock.lap();
  };

  std::vector<std::unique_ptr<device_keys<K>>> device(gpus.size());
  if (count > 0)
    for (std::size_t g = 0; g < gpus.size(); ++g)
      device[g] = std::make_unique<device_keys<K>>(gpus[g], std::min(count, run_keys), opt, slot_bytes);
  // Through GPU g: fill the device buffer with n keys, sort them, drain them.
  const auto on_device = [&](std::size_t g, std::uint64_t n, auto&& fill, auto&& drain) {
    const device_scope on(gpus[g]);
    timed(busy[g].upload, [&] { device[g]->upload(n, fill); });
    busy[g].sort += device[g]->sort(n);
    timed(busy[g].download, [&] { device[g]->download(n, drain); });
  };
  const auto read_input = [&](std::size_t g, std::uint64_t first_key) {
    return [&, g, first_key](K* slot, std::uint64_t first, std::uint64_t n) {
      timed(busy[g].read, [&] { read(slot, first_key + first, n); });
    };
  };

  if (runs == 1) {
    // One run: in and out over the link by several staging threads at once, each reading
    // (writing) its own chunks of the input (output) straight into (out of) its pinned slots.
    meter.phase("sorting", true);
    shared_progress progress(meter, count);
    const device_scope on(gpus[0]);
    link_copier link(gpus[0], link_threads(std::max(1u, std::thread::hardware_concurrency()), 1));
    std::atomic<double> read_s{0}, write_s{0};  // summed over the staging threads
    const auto timed_by_threads = [](std::atomic<double>& seconds, auto&& work) {
      stage_clock clock;
      work();
      seconds += clock.lap();
    };
    timed(busy[0].upload, [&] {
      link.to_device_through(device[0]->data(), count * sizeof(K),
                             [&](std::uint64_t offset, unsigned char* slot, std::uint64_t size) {
        timed_by_threads(read_s, [&] { read(reinterpret_cast<K*>(slot), offset / sizeof(K), size / sizeof(K)); });
      });
    });
    busy[0].sort += device[0]->sort(count);
    timed(busy[0].download, [&] {
      link.to_host_through(device[0]->data(), count * sizeof(K),
                           [&](std::uint64_t offset, unsigned char* slot, std::uint64_t size) {
        timed_by_threads(write_s, [&] {
          write(offset / sizeof(K), reinterpret_cast<const K*>(slot), size / sizeof(K));
        });
        progress.add(size / sizeof(K));
      });
    });
    busy[0].read += read_s;
    busy[0].write += write_s;
  } else if (runs > 1) {
    const scratch_directory scratch(scratch_anchor);
    report.runs_in_memory = runs_fit_in_memory(count * sizeof(K), host_budget_bytes, slot_bytes);
    run_store store(count * sizeof(K), report.runs_in_memory, scratch);
    std::vector<std::uint64_t> lengths(runs);
    for (std::uint64_t r = 0; r < runs; ++r) lengths[r] = std::min(run_keys, count - r * run_keys);
    meter.phase("runs", true);
    {
      shared_progress progress(meter, count);
      std::atomic<std::uint64_t> runs_done{0};
      share_out(gpus.size(), runs, progress, [&](std::size_t g, std::uint64_t r) {
        const std::uint64_t first_key = r * run_keys;
        on_device(g, lengths[r], read_input(g, first_key),
                  [&](const K* slot, std::uint64_t first, std::uint64_t n) {
                    timed(busy[g].store, [&] { store.put((first_key + first) * sizeof(K), slot, n * sizeof(K)); });
                    progress.add(n);
                  });
        meter.run_written(++runs_done);
      });
    }
    meter.phase("merge", true);
    const auto key_at = [&](std::uint64_t run, std::uint64_t index) {
      return rank_key(store.key_at<K>(run * run_keys + index), descending);
    };
    // The cuts at every window boundary first, so that the windows are independent.
    const std::uint64_t windows = runs;
    std::vector<std::vector<std::uint64_t>> cuts(windows + 1);
    timed(busy[0].gather, [&] {
      for (std::uint64_t w = 0; w <= windows; ++w)
        cuts[w] = cut_runs_at(lengths, std::min(count, w * run_keys), key_at);
    });
    shared_progress progress(meter, count);
    share_out(gpus.size(), windows, progress, [&](std::size_t g, std::uint64_t w) {
      const std::vector<run_slice> slices = slices_between(cuts[w], cuts[w + 1]);
      std::uint64_t window = 0;
      for (const run_slice& s : slices) window += s.end - s.begin;
      on_device(g, window,
                [&](K* slot, std::uint64_t first, std::uint64_t n) {
                  // The slices that cover window positions [first, first + n).
                  timed(busy[g].gather, [&] {
                    std::uint64_t at = 0;
                    for (const run_slice& s : slices) {
                      const std::uint64_t length = s.end - s.begin;
                      const std::uint64_t from = std::max(first, at), to = std::min(first + n, at + length);
                      if (from < to)
                        store.get((s.run * run_keys + s.begin + (from - at)) * sizeof(K),
                                  slot + (from - first), (to - from) * sizeof(K));
                      at += length;
                    }
                  });
                },
                [&](const K* slot, std::uint64_t first, std::uint64_t n) {
                  timed(busy[g].write, [&] { write(w * run_keys + first, slot, n); });
                  progress.add(n);
                });
    });
  }
  for (const pipeline_times& t : busy) {
    report.busy.read += t.read;
    report.busy.upload += t.upload;
    report.busy.sort += t.sort;
    report.busy.download += t.download;
    report.busy.store += t.store;
    report.busy.gather += t.gather;
    report.busy.write += t.write;
  }
  meter.finish();
  return report;
}

// Adds the keys pipeline's plan and stage times to `stats`.
inline void add_pipeline_stats(file_sort_stats& stats, const keys_pipeline_report& report,
                               std::uint64_t count, std::uint64_t run_keys) {
  const pipeline_times& busy = report.busy;
  if (report.runs <= 1)
    stats.add("plan", "on the GPU at once (" + std::to_string(count) + " records)");
  else
    stats.add("plan", std::to_string(report.runs) + " runs of " + std::to_string(run_keys) +
                          " records (the last " +
                          std::to_string(count - (report.runs - 1) * run_keys) +
                          "), sorted and merged on the GPU in windows of " +
                          std::to_string(run_keys) + " records; runs kept " +
                          (report.runs_in_memory ? "in host memory" : "in a scratch file") +
                          (report.gpus > 1 ? "; on " + std::to_string(report.gpus) + " GPUs" : ""));
  // Stages overlap: read and gather run while copies go to the device (the upload phases'
  // wall time), store and write while copies come back (the download phases').
  stats.add_seconds("read", busy.read);
  if (report.runs > 1) stats.add_seconds("gather windows", busy.gather);
  stats.add_seconds("upload phases", busy.upload);
  stats.add_seconds("sort", busy.sort);
  stats.add_seconds("download phases", busy.download);
  if (report.runs > 1) stats.add_seconds("store runs", busy.store);
  stats.add_seconds("write", busy.write);
}

// Sorts the keys of `input` (count keys) into `out` on the GPUs `devices`, runs of at most
// run_keys keys (the device budget's), checking the output on its way (in order, and the same
// keys as the input by order-independent checksums). 0, or 3 when the output failed its checks
// (nothing written).
// Narrow keys (K) go through as their codes (pipeline_key), checked as codes, read and written
// through a staging buffer of K per call.
template <class K>
int sort_keys_on_gpu(const std::string& input, std::uint64_t count, std::uint64_t run_keys,
                     const gpusort::options& opt, std::uint64_t host_budget_bytes,
                     std::span<const int> devices, file_sort_stats* stats, pending_file& out,
                     progress_sink& meter) {
  using W = pipeline_key<K>;
  const bool descending = opt.direction == gpusort::order::descending;
  const bool nans_lowest = gpusort::nans_lowest(opt.direction, opt.nans);
  stage_clock wall;
  const std::string algorithm_used = describe_algorithm<K>(opt, std::min(count, run_keys), false);
  const file_handle in = open_input(input);
  const int in_fd = ::fileno(in.get());
  const output_file output(::fileno(out.get()), count * sizeof(K), out.path(), out.replaces_a_file());
  impl::key_tally<W> input_tally, output_tally(descending);
  const keys_pipeline_report report = sort_keys_through_gpu<W>(
      count, run_keys, opt, host_budget_bytes, out.scratch_anchor(), devices,
      [&](W* slot, std::uint64_t first, std::uint64_t n) {
        if constexpr (narrow_key<K>) {
          const auto staging = std::make_unique_for_overwrite<K[]>(n);
          read_at(in_fd, first * sizeof(K), staging.get(), n * sizeof(K), input);
          narrow_to_codes(staging.get(), slot, n, nans_lowest);
        } else {
          read_at(in_fd, first * sizeof(K), slot, n * sizeof(K), input);
        }
        input_tally.add(slot, n);
      },
      [&](std::uint64_t first, const W* slot, std::uint64_t n) {
        output_tally.add_in_order(first, slot, n);
        if constexpr (narrow_key<K>) {
          const auto staging = std::make_unique_for_overwrite<K[]>(n);
          codes_to_narrow(slot, staging.get(), n, nans_lowest);
          output.write(first * sizeof(K), staging.get(), n * sizeof(K));
        } else {
          output.write(first * sizeof(K), slot, n * sizeof(K));
        }
      },
      meter);
  const std::uint64_t out_of_order = output_tally.out_of_order();
  if (out_of_order > 0 || !(output_tally.sum() == input_tally.sum()))
    throw_wrong_result(gpusort::method_name(opt), "", out_of_order, "keys",
                       output_tally.sum() == input_tally.sum(), out.path());
  const double sorted_s = wall.lap();
  out.commit();
  const double commit_s = wall.lap();
  if (stats) {
    stats->add("algorithm", algorithm_used);
    add_pipeline_stats(*stats, report, count, run_keys);
    stats->add_seconds("commit", commit_s);
    stats->add_seconds("total", sorted_s + commit_s);
  }
  return 0;
}

}  // namespace gpusort::detail::external
