// Host helpers of the approximate sort's API (approx.hpp).
#include "gpusort/approx.hpp"

namespace gpusort::detail {

std::string check_approx_options(const options& opt) {
  if (opt.intervals > (1u << 24))
    return "options.intervals = " + std::to_string(opt.intervals) + " is more than 2^24";
  if (opt.interval_splitters != splitters::linear && opt.interval_splitters != splitters::sampled)
    return "options.interval_splitters is neither linear nor sampled";
  return {};
}

approx_quality quality_from_words(const unsigned long long (&words)[4], std::uint64_t n) {
  approx_quality q;
  q.largest_interval = words[0];
  q.out_of_place = words[1];
  q.mean_distance = n ? static_cast<double>(words[2]) / static_cast<double>(n) : 0.0;
  q.max_distance = words[3];
  return q;
}

}  // namespace gpusort::detail
