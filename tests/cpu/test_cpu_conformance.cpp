// The CPU backend's twin of tests/gpu/test_gpu_conformance.cu: every exact sort the CPU
// backend runs (reference.hpp's sort_methods(true)), typed over the key types, on awkward
// sizes and every distribution with special floats scattered in, both orders and both NaN
// placements; keys alone and with 4-, 8- and 16-byte values, the stable algorithms and
// options::stable in exactly std::stable_sort's order; bad options leave the keys alone.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "float_keys.hpp"
#include "gpusort/sort.hpp"
#include "reference.hpp"

using namespace gpusort::testing;
namespace tools = gpusort::tools;

namespace {

template <class K>
std::vector<gpusort::nan_order> nan_placements() {
  if constexpr (std::is_floating_point_v<K>)
    return {gpusort::nan_order::last, gpusort::nan_order::first};
  else
    return {gpusort::nan_order::last};
}

gpusort::options directed(gpusort::options opt, bool descending, gpusort::nan_order nans) {
  opt.direction = descending ? gpusort::order::descending : gpusort::order::ascending;
  opt.nans = nans;
  return opt;
}

// `got` is `input` sorted in the order the options ask for; with `origins` (each output key's
// input position), every key beside its value and, where `stable`, the reference permutation.
template <class K>
::testing::AssertionResult sorted_as_asked(const std::vector<K>& input, const std::vector<K>& got,
                                           bool descending, gpusort::nan_order nans, bool stable,
                                           const std::vector<std::uint64_t>* origins = nullptr) {
  if constexpr (std::is_floating_point_v<K>) {
    return sorted_like_reference(input, got, descending, stable, origins, nans);
  } else {
    const ::testing::AssertionResult keys = same_bits(got, reference_sort(input, descending));
    if (!keys || !origins) return keys;
    const std::vector<std::uint64_t> want = stable_positions(input, descending, nans);
    for (std::size_t i = 0; i < got.size(); ++i) {
      const std::uint64_t o = (*origins)[i];
      if (o >= input.size() || input[o] != got[i])
        return ::testing::AssertionFailure() << "value left its key at " << i;
      if (stable && o != want[i]) return ::testing::AssertionFailure() << "not stable at " << i;
    }
    return ::testing::AssertionSuccess();
  }
}

template <class K, std::size_t B>
void check_pairs(const std::vector<K>& input, gpusort::options opt, bool descending, bool stable) {
  SCOPED_TRACE(::testing::Message() << "value bytes " << B);
  using P = gpusort::detail::payload<B>;
  const std::size_t n = input.size();
  std::vector<P> values(n);
  for (std::size_t i = 0; i < n; ++i) values[i] = payload_of_input<B>(i);
  std::vector<K> keys = input;
  gpusort::detail::cpu_sort_pairs(keys.data(), values.data(), n, opt);
  ASSERT_TRUE(values_follow_keys(input, keys, values,
                                 [](std::uint64_t i) { return payload_of_input<B>(i); }));
  std::vector<std::uint64_t> origins(n);
  for (std::size_t i = 0; i < n; ++i) origins[i] = values[i].words[0];
  ASSERT_TRUE(sorted_as_asked(input, keys, descending, opt.nans, stable, &origins));
}

}  // namespace

GPUSORT_TYPED_SUITE(CpuConformance, ::testing::Test, key_types);

TYPED_TEST(CpuConformance, KeysOnEveryDistributionAndSize) {
  using K = TypeParam;
  for (const sort_method& m : sort_methods(true)) {
    SCOPED_TRACE(gpusort::method_name(m.opt));
    for_each_hostile_input<K>(1 << 13, 11, [&](const std::vector<K>& input, bool descending) {
      for (const gpusort::nan_order nans : nan_placements<K>()) {
        SCOPED_TRACE(::testing::Message() << "nans " << gpusort::to_string(nans));
        std::vector<K> keys = input;
        gpusort::detail::cpu_sort_keys(keys.data(), keys.size(), directed(m.opt, descending, nans));
        ASSERT_TRUE(sorted_as_asked(input, keys, descending, nans, m.stable));
      }
    });
    if (this->HasFatalFailure()) return;
  }
}

// Values of every size stay with their keys; the stable algorithms, and every algorithm with
// options::stable, give exactly std::stable_sort's permutation.
TYPED_TEST(CpuConformance, PairsKeepTheirValuesAndStableMeansStable) {
  using K = TypeParam;
  for (const sort_method& m : sort_methods(true)) {
    for (const bool stable : {false, true}) {
      for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{97},
                                  std::size_t{4097}, std::size_t{16411}}) {
        for (const auto dist : {tools::distribution::uniform, tools::distribution::few_unique}) {
          for (const bool descending : {false, true}) {
            for (const gpusort::nan_order nans : nan_placements<K>()) {
              SCOPED_TRACE(::testing::Message()
                           << gpusort::method_name(m.opt) << " stable=" << stable << " n=" << n
                           << " dist=" << tools::to_string(dist) << " desc=" << descending
                           << " nans " << gpusort::to_string(nans));
              std::vector<K> input = tools::generate<K>(dist, n, 31 + n);
              scatter_special_values(input, n);
              gpusort::options opt = directed(m.opt, descending, nans);
              opt.stable = stable;
              check_pairs<K, 4>(input, opt, descending, stable || m.stable);
              check_pairs<K, 8>(input, opt, descending, stable || m.stable);
              check_pairs<K, 16>(input, opt, descending, stable || m.stable);
              if (this->HasFatalFailure()) return;
            }
          }
        }
      }
    }
  }
}

// Options the sort cannot take throw before any key moves.
TYPED_TEST(CpuConformance, BadOptionsLeaveTheKeysAlone) {
  using K = TypeParam;
  std::vector<K> input = tools::generate<K>(tools::distribution::uniform, 1000, 5);
  scatter_special_values(input, 5);
  std::vector<K> keys = input;
  EXPECT_THROW(gpusort::detail::cpu_sort_keys(keys.data(), keys.size(),
                                              {.algo = gpusort::algorithm::sample_sort,
                                               .buckets = 3}),
               gpusort::error);
  EXPECT_TRUE(same_bits(keys, input));
}
