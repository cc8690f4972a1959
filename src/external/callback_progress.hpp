// external_options' progress callback and cancel flag as the machinery's progress sink, for
// the library's file and host-array sorts (files.cpp, host_arrays.cpp).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "gpusort/error.hpp"
#include "gpusort/external.hpp"
#include "progress_sink.hpp"

namespace gpusort::detail::external {

class callback_progress final : public progress_sink {
 public:
  explicit callback_progress(const gpusort::external_options& opt)
      : report_(opt.progress), cancel_(opt.cancel) {}
  void phase(std::string_view name, bool counted) override {
    stop_if_asked();
    phase_ = name;
    if (report_ && !counted) report_(phase_, 0, 0);
  }
  void advance(std::uint64_t done, std::uint64_t total) override {
    stop_if_asked();
    if (report_) report_(phase_, done, total);
  }

 private:
  void stop_if_asked() const {
    if (cancel_ && cancel_->load(std::memory_order_relaxed))
      throw gpusort::cancelled("the sort was cancelled; nothing was written");
  }
  const std::function<void(std::string_view, std::uint64_t, std::uint64_t)>& report_;
  const std::atomic<bool>* cancel_;
  std::string phase_;
};

}  // namespace gpusort::detail::external
