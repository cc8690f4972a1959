// The part of DLPack's C ABI (https://github.com/dmlc/dlpack, include/dlpack/dlpack.h) that
// the module reads, declared here so that building it needs no DLPack header on the host.
// The names, values and layouts are DLPack's own: a capsule made by PyTorch, CuPy or NumPy is
// read through these structs as it is. Only what the module uses is here (device and type
// codes it checks, the tensor and its managed wrappers); don't include this file together
// with a real dlpack.h in one translation unit.
//
// Two generations of the managed tensor exist: DLManagedTensor (capsules named "dltensor",
// what every producer gives by default) and DLPack 1.0's DLManagedTensorVersioned (capsules
// named "dltensor_versioned", given on request with max_version=(1, 0)), which starts with
// its version and carries flags.
#pragma once

#include <cstddef>
#include <cstdint>

extern "C" {

// Where the memory is. DLPack fixes the underlying type at 32 bits.
typedef enum : std::int32_t {
  kDLCPU = 1,           // host memory
  kDLCUDA = 2,          // CUDA device memory
  kDLCUDAHost = 3,      // pinned host memory (cudaMallocHost)
  kDLCUDAManaged = 13,  // CUDA managed (unified) memory
} DLDeviceType;

typedef struct {
  DLDeviceType device_type;
  std::int32_t device_id;  // the device's ordinal; 0 for the host
} DLDevice;

// DLDataType::code's values.
typedef enum {
  kDLInt = 0U,
  kDLUInt = 1U,
  kDLFloat = 2U,
  kDLBfloat = 4U,
  kDLBool = 6U,
} DLDataTypeCode;

typedef struct {
  std::uint8_t code;    // a DLDataTypeCode
  std::uint8_t bits;    // bits of one lane: 32 for float32
  std::uint16_t lanes;  // 1 for scalars
} DLDataType;

typedef struct {
  void* data;  // with byte_offset added: the first element
  DLDevice device;
  std::int32_t ndim;
  DLDataType dtype;
  std::int64_t* shape;    // ndim extents
  std::int64_t* strides;  // ndim strides in elements, or null for C order
  std::uint64_t byte_offset;
} DLTensor;

typedef struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(struct DLManagedTensor* self);
} DLManagedTensor;

// DLPack 1.0.
typedef struct {
  std::uint32_t major;
  std::uint32_t minor;
} DLPackVersion;

// DLManagedTensorVersioned::flags: the consumer must not write to the tensor.
#define DLPACK_FLAG_BITMASK_READ_ONLY (UINT64_C(1) << 0)
// DLManagedTensorVersioned::flags: the producer made a copy (writes do not reach the source).
#define DLPACK_FLAG_BITMASK_IS_COPIED (UINT64_C(1) << 1)

typedef struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(struct DLManagedTensorVersioned* self);
  std::uint64_t flags;
  DLTensor dl_tensor;
} DLManagedTensorVersioned;

}  // extern "C"

// The layouts as DLPack's header gives them (x86-64 and AArch64 Linux: 8-byte pointers).
static_assert(sizeof(DLDeviceType) == 4);
static_assert(sizeof(DLDevice) == 8 && offsetof(DLDevice, device_id) == 4);
static_assert(sizeof(DLDataType) == 4 && offsetof(DLDataType, bits) == 1 &&
              offsetof(DLDataType, lanes) == 2);
static_assert(sizeof(DLPackVersion) == 8 && offsetof(DLPackVersion, minor) == 4);
#if UINTPTR_MAX == UINT64_MAX
static_assert(offsetof(DLTensor, data) == 0 && offsetof(DLTensor, device) == 8 &&
              offsetof(DLTensor, ndim) == 16 && offsetof(DLTensor, dtype) == 20 &&
              offsetof(DLTensor, shape) == 24 && offsetof(DLTensor, strides) == 32 &&
              offsetof(DLTensor, byte_offset) == 40 && sizeof(DLTensor) == 48);
static_assert(offsetof(DLManagedTensor, dl_tensor) == 0 &&
              offsetof(DLManagedTensor, manager_ctx) == 48 &&
              offsetof(DLManagedTensor, deleter) == 56 && sizeof(DLManagedTensor) == 64);
static_assert(offsetof(DLManagedTensorVersioned, version) == 0 &&
              offsetof(DLManagedTensorVersioned, manager_ctx) == 8 &&
              offsetof(DLManagedTensorVersioned, deleter) == 16 &&
              offsetof(DLManagedTensorVersioned, flags) == 24 &&
              offsetof(DLManagedTensorVersioned, dl_tensor) == 32 &&
              sizeof(DLManagedTensorVersioned) == 80);
#endif
