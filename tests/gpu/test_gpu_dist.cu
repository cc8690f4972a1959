// gpusort::dist on the GPUs of this host, one thread per rank: against std::stable_sort for
// every key type, uneven and empty shards, duplicates, both orders, pairs (stable with a
// stable local sort), the balance bound, an error on one rank reported on all, sort_spread
// from host and device memory, and 2^31 + 5 keys checked on the devices.
// The DistMultiGpu tests need 2 GPUs (label multigpu; scripts/gpu-check.sh --multi); the
// DistOneGpu tests run on any GPU with a one-rank communicator (label gpu). The DistProcesses
// tests are the same checks with each rank a process, as launchers start them:
//   scripts/dist-launch.sh -n 4 test_gpu_dist --gtest_filter='DistProcesses*'
// (ctest's dist_processes, label multigpu); started otherwise, they skip.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/rank_threads.hpp"
#include "device_buffer.hpp"
#include "gpusort/detail/index_math/dist.hpp"
#include "gpusort/dist.hpp"
#include "reference.hpp"
#include "shuffled_keys.cuh"
#include "split.cuh"  // src/dist: partition_first's split

using namespace gpusort::testing;
namespace dist = gpusort::dist;
namespace tools = gpusort::tools;

namespace {

int device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
}

// The fixture of the multi-GPU tests: they skip on a host with fewer than 2 GPUs.
class TwoGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (device_count() < 2) GTEST_SKIP() << "needs 2 GPUs";
  }
};
// The suites of single tests, each on the fixture of the GPUs it needs.
using DistMultiGpuErrors = TwoGpuTest;
using DistMultiGpuSpread = TwoGpuTest;
using DistMultiGpuHuge = TwoGpuTest;
using DistMultiProcess = TwoGpuTest;
using DistOneGpuErrors = GpuTest;
using DistOneGpuThreadsErrors = GpuTest;
using DistOneGpuThreadsHuge = GpuTest;
using DistOneGpuThreadsMemory = GpuTest;
using DistMultiGpuNarrow = TwoGpuTest;
using DistOneGpuThreadsNarrow = GpuTest;
using DistOneGpuSplit = GpuTest;

// Communicators live for the whole run (made once: ncclCommInitAll takes a while). Never
// destroyed: NCCL's teardown after CUDA's at exit is not worth the risk.
std::vector<dist::communicator>& comms_for(int ranks) {
  static std::map<int, std::vector<dist::communicator>*> made;
  auto& slot = made[ranks];
  if (!slot) {
    std::vector<int> devices(ranks);
    for (int d = 0; d < ranks; ++d) devices[d] = d;
    slot = new std::vector<dist::communicator>(dist::communicators_for_devices(devices));
  }
  return *slot;
}

// Ranks that are threads on GPU 0, exchanging through device copies (no NCCL): the whole
// algorithm, p runs and all, on a one-GPU host.
std::vector<dist::communicator>& threads_on_gpu0(int ranks) {
  static std::map<int, std::vector<dist::communicator>*> made;
  auto& slot = made[ranks];
  if (!slot) slot = new std::vector<dist::communicator>(dist::communicators_on_one_device(ranks, 0));
  return *slot;
}

using comm_set = std::vector<dist::communicator>;

// The communicator sets a suite runs on: NCCL over 2 GPUs and all GPUs if more, or 2, 3 and
// 5 thread ranks on GPU 0.
std::vector<comm_set*> nccl_sets() {
  const int n = device_count();
  std::vector<comm_set*> out;
  if (n >= 2) out.push_back(&comms_for(2));
  if (n > 2) out.push_back(&comms_for(n));
  return out;
}
std::vector<comm_set*> thread_sets() {
  // 17: more runs than one merge pass takes (a round of 8 and more, then a second).
  return {&threads_on_gpu0(2), &threads_on_gpu0(3), &threads_on_gpu0(5), &threads_on_gpu0(17)};
}

using tools::on_every_rank;

template <class T>
struct device_array {
  T* ptr = nullptr;
  std::size_t n = 0;
  device_array(int device, const std::vector<T>& host) : n(host.size()) {
    cudaSetDevice(device);
    if (cudaMalloc(&ptr, sizeof(T) * std::max<std::size_t>(n, 1)) != cudaSuccess) throw std::bad_alloc();
    cudaMemcpy(ptr, host.data(), sizeof(T) * n, cudaMemcpyHostToDevice);
  }
  ~device_array() { cudaFree(ptr); }
  std::span<T> span() const { return {ptr, n}; }
};

template <class T>
std::vector<T> to_host(std::span<T> d) {
  std::vector<T> h(d.size());
  if (!d.empty()) cudaMemcpy(h.data(), d.data(), sizeof(T) * d.size(), cudaMemcpyDeviceToHost);
  return h;
}

// Started by a launcher as one rank of several processes (scripts/dist-launch.sh).
bool started_as_a_rank() { return std::getenv("GPUSORT_NCCL_ID_FILE") || std::getenv("GPUSORT_NCCL_ID"); }

// This process's rank, alone in its set: the other ranks are other processes.
comm_set& process_ranks() {
  static comm_set* made = [] {
    auto* set = new comm_set;
    set->push_back(dist::communicator_from_environment());
    return set;
  }();
  return *made;
}
std::vector<comm_set*> process_sets() { return {&process_ranks()}; }

// The ranks of a set's world, and whether rank r runs here (in a thread of this process).
int ranks_of(const comm_set& set) { return set.front().size(); }
bool here(const comm_set& set, int r) {
  return static_cast<int>(set.size()) == ranks_of(set) || set.front().rank() == r;
}

// body(r, communicator of r) for every rank of the set that runs here: one thread each where
// the set holds every rank, else this process's rank on this thread.
template <class Body>
void on_ranks_here(const comm_set& set, const Body& body) {
  if (static_cast<int>(set.size()) == ranks_of(set))
    on_every_rank(ranks_of(set), [&](int r) { body(r, set[r]); });
  else
    body(set.front().rank(), set.front());
}

// parts[r] of every rank, on every rank: where the ranks are processes, each gives its own part
// and the others come over NCCL (the sizes, then the parts padded to the largest).
template <class T>
void share_parts(const comm_set& set, std::vector<std::vector<T>>& parts) {
  if (static_cast<int>(set.size()) == ranks_of(set)) return;
  const dist::communicator& comm = set.front();
  const int ranks = comm.size();
  const auto gather = [&](const void* mine, std::size_t bytes) {
    std::vector<unsigned char> all(bytes * ranks);
    if (bytes == 0) return all;
    const auto* first = static_cast<const unsigned char*>(mine);
    device_array<unsigned char> send(comm.device(), std::vector<unsigned char>(first, first + bytes));
    device_array<unsigned char> recv(comm.device(), all);
    EXPECT_EQ(ncclAllGather(send.ptr, recv.ptr, bytes, ncclUint8, comm.get(), nullptr), ncclSuccess);
    cudaMemcpy(all.data(), recv.ptr, all.size(), cudaMemcpyDeviceToHost);  // after the gather
    return all;
  };
  const std::uint64_t mine = parts[comm.rank()].size();
  const std::vector<unsigned char> size_bytes = gather(&mine, sizeof mine);
  std::vector<std::uint64_t> sizes(ranks);
  std::memcpy(sizes.data(), size_bytes.data(), size_bytes.size());
  const std::uint64_t most = *std::max_element(sizes.begin(), sizes.end());
  std::vector<T> padded(most);
  std::copy(parts[comm.rank()].begin(), parts[comm.rank()].end(), padded.begin());
  const std::vector<unsigned char> all = gather(padded.data(), sizeof(T) * most);
  for (int q = 0; q < ranks; ++q) {
    parts[q].resize(sizes[q]);
    if (sizes[q] > 0) std::memcpy(parts[q].data(), all.data() + sizeof(T) * most * q, sizeof(T) * sizes[q]);
  }
}

// Sorts shards[r] on rank r of `ranks`; returns each rank's output keys and checks the bound
// and every rank's rank_sizes().
template <class K>
std::vector<std::vector<K>> dist_sort(comm_set& comms, const std::vector<std::vector<K>>& shards,
                                      const dist::options& opt) {
  const int ranks = ranks_of(comms);
  std::vector<std::vector<K>> out(ranks);
  std::vector<std::vector<std::uint64_t>> told(ranks);  // each rank's bound, then rank_sizes
  on_ranks_here(comms, [&](int r, const dist::communicator& comm) {
    device_array<K> keys(comm.device(), shards[r]);
    auto result = dist::sort(comm, keys.span(), opt);
    out[r] = to_host(result.keys());
    told[r] = {result.times().bound};
    told[r].insert(told[r].end(), result.rank_sizes().begin(), result.rank_sizes().end());
  });
  share_parts(comms, out);
  share_parts(comms, told);
  std::uint64_t total = 0;
  for (auto& s : shards) total += s.size();
  const std::uint64_t w = gpusort::detail::index_math::dist::sample_stride(total, ranks, opt.oversampling);
  for (int r = 0; r < ranks; ++r) {
    EXPECT_EQ(told[r], told[0]) << "rank " << r << " differs from rank 0";
    EXPECT_EQ(told[r].size(), 1u + ranks) << "rank " << r;
    for (int q = 0; q < ranks && 1u + q < told[r].size(); ++q)
      EXPECT_EQ(told[r][1 + q], out[q].size()) << "rank " << r << "'s rank_sizes()[" << q << "]";
    EXPECT_LE(out[r].size(), told[r].at(0)) << "rank " << r << " above the bound";
    if (!opt.partition_first)  // else balanced with high probability (index_math/dist.hpp)
      EXPECT_LE(out[r].size(), total / ranks + (ranks + 1) * w) << "rank " << r;
    else if (total >= (1u << 16))
      EXPECT_LE(out[r].size(),
                total / ranks * (1 + 6 * std::sqrt(double(ranks) * w / double(total))) + w)
          << "rank " << r;
  }
  return out;
}

// As dist_sort, through dist::detail::sort with input_done: the shard is freed when the sort
// says so (the host-array spread's way), which it must do exactly once.
template <class K>
std::vector<std::vector<K>> dist_sort_freeing_input(comm_set& comms,
                                                    const std::vector<std::vector<K>>& shards,
                                                    const dist::options& opt) {
  const int ranks = ranks_of(comms);
  std::vector<std::vector<K>> out(ranks);
  std::vector<int> calls(ranks);
  on_ranks_here(comms, [&](int r, const dist::communicator& comm) {
    auto keys = std::make_unique<device_array<K>>(comm.device(), shards[r]);
    auto result = dist::detail::sort<K, gpusort::detail::no_value>(
        comm, keys->ptr, nullptr, shards[r].size(), opt, [&] {
          ++calls[r];
          keys.reset();
        });
    out[r] = to_host(result.keys());
  });
  share_parts(comms, out);
  for (int r = 0; r < ranks; ++r)
    if (here(comms, r)) EXPECT_EQ(calls[r], 1) << "rank " << r;
  return out;
}

template <class K>
std::vector<K> concat(const std::vector<std::vector<K>>& parts) {
  std::vector<K> all;
  for (auto& p : parts) all.insert(all.end(), p.begin(), p.end());
  return all;
}

// Sorts shards[r] with values on rank r: the key at global index i (of the shards in rank
// order) carries value_of(i). Returns the output keys and values of all ranks in rank order.
template <class K, class ValueOf>
auto dist_sort_pairs(comm_set& comms, const std::vector<std::vector<K>>& shards,
                     const ValueOf& value_of, const dist::options& opt) {
  using V = decltype(value_of(std::uint64_t{0}));
  const int ranks = ranks_of(comms);
  std::vector<std::vector<V>> values(ranks);
  std::uint64_t next = 0;
  for (int r = 0; r < ranks; ++r)
    for (std::size_t i = 0; i < shards[r].size(); ++i) values[r].push_back(value_of(next++));
  std::vector<std::vector<K>> out_keys(ranks);
  std::vector<std::vector<V>> out_values(ranks);
  on_ranks_here(comms, [&](int r, const dist::communicator& comm) {
    device_array<K> k(comm.device(), shards[r]);
    device_array<V> v(comm.device(), values[r]);
    auto result = dist::sort(comm, k.span(), v.span(), opt);
    out_keys[r] = to_host(result.keys());
    out_values[r] = to_host(result.values());
  });
  share_parts(comms, out_keys);
  share_parts(comms, out_values);
  return std::pair{concat(out_keys), concat(out_values)};
}

template <class K>
std::vector<std::vector<K>> make_shards(const std::vector<std::size_t>& sizes,
                                        tools::distribution d, std::uint64_t seed) {
  std::vector<std::vector<K>> shards;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    shards.push_back(tools::generate<K>(d, sizes[i], seed + i));
    scatter_special_values(shards.back(), seed + i);
  }
  return shards;
}

std::vector<std::size_t> uneven_sizes(int ranks, std::size_t scale) {
  const std::size_t pattern[] = {scale + 3, 1, 0, scale / 3 + 7, 2 * scale + 1, 97, 0, 5};
  std::vector<std::size_t> sizes;
  for (int r = 0; r < ranks; ++r) sizes.push_back(pattern[r % 8]);
  return sizes;
}


template <class K>
void UnevenShardsEveryDistributionBothOrders(const std::vector<comm_set*>& sets) {
  for (comm_set* set : sets) {
    const int ranks = ranks_of(*set);
    for (tools::distribution d : tools::all_distributions) {  // gpusort gen's, every one
      const auto shards = make_shards<K>(uneven_sizes(ranks, 300007), d, 17 + ranks);
      const std::vector<K> all = concat(shards);
      for (bool descending : {false, true}) {
        std::vector<K> want;  // NaN placement changes it for floats alone
        for (gpusort::nan_order nans : {gpusort::nan_order::last, gpusort::nan_order::first}) {
          SCOPED_TRACE(::testing::Message() << "ranks=" << ranks << " dist=" << tools::to_string(d)
                                            << " desc=" << descending
                                            << " nans=" << gpusort::to_string(nans));
          dist::options opt;
          opt.direction = descending ? gpusort::order::descending : gpusort::order::ascending;
          opt.nans = nans;
          const auto out = dist_sort(*set, shards, opt);
          if (want.empty() || std::is_floating_point_v<K>)
            want = reference_sort(all, descending, nans);
          EXPECT_TRUE(same_bits(concat(out), want));
        }
      }
    }
  }
}

template <class K>
void SmallAndEmptyShards(const std::vector<comm_set*>& sets) {
  for (comm_set* set : sets) {
    const int ranks = ranks_of(*set);
    for (auto sizes : {std::vector<std::size_t>(ranks, 0), std::vector<std::size_t>(ranks, 1),
                       std::vector<std::size_t>(ranks, 2)}) {
      sizes[0] += 1;  // one rank with one more
      const auto shards = make_shards<K>(sizes, tools::distribution::uniform, 5);
      const auto out = dist_sort(*set, shards, {});
      EXPECT_TRUE(same_bits(concat(out), reference_sort(concat(shards))));
    }
    std::vector<std::vector<K>> empty(ranks);
    for (auto& part : dist_sort(*set, empty, {})) EXPECT_TRUE(part.empty());
  }
}

template <class K>
void TheInputFreedAfterTheExchangeSortsTheSame(const std::vector<comm_set*>& sets) {
  for (comm_set* set : sets) {
    const int ranks = ranks_of(*set);
    SCOPED_TRACE(::testing::Message() << "ranks=" << ranks);
    const auto shards = make_shards<K>(uneven_sizes(ranks, 200003), tools::distribution::zipf, 9);
    dist::options opt;
    opt.direction = gpusort::order::descending;
    EXPECT_TRUE(same_bits(concat(dist_sort_freeing_input(*set, shards, opt)),
                          reference_sort(concat(shards), true)));
  }
}

template <class K>
void AllEqualKeysAreBalanced(const std::vector<comm_set*>& sets) {
  for (comm_set* set : sets) {
    const int ranks = ranks_of(*set);
    std::vector<std::vector<K>> shards(ranks, std::vector<K>(1 << 20, K(7)));
    shards[0].resize(3 << 20, K(7));  // uneven too
    const auto out = dist_sort(*set, shards, {});
    std::uint64_t total = 0;
    for (auto& s : shards) total += s.size();
    for (auto& part : out) EXPECT_LE(part.size(), total / ranks * 1.01 + 1024);
  }
}

// value = global index of the key in the concatenated input (V: 4 or 8 bytes). opt must make
// the sort stable (a stable local_algo, or options::stable).
template <class K, class V>
void stable_pairs(const std::vector<comm_set*>& sets, const dist::options& opt,
                  tools::distribution d = tools::distribution::few_unique) {
  for (comm_set* set : sets) {
    const int ranks = ranks_of(*set);
    SCOPED_TRACE(::testing::Message() << "ranks=" << ranks << " local=" << gpusort::to_string(opt.local_algo)
                                      << " fan-in=" << opt.merge_fan_in << " dist=" << tools::to_string(d));
    const auto shards = make_shards<K>(uneven_sizes(ranks, 100003), d, 3);
    const auto value_of = [](std::uint64_t i) { return V(i); };
    const auto [out_keys, out_values] = dist_sort_pairs(*set, shards, value_of, opt);
    // A stable sort of (key, global index) pairs gives exactly this order.
    const std::vector<K> all = concat(shards);
    std::vector<V> order(all.size());
    std::iota(order.begin(), order.end(), V{0});
    std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) {
      return gpusort::less<K>{}(all[a], all[b]);
    });
    EXPECT_EQ(out_values, order);
    EXPECT_TRUE(values_follow_keys(all, out_keys, out_values, value_of));
  }
}

// cub_merge (4-byte values) and adaptive_bitonic (any size) are stable, and so is dist::sort.
template <class K>
void PairsAreStableWithAStableLocalSort(const std::vector<comm_set*>& sets) {
  stable_pairs<K, std::uint32_t>(sets, {.local_algo = gpusort::algorithm::cub_merge});
  stable_pairs<K, std::uint64_t>(sets, {.local_algo = gpusort::algorithm::adaptive_bitonic});
}

// options::stable with the default local sort (automatic): stable for 4- and 8-byte values.
template <class K>
void PairsAreStableWhenAsked(const std::vector<comm_set*>& sets) {
  stable_pairs<K, std::uint32_t>(sets, {.stable = true});
  stable_pairs<K, std::uint64_t>(sets, {.stable = true});
}

// Every merge fan-in gives the one stable order: 3 and 5 mix one-pass groups with CUB's merge
// of two and copies of one (17 ranks: groups of 3 or 5, then again), 8 merges up to 8 in one
// pass. Ties (few_unique) and every key's own place (uniform, special values) both checked;
// then keys alone, whose tiles are their own (4,096 keys for 4-byte keys, 2,048 with values).
template <class K>
void EveryMergeFanInGivesTheStableOrder(const std::vector<comm_set*>& sets) {
  for (int fan_in : {3, 5, 8}) {
    for (tools::distribution d : {tools::distribution::few_unique, tools::distribution::uniform})
      stable_pairs<K, std::uint32_t>(sets, {.stable = true, .merge_fan_in = fan_in}, d);
    for (comm_set* set : sets) {
      const int ranks = ranks_of(*set);
      SCOPED_TRACE(::testing::Message() << "keys alone, ranks=" << ranks << " fan_in=" << fan_in);
      const auto shards =
          make_shards<K>(uneven_sizes(ranks, 100003), tools::distribution::uniform, 29 + ranks);
      EXPECT_TRUE(same_bits(concat(dist_sort(*set, shards, {.merge_fan_in = fan_in})),
                            reference_sort(concat(shards))));
    }
  }
}

template <class K>
void SixteenByteValuesFollowTheirKeys(const std::vector<comm_set*>& sets) {
  struct wide {
    std::uint64_t index, check;
  };
  for (comm_set* set : sets) {
    const int ranks = ranks_of(*set);
    const auto shards = make_shards<K>(uneven_sizes(ranks, 50021), tools::distribution::uniform, 4);
    auto value_of = [](std::uint64_t i) { return wide{i, ~i * 0x9E3779B97F4A7C15ull}; };
    dist::options opt;
    opt.direction = gpusort::order::descending;
    const auto [out_keys, out_values] = dist_sort_pairs(*set, shards, value_of, opt);
    const std::vector<K> all = concat(shards);
    EXPECT_TRUE(same_bits(out_keys, reference_sort(all, true)));
    EXPECT_TRUE(values_follow_keys(all, out_keys, out_values, value_of));
  }
}

// options::partition_first (split by splitters from random samples, exchange, then sort)
// gives the same output as the default, on the same checks: every distribution in both
// orders, small, empty and all-equal shards (balanced), the input freed once the split has
// read it, stable pairs (ties and every key's own place) and 16-byte values.
template <class K>
void PartitionFirstSortsTheSame(const std::vector<comm_set*>& sets) {
  for (comm_set* set : sets) {
    const int ranks = ranks_of(*set);
    for (tools::distribution d : tools::all_distributions) {
      const auto shards = make_shards<K>(uneven_sizes(ranks, 200003), d, 31 + ranks);
      for (bool descending : {false, true}) {
        SCOPED_TRACE(::testing::Message() << "partition first, ranks=" << ranks
                                          << " dist=" << tools::to_string(d)
                                          << " desc=" << descending);
        const dist::options opt{
            .direction = descending ? gpusort::order::descending : gpusort::order::ascending,
            .nans = descending ? gpusort::nan_order::first : gpusort::nan_order::last,
            .partition_first = true};
        EXPECT_TRUE(same_bits(concat(dist_sort(*set, shards, opt)),
                              reference_sort(concat(shards), descending, opt.nans)));
      }
    }
    for (int sub : {1, 3, 8}) {  // options::sub_buckets
      const auto shards =
          make_shards<K>(uneven_sizes(ranks, 100019), tools::distribution::few_unique, 41 + sub);
      EXPECT_TRUE(same_bits(
          concat(dist_sort(*set, shards, {.partition_first = true, .sub_buckets = sub})),
          reference_sort(concat(shards))))
          << "sub_buckets " << sub << ", ranks " << ranks;
    }
    for (auto sizes : {std::vector<std::size_t>(ranks, 0), std::vector<std::size_t>(ranks, 1)}) {
      sizes[0] += 1;
      const auto shards = make_shards<K>(sizes, tools::distribution::uniform, 5);
      EXPECT_TRUE(same_bits(concat(dist_sort(*set, shards, {.partition_first = true})),
                            reference_sort(concat(shards))));
    }
    std::vector<std::vector<K>> equal(ranks, std::vector<K>(1 << 19, K(7)));
    equal[0].resize(3 << 19, K(7));
    const auto out = dist_sort(*set, equal, {.partition_first = true});
    std::uint64_t total = 0;
    for (auto& part : equal) total += part.size();
    for (auto& part : out)  // 6 standard deviations of the random samples' balance (3%)
      EXPECT_LE(part.size(), total / ranks * 1.2 + 1024) << "all equal";
    const auto zipf = make_shards<K>(uneven_sizes(ranks, 100003), tools::distribution::zipf, 8);
    EXPECT_TRUE(same_bits(concat(dist_sort_freeing_input(*set, zipf, {.partition_first = true})),
                          reference_sort(concat(zipf))));
  }
  for (tools::distribution d : {tools::distribution::few_unique, tools::distribution::uniform})
    stable_pairs<K, std::uint32_t>(sets, {.stable = true, .partition_first = true}, d);
  stable_pairs<K, std::uint64_t>(sets, {.stable = true, .merge_fan_in = 3, .partition_first = true});
  stable_pairs<K, std::uint32_t>(sets, {.stable = true, .partition_first = true, .sub_buckets = 4},
                                 tools::distribution::few_unique);
  for (comm_set* set : sets) {
    struct wide {
      std::uint64_t index, check;
    };
    const auto shards =
        make_shards<K>(uneven_sizes(ranks_of(*set), 50021), tools::distribution::uniform, 6);
    const auto value_of = [](std::uint64_t i) { return wide{i, ~i * 0x9E3779B97F4A7C15ull}; };
    const auto [out_keys, out_values] =
        dist_sort_pairs(*set, shards, value_of, {.partition_first = true});
    const std::vector<K> all = concat(shards);
    EXPECT_TRUE(same_bits(out_keys, reference_sort(all)));
    EXPECT_TRUE(values_follow_keys(all, out_keys, out_values, value_of));
  }
}

// options::copy_engines gives the same output, by the default plan and by partition_first (at
// 2 and 4 sub-buckets), both orders, uneven shards, stable pairs: by copy engines where the
// ranks are threads on their own GPUs (DistMultiGpu), and by NCCL or device copies elsewhere.
template <class K>
void CopyEnginesSortTheSame(const std::vector<comm_set*>& sets) {
  for (comm_set* set : sets) {
    const int ranks = ranks_of(*set);
    for (tools::distribution d : {tools::distribution::uniform, tools::distribution::few_unique})
      for (bool descending : {false, true})
        for (const dist::options base : {dist::options{}, dist::options{.partition_first = true},
                                         dist::options{.partition_first = true,
                                                       .sub_buckets = 4}}) {
          const auto shards = make_shards<K>(uneven_sizes(ranks, 100003), d, 51 + ranks);
          dist::options opt = base;
          opt.direction = descending ? gpusort::order::descending : gpusort::order::ascending;
          opt.copy_engines = true;
          EXPECT_TRUE(same_bits(concat(dist_sort(*set, shards, opt)),
                                reference_sort(concat(shards), descending, opt.nans)))
              << "copy engines, ranks " << ranks << ", dist " << tools::to_string(d)
              << ", desc " << descending << ", partition_first " << base.partition_first
              << ", sub_buckets " << base.sub_buckets;
        }
  }
  stable_pairs<K, std::uint32_t>(sets, {.stable = true, .copy_engines = true});
  stable_pairs<K, std::uint32_t>(sets, {.stable = true, .partition_first = true,
                                        .copy_engines = true});
}

GPUSORT_TYPED_SUITE(DistMultiGpu, TwoGpuTest, key_types);

// The same checks with thread ranks on one GPU.
GPUSORT_TYPED_SUITE(DistOneGpuThreads, GpuTest, key_types);

// The same checks with each rank a process (started by scripts/dist-launch.sh).
class ProcessRankTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!started_as_a_rank())
      GTEST_SKIP() << "runs as one of several processes: scripts/dist-launch.sh -n N "
                      "test_gpu_dist --gtest_filter='DistProcesses*'";
    if (ranks_of(process_ranks()) < 2) GTEST_SKIP() << "needs 2 ranks or more";
  }
};
using DistProcessesErrors = ProcessRankTest;
using DistProcessesNarrow = ProcessRankTest;
using DistProcessesHuge = ProcessRankTest;
GPUSORT_TYPED_SUITE(DistProcesses, ProcessRankTest, key_types);

// Each check, a function template of the key type taking the communicator sets, as a test of
// the three suites: NCCL over the GPUs, thread ranks on GPU 0, and processes.
#define DIST_TYPED_TESTS(check)                                              \
  TYPED_TEST(DistMultiGpu, check) { check<TypeParam>(nccl_sets()); }         \
  TYPED_TEST(DistOneGpuThreads, check) { check<TypeParam>(thread_sets()); }  \
  TYPED_TEST(DistProcesses, check) { check<TypeParam>(process_sets()); }

DIST_TYPED_TESTS(UnevenShardsEveryDistributionBothOrders)
DIST_TYPED_TESTS(SmallAndEmptyShards)
DIST_TYPED_TESTS(AllEqualKeysAreBalanced)
DIST_TYPED_TESTS(TheInputFreedAfterTheExchangeSortsTheSame)
DIST_TYPED_TESTS(PairsAreStableWithAStableLocalSort)
DIST_TYPED_TESTS(PairsAreStableWhenAsked)
DIST_TYPED_TESTS(SixteenByteValuesFollowTheirKeys)
DIST_TYPED_TESTS(EveryMergeFanInGivesTheStableOrder)
DIST_TYPED_TESTS(PartitionFirstSortsTheSame)
DIST_TYPED_TESTS(CopyEnginesSortTheSame)

void host_pointer_on_rank_1(const comm_set& comms) {
  const std::vector<std::uint32_t> input = tools::generate<std::uint32_t>(tools::distribution::uniform, 10000, 1);
  const int ranks = ranks_of(comms);
  std::vector<std::string> messages(ranks);
  std::vector<std::vector<std::uint32_t>> after(ranks);
  on_ranks_here(comms, [&](int r, const dist::communicator& comm) {
    device_array<std::uint32_t> keys(comm.device(), input);
    std::vector<std::uint32_t> host_copy = input;
    std::span<std::uint32_t> mine = r == 1 ? std::span(host_copy) : keys.span();
    try {
      dist::sort(comm, mine, {});
    } catch (const gpusort::error& e) {
      messages[r] = e.what();
    }
    after[r] = r == 1 ? host_copy : to_host(keys.span());
  });
  for (int r = 0; r < ranks; ++r) {
    if (!here(comms, r)) continue;
    EXPECT_NE(messages[r].find("rank 1 cannot go on"), std::string::npos) << messages[r];
    EXPECT_NE(messages[r].find("device memory"), std::string::npos) << messages[r];
    EXPECT_EQ(after[r], input) << "rank " << r;
  }
}

// Rank 1 asks for another order (or NaN placement, or values) than rank 0: every rank throws,
// naming rank 1 and what differs, before any key moves; no rank hangs in a collective.
void options_differ_on_rank_1(const comm_set& comms) {
  const std::vector<float> input = tools::generate<float>(tools::distribution::uniform, 10000, 2);
  const int ranks = ranks_of(comms);
  const auto try_all = [&](const std::function<dist::options(int)>& options_of,
                           const char* difference) {
    std::vector<std::string> messages(ranks);
    std::vector<std::vector<float>> after(ranks);
    on_ranks_here(comms, [&](int r, const dist::communicator& comm) {
      device_array<float> keys(comm.device(), input);
      try {
        dist::sort(comm, keys.span(), options_of(r));
      } catch (const gpusort::error& e) {
        messages[r] = e.what();
      }
      after[r] = to_host(keys.span());
    });
    for (int r = 0; r < ranks; ++r) {
      if (!here(comms, r)) continue;
      EXPECT_NE(messages[r].find("rank 1 differs from rank 0 in " + std::string(difference)),
                std::string::npos)
          << messages[r];
      EXPECT_EQ(after[r], input) << "rank " << r;
    }
  };
  try_all([](int r) {
    dist::options o;
    if (r == 1) o.direction = gpusort::order::descending;
    return o;
  }, "the order");
  try_all([](int r) {
    dist::options o;
    if (r == 1) o.nans = gpusort::nan_order::first;
    return o;
  }, "the NaN placement");
  try_all([](int r) {
    dist::options o;
    if (r == 1) o.oversampling = 7;
    return o;
  }, "the oversampling");
}

TEST_F(DistMultiGpuErrors, OptionsThatDifferBetweenRanksFailEveryRankAndLoseNothing) {
  options_differ_on_rank_1(comms_for(2));
}

TEST_F(DistOneGpuThreadsErrors, OptionsThatDifferBetweenRanksFailEveryRankAndLoseNothing) {
  options_differ_on_rank_1(threads_on_gpu0(2));
}

TEST_F(DistProcessesErrors, OptionsThatDifferBetweenRanksFailEveryRankAndLoseNothing) {
  options_differ_on_rank_1(process_ranks());
}

TEST_F(DistOneGpuErrors, ADeviceListedTwiceIsRefused) {
  const int twice[] = {0, 0};
  try {
    dist::communicators_for_devices(twice);
    FAIL() << "no exception";
  } catch (const gpusort::error& e) {
    EXPECT_NE(std::string(e.what()).find("device 0 is listed twice"), std::string::npos) << e.what();
  }
}

TEST_F(DistMultiGpuErrors, AHostPointerOnOneRankFailsEveryRankAndLosesNothing) {
  host_pointer_on_rank_1(comms_for(2));
}

TEST_F(DistOneGpuThreadsErrors, AHostPointerOnOneRankFailsEveryRankAndLosesNothing) {
  host_pointer_on_rank_1(threads_on_gpu0(2));
}

TEST_F(DistProcessesErrors, AHostPointerOnOneRankFailsEveryRankAndLosesNothing) {
  host_pointer_on_rank_1(process_ranks());
}

// Narrow keys (not bool: its host vectors pack bits): uneven shards of random bits (every NaN
// payload, signed zeros, infinities, ties), both orders, both NaN placements, byte for byte the
// library's one-array sort of all the keys; pairs with u32 values next to their keys. On the
// NCCL sets and on thread ranks of one GPU.
template <class K>
void narrow_keys_sort_as_one_array(const std::vector<comm_set*>& sets) {
  const auto same_narrow_bits = [](const std::vector<K>& a, const std::vector<K>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), sizeof(K) * a.size()) == 0;
  };
  for (comm_set* set : sets) {
    const int ranks = ranks_of(*set);
    std::mt19937_64 rng(ranks);
    std::vector<std::vector<K>> shards;
    for (const std::size_t size : uneven_sizes(ranks, 100003)) {
      std::vector<K> shard(size);
      for (K& key : shard) {
        const auto bits = static_cast<std::uint16_t>(rng() % 3 ? rng() : rng() % 8);
        std::memcpy(&key, &bits, sizeof(K));
      }
      shards.push_back(shard);
    }
    for (const bool descending : {false, true})
      for (const gpusort::nan_order nans : {gpusort::nan_order::last, gpusort::nan_order::first}) {
        SCOPED_TRACE(::testing::Message() << "ranks=" << ranks << " desc=" << descending
                                          << " nans=" << gpusort::to_string(nans));
        dist::options opt;
        opt.direction = descending ? gpusort::order::descending : gpusort::order::ascending;
        opt.nans = nans;
        std::vector<K> expect = concat(shards);
        gpusort::sort(expect, gpusort::options{.direction = opt.direction, .nans = nans});
        EXPECT_TRUE(same_narrow_bits(concat(dist_sort(*set, shards, opt)), expect));
        const auto value_of = [](std::uint64_t i) { return std::uint32_t(i); };
        const auto [keys, values] = dist_sort_pairs(*set, shards, value_of, opt);
        EXPECT_TRUE(same_narrow_bits(keys, expect));
        const std::vector<K> all = concat(shards);
        std::vector<bool> seen(all.size(), false);
        for (std::size_t i = 0; i < values.size(); ++i) {
          ASSERT_LT(values[i], all.size());
          ASSERT_FALSE(seen[values[i]]) << "value " << values[i] << " twice";
          seen[values[i]] = true;
          ASSERT_EQ(std::memcmp(&all[values[i]], &keys[i], sizeof(K)), 0) << "value left its key at " << i;
        }
      }
  }
}

void every_narrow_type_sorts_as_one_array(const std::vector<comm_set*>& sets) {
  narrow_keys_sort_as_one_array<std::int8_t>(sets);
  narrow_keys_sort_as_one_array<std::uint8_t>(sets);
  narrow_keys_sort_as_one_array<std::int16_t>(sets);
  narrow_keys_sort_as_one_array<std::uint16_t>(sets);
  narrow_keys_sort_as_one_array<__half>(sets);
  narrow_keys_sort_as_one_array<__nv_bfloat16>(sets);
}
TEST_F(DistMultiGpuNarrow, EveryNarrowTypeSortsAsOneArray) {
  every_narrow_type_sorts_as_one_array(nccl_sets());
}
TEST_F(DistOneGpuThreadsNarrow, EveryNarrowTypeSortsAsOneArray) {
  every_narrow_type_sorts_as_one_array(thread_sets());
}
TEST_F(DistProcessesNarrow, EveryNarrowTypeSortsAsOneArray) {
  every_narrow_type_sorts_as_one_array(process_sets());
}

// sort_spread of host and device bf16 keys, as the one-array sort.
TEST_F(DistMultiGpuNarrow, SpreadOfHostAndDeviceBfloat16) {
  std::mt19937_64 rng(7);
  std::vector<__nv_bfloat16> keys(700001);
  for (auto& key : keys) {
    const auto bits = static_cast<std::uint16_t>(rng());
    std::memcpy(&key, &bits, 2);
  }
  std::vector<__nv_bfloat16> expect = keys, host = keys;
  gpusort::sort(expect, {.direction = gpusort::order::descending});
  dist::sort_spread(std::span(host), {.direction = gpusort::order::descending});
  EXPECT_EQ(std::memcmp(host.data(), expect.data(), 2 * keys.size()), 0);
  device_array<__nv_bfloat16> d(0, keys);
  dist::sort_spread(d.span(), {.direction = gpusort::order::descending});
  EXPECT_EQ(std::memcmp(to_host(d.span()).data(), expect.data(), 2 * keys.size()), 0);
}

TEST_F(DistMultiGpuSpread, HostAndDeviceArrays) {
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{3}, std::size_t{1000003}}) {
    std::vector<float> keys = tools::generate<float>(tools::distribution::gaussian, n, n);
    scatter_special_values(keys, n);
    const std::vector<float> expect = reference_sort(keys);
    std::vector<float> host = keys;
    dist::sort_spread(std::span(host));
    EXPECT_TRUE(same_bits(host, expect)) << "host n=" << n;
    device_array<float> d(0, keys);
    dist::sort_spread(d.span());
    EXPECT_TRUE(same_bits(to_host(d.span()), expect)) << "device n=" << n;
  }
  std::vector<std::uint64_t> keys = tools::generate<std::uint64_t>(tools::distribution::zipf, 500009, 2);
  std::vector<std::uint32_t> values(keys.size());
  std::iota(values.begin(), values.end(), 0u);
  const std::vector<std::uint64_t> input = keys;
  dist::sort_spread(std::span(keys), std::span(values), {.direction = gpusort::order::descending});
  EXPECT_TRUE(same_bits(keys, reference_sort(input, true)));
  EXPECT_TRUE(values_follow_keys(input, keys, values, [](std::uint64_t i) { return std::uint32_t(i); }));
}

__global__ void fill_shuffled_range(std::uint32_t* keys, std::uint64_t begin, std::uint64_t count,
                                    std::uint64_t total) {
  for (std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i < count;
       i += std::uint64_t(gridDim.x) * blockDim.x)
    keys[i] = static_cast<std::uint32_t>(gpusort::tools::shuffle_index(begin + i, total));
}

struct not_at_offset {
  const std::uint32_t* keys;
  std::uint64_t first;
  __device__ bool operator()(std::uint64_t i) const { return keys[i] != std::uint32_t(first + i); }
};

void two_to_the_31_plus_5(const comm_set& comms) {
  const int ranks = ranks_of(comms);
  const std::uint64_t total = (std::uint64_t{1} << 31) + 5;
  std::vector<std::vector<std::uint64_t>> sizes(ranks);
  std::vector<std::uint64_t> misplaced(ranks);
  std::vector<dist::shard<std::uint32_t>> results(ranks);
  on_ranks_here(comms, [&](int r, const dist::communicator& comm) {
    cudaSetDevice(comm.device());
    // Uneven: rank 0 holds twice the others' share.
    const std::uint64_t unit = total / (ranks + 1);
    const std::uint64_t begin = r == 0 ? 0 : unit * (r + 1);
    const std::uint64_t count = r == 0 ? 2 * unit : (r == ranks - 1 ? total - begin : unit);
    std::uint32_t* keys = nullptr;
    if (cudaMalloc(&keys, sizeof(std::uint32_t) * count) != cudaSuccess) throw std::bad_alloc();
    fill_shuffled_range<<<1024, 256>>>(keys, begin, count, total);
    results[r] = dist::sort(comm, std::span(keys, count), {});
    cudaFree(keys);
    sizes[r] = {results[r].size()};
  });
  share_parts(comms, sizes);  // each rank's first key is the sum of the sizes before it
  on_ranks_here(comms, [&](int r, const dist::communicator& comm) {
    cudaSetDevice(comm.device());
    std::uint64_t first = 0;
    for (int q = 0; q < r; ++q) first += sizes[q].at(0);
    misplaced[r] = thrust::count_if(thrust::device, thrust::counting_iterator<std::uint64_t>(0),
                                    thrust::counting_iterator<std::uint64_t>(results[r].size()),
                                    not_at_offset{results[r].keys().data(), first});
    results[r] = {};
  });
  std::uint64_t sum = 0;
  for (int r = 0; r < ranks; ++r) {
    sum += sizes[r].at(0);
    if (here(comms, r)) EXPECT_EQ(misplaced[r], 0u) << "rank " << r;
  }
  EXPECT_EQ(sum, total);
}

TEST_F(DistMultiGpuHuge, TwoToThe31PlusFiveKeys) {
  two_to_the_31_plus_5(comms_for(device_count()));
}

TEST_F(DistProcessesHuge, TwoToThe31PlusFiveKeys) { two_to_the_31_plus_5(process_ranks()); }

TEST_F(DistOneGpuThreadsHuge, TwoToThe31PlusFiveKeys) {
  std::size_t free_bytes = 0, total_bytes = 0;
  cudaMemGetInfo(&free_bytes, &total_bytes);
  if (free_bytes < (std::size_t{40} << 30)) GTEST_SKIP() << "needs 40 GiB of device memory";
  two_to_the_31_plus_5(threads_on_gpu0(2));
}

// Sorts 2^24 keys on each of 3 thread ranks of GPU 0 and frees the shards; returns what
// gpusort's pool on the GPU held while the shards lived. (Measured on the pool: the GPU's free
// memory moves with other processes' allocations.)
std::uint64_t sort_and_free_on_gpu0(const comm_set& comms, std::uint64_t per_rank) {
  const int ranks = ranks_of(comms);
  cudaSetDevice(0);
  std::vector<std::uint32_t*> keys(ranks);
  for (auto& k : keys) EXPECT_EQ(cudaMalloc(&k, sizeof(std::uint32_t) * per_rank), cudaSuccess);
  std::uint64_t held = 0;
  {
    std::vector<dist::shard<std::uint32_t>> results(ranks);
    on_ranks_here(comms, [&](int r, const dist::communicator& comm) {
      cudaSetDevice(comm.device());
      fill_shuffled_range<<<1024, 256>>>(keys[r], per_rank * r, per_rank, per_rank * ranks);
      results[r] = dist::sort(comm, std::span(keys[r], per_rank), {});
    });
    std::uint64_t sorted = 0;
    for (const auto& result : results) sorted += result.size();
    EXPECT_EQ(sorted, per_rank * ranks);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    held = dist::detail::pool_reserved_bytes(0);
  }  // the shards freed here
  for (auto* k : keys) cudaFree(k);
  return held;
}

// A call keeps the memory its buffers free for its next buffers, and gives back what is unused
// when it ends: once the shards are gone, gpusort's pool on the GPU holds nothing.
TEST_F(DistOneGpuThreadsMemory, ACallGivesBackTheMemoryItKept) {
  const std::uint64_t per_rank = std::uint64_t{1} << 24;  // 64 MiB of keys a rank
  for (int call = 0; call < 2; ++call) {
    const std::uint64_t held_by_the_shards = sort_and_free_on_gpu0(threads_on_gpu0(3), per_rank);
    // The pool gives back what is unused at a synchronization: the second one sees every free.
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    // The shards (192 MiB of keys) came from the pool: it did map them, and now holds nothing.
    EXPECT_GE(held_by_the_shards, sizeof(std::uint32_t) * per_rank * 3);
    EXPECT_EQ(dist::detail::pool_reserved_bytes(0), 0u)
        << "call " << call << ": the pool still holds memory no buffer uses";
  }
}

// While the caller holds a kept_memory for the GPU, what a call mapped stays in the pool after
// it: the next call reuses it (ranks' buffers differ a little in size and arrive in any order,
// so a little more may be mapped). The last kept_memory's end gives the memory back.
TEST_F(DistOneGpuThreadsMemory, KeptMemoryKeepsTheBuffersBetweenCalls) {
  const std::uint64_t per_rank = std::uint64_t{1} << 24;
  {
    const dist::kept_memory kept(0);
    {
      const dist::kept_memory nested(0);  // scopes nest: the inner one's end keeps the memory
      sort_and_free_on_gpu0(threads_on_gpu0(3), per_rank);
    }
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const std::uint64_t kept_after_first = dist::detail::pool_reserved_bytes(0);
    // At least the shards' and the receive buffers' memory: 2 x 192 MiB, no buffer alive.
    EXPECT_GE(kept_after_first, 2 * sizeof(std::uint32_t) * per_rank * 3);
    sort_and_free_on_gpu0(threads_on_gpu0(3), per_rank);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_LE(dist::detail::pool_reserved_bytes(0), kept_after_first + kept_after_first / 4)
        << "the second call mapped its buffers again";
  }
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(dist::detail::pool_reserved_bytes(0), 0u) << "the memory was not given back";
}

// ---- one process per GPU: communicator_from_environment ------------------------------------

// A worker process: sorts a shard made from its rank and writes what it got to
// GPUSORT_TEST_RESULT (size, first key, last key, sorted or not). Skips unless started by
// OneProcessPerGpu below.
TEST(DistWorker, SortsItsShard) {
  const char* result_path = std::getenv("GPUSORT_TEST_RESULT");
  if (!result_path) GTEST_SKIP() << "started only by DistMultiProcess";
  auto comm = dist::communicator_from_environment();
  const auto keys = tools::generate<std::uint32_t>(tools::distribution::uniform,
                                                   100000 + 37 * comm.rank(), comm.rank());
  device_array<std::uint32_t> d(comm.device(), keys);
  auto result = dist::sort(comm, d.span(), {});
  const auto out = to_host(result.keys());
  std::ofstream f(result_path);
  f << out.size() << " " << (out.empty() ? 0 : out.front()) << " "
    << (out.empty() ? 0 : out.back()) << " " << std::is_sorted(out.begin(), out.end()) << "\n";
}

// The variables each launcher sets for rank r of n (one host: the local rank is the rank).
std::vector<std::string> launcher_environment(const std::string& launcher, int r, int n) {
  const std::string rank = std::to_string(r), size = std::to_string(n);
  if (launcher == "torchrun")
    return {"RANK=" + rank, "WORLD_SIZE=" + size, "LOCAL_RANK=" + rank, "LOCAL_WORLD_SIZE=" + size};
  if (launcher == "mpirun")
    return {"OMPI_COMM_WORLD_RANK=" + rank, "OMPI_COMM_WORLD_SIZE=" + size,
            "OMPI_COMM_WORLD_LOCAL_RANK=" + rank};
  if (launcher == "srun") return {"SLURM_PROCID=" + rank, "SLURM_NTASKS=" + size, "SLURM_LOCALID=" + rank};
  return {"GPUSORT_RANK=" + rank, "GPUSORT_WORLD_SIZE=" + size};
}

// One process per GPU, on every GPU, started with each launcher's variables in turn; the NCCL
// id goes through a file. The ranks' results, in rank order, are one sorted array of every key.
TEST_F(DistMultiProcess, OneProcessPerGpuAsEachLauncherStartsThem) {
  const int ranks = device_count();
  for (const std::string launcher : {"gpusort", "torchrun", "mpirun", "srun"}) {
    SCOPED_TRACE(launcher);
    const std::string dir = ::testing::TempDir() + "gpusort_dist_" + std::to_string(getpid()) + launcher;
    ASSERT_EQ(system(("mkdir -p " + dir).c_str()), 0);
    std::vector<pid_t> pids(ranks);
    for (int r = 0; r < ranks; ++r) {
      std::vector<std::string> env_strings = launcher_environment(launcher, r, ranks);
      env_strings.push_back("GPUSORT_NCCL_ID_FILE=" + dir + "/id");
      env_strings.push_back("GPUSORT_TEST_RESULT=" + dir + "/rank" + std::to_string(r));
      env_strings.push_back("NCCL_NVLS_ENABLE=0");
      for (char** e = environ; *e; ++e) {
        const std::string_view v = *e;
        if (!v.starts_with("GPUSORT_") && !v.starts_with("RANK=") && !v.starts_with("WORLD_SIZE=") &&
            !v.starts_with("LOCAL_RANK=") && !v.starts_with("OMPI_COMM_WORLD_") && !v.starts_with("SLURM_"))
          env_strings.push_back(*e);
      }
      std::vector<char*> envp;
      for (auto& e : env_strings) envp.push_back(e.data());
      envp.push_back(nullptr);
      std::string self = "/proc/self/exe", filter = "--gtest_filter=DistWorker.SortsItsShard";
      char* argv[] = {self.data(), filter.data(), nullptr};
      ASSERT_EQ(posix_spawn(&pids[r], "/proc/self/exe", nullptr, nullptr, argv, envp.data()), 0);
    }
    for (int r = 0; r < ranks; ++r) {
      int status = 0;
      waitpid(pids[r], &status, 0);
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "rank " << r;
    }
    std::uint64_t total = 0, last = 0;
    for (int r = 0; r < ranks; ++r) {
      std::ifstream f(dir + "/rank" + std::to_string(r));
      std::uint64_t size = 0, front = 0, back = 0;
      int sorted = 0;
      ASSERT_TRUE(f >> size >> front >> back >> sorted) << "rank " << r << " wrote no result";
      EXPECT_TRUE(sorted) << "rank " << r;
      if (size > 0) {
        EXPECT_LE(last, front) << "rank " << r << " starts below the previous rank's end";
        last = back;
      }
      total += size;
    }
    // Rank r sorts 100000 + 37 r keys.
    EXPECT_EQ(total, 100000u * ranks + 37u * ranks * (ranks - 1) / 2);
    ASSERT_EQ(system(("rm -rf " + dir).c_str()), 0);
  }
}

// ---- one rank: any GPU --------------------------------------------------------------------

GPUSORT_TYPED_SUITE(DistOneGpu, GpuTest, key_types);

TYPED_TEST(DistOneGpu, OneRankIsALocalSort) {
  using K = TypeParam;
  const int one[] = {0};
  static auto* comms = new std::vector<dist::communicator>(dist::communicators_for_devices(one));
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{65537}}) {
    std::vector<K> keys = tools::generate<K>(tools::distribution::uniform, n, n + 1);
    scatter_special_values(keys, n);
    device_array<K> d(0, keys);
    auto result = dist::sort((*comms)[0], d.span(), {});
    EXPECT_TRUE(same_bits(to_host(result.keys()), reference_sort(keys)));
    EXPECT_EQ(result.times().bytes_sent, 0u);
  }
}

TEST_F(DistOneGpuErrors, BadArgumentsThrowBeforeTouchingData) {
  const int one[] = {0};
  auto comms = dist::communicators_for_devices(one);
  std::vector<std::uint32_t> host{3, 2, 1};
  EXPECT_THROW(dist::sort(comms[0], std::span(host), {}), gpusort::error);
  EXPECT_EQ(host, (std::vector<std::uint32_t>{3, 2, 1}));
  device_array<std::uint32_t> d(0, host);
  dist::options zero;
  zero.oversampling = 0;
  EXPECT_THROW(dist::sort(comms[0], d.span(), zero), gpusort::error);
  EXPECT_EQ(to_host(d.span()), host);
  for (int fan_in : {1, 9}) {
    EXPECT_THROW(dist::sort(comms[0], d.span(), {.merge_fan_in = fan_in}), gpusort::error);
    EXPECT_EQ(to_host(d.span()), host);
  }
  for (int sub : {-1, 9}) {
    EXPECT_THROW(dist::sort(comms[0], d.span(), {.partition_first = true, .sub_buckets = sub}),
                 gpusort::error);
    EXPECT_EQ(to_host(d.span()), host);
  }
  std::vector<std::uint32_t> values(2);
  EXPECT_THROW(dist::sort(comms[0], d.span(), std::span(values), {}), gpusort::error);
}

// partition_first's split by itself (src/dist/split.cuh): against the stable partition by
// index_math::dist::bucket_of, for every digit width the scatter ranks by (2 and 4 bits by
// CUB's counters over keys held blocked, 8 by the warp's match), sizes around the tile, keys
// with many ties (so the (rank, position) tie-break decides), values beside their keys, and
// a poisoned output; `offset` elements before the keys and values (1: arrays that are not
// 16-byte aligned, which the blocked loads take one element at a time).
template <class K, class V>
void split_is_a_stable_partition(std::uint64_t n, int buckets, std::uint64_t seed,
                                 std::uint64_t offset = 0) {
  namespace math = gpusort::detail::index_math::dist;
  constexpr bool pairs = !std::is_same_v<V, gpusort::detail::no_value>;
  std::mt19937_64 rng(seed);
  std::vector<K> keys(n);
  for (K& k : keys) k = static_cast<K>(rng() % 61);
  if constexpr (std::is_floating_point_v<K>)
    for (std::uint64_t i = 0; i < n; i += 97) keys[i] = i % 2 ? K(-0.0) : std::nan("");
  std::vector<std::uint32_t> values(pairs ? n : 0);
  std::iota(values.begin(), values.end(), 0u);
  const math::order_code<K> code(gpusort::order::ascending, gpusort::nan_order::last);
  const std::uint32_t rank = 1;  // the splitters' ranks are 0 to 2: ties go both ways
  std::vector<math::splitter> all;
  for (std::uint64_t i = 0; i < n; ++i)
    all.push_back({code(keys[i]), static_cast<std::uint32_t>(rng() % 3), i});
  std::ranges::sort(all, [](const math::splitter& a, const math::splitter& b) { return a < b; });
  std::vector<math::splitter> splitters;
  for (int b = 1; b < buckets; ++b)
    splitters.push_back(n ? all[n * b / buckets] : math::splitter{0, 0, 0});
  std::vector<std::vector<std::uint64_t>> members(buckets);
  for (std::uint64_t i = 0; i < n; ++i)
    members[math::bucket_of(splitters.data(), buckets - 1, {code(keys[i]), rank, i})].push_back(i);
  std::vector<K> want_keys;
  std::vector<std::uint32_t> want_values;
  std::vector<std::uint64_t> want_bounds;
  for (const auto& bucket : members) {
    want_bounds.push_back(want_keys.size());
    for (std::uint64_t i : bucket) {
      want_keys.push_back(keys[i]);
      if (pairs) want_values.push_back(values[i]);
    }
  }
  want_bounds.push_back(n);

  std::vector<K> padded_keys(offset, K(1));
  padded_keys.insert(padded_keys.end(), keys.begin(), keys.end());
  std::vector<std::uint32_t> padded_values(pairs ? offset : 0, 0u);
  padded_values.insert(padded_values.end(), values.begin(), values.end());
  const device_array<K> d_padded_keys(0, padded_keys), d_out(0, std::vector<K>(n));
  const device_array<std::uint32_t> d_padded_values(0, padded_values), d_out_values(0, values);
  K* const keys_at = d_padded_keys.ptr + offset;
  std::uint32_t* const values_at = d_padded_values.ptr + (pairs ? offset : 0);
  const device_array<math::splitter> d_splitters(
      0, splitters.empty() ? std::vector<math::splitter>(1) : splitters);
  const device_array<std::uint64_t> d_bounds(0, std::vector<std::uint64_t>(buckets + 1));
  CUDA_OK(cudaMemset(d_out.ptr, poison, sizeof(K) * n));
  CUDA_OK(cudaMemset(d_out_values.ptr, poison, sizeof(std::uint32_t) * values.size()));
  CUDA_OK(cudaMemset(d_bounds.ptr, poison, sizeof(std::uint64_t) * (buckets + 1)));
  auto* in_values = pairs ? reinterpret_cast<V*>(values_at) : nullptr;
  auto* out_values = pairs ? reinterpret_cast<V*>(d_out_values.ptr) : nullptr;
  std::size_t bytes = 0;
  CUDA_OK((gpusort::dist::detail::split_by_bucket<K, V>(
      nullptr, bytes, keys_at, in_values, n, buckets, rank, code, nullptr, nullptr, nullptr,
      nullptr, nullptr)));
  poisoned_workspace temp(bytes);
  ASSERT_TRUE(temp.ptr);
  CUDA_OK((gpusort::dist::detail::split_by_bucket<K, V>(
      temp.ptr, bytes, keys_at, in_values, n, buckets, rank, code, d_splitters.ptr,
      d_out.ptr, out_values, d_bounds.ptr, nullptr)));
  CUDA_OK(cudaDeviceSynchronize());
  const std::string where = "n=" + std::to_string(n) + " buckets=" + std::to_string(buckets) +
                            " offset=" + std::to_string(offset);
  EXPECT_TRUE(same_bits(to_host(d_out.span()), want_keys)) << where;
  if (pairs) EXPECT_EQ(to_host(d_out_values.span()), want_values) << where;
  EXPECT_EQ(to_host(d_bounds.span()), want_bounds) << where;

  // The two halves with a place for each bucket: the buckets in reverse order, a gap of
  // `gap` untouched elements before each (where exchange first puts them: landing_plan).
  const std::uint64_t gap = 3;
  std::vector<std::uint64_t> place_at(buckets);
  std::uint64_t end = 0;
  for (int b = buckets - 1; b >= 0; --b) {
    place_at[b] = end + gap;
    end = place_at[b] + members[b].size();
  }
  const device_array<K> d_placed(0, std::vector<K>(end));
  const device_array<std::uint32_t> d_placed_values(0, std::vector<std::uint32_t>(end));
  CUDA_OK(cudaMemset(d_placed.ptr, poison, sizeof(K) * end));
  CUDA_OK(cudaMemset(d_placed_values.ptr, poison, sizeof(std::uint32_t) * end));
  std::vector<K*> key_places;
  std::vector<V*> value_places;
  for (int b = 0; b < buckets; ++b) {
    key_places.push_back(d_placed.ptr + place_at[b]);
    value_places.push_back(reinterpret_cast<V*>(d_placed_values.ptr + place_at[b]));
  }
  const device_array<K*> d_key_places(0, key_places);
  const device_array<V*> d_value_places(0, value_places);
  CUDA_OK(cudaMemset(d_bounds.ptr, poison, sizeof(std::uint64_t) * (buckets + 1)));
  CUDA_OK((gpusort::dist::detail::split_count<K>(temp.ptr, bytes, keys_at, n, buckets, rank,
                                                 code, d_splitters.ptr, d_bounds.ptr, nullptr)));
  CUDA_OK((gpusort::dist::detail::split_scatter<K, V>(
      temp.ptr, bytes, keys_at, in_values, n, buckets, rank, code, d_splitters.ptr,
      d_key_places.ptr, pairs ? d_value_places.ptr : nullptr, nullptr, nullptr, nullptr)));
  CUDA_OK(cudaDeviceSynchronize());
  EXPECT_EQ(to_host(d_bounds.span()), want_bounds) << where << " (split_count)";
  const std::vector<K> placed = to_host(d_placed.span());
  const std::vector<std::uint32_t> placed_values = to_host(d_placed_values.span());
  std::vector<unsigned char> untouched(sizeof(K));
  std::memset(untouched.data(), poison, sizeof(K));
  for (int b = 0; b < buckets; ++b) {
    for (std::uint64_t g = place_at[b] - gap; g < place_at[b]; ++g)
      ASSERT_EQ(std::memcmp(&placed[g], untouched.data(), sizeof(K)), 0) << where << ": a gap written";
    for (std::uint64_t k = 0; k < members[b].size(); ++k) {
      const std::uint64_t i = members[b][k];
      ASSERT_EQ(std::memcmp(&placed[place_at[b] + k], &keys[i], sizeof(K)), 0)
          << where << " bucket " << b << " key " << k;
      if (pairs) ASSERT_EQ(placed_values[place_at[b] + k], values[i]) << where;
    }
  }
}

TEST_F(DistOneGpuSplit, IsAStablePartitionForEveryDigitWidth) {
  using gpusort::detail::no_value;
  for (const std::uint64_t n : {0ull, 1ull, 2047ull, 2048ull, 2049ull, 65537ull, 1000003ull})
    for (const int buckets : {2, 3, 4, 5, 15, 16, 17, 64, 255}) {
      const std::uint64_t seed = n * 1000 + buckets;
      ASSERT_NO_FATAL_FAILURE((split_is_a_stable_partition<std::uint32_t, no_value>(n, buckets, seed)));
      ASSERT_NO_FATAL_FAILURE((split_is_a_stable_partition<std::uint32_t, std::uint32_t>(n, buckets, seed)));
      ASSERT_NO_FATAL_FAILURE((split_is_a_stable_partition<std::int64_t, std::uint32_t>(n, buckets, seed)));
      ASSERT_NO_FATAL_FAILURE((split_is_a_stable_partition<double, no_value>(n, buckets, seed)));
      if (n > 2 * gpusort::detail::index_math::dist::split_tile) {  // whole tiles, not aligned
        ASSERT_NO_FATAL_FAILURE(
            (split_is_a_stable_partition<std::uint32_t, std::uint32_t>(n, buckets, seed, 1)));
        ASSERT_NO_FATAL_FAILURE(
            (split_is_a_stable_partition<std::int64_t, std::uint32_t>(n, buckets, seed, 1)));
      }
    }
}

}  // namespace
