#include <gtest/gtest.h>

#include "rewind/error.hpp"
#include "rewind/schedule/simulator.hpp"
#include "schedule_test_util.hpp"

namespace rwd::schedule {
namespace {

using testing::ListSchedule;
using testing::ram_budget;

SimulationResult run(const ScheduleParams& p, std::vector<Action> actions) {
  ListSchedule s(p, std::move(actions));
  return simulate(s, p);
}

// Expects the stream to be rejected with a message containing `why`.
void expect_rejected(const ScheduleParams& p, std::vector<Action> actions, const std::string& why) {
  try {
    run(p, std::move(actions));
    FAIL() << "stream accepted, expected: " << why;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidSchedule);
    EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
  }
}

TEST(Simulator, CountsStoreAllInRam) {
  const auto r = run(ram_budget(5, 5), {Forward{0, 5, false, true, Level::Ram}, EndForward{},
                                        Reverse{5, 0, true}, EndReverse{}});
  EXPECT_EQ(r.fwd_total, 5);
  EXPECT_EQ(r.recomputed(), 0);
  EXPECT_EQ(r.adjoint_steps, 5);
  EXPECT_EQ(r.ram.writes, 5);
  EXPECT_EQ(r.ram.reads, 5);
  EXPECT_EQ(r.ram.peak, 5);
  EXPECT_EQ(r.disk.writes, 0);
  EXPECT_EQ(r.actions, 4);
  EXPECT_DOUBLE_EQ(r.cost, 5.0);
}

TEST(Simulator, WeighsDiskWritesAndReads) {
  ScheduleParams p = ram_budget(3, 0);
  p.disk = 1;
  p.write_cost = 2.5;
  p.read_cost = 0.5;
  // x_0 to disk, run to the end recording the last step, then recompute from disk twice.
  const auto r =
      run(p, {Forward{0, 2, true, false, Level::Disk}, Forward{2, 3, false, true, Level::Work},
              EndForward{}, Reverse{3, 2, true}, Copy{0, Level::Disk, Level::Work},
              Forward{0, 1, false, false, Level::None}, Forward{1, 2, false, true, Level::Work},
              Reverse{2, 1, true}, Move{0, Level::Disk, Level::Work},
              Forward{0, 1, false, true, Level::Work}, Reverse{1, 0, true}, EndReverse{}});
  EXPECT_EQ(r.fwd_total, 3 + 2 + 1);
  EXPECT_EQ(r.disk.writes, 1);
  EXPECT_EQ(r.disk.reads, 2);
  EXPECT_EQ(r.disk.peak, 1);
  EXPECT_EQ(r.ram.peak, 0);
  EXPECT_DOUBLE_EQ(r.cost, 6 + 2.5 + 2 * 0.5);
}

TEST(Simulator, RejectsForwardFromStateNotHeld) {
  expect_rejected(ram_budget(4, 4), {Forward{1, 4, false, true, Level::Ram}},
                  "working state is x_0");
  expect_rejected(ram_budget(4, 4),
                  {Forward{0, 4, false, true, Level::Ram}, EndForward{}, Reverse{4, 3, true},
                   Forward{3, 4, false, true, Level::Work}},
                  "no valid state");
}

TEST(Simulator, RejectsReverseWithoutAdjointData) {
  expect_rejected(ram_budget(3, 3),
                  {Forward{0, 3, false, false, Level::None}, EndForward{}, Reverse{3, 2, true}},
                  "without its pullback data");
}

TEST(Simulator, RejectsReverseOutOfOrderOrBeforeEndForward) {
  expect_rejected(ram_budget(3, 3), {Forward{0, 3, false, true, Level::Ram}, Reverse{3, 0, true}},
                  "reverse before EndForward");
  expect_rejected(ram_budget(3, 3),
                  {Forward{0, 3, false, true, Level::Ram}, EndForward{}, Reverse{2, 0, true}},
                  "adjoint is at 3");
}

TEST(Simulator, RejectsCopyFromEmptySlot) {
  expect_rejected(ram_budget(3, 3),
                  {Forward{0, 3, false, true, Level::Work}, EndForward{}, Reverse{3, 2, true},
                   Copy{0, Level::Ram, Level::Work}},
                  "x_0 is not stored at ram");
}

TEST(Simulator, RejectsLiveStorageOverBudget) {
  expect_rejected(ram_budget(4, 3), {Forward{0, 4, false, true, Level::Ram}},
                  "4 RAM slots live, budget 3");
  ScheduleParams p = ram_budget(4, 0);
  p.disk = 1;
  expect_rejected(
      p, {Forward{0, 1, true, false, Level::Disk}, Forward{1, 2, true, false, Level::Disk}},
      "2 disk slots live, budget 1");
}

TEST(Simulator, RejectsAnythingLeftStoredAfterEndReverse) {
  expect_rejected(
      ram_budget(2, 3),
      {Forward{0, 2, true, true, Level::Ram}, EndForward{}, Reverse{2, 0, true}, EndReverse{}},
      "leaves 1 RAM and 0 disk checkpoints stored");
  expect_rejected(
      ram_budget(2, 3),
      {Forward{0, 2, false, true, Level::Ram}, EndForward{}, Reverse{2, 0, false}, EndReverse{}},
      "leaves 2 RAM");
}

TEST(Simulator, RejectsIncompleteOrOverlongStreams) {
  expect_rejected(ram_budget(2, 2), {Forward{0, 2, false, true, Level::Ram}, EndForward{}},
                  "ended before EndReverse");
  expect_rejected(ram_budget(2, 2), {Forward{0, 1, false, true, Level::Ram}, EndForward{}},
                  "EndForward but the working state is x_1");
  expect_rejected(ram_budget(2, 2), {Forward{0, 3, false, true, Level::Ram}},
                  "past the last step 2");
  expect_rejected(ram_budget(1, 1),
                  {Forward{0, 1, false, true, Level::Work}, EndForward{}, Reverse{1, 0, true},
                   EndReverse{}, EndReverse{}},
                  "action after EndReverse");
}

TEST(Simulator, RejectsRedundantWritesAndBadLevels) {
  expect_rejected(ram_budget(3, 3),
                  {Forward{0, 1, true, false, Level::Ram}, Copy{1, Level::Work, Level::Ram},
                   Move{1, Level::Ram, Level::Work}, Copy{1, Level::Work, Level::Ram},
                   Copy{1, Level::Work, Level::Ram}},
                  "already stored at ram");
  expect_rejected(ram_budget(3, 3), {Forward{0, 1, true, false, Level::Work}},
                  "restart state written to level work");
  expect_rejected(ram_budget(3, 3),
                  {Forward{0, 1, true, false, Level::Ram}, Copy{0, Level::Ram, Level::None}},
                  "copy to level none");
}

TEST(Simulator, OnlineScheduleIsClippedAndFinalized) {
  ScheduleParams p = ram_budget(4, 1);
  ListSchedule s(p,
                 {Forward{0, 1000, false, true, Level::Work}, EndForward{}, Reverse{4, 3, true},
                  Forward{0, 3, false, false, Level::None}},  // invalid: state not restored
                 true);
  EXPECT_THROW(simulate(s, p), Error);
  EXPECT_EQ(s.finalized_at, 4);
}

}  // namespace
}  // namespace rwd::schedule
