// Standard descriptors closed when the tool starts (`gpusort sort - out <&-`, `2>&-`): each
// gets /dev/null, as coreutils does, so that no file the tool opens takes its number. Else a
// closed stdin would be OUT's temporary file, read back as `-`, and a closed stderr would be
// OUT, its messages and progress lines written into the data.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>

#include "arguments.hpp"  // usage_error
#include "streams.hpp"    // named_descriptor

namespace gpusort::tools {

namespace detail {
inline bool closed_at_start[3] = {false, false, false};
}

// Once, first thing in main(); an exit code of 3 when /dev/null cannot stand in.
inline void open_dev_null_onto_closed_standard_descriptors() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    detail::closed_at_start[fd] = true;
    // The lowest free number is fd: those below it are open by now.
    if (::open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY) != fd) std::_Exit(3);
  }
}

// Whether standard descriptor fd (0, 1 or 2) was closed when the tool started.
inline bool standard_descriptor_was_closed(int fd) { return detail::closed_at_start[fd]; }

// A file argument that names a standard descriptor closed when the tool started (`-`,
// /dev/stdin, /dev/fd/1...): refused, since /dev/null now stands in for it.
inline void refuse_closed_descriptor(const std::string& file, int dash_fd) {
  const int fd = gpusort::detail::external::named_descriptor(file, dash_fd);
  if (fd >= 0 && fd <= 2 && standard_descriptor_was_closed(fd))
    throw usage_error(file + ": standard " +
                      std::string(fd == 0 ? "input" : fd == 1 ? "output" : "error") + " is closed");
}

}  // namespace gpusort::tools
