// gpusort::sort of host arrays (gpusort/external.hpp, src/external/host_arrays.cpp): keys and
// pairs of every key type against std::stable_sort, in both orders and NaN placements, from
// pageable, pinned and registered memory, by each plan (one GPU, runs, spread over GPUs); the
// link copier's chunking (src/external/link_copy.hpp) at sizes around its chunk and slot
// boundaries; cancel and bad requests. Without a GPU the CPU backend sorts and the GPU cases
// skip.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/distributions.hpp"
#include "gpusort/external.hpp"
#include "link_copy.hpp"
#include "records.hpp"  // mix64
#include "reference.hpp"

namespace {

namespace ext = gpusort::detail::external;

int visible_gpus() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) count = 0;
  cudaGetLastError();
  return count;
}

// ---- the copier's index math ------------------------------------------------------------

static_assert(ext::link_chunk_count(0, 8) == 0 && ext::link_chunk_count(8, 8) == 1 &&
              ext::link_chunk_count(9, 8) == 2 && ext::link_chunk_count(5, 0) == 0);
static_assert(ext::nth_link_chunk(20, 8, 2).offset == 16 && ext::nth_link_chunk(20, 8, 2).size == 4);
static_assert(ext::nth_link_chunk(20, 8, 3).size == 0);
static_assert(ext::link_chunk_bytes_for(0, 8) == ext::smallest_link_chunk_bytes &&
              ext::link_chunk_bytes_for(1, 8) == ext::smallest_link_chunk_bytes &&
              ext::link_chunk_bytes_for(8 * (65536 + 1), 8) == 2 * 65536 &&
              ext::link_chunk_bytes_for(std::uint64_t{1} << 40, 8) == ext::default_link_chunk_bytes &&
              ext::link_chunk_bytes_for(100, 0) == ext::smallest_link_chunk_bytes);
static_assert(ext::whole_pages(4096, 8192, 4096).begin == 0 && ext::whole_pages(4096, 8192, 4096).end == 8192);
static_assert(ext::whole_pages(4097, 8192, 4096).begin == 4095 && ext::whole_pages(4097, 8192, 4096).end == 4095 + 4096);
static_assert(ext::whole_pages(4097, 4096, 4096).begin == ext::whole_pages(4097, 4096, 4096).end);
static_assert(ext::whole_pages(1, 2, 4096).begin == 0 && ext::whole_pages(1, 2, 4096).end == 0);
static_assert(ext::link_threads(16, 1) == 8 && ext::link_threads(16, 4) == 4 &&
              ext::link_threads(2, 4) == 2 && ext::link_threads(64, 4) == 8);

// The staging threads' copy (streaming stores on x86): every byte at every alignment of
// either end, nothing written outside the target.
TEST(LinkMath, StreamCopyCopiesEveryByteAndNothingElse) {
  const std::size_t guard = 64;
  std::vector<unsigned char> from((std::size_t{1} << 20) + 64), to(from.size() + 2 * guard);
  for (std::size_t i = 0; i < from.size(); ++i) from[i] = static_cast<unsigned char>(i * 131 + 7);
  for (const std::size_t bytes : {std::size_t{0}, std::size_t{1}, std::size_t{15}, std::size_t{16},
                                  std::size_t{17}, std::size_t{63}, std::size_t{64}, std::size_t{65},
                                  std::size_t{127}, std::size_t{129}, std::size_t{4099},
                                  (std::size_t{1} << 20) + 7})
    for (const std::size_t in_at : {0, 1, 5})
      for (const std::size_t out_at : {0, 1, 8, 15, 16, 17}) {
        std::fill(to.begin(), to.end(), static_cast<unsigned char>(0xcd));
        ext::stream_copy(to.data() + guard + out_at, from.data() + in_at, bytes);
        const auto untouched = [](auto first, auto last) {
          return std::all_of(first, last, [](unsigned char c) { return c == 0xcd; });
        };
        const auto begin = to.begin() + static_cast<std::ptrdiff_t>(guard + out_at);
        const auto end = begin + static_cast<std::ptrdiff_t>(bytes);
        ASSERT_TRUE(std::equal(begin, end, from.begin() + static_cast<std::ptrdiff_t>(in_at)))
            << "bytes " << bytes << " from +" << in_at << " to +" << out_at;
        ASSERT_TRUE(untouched(to.begin(), begin) && untouched(end, to.end()))
            << "bytes " << bytes << " from +" << in_at << " to +" << out_at << ": wrote outside";
      }
}

TEST(LinkMath, ThreadsTakeEveryChunkOnceAndChunksTileTheBytes) {
  for (const std::uint64_t bytes : std::vector<std::uint64_t>{0, 1, 4095, 4096, 4097, 65536 * 3 + 5})
    for (const std::uint64_t chunk : std::vector<std::uint64_t>{1, 4096, 10000})
      for (const std::uint64_t threads : std::vector<std::uint64_t>{1, 2, 3, 8}) {
        const std::uint64_t chunks = ext::link_chunk_count(bytes, chunk);
        std::uint64_t taken = 0;
        for (std::uint64_t t = 0; t < threads; ++t) taken += ext::chunks_of_thread(chunks, threads, t);
        EXPECT_EQ(taken, chunks) << bytes << " " << chunk << " " << threads;
        std::uint64_t covered = 0;
        for (std::uint64_t c = 0; c < chunks; ++c) {
          const ext::link_chunk piece = ext::nth_link_chunk(bytes, chunk, c);
          EXPECT_EQ(piece.offset, covered);
          EXPECT_GT(piece.size, 0u);
          covered += piece.size;
        }
        EXPECT_EQ(covered, bytes);
      }
}

// ---- the copier on a GPU ----------------------------------------------------------------

class LinkCopier : public ::testing::Test {
 protected:
  void SetUp() override {
    if (visible_gpus() < 1) GTEST_SKIP() << "needs a GPU";
  }
};

// Round trips of bytes around the chunk (4096 here) and the slots' reuse (3 threads x 2
// slots), from pageable and from pinned memory; the bytes around the copy stay untouched.
TEST_F(LinkCopier, RoundTripsEveryByteAtSizesAroundChunksAndSlots) {
  constexpr std::uint64_t chunk = 4096;
  ext::link_copier link(0, 3, chunk, 0);  // staged at every size
  std::mt19937_64 rng(7);
  for (const std::uint64_t bytes : std::vector<std::uint64_t>{1, 4095, 4096, 4097, 6 * chunk - 1, 6 * chunk,
                                                              6 * chunk + 1, 13 * chunk + 7, (1 << 20) + 3})
    for (const bool pinned : {false, true}) {
      SCOPED_TRACE(::testing::Message() << bytes << " bytes, pinned " << pinned);
      std::vector<unsigned char> pageable(bytes + 2);
      unsigned char* pinned_bytes = nullptr;
      if (pinned) ASSERT_EQ(cudaMallocHost(&pinned_bytes, bytes + 2), cudaSuccess);
      unsigned char* host = pinned ? pinned_bytes : pageable.data();
      for (std::uint64_t i = 0; i < bytes + 2; ++i) host[i] = static_cast<unsigned char>(rng());
      const std::vector<unsigned char> original(host, host + bytes + 2);
      unsigned char* device = nullptr;
      ASSERT_EQ(cudaMalloc(&device, bytes), cudaSuccess);
      const ext::link_report in = link.to_device(device, host + 1, bytes);
      EXPECT_EQ(in.straight, pinned);
      std::memset(host + 1, 0xEE, bytes);  // poisoned: every byte must come back
      link.to_host(host + 1, device, bytes);
      EXPECT_TRUE(std::equal(original.begin(), original.end(), host));
      cudaFree(device);
      if (pinned) cudaFreeHost(pinned_bytes);
    }
}

// Pinning in pieces (4 KiB here, on 3 threads): round trips from an address off a page
// boundary, at sizes around pages and pieces; every whole page pinned and unpinned again.
// Memory pinned already cannot be pinned again: its pieces go through the driver, still right.
TEST_F(LinkCopier, PinnedPiecesRoundTripEveryByteAndUnpin) {
  const long page = ::sysconf(_SC_PAGESIZE);
  std::mt19937_64 rng(9);
  unsigned char* device = nullptr;
  ASSERT_EQ(cudaMalloc(&device, (1 << 20) + 8192), cudaSuccess);
  for (const std::uint64_t bytes : std::vector<std::uint64_t>{1, 4095, 4096, 8193, 3 * 4096 + 7, (1 << 20) + 3})
    for (const bool pinned_already : {false, true}) {
      SCOPED_TRACE(::testing::Message() << bytes << " bytes, pinned already " << pinned_already);
      std::vector<unsigned char> pageable(bytes + 2 * page);
      unsigned char* pinned_bytes = nullptr;
      if (pinned_already) ASSERT_EQ(cudaMallocHost(&pinned_bytes, bytes + 2 * page), cudaSuccess);
      unsigned char* base = pinned_already ? pinned_bytes : pageable.data();
      for (std::uint64_t i = 0; i < bytes + 2 * page; ++i) base[i] = static_cast<unsigned char>(rng());
      const std::vector<unsigned char> original(base, base + bytes + 2 * page);
      unsigned char* host = base + 1;  // never on a page boundary
      {
        ext::pinned_pieces pieces(host, bytes, 3, 4096);
        pieces.to_device(0, device);
        const ext::page_span whole = ext::whole_pages(reinterpret_cast<std::uintptr_t>(host), bytes, page);
        EXPECT_EQ(pieces.pinned_bytes(), pinned_already ? 0 : whole.end - whole.begin);
        std::memset(host, 0xEE, bytes);
        pieces.to_host(0, device);
        pieces.unpin();
        EXPECT_EQ(pieces.pinned_bytes(), 0u);
      }
      EXPECT_TRUE(std::equal(original.begin(), original.end(), base));
      if (!pinned_already) {  // unpinned: registering it again works
        ASSERT_EQ(cudaHostRegister(pageable.data(), pageable.size(), cudaHostRegisterDefault), cudaSuccess);
        cudaHostUnregister(pageable.data());
      }
      if (pinned_already) cudaFreeHost(pinned_bytes);
    }
  cudaFree(device);
}

TEST_F(LinkCopier, ReportsACudaFailureAsTheLibrarysError) {
  ext::link_copier link(0, 2, 4096);
  std::vector<unsigned char> host(3 * 4096);
  // Not a device address: the copy fails, and says so.
  EXPECT_THROW(link.to_host(host.data(), reinterpret_cast<void*>(0x10), host.size()),
               gpusort::error);
}

// ---- host arrays ------------------------------------------------------------------------

template <class K>
std::vector<K> hostile_keys(std::size_t n, std::uint64_t seed) {
  std::vector<K> keys = gpusort::tools::generate<K>(gpusort::tools::distribution::uniform, n, seed);
  for (std::size_t i = 0; i < n; i += 3) keys[i] = keys[i % 97];  // repeats show stability
  if constexpr (std::is_floating_point_v<K>) gpusort::testing::scatter_special_values(keys, seed);
  return keys;
}

// Value i of a pairs test: the input position i in the value's first bytes.
template <class V>
V position_value(std::uint64_t i) {
  if constexpr (std::is_integral_v<V>)
    return static_cast<V>(i);
  else
    return gpusort::testing::payload_of_input<sizeof(V)>(i);
}

// Where the host array lives.
enum class memory { pageable, pinned, registered };

// n elements of T in host memory of the kind asked for, holding `values`.
template <class T>
class host_buffer {
 public:
  host_buffer(const std::vector<T>& values, memory kind) : n_(values.size()), kind_(kind) {
    if (kind == memory::pinned) {
      void* p = nullptr;
      if (cudaMallocHost(&p, std::max<std::size_t>(n_, 1) * sizeof(T)) != cudaSuccess) throw std::bad_alloc();
      data_ = static_cast<T*>(p);
    } else {
      pageable_ = values;
      data_ = pageable_.data();
    }
    std::copy(values.begin(), values.end(), data_);
  }
  ~host_buffer() {
    if (kind_ == memory::pinned) cudaFreeHost(data_);
  }
  std::span<T> span() { return {data_, n_}; }
  std::vector<T> vector() const { return {data_, data_ + n_}; }

 private:
  std::size_t n_;
  memory kind_;
  std::vector<T> pageable_;
  T* data_ = nullptr;
};

class HostArrays : public ::testing::Test {
 protected:
  static gpusort::external_options one_gpu(memory kind) {
    gpusort::external_options opt;
    if (visible_gpus() > 0) opt.devices = {0};
    opt.register_host_memory = kind == memory::registered;
    return opt;
  }
  static bool gpu() { return visible_gpus() > 0; }
  static std::vector<memory> memories() {
    return gpu() ? std::vector<memory>{memory::pageable, memory::pinned, memory::registered}
                 : std::vector<memory>{memory::pageable};
  }
};

GPUSORT_TYPED_SUITE(HostArrayKeys, HostArrays, gpusort::testing::key_types);

// One GPU: in, sort, out. Sizes around the copier's 8 MiB chunks and its slots' reuse (8
// threads x 2 slots = 128 MiB for 4-byte keys at 2^25 + 1).
TYPED_TEST(HostArrayKeys, OneGpuMatchesStableSortInBothOrders) {
  using K = TypeParam;
  const std::size_t chunk_keys = ext::default_link_chunk_bytes / sizeof(K);
  // The chunk boundaries matter on a GPU; the CPU backend gets the small sizes alone.
  std::vector<std::size_t> sizes = {0, 1, 2, 3, 1009, 65537};
  if (this->gpu()) sizes.insert(sizes.end(), {chunk_keys - 1, chunk_keys + 1, 3 * chunk_keys + 5, 16 * chunk_keys + 1});
  for (const std::size_t n : sizes)
    for (const bool descending : {false, true})
      for (const gpusort::nan_order nans : {gpusort::nan_order::last, gpusort::nan_order::first})
        for (const memory kind : this->memories()) {
          if (!std::is_floating_point_v<K> && nans == gpusort::nan_order::first) continue;
          if (kind != memory::pageable && n > 4 * chunk_keys) continue;
          SCOPED_TRACE(::testing::Message() << "n=" << n << " descending=" << descending << " nans "
                                            << gpusort::to_string(nans) << " memory " << int(kind));
          const std::vector<K> input = hostile_keys<K>(n, n + descending);
          host_buffer<K> keys(input, kind);
          gpusort::external_options opt = this->one_gpu(kind);
          opt.sort.direction = descending ? gpusort::order::descending : gpusort::order::ascending;
          opt.sort.nans = nans;
          const gpusort::file_sort_stats stats = gpusort::sort(keys.span(), opt);
          EXPECT_TRUE(gpusort::testing::same_bits(keys.vector(),
                                                  gpusort::testing::reference_sort(input, descending, nans)));
          if (this->gpu() && n >= 2) {
            EXPECT_NE(stats["plan"].find("on GPU 0 at once"), std::string::npos) << stats.text();
            const std::string how = stats["host memory"];
            if (kind == memory::pinned)
              EXPECT_TRUE(how.starts_with("pinned")) << how;
            else if (kind == memory::registered && n * sizeof(K) >= ext::staged_min_bytes)
              EXPECT_NE(how.find("pinned in pieces"), std::string::npos) << how;
            else
              EXPECT_TRUE(how.starts_with("pageable")) << how;
          }
        }
}

// Pairs with 4-, 8- and 16-byte values, stable: the values are the input positions, so the
// result is exactly std::stable_sort's.
TYPED_TEST(HostArrayKeys, PairsMatchStableSortWithEveryValueSize) {
  using K = TypeParam;
  const auto check = [&]<class V>(V, std::size_t n, bool descending, memory kind) {
    SCOPED_TRACE(::testing::Message() << "n=" << n << " value bytes " << sizeof(V) << " descending="
                                      << descending << " memory " << int(kind));
    const std::vector<K> input = hostile_keys<K>(n, 3 * n + descending);
    std::vector<V> positions(n);
    for (std::size_t i = 0; i < n; ++i) positions[i] = position_value<V>(i);
    host_buffer<K> keys(input, kind);
    host_buffer<V> values(positions, kind);
    gpusort::external_options opt = this->one_gpu(kind);
    opt.sort.direction = descending ? gpusort::order::descending : gpusort::order::ascending;
    opt.sort.stable = true;
    gpusort::sort(keys.span(), values.span(), opt);
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), std::size_t{0});
    const gpusort::testing::sort_order<K> before{descending, gpusort::nan_order::last};
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return before(input[a], input[b]); });
    std::vector<K> want_keys(n);
    std::vector<V> want_values(n);
    for (std::size_t i = 0; i < n; ++i) {
      want_keys[i] = input[order[i]];
      want_values[i] = positions[order[i]];
    }
    EXPECT_TRUE(gpusort::testing::same_bits(keys.vector(), want_keys));
    const std::vector<V> got = values.vector();
    EXPECT_EQ(std::memcmp(got.data(), want_values.data(), n * sizeof(V)), 0);
  };
  const std::size_t chunk_keys = ext::default_link_chunk_bytes / sizeof(K);
  for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{7919}, this->gpu() ? chunk_keys + 3 : 65537})
    for (const bool descending : {false, true})
      for (const memory kind : this->memories()) {
        check(std::uint32_t{}, n, descending, kind);
        check(std::uint64_t{}, n, descending, kind);
        check(gpusort::detail::payload<16>{}, n, descending, kind);
      }
}

// Narrow keys on one GPU: the library's order of their bits (the device sorts them as they are).
TEST_F(HostArrays, NarrowKeysSortOnOneGpuAsTheLibraryOrdersThem) {
  const std::size_t n = gpu() ? 3 * (ext::default_link_chunk_bytes / 2) + 11 : 65537;
  std::vector<std::uint16_t> input(n);
  std::mt19937 rng(5);
  for (auto& k : input) k = static_cast<std::uint16_t>(rng());
  for (const bool descending : {false, true}) {
    std::vector<std::uint16_t> keys = input;
    gpusort::external_options opt = one_gpu(memory::pageable);
    opt.sort.direction = descending ? gpusort::order::descending : gpusort::order::ascending;
    gpusort::sort(std::span<std::uint16_t>(keys), opt);
    std::vector<std::uint16_t> want = input;
    std::sort(want.begin(), want.end());
    if (descending) std::reverse(want.begin(), want.end());
    EXPECT_EQ(keys, want);
  }
}

// A device budget below the keys and their workspace: the runs pipeline for keys, the CPU for
// pairs; both right.
TEST_F(HostArrays, BeyondTheBudgetKeysGoByRunsAndPairsByTheCpu) {
  if (!gpu()) GTEST_SKIP() << "needs a GPU";
  const std::size_t n = 100003;
  const std::vector<std::uint32_t> input = hostile_keys<std::uint32_t>(n, 11);
  gpusort::external_options opt = one_gpu(memory::pageable);
  opt.device_budget_bytes = 4096 * 2 * (4 + 16);
  std::vector<std::uint32_t> keys = input;
  const gpusort::file_sort_stats by_runs = gpusort::sort(std::span<std::uint32_t>(keys), opt);
  EXPECT_EQ(keys, gpusort::testing::reference_sort(input));
  EXPECT_NE(by_runs["plan"].find("runs of"), std::string::npos) << by_runs.text();
  keys = input;
  std::vector<std::uint32_t> values(n);
  std::iota(values.begin(), values.end(), 0u);
  const gpusort::file_sort_stats on_cpu =
      gpusort::sort(std::span<std::uint32_t>(keys), std::span<std::uint32_t>(values), opt);
  EXPECT_EQ(keys, gpusort::testing::reference_sort(input));
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(input[values[i]], keys[i]) << i;
  EXPECT_NE(on_cpu["plan"].find("on the CPU"), std::string::npos) << on_cpu.text();
}

TEST_F(HostArrays, RefusesBadRequestsBeforeTouchingTheKeys) {
  std::vector<std::uint32_t> keys = hostile_keys<std::uint32_t>(1000, 3);
  const std::vector<std::uint32_t> before = keys;
  std::vector<std::uint32_t> values(999);
  EXPECT_THROW(gpusort::sort(std::span<std::uint32_t>(keys), std::span<std::uint32_t>(values),
                             gpusort::external_options{}),
               gpusort::invalid_request);
  if (gpu()) {
    gpusort::external_options opt;
    opt.devices = {visible_gpus()};  // no such GPU
    EXPECT_THROW(gpusort::sort(std::span<std::uint32_t>(keys), opt), gpusort::invalid_request);
    opt.devices = {0, 0};
    EXPECT_THROW(gpusort::sort(std::span<std::uint32_t>(keys), opt), gpusort::invalid_request);
  }
  EXPECT_EQ(keys, before);
}

// Takes all but `leave` bytes of GPU `device`'s free memory for the scope: a GPU that fails.
class device_memory_hog {
 public:
  device_memory_hog(int device, std::size_t leave) : device_(device) {
    int previous = 0;
    cudaGetDevice(&previous);
    cudaSetDevice(device);
    std::size_t free_bytes = 0, total = 0;
    cudaMemGetInfo(&free_bytes, &total);
    for (std::size_t take = free_bytes > leave ? free_bytes - leave : 0; take > (std::size_t{64} << 20);
         take -= std::size_t{64} << 20)
      if (cudaMalloc(&p_, take) == cudaSuccess) break;
    cudaGetLastError();
    cudaSetDevice(previous);
  }
  ~device_memory_hog() {
    if (p_) cudaFree(p_);
  }
  device_memory_hog(const device_memory_hog&) = delete;
  device_memory_hog& operator=(const device_memory_hog&) = delete;

 private:
  int device_;
  void* p_ = nullptr;
};

// A GPU without room for what its budget promised: the library's error, and the keys as they
// were (nothing is copied back before the sort succeeds). It fills GPU 0, so ctest runs it
// alone (RUN_SERIAL): beside it, other tests' plans would find no room either.
using HostArraysFillingTheGpu = HostArrays;
TEST_F(HostArraysFillingTheGpu, AGpuWithoutRoomFailsAndLeavesTheKeys) {
  if (!gpu()) GTEST_SKIP() << "needs a GPU";
  std::vector<std::uint32_t> keys = hostile_keys<std::uint32_t>(std::size_t{1} << 24, 12);
  const std::vector<std::uint32_t> before = keys;
  gpusort::external_options opt = one_gpu(memory::pageable);
  opt.device_budget_bytes = std::uint64_t{1} << 30;  // believed, though the GPU has 32 MiB left
  {
    const device_memory_hog hog(0, std::size_t{32} << 20);
    EXPECT_THROW(gpusort::sort(std::span<std::uint32_t>(keys), opt), gpusort::error);
  }
  EXPECT_EQ(keys, before);
  gpusort::sort(std::span<std::uint32_t>(keys), opt);  // the GPU is usable again
  EXPECT_EQ(keys, gpusort::testing::reference_sort(before));
}

TEST_F(HostArrays, CancelStopsBeforeTheWorkAndLeavesTheKeys) {
  std::vector<std::uint32_t> keys = hostile_keys<std::uint32_t>(1 << 20, 4);
  const std::vector<std::uint32_t> before = keys;
  const std::atomic<bool> stop{true};
  gpusort::external_options opt = one_gpu(memory::pageable);
  opt.cancel = &stop;
  EXPECT_THROW(gpusort::sort(std::span<std::uint32_t>(keys), opt), gpusort::cancelled);
  EXPECT_EQ(keys, before);
}

TEST_F(HostArrays, ProgressNamesEachPhaseOfTheOneGpuPlan) {
  if (!gpu()) GTEST_SKIP() << "needs a GPU";
  std::vector<float> keys = hostile_keys<float>(1 << 20, 9);
  std::vector<std::string> phases;
  gpusort::external_options opt = one_gpu(memory::pageable);
  opt.progress = [&](std::string_view phase, std::uint64_t, std::uint64_t) { phases.emplace_back(phase); };
  gpusort::sort(std::span<float>(keys), opt);
  EXPECT_EQ(phases, (std::vector<std::string>{"copying to the GPU", "sorting", "copying back"}));
}

// ---- several GPUs -----------------------------------------------------------------------

class HostArraysOnSeveralGpus : public HostArrays {
 protected:
  void SetUp() override {
    if (visible_gpus() < 2) GTEST_SKIP() << "needs 2 GPUs";
  }
};

// The array is spread over the GPUs (gpusort::dist sorts the slices) where that pays: pinned
// arrays of 1 GiB and more, and pageable ones that do not fit one GPU (here: a budget of
// 1.75 GiB a GPU, below one GPU's need for 1 GiB of keys, above each one's for its slice). The
// result is checked in full (order, and every key by an order-independent multiset hash), for
// keys and stable pairs, in both orders, pageable and pinned.
TEST_F(HostArraysOnSeveralGpus, LargeArraysSpreadOverEveryGpu) {
  const std::size_t n = (std::size_t{1} << 28) + 3;  // 1 GiB of u32 keys, and 3
  const std::uint64_t below_one_gpu = std::uint64_t{7} << 28;
  std::vector<std::uint32_t> input = gpusort::tools::generate<std::uint32_t>(
      gpusort::tools::distribution::uniform, n, 21);
  for (std::size_t i = 0; i < n; i += 5) input[i] = input[i % 1013];
  const auto hash_sum = [](std::span<const std::uint32_t> v) {
    std::uint64_t sum = 0;
    for (const std::uint32_t k : v) sum += ext::mix64(k);
    return sum;
  };
  const std::uint64_t want = hash_sum(input);
  const std::string spread = "spread over " + std::to_string(visible_gpus()) + " GPUs";
  for (const bool descending : {false, true})
    for (const memory kind : {memory::pageable, memory::pinned}) {
      SCOPED_TRACE(::testing::Message() << "descending=" << descending << " memory " << int(kind));
      host_buffer<std::uint32_t> keys(input, kind);
      gpusort::external_options opt;
      if (kind == memory::pageable) opt.device_budget_bytes = below_one_gpu;
      opt.sort.direction = descending ? gpusort::order::descending : gpusort::order::ascending;
      const gpusort::file_sort_stats stats = gpusort::sort(keys.span(), opt);
      EXPECT_NE(stats["plan"].find(spread), std::string::npos) << stats.text();
      EXPECT_EQ(hash_sum(keys.span()), want);
      const gpusort::testing::sort_order<std::uint32_t> before{descending, gpusort::nan_order::last};
      EXPECT_TRUE(std::is_sorted(keys.span().begin(), keys.span().end(), before));
    }
  // A pageable array that fits one GPU stays on one: its staging, not the links, limits it.
  {
    std::vector<std::uint32_t> keys = input;
    const gpusort::file_sort_stats stats = gpusort::sort(std::span<std::uint32_t>(keys), gpusort::external_options{});
    EXPECT_NE(stats["plan"].find("on GPU 0 at once"), std::string::npos) << stats.text();
    EXPECT_TRUE(std::is_sorted(keys.begin(), keys.end()));
  }
  // A GPU that cannot hold its slice: every rank fails (none is left waiting in NCCL), the
  // keys stay as they were, and the GPUs sort again afterwards.
  {
    std::vector<std::uint32_t> keys = input;
    gpusort::external_options opt;
    opt.device_budget_bytes = below_one_gpu;  // believed, though GPU 1 has 32 MiB left
    {
      const device_memory_hog hog(1, std::size_t{32} << 20);
      EXPECT_THROW(gpusort::sort(std::span<std::uint32_t>(keys), opt), gpusort::error);
    }
    EXPECT_EQ(hash_sum(keys), want);
    EXPECT_TRUE(keys == input);
    gpusort::sort(std::span<std::uint32_t>(keys), opt);
    EXPECT_TRUE(std::is_sorted(keys.begin(), keys.end()));
  }
  // Stable pairs, pinned: each value is its key's input position; equal keys keep their input
  // order.
  std::vector<std::uint32_t> positions(n);
  std::iota(positions.begin(), positions.end(), 0u);
  host_buffer<std::uint32_t> keys(input, memory::pinned), values(positions, memory::pinned);
  gpusort::external_options opt;
  opt.sort.stable = true;
  const gpusort::file_sort_stats stats = gpusort::sort(keys.span(), values.span(), opt);
  EXPECT_NE(stats["plan"].find(spread), std::string::npos) << stats.text();
  const std::span<const std::uint32_t> k = keys.span(), v = values.span();
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_EQ(input[v[i]], k[i]) << i;
    if (i > 0) ASSERT_TRUE(k[i - 1] < k[i] || (k[i - 1] == k[i] && v[i - 1] < v[i])) << i;
  }
}

// The spread reports its phases on the calling thread, and a cancel at either point between
// them stops every GPU (none left waiting in NCCL) with the keys as they were; the GPUs sort
// again afterwards.
TEST_F(HostArraysOnSeveralGpus, TheSpreadReportsItsPhasesAndStopsBetweenThem) {
  const std::size_t n = (std::size_t{1} << 28) + 3;  // 1 GiB: pinned, it is spread
  const std::vector<std::uint32_t> input = gpusort::tools::generate<std::uint32_t>(
      gpusort::tools::distribution::uniform, n, 23);
  host_buffer<std::uint32_t> keys(input, memory::pinned);
  const auto caller = std::this_thread::get_id();
  for (const std::string stop_after : {"copying to the GPUs", "sorting"}) {
    SCOPED_TRACE("cancelled after " + stop_after);
    std::atomic<bool> stop{false};
    std::vector<std::string> phases;
    gpusort::external_options opt;
    opt.cancel = &stop;
    opt.progress = [&](std::string_view phase, std::uint64_t, std::uint64_t) {
      EXPECT_EQ(std::this_thread::get_id(), caller);
      phases.emplace_back(phase);
      if (phase == stop_after) stop = true;
    };
    EXPECT_THROW(gpusort::sort(keys.span(), opt), gpusort::cancelled);
    ASSERT_FALSE(phases.empty());
    EXPECT_EQ(phases.back(), stop_after);
    EXPECT_TRUE(std::equal(keys.span().begin(), keys.span().end(), input.begin()));
  }
  std::vector<std::string> phases;
  gpusort::external_options opt;
  opt.progress = [&](std::string_view phase, std::uint64_t, std::uint64_t) {
    phases.emplace_back(phase);
  };
  const gpusort::file_sort_stats stats = gpusort::sort(keys.span(), opt);
  EXPECT_NE(stats["plan"].find("spread over"), std::string::npos) << stats.text();
  EXPECT_EQ(phases, (std::vector<std::string>{"copying to the GPUs", "sorting", "copying back"}));
  EXPECT_TRUE(std::is_sorted(keys.span().begin(), keys.span().end()));
}

}  // namespace
