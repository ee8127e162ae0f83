#pragma once
// A copy of what a stepper's buffers hold after a step (its state and its pullback data), put
// back later. The PETSc front end plans a run with measured disk costs only once a step without
// set-up has been timed (the second), and hands the recording the first step from this copy.

#include <vector>

#include "rewind/engine/stepper.hpp"

namespace rwd::petsc {

class HeldStep {
 public:
  /// Copies stepper.state() and stepper.pullback().
  explicit HeldStep(engine::Stepper& stepper);
  /// Writes the copies back into stepper.state() and stepper.pullback() (fields of the same
  /// sizes; a buffer in both gets the same values twice) and tells the stepper they changed.
  void put_back(engine::Stepper& stepper) const;

 private:
  std::vector<std::vector<double>> state_, pullback_;
};

}  // namespace rwd::petsc
