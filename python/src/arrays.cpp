#include "arrays.hpp"

#include <string_view>
#include <utility>

namespace gpusort_python {

namespace {

element element_of(int code, int bits, int lanes) {
  struct dlpack_type {
    int code, bits;
    element type;
  };
  constexpr dlpack_type known[] = {
      {kDLInt, 32, element::i32},   {kDLUInt, 32, element::u32},  {kDLInt, 64, element::i64},
      {kDLUInt, 64, element::u64},  {kDLFloat, 32, element::f32}, {kDLFloat, 64, element::f64},
      {kDLBool, 8, element::b8},    {kDLInt, 8, element::i8},     {kDLUInt, 8, element::u8},
      {kDLInt, 16, element::i16},   {kDLUInt, 16, element::u16},  {kDLFloat, 16, element::f16},
      {kDLBfloat, 16, element::bf16}};
  if (lanes != 1) return element::other;
  for (const dlpack_type& k : known)
    if (k.code == code && k.bits == bits) return k.type;
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

// numpy's typestr: byte order, kind, size ("<f4"); '|' or '=' for no or native order. NumPy
// has no bfloat16: the package names it "<bf2" in its own device handles.
element element_of_typestr(const std::string& s) {
  if (s.size() < 3 || s[0] == '>') return element::other;
  const std::string_view kind_size = std::string_view(s).substr(1);
  constexpr std::pair<std::string_view, element> known[] = {
      {"i4", element::i32}, {"u4", element::u32}, {"i8", element::i64}, {"u8", element::u64},
      {"f4", element::f32}, {"f8", element::f64}, {"b1", element::b8},  {"i1", element::i8},
      {"u1", element::u8},  {"i2", element::i16}, {"u2", element::u16}, {"f2", element::f16},
      {"bf2", element::bf16}};
  for (const auto& [name, e] : known)
    if (kind_size == name) return e;
  return element::other;
}

// The element size a typestr gives: its trailing digits (0 where there are none).
int typestr_bytes(const std::string& s) {
  std::size_t first = s.size();
  while (first > 0 && s[first - 1] >= '0' && s[first - 1] <= '9') --first;
  return first < s.size() && s.size() - first < 6 ? std::stoi(s.substr(first)) : 0;
}

array_view from_cuda_array_interface(const py::dict& d, const char* what) {
  array_view v;
  const auto data = d["data"].cast<py::tuple>();
  v.data = reinterpret_cast<void*>(data[0].cast<std::uintptr_t>());
  v.read_only = data.size() > 1 && data[1].cast<bool>();
  const auto typestr = d["typestr"].cast<std::string>();
  v.type = element_of_typestr(typestr);
  v.item_bytes = typestr_bytes(typestr);
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
  v.item_bytes = typestr_bytes(typestr);
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
    case element::b8: return "bool";
    case element::i8: return "int8";
    case element::u8: return "uint8";
    case element::i16: return "int16";
    case element::u16: return "uint16";
    case element::f16: return "float16";
    case element::bf16: return "bfloat16";
    default: return "an unsupported type";
  }
}

}  // namespace gpusort_python
