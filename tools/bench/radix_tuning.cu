// CUB's onesweep radix sort under tunings of our own (issue 77): block threads, items per
// thread and digit bits, against CUB's sm_90 defaults in the same process: "cub32" with a
// 32-bit count, and "cub64" with the 64-bit count gpusort passes (CUB picks its items per
// thread by the count's width); the ratio is to cub64, what `automatic` runs. One key kind per
// build (RADIX_TUNING_KIND 0-4: u32, u64, u32+u32, u64+u32, f32). Prints CSV:
//   kind,n,threads,items,bits,store,ms,gkeys_per_s,ratio_to_cub,identical
// Each sort starts from the same pristine input (copied outside the timed region); a tuned
// sort must produce output byte-identical to CUB's default (both are stable). RADIX_TUNING_SET
// picks the tunings: 1 the first sweep, 2 odd item counts around its best, 3 one a kind at
// 2^28 (for ncu). Not part of the CMake build (each kind and set is its own program); on a
// GPU host, with CUDA 13 (CUB 3.0: the policy hub leans on CUB internals of that version):
//   nvcc -std=c++20 -O3 -arch=sm_90 -Iinclude -DRADIX_TUNING_SET=2 -DRADIX_TUNING_KIND=0 \
//        -o radix_tuning tools/bench/radix_tuning.cu && ./radix_tuning 7   (median of 7)
#include <cub/device/device_radix_sort.cuh>

#include "gpusort/detail/device/radix_policy.cuh"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

#ifndef RADIX_TUNING_SET
#define RADIX_TUNING_SET 1
#endif
#ifndef RADIX_TUNING_KIND
#define RADIX_TUNING_KIND 0
#endif

namespace {

#define CHECK(call)                                                                       \
  do {                                                                                    \
    cudaError_t e_ = (call);                                                              \
    if (e_ != cudaSuccess) {                                                              \
      std::fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));     \
      std::exit(1);                                                                       \
    }                                                                                     \
  } while (0)

using offset_t = std::uint32_t;  // the tunings' count: every n here is below 2^32

// A policy hub of one sm_90 policy: CUB's, with the onesweep pass reshaped as the library's
// own chain reshapes it (radix_policy.cuh).
template <class K, class V, int Threads, int Items, int Bits, cub::RadixSortStoreAlgorithm Store>
struct tuned_hub {
  using cub_policy = typename cub::detail::radix::policy_hub<K, V, offset_t>::Policy900;
  struct MaxPolicy : cub::ChainedPolicy<900, MaxPolicy, MaxPolicy>,
                     gpusort::detail::device::radix::reshaped_onesweep<
                         cub_policy, K, V, gpusort::detail::device::radix::onesweep_shape{Threads, Items, Bits, Store}> {};
};

template <class Offset>
struct cub_hub {};  // CUB's default policy hub, with a count of this type

template <class K, class V>
struct buffers {
  std::size_t n = 0;
  K *pristine_keys = nullptr, *keys[2] = {}, *reference_keys = nullptr;
  V *pristine_values = nullptr, *values[2] = {}, *reference_values = nullptr;
  void* temp = nullptr;
  std::size_t temp_bytes = 0;
  static constexpr bool pairs = !std::is_same_v<V, cub::NullType>;
};

template <class K, class V, class Hub>
cudaError_t dispatch(void* temp, std::size_t& temp_bytes, cub::DoubleBuffer<K>& keys, cub::DoubleBuffer<V>& values,
                     std::size_t n, cudaStream_t stream) {
  constexpr int bits = sizeof(K) * 8;
  if constexpr (std::is_same_v<Hub, cub_hub<std::uint32_t>> || std::is_same_v<Hub, cub_hub<unsigned long long>>) {
    using count = std::conditional_t<std::is_same_v<Hub, cub_hub<std::uint32_t>>, std::uint32_t, unsigned long long>;
    return cub::DispatchRadixSort<cub::SortOrder::Ascending, K, V, count>::Dispatch(
        temp, temp_bytes, keys, values, static_cast<count>(n), 0, bits, true, stream);
  } else {
    return cub::DispatchRadixSort<cub::SortOrder::Ascending, K, V, offset_t, cub::detail::identity_decomposer_t,
                                  Hub>::Dispatch(temp, temp_bytes, keys, values, static_cast<offset_t>(n), 0, bits,
                                                 true, stream);
  }
}

// Sorts the pristine input once per repetition; returns the median milliseconds and leaves
// the sorted output where *keys_out/*values_out point.
template <class K, class V, class Hub>
float time_sort(buffers<K, V>& b, int reps, K** keys_out, V** values_out) {
  std::size_t need = 0;
  cub::DoubleBuffer<K> keys(b.keys[0], b.keys[1]);
  cub::DoubleBuffer<V> values(b.values[0], b.values[1]);
  CHECK((dispatch<K, V, Hub>(nullptr, need, keys, values, b.n, 0)));
  if (need > b.temp_bytes) {
    CHECK(cudaFree(b.temp));
    CHECK(cudaMalloc(&b.temp, need));
    b.temp_bytes = need;
  }
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  std::vector<float> ms;
  for (int r = 0; r < reps + 1; ++r) {  // the first is a warm-up
    CHECK(cudaMemcpy(b.keys[0], b.pristine_keys, b.n * sizeof(K), cudaMemcpyDeviceToDevice));
    if constexpr (buffers<K, V>::pairs)
      CHECK(cudaMemcpy(b.values[0], b.pristine_values, b.n * sizeof(V), cudaMemcpyDeviceToDevice));
    keys = cub::DoubleBuffer<K>(b.keys[0], b.keys[1]);
    values = cub::DoubleBuffer<V>(b.values[0], b.values[1]);
    std::size_t bytes = b.temp_bytes;
    CHECK(cudaEventRecord(start));
    CHECK((dispatch<K, V, Hub>(b.temp, bytes, keys, values, b.n, 0)));
    CHECK(cudaEventRecord(stop));
    CHECK(cudaEventSynchronize(stop));
    float t = 0;
    CHECK(cudaEventElapsedTime(&t, start, stop));
    if (r > 0) ms.push_back(t);
  }
  CHECK(cudaEventDestroy(start));
  CHECK(cudaEventDestroy(stop));
  *keys_out = keys.Current();
  *values_out = values.Current();
  std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
  return ms[ms.size() / 2];
}

template <class T>
bool same_bytes(const T* a, const T* b, std::size_t n) {
  std::vector<T> x(n), y(n);
  CHECK(cudaMemcpy(x.data(), a, n * sizeof(T), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(y.data(), b, n * sizeof(T), cudaMemcpyDeviceToHost));
  return std::memcmp(x.data(), y.data(), n * sizeof(T)) == 0;
}

template <class K, class V>
struct sweep {
  const char* kind;
  buffers<K, V> b;
  int reps;
  float cub_ms = 0;

  void reference() {
    K* k;
    V* v;
    float cub32_ms = time_sort<K, V, cub_hub<std::uint32_t>>(b, reps, &k, &v);
    cub_ms = time_sort<K, V, cub_hub<unsigned long long>>(b, reps, &k, &v);
    CHECK(cudaMemcpy(b.reference_keys, k, b.n * sizeof(K), cudaMemcpyDeviceToDevice));
    if constexpr (buffers<K, V>::pairs)
      CHECK(cudaMemcpy(b.reference_values, v, b.n * sizeof(V), cudaMemcpyDeviceToDevice));
    std::printf("%s,%zu,cub32,cub32,8,cub32,%.4f,%.2f,%.3f,yes\n", kind, b.n, cub32_ms, b.n / cub32_ms / 1e6,
                cub_ms / cub32_ms);
    std::printf("%s,%zu,cub64,cub64,8,cub64,%.4f,%.2f,1.000,yes\n", kind, b.n, cub_ms, b.n / cub_ms / 1e6);
  }

  template <int Threads, int Items, int Bits, cub::RadixSortStoreAlgorithm Store = cub::RADIX_SORT_STORE_DIRECT>
  void run() {
    K* k;
    V* v;
    float ms = time_sort<K, V, tuned_hub<K, V, Threads, Items, Bits, Store>>(b, reps, &k, &v);
    bool same = same_bytes(k, b.reference_keys, b.n);
    if constexpr (buffers<K, V>::pairs) same = same && same_bytes(v, b.reference_values, b.n);
    std::printf("%s,%zu,%d,%d,%d,%s,%.4f,%.2f,%.3f,%s\n", kind, b.n, Threads, Items, Bits,
                Store == cub::RADIX_SORT_STORE_DIRECT ? "direct" : "aligned", ms, b.n / ms / 1e6,
                cub_ms / ms, same ? "yes" : "NO");
    std::fflush(stdout);
  }
};

template <class T>
void fill_random(T* device, std::size_t n, std::uint64_t seed) {
  std::vector<T> host(n);
  std::mt19937_64 rng(seed);
  for (auto& x : host) {
    std::uint64_t bits = rng();
    std::memcpy(&x, &bits, sizeof(T));
    if constexpr (std::is_floating_point_v<T>)
      if (x != x) x = T(0);  // NaN payloads sort by bits in CUB; keep the comparison simple
  }
  CHECK(cudaMemcpy(device, host.data(), n * sizeof(T), cudaMemcpyHostToDevice));
}

template <class T>
T* device_alloc(std::size_t n) {
  T* p = nullptr;
  if (n) CHECK(cudaMalloc(&p, n * sizeof(T)));
  return p;
}

// The tunings of this build's set and kind: CUB's default shape first (a check that the hub
// reproduces it); items are CUB's nominal 4-byte count.
struct tuning {
  int threads, items, bits;
  cub::RadixSortStoreAlgorithm store = cub::RADIX_SORT_STORE_DIRECT;
};
[[maybe_unused]] constexpr auto aligned = cub::RADIX_SORT_STORE_ALIGNED;
constexpr tuning tunings[] = {
#if RADIX_TUNING_SET == 3  // one tuning a kind at 2^28, for ncu
#if RADIX_TUNING_KIND == 0
    {512, 22, 8},
#else
    {256, 40, 8},
#endif
#elif RADIX_TUNING_SET == 2  // odd item counts (shared-memory banks), around set 1's best
#if RADIX_TUNING_KIND == 0 || RADIX_TUNING_KIND == 4
    {512, 22, 8}, {512, 21, 8}, {512, 23, 8}, {448, 23, 8}, {448, 25, 8},
    {384, 27, 8}, {384, 29, 8}, {384, 31, 8}, {320, 33, 8}, {256, 31, 8},
    {256, 35, 8},
#elif RADIX_TUNING_KIND == 1 || RADIX_TUNING_KIND == 3
    {256, 40, 8}, {256, 38, 8}, {256, 42, 8}, {256, 44, 8}, {224, 46, 8},
    {192, 54, 8}, {320, 34, 8}, {320, 30, 8},
#else
    {512, 16, 8}, {512, 15, 8}, {512, 17, 8}, {448, 19, 8}, {384, 21, 8},
    {384, 25, 8}, {320, 25, 8},
#endif
#else
#if RADIX_TUNING_KIND == 0 || RADIX_TUNING_KIND == 4  // u32, f32 keys: CUB 384 x 20 (f32 19)
    {384, 20, 8}, {384, 20, 8, aligned}, {256, 16, 8, aligned}, {256, 16, 8}, {256, 20, 8},
    {256, 24, 8}, {256, 28, 8}, {384, 16, 8}, {384, 24, 8}, {384, 28, 8},
    {512, 12, 8}, {512, 16, 8}, {512, 20, 8}, {512, 22, 8},
#elif RADIX_TUNING_KIND == 1  // u64 keys: CUB 384 x 30 nominal (15 eight-byte items)
    {384, 30, 8}, {384, 30, 8, aligned}, {256, 24, 8, aligned}, {256, 24, 8}, {256, 32, 8},
    {256, 40, 8}, {384, 16, 8}, {384, 24, 8}, {512, 16, 8}, {512, 20, 8},
    {256, 24, 10}, {256, 32, 10}, {128, 40, 10},
#elif RADIX_TUNING_KIND == 2  // u32 + u32 pairs: CUB 384 x 23
    {384, 23, 8}, {384, 23, 8, aligned}, {256, 16, 8, aligned}, {256, 16, 8}, {256, 20, 8},
    {256, 24, 8}, {384, 16, 8}, {384, 20, 8}, {384, 28, 8}, {512, 12, 8},
    {512, 16, 8}, {512, 20, 8},
#else  // u64 + u32 pairs: CUB 384 x 30 nominal
    {384, 30, 8}, {384, 30, 8, aligned}, {256, 24, 8, aligned}, {256, 24, 8}, {256, 32, 8},
    {256, 40, 8}, {384, 24, 8}, {512, 16, 8}, {512, 20, 8}, {256, 24, 10},
#endif
#endif
};

template <class Sweep, std::size_t... I>
void run_tunings(Sweep& s, std::index_sequence<I...>) {
  (s.template run<tunings[I].threads, tunings[I].items, tunings[I].bits, tunings[I].store>(), ...);
}

}  // namespace

// Every tuning of the set on n keys of the kind, after CUB's defaults.
template <class K, class V>
void sweep_size(const char* kind, std::size_t n, int reps) {
  sweep<K, V> s{kind, {}, reps};
  s.b.n = n;
  s.b.pristine_keys = device_alloc<K>(n);
  s.b.keys[0] = device_alloc<K>(n);
  s.b.keys[1] = device_alloc<K>(n);
  s.b.reference_keys = device_alloc<K>(n);
  fill_random(s.b.pristine_keys, n, 77 + n);
  if constexpr (buffers<K, V>::pairs) {
    s.b.pristine_values = device_alloc<V>(n);
    s.b.values[0] = device_alloc<V>(n);
    s.b.values[1] = device_alloc<V>(n);
    s.b.reference_values = device_alloc<V>(n);
    std::vector<V> index(n);
    for (std::size_t i = 0; i < n; ++i) index[i] = static_cast<V>(i);
    CHECK(cudaMemcpy(s.b.pristine_values, index.data(), n * sizeof(V), cudaMemcpyHostToDevice));
  }
  s.reference();
  run_tunings(s, std::make_index_sequence<std::size(tunings)>{});
  for (void* p : {(void*)s.b.pristine_keys, (void*)s.b.keys[0], (void*)s.b.keys[1], (void*)s.b.reference_keys,
                  (void*)s.b.pristine_values, (void*)s.b.values[0], (void*)s.b.values[1],
                  (void*)s.b.reference_values, s.b.temp})
    CHECK(cudaFree(p));
}

int main(int argc, char** argv) {
  int reps = argc > 1 ? std::atoi(argv[1]) : 9;
  std::printf("kind,n,threads,items,bits,store,ms,gkeys_per_s,ratio_to_cub,identical\n");
  for (int log2 : RADIX_TUNING_SET == 1   ? std::vector<int>{20, 24, 26, 28}
                  : RADIX_TUNING_SET == 2 ? std::vector<int>{24, 26, 28}
                                          : std::vector<int>{28}) {
    std::size_t n = std::size_t{1} << log2;
#if RADIX_TUNING_KIND == 0
    sweep_size<std::uint32_t, cub::NullType>("u32", n, reps);
#elif RADIX_TUNING_KIND == 1
    sweep_size<std::uint64_t, cub::NullType>("u64", n, reps);
#elif RADIX_TUNING_KIND == 2
    sweep_size<std::uint32_t, std::uint32_t>("u32+u32", n, reps);
#elif RADIX_TUNING_KIND == 3
    sweep_size<std::uint64_t, std::uint32_t>("u64+u32", n, reps);
#else
    sweep_size<float, cub::NullType>("f32", n, reps);
#endif
  }
  return 0;
}
