// One thread per rank, the way the multi-GPU tests and benchmarks drive a communicator set:
// each runs body(rank); a failure is rethrown once every thread has ended.
#pragma once

#include <exception>
#include <thread>
#include <vector>

namespace gpusort::tools {

// on_failure(rank) runs on the failing rank's thread, after its exception is kept: a rank
// that others wait for in a collective must release them there.
template <class Body, class OnFailure>
void on_every_rank(int ranks, const Body& body, const OnFailure& on_failure) {
  std::vector<std::exception_ptr> errors(ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      try {
        body(r);
      } catch (...) {
        errors[r] = std::current_exception();
        on_failure(r);
      }
    });
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

template <class Body>
void on_every_rank(int ranks, const Body& body) {
  on_every_rank(ranks, body, [](int) {});
}

}  // namespace gpusort::tools
