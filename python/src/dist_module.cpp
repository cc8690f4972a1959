// _gpusort_dist: gpusort::dist for gpusort.distributed (issue 74). A module of its own, built
// where the library has gpusort::dist, so that `import gpusort` never needs NCCL; only
// gpusort.distributed imports it, for CUDA tensors under an NCCL process group.
//
// A Communicator is one rank of an NCCL communicator that gpusort made (the id travels through
// torch.distributed), and holds a dist::kept_memory for its GPU: calls after the first reuse
// the device memory the first mapped, as torch's caching allocator does for its own tensors.
// sort() runs dist::sort on the caller's stream with the GIL released (it waits in NCCL for the
// other ranks) and returns the rank's sorted range as device buffers that own their memory,
// seen by torch through __cuda_array_interface__ as bytes.
#include <cstdint>
#include <memory>
#include <string>

#include <cuda_runtime_api.h>
#include <pybind11/pybind11.h>

#include "arrays.hpp"
#include "dispatch.hpp"
#include "gpusort/dist.hpp"

#ifndef GPUSORT_VERSION
#define GPUSORT_VERSION "unknown"
#endif

namespace py = pybind11;
using namespace gpusort_python;

namespace {

// Bytes of device memory that a shard owns (keys or values), kept alive by whoever holds this
// object: torch.as_tensor keeps a reference to it for the tensor's life.
struct device_bytes {
  std::shared_ptr<void> owner;  // the shard
  void* data = nullptr;
  std::uint64_t bytes = 0;

  py::dict array_interface() const {
    return py::dict(py::arg("shape") = py::make_tuple(bytes), py::arg("typestr") = "|u1",
                    py::arg("data") = py::make_tuple(reinterpret_cast<std::uintptr_t>(data), false),
                    py::arg("version") = 3,
                    py::arg("stream") = py::none());  // dist::sort has waited for its stream
  }
};

// dist::sort with values of B bytes (0: keys alone): the sorted keys and values as
// device_bytes, their count, the call's times and every rank's size after the sort.
template <class K, int B>
py::tuple sort_on(const gpusort::dist::communicator& comm, K* keys, void* values,
                  std::uint64_t n, const gpusort::dist::options& opt) {
  using V = std::conditional_t<B == 0, gpusort::detail::no_value, gpusort::detail::payload<B>>;
  auto result = std::make_shared<gpusort::dist::shard<K, V>>();
  {
    py::gil_scoped_release unlocked;
    *result = gpusort::dist::detail::sort<K, V>(comm, keys, static_cast<V*>(values), n, opt);
  }
  const std::uint64_t count = result->size();
  const auto& t = result->times();
  const py::dict times(py::arg("setup_ms") = t.setup_ms, py::arg("local_sort_ms") = t.local_sort_ms,
                       py::arg("sampling_ms") = t.sampling_ms, py::arg("exchange_ms") = t.exchange_ms,
                       py::arg("merge_ms") = t.merge_ms, py::arg("total_ms") = t.total_ms,
                       py::arg("bytes_sent") = t.bytes_sent);
  const device_bytes sorted_keys{result, result->keys().data(), sizeof(K) * count};
  py::object sorted_values = py::none();
  if constexpr (B != 0)
    sorted_values = py::cast(device_bytes{result, result->values().data(), std::uint64_t{B} * count});
  py::list rank_sizes;
  for (const std::uint64_t size : result->rank_sizes()) rank_sizes.append(size);
  return py::make_tuple(py::cast(sorted_keys), sorted_values, count, times, rank_sizes);
}

class rank_communicator {
 public:
  rank_communicator(const std::string& unique_id, int rank, int size, int device)
      : comm_(gpusort::dist::communicator_for_rank(unique_id, rank, size, device)),
        kept_(device) {}

  int rank() const { return comm_.rank(); }
  int size() const { return comm_.size(); }
  int device() const { return comm_.device(); }

  // keys: the package's device handle of a contiguous 1-D tensor on this rank's GPU; values:
  // a handle of n rows of 4, 8 or 16 bytes ("|V<bytes>"), or None. Both are sorted in place
  // (the package passes copies).
  py::tuple sort(const py::handle& keys, const py::handle& values, bool descending, bool stable,
                 const std::string& nans, std::uintptr_t stream) {
    const array_view k = view_of(keys, "keys");
    if (!k.on_device || k.device != comm_.device() || !k.contiguous)
      throw py::value_error("keys: a contiguous array on the communicator's GPU (device " +
                            std::to_string(comm_.device()) + ")");
    int value_bytes = 0;
    void* value_data = nullptr;
    if (!values.is_none()) {
      const array_view v = view_of(values, "values");
      if (!v.on_device || v.device != comm_.device() || !v.contiguous || v.size() != k.size())
        throw py::value_error("values: a contiguous array of one row a key on the keys' GPU");
      value_bytes = v.item_bytes;
      value_data = v.data;
    }
    if (nans != "last" && nans != "first")
      throw py::value_error("nans: must be 'last' or 'first', got '" + nans + "'");
    gpusort::dist::options opt;
    opt.direction = descending ? gpusort::order::descending : gpusort::order::ascending;
    opt.nans = nans == "first" ? gpusort::nan_order::first : gpusort::nan_order::last;
    opt.stable = stable;
    opt.stream = reinterpret_cast<cudaStream_t>(stream);
    return with_sort_key_type(k.type, "keys", [&](auto key) -> py::tuple {
      using K = decltype(key);
      auto* data = static_cast<K*>(k.data);
      switch (value_bytes) {
        case 0: return sort_on<K, 0>(comm_, data, nullptr, k.size(), opt);
        case 4: return sort_on<K, 4>(comm_, data, value_data, k.size(), opt);
        case 8: return sort_on<K, 8>(comm_, data, value_data, k.size(), opt);
        case 16: return sort_on<K, 16>(comm_, data, value_data, k.size(), opt);
        default: break;
      }
      throw py::type_error("values: rows of 4, 8 or 16 bytes, not " + std::to_string(value_bytes));
    });
  }

 private:
  gpusort::dist::communicator comm_;
  gpusort::dist::kept_memory kept_;
};

}  // namespace

PYBIND11_MODULE(_gpusort_dist, m) {
  m.doc() = "gpusort::dist (NCCL) for gpusort.distributed";
  m.attr("__version__") = GPUSORT_VERSION;
  m.def("unique_id", &gpusort::dist::make_unique_id,
        "A new NCCL unique id (256 hex digits) for a communicator's ranks.");
  py::class_<device_bytes>(m, "DeviceBytes")
      .def_property_readonly("__cuda_array_interface__", &device_bytes::array_interface)
      .def_readonly("nbytes", &device_bytes::bytes);
  py::class_<rank_communicator>(m, "Communicator")
      .def(py::init<const std::string&, int, int, int>(), py::arg("unique_id"), py::arg("rank"),
           py::arg("size"), py::arg("device"), py::call_guard<py::gil_scoped_release>(),
           "Rank `rank` of `size` on `device`: every rank makes its own at once (NCCL waits "
           "for all) from the id rank 0 made.")
      .def_property_readonly("rank", &rank_communicator::rank)
      .def_property_readonly("size", &rank_communicator::size)
      .def_property_readonly("device", &rank_communicator::device)
      .def("sort", &rank_communicator::sort, py::arg("keys"), py::arg("values"),
           py::arg("descending"), py::arg("stable"), py::arg("nans"), py::arg("stream"),
           "gpusort::dist::sort of this rank's shard (sorted in place) on `stream`: (keys, "
           "values or None, count, phase times, every rank's count), the buffers as bytes.");
}
