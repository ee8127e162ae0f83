// storeall: record every step's pullback data in the first sweep; no recomputation.
#include <array>

#include "builtin.hpp"
#include "rewind/error.hpp"

namespace rwd::schedule::detail {

namespace {

class StoreAllSchedule final : public Schedule {
 public:
  explicit StoreAllSchedule(const ScheduleParams& p) : Schedule(p) {
    if (p.steps == 0) {
      // Online use (step count unknown): record into RAM, or disk if no RAM is given; the
      // budget is checked as the run goes.
      require(p.ram > 0 || p.disk != 0,
              "storeall: with an unknown step count give RAM or disk slots");
      level_ = p.ram > 0 ? Level::Ram : Level::Disk;
      return;
    }
    check_offline_params("storeall", p, 0);
    if (p.ram >= p.steps) {
      level_ = Level::Ram;
    } else if (p.disk == kUnlimited || p.disk >= p.steps) {
      level_ = Level::Disk;
    } else {
      throw Error(ErrorCode::InvalidArgument,
                  "storeall needs one slot per step: " + std::to_string(p.steps) +
                      " RAM slots or disk slots, but has ram=" + std::to_string(p.ram) +
                      " disk=" + std::to_string(p.disk) +
                      "; raise the budget or choose a recomputing schedule (revolve)");
    }
  }

  std::string name() const override { return "storeall"; }
  bool online() const override { return open_; }
  void finalize(Step n) override {
    if (!open_) {
      Schedule::finalize(n);
      return;
    }
    require(n >= 1, "storeall: the run must have at least one step");
    params_.steps = n;
    open_ = false;
  }

  std::optional<Action> next() override {
    if (open_ && index_ == 0) {
      ++index_;
      return Forward{0, kOpenEnd, false, true, level_};
    }
    const Step n = params_.steps;
    const std::array<Action, 4> stream = {Forward{0, n, false, true, level_}, EndForward{},
                                          Reverse{n, 0, true}, EndReverse{}};
    if (index_ >= stream.size()) return std::nullopt;
    return stream[index_++];
  }

 private:
  static constexpr Step kOpenEnd = Step{1} << 62;
  Level level_ = Level::Ram;
  std::size_t index_ = 0;
  bool open_ = params_.steps == 0;
};

}  // namespace

void register_storeall(ScheduleRegistry& registry) {
  registry.add(
      {.name = "storeall",
       .summary = "store every step's pullback data (RAM if it fits, else disk); no "
                  "recomputation",
       .online = false,
       .uses_disk = true,
       .factory = [](const ScheduleParams& p) { return std::make_unique<StoreAllSchedule>(p); },
       .restart_only = false});
}

}  // namespace rwd::schedule::detail
