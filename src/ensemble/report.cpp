#include <sstream>

#include "rewind/ensemble/ensemble.hpp"

namespace rwd::ensemble {

std::string EnsembleReport::json() const {
  std::ostringstream os;
  os.precision(9);
  os << "{\"tasks\": " << tasks << ", \"groups\": " << groups << ", \"group_size\": " << group_size
     << ", \"assign\": \"" << to_string(assign)
     << "\", \"costliest_first\": " << (costliest_first ? "true" : "false")
     << ", \"resumed_generation\": " << resumed_generation
     << ", \"forward_seconds\": " << forward_seconds
     << ", \"backward_seconds\": " << backward_seconds
     << ", \"backward_cotangent_bytes\": " << backward_cotangent_bytes
     << ", \"backward_reduction_bytes\": " << backward_reduction_bytes << ", \"peak_rss_bytes\": [";
  for (std::size_t r = 0; r < peak_rss_bytes.size(); ++r) {
    os << (r ? ", " : "") << peak_rss_bytes[r];
  }
  os << "], \"mapping\": [";
  for (std::size_t k = 0; k < mapping.size(); ++k) {
    const TaskRecord& m = mapping[k];
    const TaskCost& c = m.cost;
    os << (k ? ", " : "") << "{\"task\": " << m.task << ", \"group\": " << m.group
       << ", \"position\": " << m.position << ", \"forward\": [" << m.forward_begin << ", "
       << m.forward_end << "], \"backward\": [" << m.backward_begin << ", " << m.backward_end
       << "], \"steps\": " << c.steps << ", \"forward_steps\": " << c.forward_steps
       << ", \"adjoint_steps\": " << c.adjoint_steps << ", \"ram_peak_bytes\": " << c.ram_peak_bytes
       << ", \"disk_bytes_written\": " << c.disk_bytes_written
       << ", \"spilled\": " << (c.spilled ? "true" : "false")
       << ", \"cut\": " << (c.cut ? "true" : "false")
       << ", \"forward_resumed\": " << (m.forward_resumed ? "true" : "false")
       << ", \"backward_resumed\": " << (m.backward_resumed ? "true" : "false") << "}";
  }
  os << "]}";
  return os.str();
}

}  // namespace rwd::ensemble
