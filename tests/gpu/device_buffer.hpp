// Test helpers for device memory: RAII buffers with guard zones, and the GPU skip.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include <cuda.h>
#include <cuda_runtime.h>

#include "gpusort/sort.hpp"
#include "reference.hpp"

#define GPUSORT_REQUIRE_GPU()                                            \
  do {                                                                   \
    if (!gpusort::detail::gpu_available()) GTEST_SKIP() << "no CUDA device"; \
  } while (0)

#define CUDA_OK(call) ASSERT_EQ((call), cudaSuccess) << #call

namespace gpusort::testing {

// The fixture of tests that need a device: they skip where there is none.
class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override { GPUSORT_REQUIRE_GPU(); }
};

constexpr std::size_t guard_elems = 257;
constexpr unsigned char poison = 0xA5;

// n elements in device memory, followed by a poisoned guard zone that must stay untouched
// (in-place sorts never write past n, padding included).
template <class T>
class guarded_buffer {
 public:
  explicit guarded_buffer(const std::vector<T>& host) : n_(host.size()) {
    if (cudaMalloc(&data_, sizeof(T) * (n_ + guard_elems)) != cudaSuccess) data_ = nullptr;
    if (!data_) return;
    cudaMemcpy(data_, host.data(), sizeof(T) * n_, cudaMemcpyHostToDevice);
    cudaMemset(data_ + n_, poison, sizeof(T) * guard_elems);
  }
  ~guarded_buffer() { cudaFree(data_); }
  guarded_buffer(const guarded_buffer&) = delete;
  guarded_buffer& operator=(const guarded_buffer&) = delete;

  T* data() const { return data_; }
  std::size_t size() const { return n_; }
  std::vector<T> to_host() const {
    std::vector<T> h(n_);
    cudaMemcpy(h.data(), data_, sizeof(T) * n_, cudaMemcpyDeviceToHost);
    return h;
  }
  bool guard_intact() const {
    std::vector<unsigned char> g(sizeof(T) * guard_elems);
    cudaMemcpy(g.data(), data_ + n_, g.size(), cudaMemcpyDeviceToHost);
    for (unsigned char c : g)
      if (c != poison) return false;
    return true;
  }

 private:
  T* data_ = nullptr;
  std::size_t n_;
};

// A workspace poisoned before use, so that reading what was never written shows.
struct poisoned_workspace {
  void* ptr = nullptr;
  explicit poisoned_workspace(std::size_t bytes) {
    if (bytes && cudaMalloc(&ptr, bytes) == cudaSuccess) cudaMemset(ptr, poison, bytes);
  }
  ~poisoned_workspace() { cudaFree(ptr); }
  poisoned_workspace(const poisoned_workspace&) = delete;
  poisoned_workspace& operator=(const poisoned_workspace&) = delete;
};

// Sorts keys (and values, unless null) through the two calls of the core API: the query,
// then the sort in a poisoned workspace of that size (the keys themselves when it is 0);
// waits for the device.
template <class K, class V>
cudaError_t sort_on_device(guarded_buffer<K>& keys, guarded_buffer<V>* values,
                           const gpusort::options& opt) {
  const std::size_t n = keys.size();
  std::size_t bytes = 0;
  cudaError_t e = values ? gpusort::sort_pairs(nullptr, bytes, keys.data(), values->data(), n, opt)
                         : gpusort::sort_keys(nullptr, bytes, keys.data(), n, opt);
  if (e != cudaSuccess) return e;
  poisoned_workspace temp(bytes);
  void* t = bytes ? temp.ptr : static_cast<void*>(keys.data());
  e = values ? gpusort::sort_pairs(t, bytes, keys.data(), values->data(), n, opt)
             : gpusort::sort_keys(t, bytes, keys.data(), n, opt);
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  return e;
}

// Work captured from a stream into a graph, then run; the graph and its instance are freed
// with this object. A failing CUDA call fails the test fatally (callers wrap the calls in
// ASSERT_NO_FATAL_FAILURE to stop there).
class captured_graph {
 public:
  captured_graph() = default;
  ~captured_graph() {
    if (exec_) cudaGraphExecDestroy(exec_);
    if (graph_) cudaGraphDestroy(graph_);
  }
  captured_graph(const captured_graph&) = delete;
  captured_graph& operator=(const captured_graph&) = delete;

  // Records what enqueue() puts on `stream`, without running it.
  template <class Enqueue>
  void capture(cudaStream_t stream, const Enqueue& enqueue) {
    CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    enqueue();
    CUDA_OK(cudaStreamEndCapture(stream, &graph_));
  }
  // Runs what was recorded on `stream` and waits for it.
  void launch(cudaStream_t stream) {
    CUDA_OK(cudaGraphInstantiate(&exec_, graph_, 0));
    CUDA_OK(cudaGraphLaunch(exec_, stream));
    CUDA_OK(cudaStreamSynchronize(stream));
  }

 private:
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

// Sorts `keys` on the device the way sort_on_device does, checking each step: the query's
// answer (check_workspace(bytes), which may assert), the result bit for bit against
// reference_sort, and the guard zone past n.
template <class K, class CheckWorkspace>
void check_device_sort(const std::vector<K>& keys, const gpusort::options& opt,
                       const CheckWorkspace& check_workspace) {
  const std::vector<K> expect = reference_sort(keys, opt.direction == gpusort::order::descending);
  guarded_buffer<K> d(keys);
  ASSERT_TRUE(d.data() || keys.empty());
  std::size_t bytes = 0;
  ASSERT_EQ(gpusort::sort_keys(nullptr, bytes, d.data(), keys.size(), opt), cudaSuccess);
  check_workspace(bytes);
  if (::testing::Test::HasFatalFailure()) return;
  poisoned_workspace temp(bytes);
  ASSERT_TRUE(temp.ptr || bytes == 0);
  ASSERT_EQ(gpusort::sort_keys(bytes ? temp.ptr : d.data(), bytes, d.data(), keys.size(), opt),
            cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  ASSERT_TRUE(same_bits(d.to_host(), expect));
  ASSERT_TRUE(d.guard_intact()) << "wrote past n";
}

// gpusort::sort on a host vector (of doubles drawn from `d`) leaves it in reference_sort's
// order, bit for bit.
inline ::testing::AssertionResult sorts_a_vector(gpusort::tools::distribution d,
                                                 const gpusort::options& opt) {
  std::vector<double> v = gpusort::tools::generate<double>(d, 100003, 5);
  const std::vector<double> expect =
      reference_sort(v, opt.direction == gpusort::order::descending);
  gpusort::sort(v, opt);
  return same_bits(v, expect);
}

// `chunks` physical allocations of the driver's granularity mapped side by side into one
// reserved address range, followed by one reserved but unmapped granule: an array the way
// PyTorch's expandable segments make them. The driver is reached through the runtime, as the
// library reaches it. ok() is false where the driver or device lacks the API.
class vmm_array {
 public:
  vmm_array(int device, int chunks) {
    if (!find(create_, "cuMemCreate") || !find(release_, "cuMemRelease") ||
        !find(reserve_, "cuMemAddressReserve") || !find(free_, "cuMemAddressFree") ||
        !find(map_, "cuMemMap") || !find(unmap_, "cuMemUnmap") ||
        !find(set_access_, "cuMemSetAccess") ||
        !find(granularity_, "cuMemGetAllocationGranularity"))
      return;
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = device;
    if (granularity_(&granule_, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) != CUDA_SUCCESS) return;
    if (reserve_(&base_, granule_ * (chunks + 1), 0, 0, 0) != CUDA_SUCCESS) return;
    for (int c = 0; c < chunks; ++c) {
      CUmemGenericAllocationHandle h{};
      if (create_(&h, granule_, &prop, 0) != CUDA_SUCCESS) return;
      handles_.push_back(h);
      if (map_(base_ + c * granule_, granule_, 0, h, 0) != CUDA_SUCCESS) return;
      ++mapped_;
    }
    CUmemAccessDesc access{};
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    ok_ = set_access_(base_, granule_ * chunks, &access, 1) == CUDA_SUCCESS;
  }
  ~vmm_array() {
    if (mapped_ > 0) unmap_(base_, granule_ * mapped_);
    for (auto h : handles_) release_(h);
    if (base_ != 0) free_(base_, granule_ * (handles_.size() + 1));
  }
  vmm_array(const vmm_array&) = delete;
  vmm_array& operator=(const vmm_array&) = delete;

  bool ok() const { return ok_; }
  void* data() const { return reinterpret_cast<void*>(base_); }
  std::size_t bytes() const { return granule_ * mapped_; }

 private:
  template <class F>
  static bool find(F*& f, const char* name) {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult found{};
    f = cudaGetDriverEntryPointByVersion(name, &p, 12000, cudaEnableDefault, &found) ==
                    cudaSuccess &&
                found == cudaDriverEntryPointSuccess
            ? reinterpret_cast<F*>(p)
            : nullptr;
    cudaGetLastError();
    return f != nullptr;
  }
  decltype(&::cuMemCreate) create_ = nullptr;
  decltype(&::cuMemRelease) release_ = nullptr;
  decltype(&::cuMemAddressReserve) reserve_ = nullptr;
  decltype(&::cuMemAddressFree) free_ = nullptr;
  decltype(&::cuMemMap) map_ = nullptr;
  decltype(&::cuMemUnmap) unmap_ = nullptr;
  decltype(&::cuMemSetAccess) set_access_ = nullptr;
  decltype(&::cuMemGetAllocationGranularity) granularity_ = nullptr;
  CUdeviceptr base_ = 0;
  std::size_t granule_ = 0;
  std::size_t mapped_ = 0;
  std::vector<CUmemGenericAllocationHandle> handles_;
  bool ok_ = false;
};

}  // namespace gpusort::testing
