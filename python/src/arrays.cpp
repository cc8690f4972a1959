#include "arrays.hpp"

#include <string_view>

namespace gpusort_python {

namespace {

element element_of(int code, int bits, int lanes) {
  if (lanes != 1) return element::other;
  if (code == kDLInt && bits == 32) return element::i32;
  if (code == kDLInt && bits == 64) return element::i64;
  if (code == kDLUInt && bits == 32) return element::u32;
  if (code == kDLUInt && bits == 64) return element::u64;
  if (code == kDLFloat && bits == 32) return element::f32;
  if (code == kDLFloat && bits == 64) return element::f64;
  return element::other;
}

// C order with no gaps; dimensions of extent 1 may carry any stride (torch gives them odd ones).
bool is_c_contiguous(const std::vector<std::int64_t>& shape,
                     const std::vector<std::int64_t>& strides_in_items) {
  std::int64_t expected = 1;
  for (std::size_t i = shape.size(); i-- > 0;) {
    if (shape[i] != 1 && strides_in_items[i] != expected) return false;
    expected *= shape[i];
  }
  return true;
}

// The tensor of a DLPack capsule: "dltensor" (DLManagedTensor) or DLPack 1.0's
// "dltensor_versioned" (DLManagedTensorVersioned, whose flags can say read-only). A "used_"
// name means another consumer took it.
array_view from_capsule(const py::capsule& cap, const char* what) {
  const std::string_view name = cap.name() ? cap.name() : "";
  const DLTensor* tensor = nullptr;
  bool read_only = false;
  if (name == "dltensor") {
    tensor = &static_cast<DLManagedTensor*>(cap.get_pointer())->dl_tensor;
  } else if (name == "dltensor_versioned") {
    const auto* managed = static_cast<DLManagedTensorVersioned*>(cap.get_pointer());
    if (managed->version.major != 1)
      throw py::type_error(std::string(what) + ": DLPack " + std::to_string(managed->version.major) +
                           ".x tensors are not supported (1.x are)");
    tensor = &managed->dl_tensor;
    read_only = (managed->flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0;
  } else {
    throw py::value_error(std::string(what) + ": the DLPack capsule was already consumed (its " +
                          "name is '" + std::string(name) + "')");
  }
  const DLTensor& t = *tensor;
  if (t.ndim < 0)
    throw py::value_error(std::string(what) + ": a DLPack tensor of " + std::to_string(t.ndim) +
                          " dimensions");
  array_view v;
  v.read_only = read_only;
  v.data = static_cast<char*>(t.data) + t.byte_offset;
  v.type = element_of(t.dtype.code, t.dtype.bits, t.dtype.lanes);
  v.item_bytes = t.dtype.bits / 8 * t.dtype.lanes;
  v.shape.assign(t.shape, t.shape + t.ndim);
  for (const std::int64_t extent : v.shape)
    if (extent < 0)
      throw py::value_error(std::string(what) + ": a DLPack tensor with extent " +
                            std::to_string(extent));
  if (t.strides) {
    std::vector<std::int64_t> strides(t.strides, t.strides + t.ndim);
    v.contiguous = is_c_contiguous(v.shape, strides);
  }
  switch (t.device.device_type) {
    case kDLCPU:
    case kDLCUDAHost:
      v.on_device = false;
      break;
    case kDLCUDA:
    case kDLCUDAManaged:
      v.on_device = true;
      v.device = t.device.device_id;
      break;
    default:
      throw py::type_error(std::string(what) + ": DLPack device type " +
                           std::to_string(t.device.device_type) +
                           " is neither CUDA nor the host");
  }
  return v;
}

element element_of_typestr(const std::string& s) {
  // numpy's typestr: byte order, kind, size ("<f4"); '|' or '=' for no or native order.
  if (s.size() < 3 || s[0] == '>') return element::other;
  const std::string kind_size = s.substr(1);
  if (kind_size == "i4") return element::i32;
  if (kind_size == "u4") return element::u32;
  if (kind_size == "i8") return element::i64;
  if (kind_size == "u8") return element::u64;
  if (kind_size == "f4") return element::f32;
  if (kind_size == "f8") return element::f64;
  return element::other;
}

array_view from_cuda_array_interface(const py::dict& d, const char* what) {
  array_view v;
  const auto data = d["data"].cast<py::tuple>();
  v.data = reinterpret_cast<void*>(data[0].cast<std::uintptr_t>());
  v.read_only = data.size() > 1 && data[1].cast<bool>();
  const auto typestr = d["typestr"].cast<std::string>();
  v.type = element_of_typestr(typestr);
  v.item_bytes = typestr.size() >= 3 ? std::stoi(typestr.substr(2)) : 0;
  for (auto e : d["shape"].cast<py::tuple>()) {
    v.shape.push_back(e.cast<std::int64_t>());
    if (v.shape.back() < 0)
      throw py::value_error(std::string(what) + ": an extent of " + std::to_string(v.shape.back()));
  }
  if (d.contains("strides") && !d["strides"].is_none()) {
    std::vector<std::int64_t> strides;
    for (auto e : d["strides"].cast<py::tuple>()) {
      const auto bytes = e.cast<std::int64_t>();
      if (v.item_bytes == 0 || bytes % v.item_bytes != 0) {
        v.contiguous = false;
        return v;
      }
      strides.push_back(bytes / v.item_bytes);
    }
    v.contiguous = is_c_contiguous(v.shape, strides);
  }
  if (d.contains("mask") && !d["mask"].is_none())
    throw py::type_error(std::string(what) + ": masked arrays are not supported");
  if (d.contains("stream") && !d["stream"].is_none()) {
    v.producer_stream = d["stream"].cast<std::int64_t>();
    // 0 is forbidden by the interface (it could mean either default stream).
    if (v.producer_stream <= 0)
      throw py::value_error(std::string(what) + ": __cuda_array_interface__ stream " +
                            std::to_string(v.producer_stream) + " is not a stream");
  }
  v.on_device = true;
  v.device = -1;  // not in the interface: the pointer's device is found by the caller
  return v;
}

// (pointer, typestr, count, device[, owner]): a contiguous device array of `count` elements,
// the package's handle for PyTorch tensors, read in a fraction of a dict's time.
array_view from_device_tuple(const py::tuple& t, const char* what) {
  if (t.size() < 4)
    throw py::type_error(std::string(what) + ": a device handle is (pointer, typestr, count, device)");
  array_view v;
  v.data = reinterpret_cast<void*>(t[0].cast<std::uintptr_t>());
  const auto typestr = t[1].cast<std::string>();
  v.type = element_of_typestr(typestr);
  v.item_bytes = typestr.size() >= 3 ? std::stoi(typestr.substr(2)) : 0;
  v.shape = {t[2].cast<std::int64_t>()};
  v.on_device = true;
  v.device = t[3].cast<int>();
  return v;
}

}  // namespace

array_view view_of(const py::handle& obj, const char* what) {
  if (py::isinstance<py::tuple>(obj)) return from_device_tuple(py::reinterpret_borrow<py::tuple>(obj), what);
  if (py::isinstance<py::capsule>(obj)) return from_capsule(py::reinterpret_borrow<py::capsule>(obj), what);
  if (py::isinstance<py::dict>(obj))
    return from_cuda_array_interface(py::reinterpret_borrow<py::dict>(obj), what);
  throw py::type_error(std::string(what) +
                       ": expected a DLPack capsule or a __cuda_array_interface__ dict");
}

std::string element_name(element e) {
  switch (e) {
    case element::i32: return "int32";
    case element::u32: return "uint32";
    case element::i64: return "int64";
    case element::u64: return "uint64";
    case element::f32: return "float32";
    case element::f64: return "float64";
    default: return "an unsupported type";
  }
}

}  // namespace gpusort_python
