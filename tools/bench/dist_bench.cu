// gpusort-dist-bench: how gpusort::dist::sort scales over the GPUs of one host.
//
//   gpusort-dist-bench [--gpus 1,2,4] [--per-gpu 2^30] [--total 2^32] [--reps 5]
//                      [--types u32] [--values 0,4,8] [--seed 1] [--csv FILE]
//                      [--fan-in 2,8] [--partition-first] [--sub-buckets 1,2,4]
//                      [--copy-engines]
//                      [--processes | --one-gpu | --merge 3,4,8 | --split 2,8,64 | --overlap]
//
// For each key type, three kinds of rows:
//   single  baselines on GPU 0 alone: gpusort's automatic sort and CUB's radix sort (cub_radix)
//           of --per-gpu keys and of --total keys ("skipped: does not fit" if they do not);
//   weak    for each GPU count g of --gpus: every rank holds --per-gpu keys (g * per-gpu);
//   strong  for each g: --total keys split evenly over the g ranks.
// Each weak and strong row of dist::sort (dist_sample_sort) on g > 1 GPUs is followed by one of
// NCCL's all-to-all (nccl_alltoall) of the same bytes on the same GPUs: the exchange's target.
// --one-gpu puts every rank on GPU 0 instead (modes weak-1gpu, strong-1gpu; no all-to-all).
// --fan-in runs dist::sort once for each merge fan-in (dist::options::merge_fan_in): the
// default's rows are dist_sample_sort, the others' dist_sample_sort_fan_in_F.
// --partition-first runs dist::sort once more with dist::options::partition_first (rows
// dist_partition_first; it has no merge, so no fan-in); --sub-buckets once for each
// dist::options::sub_buckets (rows dist_partition_first_sub_C, the default's unnamed).
// --copy-engines runs each of those dist rows again with dist::options::copy_engines (rows
// suffixed _copy_engines).
// --merge R,... times dist's merge alone instead (its step 5, src/dist/merge_runs.cuh) on GPU
// 0, one stream: --total keys cut into R runs, each sorted, merged with each --fan-in (rows
// merge_fan_in_F, mode merge-R), beside a device copy of the same bytes (d2d_copy: one pass's
// floor). Key types u32, u64 and f32, keys alone or with 4-byte values.
// --split B,... times partition_first's split alone (src/dist/split.cuh) on GPU 0, one stream:
// --total keys split into B buckets by splitters at even quantiles of a sample (rows
// split_by_bucket, mode split-B), beside the same device copy (d2d_copy). Same types.
// --overlap times what partition_first's overlap meets, on GPUs 0 and 1: each sorts --total
// keys while they swap half as many keys' bytes, by NCCL (on a stream of the highest
// priority, as dist does) or by the copy engines; each alone, then together (mode overlap).
// Keys are uniform random, made on each GPU from --seed and their global index: the keys of
// `gpusort bench`'s uniform distribution, so that rank 0's weak shard is the baseline's input.
//
// Timing. dist: one process, one thread per GPU (rank r on device r), each GPU's memory pool
// keeping its memory between reps (dist::kept_memory; the warm-up maps it). Every rep each rank
// restores its shard from a pristine device copy and waits for its device (not timed); the
// clock starts when the last rank reaches a barrier and stops when the last rank's dist::sort
// has returned (it waits for its stream): the wall time of the slowest rank. One warm-up rep,
// then the median of --reps. The phases (phase_times, CUDA events on each rank's stream) are
// the max over ranks, averaged over the timed reps; bytes sent are the max over ranks.
// single: CUDA events around the sort alone, after a copy from the pristine buffer, as
// `gpusort bench` times it.
// Every result is verified once, outside the timing: each shard sorted, the shards in order
// across ranks, their sizes adding up to the total, and the same keys as the input (checksum).
//
// Exit codes: 0 every result verified, 1 a wrong result, 2 bad usage, 3 a CUDA or NCCL failure.
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <initializer_list>
#include <deque>
#include <memory>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cli.hpp"                   // arguments, parse_count, usage_error, with_key_type
#include "common/csv.hpp"
#include "common/distributions.hpp"  // random_bits: the keys of `gpusort bench`
#include "common/rank_threads.hpp"
#include "gpusort/dist.hpp"
#include "gpusort/sort.hpp"
#include "merge_runs.cuh"  // src/dist: the merge alone (--merge)
#include "split.cuh"       // src/dist: partition_first's split alone (--split)

#ifndef GPUSORT_COMMIT
#define GPUSORT_COMMIT "unknown"
#endif

namespace {

namespace dist = gpusort::dist;
using gpusort::tools::csv_field;
using gpusort::tools::usage_error;
using clock_type = std::chrono::steady_clock;

// The most keys a size may ask for: byte counts stay far from overflow.
constexpr std::uint64_t largest_count = std::uint64_t{1} << 48;
constexpr std::uint64_t margin_bytes = std::uint64_t{256} << 20;  // left free by the memory checks
constexpr double gib = 1024.0 * 1024.0 * 1024.0;

constexpr const char* csv_header =
    "algorithm,key_type,value_type,distribution,n,segment_size,median_ms,keys_per_s,"
    "extra_device_bytes,gpu,commit,gpus,mode,local_sort_ms,sampling_ms,exchange_ms,merge_ms,"
    "bytes_sent_per_gpu,max_shard,bound";

constexpr const char* usage_text =
    R"(usage: gpusort-dist-bench [--gpus 1,2,4] [--per-gpu 2^30] [--total 2^32] [--reps 5]
                          [--types u32] [--values 0] [--seed 1] [--csv FILE] [--fan-in 2]
                          [--partition-first] [--sub-buckets 1,2,4] [--copy-engines]
  --gpus L      GPU counts to run dist::sort on (counts above the visible devices are skipped)
  --per-gpu N   keys per GPU for weak scaling, and a single-GPU baseline size
  --total N     keys in all for strong scaling (split over the GPUs), and a baseline size
  --reps R      timed reps after one warm-up; the median is reported
  --types L     key types (u32 i32 f32 u64 i64 f64), uniform random keys
  --values L    0 (keys alone), 4 or 8: pairs with values of that many bytes, each value
                made from its key so that the verification can tell it followed its key
  --seed S      the keys' seed (the same keys as `gpusort bench --seed S`)
  --fan-in L    dist::options::merge_fan_in values (2 to 8) to run each dist row with; rows
                of a value other than the library's default are named dist_sample_sort_fan_in_F
  --partition-first  dist::sort once more with dist::options::partition_first (rows
                dist_partition_first)
  --sub-buckets L  with --partition-first, dist::options::sub_buckets values (0 to 8) to
                run it with; rows of a value other than 0 are dist_partition_first_sub_C
  --copy-engines  each dist row again with dist::options::copy_engines (the exchange by the
                GPUs' copy engines; rows suffixed _copy_engines)
  --csv FILE    append the rows to FILE (the header is written if the file is new)
  --processes   this process is one rank of a job that a launcher started, one process a
                GPU (torchrun, mpirun, srun, scripts/dist-launch.sh: docs/distributed.md):
                weak (--per-gpu a rank) and strong (--total) scaling on the job's ranks, as
                modes weak-proc and strong-proc, printed by rank 0; no single-GPU rows, and
                --gpus is the job's size
  --one-gpu     every rank a thread on GPU 0 (dist::communicators_on_one_device: the
                exchange by device copies, no NCCL): --gpus are rank counts, modes
                weak-1gpu and strong-1gpu, no all-to-all rows. The phases as one GPU runs
                them all: the merge of p runs, say, where a host with p GPUs is not at hand
  --merge L     dist's merge alone on GPU 0: --total keys in R sorted runs for each R of L
                (2 to 64), merged with each --fan-in (mode merge-R, rows merge_fan_in_F),
                and a device copy of the same bytes (d2d_copy); types u32, u64, f32,
                --values 0 or 4
  --split L     partition_first's split alone on GPU 0: --total keys into B buckets for each
                B of L (2 to 255; mode split-B, rows split_by_bucket), and the device copy;
                the same types and values as --merge
  --overlap     on GPUs 0 and 1, a sort of --total keys on each beside a swap of half their
                bytes: by NCCL on a stream of the highest priority (dist's exchange) or by
                the copy engines (cudaMemcpyPeerAsync); rows sort_alone, nccl_alone,
                copy_engines_alone, then sort_with_X (from the start to the last end),
                sort_beside_X and X_beside_sort (each part's own time); --types u32, u64,
                f32, keys alone
Sizes: plain numbers or 2^k (2^k+c, 2^k-c).
)";

struct config {
  std::vector<int> gpus{1, 2, 4};
  std::uint64_t per_gpu = std::uint64_t{1} << 30, total = std::uint64_t{1} << 32;
  int reps = 5;
  std::vector<std::string> types{"u32"};
  std::vector<int> value_bytes{0};  // 0: keys alone; 4, 8: pairs with values of that size
  std::vector<int> fan_ins{dist::options{}.merge_fan_in};  // the merge's, one dist row each
  bool partition_first = false;  // each dist row again with dist::options::partition_first
  std::vector<int> sub_buckets{dist::options{}.sub_buckets};  // partition_first's, a row each
  bool copy_engines = false;  // each dist row again with dist::options::copy_engines
  std::uint64_t seed = 1;
  std::string csv;
  bool processes = false;  // one rank of a job a launcher started
  bool one_gpu = false;    // every rank a thread on GPU 0
  std::vector<int> merge_runs;  // --merge: run counts to time the merge alone with
  std::vector<int> split_buckets;  // --split: bucket counts to time the split alone with
  bool overlap = false;            // --overlap: a sort beside a swap of bytes on GPUs 0 and 1
};

void check_nccl_call(ncclResult_t r, const std::string& what) {
  if (r != ncclSuccess)
    throw gpusort::error(cudaErrorUnknown, what + ": " + ncclGetErrorString(r));
}

void cuda_check(cudaError_t e, const std::string& what) {
  if (e != cudaSuccess) throw gpusort::error(e, what);
}

double gigabytes(std::uint64_t bytes) { return static_cast<double>(bytes) / gib; }

// Device memory of the current device, freed at scope exit. An allocation that fails leaves
// ok() false (and the error cleared), so that the caller decides: skip, or fail.
class device_buffer {
 public:
  explicit device_buffer(std::uint64_t bytes) {
    if (cudaMalloc(&ptr_, std::max<std::uint64_t>(bytes, 1)) != cudaSuccess) {
      cudaGetLastError();
      ptr_ = nullptr;
    }
  }
  ~device_buffer() { cudaFree(ptr_); }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
  bool ok() const { return ptr_ != nullptr; }
  template <class T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }

 private:
  void* ptr_ = nullptr;
};

void require(const device_buffer& buffer, const std::string& what) {
  if (!buffer.ok()) throw gpusort::error(cudaErrorMemoryAllocation, "cannot allocate " + what);
}

// A CUDA stream or event, destroyed with its owner; the derived class creates it.
template <class Handle, auto destroy>
class owned_handle {
 public:
  ~owned_handle() {
    if (handle_) destroy(handle_);
  }
  owned_handle(const owned_handle&) = delete;
  owned_handle& operator=(const owned_handle&) = delete;
  Handle get() const { return handle_; }

 protected:
  owned_handle() = default;
  Handle handle_ = nullptr;
};

class owned_stream : public owned_handle<cudaStream_t, cudaStreamDestroy> {
 public:
  owned_stream() {
    cuda_check(cudaStreamCreateWithFlags(&handle_, cudaStreamNonBlocking), "cudaStreamCreate");
  }
};

class owned_event : public owned_handle<cudaEvent_t, cudaEventDestroy> {
 public:
  owned_event() { cuda_check(cudaEventCreate(&handle_), "cudaEventCreate"); }
};

// A stream of the device's highest priority (dist's exchanges run on one).
class urgent_stream : public owned_handle<cudaStream_t, cudaStreamDestroy> {
 public:
  urgent_stream() {
    int least = 0, greatest = 0;
    cuda_check(cudaDeviceGetStreamPriorityRange(&least, &greatest), "stream priorities");
    cuda_check(cudaStreamCreateWithPriority(&handle_, cudaStreamNonBlocking, greatest),
               "cudaStreamCreateWithPriority");
  }
};

// ---- keys and their verification ---------------------------------------------------------

unsigned grid_for(std::uint64_t n) {
  return static_cast<unsigned>(std::clamp<std::uint64_t>((n + 255) / 256, 1, 4096));
}

// keys[i] from global index first + i: the low bytes of splitmix64 for integers, uniform in
// [-1e6, 1e6) for floats, as tools/common/distributions.hpp makes uniform keys.
template <class K>
__global__ void generate_kernel(K* keys, std::uint64_t n, std::uint64_t first,
                                std::uint64_t seed) {
  for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::uint64_t{gridDim.x} * blockDim.x) {
    const std::uint64_t bits = gpusort::tools::random_bits(seed, first + i);
    if constexpr (std::is_floating_point_v<K>)
      keys[i] = static_cast<K>(-1e6 + 2e6 * (static_cast<double>(bits >> 11) * 0x1.0p-53));
    else
      keys[i] = static_cast<K>(bits);
  }
}

// sums[0] += adjacent pairs out of order; sums[1] += the keys' ordered bits, a checksum that
// does not depend on their order (it finds keys lost or duplicated by the exchange).
template <class K>
__global__ void check_kernel(const K* keys, std::uint64_t n, unsigned long long* sums) {
  unsigned long long descents = 0, sum = 0;
  for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::uint64_t{gridDim.x} * blockDim.x) {
    sum += gpusort::key_traits<K>::ordered(keys[i]);
    if (i + 1 < n && gpusort::less<K>{}(keys[i + 1], keys[i])) ++descents;
  }
  if (descents > 0) atomicAdd(&sums[0], descents);
  atomicAdd(&sums[1], sum);
}

template <class K>
void generate(K* keys, std::uint64_t n, std::uint64_t first, std::uint64_t seed,
              cudaStream_t s) {
  if (n == 0) return;
  generate_kernel<<<grid_for(n), 256, 0, s>>>(keys, n, first, seed);
  cuda_check(cudaGetLastError(), "generating the keys");
}

// The value type of a keys-only run.
struct keys_only {};
template <class V>
constexpr bool has_values = !std::is_same_v<V, keys_only>;
template <class V>
constexpr std::uint64_t value_size() {
  if constexpr (has_values<V>) return sizeof(V); else return 0;
}
template <class V>
constexpr const char* value_name() {
  if constexpr (!has_values<V>) return "none"; else return sizeof(V) == 4 ? "u32" : "u64";
}

// values[i] = the low bits of key i's order code: whatever order the sort leaves equal keys
// in, every value must still sit beside the key it was made from.
template <class K, class V>
__global__ void values_of_keys_kernel(const K* keys, V* values, std::uint64_t n) {
  for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::uint64_t{gridDim.x} * blockDim.x)
    values[i] = static_cast<V>(gpusort::key_traits<K>::ordered(keys[i]));
}

template <class K, class V>
__global__ void values_astray_kernel(const K* keys, const V* values, std::uint64_t n,
                                     unsigned long long* astray) {
  unsigned long long count = 0;
  for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::uint64_t{gridDim.x} * blockDim.x)
    if (values[i] != static_cast<V>(gpusort::key_traits<K>::ordered(keys[i]))) ++count;
  if (count > 0) atomicAdd(astray, count);
}

template <class K, class V>
void make_values(const K* keys, V* values, std::uint64_t n, cudaStream_t s) {
  if (n == 0) return;
  values_of_keys_kernel<<<grid_for(n), 256, 0, s>>>(keys, values, n);
  cuda_check(cudaGetLastError(), "making the values");
}

// Values that do not sit beside their keys.
template <class K, class V>
std::uint64_t values_astray(const K* keys, const V* values, std::uint64_t n, cudaStream_t s) {
  unsigned long long* d_count = nullptr;
  cuda_check(cudaMallocAsync(&d_count, sizeof *d_count, s), "verification");
  cuda_check(cudaMemsetAsync(d_count, 0, sizeof *d_count, s), "verification");
  if (n > 0) values_astray_kernel<<<grid_for(n), 256, 0, s>>>(keys, values, n, d_count);
  cuda_check(cudaGetLastError(), "verification");
  unsigned long long count = 0;
  cuda_check(cudaMemcpyAsync(&count, d_count, sizeof count, cudaMemcpyDeviceToHost, s),
             "verification");
  cuda_check(cudaFreeAsync(d_count, s), "verification");
  cuda_check(cudaStreamSynchronize(s), "verification");
  return count;
}

struct check_sums {
  std::uint64_t descents = 0, checksum = 0;
};

template <class K>
check_sums check(const K* keys, std::uint64_t n, cudaStream_t s) {
  device_buffer sums(2 * sizeof(unsigned long long));
  require(sums, "the verification's counters");
  auto* d_sums = sums.as<unsigned long long>();
  cuda_check(cudaMemsetAsync(d_sums, 0, 2 * sizeof(unsigned long long), s), "verification");
  if (n > 0) check_kernel<<<grid_for(n), 256, 0, s>>>(keys, n, d_sums);
  cuda_check(cudaGetLastError(), "verification");
  unsigned long long host[2] = {0, 0};
  cuda_check(cudaMemcpyAsync(host, d_sums, sizeof host, cudaMemcpyDeviceToHost, s),
             "verification");
  cuda_check(cudaStreamSynchronize(s), "verification");
  return {host[0], host[1]};
}

// ---- measurements ------------------------------------------------------------------------

struct outcome {
  std::string skipped;           // not run, for this reason
  std::string problem;           // a wrong result, why; empty when verified
  std::vector<double> ms;        // the timed reps
  std::int64_t extra_bytes = -1;  // the workspace (single); -1: unknown (dist allocates its own)
  // dist only: the phases (max over ranks, mean over reps), bytes_sent (max over ranks) and
  // bound; the largest shard.
  dist::phase_times phases;
  std::uint64_t max_shard = 0;

  double median() const {
    std::vector<double> v = ms;
    std::ranges::sort(v);
    const std::size_t m = v.size() / 2;
    return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
  }
};

std::string no_room(std::uint64_t need, std::uint64_t free_bytes, int device) {
  char text[160];
  std::snprintf(text, sizeof text, "does not fit (about %.1f GiB needed on GPU %d, %.1f GiB free)",
                gigabytes(need), device, gigabytes(free_bytes));
  return text;
}

// A single-GPU sort of n keys (and values) on GPU 0.
template <class K, class V>
outcome run_single(const config& cfg, gpusort::algorithm algo, std::uint64_t n) {
  outcome o;
  cuda_check(cudaSetDevice(0), "cudaSetDevice");
  const owned_stream s;
  const gpusort::options opt{.algo = algo, .stream = s.get()};
  const std::uint64_t array_bytes = n * (sizeof(K) + value_size<V>());
  std::size_t free_bytes = 0, total_bytes = 0;
  cuda_check(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  // The keys and their pristine copy first: the workspace query needs the keys' address.
  // Values, if any, follow the keys in the same buffers.
  if (2 * array_bytes + margin_bytes > free_bytes) {
    o.skipped = no_room(2 * array_bytes, free_bytes, 0);
    return o;
  }
  const device_buffer keys(array_bytes), pristine(array_bytes);
  if (!keys.ok() || !pristine.ok()) {
    o.skipped = no_room(2 * array_bytes, free_bytes, 0);
    return o;
  }
  V* values = nullptr;
  V* pristine_values = nullptr;
  if constexpr (has_values<V>) {
    values = reinterpret_cast<V*>(keys.as<K>() + n);
    pristine_values = reinterpret_cast<V*>(pristine.as<K>() + n);
  }
  const auto sort = [&](void* temp, std::size_t& bytes) {
    if constexpr (has_values<V>)
      return gpusort::sort_pairs(temp, bytes, keys.as<K>(), values, n, opt);
    else
      return gpusort::sort_keys(temp, bytes, keys.as<K>(), n, opt);
  };
  std::size_t temp_bytes = 0;
  const std::string name(gpusort::to_string(algo));
  cuda_check(sort(nullptr, temp_bytes), name + ": workspace query");
  cuda_check(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  if (temp_bytes + margin_bytes > free_bytes) {
    o.skipped = no_room(2 * array_bytes + temp_bytes, free_bytes + 2 * array_bytes, 0);
    return o;
  }
  const device_buffer temp(temp_bytes);
  if (!temp.ok()) {
    o.skipped = no_room(2 * array_bytes + temp_bytes, free_bytes + 2 * array_bytes, 0);
    return o;
  }
  o.extra_bytes = static_cast<std::int64_t>(temp_bytes);
  generate(pristine.as<K>(), n, 0, cfg.seed, s.get());
  if constexpr (has_values<V>) make_values(pristine.as<K>(), pristine_values, n, s.get());
  const std::uint64_t input_sum = check(pristine.as<K>(), n, s.get()).checksum;

  const owned_event start, stop;
  for (int rep = 0; rep <= cfg.reps; ++rep) {  // rep 0: the warm-up
    cuda_check(cudaMemcpyAsync(keys.as<K>(), pristine.as<K>(), array_bytes,
                               cudaMemcpyDeviceToDevice, s.get()),
               "restoring the keys");
    cuda_check(cudaEventRecord(start.get(), s.get()), "cudaEventRecord");
    cuda_check(sort(temp.as<void>(), temp_bytes), name);
    cuda_check(cudaEventRecord(stop.get(), s.get()), "cudaEventRecord");
    cuda_check(cudaEventSynchronize(stop.get()), name);
    float ms = 0;
    cuda_check(cudaEventElapsedTime(&ms, start.get(), stop.get()), "cudaEventElapsedTime");
    if (rep > 0) o.ms.push_back(ms);
  }
  const check_sums out = check(keys.as<K>(), n, s.get());
  if (out.descents > 0)
    o.problem = "not sorted (" + std::to_string(out.descents) + " adjacent pairs out of order)";
  else if (out.checksum != input_sum)
    o.problem = "the keys differ from the input (checksum)";
  else if constexpr (has_values<V>)
    if (const std::uint64_t astray = values_astray(keys.as<K>(), values, n, s.get()))
      o.problem = std::to_string(astray) + " values are not beside their keys";
  return o;
}

// As a caller that sorts again and again would, the benchmark keeps each GPU's memory between
// reps (dist::kept_memory; the warm-up maps it), so that the reps time the sort and not the
// mapping of its buffers.
std::vector<std::unique_ptr<dist::kept_memory>> memory_kept_on(const std::vector<int>& devices) {
  std::vector<std::unique_ptr<dist::kept_memory>> kept;
  for (const int device : devices) kept.push_back(std::make_unique<dist::kept_memory>(device));
  return kept;
}

// The barrier's completion step: the time at which the last thread arrived.
struct stamp_time {
  clock_type::time_point* at;
  void operator()() noexcept { *at = clock_type::now(); }
};

// One thread per rank. The ranks meet at a barrier that stamps the time the last one arrived;
// a rank that throws makes the others stop at their next meeting instead of waiting for it in
// NCCL.
class rank_team {
 public:
  explicit rank_team(int ranks) : ranks_(ranks), meet_(ranks, stamp_time{&stamp_}) {}

  // Waits for every rank; false when a rank has failed (the caller returns).
  bool together() {
    meet_.arrive_and_wait();
    return !failed_.load();
  }
  // When the last rank arrived at the latest meeting.
  clock_type::time_point stamp() const { return stamp_; }

  // work(r) on one thread per rank; rethrows the first failure.
  template <class Work>
  void run(const Work& work) {
    gpusort::tools::on_every_rank(ranks_, work, [this](int) {
      failed_ = true;
      meet_.arrive_and_drop();
    });
  }

 private:
  int ranks_;
  std::atomic<bool> failed_{false};
  clock_type::time_point stamp_;
  std::barrier<stamp_time> meet_;
};

// The ranks of a run driven by one thread each in this process, rank r on GPU r: its
// communicators made for the run (ncclCommInitAll), its meetings at a std::barrier.
class thread_ranks {
 public:
  // g ranks on GPUs 0 .. g-1 over NCCL, or (one_gpu) all on GPU 0, exchanging by copies.
  thread_ranks(int g, bool one_gpu) : team_(g) {
    std::vector<int> devices(g);
    std::iota(devices.begin(), devices.end(), 0);
    comms_ = one_gpu ? dist::communicators_on_one_device(g, 0)
                     : dist::communicators_for_devices(devices);
  }
  const dist::communicator& comm(int r) const { return comms_[r]; }
  std::vector<int> devices() const {
    std::vector<int> all;
    for (const dist::communicator& c : comms_) all.push_back(c.device());
    return all;
  }
  bool together() { return team_.together(); }
  clock_type::time_point stamp() const { return team_.stamp(); }
  template <class Work>
  void run(const Work& work) {
    team_.run(work);
  }
  // One address space: every rank's entry is already in v.
  template <class T>
  void share(std::vector<T>&) {}

 private:
  rank_team team_;
  std::vector<dist::communicator> comms_;
};

// This process as one rank of a job that a launcher started (--processes: torchrun, mpirun,
// srun or scripts/dist-launch.sh; dist::communicator_from_environment). Meetings are an NCCL
// all-reduce waited for on the host, so a rank's clock starts when the all-reduce returns, the
// last rank having arrived; results are shared by NCCL all-gathers.
class process_ranks {
 public:
  explicit process_ranks(const dist::communicator& comm) : comm_(comm), flag_(sizeof(int)) {
    require(flag_, "the meeting flag");
  }
  int rank() const { return comm_.rank(); }
  int size() const { return comm_.size(); }
  const dist::communicator& comm(int) const { return comm_; }
  std::vector<int> devices() const { return {comm_.device()}; }
  bool together() {
    if (ncclAllReduce(flag_.as<int>(), flag_.as<int>(), 1, ncclInt32, ncclSum, comm_.get(),
                      stream_.get()) != ncclSuccess)
      throw std::runtime_error("ncclAllReduce (a meeting of the ranks)");
    cuda_check(cudaStreamSynchronize(stream_.get()), "a meeting of the ranks");
    stamp_ = clock_type::now();
    return true;
  }
  clock_type::time_point stamp() const { return stamp_; }
  template <class Work>
  void run(const Work& work) {
    work(comm_.rank());
  }
  // v[rank()] to every rank's v (v has an entry per rank).
  template <class T>
  void share(std::vector<T>& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    const device_buffer all(sizeof(T) * v.size());
    require(all, "the shared results");
    char* mine = all.as<char>() + sizeof(T) * rank();
    cuda_check(cudaMemcpy(mine, &v[rank()], sizeof(T), cudaMemcpyHostToDevice), "sharing results");
    if (ncclAllGather(mine, all.as<char>(), sizeof(T), ncclUint8, comm_.get(), stream_.get()) !=
        ncclSuccess)
      throw std::runtime_error("ncclAllGather (the results)");
    cuda_check(cudaStreamSynchronize(stream_.get()), "sharing results");
    cuda_check(cudaMemcpy(v.data(), all.as<char>(), sizeof(T) * v.size(), cudaMemcpyDeviceToHost),
               "sharing results");
  }

 private:
  const dist::communicator& comm_;
  owned_stream stream_;
  device_buffer flag_;
  clock_type::time_point stamp_;
};

// Why counts[r] keys (and values) do not fit on GPU `device` (5 shards' worth: the input, its
// pristine copy, the local sort's workspace or the two receive buffers, and room for the
// merge), or "" where they do.
template <class K, class V>
std::string no_room_for_shard(std::uint64_t n, int device) {
  cuda_check(cudaSetDevice(device), "cudaSetDevice");
  std::size_t free_bytes = 0, total_bytes = 0;
  cuda_check(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  const std::uint64_t need = 5 * n * (sizeof(K) + value_size<V>());
  return need + margin_bytes > free_bytes ? no_room(need, free_bytes, device) : "";
}

// dist::sort over counts.size() ranks (counts[r] keys on rank r), driven by `ranks`
// (thread_ranks or process_ranks). The shards must fit (no_room_for_shard).
template <class K, class V, class Ranks>
outcome run_dist(const config& cfg, const std::vector<std::uint64_t>& counts,
                 const dist::options& shape, Ranks& ranks) {
  outcome o;
  const int g = static_cast<int>(counts.size());
  const auto kept = memory_kept_on(ranks.devices());
  std::vector<std::uint64_t> first(g, 0);  // the global index of each rank's first key
  for (int r = 1; r < g; ++r) first[r] = first[r - 1] + counts[r - 1];
  const std::uint64_t total = first.back() + counts.back();

  // Each rank's thread writes its own entries only.
  std::vector<std::vector<dist::phase_times>> times(cfg.reps, std::vector<dist::phase_times>(g));
  std::vector<std::uint64_t> sizes(g), descents(g), in_sums(g), out_sums(g), astray(g);
  std::vector<K> first_key(g), last_key(g);
  ranks.run([&](int r) {
    cuda_check(cudaSetDevice(ranks.comm(r).device()), "cudaSetDevice");
    const owned_stream s;
    const std::uint64_t n = counts[r];
    // Values, if any, follow the keys in the same buffers.
    const std::uint64_t bytes = n * (sizeof(K) + value_size<V>());
    const device_buffer keys(bytes), pristine(bytes);
    require(keys, "the shard on GPU " + std::to_string(r));
    require(pristine, "the shard's pristine copy on GPU " + std::to_string(r));
    generate(pristine.as<K>(), n, first[r], cfg.seed, s.get());
    if constexpr (has_values<V>)
      make_values(pristine.as<K>(), reinterpret_cast<V*>(pristine.as<K>() + n), n, s.get());
    in_sums[r] = check(pristine.as<K>(), n, s.get()).checksum;
    dist::options opt = shape;
    opt.stream = s.get();
    std::conditional_t<has_values<V>, dist::shard<K, V>, dist::shard<K>> result;
    clock_type::time_point start;
    for (int rep = 0; rep <= cfg.reps; ++rep) {  // rep 0: the warm-up
      result = {};  // only the last rep's shard is kept (for the verification)
      cuda_check(cudaMemcpyAsync(keys.as<K>(), pristine.as<K>(), bytes,
                                 cudaMemcpyDeviceToDevice, s.get()),
                 "restoring the shard");
      cuda_check(cudaDeviceSynchronize(), "restoring the shard");
      if (!ranks.together()) return;  // every GPU idle: the clock starts
      if (r == 0) start = ranks.stamp();
      if constexpr (has_values<V>)
        result = dist::sort(ranks.comm(r), std::span<K>(keys.as<K>(), n),
                            std::span<V>(reinterpret_cast<V*>(keys.as<K>() + n), n), opt);
      else
        result = dist::sort(ranks.comm(r), std::span<K>(keys.as<K>(), n), opt);
      if (!ranks.together()) return;  // every rank's sort has returned: the clock stops
      if (rep == 0) continue;
      times[rep - 1][r] = result.times();
      if (r == 0)
        o.ms.push_back(std::chrono::duration<double, std::milli>(ranks.stamp() - start).count());
    }
    sizes[r] = result.size();
    const check_sums out = check(result.keys().data(), result.size(), s.get());
    descents[r] = out.descents;
    out_sums[r] = out.checksum;
    if constexpr (has_values<V>)
      astray[r] = values_astray(result.keys().data(), result.values().data(), result.size(),
                                s.get());
    if (result.size() > 0) {
      const K* d = result.keys().data();
      cuda_check(cudaMemcpy(&first_key[r], d, sizeof(K), cudaMemcpyDeviceToHost), "verification");
      cuda_check(cudaMemcpy(&last_key[r], d + result.size() - 1, sizeof(K),
                            cudaMemcpyDeviceToHost),
                 "verification");
    }
  });
  for (std::vector<dist::phase_times>& rep : times) ranks.share(rep);
  for (std::vector<std::uint64_t>* v : {&sizes, &descents, &in_sums, &out_sums, &astray})
    ranks.share(*v);
  ranks.share(first_key);
  ranks.share(last_key);

  // The phases: max over ranks in each rep, then the mean over reps.
  for (const std::vector<dist::phase_times>& rep : times) {
    dist::phase_times m;
    for (const dist::phase_times& t : rep) {
      m.local_sort_ms = std::max(m.local_sort_ms, t.local_sort_ms);
      m.sampling_ms = std::max(m.sampling_ms, t.sampling_ms);
      m.exchange_ms = std::max(m.exchange_ms, t.exchange_ms);
      m.merge_ms = std::max(m.merge_ms, t.merge_ms);
      m.total_ms = std::max(m.total_ms, t.total_ms);
      m.bytes_sent = std::max(m.bytes_sent, t.bytes_sent);
      m.bytes_received = std::max(m.bytes_received, t.bytes_received);
      m.total_keys = t.total_keys;
      m.bound = t.bound;
    }
    o.phases.local_sort_ms += m.local_sort_ms / cfg.reps;
    o.phases.sampling_ms += m.sampling_ms / cfg.reps;
    o.phases.exchange_ms += m.exchange_ms / cfg.reps;
    o.phases.merge_ms += m.merge_ms / cfg.reps;
    o.phases.total_ms += m.total_ms / cfg.reps;
    o.phases.bytes_sent = m.bytes_sent;  // the same keys every rep: the same bytes
    o.phases.bytes_received = m.bytes_received;
    o.phases.total_keys = m.total_keys;
    o.phases.bound = m.bound;
  }
  o.max_shard = *std::ranges::max_element(sizes);

  // Verification.
  const std::uint64_t sorted_keys = std::accumulate(sizes.begin(), sizes.end(), std::uint64_t{0});
  std::uint64_t in_sum = 0, out_sum = 0;  // wrap around, as on the device
  for (int r = 0; r < g; ++r) {
    in_sum += in_sums[r];
    out_sum += out_sums[r];
  }
  int previous = -1;  // the last rank with keys
  for (int r = 0; r < g && o.problem.empty(); ++r) {
    if (descents[r] > 0)
      o.problem = "rank " + std::to_string(r) + "'s shard is not sorted (" +
                  std::to_string(descents[r]) + " adjacent pairs out of order)";
    else if (sizes[r] > 0 && previous >= 0 && gpusort::less<K>{}(first_key[r], last_key[previous]))
      o.problem = "rank " + std::to_string(r) + "'s first key is below the last key of rank " +
                  std::to_string(previous);
    if (sizes[r] > 0) previous = r;
  }
  if (o.problem.empty() && sorted_keys != total)
    o.problem = "the shards hold " + std::to_string(sorted_keys) + " keys, not " +
                std::to_string(total);
  if (o.problem.empty() && in_sum != out_sum)
    o.problem = "the shards' keys differ from the input (checksum)";
  for (int r = 0; r < g && o.problem.empty(); ++r)
    if (astray[r] > 0)
      o.problem = "rank " + std::to_string(r) + ": " + std::to_string(astray[r]) +
                  " values are not beside their keys";
  return o;
}

// NCCL's own all-to-all on the same communicators, for the bytes dist::sort exchanges: rank r
// sends counts[r] / g items (a key and its value: item_bytes) to each other rank (grouped ncclSend / ncclRecv, as
// torch.distributed's all_to_all does) and copies its own part locally. Timed as run_dist
// (barrier to barrier, the slowest rank); exchange_ms holds the max over ranks of CUDA events
// around the group, and bytes_sent what a rank sends to the others.
template <class Ranks>
outcome run_alltoall(const config& cfg, const std::vector<std::uint64_t>& counts,
                     std::uint64_t item_bytes, Ranks& ranks) {
  outcome o;
  const int g = static_cast<int>(counts.size());
  // event_ms[rep][r]: each rank's entries, shared after the run.
  std::vector<std::vector<double>> event_ms(cfg.reps, std::vector<double>(g, 0.0));
  const auto chunk = [&](int r) { return counts[r] / g; };  // keys rank r sends to each rank
  ranks.run([&](int r) {
    const dist::communicator& comm = ranks.comm(r);
    cuda_check(cudaSetDevice(comm.device()), "cudaSetDevice");
    const owned_stream s;
    std::uint64_t received = 0;
    for (int q = 0; q < g; ++q) received += chunk(q);
    const device_buffer send(g * chunk(r) * item_bytes), recv(received * item_bytes);
    require(send, "the all-to-all's send buffer on GPU " + std::to_string(r));
    require(recv, "the all-to-all's receive buffer on GPU " + std::to_string(r));
    const owned_event start, stop;
    clock_type::time_point wall_start;
    for (int rep = 0; rep <= cfg.reps; ++rep) {
      cuda_check(cudaDeviceSynchronize(), "all-to-all");
      if (!ranks.together()) return;
      if (r == 0) wall_start = ranks.stamp();
      cuda_check(cudaEventRecord(start.get(), s.get()), "cudaEventRecord");
      std::uint64_t at = 0;
      if (ncclGroupStart() != ncclSuccess) throw std::runtime_error("ncclGroupStart");
      for (int q = 0; q < g; ++q) {
        const char* out = send.as<char>() + q * chunk(r) * item_bytes;
        char* in = recv.as<char>() + at * item_bytes;
        if (q == r) {
          cuda_check(cudaMemcpyAsync(in, out, chunk(r) * item_bytes, cudaMemcpyDeviceToDevice,
                                     s.get()),
                     "all-to-all: the local part");
        } else {
          if (ncclSend(out, chunk(r) * item_bytes, ncclUint8, q, comm.get(), s.get()) !=
                  ncclSuccess ||
              ncclRecv(in, chunk(q) * item_bytes, ncclUint8, q, comm.get(), s.get()) !=
                  ncclSuccess)
            throw std::runtime_error("ncclSend/ncclRecv");
        }
        at += chunk(q);
      }
      if (ncclGroupEnd() != ncclSuccess) throw std::runtime_error("ncclGroupEnd");
      cuda_check(cudaEventRecord(stop.get(), s.get()), "cudaEventRecord");
      cuda_check(cudaStreamSynchronize(s.get()), "all-to-all");
      if (!ranks.together()) return;
      if (rep == 0) continue;
      float ms = 0;
      cuda_check(cudaEventElapsedTime(&ms, start.get(), stop.get()), "cudaEventElapsedTime");
      event_ms[rep - 1][r] = ms;
      if (r == 0)
        o.ms.push_back(
            std::chrono::duration<double, std::milli>(ranks.stamp() - wall_start).count());
    }
  });
  for (std::vector<double>& rep : event_ms) {
    ranks.share(rep);
    o.phases.exchange_ms += *std::ranges::max_element(rep) / cfg.reps;
  }
  for (int r = 0; r < g; ++r)
    o.phases.bytes_sent = std::max(o.phases.bytes_sent, (g - 1) * chunk(r) * item_bytes);
  o.max_shard = counts[0];
  o.phases.bound = counts[0];
  return o;
}

// ---- output ------------------------------------------------------------------------------

class reporter {
 public:
  reporter(const std::string& csv_path, std::string gpu_name)
      : csv_path_(csv_path), gpu_name_(std::move(gpu_name)) {
    if (csv_path.empty()) return;
    // Opened before any timing, so that a bad path fails at once. Appending to a file of
    // other columns would corrupt it: refused.
    bool fresh = true;
    if (std::ifstream in(csv_path); in) {
      std::string line;
      if (std::getline(in, line)) {
        fresh = false;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line != csv_header)
          throw usage_error(csv_path + ": its header is not gpusort-dist-bench's; use a new file");
      }
    }
    csv_ = std::fopen(csv_path.c_str(), "a");
    if (!csv_) throw usage_error(csv_path + ": cannot open for appending");
    if (fresh) write_csv(std::string(csv_header) + "\n");
  }
  ~reporter() {
    if (csv_) std::fclose(csv_);
  }
  reporter(const reporter&) = delete;
  reporter& operator=(const reporter&) = delete;

  int wrong() const { return wrong_; }
  // The value type of the rows that follow ("none": keys alone).
  void set_values(std::string name) { values_ = std::move(name); }

  static void print_header() {
    std::printf("%-6s %-16s %-7s %4s %13s %10s %8s %9s %9s %9s %9s %11s %9s %11s %11s\n",
                "mode", "algorithm", "keys", "gpus", "n", "median ms", "Gkeys/s", "local ms",
                "sample ms", "exch ms", "merge ms", "MB sent/GPU", "exch GB/s", "shard/ideal",
                "bound/ideal");
    std::fflush(stdout);
  }

  void skip(const char* mode, const std::string& algorithm, std::string_view keys, int gpus,
            std::uint64_t n, const std::string& why) {
    std::printf("%-6s %-16s %-7s %4d %13llu  skipped: %s\n", mode, algorithm.c_str(),
                label(keys).c_str(), gpus, static_cast<unsigned long long>(n), why.c_str());
    std::fflush(stdout);
  }

  void report(const char* mode, const std::string& algorithm, std::string_view keys, int gpus,
              std::uint64_t n, const outcome& o) {
    if (!o.skipped.empty()) return skip(mode, algorithm, keys, gpus, n, o.skipped);
    if (!o.problem.empty()) {
      std::fprintf(stderr,
                   "gpusort-dist-bench: WRONG RESULT from %s (%s, %s keys, %d GPU(s), "
                   "n %llu): %s\n",
                   algorithm.c_str(), mode, label(keys).c_str(), gpus,
                   static_cast<unsigned long long>(n), o.problem.c_str());
      std::printf("%-6s %-16s %-7s %4d %13llu  WRONG RESULT (see stderr)\n", mode,
                  algorithm.c_str(), label(keys).c_str(), gpus,
                  static_cast<unsigned long long>(n));
      std::fflush(stdout);
      ++wrong_;
      return;
    }
    const std::string_view m(mode);
    const bool is_dist = m.starts_with("weak") || m.starts_with("strong");
    const double median = o.median(), keys_per_s = static_cast<double>(n) / (median * 1e-3);
    const double ideal = static_cast<double>(n) / gpus;
    std::printf("%-6s %-16s %-7s %4d %13llu %10.3f %8.3f", mode, algorithm.c_str(),
                label(keys).c_str(), gpus, static_cast<unsigned long long>(n), median,
                keys_per_s * 1e-9);
    // GB/s a rank sends to the others during the exchange (1 GB = 1e9 bytes, as NCCL says).
    const double exchange_gbps = o.phases.exchange_ms > 0
                                     ? static_cast<double>(o.phases.bytes_sent) /
                                           (o.phases.exchange_ms * 1e6)
                                     : 0;
    if (is_dist)
      std::printf(" %9.3f %9.3f %9.3f %9.3f %11.1f %9.1f %11.4f %11.4f\n",
                  o.phases.local_sort_ms, o.phases.sampling_ms, o.phases.exchange_ms,
                  o.phases.merge_ms, static_cast<double>(o.phases.bytes_sent) * 1e-6,
                  exchange_gbps, static_cast<double>(o.max_shard) / ideal,
                  static_cast<double>(o.phases.bound) / ideal);
    else
      std::printf(" %9s %9s %9s %9s %11s %9s %11s %11s\n", "-", "-", "-", "-", "-", "-", "-",
                  "-");
    std::fflush(stdout);
    if (!csv_) return;
    char numbers[512];
    std::snprintf(numbers, sizeof numbers, "%llu,0,%.6f,%.0f,%lld",
                  static_cast<unsigned long long>(n), median, keys_per_s,
                  static_cast<long long>(o.extra_bytes));
    std::string line = algorithm + "," + std::string(keys) + "," + values_ + ",uniform," +
                       numbers + "," +
                       csv_field(is_dist ? gpu_name_ + " x" + std::to_string(gpus) : gpu_name_) +
                       "," + csv_field(GPUSORT_COMMIT) + "," + std::to_string(gpus) + "," + mode;
    if (is_dist)
      std::snprintf(numbers, sizeof numbers, ",%.6f,%.6f,%.6f,%.6f,%llu,%llu,%llu\n",
                    o.phases.local_sort_ms, o.phases.sampling_ms, o.phases.exchange_ms,
                    o.phases.merge_ms, static_cast<unsigned long long>(o.phases.bytes_sent),
                    static_cast<unsigned long long>(o.max_shard),
                    static_cast<unsigned long long>(o.phases.bound));
    else
      std::snprintf(numbers, sizeof numbers, ",,,,,,,\n");
    write_csv(line + numbers);
  }

 private:
  void write_csv(const std::string& text) {
    if (std::fputs(text.c_str(), csv_) < 0 || std::fflush(csv_) != 0)
      throw std::runtime_error(csv_path_ + ": write failed");
  }

  // "u32" for keys alone, "u32+u64" for pairs: the text's keys column.
  std::string label(std::string_view keys) const {
    return values_ == "none" ? std::string(keys) : std::string(keys) + "+" + values_;
  }

  std::string csv_path_, gpu_name_, values_ = "none";
  std::FILE* csv_ = nullptr;
  int wrong_ = 0;
};

// ---- the program -------------------------------------------------------------------------

std::uint64_t parse_size(const gpusort::tools::arguments& args, const std::string& name,
                         std::uint64_t fallback) {
  if (!args.has(name)) return fallback;
  const std::uint64_t n = gpusort::tools::parse_count(args.get(name), "--" + name);
  if (n < 1 || n > largest_count)
    throw usage_error("--" + name + ": from 1 to 2^48 keys, not " + args.get(name));
  return n;
}

// --name's comma-separated list of numbers, each one `accepted` (else a usage error saying
// what is: `wanted`), or fallback if the option is absent.
template <class Accepted>
std::vector<int> parse_list(const gpusort::tools::arguments& args, const std::string& name,
                            std::vector<int> fallback, const Accepted& accepted,
                            const std::string& wanted) {
  if (!args.has(name)) return fallback;
  std::vector<int> list;
  for (const std::string& item : gpusort::tools::split(args.get(name), ',')) {
    const std::uint64_t v = gpusort::tools::parse_unsigned(item, "--" + name);
    if (!accepted(v)) throw usage_error("--" + name + ": " + wanted + ", not '" + item + "'");
    list.push_back(static_cast<int>(v));
  }
  return list;
}

// The configuration, or none for --help.
std::optional<config> parse(int argc, char** argv) {
  const gpusort::tools::arguments args = gpusort::tools::parse_arguments(
      argc, argv,
      {"gpus", "per-gpu", "total", "reps", "types", "values", "seed", "csv", "fan-in", "merge",
       "split", "sub-buckets"},
      {"help", "processes", "one-gpu", "partition-first", "overlap", "copy-engines"});
  if (args.has("help")) return std::nullopt;
  args.positional(0, "options only");
  config cfg;
  cfg.gpus = parse_list(args, "gpus", cfg.gpus, [](std::uint64_t g) { return g >= 1 && g <= 1024; },
                        "a GPU count from 1 to 1024");
  cfg.per_gpu = parse_size(args, "per-gpu", cfg.per_gpu);
  cfg.total = parse_size(args, "total", cfg.total);
  if (args.has("reps")) {
    const std::uint64_t reps = gpusort::tools::parse_unsigned(args.get("reps"), "--reps");
    if (reps < 1 || reps > 100000) throw usage_error("--reps: from 1 to 100000");
    cfg.reps = static_cast<int>(reps);
  }
  if (args.has("types")) cfg.types = gpusort::tools::split(args.get("types"), ',');
  for (const std::string& type : cfg.types) {  // with_key_type throws for an unknown name
    std::size_t key_bytes = 0;
    gpusort::tools::with_key_type(type, [&key_bytes]<class K>() { key_bytes = sizeof(K); });
  }
  cfg.value_bytes = parse_list(args, "values", cfg.value_bytes,
                               [](std::uint64_t v) { return v == 0 || v == 4 || v == 8; },
                               "0, 4 or 8");
  cfg.fan_ins = parse_list(args, "fan-in", cfg.fan_ins,
                           [](std::uint64_t f) { return f >= 2 && f <= 8; }, "from 2 to 8");
  if (args.has("seed")) cfg.seed = gpusort::tools::parse_unsigned(args.get("seed"), "--seed");
  cfg.csv = args.get("csv");
  cfg.processes = args.has("processes");
  cfg.one_gpu = args.has("one-gpu");
  cfg.partition_first = args.has("partition-first");
  cfg.sub_buckets = parse_list(
      args, "sub-buckets", cfg.sub_buckets,
      [](std::uint64_t c) { return c <= gpusort::detail::index_math::dist::max_sub_buckets; },
      "from 0 to 8");
  if (args.has("sub-buckets") && !cfg.partition_first)
    throw usage_error("--sub-buckets: with --partition-first");
  cfg.copy_engines = args.has("copy-engines");
  if (cfg.copy_engines && (args.has("processes") || args.has("one-gpu")))
    throw usage_error("--copy-engines: ranks that are threads on their own GPUs, not with " +
                      std::string(args.has("processes") ? "--processes" : "--one-gpu"));
  cfg.merge_runs = parse_list(args, "merge", {}, [](std::uint64_t r) { return r >= 2 && r <= 64; },
                              "run counts from 2 to 64");
  cfg.split_buckets = parse_list(
      args, "split", {},
      [](std::uint64_t b) {
        return b >= 2 && b <= gpusort::detail::index_math::dist::max_partition_ranks;
      },
      "bucket counts from 2 to 255");
  cfg.overlap = args.has("overlap");
  if (int(cfg.processes) + int(cfg.one_gpu) + int(!cfg.merge_runs.empty()) +
          int(!cfg.split_buckets.empty()) + int(cfg.overlap) > 1)
    throw usage_error("one of --processes, --one-gpu, --merge, --split and --overlap");
  for (const bool alone : {!cfg.merge_runs.empty(), !cfg.split_buckets.empty(), cfg.overlap}) {
    if (!alone) continue;
    const std::string flag = cfg.overlap                ? "--overlap"
                             : cfg.merge_runs.empty() ? "--split"
                                                      : "--merge";
    for (const std::string& type : cfg.types)
      if (type != "u32" && type != "u64" && type != "f32")
        throw usage_error(flag + ": key types u32, u64 and f32, not " + type);
    for (int v : cfg.value_bytes)
      if (v == 8 || (cfg.overlap && v != 0))
        throw usage_error(flag + (cfg.overlap ? ": keys alone (--values 0)" : ": --values 0 or 4"));
  }
  return cfg;
}

// How the GPUs are linked, for the log: device count, NVLS setting, peer access.
std::string print_environment(const config& cfg, int device_count) {
  int nccl = 0;
  if (ncclGetVersion(&nccl) != ncclSuccess) nccl = 0;
  std::printf("gpusort-dist-bench, commit %s, NCCL %d.%d.%d\n", GPUSORT_COMMIT, nccl / 10000,
              nccl % 10000 / 100, nccl % 100);
  const char* nvls = std::getenv("NCCL_NVLS_ENABLE");
  std::printf("NCCL_NVLS_ENABLE=%s\n",
              nvls ? nvls : "(unset: gpusort::dist sets 0 when it makes communicators)");
  std::printf("%d visible CUDA device(s)\n", device_count);
  std::string name0;
  for (int d = 0; d < device_count; ++d) {
    cudaDeviceProp prop{};
    cuda_check(cudaGetDeviceProperties(&prop, d), "cudaGetDeviceProperties");
    if (d == 0) name0 = prop.name;
    std::printf("  GPU %d: %s, %.1f GiB, PCI %04x:%02x:%02x\n", d, prop.name,
                gigabytes(prop.totalGlobalMem), prop.pciDomainID, prop.pciBusID, prop.pciDeviceID);
  }
  for (int d = 1; d < device_count; ++d) {
    int can = 0, rank = -1;
    cuda_check(cudaDeviceCanAccessPeer(&can, 0, d), "cudaDeviceCanAccessPeer");
    if (can) cudaDeviceGetP2PAttribute(&rank, cudaDevP2PAttrPerformanceRank, 0, d);
    cudaGetLastError();
    if (can)
      std::printf("  peer access 0->%d: yes (performance rank %d)\n", d, rank);
    else
      std::printf("  peer access 0->%d: no\n", d);
  }
  std::printf("median of %d reps after 1 warm-up; uniform keys, seed %llu\n"
              "dist: wall time of the slowest rank (host clock, barrier to barrier); phases: max "
              "over ranks, mean over reps; MB sent/GPU: max over ranks\n"
              "shard/ideal: the largest shard / (n / gpus); bound/ideal: the most keys a rank "
              "could receive / (n / gpus)\nsingle: CUDA events around the sort on GPU 0\n",
              cfg.reps, static_cast<unsigned long long>(cfg.seed));
  return name0;
}

// The dist::sort options of each dist row: every --fan-in, and with --partition-first once
// more with partition_first for each --sub-buckets (it has no merge, so no fan-in); with
// --copy-engines each of them again by copy engines.
std::vector<dist::options> dist_shapes(const config& cfg) {
  std::vector<dist::options> shapes;
  for (int fan_in : cfg.fan_ins) shapes.push_back({.merge_fan_in = fan_in});
  if (cfg.partition_first)
    for (int sub : cfg.sub_buckets)
      shapes.push_back({.partition_first = true, .sub_buckets = sub});
  if (cfg.copy_engines)
    for (std::size_t i = 0, by_nccl = shapes.size(); i < by_nccl; ++i) {
      shapes.push_back(shapes[i]);
      shapes.back().copy_engines = true;
    }
  return shapes;
}

// The name of dist::sort's rows with those options.
std::string dist_row_name(const dist::options& shape) {
  const std::string by = shape.copy_engines ? "_copy_engines" : "";
  if (shape.partition_first)
    return (shape.sub_buckets == dist::options{}.sub_buckets
                ? "dist_partition_first"
                : "dist_partition_first_sub_" + std::to_string(shape.sub_buckets)) +
           by;
  return (shape.merge_fan_in == dist::options{}.merge_fan_in
              ? "dist_sample_sort"
              : "dist_sample_sort_fan_in_" + std::to_string(shape.merge_fan_in)) +
         by;
}

// Every row of one key type and value type: the one-GPU baselines, then weak and strong
// scaling with NCCL's all-to-all of the same bytes beside each.
template <class K, class V>
void run_key_type(const config& cfg, reporter& out, int device_count) {
  const std::string dist_name = "dist_sample_sort";
  const std::string_view keys = gpusort::key_traits<K>::name;
  out.set_values(value_name<V>());
  std::vector<std::uint64_t> sizes{cfg.per_gpu};
  if (cfg.total != cfg.per_gpu) sizes.push_back(cfg.total);
  for (std::uint64_t n : sizes)
    for (gpusort::algorithm algo : {gpusort::algorithm::automatic, gpusort::algorithm::cub_radix})
      out.report("single", std::string(gpusort::to_string(algo)), keys, 1, n,
                 run_single<K, V>(cfg, algo, n));
  // An array, not a braced list in a conditional: that list's storage ends with the
  // expression, and the loop would read the modes' names from a dead array.
  using modes = std::array<const char*, 2>;
  const modes names = cfg.one_gpu ? modes{"weak-1gpu", "strong-1gpu"} : modes{"weak", "strong"};
  for (const char* mode : names) {
    const bool weak = std::string_view(mode).starts_with("weak");
    for (int g : cfg.gpus) {
      const std::uint64_t n = weak ? cfg.per_gpu * g : cfg.total;
      if (g > device_count && !cfg.one_gpu) {
        out.skip(mode, dist_name, keys, g, n,
                 "only " + std::to_string(device_count) + " visible GPU(s)");
        continue;
      }
      std::vector<std::uint64_t> counts(g, cfg.per_gpu);
      if (!weak)  // as even as can be: the first total % g ranks hold one key more
        for (int r = 0; r < g; ++r)
          counts[r] = cfg.total / g + (static_cast<std::uint64_t>(r) < cfg.total % g ? 1 : 0);
      std::string no_room;
      if (cfg.one_gpu)  // every shard on GPU 0
        no_room = no_room_for_shard<K, V>(n, 0);
      for (int r = 0; r < g && no_room.empty() && !cfg.one_gpu; ++r)
        no_room = no_room_for_shard<K, V>(counts[r], r);
      if (!no_room.empty()) {
        out.skip(mode, dist_name, keys, g, n, no_room);
        continue;
      }
      thread_ranks ranks(g, cfg.one_gpu);
      for (const dist::options& shape : dist_shapes(cfg))
        out.report(mode, dist_row_name(shape), keys, g, n,
                   run_dist<K, V>(cfg, counts, shape, ranks));
      if (g > 1 && !cfg.one_gpu)
        out.report(mode, "nccl_alltoall", keys, g, n,
                   run_alltoall(cfg, counts, sizeof(K) + value_size<V>(), ranks));
    }
  }
}

// --processes: this process is one rank of the job; weak and strong scaling on the job's
// ranks, reported by rank 0 (out is null on the others) as modes weak-proc and strong-proc.
template <class K, class V>
void run_key_type_in_processes(const config& cfg, reporter* out, process_ranks& ranks) {
  const std::string dist_name = "dist_sample_sort";
  const std::string_view keys = gpusort::key_traits<K>::name;
  if (out) out->set_values(value_name<V>());
  const int g = ranks.size();
  for (const char* mode : {"weak-proc", "strong-proc"}) {
    const bool weak = std::string_view(mode) == "weak-proc";
    const std::uint64_t n = weak ? cfg.per_gpu * g : cfg.total;
    std::vector<std::uint64_t> counts(g, cfg.per_gpu);
    if (!weak)
      for (int r = 0; r < g; ++r)
        counts[r] = cfg.total / g + (static_cast<std::uint64_t>(r) < cfg.total % g ? 1 : 0);
    std::vector<int> fits(g, 0);
    fits[ranks.rank()] = no_room_for_shard<K, V>(counts[ranks.rank()], ranks.comm(0).device()).empty();
    ranks.share(fits);
    if (std::ranges::find(fits, 0) != fits.end()) {
      if (out) out->skip(mode, dist_name, keys, g, n, "does not fit on every rank's GPU");
      continue;
    }
    for (const dist::options& shape : dist_shapes(cfg)) {
      const outcome sorted = run_dist<K, V>(cfg, counts, shape, ranks);
      if (out) out->report(mode, dist_row_name(shape), keys, g, n, sorted);
    }
    if (g > 1) {
      const outcome exchanged = run_alltoall(cfg, counts, sizeof(K) + value_size<V>(), ranks);
      if (out) out->report(mode, "nccl_alltoall", keys, g, n, exchanged);
    }
  }
}

// ---- the merge alone (--merge) ----------------------------------------------------------

// --total keys (and values) in `runs` sorted runs on GPU 0, merged by dist's merge_runs with
// merge fan-in fan_in on one stream, or (fan_in 0) copied once: CUDA events around the call,
// the median of --reps after a warm-up. The merged run is verified.
template <class K, class V>
outcome run_merge(const config& cfg, int runs, int fan_in) {
  namespace internal = gpusort::dist::detail;
  using merge_value = std::conditional_t<has_values<V>, V, gpusort::detail::no_value>;
  outcome o;
  const std::uint64_t n = cfg.total;
  if (const std::string why = no_room_for_shard<K, V>(n, 0); !why.empty()) {
    o.skipped = why;
    return o;
  }
  const dist::kept_memory kept(0);
  const owned_stream s;
  const device_buffer input(n * (sizeof(K) + value_size<V>()));
  require(input, "the runs");
  K* keys = input.as<K>();
  V* values = reinterpret_cast<V*>(keys + n);
  generate(keys, n, 0, cfg.seed, s.get());
  if constexpr (has_values<V>) make_values(keys, values, n, s.get());
  const std::uint64_t in_sum = check(keys, n, s.get()).checksum;
  std::vector<internal::run_view<K, merge_value>> views;
  for (int q = 0; q < runs; ++q) {  // as even as can be, the first n % runs one key longer
    const std::uint64_t first = n / runs * q + std::min<std::uint64_t>(q, n % runs);
    const std::uint64_t length = n / runs + (static_cast<std::uint64_t>(q) < n % runs ? 1 : 0);
    if constexpr (has_values<V>) {
      gpusort::sort(std::span<K>(keys + first, length), std::span<V>(values + first, length));
      views.push_back({keys + first, values + first, length});
    } else {
      gpusort::sort(std::span<K>(keys + first, length));
      views.push_back({keys + first, nullptr, length});
    }
  }
  cuda_check(cudaDeviceSynchronize(), "sorting the runs");
  const std::string what = "gpusort-dist-bench --merge";
  internal::device_memory key_buffers[2] = {{sizeof(K) * n, s.get(), what},
                                            {sizeof(K) * n, s.get(), what}};
  internal::device_memory value_buffers[2];
  if constexpr (has_values<V>)
    for (internal::device_memory& b : value_buffers) b = {sizeof(V) * n, s.get(), what};
  const gpusort::detail::index_math::dist::order_code<K> code(gpusort::order::ascending,
                                                              gpusort::nan_order::last);
  const owned_event start, stop;
  int result = 0;
  for (int rep = 0; rep <= cfg.reps; ++rep) {
    cuda_check(cudaEventRecord(start.get(), s.get()), "cudaEventRecord");
    if (fan_in == 0) {
      internal::copy_async(static_cast<K*>(key_buffers[0].get()), keys, n, s.get());
      if constexpr (has_values<V>)
        internal::copy_async(static_cast<V*>(value_buffers[0].get()), values, n, s.get());
    } else {
      result = internal::merge_runs<K, merge_value>(key_buffers, value_buffers, views, n, code,
                                                    fan_in, s.get(), what);
    }
    cuda_check(cudaEventRecord(stop.get(), s.get()), "cudaEventRecord");
    cuda_check(cudaEventSynchronize(stop.get()), "the merge");
    float ms = 0;
    cuda_check(cudaEventElapsedTime(&ms, start.get(), stop.get()), "cudaEventElapsedTime");
    if (rep > 0) o.ms.push_back(ms);
  }
  const K* merged = static_cast<const K*>(key_buffers[result].get());
  const check_sums out = check(merged, n, s.get());
  if (fan_in > 0 && out.descents > 0)
    o.problem = std::to_string(out.descents) + " adjacent pairs out of order";
  else if (out.checksum != in_sum)
    o.problem = "the keys differ from the input (checksum)";
  if constexpr (has_values<V>)
    if (o.problem.empty())
      if (const std::uint64_t astray = values_astray(
              merged, static_cast<const V*>(value_buffers[result].get()), n, s.get()))
        o.problem = std::to_string(astray) + " values are not beside their keys";
  return o;
}

template <class K, class V>
void run_merge_rows(const config& cfg, reporter& out) {
  const std::string_view keys = gpusort::key_traits<K>::name;
  out.set_values(value_name<V>());
  out.report("merge", "d2d_copy", keys, 1, cfg.total, run_merge<K, V>(cfg, 1, 0));
  for (int runs : cfg.merge_runs)
    for (int fan_in : cfg.fan_ins)
      out.report(("merge-" + std::to_string(runs)).c_str(),
                 "merge_fan_in_" + std::to_string(fan_in), keys, 1, cfg.total,
                 run_merge<K, V>(cfg, runs, fan_in));
}

// --merge's and --split's key types (u32, u64, f32; parse checks) and value sizes (0, 4).
template <class Rows>
void run_alone(const config& cfg, const Rows& rows) {
  const auto with_values = [&]<class K>() {
    for (int value_bytes : cfg.value_bytes)
      value_bytes == 0 ? rows.template operator()<K, keys_only>()
                       : rows.template operator()<K, std::uint32_t>();
  };
  for (const std::string& type : cfg.types) {
    if (type == "u32") with_values.template operator()<std::uint32_t>();
    else if (type == "u64") with_values.template operator()<std::uint64_t>();
    else with_values.template operator()<float>();
  }
}

// ---- the split alone (--split) ----------------------------------------------------------

// Keys outside their bucket's range of codes (a split that misplaced them): position i is in
// the bucket b whose bounds hold it; its code must lie between splitter b - 1's and b's.
template <class K>
__global__ void misplaced_kernel(const K* keys, std::uint64_t n, const std::uint64_t* bounds,
                                 const std::uint64_t* codes, int buckets,
                                 gpusort::detail::index_math::dist::order_code<K> code,
                                 unsigned long long* misplaced) {
  unsigned long long count = 0;
  for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::uint64_t{gridDim.x} * blockDim.x) {
    int b = 0, past = buckets;  // the last bucket starting at or before i
    while (past - b > 1) {
      const int mid = (b + past) / 2;
      if (bounds[mid] <= i) b = mid; else past = mid;
    }
    const std::uint64_t c = code(keys[i]);
    if ((b > 0 && c < codes[b - 1]) || (b + 1 < buckets && c > codes[b])) ++count;
  }
  if (count > 0) atomicAdd(misplaced, count);
}

// --total keys (and values) on GPU 0 split into `buckets` by dist's split_by_bucket on one
// stream (splitters at even quantiles of the first 2^16 keys, uniform random), or
// (buckets 0) copied once: CUDA events around the call, the median of --reps after a
// warm-up; the split's workspace as extra bytes. The split is verified: the same keys, each
// within its bucket's codes, every value beside its key.
template <class K, class V>
outcome run_split(const config& cfg, int buckets) {
  namespace internal = gpusort::dist::detail;
  namespace math = gpusort::detail::index_math::dist;
  using split_value = std::conditional_t<has_values<V>, V, gpusort::detail::no_value>;
  outcome o;
  const std::uint64_t n = cfg.total, slot = sizeof(K) + value_size<V>();
  const owned_stream s;
  const device_buffer input(n * slot), output(n * slot);
  if (!input.ok() || !output.ok()) {
    o.skipped = "no room for the keys twice";
    return o;
  }
  K* keys = input.as<K>();
  K* out = output.as<K>();
  auto* values = reinterpret_cast<split_value*>(keys + n);
  auto* out_values = reinterpret_cast<split_value*>(out + n);
  generate(keys, n, 0, cfg.seed, s.get());
  if constexpr (has_values<V>) make_values(keys, values, n, s.get());
  const std::uint64_t in_sum = check(keys, n, s.get()).checksum;
  const math::order_code<K> code(gpusort::order::ascending, gpusort::nan_order::last);
  std::vector<K> sample(std::min<std::uint64_t>(n, 1 << 16));
  cuda_check(cudaMemcpy(sample.data(), keys, sizeof(K) * sample.size(), cudaMemcpyDeviceToHost),
             "the sample");
  std::vector<math::splitter> splitters;
  for (std::uint64_t i = 0; i < sample.size(); ++i) splitters.push_back({code(sample[i]), 0, i});
  std::ranges::sort(splitters, [](const math::splitter& a, const math::splitter& b) {
    return a < b;
  });
  std::vector<math::splitter> chosen;
  std::vector<std::uint64_t> codes;
  for (int b = 1; b < std::max(buckets, 1); ++b) {
    chosen.push_back(splitters[splitters.size() * b / buckets]);
    codes.push_back(chosen.back().key);
  }
  const device_buffer d_chosen(sizeof(math::splitter) * std::max<std::size_t>(chosen.size(), 1));
  const device_buffer d_codes(sizeof(std::uint64_t) * std::max<std::size_t>(codes.size(), 1));
  const device_buffer bounds(sizeof(std::uint64_t) * (math::max_partition_ranks + 1));
  require(d_chosen, "the splitters");
  require(d_codes, "the splitters");
  require(bounds, "the bounds");
  cuda_check(cudaMemcpy(d_chosen.as<math::splitter>(), chosen.data(),
                        sizeof(math::splitter) * chosen.size(), cudaMemcpyHostToDevice),
             "the splitters");
  cuda_check(cudaMemcpy(d_codes.as<std::uint64_t>(), codes.data(),
                        sizeof(std::uint64_t) * codes.size(), cudaMemcpyHostToDevice),
             "the splitters");
  std::size_t bytes = 0;
  if (buckets > 0)
    cuda_check(internal::split_by_bucket<K, split_value>(
                   nullptr, bytes, keys, values, n, buckets, 0, code, nullptr, nullptr, nullptr,
                   nullptr, s.get()),
               "the split's workspace");
  const device_buffer temp(bytes);
  require(temp, "the split's workspace");
  o.extra_bytes = static_cast<std::int64_t>(bytes);
  const owned_event start, stop;
  for (int rep = 0; rep <= cfg.reps; ++rep) {
    cuda_check(cudaEventRecord(start.get(), s.get()), "cudaEventRecord");
    if (buckets == 0) {
      cuda_check(cudaMemcpyAsync(out, keys, n * slot, cudaMemcpyDeviceToDevice, s.get()),
                 "the copy");
    } else {
      std::size_t given = bytes;
      cuda_check(internal::split_by_bucket<K, split_value>(
                     temp.as<void>(), given, keys, values, n, buckets, 0, code,
                     d_chosen.as<math::splitter>(), out, out_values,
                     bounds.as<std::uint64_t>(), s.get()),
                 "the split");
    }
    cuda_check(cudaEventRecord(stop.get(), s.get()), "cudaEventRecord");
    cuda_check(cudaEventSynchronize(stop.get()), "the split");
    float ms = 0;
    cuda_check(cudaEventElapsedTime(&ms, start.get(), stop.get()), "cudaEventElapsedTime");
    if (rep > 0) o.ms.push_back(ms);
  }
  if (check(out, n, s.get()).checksum != in_sum)
    o.problem = "the keys differ from the input (checksum)";
  if (o.problem.empty() && buckets > 0) {
    device_buffer misplaced(sizeof(unsigned long long));
    require(misplaced, "the verification's counter");
    auto* d_misplaced = misplaced.as<unsigned long long>();
    cuda_check(cudaMemset(d_misplaced, 0, sizeof *d_misplaced), "verification");
    misplaced_kernel<<<grid_for(n), 256, 0, s.get()>>>(out, n, bounds.as<std::uint64_t>(),
                                                       d_codes.as<std::uint64_t>(), buckets,
                                                       code, d_misplaced);
    unsigned long long count = 0;
    cuda_check(cudaMemcpyAsync(&count, d_misplaced, sizeof count, cudaMemcpyDeviceToHost,
                               s.get()),
               "verification");
    cuda_check(cudaStreamSynchronize(s.get()), "verification");
    if (count > 0) o.problem = std::to_string(count) + " keys outside their bucket";
  }
  if constexpr (has_values<V>)
    if (o.problem.empty())
      if (const std::uint64_t astray = values_astray(out, out_values, n, s.get()))
        o.problem = std::to_string(astray) + " values are not beside their keys";
  return o;
}

template <class K, class V>
void run_split_rows(const config& cfg, reporter& out) {
  const std::string_view keys = gpusort::key_traits<K>::name;
  out.set_values(value_name<V>());
  out.report("split", "d2d_copy", keys, 1, cfg.total, run_split<K, V>(cfg, 0));
  for (int buckets : cfg.split_buckets)
    out.report(("split-" + std::to_string(buckets)).c_str(), "split_by_bucket", keys, 1,
               cfg.total, run_split<K, V>(cfg, buckets));
}

// ---- a sort beside a swap of bytes (--overlap) -------------------------------------------

enum class swap_by { none, nccl, copy_engines };

// One GPU's part: its keys, the sort's workspace, the bytes it swaps, two streams and the
// events around each part.
template <class K>
struct overlap_gpu {
  // Made on device d: its buffers, streams and events.
  overlap_gpu(int d, std::uint64_t n)
      : device((cuda_check(cudaSetDevice(d), "cudaSetDevice"), d)), keys(sizeof(K) * n),
        send(sizeof(K) * (n / 2)), recv(sizeof(K) * (n / 2)) {}
  int device;
  device_buffer keys, send, recv;
  std::unique_ptr<device_buffer> temp;
  std::size_t temp_bytes = 0;
  owned_stream sorting;
  urgent_stream swapping;
  owned_event go, sort_start, sort_stop, swap_start, swap_stop;
};

double elapsed_ms(cudaEvent_t from, cudaEvent_t to) {
  float ms = 0;
  cuda_check(cudaEventElapsedTime(&ms, from, to), "cudaEventElapsedTime");
  return ms;
}

// --reps timed rounds (after a warm-up) of, on both GPUs at once, the sort of --total keys
// (freshly made each round) if `sorting`, and the swap of half as many keys' bytes by `by`:
// the slowest GPU's sort, swap and whole (from the keys made to the last part's end) times.
// The sorts and the swapped bytes are verified; the problem, if any, is returned.
template <class K>
std::string run_overlap(const config& cfg, std::deque<overlap_gpu<K>>& gpus,
                        const std::vector<dist::communicator>& comms, bool sorting, swap_by by,
                        outcome& sort, outcome& swap, outcome& whole) {
  const std::uint64_t n = cfg.total, half = n / 2;
  for (int rep = 0; rep <= cfg.reps; ++rep) {
    for (auto& g : gpus) {
      cuda_check(cudaSetDevice(g.device), "cudaSetDevice");
      generate(g.keys.template as<K>(), n, g.device * n, cfg.seed + rep, g.sorting.get());
      cuda_check(cudaEventRecord(g.go.get(), g.sorting.get()), "cudaEventRecord");
      cuda_check(cudaStreamWaitEvent(g.swapping.get(), g.go.get()), "cudaStreamWaitEvent");
      if (sorting) {  // enqueued first, as dist's sort of a sub-bucket before the next's swap
        cuda_check(cudaEventRecord(g.sort_start.get(), g.sorting.get()), "cudaEventRecord");
        std::size_t bytes = g.temp_bytes;
        cuda_check(gpusort::sort_keys(g.temp->template as<void>(), bytes,
                                      g.keys.template as<K>(), n,
                                      {.stream = g.sorting.get()}),
                   "the sort");
        cuda_check(cudaEventRecord(g.sort_stop.get(), g.sorting.get()), "cudaEventRecord");
      }
      if (by != swap_by::none)
        cuda_check(cudaEventRecord(g.swap_start.get(), g.swapping.get()), "cudaEventRecord");
    }
    if (by == swap_by::nccl) {
      check_nccl_call(ncclGroupStart(), "ncclGroupStart");
      for (std::size_t d = 0; d < gpus.size(); ++d) {
        const int peer = static_cast<int>(1 - d);
        check_nccl_call(ncclSend(gpus[d].send.template as<K>(), sizeof(K) * half, ncclUint8,
                                 peer, comms[d].get(), gpus[d].swapping.get()),
                        "ncclSend");
        check_nccl_call(ncclRecv(gpus[d].recv.template as<K>(), sizeof(K) * half, ncclUint8,
                                 peer, comms[d].get(), gpus[d].swapping.get()),
                        "ncclRecv");
      }
      check_nccl_call(ncclGroupEnd(), "ncclGroupEnd");
    } else if (by == swap_by::copy_engines) {
      for (std::size_t d = 0; d < gpus.size(); ++d) {  // each GPU pushes its bytes over
        auto& to = gpus[1 - d];
        cuda_check(cudaSetDevice(gpus[d].device), "cudaSetDevice");
        cuda_check(cudaMemcpyPeerAsync(to.recv.template as<K>(), to.device,
                                       gpus[d].send.template as<K>(), gpus[d].device,
                                       sizeof(K) * half, gpus[d].swapping.get()),
                   "cudaMemcpyPeerAsync");
      }
    }
    double sort_ms = 0, swap_ms = 0, whole_ms = 0;
    for (auto& g : gpus) {
      cuda_check(cudaSetDevice(g.device), "cudaSetDevice");
      if (by != swap_by::none) {
        cuda_check(cudaEventRecord(g.swap_stop.get(), g.swapping.get()), "cudaEventRecord");
        cuda_check(cudaEventSynchronize(g.swap_stop.get()), "the swap");
        swap_ms = std::max(swap_ms, elapsed_ms(g.swap_start.get(), g.swap_stop.get()));
        whole_ms = std::max(whole_ms, elapsed_ms(g.go.get(), g.swap_stop.get()));
      }
      if (sorting) {
        cuda_check(cudaEventSynchronize(g.sort_stop.get()), "the sort");
        sort_ms = std::max(sort_ms, elapsed_ms(g.sort_start.get(), g.sort_stop.get()));
        whole_ms = std::max(whole_ms, elapsed_ms(g.go.get(), g.sort_stop.get()));
      }
    }
    if (rep == 0) continue;
    sort.ms.push_back(sort_ms);
    swap.ms.push_back(swap_ms);
    whole.ms.push_back(whole_ms);
  }
  std::vector<std::uint64_t> sent, received;  // each GPU's checksums, read where they lie
  for (auto& g : gpus) {
    cuda_check(cudaSetDevice(g.device), "cudaSetDevice");
    if (sorting && check(g.keys.template as<K>(), n, g.sorting.get()).descents != 0)
      return "GPU " + std::to_string(g.device) + "'s keys are not sorted";
    sent.push_back(check(g.send.template as<K>(), half, g.sorting.get()).checksum);
    received.push_back(check(g.recv.template as<K>(), half, g.sorting.get()).checksum);
  }
  if (by != swap_by::none && (received[1] != sent[0] || received[0] != sent[1]))
    return "the swapped bytes did not arrive";
  return {};
}

// --overlap's rows of one key type (keys alone) on GPUs 0 and 1.
template <class K, class V>
void run_overlap_rows(const config& cfg, reporter& out) {
  const std::string_view keys = gpusort::key_traits<K>::name;
  out.set_values(value_name<V>());
  const std::uint64_t n = cfg.total;
  int devices = 0;
  cuda_check(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
  if (devices < 2) {
    out.skip("overlap", "sort_alone", keys, 2, n, "needs 2 GPUs");
    return;
  }
  std::deque<overlap_gpu<K>> gpus;  // neither copied nor moved
  for (int d = 0; d < 2; ++d) {
    gpus.emplace_back(d, n);
    auto& g = gpus.back();
    if (!g.keys.ok() || !g.send.ok() || !g.recv.ok()) {
      out.skip("overlap", "sort_alone", keys, 2, n, "no room on GPU " + std::to_string(d));
      return;
    }
    cuda_check(gpusort::sort_keys(nullptr, g.temp_bytes, g.keys.template as<K>(), n, {}),
               "the sort's workspace");
    g.temp = std::make_unique<device_buffer>(g.temp_bytes);
    require(*g.temp, "the sort's workspace");
    generate(g.send.template as<K>(), n / 2, (2 + d) * n, cfg.seed, g.sorting.get());
  }
  const std::vector<int> pair{0, 1};
  const std::vector<dist::communicator> comms = dist::communicators_for_devices(pair);
  int peers = 0, back = 0;
  cuda_check(cudaDeviceCanAccessPeer(&peers, 0, 1), "cudaDeviceCanAccessPeer");
  cuda_check(cudaDeviceCanAccessPeer(&back, 1, 0), "cudaDeviceCanAccessPeer");
  for (int d = 0; d < 2 && peers && back; ++d) {
    cuda_check(cudaSetDevice(d), "cudaSetDevice");
    if (const cudaError_t e = cudaDeviceEnablePeerAccess(1 - d, 0);
        e == cudaErrorPeerAccessAlreadyEnabled)
      cudaGetLastError();
    else
      cuda_check(e, "cudaDeviceEnablePeerAccess");
  }
  const auto rows = [&](bool sorting, swap_by by, const char* swap_name) {
    outcome sort, swap, whole;
    const std::string problem = run_overlap<K>(cfg, gpus, comms, sorting, by, sort, swap, whole);
    for (outcome* o : {&sort, &swap, &whole}) o->problem = problem;
    const std::string name(swap_name);
    if (!sorting) return out.report("overlap", name + "_alone", keys, 2, n, swap);
    if (by == swap_by::none) return out.report("overlap", "sort_alone", keys, 2, n, sort);
    out.report("overlap", "sort_with_" + name, keys, 2, n, whole);
    out.report("overlap", "sort_beside_" + name, keys, 2, n, sort);
    out.report("overlap", name + "_beside_sort", keys, 2, n, swap);
  };
  rows(true, swap_by::none, "");
  rows(false, swap_by::nccl, "nccl");
  rows(true, swap_by::nccl, "nccl");
  if (!peers || !back) {
    out.skip("overlap", "copy_engines_alone", keys, 2, n, "no peer access between GPUs 0 and 1");
    return;
  }
  rows(false, swap_by::copy_engines, "copy_engines");
  rows(true, swap_by::copy_engines, "copy_engines");
}

// Each key and value type's rows: run_key_type (threads) or run_key_type_in_processes.
template <class Each>
void for_each_type(const config& cfg, const Each& each) {
  for (const std::string& type : cfg.types) {
    gpusort::tools::with_key_type(type, [&]<class K>() {
      for (int value_bytes : cfg.value_bytes) {
        if (value_bytes == 0)
          each.template operator()<K, keys_only>();
        else if (value_bytes == 4)
          each.template operator()<K, std::uint32_t>();
        else
          each.template operator()<K, std::uint64_t>();
      }
    });
  }
}

int verdict(const reporter& out) {
  if (out.wrong() > 0) {
    std::printf("%d result(s) WRONG (see stderr)\n", out.wrong());
    return 1;
  }
  std::printf("every result verified: sorted, in order across GPUs, the same keys as the input, "
              "every value beside its key\n");
  return 0;
}

int run_in_processes(const config& cfg) {
  const dist::communicator comm = dist::communicator_from_environment();
  process_ranks ranks(comm);
  std::optional<reporter> out;
  if (ranks.rank() == 0) {
    int device_count = 0;
    cuda_check(cudaGetDeviceCount(&device_count), "cudaGetDeviceCount");
    std::printf("%d processes, one GPU each (rank 0 on GPU %d)\n", ranks.size(), comm.device());
    out.emplace(cfg.csv, print_environment(cfg, device_count));
    reporter::print_header();
  }
  for_each_type(cfg, [&]<class K, class V>() {
    run_key_type_in_processes<K, V>(cfg, out ? &*out : nullptr, ranks);
  });
  return out ? verdict(*out) : 0;
}

int run(const config& cfg) {
  if (cfg.processes) return run_in_processes(cfg);
  int device_count = 0;
  cuda_check(cudaGetDeviceCount(&device_count), "cudaGetDeviceCount");
  if (device_count == 0) throw gpusort::error(cudaErrorNoDevice, "no CUDA device");
  const std::string gpu_name = print_environment(cfg, device_count);
  reporter out(cfg.csv, gpu_name);
  reporter::print_header();
  if (!cfg.merge_runs.empty())
    run_alone(cfg, [&]<class K, class V>() { run_merge_rows<K, V>(cfg, out); });
  else if (!cfg.split_buckets.empty())
    run_alone(cfg, [&]<class K, class V>() { run_split_rows<K, V>(cfg, out); });
  else if (cfg.overlap)
    run_alone(cfg, [&]<class K, class V>() { run_overlap_rows<K, V>(cfg, out); });
  else
    for_each_type(cfg, [&]<class K, class V>() { run_key_type<K, V>(cfg, out, device_count); });
  return verdict(out);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::optional<config> cfg = parse(argc, argv);
    if (!cfg) {
      std::fputs(usage_text, stdout);
      return 0;
    }
    return run(*cfg);
  } catch (const usage_error& e) {
    std::fprintf(stderr, "gpusort-dist-bench: %s (--help for usage)\n", e.what());
    return 2;
  } catch (const std::exception& e) {  // gpusort::error (CUDA, NCCL), and the rest
    std::fprintf(stderr, "gpusort-dist-bench: %s\n", e.what());
    return 3;
  }
}
