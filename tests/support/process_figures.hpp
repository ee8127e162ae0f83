#pragma once
// What this process holds, read from /proc (Linux), for the soak tests: resident memory now and
// at its peak, and open file descriptors.
#include <filesystem>
#include <fstream>
#include <string>

namespace rwd::soak {

struct ProcessFigures {
  double rss_mib = 0;   // VmRSS: resident now
  double peak_mib = 0;  // VmHWM: the most resident so far (since reset_peak())
  int fds = 0;          // open file descriptors
};

/// A "kB" line of /proc/self/status ("VmRSS", "VmHWM") in MiB, or -1 if it is missing.
inline double status_mib(const std::string& key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) == 0) return std::stod(line.substr(key.size() + 1)) / 1024.0;
  }
  return -1.0;
}

inline ProcessFigures process_figures() {
  ProcessFigures f;
  f.rss_mib = status_mib("VmRSS");
  f.peak_mib = status_mib("VmHWM");
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    ++f.fds;
  }
  return f;
}

/// Resets VmHWM to VmRSS (writing 5 to /proc/self/clear_refs): VmHWM then gives the peak of
/// what runs from here.
inline void reset_peak() {
  std::ofstream("/proc/self/clear_refs") << "5";
}

}  // namespace rwd::soak
