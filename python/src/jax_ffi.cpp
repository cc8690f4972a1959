// gpusort's sort as an XLA FFI handler, so that it runs inside jax.jit (issue 73). gpusort.jax
// registers it with jax.ffi.register_ffi_target for the CUDA platform. XLA gives the handler
// its stream and a scratch allocator: the workspace comes from XLA's memory (or, where XLA has
// none to give, CUDA's stream-ordered allocator), the work is ordered on XLA's stream, and
// nothing waits for the device.
//
// gpusort_sort: the keys (any shape, sorted along the last dimension: one row or rows of the
// last dimension's length) to `values`, and each key's position in its row to `indices`
// (int32 or int64, as JAX's x64 setting makes them). Attributes: descending, stable,
// nans_first (NaNs before every number; otherwise after, NumPy's).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include <cuda_bf16.h>  // __nv_bfloat16: BF16 keys
#include <cuda_fp16.h>  // __half: F16 keys
#include <cuda_runtime_api.h>

#include "gpusort/sort.hpp"
#include "jax_ffi.hpp"
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

// f(K{}) for the key type of an XLA element type, as the library sorts it.
template <class F>
ffi::Error with_key_type(ffi::DataType type, F&& f) {
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
    default: return ffi::Error::InvalidArgument("gpusort.jax.sort: keys of an unsupported type");
  }
}

ffi::Error failed(cudaError_t e, const char* what) {
  return ffi::Error::Internal(std::string("gpusort.jax.sort: ") + what + ": " +
                              cudaGetErrorString(e));
}

ffi::Error sort_rows(cudaStream_t stream, ffi::ScratchAllocator scratch, ffi::AnyBuffer keys,
                     ffi::Result<ffi::AnyBuffer> values, ffi::Result<ffi::AnyBuffer> indices,
                     bool descending, bool stable, bool nans_first) {
  const auto dims = keys.dimensions();
  const std::uint64_t n = keys.element_count();
  const std::uint64_t row_len = dims.size() == 0 ? 1 : static_cast<std::uint64_t>(dims.back());
  const std::uint64_t rows = row_len == 0 ? 0 : n / row_len;
  if (n == 0) return ffi::Error::Success();
  gpusort::options opt;
  opt.direction = descending ? gpusort::order::descending : gpusort::order::ascending;
  opt.nans = nans_first ? gpusort::nan_order::first : gpusort::nan_order::last;
  opt.stable = stable;
  opt.stream = stream;
  // These refusals come before any work goes on the stream.
  const ffi::DataType index_type = indices->element_type();
  if (index_type != ffi::DataType::S32 && index_type != ffi::DataType::S64)
    return ffi::Error::InvalidArgument("gpusort.jax.sort: indices must be int32 or int64");
  // int32 holds the positions 0 .. 2^31 - 1: rows of up to 2^31 keys.
  if (index_type == ffi::DataType::S32 && row_len > (std::uint64_t{1} << 31))
    return ffi::Error::InvalidArgument("gpusort.jax.sort: rows of more than 2^31 keys need "
                                       "int64 indices (jax_enable_x64)");
  return with_key_type(keys.element_type(), [&](auto key) -> ffi::Error {
    using K = decltype(key);
    // The sort is in place: the keys go to `values` first, on the same stream.
    const cudaError_t e = cudaMemcpyAsync(values->untyped_data(), keys.untyped_data(),
                                          keys.size_bytes(), cudaMemcpyDeviceToDevice, stream);
    if (e != cudaSuccess) return failed(e, "copying the keys");
    K* k = static_cast<K*>(values->untyped_data());
    const auto sort = [&](auto* index) -> ffi::Error {
      const auto call = [&](void* temp, std::size_t& bytes) {
        if (rows <= 1) return gpusort::sort_with_indices(temp, bytes, k, index, n, opt);
        return gpusort::sort_batched_with_indices(temp, bytes, k, index, rows, row_len, opt);
      };
      std::size_t bytes = 0;
      cudaError_t status = call(nullptr, bytes);
      if (status != cudaSuccess) return failed(status, "the workspace query");
      // XLA's scratch memory where it gives some; else CUDA's stream-ordered allocator, freed
      // on the same stream once the sort is queued (JAX 0.8's GPU runtime refused every size).
      const std::size_t asked = std::max<std::size_t>(bytes, 1);  // a workspace is never null
      std::optional<void*> temp = scratch.Allocate(asked, 256);
      void* owned = nullptr;
      if (!temp.has_value()) {
        if (cudaMallocAsync(&owned, asked, stream) != cudaSuccess) {
          cudaGetLastError();
          return ffi::Error(ffi::ErrorCode::kResourceExhausted,
                            "gpusort.jax.sort: no room for the workspace (" +
                                std::to_string(bytes) + " bytes)");
        }
        temp = owned;
      }
      status = call(*temp, bytes);
      if (owned) {
        const cudaError_t freed = cudaFreeAsync(owned, stream);
        if (status == cudaSuccess) status = freed;
      }
      return status == cudaSuccess ? ffi::Error::Success() : failed(status, "the sort");
    };
    // The library's indices are unsigned; int32 and int64 hold the same positions.
    if (index_type == ffi::DataType::S32)
      return sort(static_cast<std::uint32_t*>(indices->untyped_data()));
    return sort(static_cast<std::uint64_t*>(indices->untyped_data()));
  });
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(gpusort_jax_sort, sort_rows,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .Ctx<ffi::ScratchAllocator>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Attr<bool>("descending")
                                  .Attr<bool>("stable")
                                  .Attr<bool>("nans_first"));

void* gpusort::python::jax_sort_handler() { return reinterpret_cast<void*>(&gpusort_jax_sort); }
