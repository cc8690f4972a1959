// The library's notices: what a caller may want to tell its user, which the library itself
// never prints.
#pragma once

#include <functional>
#include <string_view>

namespace gpusort {

// Where the notices go: today one, once per process, that host data is sorted on the CPU and
// why ("no CUDA device found; sorting on the CPU"). None by default, since a library prints
// nothing; the gpusort tool prints them on stderr. An empty handler stops them again.
// Thread-safe; the handler runs on the thread that sorts.
void set_notice_handler(std::function<void(std::string_view notice)> handler);

}  // namespace gpusort
