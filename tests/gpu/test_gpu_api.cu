// The public API on the device: validation and error messages, data untouched on error,
// the convenience layer, CUDA graph capture, and the baselines (user comparators:
// test_gpu_comparator.cu, test_gpu_automatic_comparator.cu).
#include <gtest/gtest.h>

#include <algorithm>

#include "device_buffer.hpp"
#include "gpusort/sort.hpp"
#include "reference.hpp"

using namespace gpusort::testing;
namespace tools = gpusort::tools;

using GpuApi = GpuTest;

TEST_F(GpuApi, NullPointerIsRejected) {
  std::size_t bytes = 0;
  EXPECT_EQ(gpusort::sort_keys(nullptr, bytes, static_cast<std::uint32_t*>(nullptr), 10),
            cudaErrorInvalidValue);
  EXPECT_EQ(gpusort::sort_keys(nullptr, bytes, static_cast<std::uint32_t*>(nullptr), 0),
            cudaSuccess);
  EXPECT_EQ(gpusort::sort_keys(nullptr, bytes, static_cast<std::uint32_t*>(nullptr), -1),
            cudaErrorInvalidValue);
  try {
    gpusort::sort(std::span<float>(static_cast<float*>(nullptr), 5));
    FAIL() << "no exception";
  } catch (const gpusort::error& e) {
    EXPECT_EQ(e.code(), cudaErrorInvalidValue);
    EXPECT_NE(std::string(e.what()).find("null pointer"), std::string::npos) << e.what();
  }
}

TEST_F(GpuApi, HostPointerIsRejectedAndUntouched) {
  std::vector<std::uint64_t> host = {5, 3, 9, 1};
  std::size_t bytes = 0;
  EXPECT_EQ(gpusort::sort_keys(reinterpret_cast<void*>(1), bytes, host.data(), host.size()),
            cudaErrorInvalidValue);
  try {
    gpusort::sort(std::span<std::uint64_t>(host));
    FAIL() << "no exception";
  } catch (const gpusort::error& e) {
    EXPECT_NE(std::string(e.what()).find("not all in device memory"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(host, (std::vector<std::uint64_t>{5, 3, 9, 1}));
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST_F(GpuApi, CountBeyondTheAllocationIsRejected) {
  std::vector<std::uint32_t> host = tools::generate<std::uint32_t>(tools::distribution::uniform, 1000, 1);
  guarded_buffer<std::uint32_t> d(host);
  std::size_t bytes = 0;
  // far past the end of the allocation: the last element is not device memory
  EXPECT_NE(gpusort::sort_keys(d.data(), bytes, d.data(), std::uint64_t{1} << 40), cudaSuccess);
  EXPECT_EQ(d.to_host(), host);
}

// One element past an allocation is refused even where the next page is mapped too, and a
// count whose byte size wraps 64 bits does not pass as a small array.
TEST_F(GpuApi, ArraysMustFitTheirAllocation) {
  std::uint32_t* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 4096), cudaSuccess);
  std::uint32_t* neighbour = nullptr;  // likely right after d in the same 2 MiB page
  ASSERT_EQ(cudaMalloc(&neighbour, 4096), cudaSuccess);
  using gpusort::detail::validate_device_array;
  EXPECT_EQ(validate_device_array(d, 1024, 4, 4), cudaSuccess);
  EXPECT_EQ(validate_device_array(d + 1, 1023, 4, 4), cudaSuccess);
  EXPECT_EQ(validate_device_array(d, 1025, 4, 4), cudaErrorInvalidValue);
  EXPECT_EQ(validate_device_array(d + 1023, 2, 4, 4), cudaErrorInvalidValue);
  EXPECT_EQ(validate_device_array(d, std::uint64_t{1} << 61, 8, 8), cudaErrorInvalidValue);
  EXPECT_EQ(validate_device_array(d, ~std::uint64_t{0}, 4, 4), cudaErrorInvalidValue);
  std::size_t bytes = 0;
  EXPECT_EQ(gpusort::sort_keys(nullptr, bytes, d, 1025), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  cudaFree(neighbour);
  cudaFree(d);
  // The same for stream-ordered allocations, which a memory pool packs side by side.
  std::uint32_t* pooled[2] = {};
  for (auto*& p : pooled) ASSERT_EQ(cudaMallocAsync(&p, 4096, nullptr), cudaSuccess);
  EXPECT_EQ(validate_device_array(pooled[0], 1024, 4, 4), cudaSuccess);
  EXPECT_EQ(validate_device_array(pooled[0], 1025, 4, 4), cudaErrorInvalidValue);
  for (auto* p : pooled) cudaFreeAsync(p, nullptr);
  EXPECT_EQ(cudaStreamSynchronize(nullptr), cudaSuccess);
}

// An array mapped as several physical allocations side by side (CUDA's virtual memory API,
// as PyTorch's expandable segments do) is accepted whole, and sorted; one byte past the
// mapping is not.
TEST_F(GpuApi, ArraysSpanningSeveralMappedAllocationsAreAccepted) {
  int device = 0;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  vmm_array mapping(device, 3);
  if (!mapping.ok()) GTEST_SKIP() << "the driver's virtual memory API is not available";
  const std::uint64_t n = mapping.bytes() / 4;
  const auto input = tools::generate<std::uint32_t>(tools::distribution::uniform, n, 5);
  auto* keys = static_cast<std::uint32_t*>(mapping.data());
  ASSERT_EQ(cudaMemcpy(keys, input.data(), mapping.bytes(), cudaMemcpyHostToDevice), cudaSuccess);
  using gpusort::detail::validate_device_array;
  EXPECT_EQ(validate_device_array(keys, n, 4, 4), cudaSuccess);
  EXPECT_EQ(validate_device_array(keys + 1, n - 1, 4, 4), cudaSuccess);
  EXPECT_EQ(validate_device_array(keys, n + 1, 4, 4), cudaErrorInvalidValue);
  gpusort::sort(std::span<std::uint32_t>(keys, n));
  std::vector<std::uint32_t> out(n);
  ASSERT_EQ(cudaMemcpy(out.data(), keys, mapping.bytes(), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_TRUE(same_bits(out, reference_sort(input)));
}

TEST_F(GpuApi, MisalignedValuesAreRejected) {
  std::vector<std::uint32_t> keys(9, 1);
  guarded_buffer<std::uint32_t> dk(keys);
  guarded_buffer<std::uint32_t> raw(std::vector<std::uint32_t>(20, 0));
  auto* values = reinterpret_cast<std::uint64_t*>(raw.data() + 1);  // 4-byte aligned only
  std::size_t bytes = 0;
  EXPECT_EQ(gpusort::sort_pairs(nullptr, bytes, dk.data(), values, 8), cudaErrorMisalignedAddress);
}

TEST_F(GpuApi, ConvenienceLayerOnDeviceSpans) {
  const auto input = tools::generate<std::int32_t>(tools::distribution::gaussian, 100003, 4);
  guarded_buffer<std::int32_t> d(input);
  gpusort::sort(std::span<std::int32_t>(d.data(), input.size()),
                {.direction = gpusort::order::descending});
  EXPECT_TRUE(same_bits(d.to_host(), reference_sort(input, true)));
}

TEST_F(GpuApi, HostVectorsGoThroughTheGpu) {
  auto keys = tools::generate<float>(tools::distribution::zipf, 77777, 8);
  scatter_special_values(keys, 8);
  std::vector<std::uint32_t> values(keys.size());
  std::iota(values.begin(), values.end(), 0u);
  const auto input = keys;
  gpusort::sort(keys, values);
  EXPECT_TRUE(same_bits(keys, reference_sort(input)));
  for (std::size_t i = 0; i < keys.size(); ++i)
    ASSERT_EQ(gpusort::key_traits<float>::ordered(input[values[i]]),
              gpusort::key_traits<float>::ordered(keys[i]));
}

// The baselines answer through the same interface (u32 keys and u32/u32 pairs).
TEST_F(GpuApi, BaselinesSortThroughTheInterface) {
  for (auto algo : {gpusort::algorithm::cub_radix, gpusort::algorithm::cub_merge,
                    gpusort::algorithm::thrust}) {
    for (bool desc : {false, true}) {
      SCOPED_TRACE(::testing::Message() << gpusort::to_string(algo) << " desc=" << desc);
      const auto input = tools::generate<std::uint32_t>(tools::distribution::uniform, 1 << 20, 3);
      guarded_buffer<std::uint32_t> d(input);
      gpusort::sort(std::span<std::uint32_t>(d.data(), input.size()),
                    {.algo = algo, .direction = desc ? gpusort::order::descending
                                                     : gpusort::order::ascending});
      EXPECT_TRUE(same_bits(d.to_host(), reference_sort(input, desc)));
      EXPECT_TRUE(d.guard_intact());
    }
  }
  // 16-byte values: CUB's sorts are built for keys alone and 4- and 8-byte values.
  struct value16 {
    std::uint64_t a, b;
  };
  std::vector<std::uint32_t> keys(10, 1);
  guarded_buffer<std::uint32_t> dk(keys);
  guarded_buffer<value16> dv(std::vector<value16>(10, value16{2, 3}));
  std::size_t bytes = 0;
  EXPECT_EQ(gpusort::sort_pairs(nullptr, bytes, dk.data(), dv.data(), 10,
                                {.algo = gpusort::algorithm::cub_radix}),
            cudaErrorNotSupported);
}

// automatic: CUB's merge sort (small arrays) or radix sort when the workspace fits (the
// query says how much), and the in-place bitonic sort when the caller offers no workspace;
// automatic_algorithm names the choice.
TEST_F(GpuApi, AutomaticUsesTheWorkspaceItIsGiven) {
  for (bool desc : {false, true}) {
    SCOPED_TRACE(::testing::Message() << "desc=" << desc);
    // Past the merge sort's range (8-byte keys: 2^20), so that radix runs.
    const auto input =
        tools::generate<std::int64_t>(tools::distribution::gaussian, (1 << 21) + 3, 21);
    const gpusort::options opt{.direction = desc ? gpusort::order::descending
                                                 : gpusort::order::ascending};
    guarded_buffer<std::int64_t> d(input);
    std::size_t bytes = 0;
    ASSERT_EQ(gpusort::sort_keys(nullptr, bytes, d.data(), input.size(), opt), cudaSuccess);
    EXPECT_GE(bytes, input.size() * sizeof(std::int64_t)) << "radix needs a second buffer";
    void* temp = nullptr;
    ASSERT_EQ(cudaMalloc(&temp, bytes), cudaSuccess);
    ASSERT_EQ(gpusort::sort_keys(temp, bytes, d.data(), input.size(), opt), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_TRUE(same_bits(d.to_host(), reference_sort(input, desc)));
    cudaFree(temp);

    guarded_buffer<std::int64_t> in_place(input);
    std::size_t none = 0;
    ASSERT_EQ(gpusort::sort_keys(in_place.data(), none, in_place.data(), input.size(), opt),
              cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_TRUE(same_bits(in_place.to_host(), reference_sort(input, desc)));
    EXPECT_TRUE(in_place.guard_intact());
  }
  using gpusort::algorithm;
  EXPECT_EQ(gpusort::automatic_algorithm<std::int64_t>((1 << 21) + 3), algorithm::cub_radix);
  EXPECT_EQ(gpusort::automatic_algorithm<float>(1000), algorithm::cub_merge);
  EXPECT_EQ(gpusort::automatic_algorithm<double>(std::uint64_t{1} << 24), algorithm::cub_radix);
  EXPECT_EQ((gpusort::automatic_algorithm<std::uint32_t, std::uint32_t>(1 << 16)),
            algorithm::cub_merge);
  EXPECT_EQ((gpusort::automatic_algorithm<std::uint32_t, std::uint64_t>(1 << 24)),
            algorithm::cub_radix) << "64-bit indices take CUB's radix sort";
  struct value16 {
    std::uint64_t a, b;
  };
  EXPECT_EQ((gpusort::automatic_algorithm<std::uint32_t, value16>(1 << 24)), algorithm::bitonic)
      << "CUB's sorts are built for values of up to 8 bytes";
  EXPECT_EQ(gpusort::automatic_algorithm<std::uint32_t>(std::uint64_t{1} << 40),
            algorithm::bitonic) << "a workspace larger than the device";
  std::vector<float> floats(1000, 1.0f);
  guarded_buffer<float> df(floats);
  std::size_t bytes = 0;
  ASSERT_EQ(gpusort::sort_keys(nullptr, bytes, df.data(), floats.size()), cudaSuccess);
  EXPECT_GT(bytes, 1u) << "float keys take CUB's merge sort too";
}
