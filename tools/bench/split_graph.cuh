// The MSD split without the host's wait, as a prototype for gpusort-radix-hybrid (rows
// split_graph; docs/notes-radix-sort.md, "the split without the wait"): one CUDA graph,
// made once for an array and launched for each sort, in which the device itself picks the
// work from the keys' differing bits:
//   reduce   the OR of every key's ordered bits XOR the first key's, into a device word;
//   choose   one thread: the window (msd_window_for) into device memory, and two
//            conditional handles: `pick`, the window's lowest bit (a SWITCH node's body), or
//            no body when every key is the same; `finish`, whether bits below it remain;
//   SWITCH   body b: CUB's radix sort of bits [b, b + bits) (every body as many digit
//            passes, so the split always ends in the same buffer);
//   starts   the split copied back to the keys' array where it ended in the second buffer,
//            and the buckets' starts (msd_split.cuh's write_bucket_starts);
//   IF       (finish) the segmented sort of the 2^bits buckets.
// 8-byte integer keys alone, ascending. The graph's arrays are fixed when it is made (a
// library call would cache one per array or update its nodes' parameters).
#pragma once

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>

#include <algorithm>
#include <chrono>
#include <cstdint>

#include "gpusort/detail/device/msd_split.cuh"
#include "gpusort/segmented.hpp"
#include "small_bench.hpp"  // check

namespace gpusort::tools {

namespace split_graph_detail {

namespace im = gpusort::detail::index_math;

__global__ void choose_window_kernel(const std::uint64_t* differing, int bits,
                                     im::msd_window* window, unsigned bodies,
                                     cudaGraphConditionalHandle pick,
                                     cudaGraphConditionalHandle finish) {
  const im::msd_window w = im::msd_window_for(*differing, bits);
  *window = w;
  cudaGraphSetConditional(pick, w.bits == 0 ? bodies : static_cast<unsigned>(w.low_bit));
  cudaGraphSetConditional(finish, w.low_bit > 0 ? 1u : 0u);
}

template <class K>
__global__ void graph_starts_kernel(const K* split, K* back, std::uint64_t n,
                                    const im::msd_window* window, std::uint32_t* starts) {
  const std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x;
  const im::msd_window w = *window;
  if (i >= n || w.bits == 0) return;  // every key the same: no body ran
  const K key = split[i];
  if (back) back[i] = key;
  if (w.low_bit > 0)
    gpusort::detail::device::msd_split::write_bucket_starts(split, key, i, n, w, false, starts);
}

// Adds a conditional node after what `stream` has captured so far, and makes it the capture's
// new dependency; returns its body graphs.
inline cudaGraph_t* add_conditional(cudaStream_t stream, cudaGraphConditionalHandle handle,
                                    cudaGraphConditionalNodeType type, unsigned bodies) {
  cudaStreamCaptureStatus status{};
  cudaGraph_t graph = nullptr;
  const cudaGraphNode_t* deps = nullptr;
  const cudaGraphEdgeData* edges = nullptr;
  std::size_t count = 0;
  check(cudaStreamGetCaptureInfo(stream, &status, nullptr, &graph, &deps, &edges, &count),
        "cudaStreamGetCaptureInfo");
  cudaGraphNodeParams params{};
  params.type = cudaGraphNodeTypeConditional;
  params.conditional.handle = handle;
  params.conditional.type = type;
  params.conditional.size = bodies;
  cudaGraphNode_t node = nullptr;
  check(cudaGraphAddNode(&node, graph, deps, edges, count, &params), "cudaGraphAddNode");
  check(cudaStreamUpdateCaptureDependencies(stream, &node, nullptr, 1,
                                            cudaStreamSetCaptureDependencies),
        "cudaStreamUpdateCaptureDependencies");
  return params.conditional.phGraph_out;
}

}  // namespace split_graph_detail

// The graph for n keys at `keys` with a window of `bits`, its workspace its own.
template <class K>
class split_graph {
 public:
  split_graph(K* keys, std::uint64_t n, int bits) {
    namespace sg = split_graph_detail;
    using gpusort::detail::no_value;
    const auto count = static_cast<std::uint32_t>(n);
    const std::uint64_t buckets = std::uint64_t{1} << bits;
    check(cudaMalloc(&second_, sizeof(K) * n), "cudaMalloc");
    check(cudaMalloc(&starts_, sizeof(std::uint32_t) * (buckets + 1)), "cudaMalloc");
    check(cudaMalloc(&word_, sizeof(std::uint64_t)), "cudaMalloc");
    check(cudaMalloc(&window_, sizeof(sg::im::msd_window)), "cudaMalloc");
    const gpusort::detail::device::msd_split::differs_from_first<K> differs{keys};
    const gpusort::detail::device::msd_split::bitwise_or either{};
    const sg::im::segment_list segs{starts_, starts_ + 1, buckets, 0, 4};
    const gpusort::options ascending{};
    std::size_t reduce_bytes = 0, split_bytes = 0, bucket_bytes = 0;
    cub::DoubleBuffer<K> probe(keys, second_);
    check(cub::DeviceReduce::TransformReduce(nullptr, reduce_bytes, keys, word_, n, either,
                                             differs, std::uint64_t{0}),
          "reduce");
    check(cub::DeviceRadixSort::SortKeys(nullptr, split_bytes, probe, count, 0, bits), "split");
    check(gpusort::detail::sort_segments<K, no_value>(nullptr, bucket_bytes, keys, nullptr, n,
                                                       segs, ascending),
          "buckets");
    bytes_ = std::max({reduce_bytes, split_bytes, bucket_bytes});
    check(cudaMalloc(&rest_, bytes_), "cudaMalloc");
    extra_bytes = sizeof(K) * n + sizeof(std::uint32_t) * (buckets + 1) + bytes_;

    cudaStream_t stream = nullptr, body = nullptr;
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
    check(cudaStreamCreateWithFlags(&body, cudaStreamNonBlocking), "cudaStreamCreate");
    // Where CUB leaves a split of `bits` bits: every body makes as many passes.
    {
      cudaGraph_t scratch = nullptr;
      cub::DoubleBuffer<K> db(keys, second_);
      check(cudaStreamBeginCapture(body, cudaStreamCaptureModeThreadLocal), "capture");
      std::size_t b = bytes_;
      check(cub::DeviceRadixSort::SortKeys(rest_, b, db, count, 0, bits, body), "split");
      check(cudaStreamEndCapture(body, &scratch), "capture");
      cudaGraphDestroy(scratch);
      in_second_ = db.Current() != keys;
    }
    const unsigned bodies = static_cast<unsigned>(65 - bits);  // lowest bits 0 .. 64 - bits
    const auto started = std::chrono::steady_clock::now();
    check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "capture");
    cudaStreamCaptureStatus status{};
    cudaGraph_t graph = nullptr;
    check(cudaStreamGetCaptureInfo(stream, &status, nullptr, &graph), "capture");
    cudaGraphConditionalHandle pick{}, finish{};
    check(cudaGraphConditionalHandleCreate(&pick, graph, 0, 0), "handle");
    check(cudaGraphConditionalHandleCreate(&finish, graph, 0, 0), "handle");
    std::size_t b = bytes_;
    check(cub::DeviceReduce::TransformReduce(rest_, b, keys, word_, n, either, differs,
                                             std::uint64_t{0}, stream),
          "reduce");
    sg::choose_window_kernel<<<1, 1, 0, stream>>>(word_, bits, window_, bodies, pick, finish);
    check(cudaGetLastError(), "choose");
    cudaGraph_t* split_bodies =
        sg::add_conditional(stream, pick, cudaGraphCondTypeSwitch, bodies);
    sg::graph_starts_kernel<<<static_cast<unsigned>((n + 255) / 256), 256, 0, stream>>>(
        in_second_ ? second_ : keys, in_second_ ? keys : nullptr, n, window_, starts_);
    check(cudaGetLastError(), "starts");
    cudaGraph_t* finish_body = sg::add_conditional(stream, finish, cudaGraphCondTypeIf, 1);
    check(cudaStreamEndCapture(stream, &graph_), "capture");
    for (unsigned low = 0; low < bodies; ++low) {
      check(cudaStreamBeginCaptureToGraph(body, split_bodies[low], nullptr, nullptr, 0,
                                          cudaStreamCaptureModeThreadLocal),
            "capture");
      cub::DoubleBuffer<K> db(keys, second_);
      b = bytes_;
      check(cub::DeviceRadixSort::SortKeys(rest_, b, db, count, static_cast<int>(low),
                                           static_cast<int>(low) + bits, body),
            "split");
      check(cudaStreamEndCapture(body, nullptr), "capture");
    }
    check(cudaStreamBeginCaptureToGraph(body, finish_body[0], nullptr, nullptr, 0,
                                        cudaStreamCaptureModeThreadLocal),
          "capture");
    b = bytes_;
    check(gpusort::detail::sort_segments<K, no_value>(rest_, b, keys, nullptr, n, segs,
                                                       {.stream = body}),
          "buckets");
    check(cudaStreamEndCapture(body, nullptr), "capture");
    check(cudaGraphInstantiate(&exec_, graph_, 0), "cudaGraphInstantiate");
    build_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() -
                                                         started)
                   .count();
    cudaStreamDestroy(stream);
    cudaStreamDestroy(body);
  }
  ~split_graph() {
    if (exec_) cudaGraphExecDestroy(exec_);
    if (graph_) cudaGraphDestroy(graph_);
    cudaFree(second_);
    cudaFree(starts_);
    cudaFree(word_);
    cudaFree(window_);
    cudaFree(rest_);
  }
  split_graph(const split_graph&) = delete;
  split_graph& operator=(const split_graph&) = delete;

  // Sorts the keys the graph was made for, on `stream`, with no wait.
  void launch(cudaStream_t stream = nullptr) {
    check(cudaGraphLaunch(exec_, stream), "cudaGraphLaunch");
  }

  double build_ms = 0;          // capture and instantiation, host clock
  std::size_t extra_bytes = 0;  // the second buffer, starts and the steps' workspace

 private:
  K* second_ = nullptr;
  std::uint32_t* starts_ = nullptr;
  std::uint64_t* word_ = nullptr;
  split_graph_detail::im::msd_window* window_ = nullptr;
  void* rest_ = nullptr;
  std::size_t bytes_ = 0;
  bool in_second_ = false;
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

}  // namespace gpusort::tools
