// Narrow keys (bool, 8- and 16-bit integers, __half, __nv_bfloat16; detail/core/narrow_keys.hpp)
// through gpusort::sort, sort_segmented, sort_batched, top_k, select_k and top_k_rows of host
// vectors: on the CPU backend here, on the GPU on a GPU host.
// The codes: every bit pattern maps back to itself, and the codes' order is the keys' (checked
// against the keys' values as float / int64). The sorts: every algorithm, both orders, both NaN
// placements, awkward sizes, keys alone and with their input positions as values, against
// std::stable_sort on those values; inside the NaN block NaNs come out ordered by their bits.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "gpusort/approx.hpp"
#include "gpusort/detail/index_math/dist.hpp"
#include "gpusort/sort.hpp"
#include "reference.hpp"

using namespace gpusort::testing;

namespace {

template <class K>
using bits_t = typename gpusort::detail::narrow_format<K>::bits_type;

template <class K>
constexpr bool is_float16 = !std::is_void_v<typename gpusort::detail::narrow_format<K>::float_format>;

// A key's value in a type the reference sorts by: float for the 16-bit floats (exact, NaNs and
// signed zeros kept), double for the integers.
template <class K>
auto value_of(K key) {
  if constexpr (std::is_same_v<K, __half>)
    return __half2float(key);
  else if constexpr (std::is_same_v<K, __nv_bfloat16>)
    return __bfloat162float(key);
  else
    return static_cast<double>(key);
}

template <class K>
K key_of(bits_t<K> bits) {
  return gpusort::detail::bit_cast<K>(bits);
}

template <class K>
bits_t<K> bits_of(K key) {
  return gpusort::detail::bit_cast<bits_t<K>>(key);
}

// Every key of the type once: all bit patterns (bool: false and true).
template <class K>
std::vector<K> every_key() {
  std::vector<K> keys;
  const std::uint32_t count = std::is_same_v<K, bool> ? 2u : 1u << (8 * sizeof(K));
  for (std::uint32_t b = 0; b < count; ++b) keys.push_back(key_of<K>(static_cast<bits_t<K>>(b)));
  return keys;
}

template <class K>
bool is_nan(K key) {
  if constexpr (is_float16<K>)
    return std::isnan(value_of(key));
  else
    return false;
}

// The reference order of two keys: sort_order of their values (NaNs tie).
template <class K>
bool before(K a, K b, bool descending, gpusort::nan_order nans) {
  using V = decltype(value_of(a));
  return sort_order<V>{descending, nans}(value_of(a), value_of(b));
}

using narrow_types = ::testing::Types<bool, std::int8_t, std::uint8_t, std::int16_t,
                                      std::uint16_t, __half, __nv_bfloat16>;

// The 16-bit floats are the narrow keys with a float format, and only they.
static_assert(gpusort::detail::float16_key<__half> && gpusort::detail::float16_key<__nv_bfloat16>);
static_assert(!gpusort::detail::float16_key<std::int16_t> &&
              !gpusort::detail::float16_key<std::uint16_t> && !gpusort::detail::float16_key<bool>);
static_assert(!gpusort::detail::float16_key<float> && !gpusort::detail::float16_key<double>);

template <class>
class NarrowKeys : public ::testing::Test {};
TYPED_TEST_SUITE(NarrowKeys, narrow_types);
// std::vector<bool> packs its bits: bool keys sort from device memory only (BoolKeysOnTheGpu).
using narrow_vector_types = ::testing::Types<std::int8_t, std::uint8_t, std::int16_t,
                                             std::uint16_t, __half, __nv_bfloat16>;
template <class>
class NarrowSorts : public ::testing::Test {};
TYPED_TEST_SUITE(NarrowSorts, narrow_vector_types);

TYPED_TEST(NarrowKeys, CodesAreInvertibleAndOrderedLikeTheKeys) {
  using K = TypeParam;
  for (const bool low : {false, true}) {
    std::vector<std::pair<std::uint32_t, K>> coded;
    for (const K key : every_key<K>()) {
      const std::uint32_t code = gpusort::detail::narrow_code<K>(bits_of(key), low);
      ASSERT_LT(code, 1u << 16);
      ASSERT_EQ(gpusort::detail::narrow_bits<K>(code, low), bits_of(key)) << code;
      coded.push_back({code, key});
    }
    std::sort(coded.begin(), coded.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    const gpusort::nan_order nans = low ? gpusort::nan_order::first : gpusort::nan_order::last;
    for (std::size_t i = 0; i + 1 < coded.size(); ++i) {
      ASSERT_NE(coded[i].first, coded[i + 1].first);
      // Ascending codes never put a key after one the reference orders before it.
      ASSERT_FALSE(before(coded[i + 1].second, coded[i].second, false, nans)) << i;
    }
  }
}

// The codec the segmented sort loads and stores narrow keys through (key_codec of their
// width, told what the bits hold) makes narrow_code's codes, and maps them back.
TYPED_TEST(NarrowKeys, SegmentedCodecMakesTheCodes) {
  using K = TypeParam;
  using B = bits_t<K>;
  using gpusort::detail::key_bits;
  const key_bits stored = std::is_same_v<K, __half>          ? key_bits::float_keys
                          : std::is_same_v<K, __nv_bfloat16> ? key_bits::bfloat16_keys
                          : std::is_signed_v<K>              ? key_bits::signed_keys
                                                             : key_bits::unsigned_keys;
  for (const bool low : {false, true}) {
    const auto codec = gpusort::detail::key_codec<B>::of(stored, low);
    EXPECT_EQ(codec.maps(), !gpusort::detail::narrow_order<K>::identity);
    for (const K key : every_key<K>()) {
      const B b = bits_of(key);
      ASSERT_EQ(codec.in(b), gpusort::detail::narrow_code<K>(b, low)) << b;
      ASSERT_EQ(codec.out(codec.in(b)), b) << b;
    }
  }
}

// gpusort::dist's order code of a narrow key (index_math/dist.hpp; splitters, bucket bounds and
// the merge compare it): every key, both orders, both NaN placements, the codes distinct and in
// the reference order of the keys (unsigned: the order the local sort gives).
TYPED_TEST(NarrowKeys, DistOrderCodesFollowTheSortOrder) {
  using K = TypeParam;
  for (const bool descending : {false, true})
    for (const auto nans : {gpusort::nan_order::last, gpusort::nan_order::first}) {
      const gpusort::order direction = descending ? gpusort::order::descending : gpusort::order::ascending;
      const gpusort::detail::index_math::dist::order_code<K> code(direction, nans);
      std::vector<std::pair<std::uint64_t, K>> coded;
      for (const K key : every_key<K>()) coded.push_back({code(key), key});
      std::sort(coded.begin(), coded.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      for (std::size_t i = 0; i + 1 < coded.size(); ++i) {
        ASSERT_NE(coded[i].first, coded[i + 1].first) << "desc=" << descending;
        ASSERT_FALSE(before(coded[i + 1].second, coded[i].second, descending, nans))
            << i << " desc=" << descending << " nans " << gpusort::to_string(nans);
      }
    }
}

// Keys of every sort: each bit pattern of the type a few times (so ties), shuffled; for the
// floats, NaNs of both signs and payloads, infinities, signed zeros and subnormals among them.
template <class K>
std::vector<K> mixed_keys(std::size_t n, unsigned seed) {
  const std::vector<K> all = every_key<K>();
  std::mt19937 rng(seed);
  std::vector<K> keys(n);
  for (auto& k : keys) k = all[rng() % all.size()];
  if constexpr (is_float16<K>) {
    // Few distinct keys in the first half, so that equal keys (and NaNs) meet often.
    const std::vector<bits_t<K>> special =
        std::is_same_v<K, __half>
            ? std::vector<bits_t<K>>{0x0000, 0x8000, 0x7c00, 0xfc00, 0x7e00, 0xfe01, 0x7c01, 0x0001, 0x8001, 0x3c00}
            : std::vector<bits_t<K>>{0x0000, 0x8000, 0x7f80, 0xff80, 0x7fc0, 0xffc1, 0x7f81, 0x0001, 0x8001, 0x3f80};
    for (std::size_t i = 0; i < n / 2; ++i) keys[i] = key_of<K>(special[rng() % special.size()]);
    std::shuffle(keys.begin(), keys.end(), rng);
  }
  return keys;
}

// `got` (with `origins`, each output key's input position, when given) is `input` sorted as
// asked: the reference order (NaNs tied), NaNs ordered by their bits among themselves, every key
// beside its origin, and where `stable` equal bits in input order.
template <class K>
::testing::AssertionResult sorted_as_asked(const std::vector<K>& input, const std::vector<K>& got,
                                           bool descending, gpusort::nan_order nans, bool stable,
                                           const std::vector<std::uint32_t>* origins) {
  if (got.size() != input.size()) return ::testing::AssertionFailure() << "size";
  std::vector<bits_t<K>> want, have;
  for (const K k : input) want.push_back(bits_of(k));
  for (const K k : got) have.push_back(bits_of(k));
  std::sort(want.begin(), want.end());
  std::vector<bits_t<K>> sorted_have = have;
  std::sort(sorted_have.begin(), sorted_have.end());
  if (want != sorted_have) return ::testing::AssertionFailure() << "not the input's keys";
  const bool low = gpusort::nans_lowest(descending ? gpusort::order::descending : gpusort::order::ascending, nans);
  for (std::size_t i = 0; i + 1 < got.size(); ++i) {
    if (before(got[i + 1], got[i], descending, nans))
      return ::testing::AssertionFailure() << "out of order at " << i;
    if (is_nan(got[i]) && is_nan(got[i + 1])) {
      const std::uint32_t a = gpusort::detail::narrow_code<K>(have[i], low);
      const std::uint32_t b = gpusort::detail::narrow_code<K>(have[i + 1], low);
      if (descending ? a < b : a > b) return ::testing::AssertionFailure() << "NaNs out of bit order at " << i;
    }
  }
  if (!origins) return ::testing::AssertionSuccess();
  for (std::size_t i = 0; i < got.size(); ++i) {
    const std::uint32_t o = (*origins)[i];
    if (o >= input.size() || bits_of(input[o]) != have[i])
      return ::testing::AssertionFailure() << "value left its key at " << i;
    if (stable && i > 0 && have[i] == have[i - 1] && (*origins)[i - 1] > o)
      return ::testing::AssertionFailure() << "not stable at " << i;
  }
  return ::testing::AssertionSuccess();
}

TYPED_TEST(NarrowSorts, EveryAlgorithmSortsKeysAndPairsInBothOrders) {
  using K = TypeParam;
  const std::vector<gpusort::nan_order> placements =
      is_float16<K> ? std::vector{gpusort::nan_order::last, gpusort::nan_order::first}
                    : std::vector{gpusort::nan_order::last};
  for (const std::size_t n : {0, 1, 2, 3, 31, 257, 1000, 4097, 65537}) {
    const std::vector<K> input = mixed_keys<K>(n, static_cast<unsigned>(n) + 7);
    const std::vector<sort_method> methods = sort_methods(!gpusort::detail::gpu_available(), false);
    for_each_method_both_orders(methods, n, [&](const sort_method& m, bool descending) {
      for (const gpusort::nan_order nans : placements) {
        SCOPED_TRACE(gpusort::to_string(nans));
        gpusort::options opt = m.opt;
        opt.nans = nans;
        std::vector<K> keys = input;
        gpusort::sort(keys, opt);
        ASSERT_TRUE(sorted_as_asked(input, keys, descending, nans, false, nullptr));
        std::vector<K> paired = input;
        std::vector<std::uint32_t> origins(n);
        for (std::size_t i = 0; i < n; ++i) origins[i] = static_cast<std::uint32_t>(i);
        gpusort::sort(paired, origins, opt);
        ASSERT_TRUE(sorted_as_asked(input, paired, descending, nans, m.stable, &origins));
      }
    });
  }
}

TYPED_TEST(NarrowSorts, StableOptionKeepsEqualKeysInInputOrder) {
  using K = TypeParam;
  const std::size_t n = 3001;
  const std::vector<K> input = mixed_keys<K>(n, 11);
  for (const gpusort::algorithm a : {gpusort::algorithm::bitonic, gpusort::algorithm::sample_sort,
                                     gpusort::algorithm::quicksort, gpusort::algorithm::automatic}) {
    SCOPED_TRACE(gpusort::method_name({.algo = a}));
    std::vector<K> keys = input;
    std::vector<std::uint32_t> origins(n);
    for (std::size_t i = 0; i < n; ++i) origins[i] = static_cast<std::uint32_t>(i);
    gpusort::sort(keys, origins, {.algo = a, .stable = true});
    ASSERT_TRUE(sorted_as_asked(input, keys, false, gpusort::nan_order::last, true, &origins));
  }
}

// Segments (offsets with empty and one-key segments) and batches, keys alone and with their
// input positions, each part against the reference on its own.
TYPED_TEST(NarrowSorts, SegmentsAndBatchesSortEachPart) {
  using K = TypeParam;
  const std::size_t n = 20011;
  const std::vector<K> input = mixed_keys<K>(n, 23);
  std::vector<std::uint64_t> offsets{0, 0, 1, 2, 2, 100, 4097, 4098, 12000, n};
  const auto check_parts = [&](const std::vector<K>& got, const std::vector<std::uint32_t>* origins,
                               const std::vector<std::uint64_t>& bounds, bool descending,
                               gpusort::nan_order nans, bool stable) {
    for (std::size_t s = 0; s + 1 < bounds.size(); ++s) {
      const std::vector<K> part_in(input.begin() + bounds[s], input.begin() + bounds[s + 1]);
      const std::vector<K> part(got.begin() + bounds[s], got.begin() + bounds[s + 1]);
      std::vector<std::uint32_t> part_origins;
      if (origins)
        for (std::uint64_t i = bounds[s]; i < bounds[s + 1]; ++i)
          part_origins.push_back((*origins)[i] - static_cast<std::uint32_t>(bounds[s]));
      ASSERT_TRUE(sorted_as_asked(part_in, part, descending, nans, stable,
                                  origins ? &part_origins : nullptr))
          << "part " << s;
    }
  };
  const std::vector<gpusort::nan_order> placements =
      is_float16<K> ? std::vector{gpusort::nan_order::last, gpusort::nan_order::first}
                    : std::vector{gpusort::nan_order::last};
  for (const gpusort::algorithm a : {gpusort::algorithm::automatic, gpusort::algorithm::bitonic,
                                     gpusort::algorithm::cub_radix, gpusort::algorithm::cub_merge}) {
    for (const bool stable : {false, true}) {
      for (const bool descending : {false, true}) {
        for (const gpusort::nan_order nans : placements) {
          SCOPED_TRACE(std::string(gpusort::method_name({.algo = a})) + (stable ? " stable" : "") +
                       (descending ? " descending " : " ascending ") + std::string(gpusort::to_string(nans)));
          const gpusort::options opt{
              .algo = a,
              .direction = descending ? gpusort::order::descending : gpusort::order::ascending,
              .nans = nans,
              .stable = stable};
          const bool keeps_order = stable || a == gpusort::algorithm::cub_radix ||
                                   a == gpusort::algorithm::cub_merge;
          std::vector<K> keys = input;
          gpusort::sort_segmented(keys, offsets, opt);
          check_parts(keys, nullptr, offsets, descending, nans, false);
          std::vector<K> paired = input;
          std::vector<std::uint32_t> origins(n);
          for (std::size_t i = 0; i < n; ++i) origins[i] = static_cast<std::uint32_t>(i);
          gpusort::sort_segmented(paired, origins, offsets, opt);
          check_parts(paired, &origins, offsets, descending, nans, keeps_order);
          // Batches of 1,000 keys (the last 11 keys outside every batch keep their bits).
          std::vector<K> batched = input;
          std::vector<std::uint32_t> batch_origins = origins;
          for (std::size_t i = 0; i < n; ++i) batch_origins[i] = static_cast<std::uint32_t>(i % 1000);
          batched.resize(20000);
          batch_origins.resize(20000);
          gpusort::sort_batched(batched, batch_origins, 20, 1000, opt);
          std::vector<std::uint64_t> bounds;
          for (std::uint64_t b = 0; b <= 20; ++b) bounds.push_back(b * 1000);
          for (std::size_t i = 0; i < batch_origins.size(); ++i)
            batch_origins[i] += static_cast<std::uint32_t>(i / 1000 * 1000);
          check_parts(batched, &batch_origins, bounds, descending, nans, keeps_order);
        }
      }
    }
  }
}

// Device keys in segments given by begin and end offsets with gaps: keys outside every segment
// keep their bits (the map to codes runs over the whole array).
TYPED_TEST(NarrowSorts, KeysOutsideEverySegmentKeepTheirBits) {
  using K = TypeParam;
  if (!gpusort::detail::gpu_available()) GTEST_SKIP() << "no GPU: device segments";
  const std::size_t n = 5003;
  const std::vector<K> input = mixed_keys<K>(n, 31);
  const std::vector<std::uint64_t> begins{10, 700, 3000}, ends{600, 2900, 4990};
  K* keys = nullptr;
  std::uint64_t* offsets = nullptr;
  ASSERT_EQ(cudaMalloc(&keys, n * sizeof(K)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&offsets, 6 * 8), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(keys, input.data(), n * sizeof(K), cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(offsets, begins.data(), 24, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(offsets + 3, ends.data(), 24, cudaMemcpyHostToDevice), cudaSuccess);
  std::size_t bytes = 0;
  ASSERT_EQ(gpusort::sort_segmented_keys(nullptr, bytes, keys, n, offsets, offsets + 3, 3), cudaSuccess);
  void* temp = nullptr;
  ASSERT_EQ(cudaMalloc(&temp, bytes), cudaSuccess);
  ASSERT_EQ(gpusort::sort_segmented_keys(temp, bytes, keys, n, offsets, offsets + 3, 3), cudaSuccess);
  std::vector<K> got(n);
  ASSERT_EQ(cudaMemcpy(got.data(), keys, n * sizeof(K), cudaMemcpyDeviceToHost), cudaSuccess);
  std::vector<bool> inside(n, false);
  for (std::size_t s = 0; s < 3; ++s) {
    for (std::uint64_t i = begins[s]; i < ends[s]; ++i) inside[i] = true;
    const std::vector<K> part_in(input.begin() + begins[s], input.begin() + ends[s]);
    const std::vector<K> part(got.begin() + begins[s], got.begin() + ends[s]);
    EXPECT_TRUE(sorted_as_asked(part_in, part, false, gpusort::nan_order::last, false, nullptr)) << s;
  }
  for (std::size_t i = 0; i < n; ++i)
    if (!inside[i]) ASSERT_EQ(bits_of(got[i]), bits_of(input[i])) << i;
  cudaFree(temp);
  cudaFree(offsets);
  cudaFree(keys);
}

// The k first keys of `input` in `order` (NaNs largest, as top_k ranks them), against `got`:
// the same values in the same order (NaNs equal among themselves), each key one of the input's.
template <class K>
::testing::AssertionResult first_k_as_asked(const std::vector<K>& input, const K* got,
                                            std::uint64_t k, bool descending) {
  const gpusort::nan_order nans = nans_largest(descending);
  std::vector<K> want = input;
  std::stable_sort(want.begin(), want.end(),
                   [&](K a, K b) { return before(a, b, descending, nans); });
  std::vector<bits_t<K>> pool;
  for (const K key : input) pool.push_back(bits_of(key));
  std::sort(pool.begin(), pool.end());
  for (std::uint64_t j = 0; j < k; ++j) {
    if (is_nan(got[j]) != is_nan(want[j]) ||
        (!is_nan(got[j]) && (before(got[j], want[j], descending, nans) ||
                             before(want[j], got[j], descending, nans))))
      return ::testing::AssertionFailure() << "key " << j << " of " << k;
    const auto hit = std::lower_bound(pool.begin(), pool.end(), bits_of(got[j]));
    if (hit == pool.end() || *hit != bits_of(got[j]))
      return ::testing::AssertionFailure() << "key " << j << " is not the input's";
    pool.erase(hit);
  }
  return ::testing::AssertionSuccess();
}

// top_k, select_k and top_k_rows of host vectors (the GPU's on a GPU host, else the CPU's):
// every k from 0 to n, both orders, the keys' exact bits.
TYPED_TEST(NarrowSorts, TopKSelectKAndRowsAreTheFirstKeysOfTheOrder) {
  using K = TypeParam;
  for (const std::size_t n : {0, 1, 2, 257, 5000, 65537}) {
    const std::vector<K> input = mixed_keys<K>(n, static_cast<unsigned>(n) + 41);
    for (const std::uint64_t k : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{n / 3},
                                  std::uint64_t{n}}) {
      if (k > n) continue;
      for (const bool descending : {false, true}) {
        SCOPED_TRACE(::testing::Message() << "n " << n << " k " << k << (descending ? " descending" : ""));
        const gpusort::options opt{.direction = descending ? gpusort::order::descending
                                                           : gpusort::order::ascending};
        const std::vector<K> top = gpusort::top_k(input, k, opt);
        ASSERT_EQ(top.size(), k);
        ASSERT_TRUE(first_k_as_asked(input, top.data(), k, descending));
        const gpusort::selection<K> chosen = gpusort::select_k(input, k, opt);
        ASSERT_EQ(chosen.keys.size(), k);
        if (k) {
          ASSERT_EQ(bits_of(chosen.kth), bits_of(chosen.keys.back()));
          ASSERT_TRUE(first_k_as_asked(input, chosen.keys.data(), k, descending));
        }
      }
    }
  }
  // Rows: 7 rows of 3001 keys (the per-row path) and 300 rows of 40 (the batched one).
  for (const auto& [rows, row_length, k] : {std::tuple{7u, 3001u, 100u}, std::tuple{300u, 40u, 40u},
                                            std::tuple{300u, 40u, 0u}}) {
    const std::vector<K> input = mixed_keys<K>(std::size_t{rows} * row_length, rows + k);
    for (const bool descending : {false, true}) {
      SCOPED_TRACE(::testing::Message() << rows << " rows of " << row_length << ", k " << k);
      const std::vector<K> top = gpusort::top_k_rows(
          input, row_length, k,
          {.direction = descending ? gpusort::order::descending : gpusort::order::ascending});
      ASSERT_EQ(top.size(), std::size_t{rows} * k);
      for (unsigned r = 0; r < rows; ++r) {
        const std::vector<K> row(input.begin() + std::size_t{r} * row_length,
                                 input.begin() + std::size_t{r + 1} * row_length);
        ASSERT_TRUE(first_k_as_asked(row, top.data() + std::size_t{r} * k, k, descending)) << r;
      }
    }
  }
}

// The core layer's top_k_rows_indices on device keys: each column names its key.
TYPED_TEST(NarrowSorts, TopKRowsIndicesNameTheirKeys) {
  using K = TypeParam;
  if (!gpusort::detail::gpu_available()) GTEST_SKIP() << "no GPU: device rows";
  const std::uint64_t rows = 5, row_length = 4099, k = 64;
  const std::vector<K> input = mixed_keys<K>(rows * row_length, 77);
  K *keys = nullptr, *out = nullptr;
  std::int64_t* columns = nullptr;
  ASSERT_EQ(cudaMalloc(&keys, input.size() * sizeof(K)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&out, rows * k * sizeof(K)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&columns, rows * k * 8), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(keys, input.data(), input.size() * sizeof(K), cudaMemcpyHostToDevice), cudaSuccess);
  // Poisoned outputs: every key and column must be written.
  ASSERT_EQ(cudaMemset(out, 0xA5, rows * k * sizeof(K)), cudaSuccess);
  ASSERT_EQ(cudaMemset(columns, 0xA5, rows * k * 8), cudaSuccess);
  const gpusort::options opt{.direction = gpusort::order::descending};
  std::size_t bytes = 0;
  ASSERT_EQ(gpusort::top_k_rows_indices(nullptr, bytes, keys, rows, row_length, out, columns, k, opt),
            cudaSuccess);
  void* temp = nullptr;
  ASSERT_EQ(cudaMalloc(&temp, bytes), cudaSuccess);
  ASSERT_EQ(gpusort::top_k_rows_indices(temp, bytes, keys, rows, row_length, out, columns, k, opt),
            cudaSuccess);
  std::vector<K> got(rows * k);
  std::vector<std::int64_t> got_columns(rows * k);
  ASSERT_EQ(cudaMemcpy(got.data(), out, got.size() * sizeof(K), cudaMemcpyDeviceToHost), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(got_columns.data(), columns, got_columns.size() * 8, cudaMemcpyDeviceToHost),
            cudaSuccess);
  for (std::uint64_t r = 0; r < rows; ++r) {
    const std::vector<K> row(input.begin() + r * row_length, input.begin() + (r + 1) * row_length);
    ASSERT_TRUE(first_k_as_asked(row, got.data() + r * k, k, true)) << r;
    for (std::uint64_t j = 0; j < k; ++j) {
      const std::int64_t c = got_columns[r * k + j];
      ASSERT_TRUE(c >= 0 && static_cast<std::uint64_t>(c) < row_length) << c;
      ASSERT_EQ(bits_of(row[c]), bits_of(got[r * k + j])) << r << " " << j;
    }
  }
  cudaFree(temp);
  cudaFree(columns);
  cudaFree(out);
  cudaFree(keys);
}

TEST(NarrowKeys, ArgsortOfInt8MatchesStableSort) {
  const std::vector<std::int8_t> keys = mixed_keys<std::int8_t>(5000, 3);
  const std::vector<std::uint32_t> order = gpusort::argsort(keys, {.stable = true});
  std::vector<std::uint32_t> want(keys.size());
  for (std::size_t i = 0; i < want.size(); ++i) want[i] = static_cast<std::uint32_t>(i);
  std::stable_sort(want.begin(), want.end(), [&](std::uint32_t a, std::uint32_t b) { return keys[a] < keys[b]; });
  EXPECT_EQ(order, want);
}

TEST(NarrowKeys, BoolKeysOnTheGpu) {
  if (!gpusort::detail::gpu_available()) GTEST_SKIP() << "no GPU: bool keys sort from device memory";
  const std::size_t n = 100003;
  std::vector<std::uint8_t> input(n);
  std::mt19937 rng(5);
  for (auto& b : input) b = static_cast<std::uint8_t>(rng() & 1);
  bool* keys = nullptr;
  std::uint32_t* values = nullptr;
  ASSERT_EQ(cudaMalloc(&keys, n), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&values, n * 4), cudaSuccess);
  std::vector<std::uint32_t> origins(n);
  for (std::size_t i = 0; i < n; ++i) origins[i] = static_cast<std::uint32_t>(i);
  for (const bool descending : {false, true}) {
    ASSERT_EQ(cudaMemcpy(keys, input.data(), n, cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(values, origins.data(), n * 4, cudaMemcpyHostToDevice), cudaSuccess);
    gpusort::sort(std::span<bool>(keys, n), std::span<std::uint32_t>(values, n),
                  {.direction = descending ? gpusort::order::descending : gpusort::order::ascending,
                   .stable = true});
    std::vector<std::uint8_t> got(n);
    std::vector<std::uint32_t> got_values(n);
    ASSERT_EQ(cudaMemcpy(got.data(), keys, n, cudaMemcpyDeviceToHost), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(got_values.data(), values, n * 4, cudaMemcpyDeviceToHost), cudaSuccess);
    std::vector<std::uint32_t> want = origins;
    std::stable_sort(want.begin(), want.end(), [&](std::uint32_t a, std::uint32_t b) {
      return descending ? input[a] > input[b] : input[a] < input[b];
    });
    EXPECT_EQ(got_values, want);
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], input[want[i]]) << i;
  }
  cudaFree(keys);
  cudaFree(values);
}

// More keys than a 32-bit count holds, on the GPU (automatic: CUB's radix sort of the codes,
// or the in-place network where its workspace does not fit): sorted, and the same keys.
template <class K>
void sort_more_than_2_to_31(unsigned seed) {
  const std::uint64_t n = (std::uint64_t{1} << 31) + 3;
  std::size_t free_bytes = 0, total_bytes = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_bytes, &total_bytes), cudaSuccess);
  if (free_bytes < 3 * n * sizeof(K)) GTEST_SKIP() << "not enough device memory";
  std::vector<K> keys(n);
  std::vector<std::uint64_t> want(std::size_t{1} << (8 * sizeof(K))), have(want.size());
  std::uint64_t x = seed;
  for (std::uint64_t i = 0; i < n; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    auto b = static_cast<bits_t<K>>(x >> 40);
    if constexpr (is_float16<K>)
      if (is_nan(key_of<K>(b))) b = static_cast<bits_t<K>>(b & 0x3fff);  // finite keys
    keys[i] = key_of<K>(b);
    ++want[b];
  }
  K* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, n * sizeof(K)), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(d, keys.data(), n * sizeof(K), cudaMemcpyHostToDevice), cudaSuccess);
  gpusort::sort(std::span<K>(d, n));
  ASSERT_EQ(cudaMemcpy(keys.data(), d, n * sizeof(K), cudaMemcpyDeviceToHost), cudaSuccess);
  cudaFree(d);
  for (std::uint64_t i = 0; i < n; ++i) {
    ++have[bits_of(keys[i])];
    if (i > 0) ASSERT_FALSE(before(keys[i], keys[i - 1], false, gpusort::nan_order::last)) << i;
  }
  EXPECT_EQ(have, want);
}

TEST(NarrowKeys, MoreThan2To31KeysOnTheGpu) {
  if (!gpusort::detail::gpu_available()) GTEST_SKIP() << "no GPU: 2^31 keys on the device";
  sort_more_than_2_to_31<std::uint8_t>(3);
  sort_more_than_2_to_31<__nv_bfloat16>(4);
}

TEST(NarrowKeys, NamesAndAutomaticChoice) {
  EXPECT_EQ(gpusort::detail::key_name<__nv_bfloat16>, "bf16");
  EXPECT_EQ(gpusort::detail::key_name<std::int8_t>, "i8");
  EXPECT_EQ(gpusort::detail::key_name<float>, "f32");
  // On a GPU CUB's radix sort of the 16-bit codes; on the CPU backend the u32 codes' choice.
  const gpusort::algorithm want = gpusort::detail::gpu_available()
                                      ? gpusort::algorithm::cub_radix
                                      : gpusort::automatic_algorithm<std::uint32_t>(1 << 20);
  EXPECT_EQ((gpusort::automatic_algorithm<__half>(1 << 20)), want);
  // 16-byte values: through the u32 codes.
  EXPECT_EQ((gpusort::automatic_algorithm<__half, gpusort::detail::payload<16>>(1 << 20)),
            (gpusort::automatic_algorithm<std::uint32_t, gpusort::detail::payload<16>>(1 << 20)));
}

}  // namespace
