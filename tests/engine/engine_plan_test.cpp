// Engine tests under MPI (1, 2, 4 ranks) of planning: what a budget buys when checkpoints differ
// in size (each kind priced by its bytes, solution-only schedules filling stage-sized slots), and
// plans reused for identical runs and repriced at other disk costs.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "engine_test_util.hpp"
#include "rewind/error.hpp"
#include "rewind/schedule/registry.hpp"
#include "rewind/schedule/simulator.hpp"

namespace rwd::testing {
namespace {

// A RAM budget counts restart checkpoints: a schedule that keeps pullback data four times as
// large pays four times the bytes for it, so the bytes held never exceed the budget's. `mixed`
// plans in units (one state: a restart takes 1, a step's stages 4); the others in slots.
TEST(Engine, AutoPricesPullbackDataByItsSize) {
  const Ring ring(MPI_COMM_WORLD, 40);
  Lorenz96Rk4 l96(ring, 0.01);  // pullback data: 4 stage vectors; restart data: 1
  const std::int64_t state = ring.local() * 8;
  std::int64_t largest = 0;  // sizes are planned for the rank where they are largest
  MPI_Allreduce(&state, &largest, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
  std::vector<double> reference;
  for (std::int64_t ram : {3, 4, 8, 12}) {
    EngineConfig c = config("auto", ram, 0);
    const auto [g, stats] = adjoint(l96, c);
    EXPECT_LE(stats.ram.peak_bytes, ram * state) << "ram " << ram;
    if (reference.empty()) reference = g;
    EXPECT_TRUE(all_ranks(bitwise_equal(g, reference))) << "ram " << ram;
    // The schedule that knows sizes plans with ram units of one state each ...
    c.schedule = "mixed";
    l96.reset(0.0);
    const engine::Plan plan = engine::plan_for(l96, MPI_COMM_WORLD, c);
    EXPECT_EQ(plan.params.ram_units, ram);
    EXPECT_EQ(plan.params.restart_units, 1);
    EXPECT_EQ(plan.params.pullback_units, 4);
    EXPECT_FALSE(plan.params.pullback_holds_next);
    EXPECT_EQ(plan.unit_bytes, largest);
    // ... and keeps within them, with the same bits.
    l96.reset(0.0);
    const auto [gm, sm] = adjoint(l96, c);
    EXPECT_LE(sm.ram.peak_bytes, ram * state) << "ram " << ram;
    EXPECT_TRUE(all_ranks(bitwise_equal(gm, reference))) << "ram " << ram;
  }
  // Two levels: disk-mixed plans its RAM in the same units (disk slots hold restart states),
  // keeps within the bytes and the disk slots, gives the same bits, and takes no more forward
  // steps than planned with slots of the larger kind (a quarter as many).
  for (std::int64_t ram : {4, 8}) {
    EngineConfig c = config("disk-mixed", ram, 6);
    l96.reset(0.0);
    const engine::Plan plan = engine::plan_for(l96, MPI_COMM_WORLD, c);
    EXPECT_EQ(plan.params.ram_units, ram);
    EXPECT_EQ(plan.params.pullback_units, 4);
    l96.reset(0.0);
    const auto [gd, sd] = adjoint(l96, c);
    EXPECT_TRUE(all_ranks(bitwise_equal(gd, reference))) << "disk-mixed ram " << ram;
    EXPECT_LE(sd.ram.peak_bytes, ram * state) << "disk-mixed ram " << ram;
    EXPECT_LE(sd.disk.peak, 6) << "disk-mixed ram " << ram;
    EXPECT_GT(sd.disk.writes, 0) << "disk-mixed ram " << ram;
    EXPECT_EQ(sd.forward_steps, plan.forward_steps) << "disk-mixed ram " << ram;
    schedule::ScheduleParams slots = plan.params;
    slots.ram_units = 0;
    slots.ram = ram / 4;
    slots.period = 0;
    const auto as_slots = schedule::simulate(*schedule::make_schedule("disk-mixed", slots), slots);
    EXPECT_LE(sd.forward_steps, as_slots.fwd_total) << "disk-mixed ram " << ram;
  }
  // PETSc's reading: a slot holds a step's stages with the state they end in, so 4 slots
  // are 4 x (4 + 1) units.
  EngineConfig any = config("mixed", 4, 0);
  any.slot_size = engine::SlotSize::Any;
  l96.reset(0.0);
  EXPECT_EQ(engine::plan_for(l96, MPI_COMM_WORLD, any).params.ram_units, 20);
  // Restart-only schedules fill those bytes with restart states: 4 slots of a step's stages
  // and its state each hold 4 x (4 + 1) states (fewer when the step count is not known and the
  // restart data is every variable), claimed as the 4 slots they fill, within the bytes and with
  // the same bits.
  for (const char* restart_only : {"twolevel", "online"}) {
    EngineConfig r = config(restart_only, 4, 0);
    r.slot_size = engine::SlotSize::Any;
    if (std::string(restart_only) == "online") {
      r.params.steps = 0;  // learnt at the end
      l96.stop_at = kSteps;
    }
    l96.reset(0.0);
    const engine::Plan plan = engine::plan_for(l96, MPI_COMM_WORLD, r);
    const std::int64_t slot = engine::any_slot_bytes(plan.sizes);
    EXPECT_EQ(plan.params.ram, 4 * slot / plan.sizes.restart)
        << restart_only << ": sizes " << plan.sizes.restart << " and " << plan.sizes.pullback;
    if (r.params.steps > 0) {
      EXPECT_EQ(plan.params.ram, 20) << restart_only;
    }
    EXPECT_EQ(engine::claim_of(plan).ram, 4) << restart_only;
    l96.reset(0.0);
    const auto [gr, sr] = adjoint(l96, r);
    EXPECT_TRUE(all_ranks(bitwise_equal(gr, reference))) << restart_only;
    EXPECT_LE(sr.ram.peak_bytes, 4 * slot) << restart_only;
    EXPECT_GT(sr.ram.peak, 4) << restart_only << ": the bytes hold more solution checkpoints";
    EngineConfig slots = r;  // the same count read as restart slots: more recomputation
    slots.slot_size = engine::SlotSize::Restart;
    l96.reset(0.0);
    EXPECT_LT(sr.forward_steps, adjoint(l96, slots).second.forward_steps) << restart_only;
    l96.stop_at = 0;
  }
  // A byte budget caps both kinds; it counts the largest rank's checkpoints.
  EngineConfig bytes = config("auto", 30, 0);
  bytes.ram_bytes = static_cast<double>(6 * largest);
  const auto [g, stats] = adjoint(l96, bytes);
  EXPECT_LE(stats.ram.peak_bytes, 6 * state);
  EXPECT_EQ(stats.ram.peak, 6);
  // A byte budget alone (no slot count) decides the slots, and gives the same gradient.
  EngineConfig only_bytes = bytes;
  only_bytes.params.ram = 0;
  const auto [g2, stats2] = adjoint(l96, only_bytes);
  EXPECT_EQ(stats2.ram.peak, 6);
  EXPECT_TRUE(all_ranks(bitwise_equal(g2, g)));
}

TEST(Engine, PlansAreReusedForIdenticalRuns) {
  const Ring ring(MPI_COMM_WORLD, 40);
  Lorenz96Rk4 l96(ring, 0.01);
  EngineConfig c = config("auto", 7, 3);
  c.params.write_cost = 0.375;  // a budget no other test plans
  const auto before = engine::plan_cache_stats();
  const auto [g1, s1] = adjoint(l96, c);
  const auto middle = engine::plan_cache_stats();
  const auto [g2, s2] = adjoint(l96, c);
  const auto after = engine::plan_cache_stats();
  EXPECT_EQ(middle.planned - before.planned, 1);
  EXPECT_EQ(after.planned, middle.planned);
  EXPECT_GE(after.reused - middle.reused, 2);  // the engine's plan and its recording's
  EXPECT_TRUE(bitwise_equal(g1, g2));
  EXPECT_EQ(s1.forward_steps, s2.forward_steps);
}

// A plan replayed at the costs it was made for costs what planning said; at other disk costs it
// costs its own forward steps plus those costs times its own disk traffic.
TEST(Engine, PlansAreRepricedAtOtherDiskCosts) {
  const engine::CheckpointSizes sizes{800, 3200, 800};
  struct PlanCase {
    const char* schedule;
    std::int64_t ram, disk;
    bool pullback;
  };
  for (const PlanCase& b :
       {PlanCase{"auto", 5, 0, true}, PlanCase{"auto", 3, 12, true}, PlanCase{"auto", 3, 12, false},
        PlanCase{"twolevel", 3, kUnlimited, false}, PlanCase{"disk-mixed", 4, 40, true},
        PlanCase{"revolve", 6, 0, false}}) {
    engine::RecordingConfig c;
    c.schedule = b.schedule;
    c.params.steps = 60;
    c.params.ram = b.ram;
    c.params.disk = b.disk;
    c.params.write_cost = 0.7;
    c.params.read_cost = 0.3;
    c.pullback_checkpoints = b.pullback;
    const engine::Plan plan = engine::plan_recording(c, sizes);
    ASSERT_TRUE(plan.cost.has_value());
    EXPECT_EQ(plan.sizes.pullback, sizes.pullback);
    const schedule::SimulationResult same = engine::replay_plan(plan, 0.7, 0.3);
    EXPECT_DOUBLE_EQ(same.cost, *plan.cost) << plan.schedule;
    const schedule::SimulationResult other = engine::replay_plan(plan, 5.0, 2.0);
    EXPECT_EQ(other.fwd_total, same.fwd_total) << plan.schedule;
    EXPECT_EQ(other.disk.writes, same.disk.writes);
    EXPECT_DOUBLE_EQ(other.cost, static_cast<double>(other.fwd_total) +
                                     5.0 * static_cast<double>(other.disk.writes) +
                                     2.0 * static_cast<double>(other.disk.reads))
        << plan.schedule;
    if (b.disk != 0) {
      EXPECT_GT(other.disk.writes, 0) << plan.schedule;
    }
  }
  engine::RecordingConfig online;
  online.params.ram = 4;
  EXPECT_THROW(engine::replay_plan(engine::plan_recording(online, sizes), 1, 1), Error);
}

// A step's pullback data that holds the state it ends in (a first-same-as-last method's last
// stage): a SlotSize::Any slot is worth that data alone, or, with slot_counts_state (PETSc's
// rule for a method it does not call stiffly accurate), that data and the state: 5 slots of 4
// one-vector stages are 20 or 25 units, and the larger budget recomputes less.
TEST(Engine, AnySlotMayCountTheStateHeldInPullbackData) {
  engine::CheckpointSizes sizes{800, 3200, 800};
  sizes.pullback_holds_next = true;
  EXPECT_EQ(engine::any_slot_bytes(sizes), 3200);
  EXPECT_EQ(engine::any_slot_bytes(sizes, true), 4000);
  sizes.pullback_holds_next = false;
  EXPECT_EQ(engine::any_slot_bytes(sizes), 4000);
  EXPECT_EQ(engine::any_slot_bytes(sizes, true), 4000);
  sizes.pullback_holds_next = true;
  engine::RecordingConfig c;
  c.schedule = "mixed";
  c.params.steps = 300;
  c.params.ram = 5;
  c.slot_size = engine::SlotSize::Any;
  const engine::Plan stages = engine::plan_recording(c, sizes);
  c.slot_counts_state = true;
  const engine::Plan with_state = engine::plan_recording(c, sizes);
  EXPECT_EQ(stages.params.ram_units, 20);
  EXPECT_EQ(with_state.params.ram_units, 25);
  EXPECT_EQ(with_state.slot_bytes, 4000);
  ASSERT_TRUE(stages.forward_steps && with_state.forward_steps);
  EXPECT_LT(*with_state.forward_steps, *stages.forward_steps);
  // Restart-only schedules fill the slots' bytes with restart states: 5 x 5, not 5 x 4.
  c.schedule = "twolevel";
  EXPECT_EQ(engine::plan_recording(c, sizes).params.ram, 25);
  c.slot_counts_state = false;
  EXPECT_EQ(engine::plan_recording(c, sizes).params.ram, 20);
}

}  // namespace
}  // namespace rwd::testing
