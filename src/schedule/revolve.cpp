// revolve: offline binomial checkpointing in RAM (Griewank & Walther), generated lazily.
//
// The reverse of [l, h) with s slots (one holding x_l) advances m steps, stores x_{l+m},
// reverses [l+m, h) with s-1 slots, then restores x_l and reverses [l, l+m) with s slots.
// The split m is revolve_split() (segments.hpp): the cost is the upper envelope of lines whose
// slopes step by one at beta(s, r), so the optimum has a closed-form range of splits. The stack of
// stored positions replaces the recursion, so memory is O(s) and each action O(r + s).
#include <algorithm>
#include <deque>
#include <vector>

#include "builtin.hpp"
#include "rewind/error.hpp"
#include "rewind/schedule/binomial.hpp"
#include "segments.hpp"

namespace rwd::schedule::detail {

namespace {

class RevolveSchedule final : public Schedule {
 public:
  explicit RevolveSchedule(const ScheduleParams& p) : Schedule(p) {
    check_offline_params("revolve", p, 1);
    require(p.ram <= p.steps, "revolve: RAM slots (" + std::to_string(p.ram) +
                                  ") exceed the step count (" + std::to_string(p.steps) +
                                  "); at most one slot per step is useful: lower the " +
                                  "RAM slots or use storeall");
    stack_.reserve(static_cast<std::size_t>(p.ram));
    rev_ = p.steps;
  }

  std::string name() const override { return "revolve"; }

  std::optional<Action> next() override {
    if (pending_.empty()) generate();
    if (pending_.empty()) return std::nullopt;
    Action a = pending_.front();
    pending_.pop_front();
    return a;
  }

 private:
  void generate() {
    if (ended_) return;
    if (rev_ == 0) {
      pending_.push_back(EndReverse{});
      ended_ = true;
      return;
    }
    if (!work_) {
      const Step c = stack_.back();
      if (c == rev_ - 1) {
        pending_.push_back(Move{c, Level::Ram, Level::Work});
        stack_.pop_back();
      } else {
        pending_.push_back(Copy{c, Level::Ram, Level::Work});
      }
      work_ = c;
    }
    const Step pos = *work_;
    const Step length = rev_ - pos;
    if (length == 1) {
      pending_.push_back(Forward{pos, rev_, false, true, Level::Work});
      if (!forward_done_) {
        pending_.push_back(EndForward{});
        forward_done_ = true;
      }
      pending_.push_back(Reverse{rev_, pos, true});
      rev_ = pos;
      work_.reset();
      return;
    }
    const bool stored = store_next_ || (!stack_.empty() && stack_.back() == pos);
    if (!stored) {  // x_0 at the start of the first sweep
      stack_.push_back(pos);
      store_next_ = true;
    }
    const auto slots = params_.ram - static_cast<std::int64_t>(stack_.size()) + 1;
    const Step m = slots <= 1 ? length - 1 : revolve_split(length, slots);
    pending_.push_back(
        Forward{pos, pos + m, store_next_, false, store_next_ ? Level::Ram : Level::None});
    store_next_ = false;
    work_ = pos + m;
    if (rev_ - *work_ >= 2) {
      stack_.push_back(*work_);
      store_next_ = true;
    }
  }

  std::vector<Step> stack_;  // stored positions, increasing; x_0 first
  std::optional<Step> work_ = 0;
  Step rev_ = 0;
  bool store_next_ = false;  // the next Forward writes the restart state it starts from
  bool forward_done_ = false;
  bool ended_ = false;
  std::deque<Action> pending_;
};

}  // namespace

void register_revolve(ScheduleRegistry& registry) {
  registry.add(
      {.name = "revolve",
       .summary = "optimal binomial checkpointing in RAM (Griewank-Walther); fewest "
                  "recomputations for a fixed slot count",
       .online = false,
       .uses_disk = false,
       .factory = [](const ScheduleParams& p) { return std::make_unique<RevolveSchedule>(p); },
       .restart_only = false});
}

}  // namespace rwd::schedule::detail
