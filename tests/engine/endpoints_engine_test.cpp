// `endpoints` in the engine (docs/schedules.md, "Pullback data made of states"): a stepper whose
// declaration (Stepper::pullback_from_states()) is wrong, on every rank or on one, is an error on
// every rank, never a wrong gradient; a lossy codec that keeps pullback data exact is not given a
// plan that composes pullback data from lossy states.
#include <gtest/gtest.h>
#include <mpi.h>

#include <string>

#include "engine_test_util.hpp"
#include "rewind/engine/plan.hpp"
#include "rewind/error.hpp"
#include "theta_stepper.hpp"

namespace rwd::testing {
namespace {

// Runs `c` and returns the error's message ("" if it ran), the same on every rank's side: each
// rank must get an error when any rank's declaration is wrong.
std::string run_error(ImplicitCubic& s, const EngineConfig& c) {
  try {
    adjoint(s, c);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument) << e.what();
    return e.what();
  }
  return {};
}

TEST(EndpointsEngine, AWrongDeclarationIsAnErrorOnEveryRankNotAWrongGradient) {
  const Ring ring(MPI_COMM_WORLD, 40);
  ImplicitCubic stepper(ring, 0.02);
  const auto [reference, ref_stats] = adjoint(stepper, storeall_config());
  const auto [g, stats] = adjoint(stepper, config("endpoints", 4, 0));
  EXPECT_TRUE(all_ranks(bitwise_equal(g, reference)));
  EXPECT_GT(stats.recomputed(), 0);
  EXPECT_GT(stats.composed, 0);
  EXPECT_NE(stats.summary().find("pullback data composed from two states for " +
                                 std::to_string(stats.composed) + " adjoint steps"),
            std::string::npos)
      << stats.summary();
  EXPECT_NE(stats.json().find("\"composed\": " + std::to_string(stats.composed)),
            std::string::npos);

  // The two sources swapped: each field names the other state.
  stepper.set_sources({{true, 0}, {false, 0}});
  const std::string swapped = run_error(stepper, config("endpoints", 4, 0));
  EXPECT_NE(swapped.find("Stepper::pullback_from_states() does not describe step"),
            std::string::npos)
      << swapped;
  EXPECT_NE(swapped.find("pullback field 'x_in' does not hold the bits of"), std::string::npos)
      << swapped;

  // Wrong on the last rank only: the others get the error too, naming that rank.
  const bool last = world_rank() == world_size() - 1;
  stepper.set_sources(last ? std::vector<engine::Stepper::StateSource>{{false, 0}, {false, 0}}
                           : std::vector<engine::Stepper::StateSource>{{false, 0}, {true, 0}});
  const std::string one = run_error(stepper, config("endpoints", 4, 0));
  EXPECT_FALSE(one.empty());
  if (!last) {
    EXPECT_NE(one.find("on rank " + std::to_string(world_size() - 1)), std::string::npos) << one;
  }
  // Malformed (one source for two fields; a variable state() does not have), on the last rank
  // only: a clear error on every rank, with `auto` too (not a silent fallback).
  for (const auto& bad : {std::vector<engine::Stepper::StateSource>{{false, 0}},
                          std::vector<engine::Stepper::StateSource>{{false, 0}, {true, 7}}}) {
    stepper.set_sources(last ? bad
                             : std::vector<engine::Stepper::StateSource>{{false, 0}, {true, 0}});
    for (const char* schedule : {"endpoints", "auto", "revolve"}) {
      const std::string malformed = run_error(stepper, config(schedule, 4, 0));
      EXPECT_NE(malformed.find("Stepper::pullback_from_states() is malformed on at least one rank"),
                std::string::npos)
          << schedule << ": " << malformed;
      if (last) {
        EXPECT_NE(
            malformed.find(bad.size() == 1 ? "names 1 sources for the 2 fields"
                                           : "comes from state variable 7, but state() has 2"),
            std::string::npos)
            << malformed;
      }
    }
  }
  stepper.set_sources({{false, 0}, {true, 0}});
}

// A state variable no stage holds (a step counter every step writes, which the stepper checks
// before each step): composed runs stay store-all's bits and every recomputation starts from a
// state that holds it. (A restart state kept from composed stages, keep_start, also holds x_i's
// value of it; `endpoints` only composes from such a state, never steps from it, so no run here
// would read a wrong one.)
TEST(EndpointsEngine, StateVariablesNoStageHoldsKeepTheirValues) {
  const Ring ring(MPI_COMM_WORLD, 40);
  ImplicitCubic stepper(ring, 0.02);
  stepper.set_clock(true);
  const auto [reference, ref_stats] = adjoint(stepper, storeall_config());
  for (std::int64_t ram : {3, 5, 8}) {
    const auto [g, stats] = adjoint(stepper, config("endpoints", ram, 0));
    EXPECT_TRUE(all_ranks(bitwise_equal(g, reference))) << ram;
    EXPECT_GT(stats.composed, 0) << ram;
  }
}

TEST(EndpointsEngine, LossyCodecComposesOnlyWithLossyPullbacks) {
  const Ring ring(MPI_COMM_WORLD, 40);
  ImplicitCubic stepper(ring, 0.02);
  EngineConfig c = config("auto", 4, 0);
  c.store.codec.name = "zfp";
  c.store.codec.tolerance = 1e-6;
  c.pullback_checkpoints = true;
  // The run plans with its stores: exact pullback data under zfp means no composing from lossy
  // states (Engine::plan(), made without the stores, is a preview that cannot tell).
  EXPECT_NE(adjoint(stepper, c).second.schedule, "endpoints");
  c.lossy_pullbacks = true;
  EXPECT_EQ(adjoint(stepper, c).second.schedule, "endpoints");
  c.lossy_pullbacks = false;
  c.schedule = "endpoints";
  const std::string refused = run_error(stepper, c);
  EXPECT_NE(refused.find("endpoints"), std::string::npos) << refused;
}

}  // namespace
}  // namespace rwd::testing
