// gpusort's sort as an XLA FFI handler, so that it runs inside jax.jit (issue 73). gpusort.jax
// registers it with jax.ffi.register_ffi_target for the CUDA platform. XLA gives the handler
// its stream and a scratch allocator: the workspace comes from XLA's memory (or, where XLA has
// none to give, a stream-ordered pool of the module's), the work is ordered on XLA's stream, and
// nothing waits for the device.
//
// gpusort_sort: the keys (any shape, sorted along the last dimension: one row or rows of the
// last dimension's length) to `values`, and each key's position in its row to `indices`
// (int32 or int64, as JAX's x64 setting makes them). Attributes: descending, stable,
// nans_first (NaNs before every number; otherwise after, NumPy's).
// gpusort_top_k: the k = values' last dimension largest (or smallest) keys of each row of the
// last dimension, sorted, and their columns (torch.topk, jax.lax.top_k). Attribute: largest.
// gpusort_unique: the distinct keys of the flattened keys in order (every NaN one key), the
// first `size` of them to `values` (size: values' length), their counts and the number of
// distinct keys as uint64 in pairs of uint32 (int64 does not exist without jax_enable_x64).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

#include <cuda_bf16.h>  // __nv_bfloat16: BF16 keys
#include <cuda_fp16.h>  // __half: F16 keys
#include <cuda_runtime_api.h>

#include "gpusort/approx.hpp"
#include "gpusort/detail/core/cuda_resources.hpp"
#include "gpusort/operations.hpp"
#include "gpusort/sort.hpp"
#include "jax_ffi.hpp"
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

// f(K{}) for the key type of an XLA element type, as the library sorts it.
template <class F>
ffi::Error with_key_type(ffi::DataType type, const char* call, F&& f) {
  switch (type) {
    case ffi::DataType::F32: return f(float{});
    case ffi::DataType::F64: return f(double{});
    case ffi::DataType::S32: return f(std::int32_t{});
    case ffi::DataType::U32: return f(std::uint32_t{});
    case ffi::DataType::S64: return f(std::int64_t{});
    case ffi::DataType::U64: return f(std::uint64_t{});
    case ffi::DataType::S16: return f(std::int16_t{});
    case ffi::DataType::U16: return f(std::uint16_t{});
    case ffi::DataType::S8: return f(std::int8_t{});
    case ffi::DataType::U8: return f(std::uint8_t{});
    case ffi::DataType::PRED: return f(std::uint8_t{});  // bools: one byte, 0 or 1
    case ffi::DataType::F16: return f(__half{});
    case ffi::DataType::BF16: return f(__nv_bfloat16{});
    default: return ffi::Error::InvalidArgument(std::string(call) + ": keys of an unsupported type");
  }
}

// The failure, with where the runtime stood (its current device and how many it sees): a
// device error on XLA's threads is otherwise hard to place.
ffi::Error failed(const char* call, cudaError_t e, const char* what) {
  int device = -1, devices = -1;
  const cudaError_t asked_device = cudaGetDevice(&device);
  const cudaError_t counted = cudaGetDeviceCount(&devices);
  cudaGetLastError();
  return ffi::Error::Internal(
      std::string(call) + ": " + what + ": " + cudaGetErrorString(e) + " (current device " +
      (asked_device == cudaSuccess ? std::to_string(device) : cudaGetErrorString(asked_device)) +
      " of " + (counted == cudaSuccess ? std::to_string(devices) : cudaGetErrorString(counted)) +
      ")");
}

// The runtime's current device made the stream's for the handler's span, and put back after.
// XLA runs a handler on its own threads, whose current device need not be the stream's; CUB's
// queries (unique's run-length encoding) and the stream-ordered allocator ask the runtime.
class on_stream_device {
 public:
  explicit on_stream_device(cudaStream_t stream) {
    int device = -1;
    if (cudaStreamGetDevice(stream, &device) != cudaSuccess) {
      cudaGetLastError();
      return;
    }
    if (cudaGetDevice(&previous_) != cudaSuccess) {
      cudaGetLastError();
      previous_ = -1;
    }
    if (previous_ == device) return;
    entered_ = cudaSetDevice(device) == cudaSuccess;
    if (!entered_) cudaGetLastError();
  }
  ~on_stream_device() {
    if (entered_ && previous_ >= 0) cudaSetDevice(previous_);
  }
  on_stream_device(const on_stream_device&) = delete;
  on_stream_device& operator=(const on_stream_device&) = delete;

 private:
  int previous_ = -1;
  bool entered_ = false;
};

// Where a workspace comes from when XLA's scratch gives none: one stream-ordered pool per
// device that keeps what it has mapped between calls, as XLA's and PyTorch's allocators keep
// theirs (the default pool gives its memory back at every synchronization, so each call would
// map its workspace again). It holds at most the largest workspace a call has asked for.
cudaError_t workspace_pool(cudaStream_t stream, cudaMemPool_t& pool) {
  constexpr int max_devices = 64;
  static std::mutex made;
  static cudaMemPool_t pools[max_devices] = {};
  int device = -1;
  cudaError_t e = cudaStreamGetDevice(stream, &device);
  if (e != cudaSuccess) return e;
  if (device < 0 || device >= max_devices) return cudaErrorInvalidDevice;
  const std::lock_guard<std::mutex> lock(made);
  if (!pools[device]) {
    e = gpusort::detail::create_device_pool(device, UINT64_MAX, pools[device]);
    if (e != cudaSuccess) return e;
  }
  pool = pools[device];
  return cudaSuccess;
}

// What runs after a call and before its workspace goes back: nothing, or the caller's copies
// out of the `extra` bytes at the workspace's front.
struct nothing_after {
  cudaError_t operator()(void*) const { return cudaSuccess; }
};

// One library call with its workspace: the size query (run(nullptr, bytes)), the memory
// (XLA's scratch where it gives some; else workspace_pool's, given back on the same stream
// once the call and `after` are queued: JAX 0.8's GPU runtime refused every size),
// the call, then after(front), where front is the first of the `extra` bytes put before the
// library's workspace for the caller.
template <class Run, class After = nothing_after>
ffi::Error with_workspace(cudaStream_t stream, ffi::ScratchAllocator& scratch, const char* call,
                          std::size_t extra, Run&& run, After&& after = {}) {
  std::size_t bytes = 0;
  cudaError_t status = run(nullptr, bytes);
  if (status != cudaSuccess) return failed(call, status, "the workspace query");
  const std::size_t asked = std::max<std::size_t>(extra + bytes, 1);  // never a null workspace
  std::optional<void*> temp = scratch.Allocate(asked, 256);
  void* owned = nullptr;
  if (!temp.has_value()) {
    cudaMemPool_t pool = nullptr;
    if (workspace_pool(stream, pool) != cudaSuccess ||
        cudaMallocFromPoolAsync(&owned, asked, pool, stream) != cudaSuccess) {
      cudaGetLastError();
      return ffi::Error(ffi::ErrorCode::kResourceExhausted,
                        std::string(call) + ": no room for the workspace (" +
                            std::to_string(asked) + " bytes)");
    }
    temp = owned;
  }
  status = run(static_cast<char*>(*temp) + extra, bytes);
  const char* what = "the call";
  if (status == cudaSuccess) {
    status = after(*temp);
    what = "copying the results";
  }
  if (owned) {
    const cudaError_t freed = cudaFreeAsync(owned, stream);
    if (status == cudaSuccess) status = freed;
  }
  return status == cudaSuccess ? ffi::Error::Success() : failed(call, status, what);
}

// Room for n items of `bytes` each, rounded up to 256 bytes (each part of a workspace aligned).
std::size_t aligned_bytes(std::uint64_t n, std::size_t bytes) { return (n * bytes + 255) / 256 * 256; }

// The index type of a result: int32 or int64 (JAX's x64 setting), or an error.
std::optional<ffi::Error> refuse_index_type(const char* call, ffi::DataType type,
                                            std::uint64_t row_length) {
  if (type != ffi::DataType::S32 && type != ffi::DataType::S64)
    return ffi::Error::InvalidArgument(std::string(call) + ": indices must be int32 or int64");
  // int32 holds the positions 0 .. 2^31 - 1: rows of up to 2^31 keys.
  if (type == ffi::DataType::S32 && row_length > (std::uint64_t{1} << 31))
    return ffi::Error::InvalidArgument(std::string(call) + ": rows of more than 2^31 keys need "
                                       "int64 indices (jax_enable_x64)");
  return std::nullopt;
}

std::uint64_t row_length_of(const ffi::AnyBuffer& buffer) {
  const auto dims = buffer.dimensions();
  return dims.size() == 0 ? 1 : static_cast<std::uint64_t>(dims.back());
}

ffi::Error sort_rows(cudaStream_t stream, ffi::ScratchAllocator scratch, ffi::AnyBuffer keys,
                     ffi::Result<ffi::AnyBuffer> values, ffi::Result<ffi::AnyBuffer> indices,
                     bool descending, bool stable, bool nans_first) {
  constexpr const char* call = "gpusort.jax.sort";
  const on_stream_device on_device(stream);
  const std::uint64_t n = keys.element_count();
  const std::uint64_t row_len = row_length_of(keys);
  const std::uint64_t rows = row_len == 0 ? 0 : n / row_len;
  if (n == 0) return ffi::Error::Success();
  gpusort::options opt;
  opt.direction = descending ? gpusort::order::descending : gpusort::order::ascending;
  opt.nans = nans_first ? gpusort::nan_order::first : gpusort::nan_order::last;
  opt.stable = stable;
  opt.stream = stream;
  const ffi::DataType index_type = indices->element_type();
  if (auto refused = refuse_index_type(call, index_type, row_len)) return *refused;  // before any work
  return with_key_type(keys.element_type(), call, [&](auto key) -> ffi::Error {
    using K = decltype(key);
    // The sort is in place: the keys go to `values` first, on the same stream.
    const cudaError_t e = cudaMemcpyAsync(values->untyped_data(), keys.untyped_data(),
                                          keys.size_bytes(), cudaMemcpyDeviceToDevice, stream);
    if (e != cudaSuccess) return failed(call, e, "copying the keys");
    K* k = static_cast<K*>(values->untyped_data());
    const auto sort = [&](auto* index) {
      return with_workspace(stream, scratch, call, 0, [&](void* temp, std::size_t& bytes) {
        if (rows <= 1) return gpusort::sort_with_indices(temp, bytes, k, index, n, opt);
        return gpusort::sort_batched_with_indices(temp, bytes, k, index, rows, row_len, opt);
      });
    };
    // The library's indices are unsigned; int32 and int64 hold the same positions.
    if (index_type == ffi::DataType::S32)
      return sort(static_cast<std::uint32_t*>(indices->untyped_data()));
    return sort(static_cast<std::uint64_t*>(indices->untyped_data()));
  });
}

ffi::Error top_k_rows(cudaStream_t stream, ffi::ScratchAllocator scratch, ffi::AnyBuffer keys,
                      ffi::Result<ffi::AnyBuffer> values, ffi::Result<ffi::AnyBuffer> indices,
                      bool largest) {
  constexpr const char* call = "gpusort.jax.topk";
  const on_stream_device on_device(stream);
  const std::uint64_t n = keys.element_count();
  const std::uint64_t row_len = row_length_of(keys);
  const std::uint64_t rows = row_len == 0 ? 0 : n / row_len;
  const std::uint64_t k = row_length_of(*values);
  if (k > row_len)
    return ffi::Error::InvalidArgument(std::string(call) + ": k is larger than a row");
  if (rows == 0 || k == 0) return ffi::Error::Success();
  gpusort::options opt;
  opt.direction = largest ? gpusort::order::descending : gpusort::order::ascending;
  opt.stream = stream;  // NaNs the largest keys, as torch.topk takes them
  const ffi::DataType index_type = indices->element_type();
  if (auto refused = refuse_index_type(call, index_type, row_len)) return *refused;
  return with_key_type(keys.element_type(), call, [&](auto key) -> ffi::Error {
    using K = decltype(key);
    const K* in = static_cast<const K*>(keys.untyped_data());
    K* out = static_cast<K*>(values->untyped_data());
    const auto select = [&](auto* index) {
      return with_workspace(stream, scratch, call, 0, [&](void* temp, std::size_t& bytes) {
        return gpusort::top_k_rows_indices(temp, bytes, in, rows, row_len, out, index, k, opt);
      });
    };
    if (index_type == ffi::DataType::S32)
      return select(static_cast<std::int32_t*>(indices->untyped_data()));
    return select(static_cast<std::int64_t*>(indices->untyped_data()));
  });
}

ffi::Error unique_keys(cudaStream_t stream, ffi::ScratchAllocator scratch, ffi::AnyBuffer keys,
                       ffi::Result<ffi::AnyBuffer> values, ffi::Result<ffi::AnyBuffer> counts,
                       ffi::Result<ffi::AnyBuffer> found) {
  constexpr const char* call = "gpusort.jax.unique";
  const on_stream_device on_device(stream);
  const std::uint64_t n = keys.element_count();
  const std::uint64_t size = values->element_count();
  // counts: size pairs of uint32 (each pair a uint64); found: one pair.
  if (counts->size_bytes() != size * 8 || found->size_bytes() != 8)
    return ffi::Error::InvalidArgument(std::string(call) + ": counts must hold `size` uint64, "
                                       "found one");
  if (n == 0) {
    const cudaError_t e = cudaMemsetAsync(found->untyped_data(), 0, 8, stream);
    return e == cudaSuccess ? ffi::Error::Success() : failed(call, e, "clearing the count");
  }
  const auto run = [&](auto key) -> ffi::Error {
    using K = decltype(key);
    // Room for every distinct key and its count before the library's own workspace; the
    // first `size` of each then go to the results.
    const std::size_t keys_room = aligned_bytes(n, sizeof(K));
    const std::size_t counts_room = aligned_bytes(n, 8);
    // The first `size` distinct keys and counts go to the results before the workspace goes.
    const auto copy_results = [&](void* front) {
      const std::uint64_t kept = std::min(size, n);
      cudaError_t e = cudaMemcpyAsync(values->untyped_data(), front, kept * sizeof(K),
                                      cudaMemcpyDeviceToDevice, stream);
      if (e == cudaSuccess)
        e = cudaMemcpyAsync(counts->untyped_data(), static_cast<char*>(front) + keys_room,
                            kept * 8, cudaMemcpyDeviceToDevice, stream);
      return e;
    };
    return with_workspace(
        stream, scratch, call, keys_room + counts_room,
        [&](void* temp, std::size_t& bytes) {
          // The query comes first (temp null), with the front not yet known.
          char* base = temp ? static_cast<char*>(temp) - keys_room - counts_room : nullptr;
          return gpusort::unique_keys(temp, bytes, static_cast<const K*>(keys.untyped_data()), n,
                                      reinterpret_cast<K*>(base),
                                      reinterpret_cast<std::uint64_t*>(base + keys_room),
                                      static_cast<std::uint64_t*>(found->untyped_data()),
                                      gpusort::options{.stream = stream});
        },
        copy_results);
  };
  // The types gpusort::unique_keys takes (the rest go to jnp.unique in gpusort/jax.py).
  return with_key_type(keys.element_type(), call, [&](auto key) -> ffi::Error {
    using K = decltype(key);
    if constexpr (sizeof(K) == 4 || sizeof(K) == 8)  // f32, f64, i32, u32, i64, u64
      return run(key);
    else
      return ffi::Error::InvalidArgument(std::string(call) + ": keys of an unsupported type");
  });
}

}  // namespace

namespace {
// What every handler binds first: XLA's stream, its scratch allocator, the keys.
auto keys_on_xla_stream() {
  return ffi::Ffi::Bind()
      .Ctx<ffi::PlatformStream<cudaStream_t>>()
      .Ctx<ffi::ScratchAllocator>()
      .Arg<ffi::AnyBuffer>();
}
}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(gpusort_jax_sort, sort_rows,
                              keys_on_xla_stream()
                                  .Ret<ffi::AnyBuffer>()  // values
                                  .Ret<ffi::AnyBuffer>()  // indices
                                  .Attr<bool>("descending")
                                  .Attr<bool>("stable")
                                  .Attr<bool>("nans_first"));

XLA_FFI_DEFINE_HANDLER_SYMBOL(gpusort_jax_top_k, top_k_rows,
                              keys_on_xla_stream()
                                  .Ret<ffi::AnyBuffer>()  // values
                                  .Ret<ffi::AnyBuffer>()  // indices
                                  .Attr<bool>("largest"));

XLA_FFI_DEFINE_HANDLER_SYMBOL(gpusort_jax_unique, unique_keys,
                              keys_on_xla_stream()
                                  .Ret<ffi::AnyBuffer>()   // values
                                  .Ret<ffi::AnyBuffer>()   // counts
                                  .Ret<ffi::AnyBuffer>());  // how many distinct keys

std::vector<std::pair<const char*, void*>> gpusort::python::jax_handlers() {
  return {{"gpusort_sort", reinterpret_cast<void*>(&gpusort_jax_sort)},
          {"gpusort_top_k", reinterpret_cast<void*>(&gpusort_jax_top_k)},
          {"gpusort_unique", reinterpret_cast<void*>(&gpusort_jax_unique)}};
}
