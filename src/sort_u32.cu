#include "sort_impl.cuh"

GPUSORT_EXTERN_KEY(std::uint64_t)  // sorts the stable tie-break's composites

GPUSORT_INSTANTIATE_KEY(std::uint32_t)

// The narrow keys' codes (src/sort_narrow.cu) are sorted here.
#define GPUSORT_INSTANTIATE_WORKSPACE_BYTES(V) \
  template cudaError_t gpusort::detail::sort_workspace_bytes<std::uint32_t, V>(std::uint64_t, const gpusort::options&, std::size_t&);
GPUSORT_INSTANTIATE_WORKSPACE_BYTES(gpusort::detail::no_value)
GPUSORT_INSTANTIATE_WORKSPACE_BYTES(gpusort::detail::payload<4>)
GPUSORT_INSTANTIATE_WORKSPACE_BYTES(gpusort::detail::payload<8>)
GPUSORT_INSTANTIATE_WORKSPACE_BYTES(gpusort::detail::payload<16>)
#undef GPUSORT_INSTANTIATE_WORKSPACE_BYTES
