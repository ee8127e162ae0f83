#include <gtest/gtest.h>

#include <limits>
#include <optional>
#include <tuple>
#include <variant>
#include <vector>

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
  const auto info = [&factory](const char* name, const char* summary) {
    return ScheduleInfo{.name = name,
                        .summary = summary,
                        .online = false,
                        .uses_disk = false,
                        .factory = factory,
                        .restart_only = false};
  };
  EXPECT_THROW(reg.add(info("revolve", "dup")), Error);
  EXPECT_THROW(reg.add(info("auto", "reserved")), Error);
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
    const double least = testing::least_registered_cost(p);
    const std::string chosen = reg.choose(p);
    auto s = make_schedule("auto", p);
    EXPECT_EQ(s->name(), chosen);
    EXPECT_DOUBLE_EQ(simulate(*s, p).cost, least) << describe(p) << " chose " << chosen;
  }
}

// A driver whose adjoint-data checkpoints are larger (PETSc's stages under a byte budget) prices
// a schedule that stores pullback data with its own, smaller slot count, and every other schedule
// with the restart slot count, whichever was cheapest before it.
TEST(Registry, AutoPricesAdjointDataWithItsOwnSlots) {
  const auto& reg = ScheduleRegistry::instance();
  // The documented points: n = 1000, 10 slots: mixed 3921 < revolve 4636; mixed with 4 slots
  // pays more than Revolve with 10.
  ScheduleParams p = ram_budget(1000, 10);
  PricedSchedule c = reg.choose_priced(p, 10);
  EXPECT_EQ(c.name, "mixed");
  EXPECT_EQ(c.cost, 3921);
  EXPECT_TRUE(c.stores_pullback);
  c = reg.choose_priced(p, 4);
  EXPECT_FALSE(c.stores_pullback) << c.name;
  EXPECT_EQ(c.cost, 4636) << c.name;
  EXPECT_EQ(c.params.ram, 10);
  c = reg.choose_priced(p, std::nullopt);
  EXPECT_FALSE(c.stores_pullback) << c.name;
  ASSERT_FALSE(reg.price("mixed", p, std::nullopt).has_value());
  // No pullback slot at all: a schedule that keeps pullback data must manage without RAM.
  EXPECT_THROW(reg.price("mixed", p, 0), Error);
  ScheduleParams on_disk = p;
  on_disk.disk = kUnlimited;
  const auto storeall = reg.price("storeall", on_disk, 0);
  ASSERT_TRUE(storeall.has_value());
  EXPECT_EQ(storeall->params.ram, 0);
  EXPECT_EQ(storeall->cost, 1000 + 1000 * (on_disk.write_cost + on_disk.read_cost));
  EXPECT_EQ(reg.price("mixed", p, 4)->params.ram, 4);
  EXPECT_EQ(reg.price("revolve", p, 4)->params.ram, 10);

  // Over a grid: the choice is the least of every schedule priced on its own, and replaying it
  // with the parameters it returns gives its cost.
  for (const auto& [n, ram, disk] : std::vector<std::tuple<Step, std::int64_t, std::int64_t>>{
           {30, 3, 0}, {200, 6, 0}, {200, 3, 4}, {1000, 8, 0}}) {
    ScheduleParams q = ram_budget(n, ram);
    q.disk = disk;
    q.write_cost = 2;
    q.read_cost = 1;
    for (const std::optional<std::int64_t> adj :
         {std::optional<std::int64_t>{}, {0}, {1}, {2}, {ram / 2}, {ram}}) {
      double least = std::numeric_limits<double>::infinity();
      for (const auto& e : reg.list()) {
        try {
          auto s = e.factory(q);
          bool stores = false;
          double cost = simulate(*s, q, [&](const Action& a) {
                          const auto* f = std::get_if<Forward>(&a);
                          stores = stores || (f && f->write_pullback && f->level != Level::Work);
                        }).cost;
          if (stores) {
            if (!adj) continue;
            ScheduleParams r = q;
            r.ram = *adj;
            auto t = e.factory(r);
            cost = simulate(*t, r).cost;
          }
          least = std::min(least, cost);
        } catch (const Error& err) {
          ASSERT_EQ(err.code(), ErrorCode::InvalidArgument) << err.what();
        }
      }
      const PricedSchedule chosen = reg.choose_priced(q, adj);
      const std::string where =
          describe(q) + " pullback_ram " + (adj ? std::to_string(*adj) : "none");
      EXPECT_DOUBLE_EQ(chosen.cost, least) << where << " chose " << chosen.name;
      auto s = make_schedule(chosen.name, chosen.params);
      EXPECT_DOUBLE_EQ(simulate(*s, chosen.params).cost, chosen.cost) << where;
      EXPECT_EQ(chosen.params.ram, chosen.stores_pullback ? *adj : ram) << where;
    }
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
