#pragma once
// A recording's reverse sweep: un-parking, then for each adjoint step the restores and
// recomputations the schedule asks for, the step's pullback data in the stepper's buffers, the
// checkpoints it frees, the disk reads started ahead; the statistics at the end.

#include "parking.hpp"

namespace rwd::engine::detail {

struct ReverseSweep : Parking {
  using Parking::Parking;

  void begin_reverse();
  // Thins the recording to x_0 and the final state and plans its reverse again (replan()) with
  // the compression ratio its RAM checkpoints reached on the rank where they compressed worst,
  // with kCompressMargin. Collective.
  void replan_measured();
  void prepare_adjoint(Step i);
  // Step r.n0's pullback data, for a Reverse from_states, composed from x_{n0} and x_{n1} into
  // the stepper's buffers (composed_pullback.cpp).
  void compose_pullback(const schedule::Reverse& r);
  void require_variables(Step b);
  void adjoint_done(Step i);
  Step next_adjoint() const;
  RunStats finish();
  RunStats current_stats() const;
};

}  // namespace rwd::engine::detail
