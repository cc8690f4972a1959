// The order of a shard's keys by bucket under options::partition_first (dist_impl.cuh): CUB's
// radix sort of (bucket number, position) pairs over bucket_bits(buckets) bits, stable, and
// each bucket's first position. Apart from the key types: one instantiation serves them all.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace gpusort::dist::detail {

// ids: the n keys' bucket numbers (0 to buckets - 1, buckets >= 2), overwritten. With
// temp == nullptr, writes the bytes needed to temp_bytes. Else, on the stream: *order (in
// temp) becomes the n positions in bucket order (positions in input order within a bucket),
// and bounds[0 .. buckets] (device memory) each bucket's first position, then n. Index:
// std::uint32_t for n < 2^32, else std::uint64_t.
// bounds[j] = the first position of a bucket number j or above in `sorted_ids` (n of them,
// in order), for j = 0 .. buckets.
cudaError_t bucket_starts(const std::uint16_t* sorted_ids, std::uint64_t n, int buckets,
                          std::uint64_t* bounds, cudaStream_t stream);

template <class Index>
cudaError_t order_by_bucket(void* temp, std::size_t& temp_bytes, std::uint16_t* ids,
                            std::uint64_t n, int buckets, const Index** order,
                            std::uint64_t* bounds, cudaStream_t stream);

}  // namespace gpusort::dist::detail
