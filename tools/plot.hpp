// Figures of benchmark CSVs: `gpusort plot` and `gpusort bench --plot` run the Python
// package's plotter, `python3 -m gpusort.plot CSV DIR` (python/gpusort/plot.py, matplotlib),
// as a child process (plots come from matplotlib, not from code of ours).
#pragma once

#include <string>
#include <vector>

namespace gpusort::tools {

struct plot_outcome {
  // The plotter's exit status: 0 drawn (perhaps nothing: `error` then says why), 2 bad input
  // or no matplotlib, 3 a file not written; -1 when it could not be run or did not finish.
  int status = -1;
  std::vector<std::string> figures;  // the paths it wrote, as it printed them
  std::string error;                 // its stderr, or why it could not be run (one line)
};

// The interpreter is $GPUSORT_PYTHON, else the one the build was configured with (CMake's
// Python_EXECUTABLE) where it exists, else python3 from PATH. The package is found through
// PYTHONPATH: $GPUSORT_PYTHON_DIR, else the source tree's python/ (GPUSORT_SOURCE_PYTHON_DIR,
// from CMake) if it is still there, else the install location (GPUSORT_INSTALL_PYTHON_DIR),
// else wherever the interpreter finds it (pip install). Does not throw for the child's failures.
plot_outcome run_plotter(const std::string& csv_path, const std::string& dir);

}  // namespace gpusort::tools
