// The item sort of GPU-ABiSort, compiled once per item width (32- and 64-bit ordered keys)
// rather than once per key type.
#include "gpusort/detail/device/adaptive_bitonic.cuh"

namespace gpusort::detail::device {

template <class U>
cudaError_t abi_sort_items(abisort::item_t<U>* buffers[2], abisort::side_node<abisort::item_t<U>>* side,
                           abisort::pq_state* states, int L, int block_bits,
                           unsigned long long* counter, cudaStream_t stream, int& result) {
  switch (block_bits) {
    case 1: return abi_run<U, 1>(buffers, side, states, L, counter, stream, result);
    case 10: return abi_run<U, 10>(buffers, side, states, L, counter, stream, result);
    case 11: return abi_run<U, 11>(buffers, side, states, L, counter, stream, result);
    case 12: return abi_run<U, 12>(buffers, side, states, L, counter, stream, result);
    case 13: return abi_run<U, 13>(buffers, side, states, L, counter, stream, result);
    default: return cudaErrorInvalidValue;
  }
}

#define GPUSORT_INSTANTIATE_ABI(U)                                                           \
  template cudaError_t abi_sort_items<U>(abisort::item_t<U>*[2], abisort::side_node<abisort::item_t<U>>*, \
                                         abisort::pq_state*, int, int, unsigned long long*,      \
                                         cudaStream_t, int&);
GPUSORT_INSTANTIATE_ABI(std::uint32_t)
GPUSORT_INSTANTIATE_ABI(std::uint64_t)
#undef GPUSORT_INSTANTIATE_ABI

}  // namespace gpusort::detail::device
