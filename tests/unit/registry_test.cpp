#include <gtest/gtest.h>

#include <limits>

#include "rewind/error.hpp"
#include "rewind/schedule/registry.hpp"
#include "rewind/schedule/simulator.hpp"
#include "schedule_test_util.hpp"

namespace rwd::schedule {
namespace {

using testing::ram_budget;

TEST(Registry, ListsTheBuiltInSchedules) {
  const auto& reg = ScheduleRegistry::instance();
  for (const char* name : {"storeall", "revolve", "periodic"}) {
    EXPECT_TRUE(reg.contains(name)) << name;
    EXPECT_NE(reg.names().find(name), std::string::npos);
  }
  EXPECT_TRUE(reg.contains("auto"));
  EXPECT_FALSE(reg.contains("revolv"));
  for (const auto& e : reg.list()) EXPECT_FALSE(e.summary.empty()) << e.name;
}

TEST(Registry, UnknownNameListsTheKnownOnes) {
  try {
    make_schedule("revolv", ram_budget(10, 2));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    const std::string what = e.what();
    EXPECT_NE(what.find("unknown schedule 'revolv'"), std::string::npos) << what;
    EXPECT_NE(what.find("revolve"), std::string::npos) << what;
  }
}

TEST(Registry, RejectsDuplicateAndReservedNames) {
  auto& reg = ScheduleRegistry::instance();
  const ScheduleFactory factory = [](const ScheduleParams&) -> std::unique_ptr<Schedule> {
    return nullptr;
  };
  EXPECT_THROW(reg.add({"revolve", "dup", false, false, factory}), Error);
  EXPECT_THROW(reg.add({"auto", "reserved", false, false, factory}), Error);
}

// auto must pick a schedule whose replayed cost is the least of every schedule that accepts the
// budget, and the stream it builds must be that schedule's.
TEST(Registry, AutoPicksTheCheapestThatFits) {
  const auto& reg = ScheduleRegistry::instance();
  for (const auto& [n, ram, disk] : std::vector<std::tuple<Step, std::int64_t, std::int64_t>>{
           {10, 2, 0}, {10, 10, 0}, {100, 25, 0}, {100, 5, kUnlimited}, {1000, 10, 0}}) {
    ScheduleParams p = ram_budget(n, ram);
    p.disk = disk;
    p.write_cost = 3;
    p.read_cost = 3;
    double least = std::numeric_limits<double>::infinity();
    for (const auto& e : reg.list()) {
      try {
        auto s = e.factory(p);
        least = std::min(least, simulate(*s, p).cost);
      } catch (const Error& err) {
        ASSERT_EQ(err.code(), ErrorCode::InvalidArgument) << err.what();
      }
    }
    const std::string chosen = reg.choose(p);
    auto s = make_schedule("auto", p);
    EXPECT_EQ(s->name(), chosen);
    EXPECT_DOUBLE_EQ(simulate(*s, p).cost, least) << describe(p) << " chose " << chosen;
  }
}

TEST(Registry, AutoExplainsWhenNothingFits) {
  try {
    make_schedule("auto", ram_budget(10, 0));
    FAIL();
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("no registered schedule accepts"), std::string::npos) << what;
    EXPECT_NE(what.find("revolve: "), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace rwd::schedule
