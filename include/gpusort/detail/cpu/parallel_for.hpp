// Host threads for the CPU backend and the library's host-side steps (text lines).
#pragma once

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

namespace gpusort::detail::cpu {

// Runs f(i) for i in [0, count) on up to `threads` host threads (0: all cores).
template <class F>
void parallel_for(std::uint64_t count, unsigned threads, F&& f) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  if (threads == 1 || count < 2) {
    for (std::uint64_t i = 0; i < count; ++i) f(i);
    return;
  }
  const unsigned workers = static_cast<unsigned>(std::min<std::uint64_t>(threads, count));
  std::vector<std::thread> pool;
  pool.reserve(workers);
  for (unsigned t = 0; t < workers; ++t) {
    pool.emplace_back([&, t] {
      const std::uint64_t begin = count * t / workers, end = count * (t + 1) / workers;
      for (std::uint64_t i = begin; i < end; ++i) f(i);
    });
  }
  for (auto& th : pool) th.join();
}

// How many pieces to cut `count` items into for parallel_for: a few a core, none shorter than
// `least` (one, on the calling thread, for a short range). Piece p of n is
// [count * p / n, count * (p + 1) / n).
inline std::uint64_t piece_count(std::uint64_t count, std::uint64_t least) {
  const std::uint64_t threads = std::max(1u, std::thread::hardware_concurrency());
  return std::clamp<std::uint64_t>(count / std::max<std::uint64_t>(least, 1), 1, threads * 4);
}

}  // namespace gpusort::detail::cpu
