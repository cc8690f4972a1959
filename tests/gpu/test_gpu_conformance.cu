// One conformance suite for every exact sort on the device, typed over the key types and
// looping over the algorithms (reference.hpp's sort_methods) the way it loops over sizes:
// awkward sizes and every distribution in both orders, larger arrays, pairs with 4-, 8- and
// 16-byte values (stable algorithms in exactly std::stable_sort's order), graph capture, a
// workspace too small, and more than 2^31 keys. Workspaces are poisoned and guard zones past
// n must stay untouched. Each algorithm's own file keeps only what is its own.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <vector>

#include "device_buffer.hpp"
#include "float_keys.hpp"
#include "gpusort/detail/index_math/radix.hpp"
#include "gpusort/sort.hpp"
#include "reference.hpp"
#include "shuffled_keys.cuh"

using namespace gpusort::testing;
namespace tools = gpusort::tools;
using gpusort::algorithm;

namespace {

template <class K>
std::vector<sort_method> methods_for() {
  return sort_methods(false, std::is_floating_point_v<K>);
}

// CUB's sorts and thrust are built for keys alone and 4- and 8-byte values.
bool takes_values_of(const sort_method& m, std::size_t value_bytes) {
  return value_bytes <= static_cast<std::size_t>(gpusort::traits_of(m.opt.algo).max_value_bytes);
}

gpusort::options directed(gpusort::options opt, bool descending, cudaStream_t stream = nullptr) {
  opt.direction = descending ? gpusort::order::descending : gpusort::order::ascending;
  opt.stream = stream;
  return opt;
}

// One input and what the reference says of it, each answer computed once however many
// algorithms are checked against it (the CPU's stable sorts were most of the suite's time).
template <class K>
class reference_for {
 public:
  explicit reference_for(std::vector<K> input) : input_(std::move(input)) {}
  const std::vector<K>& input() const { return input_; }
  const std::vector<K>& sorted(bool descending) {
    std::optional<std::vector<K>>& slot = sorted_[descending];
    const std::optional<std::vector<K>>& other = sorted_[!descending];
    // Integer keys: one order is the other reversed (float keys are not: NaNs stay last).
    if (!slot && std::is_integral_v<K> && other) slot.emplace(other->rbegin(), other->rend());
    if (!slot) slot = reference_sort(input_, descending);
    return *slot;
  }
  // Where each input key goes in a stable sort.
  const std::vector<std::size_t>& order(bool descending) {
    std::optional<std::vector<std::size_t>>& slot = order_[descending];
    if (!slot) slot = stable_order(input_, descending);
    return *slot;
  }

 private:
  std::vector<K> input_;
  std::optional<std::vector<K>> sorted_[2];
  std::optional<std::vector<std::size_t>> order_[2];
};

template <class K>
void check_keys(reference_for<K>& ref, const sort_method& m, bool descending) {
  guarded_buffer<K> keys(ref.input());
  ASSERT_TRUE(keys.data() || ref.input().empty());
  ASSERT_EQ((sort_on_device<K, std::uint32_t>(keys, nullptr, directed(m.opt, descending))),
            cudaSuccess);
  ASSERT_TRUE(same_bits(keys.to_host(), ref.sorted(descending)));
  ASSERT_TRUE(keys.guard_intact()) << "wrote past n";
}

struct value16 {
  std::uint64_t index;
  std::uint32_t check, pad;
};

// The input position a value was made from (its first bytes).
template <class V>
std::uint64_t origin_of(const V& value) {
  std::uint64_t origin = 0;
  std::memcpy(&origin, &value, std::min(sizeof(V), sizeof(origin)));
  return origin;
}

// Keys and values sorted on the device in guarded buffers (nothing may be written past n):
// the sorted keys and values, on the host.
template <class K, class V>
void sort_pairs_guarded(const std::vector<K>& input, const std::vector<V>& values,
                        const gpusort::options& opt, std::vector<K>& keys, std::vector<V>& out) {
  guarded_buffer<K> dk(input);
  guarded_buffer<V> dv(values);
  ASSERT_EQ((sort_on_device<K, V>(dk, &dv, opt)), cudaSuccess);
  keys = dk.to_host();
  out = dv.to_host();
  ASSERT_TRUE(dk.guard_intact());
  ASSERT_TRUE(dv.guard_intact());
}

// value = a function of the input position: every value must stay with its key, and a stable
// sort must give exactly std::stable_sort's permutation.
template <class K, class V, class MakeValue>
void check_pairs(reference_for<K>& ref, const sort_method& m, bool descending, MakeValue make) {
  SCOPED_TRACE(::testing::Message() << "value bytes " << sizeof(V));
  const std::vector<K>& input = ref.input();
  const std::size_t n = input.size();
  std::vector<V> values(n);
  for (std::size_t i = 0; i < n; ++i) values[i] = make(i);
  std::vector<K> keys;
  std::vector<V> out;
  ASSERT_NO_FATAL_FAILURE(
      sort_pairs_guarded(input, values, directed(m.opt, descending), keys, out));
  ASSERT_TRUE(same_bits(keys, ref.sorted(descending)));
  ASSERT_TRUE(values_follow_keys(input, keys, out, make));
  if (m.stable) {
    if constexpr (std::is_integral_v<K>) {  // sorted already: equal keys' values in input order
      for (std::size_t i = 1; i < n; ++i)
        if (keys[i] == keys[i - 1])
          ASSERT_LT(origin_of(out[i - 1]), origin_of(out[i])) << "not stable at " << i;
    } else {
      const std::vector<std::size_t>& want = ref.order(descending);
      for (std::size_t i = 0; i < n; ++i)
        ASSERT_EQ(origin_of(out[i]), want[i]) << "not stable at " << i;
    }
  }
}

}  // namespace

GPUSORT_TYPED_SUITE(GpuConformance, GpuTest, key_types);

TYPED_TEST(GpuConformance, KeysOnEveryDistributionAndSize) {
  using K = TypeParam;
  for (std::size_t n : awkward_sizes(1 << 17)) {
    for (tools::distribution d : tools::all_distributions) {
      const std::uint64_t seed = 1000 + n * 7 + static_cast<int>(d);
      std::vector<K> keys = tools::generate<K>(d, n, seed);
      scatter_special_values(keys, seed);
      reference_for<K> ref(std::move(keys));
      for (bool descending : {false, true}) {
        for (const sort_method& m : methods_for<K>()) {
          SCOPED_TRACE(::testing::Message()
                       << gpusort::method_name(m.opt) << " n=" << n << " dist="
                       << tools::to_string(d) << " desc=" << descending << " seed=" << seed);
          check_keys(ref, m, descending);
          if (::testing::Test::HasFatalFailure()) return;
        }
      }
    }
  }
}

// Integer keys with few set bits (the AND of several uniform arrays): long runs of equal
// high digits, the worst case of splitter and pivot choices.
TYPED_TEST(GpuConformance, ReducedEntropyKeys) {
  using K = TypeParam;
  if constexpr (std::is_integral_v<K>) {
    for (int ands : {1, 3, 6}) {
      reference_for<K> ref(
          tools::generate<K>(tools::distribution::uniform, 300007, ands, {.entropy_and = ands}));
      for (const sort_method& m : methods_for<K>()) {
        SCOPED_TRACE(::testing::Message() << gpusort::method_name(m.opt) << " and of "
                                          << ands + 1 << " arrays");
        check_keys(ref, m, ands == 3);
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
}

TYPED_TEST(GpuConformance, LargeSizes) {
  using K = TypeParam;
  for (std::size_t n : {(std::size_t{1} << 20) + 1, std::size_t{10000019}}) {
    for (tools::distribution d : {tools::distribution::uniform, tools::distribution::zipf}) {
      reference_for<K> ref(tools::generate<K>(d, n, n));
      for (const sort_method& m : methods_for<K>()) {
        SCOPED_TRACE(::testing::Message() << gpusort::method_name(m.opt) << " n=" << n
                                          << " dist=" << tools::to_string(d));
        check_keys(ref, m, d == tools::distribution::zipf);
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
}

TYPED_TEST(GpuConformance, PairsKeepTheirValues) {
  using K = TypeParam;
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{4097},
                        std::size_t{65537}, std::size_t{1000003}}) {
    for (auto dist : {tools::distribution::uniform, tools::distribution::few_unique}) {
      reference_for<K> ref(tools::generate<K>(dist, n, 77 + n));
      for (bool desc : {false, true}) {
        for (const sort_method& m : methods_for<K>()) {
          SCOPED_TRACE(::testing::Message() << gpusort::method_name(m.opt) << " n=" << n
                                            << " dist=" << tools::to_string(dist)
                                            << " desc=" << desc);
          check_pairs<K, std::uint32_t>(ref, m, desc,
                                        [](std::size_t i) { return std::uint32_t(i); });
          if (takes_values_of(m, 8))
            check_pairs<K, std::uint64_t>(ref, m, desc,
                                          [](std::size_t i) { return std::uint64_t(i); });
          if (takes_values_of(m, 16))
            check_pairs<K, value16>(ref, m, desc, [](std::size_t i) {
              return value16{i, static_cast<std::uint32_t>(i * 2654435761u), 7};
            });
          if (::testing::Test::HasFatalFailure()) return;
        }
      }
    }
  }
}

// automatic's radix sort (CUB's onesweep under gpusort's tuning, radix_policy.cuh) where
// automatic picks it: past every merge limit (2^20 keys at most), many tiles of the tuned
// shapes and a partial last one. The radix sort is stable: integer keys come out in exactly
// std::stable_sort's order with their values; float keys (zeros and NaNs regrouped after)
// in the reference's order with every value on its key.
TYPED_TEST(GpuConformance, AutomaticRadixSortPastTheMergeLimits) {
  using K = TypeParam;
  const sort_method automatic{{.algo = algorithm::automatic}, std::is_integral_v<K>};
  for (std::size_t n : {(std::size_t{1} << 20) + 1, std::size_t{3000017}}) {
    ASSERT_EQ(gpusort::automatic_algorithm<K>(n), algorithm::cub_radix) << n;
    for (auto dist : {tools::distribution::uniform, tools::distribution::few_unique}) {
      for (bool desc : {false, true}) {
        SCOPED_TRACE(::testing::Message() << "n=" << n << " dist=" << tools::to_string(dist)
                                          << " desc=" << desc);
        std::vector<K> input = tools::generate<K>(dist, n, 91 + n);
        scatter_special_values(input, n);
        reference_for<K> ref(std::move(input));
        check_keys(ref, automatic, desc);
        check_pairs<K, std::uint32_t>(ref, automatic, desc,
                                      [](std::size_t i) { return std::uint32_t(i); });
        check_pairs<K, std::uint64_t>(ref, automatic, desc,
                                      [](std::size_t i) { return std::uint64_t(i); });
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
}

// automatic with options::msd_split on 8-byte integer keys (the MSD split,
// device/msd_split.cuh), from the first size it runs at (2^24 keys, a 22-bit window) and one
// of a wider window, both orders, every case of the frame and the window: keys all equal
// (nothing to sort), keys sharing their top bits whose differing bits fit the window (framed;
// CUB's split sorts them alone), keys sharing their top bits and differing below the window
// (framed, then buckets), wide keys (no frame; signed ones across zero), skewed and few
// distinct keys (large buckets of equal keys: copied, not sorted), clusters (buckets of
// about 1,000 different keys: the segmented sort's tiles) and half the keys in one bucket
// (its long segments). Keys alone and with 4- and 8-byte values made from their keys in both
// orders (every value on its key), and with .stable (no split: std::stable_sort's order of
// positions) in one. Then inside graph capture (it never waits): captured without running,
// sorted when launched.
constexpr int split_cases = 11;
template <class K>
std::vector<K> split_case(int which, std::size_t n) {
  std::mt19937_64 rng(n + which);
  std::vector<K> keys(n);
  const auto fill = [&](std::uint64_t mask, std::uint64_t prefix) {
    for (K& k : keys) k = static_cast<K>((rng() & mask) | prefix);
  };
  switch (which) {
    case 0: fill(0, 0x5eed); break;
    case 1: fill((std::uint64_t{1} << 19) - 1, std::uint64_t{3} << 61); break;
    case 2: fill((std::uint64_t{1} << 40) - 1, std::uint64_t{0x9b} << 52); break;
    case 3: fill(~std::uint64_t{0}, 0); break;
    case 4: return tools::generate<K>(tools::distribution::zipf, n, n);
    case 5: return tools::generate<K>(tools::distribution::few_unique, n, n);
    case 6: {  // clusters of about 1,000 different keys, each in one bucket
      std::vector<std::uint64_t> tops(n / 1024);
      for (std::uint64_t& t : tops) t = rng() << 40;
      for (K& k : keys) k = static_cast<K>(tops[rng() % tops.size()] | (rng() >> 24));
      break;
    }
    case 7:  // wide keys, every other one in a single bucket of different keys
      for (std::size_t i = 0; i < n; ++i)
        keys[i] = static_cast<K>(i % 2 ? rng() : (std::uint64_t{0x5a5a5a} << 40) | (rng() >> 24));
      break;
    case 8:  // keys below 2^40 and one in 2^20 the largest: all but those in bucket 0
      for (std::size_t i = 0; i < n; ++i)
        keys[i] = i % (std::size_t{1} << 20) == 5 ? std::numeric_limits<K>::max()
                                                    : static_cast<K>(rng() >> 24);
      break;
    case 9:  // a tenth of the keys in one bucket of different keys (the rescue gathers it)
      for (std::size_t i = 0; i < n; ++i)
        keys[i] = static_cast<K>(i % 10 ? rng() : (std::uint64_t{0x5a5a5a} << 40) | (rng() >> 24));
      break;
    default:  // many large buckets of different keys (each bit 1 with probability 1/8)
      return tools::generate<K>(tools::distribution::reduced_entropy, n, n);
  }
  return keys;
}

// Pairs through the split, each value made from its key: the split is not stable (equal
// keys' values may change places), so a value names its key rather than its position, and
// every output value is checked against its key in one pass (positions would take a random
// read of the input a key: 2-3 s at 2^24).
template <class K, class V>
void check_split_pairs(reference_for<K>& ref, const sort_method& m, bool descending) {
  SCOPED_TRACE(::testing::Message() << "values of " << sizeof(V) << " bytes made from keys");
  const auto value_of = [](K key) {
    const std::uint64_t h = static_cast<std::uint64_t>(key) * 0x9E3779B97F4A7C15ull;
    return static_cast<V>(h ^ (h >> 29));
  };
  const std::vector<K>& input = ref.input();
  std::vector<V> values(input.size());
  for (std::size_t i = 0; i < input.size(); ++i) values[i] = value_of(input[i]);
  std::vector<K> keys;
  std::vector<V> out;
  ASSERT_NO_FATAL_FAILURE(
      sort_pairs_guarded(input, values, directed(m.opt, descending), keys, out));
  ASSERT_TRUE(same_bits(keys, ref.sorted(descending)));
  for (std::size_t i = 0; i < keys.size(); ++i)
    ASSERT_EQ(out[i], value_of(keys[i])) << "the value at " << i << " is not its key's";
}

template <class K>
void check_split_sorts() {
  const sort_method split{{.msd_split = true}, false};
  const sort_method stable{{.stable = true, .msd_split = true}, true};
  const auto index32 = [](std::size_t i) { return std::uint32_t(i); };
  for (const std::size_t n : {(std::size_t{1} << 24) + 17, (std::size_t{1} << 25) + 3}) {
    ASSERT_TRUE(gpusort::detail::index_math::msd_split_applies(n));
    for (int which = 0; which < split_cases; ++which) {
      if (n > (std::size_t{1} << 25) && which != 2) continue;
      reference_for<K> ref(split_case<K>(which, n));
      for (const bool desc : {false, true}) {
        SCOPED_TRACE(::testing::Message() << "n=" << n << " case " << which << " desc=" << desc);
        check_keys(ref, split, desc);
        check_split_pairs<K, std::uint32_t>(ref, split, desc);
        if (n < (std::size_t{1} << 25)) check_split_pairs<K, std::uint64_t>(ref, split, desc);
        if (n < (std::size_t{1} << 25) && desc == (which % 2 == 1))  // one order a case
          check_pairs<K, std::uint32_t>(ref, stable, desc, index32);
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
  {  // Given only the radix sort's workspace, the radix sort, which keeps few distinct keys'
     // values in input order, where the in-place bitonic sort (the next fallback) would not.
    const std::size_t n = (std::size_t{1} << 24) + 9;
    const std::vector<K> input = split_case<K>(5, n);
    std::vector<std::uint32_t> positions(n);
    for (std::size_t i = 0; i < n; ++i) positions[i] = static_cast<std::uint32_t>(i);
    guarded_buffer<K> d(input);
    guarded_buffer<std::uint32_t> v(positions);
    std::size_t radix_bytes = 0, split_bytes = 0;
    CUDA_OK(gpusort::sort_pairs(nullptr, radix_bytes, d.data(), v.data(), n, gpusort::options{}));
    CUDA_OK(gpusort::sort_pairs(nullptr, split_bytes, d.data(), v.data(), n, split.opt));
    ASSERT_GT(split_bytes, radix_bytes);
    poisoned_workspace temp(radix_bytes);
    CUDA_OK(gpusort::sort_pairs(temp.ptr, radix_bytes, d.data(), v.data(), n, split.opt));
    CUDA_OK(cudaDeviceSynchronize());
    const std::vector<K> keys = d.to_host();
    const std::vector<std::uint32_t> out = v.to_host();
    ASSERT_TRUE(same_bits(keys, reference_sort(input)));
    for (std::size_t i = 1; i < n; ++i)
      if (keys[i] == keys[i - 1]) ASSERT_LT(out[i - 1], out[i]) << "not the radix sort at " << i;
    EXPECT_TRUE(d.guard_intact() && v.guard_intact());
  }
  // Captured into a graph: no wait, so no rescue; a large bucket (case 9) goes to the
  // segmented sort.
  const std::size_t n = (std::size_t{1} << 24) + 5;
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreate(&stream));
  const gpusort::options opt = directed(split.opt, true, stream);
  for (const int which : {2, 9}) {
    SCOPED_TRACE(::testing::Message() << "captured, case " << which);
    const std::vector<K> input = split_case<K>(which, n);
    guarded_buffer<K> d(input);
    std::size_t bytes = 0;
    CUDA_OK(gpusort::sort_keys(nullptr, bytes, d.data(), n, opt));
    poisoned_workspace temp(bytes);
    captured_graph graph;
    cudaError_t sorted = cudaSuccess;
    ASSERT_NO_FATAL_FAILURE(graph.capture(
        stream, [&] { sorted = gpusort::sort_keys(temp.ptr, bytes, d.data(), n, opt); }));
    ASSERT_EQ(sorted, cudaSuccess);
    EXPECT_TRUE(same_bits(d.to_host(), input)) << "capture must not run anything";
    ASSERT_NO_FATAL_FAILURE(graph.launch(stream));
    EXPECT_TRUE(same_bits(d.to_host(), reference_sort(input, true)));
    EXPECT_TRUE(d.guard_intact());
  }
  cudaStreamDestroy(stream);
}

class GpuConformanceSplit : public GpuTest {};

TEST_F(GpuConformanceSplit, AutomaticSplitsWhenAsked) {
  check_split_sorts<std::uint64_t>();
  check_split_sorts<std::int64_t>();
}

// No sort waits on the host: each can be captured into a graph (thrust allocates, so not it).
TYPED_TEST(GpuConformance, WorksInsideGraphCapture) {
  using K = TypeParam;
  const auto input = tools::generate<K>(tools::distribution::gaussian, 500009, 4);
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreate(&stream));
  for (const sort_method& m : methods_for<K>()) {
    if (m.opt.algo == algorithm::thrust) continue;
    SCOPED_TRACE(gpusort::method_name(m.opt));
    const gpusort::options opt = directed(m.opt, false, stream);
    guarded_buffer<K> d(input);
    std::size_t bytes = 0;
    CUDA_OK(gpusort::sort_keys(nullptr, bytes, d.data(), input.size(), opt));
    poisoned_workspace temp(bytes);
    void* t = bytes ? temp.ptr : static_cast<void*>(d.data());
    captured_graph graph;
    cudaError_t sorted = cudaSuccess;
    ASSERT_NO_FATAL_FAILURE(graph.capture(
        stream, [&] { sorted = gpusort::sort_keys(t, bytes, d.data(), input.size(), opt); }));
    ASSERT_EQ(sorted, cudaSuccess);
    EXPECT_TRUE(same_bits(d.to_host(), input)) << "capture must not run anything";
    ASSERT_NO_FATAL_FAILURE(graph.launch(stream));
    EXPECT_TRUE(same_bits(d.to_host(), reference_sort(input)));
  }
  cudaStreamDestroy(stream);
}

// A workspace one byte short is refused before any key moves (automatic instead takes the
// in-place sort for what it is given, by design; in-place sorts ask for 1 byte, never used).
TYPED_TEST(GpuConformance, TooSmallAWorkspaceLeavesTheKeysAlone) {
  using K = TypeParam;
  const auto input = tools::generate<K>(tools::distribution::uniform, 100003, 9);
  for (const sort_method& m : methods_for<K>()) {
    if (m.opt.algo == algorithm::automatic || m.opt.algo == algorithm::thrust) continue;
    SCOPED_TRACE(gpusort::method_name(m.opt));
    guarded_buffer<K> d(input);
    std::size_t bytes = 0;
    CUDA_OK(gpusort::sort_keys(nullptr, bytes, d.data(), input.size(), m.opt));
    if (bytes <= 1) continue;  // in place: the byte it asks for is never used
    poisoned_workspace temp(bytes);
    std::size_t too_few = bytes - 1;
    EXPECT_EQ(gpusort::sort_keys(temp.ptr, too_few, d.data(), input.size(), m.opt),
              cudaErrorInvalidValue);
    CUDA_OK(cudaDeviceSynchronize());
    EXPECT_TRUE(same_bits(d.to_host(), input));
  }
}

// More than 2^31 keys (a shuffled counting sequence, checked on the device) with the sorts
// of the library, where their workspace fits beside them (the baselines are CUB's).
// automatic's MSD split (options::msd_split) past 2^31 u64 keys (CUB's 32-bit count and the
// 32-bit bucket starts near their end), keys sharing their top 32 bits (framed).
TEST(GpuConformanceHuge, TheSplitPast2To31Keys) {
  GPUSORT_REQUIRE_GPU();
  const std::uint64_t n = (std::uint64_t{1} << 31) + 11, offset = std::uint64_t{0x5a} << 40;
  const gpusort::options opt{.msd_split = true};
  std::uint64_t* keys = nullptr;
  if (cudaMalloc(&keys, n * 8) != cudaSuccess) {
    cudaGetLastError();
    GTEST_SKIP() << "no room for " << n << " u64 keys";
  }
  std::size_t bytes = 0, free_bytes = 0, total = 0;
  CUDA_OK(gpusort::sort_keys(nullptr, bytes, keys, n, opt));
  CUDA_OK(cudaMemGetInfo(&free_bytes, &total));
  if (free_bytes < bytes + (std::size_t{1} << 29)) {
    cudaFree(keys);
    GTEST_SKIP() << "the split needs " << bytes << " bytes, " << free_bytes << " free";
  }
  void* temp = nullptr;
  CUDA_OK(cudaMalloc(&temp, bytes));
  fill_shuffled<<<4096, 256>>>(keys, n, offset);
  CUDA_OK(cudaGetLastError());
  ASSERT_GT(count_misplaced(keys, n, offset), 0);
  CUDA_OK(gpusort::sort_keys(temp, bytes, keys, n, opt));
  CUDA_OK(cudaDeviceSynchronize());
  EXPECT_EQ(count_misplaced(keys, n, offset), 0);
  cudaFree(temp);
  cudaFree(keys);
}

TEST(GpuConformanceHuge, MoreThan2To31KeysOnTheDevice) {
  GPUSORT_REQUIRE_GPU();
  const std::uint64_t n = (std::uint64_t{1} << 31) + 11;
  std::uint32_t* keys = nullptr;
  CUDA_OK(cudaMalloc(&keys, n * 4));
  for (const sort_method& m : sort_methods(false, false)) {
    const algorithm a = m.opt.algo;
    if (a == algorithm::cub_radix || a == algorithm::cub_merge || a == algorithm::thrust)
      continue;
    SCOPED_TRACE(gpusort::method_name(m.opt));
    std::size_t bytes = 0;
    CUDA_OK(gpusort::sort_keys(nullptr, bytes, keys, n, m.opt));
    std::size_t free_bytes = 0, total = 0;
    CUDA_OK(cudaMemGetInfo(&free_bytes, &total));
    if (free_bytes < bytes + (std::size_t{1} << 29)) {
      cudaFree(keys);
      GTEST_SKIP() << gpusort::method_name(m.opt) << " needs " << bytes << " bytes, "
                   << free_bytes << " free";
    }
    void* temp = nullptr;
    if (bytes) CUDA_OK(cudaMalloc(&temp, bytes));
    fill_shuffled<<<4096, 256>>>(keys, n);
    CUDA_OK(cudaGetLastError());
    ASSERT_GT(count_misplaced(keys, n), 0);
    CUDA_OK(gpusort::sort_keys(bytes ? temp : keys, bytes, keys, n, m.opt));
    CUDA_OK(cudaDeviceSynchronize());
    EXPECT_EQ(count_misplaced(keys, n), 0);
    cudaFree(temp);
  }
  cudaFree(keys);
}
