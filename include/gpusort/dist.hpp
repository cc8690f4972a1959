// gpusort::dist: sorting keys (or pairs) spread over several GPUs, with NCCL. Link the CMake
// target gpusort::dist (single-GPU users link gpusort::gpusort and never see NCCL).
//
// Every rank (one GPU) holds a shard of device keys. dist::sort is a collective: all ranks of
// the communicator call it, and afterwards rank r holds the r-th range of the globally sorted
// keys, in a new device buffer. The steps (docs/distributed.md):
//   1. local sort of the shard, in place (options::local_algo: automatic, i.e. CUB's radix
//      sort where its workspace fits, by default), in the order the options ask for;
//   2. a regular sample with one global stride, all samples gathered on every rank, and p - 1
//      splitters chosen from them (the deterministic sample sort's bound: no rank receives
//      more than N / p + (p + 1) w keys, w = ceil(N / (p * oversampling)), i.e. 0.5% above
//      N / p for 4 GPUs; duplicates included, since ties are broken by (rank, position));
//   3. bucket boundaries by binary search, counts exchanged (all-gather);
//   4. the keys exchanged with grouped ncclSend / ncclRecv (an all-to-all) straight from the
//      sorted shard, each transfer starting at a 16-byte aligned address at both ends (NCCL's
//      full speed), or by the GPUs' copy engines (options::copy_engines); the rank's own
//      part stays where it is;
//   5. the p sorted runs (p - 1 received, one in the shard) merged on the GPU, stably, in
//      rounds over groups of options::merge_fan_in runs (two by CUB's merge, 3 to 8 in one
//      pass).
// With options::partition_first, exchange first: samples at random positions of the
// unsorted shards give the splitters, one stable pass splits each shard by bucket
// (options::sub_buckets a rank, 2 by default), the buckets go to their ranks, each landing
// beside the other ranks' parts of it, and each rank sorts its sub-buckets in place, each
// while the next travels; no merge (same output; balanced with high probability instead of
// always).
// The order is the single-GPU sort's (options.hpp): -0.0 before +0.0, NaNs after every number
// or before (options::nans), ascending or descending. Equal keys come out ordered by (source
// rank, position after the local sort): with options::stable (or a stable local_algo) the whole
// sort is stable, equal keys in (rank, input position) order. Every key type of sort.hpp:
// the narrow ones (bool ... __nv_bfloat16) travel at their own width and compare by their codes
// (detail/core/narrow_keys.hpp), 16-bit float NaNs where options::nans puts them.
//
// Errors throw gpusort::error on every rank: a bad argument on one rank (a host pointer, say)
// is shared in the first collective, so no rank is left waiting in NCCL, and no data is lost
// (the shard is untouched if the error is found before the local sort).
//
// Never enable NVLink multicast (NCCL_NVLS_ENABLE=1): the communicator helpers below set
// NCCL_NVLS_ENABLE=0 unless the caller set it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include <nccl.h>

#include "gpusort/detail/core/cuda_resources.hpp"
#include "gpusort/sort.hpp"

namespace gpusort::dist {

namespace detail {
struct thread_group;  // ranks that are threads on one GPU (src/dist/)
}  // namespace detail

// A rank's view of an NCCL communicator: its rank, the number of ranks and its CUDA device.
// Made from the caller's ncclComm_t (not owned), or by the helpers below (owned: destroyed
// with the object). communicators_on_one_device makes ranks that are threads sharing one GPU
// and exchange through device copies, with no NCCL: for tests and for trying dist code on
// one GPU.
class communicator {
 public:
  // Wraps an existing communicator; the caller keeps ownership.
  static communicator wrap(ncclComm_t comm);

  communicator(communicator&& other) noexcept;
  communicator& operator=(communicator&& other) noexcept;
  communicator(const communicator&) = delete;
  communicator& operator=(const communicator&) = delete;
  ~communicator();

  ncclComm_t get() const { return comm_; }  // null for ranks on one device
  const std::shared_ptr<detail::thread_group>& group() const { return group_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  int device() const { return device_; }

 private:
  communicator(ncclComm_t comm, bool owned);
  communicator(std::shared_ptr<detail::thread_group> group, int rank, int size, int device);
  ncclComm_t comm_ = nullptr;
  bool owned_ = false;
  std::shared_ptr<detail::thread_group> group_;
  int rank_ = 0, size_ = 1, device_ = 0;
  friend std::vector<communicator> communicators_for_devices(std::span<const int>);
  friend communicator communicator_from_environment();
  friend communicator communicator_for_rank(const std::string&, int, int, int);
  friend std::vector<communicator> communicators_on_one_device(int, int);
};

// All GPUs of this host in one process (ncclCommInitAll): one communicator per device, rank
// i on devices[i] (all visible devices if empty). Call dist::sort from one thread per rank.
// Where every pair of the devices has peer access (enabled here), the ranks can also exchange
// by the copy engines (options::copy_engines).
std::vector<communicator> communicators_for_devices(std::span<const int> devices = {});

// `ranks` ranks on one device, to be driven by one thread each (see communicator above).
std::vector<communicator> communicators_on_one_device(int ranks, int device = 0);

// One process per GPU, started by a launcher. Reads
//   GPUSORT_RANK, GPUSORT_WORLD_SIZE   (else RANK / WORLD_SIZE as torchrun sets them, else
//                                       OMPI_COMM_WORLD_RANK / _SIZE, else SLURM_PROCID /
//                                       SLURM_NTASKS)
//   GPUSORT_LOCAL_RANK                 the device is local rank % visible devices (else
//                                       LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_RANK,
//                                       SLURM_LOCALID; else the rank)
//   GPUSORT_NCCL_ID                    the NCCL unique id as 256 hex digits (make_unique_id),
//   or GPUSORT_NCCL_ID_FILE            a file that rank 0 writes the id to (atomically) and the
//                                       others wait for (up to GPUSORT_NCCL_ID_TIMEOUT seconds,
//                                       default 120); on a shared file system for several hosts.
//                                       Use a new path for every job: a stale file would hand
//                                       the other ranks an old id.
// Selects the device (cudaSetDevice) and returns an owned communicator.
communicator communicator_from_environment();

// A new NCCL unique id as 256 hex digits, for GPUSORT_NCCL_ID.
std::string make_unique_id();

// Rank `rank` of `size` on `device`, from an id of make_unique_id that rank 0 made and the
// caller passed to every rank its own way (a launcher's store, a file, a broadcast): selects the
// device and returns an owned communicator. gpusort.distributed makes its communicators so,
// the id travelling through torch.distributed.
communicator communicator_for_rank(const std::string& unique_id, int rank, int size, int device);

struct options {
  order direction = order::ascending;
  nan_order nans = nan_order::last;  // float keys: NaNs after (or before) every number
  bool stable = false;               // equal keys keep their (rank, position) order
  // The local sort: any gpusort algorithm that sorts in the library's order (cub_radix sorts
  // floats in CUB's own order: use automatic, which fixes it up).
  algorithm local_algo = algorithm::automatic;
  // Samples per rank on average; more samples, tighter balance (see the bound above).
  std::uint64_t oversampling = 1024;  // from 1 to 2^24
  // Runs the merge joins at once, from 2 to 8: rounds of CUB's two-way merge (2, ceil(log2 p)
  // passes over the keys), or of the one-pass merge of up to merge_fan_in runs (ceil(log_f p)
  // passes). 2 until the one pass measures faster (docs/performance.md). The output is the
  // same either way; ranks may differ.
  int merge_fan_in = 2;
  // Partition first: splitters from samples of the unsorted shards, each shard split by them
  // (one stable pass by bucket, 2 sub-buckets a rank), the buckets exchanged, each rank's
  // sub-buckets sorted in place as they come in (the second's exchange beside the first's
  // sort), with no merge (index_math::dist::landing_plan). Balance holds with high
  // probability instead of always (index_math/dist.hpp). Same output as the default; the
  // shard is read, not changed. The split needs a second buffer for the shard. Up to 255
  // ranks (more take the default). Every rank must pass the same. Measured on 2 H200s for
  // 2^31 keys (docs/distributed.md): by NCCL slower than the default (u32 1.21x one GPU
  // against 1.41x); with copy_engines the fastest for pairs (u32 + u32 1.46x against 1.44x).
  bool partition_first = false;
  // Under partition_first, the sub-buckets each rank's range is cut into, 1 to 8: sub-bucket
  // j + 1 travels while sub-bucket j sorts. 0: the library's choice (2). Fewer where p times
  // it would pass 255 buckets. Every rank must pass the same. On 2 H200s, 2 beat 1 and 4.
  int sub_buckets = 0;
  // Where the ranks are threads of this process, each on its own GPU with peer access to the
  // others (communicators_for_devices), move the keys by the GPUs' copy engines
  // (cudaMemcpyPeerAsync into the receivers' buffers) instead of NCCL's kernels, which take
  // SMs from a sort beside the exchange (partition_first). Elsewhere NCCL, as without it.
  // Every rank must pass the same. On 2 H200s faster than NCCL on every row measured (1-3%
  // by default, 2-13% under partition_first), and a sort beside it keeps its SMs.
  bool copy_engines = false;
  cudaStream_t stream = nullptr;  // this rank's stream; dist::sort waits for it
};

// What one call did on this rank; times in milliseconds, from CUDA events and host clocks.
// setup_ms (host clock) runs from the call to the start of the local sort: the checks, the
// local sort's workspace, and the first agreement, which waits for the last rank to arrive.
// sampling_ms runs from the end of the local sort to the start of the exchange: the samples,
// the splitters, the counts, the receive buffers, and the wait for the slowest rank. total_ms
// runs from the local sort's start. Under options::partition_first, sampling_ms also holds
// the counts, the split by bucket (there is no local sort before it) and the receive
// buffers, exchange_ms every sub-bucket's exchange with the sorts of all but the last beside
// it, local_sort_ms the last sub-bucket's sort, and merge_ms 0 (there is none); bound is
// then the most keys a rank received in this call.
struct phase_times {
  double setup_ms = 0;
  double local_sort_ms = 0, sampling_ms = 0, exchange_ms = 0, merge_ms = 0, total_ms = 0;
  std::uint64_t bytes_sent = 0, bytes_received = 0;  // to and from other ranks
  std::uint64_t total_keys = 0;                     // N, all ranks together
  std::uint64_t bound = 0;                          // the most keys a rank could receive
};

namespace detail {
template <class K, class V>
struct shard_access;  // fills shards (src/dist/)
}  // namespace detail

// This rank's part of the sorted keys (and values): device memory owned by the shard.
template <class K, class V = gpusort::detail::no_value>
class shard {
 public:
  shard() = default;
  // The same shard with its values seen as another type of the same size.
  template <class V2>
    requires(sizeof(V2) == sizeof(V) && !std::is_same_v<V2, V>)
  explicit shard(shard<K, V2>&& other)
      : keys_(std::move(other.keys_)), values_(std::move(other.values_)), size_(other.size_),
        times_(other.times_), rank_sizes_(std::move(other.rank_sizes_)) {}

  std::span<K> keys() const { return {static_cast<K*>(keys_.get()), size_}; }
  std::span<V> values() const { return {static_cast<V*>(values_.get()), size_}; }
  std::uint64_t size() const { return size_; }
  // How many keys every rank holds after the sort, in rank order (every rank knows the whole
  // exchange plan): this rank's size() is rank_sizes()[comm.rank()].
  std::span<const std::uint64_t> rank_sizes() const { return rank_sizes_; }
  const phase_times& times() const { return times_; }

 private:
  std::unique_ptr<void, gpusort::detail::device_free> keys_, values_;
  std::uint64_t size_ = 0;
  phase_times times_;
  std::vector<std::uint64_t> rank_sizes_;
  template <class, class>
  friend class shard;
  friend struct detail::shard_access<K, V>;
};

namespace detail {
// input_done, where given, is called once the keys (and values) have left for their ranks and
// this rank's own run is copied out: the caller may free them then, so that the merge's
// buffers take their place (a peak of about twice the shard instead of three times; the
// host-array spread, src/external/host_arrays.cpp).
template <class K, class V>
shard<K, V> sort(const communicator& comm, K* keys, V* values, std::uint64_t n,
                 const options& opt, const std::function<void()>& input_done = {});
template <class K, class V>
void sort_spread(K* keys, V* values, std::uint64_t n, std::span<const int> devices,
                 const options& opt);

// bytes from the current GPU's pool, ordered on `stream`; where the GPU is out of memory, the
// pool's unused memory is given back and the allocation tried once more. The error is cleared.
cudaError_t allocate_from_pool(void** out, std::size_t bytes, cudaStream_t stream);
// What the GPU's pool holds mapped now (in use or kept), 0 before its first use: the device's
// free memory also moves with other processes', this does not.
std::uint64_t pool_reserved_bytes(int device);
}  // namespace detail

// Device memory between calls. dist::sort and the host-array spread take their buffers from a
// stream-ordered pool of gpusort's on each GPU. During a call the pool keeps what it maps, so a
// buffer freed within the call (the local sort's workspace, a slice) is reused by the next
// instead of unmapped and mapped again; when the call returns, what is unused goes back to the
// driver. A caller that sorts again and again holds a kept_memory for each of its GPUs: while
// one lives on a GPU, its pool keeps what it has mapped between calls too, so later calls map
// nothing (mapping is most of the difference between a first and a second call). When the last
// kept_memory of a GPU is destroyed, its unused memory goes back. They nest, and threads may
// hold them at once.
class kept_memory {
 public:
  explicit kept_memory(int device);
  ~kept_memory();
  kept_memory(const kept_memory&) = delete;
  kept_memory& operator=(const kept_memory&) = delete;

 private:
  int device_ = -1;
};

// Collective: sorts the keys of all ranks. `keys` is this rank's shard in device memory on
// comm.device(); it is sorted in place locally (its contents change). Returns this rank's
// range of the global order.
template <sortable_key K>
shard<K> sort(const communicator& comm, std::span<K> keys, const options& opt = {}) {
  return detail::sort<K, gpusort::detail::no_value>(comm, keys.data(), nullptr, keys.size(),
                                                    opt);
}

// Collective: sorts pairs; values (4, 8 or 16 bytes) move with their keys.
template <sortable_key K, gpusort::detail::supported_value V>
shard<K, V> sort(const communicator& comm, std::span<K> keys, std::span<V> values,
                 const options& opt = {}) {
  if (values.size() != keys.size())
    gpusort::detail::throw_error(cudaErrorInvalidValue,
                                 "gpusort::dist::sort (pairs): " +
                                     std::to_string(values.size()) + " values for " +
                                     std::to_string(keys.size()) + " keys");
  using P = gpusort::detail::payload_of<V>;
  return shard<K, V>(detail::sort<K, P>(comm, keys.data(), reinterpret_cast<P*>(values.data()),
                                        keys.size(), opt));
}

// For "too many keys for one GPU": spreads keys[0, n) (host or device memory) evenly over
// the GPUs of this host (`devices`, all if empty), sorts them with dist::sort (one thread per
// GPU) and writes the sorted keys back in place. Not a collective; needs no communicator.
// Each GPU needs room for about three times its slice; host arrays larger than that go
// through gpusort::sort(std::span<K>, external_options) (external.hpp), which sorts runs and
// merges windows on every GPU of external_options::devices.
template <sortable_key K>
void sort_spread(std::span<K> keys, const options& opt = {}, std::span<const int> devices = {}) {
  detail::sort_spread<K, gpusort::detail::no_value>(keys.data(), nullptr, keys.size(), devices,
                                                    opt);
}

template <sortable_key K, gpusort::detail::supported_value V>
void sort_spread(std::span<K> keys, std::span<V> values, const options& opt = {},
                 std::span<const int> devices = {}) {
  if (values.size() != keys.size())
    gpusort::detail::throw_error(cudaErrorInvalidValue,
                                 "gpusort::dist::sort_spread (pairs): " +
                                     std::to_string(values.size()) + " values for " +
                                     std::to_string(keys.size()) + " keys");
  using P = gpusort::detail::payload_of<V>;
  detail::sort_spread<K, P>(keys.data(), reinterpret_cast<P*>(values.data()), keys.size(),
                            devices, opt);
}

}  // namespace gpusort::dist
