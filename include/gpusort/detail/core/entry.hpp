// What every entry point shares (sort.hpp, segmented.hpp, approx.hpp): the value and index
// types they take, argument checks, the workspace owner, the query-allocate-call helper. The
// public headers include it; it includes none of them.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include "gpusort/error.hpp"
#include "gpusort/detail/core/types.hpp"
#include "gpusort/options.hpp"

namespace gpusort {

namespace detail {

template <class V>
concept supported_value = std::is_trivially_copyable_v<V> &&
                          (sizeof(V) == 4 || sizeof(V) == 8 || sizeof(V) == 16);

template <class V>
using payload_of = payload<sizeof(V)>;

// Defined in src/ for every supported key type and value size.
template <class K>
cudaError_t sort_keys(void* temp, std::size_t& temp_bytes, K* keys, std::uint64_t n,
                      const options& opt);
template <class K, class P>
cudaError_t sort_pairs(void* temp, std::size_t& temp_bytes, K* keys, P* values,
                       std::uint64_t n, const options& opt);
template <class K, class V>
algorithm automatic_algorithm(std::uint64_t n, const options& opt);
template <class K>
void cpu_sort_keys(K* keys, std::uint64_t n, const options& opt);
template <class K, class P>
void cpu_sort_pairs(K* keys, P* values, std::uint64_t n, const options& opt);
// The workspace sort_keys (V = no_value) or sort_pairs asks for, without arrays to check: for a
// call that sorts arrays of its own making in its workspace (narrow keys' codes, unique's copy,
// searchsorted's queries), before those exist.
template <class K, class V>
cudaError_t sort_workspace_bytes(std::uint64_t n, const options& opt, std::size_t& bytes);

// Can the device read and write `count` elements at ptr? cudaSuccess, or the reason not: null
// or host pointer, misaligned, or past the end of ptr's allocation. (src/convenience.cpp)
cudaError_t validate_device_array(const void* ptr, std::uint64_t count, std::size_t elem_bytes,
                                  std::size_t alignment);

// indices[i] = i for i < n, on the stream (src/indices.cu).
cudaError_t fill_indices(std::uint32_t* indices, std::uint64_t n, cudaStream_t stream);
cudaError_t fill_indices(std::uint64_t* indices, std::uint64_t n, cudaStream_t stream);

// Convenience-layer helpers (src/convenience.cpp).
bool gpu_available();
void notice_cpu_fallback(const char* why);
// Throws gpusort::error naming `what` if ptr cannot be used as `count` device elements.
void check_device_array(const void* ptr, std::uint64_t count, std::size_t elem_bytes,
                        std::size_t alignment, const char* what);
[[noreturn]] void throw_error(cudaError_t code, const std::string& message);
std::string describe_call(const char* function, const options& opt, std::string_view key_type,
                          std::uint64_t n);

// Device memory of the convenience layer, from options::allocator or else cudaMallocAsync,
// given back on the stream. The core layer's queries ask for at least 1 byte, so an in-place
// algorithm still gets the non-null pointer it needs (a null one only asks).
class workspace {
 public:
  workspace(std::size_t bytes, const options& opt, const std::string& call)
      : allocator_(opt.allocator), stream_(opt.stream), bytes_(bytes) {
    if (bytes == 0) return;
    void* p = nullptr;
    cudaError_t e = cudaSuccess;
    if (allocator_.allocate) {
      p = allocator_.allocate(bytes, stream_, allocator_.context);
      if (!p) e = cudaErrorMemoryAllocation;
    } else {
      e = cudaMallocAsync(&p, bytes, stream_);
    }
    if (e != cudaSuccess) {
      cudaGetLastError();
      throw_error(e, call + ": cannot allocate " + std::to_string(bytes) +
                         " bytes of device workspace");
    }
    ptr_ = p;
  }
  ~workspace() {
    if (ptr_ == &none_) return;
    if (allocator_.allocate)
      allocator_.deallocate(ptr_, bytes_, stream_, allocator_.context);
    else
      cudaFreeAsync(ptr_, stream_);
  }
  workspace(const workspace&) = delete;
  workspace& operator=(const workspace&) = delete;
  void* get() const { return ptr_; }

 private:
  static inline char none_ = 0;
  void* ptr_ = &none_;
  device_allocator allocator_;
  cudaStream_t stream_;
  std::size_t bytes_;
};

// A typed array of the convenience layer's device memory (workspace's allocator).
template <class T>
class device_buffer {
 public:
  device_buffer(std::uint64_t count, const options& opt, const std::string& call)
      : memory_(sizeof(T) * count, opt, call) {}
  T* get() const { return static_cast<T*>(memory_.get()); }

 private:
  workspace memory_;
};

template <std::integral N>
constexpr bool negative(N n) {
  if constexpr (std::is_signed_v<N>) return n < 0;
  return false;
}

// The core layer's workspace queries never answer 0 bytes. With CUB's "query, allocate,
// call", the caller then always passes a non-null workspace, which is what sorts: a query
// that said 0 sent it back with nullptr, which only asked again and sorted nothing. In-place
// sorts ask for 1 byte and never touch it.
inline cudaError_t never_zero(const void* temp, std::size_t& temp_bytes, cudaError_t e) {
  if (!temp && e == cudaSuccess && temp_bytes == 0) temp_bytes = 1;
  return e;
}

template <class I>
concept index_type = std::is_same_v<I, std::uint32_t> || std::is_same_v<I, std::uint64_t>;

// Whether n positions fit in indices of type I (0 .. n - 1).
template <class I>
constexpr bool indices_fit(std::uint64_t n) {
  return sizeof(I) == 8 || n <= (std::uint64_t{1} << 32);
}

constexpr std::size_t align_workspace(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

// Runs a core call twice (query, then with a workspace from options::allocator) and waits.
template <class Call>
void run_with_workspace(const std::string& call, const options& opt, Call core) {
  std::size_t bytes = 0;
  cudaError_t e = core(nullptr, bytes);
  if (e != cudaSuccess) throw_error(e, call);
  workspace temp(bytes, opt, call);
  e = core(temp.get(), bytes);
  if (e == cudaSuccess) e = cudaStreamSynchronize(opt.stream);
  if (e != cudaSuccess) throw_error(e, call);
}

template <class I>
void check_index_count(const std::string& call, std::uint64_t n, std::uint64_t indices) {
  if (indices != n)
    throw_error(cudaErrorInvalidValue,
                call + ": " + std::to_string(indices) + " indices for " + std::to_string(n) + " keys");
  if (!indices_fit<I>(n))
    throw_error(cudaErrorInvalidValue,
                call + ": " + std::to_string(n) + " keys need 64-bit indices (std::uint64_t)");
}
}  // namespace detail

}  // namespace gpusort
