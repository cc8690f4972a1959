// The tool's view of the library's run planning (gpusort/detail/external/run_plan.hpp and
// merge_windows.hpp): their names in this namespace, and a plan that is a usage error when the
// user's budgets allow none.
#pragma once

#include "cli.hpp"
#include "gpusort/detail/external/merge_windows.hpp"
#include "gpusort/detail/external/run_plan.hpp"

namespace gpusort::tools::external {

using detail::external::cut_runs_at;
using detail::external::describe;
using detail::external::first_at_or_after;
using detail::external::mebibyte;
using detail::external::merge_pass_count;
using detail::external::plan_problem;
using detail::external::plan_request;
using detail::external::plan_runs;
using detail::external::rank_key;
using detail::external::run_plan;
using detail::external::run_slice;
using detail::external::window_slices;

// The plan, or a usage error (the budgets are the user's options) saying why there is none.
inline run_plan plan_runs_or_throw(const plan_request& request) {
  const run_plan plan = plan_runs(request);
  if (!plan.ok()) throw usage_error(describe(plan.problem, request));
  return plan;
}

}  // namespace gpusort::tools::external
