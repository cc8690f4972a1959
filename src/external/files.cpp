// gpusort::sort_file, sort_pairs_file and sort_records_file (gpusort/external.hpp), compiled
// once per key type: the library's calls into the file machinery of this folder (the same
// that `gpusort sort` runs).
#include <string>

#include "callback_progress.hpp"
#include "external_sort.hpp"
#include "gpusort/external.hpp"
#include "nan_move.hpp"
#include "record_sort.hpp"

namespace gpusort::detail::external {

namespace {

sort_request request_of(const std::string& in, const std::string& out, bool pairs,
                        const gpusort::external_options& opt, progress_sink& meter,
                        gpusort::file_sort_stats& stats) {
  return sort_request{.input = in,
                      .output = out,
                      .pairs = pairs,
                      .opt = with_nans_largest(opt.sort),
                      .device_budget_given = opt.device_budget_bytes > 0,
                      .device_budget_bytes = opt.device_budget_bytes,
                      .host_budget_bytes = opt.host_budget_bytes,
                      .devices = opt.devices,
                      .stats = &stats,
                      .meter = &meter};
}

void throw_if_wrong(int status, const std::string& out) {
  if (status != 0)
    throw wrong_result("the sort returned a wrong result; " + out + " was not written");
}

}  // namespace

template <class K>
gpusort::file_sort_stats sort_typed_file(const std::string& in, const std::string& out,
                                         bool pairs, const gpusort::external_options& opt) {
  callback_progress meter(opt);
  gpusort::file_sort_stats stats;
  sort_request request = request_of(in, out, pairs, opt, meter, stats);
  narrow_file_request<K>(request, opt.sort, "");
  pending_file output(out, true, opt.scratch_directory);
  place_nans_on_commit<K>(output, opt.sort, pairs, false);
  throw_if_wrong(sort_keys_file<K>(request, output), out);
  return stats;
}

gpusort::file_sort_stats sort_records_file(const std::string& in, const std::string& out,
                                           const gpusort::record_format& format,
                                           const gpusort::external_options& opt) {
  const record_layout layout{format.record_bytes, format.key_offset, format.key_bytes,
                             key_kind::bytes, opt.sort.direction == order::descending};
  check_layout(layout);
  callback_progress meter(opt);
  gpusort::file_sort_stats stats;
  const sort_request request = request_of(in, out, false, opt, meter, stats);
  pending_file output(out, true, opt.scratch_directory);
  throw_if_wrong(sort_byte_records_file(request, layout, output), out);
  return stats;
}

void set_signal_cleanup(bool on) { signal_cleanup_allowed.store(on); }

#define GPUSORT_FILES_INSTANTIATE(K)                                                     \
  template gpusort::file_sort_stats sort_typed_file<K>(const std::string&, const std::string&, \
                                                       bool, const gpusort::external_options&);
GPUSORT_FILES_INSTANTIATE(std::int8_t)
GPUSORT_FILES_INSTANTIATE(std::uint8_t)
GPUSORT_FILES_INSTANTIATE(std::int16_t)
GPUSORT_FILES_INSTANTIATE(std::uint16_t)
GPUSORT_FILES_INSTANTIATE(__half)
GPUSORT_FILES_INSTANTIATE(__nv_bfloat16)
GPUSORT_FILES_INSTANTIATE(std::uint32_t)
GPUSORT_FILES_INSTANTIATE(std::int32_t)
GPUSORT_FILES_INSTANTIATE(float)
GPUSORT_FILES_INSTANTIATE(std::uint64_t)
GPUSORT_FILES_INSTANTIATE(std::int64_t)
GPUSORT_FILES_INSTANTIATE(double)

}  // namespace gpusort::detail::external
