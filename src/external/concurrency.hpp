// How the host layer runs work at once. Two tools, each for one kind of work:
//   - OpenMP loops for data-parallel work over host memory (checksums, order scans, gathers,
//     the pieces of a file's I/O, parallel_sort below): its threads are kept between loops,
//     which matters for the many short loops of a pipeline;
//   - run_concurrently for workers that must all run at the same time because they wait on
//     each other or on a GPU (a rank per GPU at a barrier or in NCCL, a staging lane per
//     slot pair, a writer beside the next gather). OpenMP may give a nested region a single
//     thread, which would leave such workers waiting forever. rank_checkpoints are the points
//     where such workers decide together to go on or stop.
#pragma once

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cstdint>
#include <exception>
#include <iterator>
#include <latch>
#include <mutex>
#include <thread>
#include <vector>

namespace gpusort::detail::external {

// True on a thread that is one of many sharing the cores already (a staging lane of
// link_copier): the host layer's OpenMP loops run serially there instead of starting a team
// of every core on each of the many threads.
inline thread_local bool one_of_many = false;

// Sets one_of_many for its scope (as it was after).
class one_of_many_scope {
 public:
  explicit one_of_many_scope(bool on) : before_(one_of_many) { one_of_many = on; }
  ~one_of_many_scope() { one_of_many = before_; }
  one_of_many_scope(const one_of_many_scope&) = delete;
  one_of_many_scope& operator=(const one_of_many_scope&) = delete;

 private:
  bool before_;
};

// work(w) for every w in [0, workers) at the same time, w = 0 on the calling thread. All start
// or none does: a worker may wait for another, so none begins before every thread exists, and
// where one cannot be made none runs. The first exception (a worker's, or the failure to make
// a thread) is rethrown once every worker has returned.
template <class Work>
void run_concurrently(unsigned workers, Work&& work) {
  if (workers <= 1) {
    if (workers == 1) work(0u);
    return;
  }
  std::mutex m;
  std::exception_ptr failure;
  const auto record = [&](std::exception_ptr e) {
    std::lock_guard lock(m);
    if (!failure) failure = std::move(e);
  };
  std::latch all_made(1);
  bool abandoned = false;  // written before all_made opens, read after
  const auto run = [&](unsigned w) {
    all_made.wait();
    if (abandoned) return;
    try {
      work(w);
    } catch (...) {
      record(std::current_exception());
    }
  };
  std::vector<std::thread> pool;
  try {
    pool.reserve(workers - 1);
    for (unsigned w = 1; w < workers; ++w) pool.emplace_back(run, w);
  } catch (...) {
    abandoned = true;
    record(std::current_exception());
  }
  all_made.count_down();
  run(0);
  for (std::thread& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
}

// Sorts [first, last) by `less` on all cores: a piece a thread sorted side by side, then the
// pieces merged pairwise, each round's merges side by side. Not stable; with a strict total
// order (ties broken by index, as the record sorts do) the result is the one std::sort gives.
template <class It, class Less>
void parallel_sort(It first, It last, Less less) {
  const std::int64_t n = std::distance(first, last);
  constexpr std::int64_t smallest_piece = std::int64_t{1} << 14;
  const std::int64_t pieces = std::clamp<std::int64_t>(n / smallest_piece, 1, omp_get_max_threads());
  if (pieces == 1) {
    std::sort(first, last, less);
    return;
  }
  const auto bound = [&](std::int64_t p) { return first + std::min(n, p * ((n + pieces - 1) / pieces)); };
#pragma omp parallel for schedule(static, 1)
  for (std::int64_t p = 0; p < pieces; ++p) std::sort(bound(p), bound(p + 1), less);
  for (std::int64_t width = 1; width < pieces; width *= 2) {
#pragma omp parallel for schedule(static, 1)
    for (std::int64_t p = 0; p < pieces - width; p += 2 * width)
      std::inplace_merge(bound(p), bound(p + width), bound(std::min(pieces, p + 2 * width)), less);
  }
}

// Points where the workers of run_concurrently meet (ranks that must stop or go on together:
// none may be left waiting in NCCL for one that stopped). At each, once every worker has
// arrived, worker 0 (the calling thread) runs `report`, which may throw (a cancel: kept for
// the caller to rethrow); then every worker learns whether to go on. All stop where the
// report threw, or where a worker has left (failed) before the point. The answer is taken
// once a point, as the last worker arrives, so that every worker reads the same one.
class rank_checkpoints {
 public:
  explicit rank_checkpoints(int workers) : arrived_(workers), decided_(workers, decide{this}) {}
  rank_checkpoints(const rank_checkpoints&) = delete;
  rank_checkpoints& operator=(const rank_checkpoints&) = delete;
  template <class Report>
  bool pass(int worker, Report&& report) {
    arrived_.arrive_and_wait();
    if (worker == 0 && !left_) {
      try {
        report();
      } catch (...) {
        stopped_ = std::current_exception();
      }
    }
    decided_.arrive_and_wait();
    return go_on_;
  }
  // A worker that failed: it meets no more points, and the others stop at the next.
  void leave() {
    left_ = true;
    arrived_.arrive_and_drop();
    decided_.arrive_and_drop();
  }
  const std::exception_ptr& stopped() const { return stopped_; }

 private:
  struct decide {
    rank_checkpoints* points;
    void operator()() noexcept { points->go_on_ = !points->stopped_ && !points->left_; }
  };
  std::barrier<> arrived_;
  std::barrier<decide> decided_;
  std::exception_ptr stopped_;
  std::atomic<bool> left_{false};
  bool go_on_ = true;  // written as a point's last worker arrives, read by all once released
};

}  // namespace gpusort::detail::external
