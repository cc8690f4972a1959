// _gpusort: the thin layer between the Python package (python/gpusort) and the library.
//
// Device functions take arrays as DLPack capsules or __cuda_array_interface__ dicts that
// the package made on the caller's stream, and enqueue the library's core calls on that
// stream: no copies, no allocation here (workspace comes from `alloc`, a Python callable
// that allocates with the caller's own array library), no synchronization. Host functions
// take NumPy arrays and use the library's host overloads (GPU when present, else the CPU).
// The package checks arguments first and raises TypeError/ValueError naming them; the
// checks here are the last line, so that nothing wrong reaches the library.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include <cuda_runtime_api.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "arrays.hpp"
#include "dispatch.hpp"
#include "gpusort/approx.hpp"
#include "gpusort/detail/core/half_keys.hpp"
#include "gpusort/external.hpp"
#include "gpusort/lines.hpp"
#include "gpusort/operations.hpp"
#include "gpusort/segmented.hpp"
#include "gpusort/sort.hpp"
#ifdef GPUSORT_JAX_FFI
#include "jax_ffi.hpp"
#endif

#ifndef GPUSORT_VERSION  // set by python/CMakeLists.txt from the project's version
#define GPUSORT_VERSION "unknown"
#endif

namespace py = pybind11;
using namespace gpusort_python;
using gpusort::detail::no_value;

namespace {

// ---- dispatch over the library's value sizes (key types: dispatch.hpp) --------------------

// Values are opaque words of their size: 4 or 8 bytes (0: no values).
template <class F>
decltype(auto) with_value_size(int bytes, const char* what, F&& f) {
  switch (bytes) {
    case 0: return f(no_value{});
    case 4: return f(std::uint32_t{});
    case 8: return f(std::uint64_t{});
    default: break;
  }
  throw py::type_error(std::string(what) + ": values must have 4 or 8 bytes per element");
}

// nans: where float NaNs go, "last" (NumPy's default) or "first", in both orders.
gpusort::options make_options(bool descending, const std::string& algorithm,
                              std::uintptr_t stream, const std::string& nans = "last") {
  gpusort::options opt;
  if (!gpusort::parse_method(algorithm, opt))
    throw py::value_error("algorithm: unknown algorithm '" + algorithm + "'");
  opt.direction = descending ? gpusort::order::descending : gpusort::order::ascending;
  if (nans != "last" && nans != "first")
    throw py::value_error("nans: must be 'last' or 'first', got '" + nans + "'");
  opt.nans = nans == "first" ? gpusort::nan_order::first : gpusort::nan_order::last;
  opt.stream = reinterpret_cast<cudaStream_t>(stream);
  return opt;
}

std::string describe(const gpusort::options& opt, element key, int value_bytes) {
  std::string s = "algorithm '" + std::string(gpusort::method_name(opt)) + "' with " +
                  element_name(key) + " keys";
  if (value_bytes) s += " and " + std::to_string(value_bytes) + "-byte values";
  return s;
}

// A failed core call: unsupported combinations are the caller's choice (ValueError); the
// rest are CUDA failures (RuntimeError through gpusort::error).
void check(cudaError_t e, const std::string& call) {
  if (e == cudaSuccess) return;
  cudaGetLastError();
  if (e == cudaErrorNotSupported) throw py::value_error(call + " is not supported");
  throw gpusort::error(e, call);
}

// ---- device arrays ----------------------------------------------------------------------

// The device a CUDA array interface's pointer lives on (the interface does not say).
int device_of_pointer(const void* data) {
  cudaPointerAttributes attr{};
  check(cudaPointerGetAttributes(&attr, data), "cudaPointerGetAttributes");
  return attr.device;
}

// Runs on the arrays' device (refusing arrays of different devices), ordered after the
// producers' streams of CUDA array interface inputs (DLPack producers already did that in
// __dlpack__(stream=...)); finish() orders those streams after the work in turn. The device
// in use before is restored, also when the constructor throws.
class device_scope {
 public:
  device_scope(const std::vector<const array_view*>& arrays, cudaStream_t stream)
      : stream_(stream) {
    check(cudaGetDevice(&previous_), "cudaGetDevice");
    int device = -1;
    for (const array_view* a : arrays) {
      if (!a || !a->on_device) continue;
      const int here = a->device >= 0 ? a->device : device_of_pointer(a->data);
      if (device >= 0 && device != here)
        throw py::value_error("arrays on different devices (cuda:" + std::to_string(device) +
                              " and cuda:" + std::to_string(here) + ")");
      device = here;
    }
    if (device >= 0 && device != previous_) check(cudaSetDevice(device), "cudaSetDevice");
    try {
      for (const array_view* a : arrays) {
        if (!a || a->producer_stream < 0) continue;
        const cudaStream_t producer = producer_of(*a);
        if (producer == stream) continue;
        producers_.push_back(producer);
        order(producer, stream, "waiting for the producer's stream");
      }
    } catch (...) {
      restore();
      throw;
    }
  }
  // Work the producers enqueue next comes after the sort (their arrays' new contents).
  void finish() {
    for (const cudaStream_t producer : producers_)
      order(stream_, producer, "ordering the producer's stream after the sort");
  }
  ~device_scope() { restore(); }
  device_scope(const device_scope&) = delete;
  device_scope& operator=(const device_scope&) = delete;

 private:
  static cudaStream_t producer_of(const array_view& a) {
    if (a.producer_stream == 1) return cudaStreamLegacy;
    if (a.producer_stream == 2) return cudaStreamPerThread;
    return reinterpret_cast<cudaStream_t>(a.producer_stream);
  }
  // `later` waits for what `earlier` has enqueued so far.
  static void order(cudaStream_t earlier, cudaStream_t later, const char* what) {
    cudaEvent_t ready;
    check(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming), "cudaEventCreate");
    cudaError_t e = cudaEventRecord(ready, earlier);
    if (e == cudaSuccess) e = cudaStreamWaitEvent(later, ready, 0);
    cudaEventDestroy(ready);
    check(e, what);
  }
  void restore() {
    int now = -1;
    if (cudaGetDevice(&now) == cudaSuccess && now != previous_) cudaSetDevice(previous_);
  }

  int previous_ = 0;
  cudaStream_t stream_;
  std::vector<cudaStream_t> producers_;
};

array_view device_view(const py::handle& obj, const char* what) {
  array_view v = view_of(obj, what);
  if (!v.on_device)
    throw py::type_error(std::string(what) + ": expected an array in CUDA device memory");
  if (!v.contiguous)
    throw py::value_error(std::string(what) + ": must be contiguous (C order)");
  return v;
}

// A device array the call writes into: refused if its producer marked it read-only.
array_view writable_device_view(const py::handle& obj, const char* what) {
  array_view v = device_view(obj, what);
  if (v.read_only)
    throw py::value_error(std::string(what) + ": is read-only (its producer forbids writes)");
  return v;
}

void expect_size(const array_view& v, std::uint64_t n, const char* what) {
  if (v.size() != n)
    throw py::value_error(std::string(what) + ": has " + std::to_string(v.size()) +
                          " elements, expected " + std::to_string(n));
}

// Whether work enqueued on `stream` is being recorded into a CUDA graph.
bool capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  check(cudaStreamIsCapturing(stream, &status), "cudaStreamIsCapturing");
  return status != cudaStreamCaptureStatusNone;
}

// Refuses, before anything is enqueued, an algorithm that would break a graph capture.
void check_capturable(const gpusort::options& opt, const std::string& what) {
  if (gpusort::traits_of(opt.algo).capturable || !capturing(opt.stream)) return;
  std::string ok;
  for (const auto& t : gpusort::algorithm_table)
    if (t.capturable) ok += (ok.empty() ? "" : ", ") + std::string(gpusort::to_string(t.algo));
  throw gpusort::error(cudaErrorStreamCaptureUnsupported,
                       what + " cannot run inside a CUDA graph capture; these can: " + ok);
}

// Workspace from CUDA's stream-ordered allocator, for arrays whose library gpusort cannot ask
// (alloc is None); given back on the same stream once the work is enqueued.
class stream_workspace {
 public:
  stream_workspace(std::size_t bytes, cudaStream_t stream) : stream_(stream) {
    check(cudaMallocAsync(&data_, bytes, stream), "cudaMallocAsync (workspace)");
  }
  ~stream_workspace() { cudaFreeAsync(data_, stream_); }
  stream_workspace(const stream_workspace&) = delete;
  stream_workspace& operator=(const stream_workspace&) = delete;
  void* data() const { return data_; }

 private:
  void* data_ = nullptr;
  cudaStream_t stream_;
};

// Queries the workspace, allocates it through the caller's library (alloc; None: CUDA's
// stream-ordered allocator), runs `call` twice.
template <class Call>
void run_with_workspace(const py::object& alloc, const gpusort::options& opt,
                        const std::string& what, Call call) {
  check_capturable(opt, what);
  std::size_t bytes = 0;
  check(call(nullptr, bytes), what);  // never 0: in-place sorts ask for a byte they never touch
  if (alloc.is_none()) {
    const stream_workspace temp(bytes, opt.stream);
    return check(call(temp.data(), bytes), what);
  }
  const py::object holder = alloc(bytes);  // referenced until the work is enqueued
  check(call(device_view(holder, "workspace").data, bytes), what);
}

// Sorts keys (and values) in place: one array (rows <= 1) or rows of row_len. make_indices:
// the values are int32 or int64 indices that the sort writes (each key's position in its
// row, made by the sort as it loads the keys), never read.
void sort_device(py::object keys_obj, py::object values_obj, std::uint64_t rows,
                 std::uint64_t row_len, bool descending, const std::string& algorithm,
                 std::uintptr_t stream, py::object alloc, const std::string& nans,
                 bool stable, bool make_indices) {
  gpusort::options opt = make_options(descending, algorithm, stream, nans);
  opt.stable = stable;
  const array_view keys = writable_device_view(keys_obj, "x");
  const bool has_values = !values_obj.is_none();
  array_view values;
  if (has_values) values = writable_device_view(values_obj, "values");
  const std::uint64_t n = rows * row_len;
  expect_size(keys, n, "x");
  if (has_values) expect_size(values, n, "values");
  device_scope scope({&keys, has_values ? &values : nullptr}, opt.stream);
  const int value_bytes = has_values ? values.item_bytes : 0;
  const std::string what = "gpusort.sort: " + describe(opt, keys.type, value_bytes);
  with_sort_key_type(keys.type, "x", [&](auto key) {
    using K = decltype(key);
    K* k = static_cast<K*>(keys.data);
    with_value_size(value_bytes, "values", [&](auto value) {
      using V = decltype(value);
      run_with_workspace(alloc, opt, what, [&](void* temp, std::size_t& bytes) {
        if constexpr (std::is_same_v<V, no_value>) {
          if (rows <= 1) return gpusort::sort_keys(temp, bytes, k, n, opt);
          return gpusort::sort_batched_keys(temp, bytes, k, rows, row_len, opt);
        } else {
          V* v = static_cast<V*>(values.data);
          if (make_indices) {
            if (rows <= 1) return gpusort::sort_with_indices(temp, bytes, k, v, n, opt);
            return gpusort::sort_batched_with_indices(temp, bytes, k, v, rows, row_len, opt);
          }
          if (rows <= 1) return gpusort::sort_pairs(temp, bytes, k, v, n, opt);
          return gpusort::sort_batched_pairs(temp, bytes, k, v, rows, row_len, opt);
        }
      });
    });
  });
  scope.finish();
}

// Segment i is [offsets[i], offsets[i + 1]). The library's checked path: offsets out of
// range are rejected before any key moves, which means waiting for the stream.
void sort_segmented_device(py::object keys_obj, py::object values_obj, py::object offsets_obj,
                           bool descending, const std::string& algorithm,
                           std::uintptr_t stream, const std::string& nans) {
  const gpusort::options opt = make_options(descending, algorithm, stream, nans);
  const array_view keys = writable_device_view(keys_obj, "x");
  const array_view offsets = device_view(offsets_obj, "offsets");
  const bool has_values = !values_obj.is_none();
  array_view values;
  if (has_values) values = writable_device_view(values_obj, "values");
  const std::uint64_t n = keys.size();
  if (has_values) expect_size(values, n, "values");
  if (offsets.type != element::i32 && offsets.type != element::i64)
    throw py::type_error("offsets: must be int32 or int64");
  device_scope scope({&keys, &offsets, has_values ? &values : nullptr}, opt.stream);
  if (capturing(opt.stream))
    throw gpusort::error(cudaErrorStreamCaptureUnsupported,
                         "gpusort.sort_segmented waits for the device to check the offsets and "
                         "cannot run inside a CUDA graph capture");
  const int value_bytes = has_values ? values.item_bytes : 0;
  with_sort_key_type(keys.type, "x", [&](auto key) {
    using K = decltype(key);
    std::span<K> k(static_cast<K*>(keys.data), n);
    with_value_size(value_bytes, "values", [&](auto value) {
      using V = decltype(value);
      auto sort_with = [&](auto offset) {
        using O = decltype(offset);
        std::span<const O> o(static_cast<const O*>(offsets.data), offsets.size());
        if constexpr (std::is_same_v<V, no_value>)
          gpusort::sort_segmented(k, o, opt);
        else
          gpusort::sort_segmented(k, std::span<V>(static_cast<V*>(values.data), n), o, opt);
      };
      try {
        if (offsets.type == element::i32)
          sort_with(std::int32_t{});
        else
          sort_with(std::int64_t{});
      } catch (const gpusort::error& e) {
        // The checked path names offsets that reach past the keys or go backwards.
        if (e.code() == cudaErrorInvalidValue) throw py::value_error(std::string("offsets: ") + e.what());
        throw;
      }
    });
  });
  scope.finish();
}

// The length of each of `rows` rows of n keys, checked, and k checked against it.
std::uint64_t topk_row_length(std::uint64_t n, std::uint64_t rows, std::uint64_t k) {
  if (rows == 0 || n % rows != 0)
    throw py::value_error("rows: " + std::to_string(n) + " keys are not " + std::to_string(rows) +
                          " rows");
  if (k > n / rows)
    throw py::value_error("k: " + std::to_string(k) + " is more than a row's " +
                          std::to_string(n / rows) + " keys");
  return n / rows;
}

// The k smallest (descending: largest) keys of each of `rows` rows, sorted, with their
// values, into out_* (rows x k).
void topk_device(py::object keys_obj, py::object values_obj, py::object out_keys_obj,
                 py::object out_values_obj, std::uint64_t k, bool descending,
                 std::uintptr_t stream, py::object alloc, std::uint64_t rows) {
  const gpusort::options opt = make_options(descending, "automatic", stream);
  const array_view keys = device_view(keys_obj, "x");
  const array_view out_keys = device_view(out_keys_obj, "out_keys");
  const bool has_values = !values_obj.is_none();
  array_view values, out_values;
  if (has_values) {
    values = device_view(values_obj, "values");
    out_values = device_view(out_values_obj, "out_values");
  }
  const std::uint64_t n = keys.size();
  const std::uint64_t row_length = topk_row_length(n, rows, k);
  expect_size(out_keys, rows * k, "out_keys");
  if (out_keys.type != keys.type) throw py::type_error("out_keys: must have the keys' type");
  if (has_values) {
    expect_size(values, n, "values");
    expect_size(out_values, rows * k, "out_values");
    if (out_values.item_bytes != values.item_bytes)
      throw py::type_error("out_values: must have the values' type");
  }
  device_scope scope({&keys, &out_keys, has_values ? &values : nullptr,
                      has_values ? &out_values : nullptr},
                     opt.stream);
  const int value_bytes = has_values ? values.item_bytes : 0;
  const std::string what = "gpusort.topk: " + describe(opt, keys.type, value_bytes);
  with_sort_key_type(keys.type, "x", [&](auto key) {
    using K = decltype(key);
    with_value_size(value_bytes, "values", [&](auto value) {
      using V = decltype(value);
      run_with_workspace(alloc, opt, what, [&](void* temp, std::size_t& bytes) {
        const K* in = static_cast<const K*>(keys.data);
        K* out = static_cast<K*>(out_keys.data);
        if constexpr (std::is_same_v<V, no_value>)
          return rows == 1 ? gpusort::top_k_keys(temp, bytes, in, n, out, k, opt)
                           : gpusort::top_k_rows_keys(temp, bytes, in, rows, row_length, out, k, opt);
        else if (rows == 1)
          return gpusort::top_k_pairs(temp, bytes, in, static_cast<const V*>(values.data), n,
                                      out, static_cast<V*>(out_values.data), k, opt);
        else
          return gpusort::top_k_rows_pairs(temp, bytes, in, static_cast<const V*>(values.data),
                                           rows, row_length, out, static_cast<V*>(out_values.data),
                                           k, opt);
      });
    });
  });
  scope.finish();
}

// Runs call(temp, bytes, in, out), a library call from keys (in) to out_keys (out, which must
// have the keys' type) that also writes `extra`, for the keys' type: on the arrays' device, in
// a workspace from alloc, `what` naming it in errors.
template <bool narrow_keys, class Call>
void run_keys_to_keys(const array_view& keys, const array_view& out_keys, const array_view& extra,
                      const gpusort::options& opt, const py::object& alloc,
                      const std::string& what, const Call& call) {
  if (out_keys.type != keys.type) throw py::type_error("out_keys: must have the keys' type");
  device_scope scope({&keys, &out_keys, &extra}, opt.stream);
  auto run = [&](auto key) {
    using K = decltype(key);
    run_with_workspace(alloc, opt, what, [&](void* temp, std::size_t& bytes) {
      return call(temp, bytes, static_cast<const K*>(keys.data), static_cast<K*>(out_keys.data));
    });
  };
  if constexpr (narrow_keys)
    with_sort_key_type(keys.type, "x", run);
  else
    with_key_type(keys.type, "x", run);
  scope.finish();
}

// The k smallest (descending: largest) keys of one row, sorted (in_order false: in no order,
// selected without their sort), and their positions as 8-byte integers (torch.topk's indices),
// generated by the library: no index array to fill first.
void topk_indices_device(py::object keys_obj, py::object out_keys_obj, py::object out_indices_obj,
                         std::uint64_t k, bool descending, std::uintptr_t stream,
                         py::object alloc, bool in_order) {
  const gpusort::options opt = make_options(descending, "automatic", stream);
  const array_view keys = device_view(keys_obj, "x");
  const array_view out_keys = device_view(out_keys_obj, "out_keys");
  const array_view out_indices = device_view(out_indices_obj, "out_indices");
  const std::uint64_t n = keys.size();
  if (k > n)
    throw py::value_error("k: " + std::to_string(k) + " is more than the " + std::to_string(n) +
                          " keys");
  expect_size(out_keys, k, "out_keys");
  expect_size(out_indices, k, "out_indices");
  if (out_indices.item_bytes != 8) throw py::type_error("out_indices: must be int64");
  run_keys_to_keys<true>(keys, out_keys, out_indices, opt, alloc,
                         "gpusort.topk: " + describe(opt, keys.type, 8),
                         [&](void* temp, std::size_t& bytes, const auto* in, auto* out) {
                           auto* indices = static_cast<std::int64_t*>(out_indices.data);
                           return in_order ? gpusort::top_k_indices(temp, bytes, in, n, out,
                                                                    indices, k, opt)
                                           : gpusort::select_k_indices(temp, bytes, in, n, out,
                                                                       indices, k, opt);
                         });
}

// The distinct keys of one array and how often each occurs (gpusort::unique_keys, the six
// built-in key types): out_keys and out_counts (int64) hold room for every key, num_unique
// (one int64) gets their number.
void unique_device(py::object keys_obj, py::object out_keys_obj, py::object out_counts_obj,
                   py::object num_unique_obj, std::uintptr_t stream, py::object alloc) {
  const gpusort::options opt = make_options(false, "automatic", stream);
  const array_view keys = device_view(keys_obj, "x");
  const array_view out_keys = device_view(out_keys_obj, "out_keys");
  const array_view out_counts = device_view(out_counts_obj, "out_counts");
  const array_view num_unique = device_view(num_unique_obj, "num_unique");
  const std::uint64_t n = keys.size();
  expect_size(out_keys, n, "out_keys");
  expect_size(out_counts, n, "out_counts");
  expect_size(num_unique, 1, "num_unique");
  if (out_counts.item_bytes != 8 || num_unique.item_bytes != 8)
    throw py::type_error("out_counts, num_unique: must be int64");
  run_keys_to_keys<false>(keys, out_keys, out_counts, opt, alloc,
                          "gpusort.unique: " + describe(opt, keys.type, 8),
                          [&](void* temp, std::size_t& bytes, const auto* in, auto* out) {
                            return gpusort::unique_keys(
                                temp, bytes, in, n, out,
                                static_cast<std::uint64_t*>(out_counts.data),
                                static_cast<std::uint64_t*>(num_unique.data), opt);
                          });
}

// gpusort.sample_top_k_top_p's draw (gpusort::sample_candidates): one token of each row of k
// candidates, values (float32, or the logits' float16 or bfloat16) most likely first with
// their int64 token ids, by the row's float32 uniform, into int64 tokens; device arrays on
// `stream`.
void sample_candidates_device(py::object values_obj, py::object indices_obj, py::object uniforms_obj,
                              py::object tokens_obj, std::uint64_t k, float p, float temperature,
                              std::uintptr_t stream_handle) {
  const array_view values = device_view(values_obj, "values");
  const array_view indices = device_view(indices_obj, "indices");
  const array_view uniforms = device_view(uniforms_obj, "uniforms");
  const array_view tokens = device_view(tokens_obj, "tokens");
  const std::uint64_t rows = tokens.size();
  if ((values.type != element::f32 && values.type != element::f16 &&
       values.type != element::bf16) ||
      uniforms.type != element::f32)
    throw py::type_error("values: must be float32, float16 or bfloat16; uniforms: float32");
  if (indices.type != element::i64 || tokens.type != element::i64)
    throw py::type_error("indices, tokens: must be int64");
  expect_size(values, rows * k, "values");
  expect_size(indices, rows * k, "indices");
  expect_size(uniforms, rows, "uniforms");
  const auto stream = reinterpret_cast<cudaStream_t>(stream_handle);
  device_scope scope({&values, &indices, &uniforms, &tokens}, stream);
  const auto draw = [&](const auto* typed_values) {
    check(gpusort::sample_candidates(typed_values, static_cast<const std::int64_t*>(indices.data),
                                     rows, k, p, temperature,
                                     static_cast<const float*>(uniforms.data),
                                     static_cast<std::int64_t*>(tokens.data), stream),
          "gpusort.sample_top_k_top_p");
  };
  if (values.type == element::f16)
    draw(static_cast<const __half*>(values.data));
  else if (values.type == element::bf16)
    draw(static_cast<const __nv_bfloat16*>(values.data));
  else
    draw(static_cast<const float*>(values.data));
  scope.finish();
}

// The k smallest (descending: largest) keys of each of `rows` rows, sorted, and their columns
// as 8-byte integers (torch.topk(x, k, dim=-1)), generated by the library: no index matrix.
// float16 and bfloat16 keys go to the per-row select of 16-bit floats as their bits (the
// package sends them here only where it takes the shape: k <= 2048, rows of 2048 keys or more).
void topk_rows_indices_device(py::object keys_obj, py::object out_keys_obj,
                              py::object out_indices_obj, std::uint64_t k, bool descending,
                              std::uintptr_t stream, py::object alloc, std::uint64_t rows,
                              bool in_order) {
  const gpusort::options opt = make_options(descending, "automatic", stream);
  const array_view keys = device_view(keys_obj, "x");
  const array_view out_keys = device_view(out_keys_obj, "out_keys");
  const array_view out_indices = device_view(out_indices_obj, "out_indices");
  const std::uint64_t n = keys.size();
  const std::uint64_t row_length = topk_row_length(n, rows, k);
  expect_size(out_keys, rows * k, "out_keys");
  expect_size(out_indices, rows * k, "out_indices");
  if (out_indices.item_bytes != 8) throw py::type_error("out_indices: must be int64");
  if (out_keys.type != keys.type || out_keys.item_bytes != keys.item_bytes)
    throw py::type_error("out_keys: must have the keys' type");
  device_scope scope({&keys, &out_keys, &out_indices}, opt.stream);
  auto* indices = static_cast<std::int64_t*>(out_indices.data);
  const std::string what = "gpusort.topk: " + describe(opt, keys.type, 8);
  auto run = [&](auto key) {
    using K = decltype(key);
    run_with_workspace(alloc, opt, what, [&](void* temp, std::size_t& bytes) {
      const K* in = static_cast<const K*>(keys.data);
      K* out = static_cast<K*>(out_keys.data);
      if constexpr (std::is_same_v<K, gpusort::detail::half_bits> ||
                    std::is_same_v<K, gpusort::detail::bfloat16_bits>)
        return gpusort::detail::never_zero(
            temp, bytes,
            gpusort::detail::top_k_rows_positions(
                temp, bytes, in, rows, row_length, out,
                reinterpret_cast<gpusort::detail::payload<8>*>(indices), k, opt, in_order));
      else if (in_order)
        return gpusort::top_k_rows_indices(temp, bytes, in, rows, row_length, out, indices, k, opt);
      else
        return gpusort::select_k_rows_indices(temp, bytes, in, rows, row_length, out, indices, k,
                                              opt);
    });
  };
  if (keys.type == element::f16)
    run(gpusort::detail::half_bits{});
  else if (keys.type == element::bf16)
    run(gpusort::detail::bfloat16_bits{});
  else
    with_sort_key_type(keys.type, "x", run);
  scope.finish();
}

// Keys into `intervals` ordered intervals: out_keys, and offsets (intervals + 1 uint64).
void approx_sort_device(py::object keys_obj, py::object out_keys_obj, py::object offsets_obj,
                        std::uint32_t intervals, bool descending, std::uintptr_t stream,
                        py::object alloc) {
  gpusort::options opt = make_options(descending, "automatic", stream);
  opt.intervals = intervals;
  const array_view keys = device_view(keys_obj, "x");
  const array_view out_keys = device_view(out_keys_obj, "out_keys");
  const array_view offsets = device_view(offsets_obj, "offsets");
  const std::uint64_t n = keys.size();
  expect_size(out_keys, n, "out_keys");
  expect_size(offsets, intervals + std::uint64_t{1}, "offsets");
  if (offsets.item_bytes != 8) throw py::type_error("offsets: must have 8-byte elements");
  run_keys_to_keys<false>(keys, out_keys, offsets, opt, alloc,
                          "gpusort.approx_sort: " + describe(opt, keys.type, 0),
                          [&](void* temp, std::size_t& bytes, const auto* in, auto* out) {
                            return gpusort::approx_sort_keys(
                                temp, bytes, in, out, n,
                                static_cast<std::uint64_t*>(offsets.data), opt);
                          });
}

// ---- host arrays (NumPy) ----------------------------------------------------------------

element host_element(const py::array& a) {
  // The library reads keys in this machine's byte order (the package converts the others).
  if (!a.dtype().attr("isnative").cast<bool>()) return element::other;
  const char kind = a.dtype().kind();
  const auto bytes = a.itemsize();
  if (kind == 'i' && bytes == 4) return element::i32;
  if (kind == 'i' && bytes == 8) return element::i64;
  if (kind == 'u' && bytes == 4) return element::u32;
  if (kind == 'u' && bytes == 8) return element::u64;
  if (kind == 'f' && bytes == 4) return element::f32;
  if (kind == 'f' && bytes == 8) return element::f64;
  if (kind == 'b' && bytes == 1) return element::b8;
  if (kind == 'i' && bytes == 1) return element::i8;
  if (kind == 'u' && bytes == 1) return element::u8;
  if (kind == 'i' && bytes == 2) return element::i16;
  if (kind == 'u' && bytes == 2) return element::u16;
  if (kind == 'f' && bytes == 2) return element::f16;
  return element::other;
}

void expect_writable_c_array(const py::array& a, const char* what) {
  if (!(a.flags() & py::array::c_style))
    throw py::value_error(std::string(what) + ": must be contiguous (C order)");
  if (!a.writeable()) throw py::value_error(std::string(what) + ": is read-only");
}

template <class T>
std::vector<T> to_vector(const py::array& a) {
  const T* p = static_cast<const T*>(a.data());
  return std::vector<T>(p, p + a.size());
}

template <class T>
void copy_back(const std::vector<T>& v, py::array& a) {
  if (!v.empty()) std::memcpy(a.mutable_data(), v.data(), v.size() * sizeof(T));
}

// The values array of a host sort: writable, C-contiguous, one per key; else the error
// naming `values`.
py::array host_values(const py::object& values_obj, const py::array& keys) {
  py::array values = values_obj.cast<py::array>();
  expect_writable_c_array(values, "values");
  if (values.size() != keys.size()) throw py::value_error("values: size does not match x");
  return values;
}

// A progress report of a sort that runs without the GIL takes the GIL to let Python handle
// its signals: Ctrl-C raises KeyboardInterrupt out of the report, which stops the sort at its
// next piece of work (the library's own signal handlers stay off in Python).
void check_python_signals() {
  py::gil_scoped_acquire locked;
  if (PyErr_CheckSignals() != 0) throw py::error_already_set();
}

void interruptible(std::string_view, std::uint64_t, std::uint64_t) { check_python_signals(); }

// Sorts NumPy keys (and values) in place. Stable sorts of rows go row by row: the library's
// batched sort is stable only through the CUB baselines, which take values of 4 bytes.
void sort_host(py::array keys, py::object values_obj, std::uint64_t rows, std::uint64_t row_len,
               bool descending, const std::string& algorithm, bool stable,
               const std::string& nans) {
  const gpusort::options opt = make_options(descending, algorithm, 0, nans);
  expect_writable_c_array(keys, "x");
  const bool has_values = !values_obj.is_none();
  py::array values = has_values ? host_values(values_obj, keys) : py::array();
  if (static_cast<std::uint64_t>(keys.size()) != rows * row_len)
    throw py::value_error("x: size is not rows * row_len");
  const int value_bytes = has_values ? static_cast<int>(values.itemsize()) : 0;
  with_sort_key_type(host_element(keys), "x", [&](auto key) {
    using K = decltype(key);
    with_value_size(value_bytes, "values", [&](auto value) {
      using V = decltype(value);
      if (rows <= 1) {
        // One row sorts in place in the caller's buffer by the host-array plans (external.hpp:
        // in over the link, one sort, out; several GPUs or runs when large; the CPU backend
        // without a GPU), with no copy on the host beside the link's staging.
        const std::uint64_t n = static_cast<std::uint64_t>(keys.size());
        std::span<K> k(static_cast<K*>(keys.mutable_data()), n);
        const gpusort::external_options host_opt{.sort = opt, .progress = interruptible};
        py::gil_scoped_release unlocked;
        if constexpr (std::is_same_v<V, no_value>)
          gpusort::sort(k, host_opt);
        else
          gpusort::sort(k, std::span<V>(static_cast<V*>(values.mutable_data()), n), host_opt);
        return;
      }
      std::vector<K> k = to_vector<K>(keys);
      std::vector<V> v;
      if constexpr (!std::is_same_v<V, no_value>) v = to_vector<V>(values);
      {
        py::gil_scoped_release unlocked;
        if (stable) {
          for (std::uint64_t r = 0; r < rows; ++r) {
            std::vector<K> row_keys(k.begin() + r * row_len, k.begin() + (r + 1) * row_len);
            if constexpr (std::is_same_v<V, no_value>) {
              gpusort::sort(row_keys, opt);
            } else {
              std::vector<V> row_values(v.begin() + r * row_len, v.begin() + (r + 1) * row_len);
              gpusort::sort(row_keys, row_values, opt);
              std::copy(row_values.begin(), row_values.end(), v.begin() + r * row_len);
            }
            std::copy(row_keys.begin(), row_keys.end(), k.begin() + r * row_len);
          }
        } else if constexpr (std::is_same_v<V, no_value>) {
          gpusort::sort_batched(k, rows, row_len, opt);
        } else {
          gpusort::sort_batched(k, v, rows, row_len, opt);
        }
      }
      copy_back(k, keys);
      if constexpr (!std::is_same_v<V, no_value>) copy_back(v, values);
    });
  });
}

void sort_segmented_host(py::array keys, py::object values_obj, py::array offsets,
                         bool descending, const std::string& algorithm,
                         const std::string& nans) {
  const gpusort::options opt = make_options(descending, algorithm, 0, nans);
  expect_writable_c_array(keys, "x");
  const bool has_values = !values_obj.is_none();
  py::array values = has_values ? host_values(values_obj, keys) : py::array();
  const element offset_type = host_element(offsets);
  if (offset_type != element::i32 && offset_type != element::i64)
    throw py::type_error("offsets: must be int32 or int64");
  if (!(offsets.flags() & py::array::c_style))
    throw py::value_error("offsets: must be contiguous");
  const int value_bytes = has_values ? static_cast<int>(values.itemsize()) : 0;
  with_sort_key_type(host_element(keys), "x", [&](auto key) {
    using K = decltype(key);
    with_value_size(value_bytes, "values", [&](auto value) {
      using V = decltype(value);
      auto sort_with = [&](auto offset) {
        using O = decltype(offset);
        std::vector<K> k = to_vector<K>(keys);
        std::vector<V> v;
        if constexpr (!std::is_same_v<V, no_value>) v = to_vector<V>(values);
        const std::vector<O> o = to_vector<O>(offsets);
        {
          py::gil_scoped_release unlocked;
          if constexpr (std::is_same_v<V, no_value>)
            gpusort::sort_segmented(k, o, opt);
          else
            gpusort::sort_segmented(k, v, o, opt);
        }
        copy_back(k, keys);
        if constexpr (!std::is_same_v<V, no_value>) copy_back(v, values);
      };
      if (offset_type == element::i32)
        sort_with(std::int32_t{});
      else
        sort_with(std::int64_t{});
    });
  });
}

// Approximately sorts NumPy keys in place; returns the intervals' offsets (uint64).
py::array approx_sort_host(py::array keys, std::uint32_t intervals, bool descending) {
  gpusort::options opt = make_options(descending, "automatic", 0);
  opt.intervals = intervals;
  expect_writable_c_array(keys, "x");
  return with_key_type(host_element(keys), "x", [&](auto key) -> py::array {
    using K = decltype(key);
    std::vector<K> k = to_vector<K>(keys);
    gpusort::approx_result r;
    {
      py::gil_scoped_release unlocked;
      r = gpusort::approx_sort(k, opt);
    }
    copy_back(k, keys);
    py::array_t<std::uint64_t> offsets(static_cast<py::ssize_t>(r.offsets.size()));
    std::memcpy(offsets.mutable_data(), r.offsets.data(), r.offsets.size() * 8);
    return offsets;
  });
}

// sample_candidates_device's draw for host arrays, on the CPU.
void sample_candidates_host(py::array values, py::array indices, py::array uniforms, py::array tokens,
                            std::uint64_t k, float p, float temperature) {
  expect_writable_c_array(tokens, "tokens");
  for (const auto& [a, what] : {std::pair{&values, "values"}, std::pair{&indices, "indices"},
                                std::pair{&uniforms, "uniforms"}})
    if (!(a->flags() & py::array::c_style)) throw py::value_error(std::string(what) + ": must be contiguous");
  if (host_element(values) != element::f32 || host_element(uniforms) != element::f32)
    throw py::type_error("values, uniforms: must be float32");
  if (host_element(indices) != element::i64 || host_element(tokens) != element::i64)
    throw py::type_error("indices, tokens: must be int64");
  const std::uint64_t rows = static_cast<std::uint64_t>(tokens.size());
  if (static_cast<std::uint64_t>(values.size()) != rows * k ||
      static_cast<std::uint64_t>(indices.size()) != rows * k ||
      static_cast<std::uint64_t>(uniforms.size()) != rows)
    throw py::value_error("values, indices: rows * k each, and uniforms: rows");
  gpusort::sample_candidates_on_host(static_cast<const float*>(values.data()),
                                     static_cast<const std::int64_t*>(indices.data()), rows, k, p,
                                     temperature, static_cast<const float*>(uniforms.data()),
                                     static_cast<std::int64_t*>(tokens.mutable_data()));
}

// ---- files larger than the GPU (gpusort/external.hpp) -------------------------------------

// The element named `dtype` ("int32", ..., "float64"), as the package spells NumPy's names.
element file_element(const std::string& dtype) {
  for (const element e : {element::i32, element::u32, element::i64, element::u64, element::f32,
                          element::f64, element::i8, element::u8, element::i16, element::u16,
                          element::f16, element::bf16})
    if (element_name(e) == dtype) return e;
  throw py::value_error("dtype: the keys of a file are int32, uint32, int64, uint64, float32, "
                        "float64, int8, uint8, int16, uint16, float16 or bfloat16, not '" +
                        dtype + "'");
}

// The sort runs without the GIL; every progress report takes it to call `progress` (if not
// None) and to let Python handle its signals (check_python_signals): Ctrl-C stops the sort
// and removes its scratch.
gpusort::external_options file_options(bool descending, const std::string& algorithm,
                                       std::uint64_t device_memory, std::uint64_t memory,
                                       const std::string& scratch_dir, py::object progress) {
  gpusort::external_options opt;
  opt.sort = make_options(descending, algorithm, 0);
  opt.device_budget_bytes = device_memory;
  opt.host_budget_bytes = memory;
  opt.scratch_directory = scratch_dir;
  opt.progress = [progress](std::string_view phase, std::uint64_t done, std::uint64_t total) {
    py::gil_scoped_acquire locked;
    check_python_signals();
    if (!progress.is_none()) progress(std::string(phase), done, total);
  };
  return opt;
}

py::dict stats_dict(const gpusort::file_sort_stats& stats) {
  py::dict d;
  for (const auto& [name, value] : stats.items) d[py::str(name)] = value;
  return d;
}

py::dict sort_file(const std::string& src, const std::string& dst, const std::string& dtype,
                   bool pairs, bool descending, const std::string& algorithm,
                   std::uint64_t device_memory, std::uint64_t memory,
                   const std::string& scratch_dir, py::object progress, const std::string& nans) {
  gpusort::external_options opt =
      file_options(descending, algorithm, device_memory, memory, scratch_dir, progress);
  opt.sort = make_options(descending, algorithm, 0, nans);
  gpusort::file_sort_stats stats;
  with_sort_key_type(file_element(dtype), "dtype", [&](auto key) {
    using K = decltype(key);
    py::gil_scoped_release unlocked;
    stats = pairs ? gpusort::sort_pairs_file<K>(src, dst, opt)
                  : gpusort::sort_file<K>(src, dst, opt);
  });
  return stats_dict(stats);
}

py::dict sort_records_file(const std::string& src, const std::string& dst,
                           std::uint64_t record_bytes, std::uint64_t key_bytes,
                           std::uint64_t key_offset, bool descending, std::uint64_t device_memory,
                           std::uint64_t memory, const std::string& scratch_dir,
                           py::object progress) {
  const gpusort::external_options opt =
      file_options(descending, "automatic", device_memory, memory, scratch_dir, progress);
  gpusort::file_sort_stats stats;
  {
    py::gil_scoped_release unlocked;
    stats = gpusort::sort_records_file(src, dst, {record_bytes, key_offset, key_bytes}, opt);
  }
  return stats_dict(stats);
}

// GNU sort's options as gpusort.sort_lines names them (keys: -k specs, separator: -t).
gpusort::line_order line_order_of(const std::vector<std::string>& keys,
                                  const std::string& separator, bool numeric, bool reverse,
                                  bool skip_blanks, bool unique, bool stable,
                                  bool zero_terminated) {
  gpusort::line_order order{.numeric = numeric,
                            .reverse = reverse,
                            .skip_blanks = skip_blanks,
                            .unique = unique,
                            .stable = stable,
                            .terminator = zero_terminated ? '\0' : '\n'};
  for (const std::string& key : keys) order.keys.push_back(gpusort::parse_line_key(key));
  if (separator.size() > 1)
    throw gpusort::invalid_request("separator: must be one byte, got " +
                                   std::to_string(separator.size()));
  if (separator.size() == 1) order.separator = separator[0];
  return order;
}

std::string_view bytes_view(const py::bytes& text) {
  char* data = nullptr;
  Py_ssize_t size = 0;
  if (PyBytes_AsStringAndSize(text.ptr(), &data, &size) != 0) throw py::error_already_set();
  return {data, static_cast<std::size_t>(size)};
}

// The output bytes of `LC_ALL=C sort` for `text`.
py::bytes sort_text(const py::bytes& text, const std::vector<std::string>& keys,
                    const std::string& separator, bool numeric, bool reverse, bool skip_blanks,
                    bool unique, bool stable, bool zero_terminated) {
  const gpusort::line_order order = line_order_of(keys, separator, numeric, reverse, skip_blanks,
                                                  unique, stable, zero_terminated);
  const std::string_view view = bytes_view(text);  // immutable, alive for the call
  std::string sorted;
  {
    py::gil_scoped_release unlocked;
    sorted = gpusort::sort_text(view, order);
  }
  return py::bytes(sorted);
}

// The indices of the lines of `text` in GNU sort's output order (with unique: those kept).
py::array_t<std::uint64_t> sort_lines_order(const py::bytes& text,
                                            const std::vector<std::string>& keys,
                                            const std::string& separator, bool numeric,
                                            bool reverse, bool skip_blanks, bool unique,
                                            bool stable, bool zero_terminated) {
  const gpusort::line_order order = line_order_of(keys, separator, numeric, reverse, skip_blanks,
                                                  unique, stable, zero_terminated);
  const std::string_view view = bytes_view(text);
  std::vector<std::uint64_t> lines;
  {
    py::gil_scoped_release unlocked;
    lines = gpusort::sort_lines(view, gpusort::line_starts(view, order.terminator), order);
  }
  py::array_t<std::uint64_t> out(static_cast<py::ssize_t>(lines.size()));
  std::copy(lines.begin(), lines.end(), out.mutable_data());
  return out;
}

}  // namespace

PYBIND11_MODULE(_gpusort, m) {
  m.doc() = "gpusort's extension module; use the package gpusort, not this module";
  static py::exception<gpusort::error> error_type(m, "Error", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const gpusort::error& e) {
      error_type(e.what());
    } catch (const gpusort::wrong_result& e) {
      error_type(e.what());
    } catch (const gpusort::invalid_request& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const gpusort::io_failure& e) {
      PyErr_SetString(PyExc_OSError, e.what());
    }
  });
  gpusort::set_signal_cleanup(false);  // Python handles SIGINT: see file_options
  m.attr("__version__") = GPUSORT_VERSION;

  m.def(
      "algorithms",
      [] {
        // The library's table, one row per name the package accepts (method_name's spelling:
        // sample_sort_random is sample_sort with random sampling).
        py::list rows;
        auto add = [&](std::string_view name, const gpusort::algorithm_traits& t) {
          rows.append(py::make_tuple(std::string(name), t.stable, t.in_place, t.sorts_rows,
                                     t.capturable, t.takes_comparator, t.max_value_bytes));
        };
        for (const auto& t : gpusort::algorithm_table) {
          gpusort::options opt;
          opt.algo = t.algo;
          add(gpusort::method_name(opt), t);
          if (t.algo == gpusort::algorithm::sample_sort) {
            opt.sampler = gpusort::sampling::random;
            add(gpusort::method_name(opt), t);
          }
        }
        return rows;
      },
      "(name, stable, in_place, sorts_rows, capturable, takes_comparator, max_value_bytes) of "
      "every algorithm, from the library's "
      "table (gpusort::algorithm_table).");

  m.def(
      "describe",
      [](py::object obj) {
        const array_view v = view_of(obj, "array");
        py::tuple shape(v.shape.size());
        for (std::size_t i = 0; i < v.shape.size(); ++i) shape[i] = v.shape[i];
        return py::dict(py::arg("type") = element_name(v.type),
                        py::arg("item_bytes") = v.item_bytes, py::arg("shape") = shape,
                        py::arg("contiguous") = v.contiguous, py::arg("on_device") = v.on_device,
                        py::arg("device") = v.device, py::arg("read_only") = v.read_only,
                        py::arg("producer_stream") = v.producer_stream);
      },
      py::arg("array"),
      "What the module reads from a DLPack capsule or __cuda_array_interface__ dict (tests).");
  m.def("gpu_available", &gpusort::detail::gpu_available,
        "Whether a CUDA device can be used (else host arrays go to the CPU backend).");
  m.def("sort_device", &sort_device, py::arg("keys"), py::arg("values"), py::arg("rows"),
        py::arg("row_len"), py::arg("descending"), py::arg("algorithm"), py::arg("stream"),
        py::arg("alloc").none(true), py::arg("nans") = "last", py::arg("stable") = false,
        py::arg("make_indices") = false);
  m.def("sort_segmented_device", &sort_segmented_device, py::arg("keys"), py::arg("values"),
        py::arg("offsets"), py::arg("descending"), py::arg("algorithm"), py::arg("stream"),
        py::arg("nans") = "last");
  m.def("topk_device", &topk_device, py::arg("keys"), py::arg("values"), py::arg("out_keys"),
        py::arg("out_values"), py::arg("k"), py::arg("descending"), py::arg("stream"),
        py::arg("alloc").none(true), py::arg("rows") = 1);
  m.def("topk_indices_device", &topk_indices_device, py::arg("keys"), py::arg("out_keys"),
        py::arg("out_indices"), py::arg("k"), py::arg("descending"), py::arg("stream"),
        py::arg("alloc").none(true), py::arg("in_order") = true);
  m.def("sample_candidates_device", &sample_candidates_device, py::arg("values"),
        py::arg("indices"), py::arg("uniforms"), py::arg("tokens"), py::arg("k"), py::arg("p"),
        py::arg("temperature"), py::arg("stream"));
  m.def("sample_candidates_host", &sample_candidates_host, py::arg("values"), py::arg("indices"),
        py::arg("uniforms"), py::arg("tokens"), py::arg("k"), py::arg("p"), py::arg("temperature"));
  m.def("topk_rows_indices_device", &topk_rows_indices_device, py::arg("keys"),
        py::arg("out_keys"), py::arg("out_indices"), py::arg("k"), py::arg("descending"),
        py::arg("stream"), py::arg("alloc").none(true), py::arg("rows"),
        py::arg("in_order") = true);
#ifdef GPUSORT_JAX_FFI
  // The XLA FFI handlers for gpusort.jax (jax.ffi.register_ffi_target takes each capsule).
  m.def("jax_handlers", [] {
    py::dict handlers;
    for (const auto& [name, address] : gpusort::python::jax_handlers())
      handlers[name] = py::capsule(address);
    return handlers;
  });
#endif
  m.def("unique_device", &unique_device, py::arg("keys"), py::arg("out_keys"),
        py::arg("out_counts"), py::arg("num_unique"), py::arg("stream"),
        py::arg("alloc").none(true));
  m.def("approx_sort_device", &approx_sort_device, py::arg("keys"), py::arg("out_keys"),
        py::arg("offsets"), py::arg("intervals"), py::arg("descending"), py::arg("stream"),
        py::arg("alloc").none(true));
  m.def("sort_host", &sort_host, py::arg("keys"), py::arg("values"), py::arg("rows"),
        py::arg("row_len"), py::arg("descending"), py::arg("algorithm"), py::arg("stable"),
        py::arg("nans") = "last");
  m.def("sort_segmented_host", &sort_segmented_host, py::arg("keys"), py::arg("values"),
        py::arg("offsets"), py::arg("descending"), py::arg("algorithm"), py::arg("nans") = "last");
  m.def("sort_file", &sort_file, py::arg("src"), py::arg("dst"), py::arg("dtype"),
        py::arg("pairs"), py::arg("descending"), py::arg("algorithm"), py::arg("device_memory"),
        py::arg("memory"), py::arg("scratch_dir"), py::arg("progress"), py::arg("nans") = "last");
  m.def("sort_records_file", &sort_records_file, py::arg("src"), py::arg("dst"),
        py::arg("record_bytes"), py::arg("key_bytes"), py::arg("key_offset"),
        py::arg("descending"), py::arg("device_memory"), py::arg("memory"),
        py::arg("scratch_dir"), py::arg("progress"));
  m.def("approx_sort_host", &approx_sort_host, py::arg("keys"), py::arg("intervals"),
        py::arg("descending"));
  m.def("sort_text", &sort_text, py::arg("text"), py::arg("keys"), py::arg("separator"),
        py::arg("numeric"), py::arg("reverse"), py::arg("skip_blanks"), py::arg("unique"),
        py::arg("stable"), py::arg("zero_terminated"));
  m.def("sort_lines_order", &sort_lines_order, py::arg("text"), py::arg("keys"),
        py::arg("separator"), py::arg("numeric"), py::arg("reverse"), py::arg("skip_blanks"),
        py::arg("unique"), py::arg("stable"), py::arg("zero_terminated"));
}
