// _gpusort_dist: gpusort::dist for gpusort.distributed (issue 74). A module of its own, built
// where the library has gpusort::dist, so that `import gpusort` never needs NCCL; only
// gpusort.distributed imports it, for CUDA tensors under an NCCL process group.
//
// A Communicator is one rank of an NCCL communicator that gpusort made (the id travels through
// torch.distributed), and holds a dist::kept_memory for its GPU: calls after the first reuse
// the device memory the first mapped, as torch's caching allocator does for its own tensors.
// sort() runs dist::sort on the caller's stream with the GIL released (it waits in NCCL for the
// other ranks) and returns the rank's sorted range as device buffers that own their memory,
// seen by torch through __cuda_array_interface__ as bytes. sort_shards() does the same for a
// list of shards on several GPUs of one process, one thread a GPU.
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <cuda_runtime_api.h>
#include <pybind11/pybind11.h>

#include "arrays.hpp"
#include "dispatch.hpp"
#include "gpusort/detail/index_math/dist.hpp"  // max_partition_ranks
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

template <class K, int B>
using shard_of = gpusort::dist::shard<
    K, std::conditional_t<B == 0, gpusort::detail::no_value, gpusort::detail::payload<B>>>;

// dist::sort with values of B bytes (0: keys alone) on one rank; the caller has released the GIL.
template <class K, int B>
std::shared_ptr<shard_of<K, B>> sort_rank(const gpusort::dist::communicator& comm, K* keys,
                                          void* values, std::uint64_t n,
                                          const gpusort::dist::options& opt) {
  using V = std::conditional_t<B == 0, gpusort::detail::no_value, gpusort::detail::payload<B>>;
  return std::make_shared<shard_of<K, B>>(
      gpusort::dist::detail::sort<K, V>(comm, keys, static_cast<V*>(values), n, opt));
}

// A rank's result for Python: the sorted keys and values as device_bytes, their count, the
// call's times and every rank's size after the sort.
template <class K, int B>
py::tuple result_of(const std::shared_ptr<shard_of<K, B>>& result) {
  const std::uint64_t count = result->size();
  const auto& t = result->times();
  const py::dict times(py::arg("setup_ms") = t.setup_ms,
                       py::arg("local_sort_ms") = t.local_sort_ms,
                       py::arg("sampling_ms") = t.sampling_ms,
                       py::arg("exchange_ms") = t.exchange_ms, py::arg("merge_ms") = t.merge_ms,
                       py::arg("total_ms") = t.total_ms, py::arg("bytes_sent") = t.bytes_sent);
  const device_bytes sorted_keys{result, result->keys().data(), sizeof(K) * count};
  py::object sorted_values = py::none();
  if constexpr (B != 0)
    sorted_values =
        py::cast(device_bytes{result, result->values().data(), std::uint64_t{B} * count});
  py::list rank_sizes;
  for (const std::uint64_t size : result->rank_sizes()) rank_sizes.append(size);
  return py::make_tuple(py::cast(sorted_keys), sorted_values, count, times, rank_sizes);
}

// One rank's arguments, read from the package's handles: keys (a contiguous 1-D array on the
// rank's GPU) and values (n rows of 4, 8 or 16 bytes, "|V<bytes>", or None).
struct rank_arrays {
  array_view keys;
  void* values = nullptr;
  int value_bytes = 0;
};

rank_arrays read_rank(const py::handle& keys, const py::handle& values, int device) {
  rank_arrays a{view_of(keys, "keys")};
  if (!a.keys.on_device || a.keys.device != device || !a.keys.contiguous)
    throw py::value_error("keys: a contiguous array on the communicator's GPU (device " +
                          std::to_string(device) + ")");
  if (!values.is_none()) {
    const array_view v = view_of(values, "values");
    if (!v.on_device || v.device != device || !v.contiguous || v.size() != a.keys.size())
      throw py::value_error("values: a contiguous array of one row a key on the keys' GPU");
    a.value_bytes = v.item_bytes;
    a.values = v.data;
  }
  return a;
}

gpusort::dist::options options_of(bool descending, bool stable, const std::string& nans,
                                  bool partition_first, std::uintptr_t stream) {
  if (nans != "last" && nans != "first")
    throw py::value_error("nans: must be 'last' or 'first', got '" + nans + "'");
  gpusort::dist::options opt;
  opt.direction = descending ? gpusort::order::descending : gpusort::order::ascending;
  opt.nans = nans == "first" ? gpusort::nan_order::first : gpusort::nan_order::last;
  opt.stable = stable;
  opt.partition_first = partition_first;
  opt.stream = reinterpret_cast<cudaStream_t>(stream);
  return opt;
}

// Calls f.template operator()<K, B>() for the keys' type K and the values' size B.
template <class F>
py::object with_types(const rank_arrays& a, F&& f) {
  return with_sort_key_type(a.keys.type, "keys", [&](auto key) -> py::object {
    using K = decltype(key);
    switch (a.value_bytes) {
      case 0: return f.template operator()<K, 0>();
      case 4: return f.template operator()<K, 4>();
      case 8: return f.template operator()<K, 8>();
      case 16: return f.template operator()<K, 16>();
      default: break;
    }
    throw py::type_error("values: rows of 4, 8 or 16 bytes, not " + std::to_string(a.value_bytes));
  });
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
  // (the package passes copies), or with partition_first on 2 to max_partition_ranks ranks
  // only read.
  py::object sort(const py::handle& keys, const py::handle& values, bool descending, bool stable,
                  const std::string& nans, bool partition_first, std::uintptr_t stream) {
    const rank_arrays a = read_rank(keys, values, comm_.device());
    const gpusort::dist::options opt =
        options_of(descending, stable, nans, partition_first, stream);
    return with_types(a, [&]<class K, int B>() -> py::object {
      std::shared_ptr<shard_of<K, B>> result;
      {
        py::gil_scoped_release unlocked;
        result = sort_rank<K, B>(comm_, static_cast<K*>(a.keys.data), a.values, a.keys.size(), opt);
      }
      return result_of<K, B>(result);
    });
  }

 private:
  gpusort::dist::communicator comm_;
  gpusort::dist::kept_memory kept_;
};

// The communicators of one process's GPUs (communicators_for_devices: one rank a device), made
// at the first sort of shards on that list of devices and kept, with a kept_memory for each.
struct device_ranks {
  std::vector<gpusort::dist::communicator> comms;
  std::vector<std::unique_ptr<gpusort::dist::kept_memory>> kept;
};

// Never destroyed (communicators outliving the CUDA runtime at exit must not be torn down
// then); release_shard_ranks() empties it. Used with the GIL held.
std::map<std::vector<int>, std::unique_ptr<device_ranks>>& shard_ranks() {
  static auto* made = new std::map<std::vector<int>, std::unique_ptr<device_ranks>>;
  return *made;
}

device_ranks& ranks_for(const std::vector<int>& devices) {
  auto& entry = shard_ranks()[devices];
  if (!entry) {
    auto fresh = std::make_unique<device_ranks>();
    {
      py::gil_scoped_release unlocked;
      fresh->comms = gpusort::dist::communicators_for_devices(devices);
    }
    for (const int device : devices)
      fresh->kept.push_back(std::make_unique<gpusort::dist::kept_memory>(device));
    entry = std::move(fresh);
  }
  return *entry;
}

// gpusort.distributed.sort of a list of shards, one a GPU of this process (rank i on shard i's
// GPU): dist::sort on one thread a GPU, each on its stream. Every shard's keys (and values)
// are sorted in place (the package passes copies). Returns each rank's result as sort() does.
py::list sort_shards(const py::list& keys, const py::object& values, bool descending,
                     bool stable, const std::string& nans, bool partition_first,
                     const py::list& streams) {
  const std::size_t p = keys.size();
  if (p == 0 || streams.size() != p || (!values.is_none() && py::len(values) != p))
    throw py::value_error("sort_shards: a stream and values (or None) for every shard");
  std::vector<rank_arrays> arrays;
  std::vector<int> devices;
  std::vector<gpusort::dist::options> opts;
  for (std::size_t i = 0; i < p; ++i) {
    const array_view k = view_of(keys[i], "keys");
    devices.push_back(k.device);
    // Both arms as py::object: with py::none() as one arm, the other would be cast to none
    // (a TypeError for every list of values).
    const py::object shard_values =
        values.is_none() ? py::object(py::none()) : py::object(values[py::int_(i)]);
    arrays.push_back(read_rank(keys[i], shard_values, k.device));
    opts.push_back(options_of(descending, stable, nans, partition_first,
                              streams[i].cast<std::uintptr_t>()));
  }
  for (const rank_arrays& a : arrays)
    if (a.keys.type != arrays[0].keys.type || a.value_bytes != arrays[0].value_bytes)
      throw py::type_error("sort_shards: every shard of the same key type and value size");
  device_ranks& ranks = ranks_for(devices);
  return with_types(arrays[0], [&]<class K, int B>() -> py::object {
    std::vector<std::shared_ptr<shard_of<K, B>>> results(p);
    std::vector<std::exception_ptr> failures(p);
    {
      py::gil_scoped_release unlocked;
      std::vector<std::thread> threads;
      for (std::size_t r = 0; r < p; ++r)
        threads.emplace_back([&, r] {
          try {
            results[r] = sort_rank<K, B>(ranks.comms[r], static_cast<K*>(arrays[r].keys.data),
                                         arrays[r].values, arrays[r].keys.size(), opts[r]);
          } catch (...) {
            failures[r] = std::current_exception();
          }
        });
      for (std::thread& t : threads) t.join();
    }
    for (const std::exception_ptr& failure : failures)
      if (failure) std::rethrow_exception(failure);  // every rank threw alike: the first
    py::list out;
    for (const auto& result : results) out.append(result_of<K, B>(result));
    return out;
  });
}

}  // namespace

PYBIND11_MODULE(_gpusort_dist, m) {
  m.doc() = "gpusort::dist (NCCL) for gpusort.distributed";
  m.attr("__version__") = GPUSORT_VERSION;
  // The most ranks dist::options::partition_first serves (more take the default plan, which
  // sorts the shard in place).
  m.attr("max_partition_ranks") = gpusort::detail::index_math::dist::max_partition_ranks;
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
           py::arg("descending"), py::arg("stable"), py::arg("nans"), py::arg("partition_first"),
           py::arg("stream"),
           "gpusort::dist::sort of this rank's shard (sorted in place) on `stream`: (keys, "
           "values or None, count, phase times, every rank's count), the buffers as bytes.");
  m.def("sort_shards", &sort_shards, py::arg("keys"), py::arg("values"), py::arg("descending"),
        py::arg("stable"), py::arg("nans"), py::arg("partition_first"), py::arg("streams"),
        "gpusort::dist::sort of shards on distinct GPUs of this process, one thread a GPU: a "
        "list of what Communicator.sort returns, shard by shard.");
  m.def("release_shard_ranks", [] { shard_ranks().clear(); },
        "Destroys the communicators sort_shards made and gives back the memory they kept.");
}
