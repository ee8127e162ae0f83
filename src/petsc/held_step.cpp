#include "held_step.hpp"

#include <algorithm>
#include <string>

#include "rewind/error.hpp"

namespace rwd::petsc {

namespace {

std::vector<std::vector<double>> copy(const std::vector<engine::Field>& fields) {
  std::vector<std::vector<double>> out;
  out.reserve(fields.size());
  for (const engine::Field& f : fields) out.emplace_back(f.data.begin(), f.data.end());
  return out;
}

void write(const std::vector<std::vector<double>>& from, const std::vector<engine::Field>& to) {
  if (from.size() != to.size()) {
    throw Error(ErrorCode::Internal, "rewind: a held step has " + std::to_string(from.size()) +
                                         " fields, the stepper " + std::to_string(to.size()));
  }
  for (std::size_t f = 0; f < to.size(); ++f) {
    if (from[f].size() != to[f].data.size()) {
      throw Error(ErrorCode::Internal, "rewind: field '" + std::string(to[f].name) +
                                           "' changed size while a step was held");
    }
    std::copy(from[f].begin(), from[f].end(), to[f].data.begin());
  }
}

}  // namespace

HeldStep::HeldStep(engine::Stepper& stepper)
    : state_(copy(stepper.state())), pullback_(copy(stepper.pullback())) {}

void HeldStep::put_back(engine::Stepper& stepper) const {
  write(state_, stepper.state());
  write(pullback_, stepper.pullback());
  stepper.loaded(engine::Kind::Pullback);
}

}  // namespace rwd::petsc
