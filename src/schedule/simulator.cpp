#include "rewind/schedule/simulator.hpp"

#include <algorithm>
#include <optional>
#include <sstream>
#include <vector>

#include "rewind/error.hpp"

namespace rwd::schedule {

namespace {

constexpr std::uint8_t bit(Level level) {
  return level == Level::Ram ? 1 : (level == Level::Disk ? 2 : 0);
}

bool is_store(Level level) {
  return level == Level::Ram || level == Level::Disk;
}

// The model of a stepper with its checkpoint stores. Positions are dense (0..n), so every
// check is O(1) per step touched.
class Model {
 public:
  Model(const ScheduleParams& limits, SimulationResult& result)
      : limits_(limits),
        n_(limits.steps),
        ics_(static_cast<std::size_t>(limits.steps) + 1, 0),
        adj_(static_cast<std::size_t>(limits.steps), 0),
        rev_(limits.steps),
        result_(result) {
    result_.steps = n_;
  }

  bool ended() const { return ended_; }
  bool at_end_of_forward() const { return !forward_ended_ && work_ == n_; }

  void apply(const Action& action) {
    std::visit([this](const auto& a) { this->on(a); }, action);
    check_budget();
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw Error(ErrorCode::InvalidSchedule, why);
  }

  std::string pos(const std::optional<Step>& p) const {
    return p ? "x_" + std::to_string(*p) : std::string("no valid state");
  }

  void on(const Forward& a) {
    if (ended_) fail("action after EndReverse");
    if (a.n0 < 0 || a.n1 <= a.n0) fail("empty or backward range");
    if (work_ != a.n0)
      fail("forward from x_" + std::to_string(a.n0) + " but the working state is " + pos(work_));
    const Step limit = forward_ended_ ? rev_ : n_;
    if (a.n1 > limit) {
      fail(forward_ended_ ? "forward past the adjoint position " + std::to_string(rev_)
                          : "forward past the last step " + std::to_string(n_));
    }
    if (a.write_restart) {
      if (!is_store(a.level))
        fail("restart state written to level " + std::string(to_string(a.level)));
      store_ics(a.n0, a.level);
    }
    if (a.write_pullback) {
      if (a.level == Level::Work) {
        work_adj_ = a.n1 - 1;
      } else if (is_store(a.level)) {
        for (Step i = a.n0; i < a.n1; ++i) {
          auto& slot = adj_[static_cast<std::size_t>(i)];
          if (slot & bit(a.level))
            fail("pullback data of step " + std::to_string(i) + " written twice");
          slot |= bit(a.level);
          count_write(a.level, i, true);
        }
      } else {
        fail("pullback data written to level none");
      }
    }
    result_.fwd_total += a.n1 - a.n0;
    for (Step i = a.n0; i < a.n1; ++i) result_.fwd_cost += step_cost(limits_, i);
    if (!forward_ended_) {
      // The driver's side of observe_step: each first-sweep step, the first time it runs.
      for (Step i = std::max(a.n0, swept_); i < a.n1; ++i) {
        first_sweep_.push_back(i);
      }
      swept_ = std::max(swept_, a.n1);
    }
    work_ = a.n1;
  }

  void on(const Reverse& a) {
    if (ended_) fail("action after EndReverse");
    if (!forward_ended_) fail("reverse before EndForward");
    if (a.n1 != rev_)
      fail("reverse from " + std::to_string(a.n1) + " but the adjoint is at " +
           std::to_string(rev_));
    if (a.n0 < 0 || a.n0 >= a.n1) fail("empty or backward range");
    if (a.from_states || a.keep_start) return reverse_from_states(a);
    for (Step i = a.n1 - 1; i >= a.n0; --i) {
      auto& slot = adj_[static_cast<std::size_t>(i)];
      if (work_adj_ == i) {
        // read from the stepper's own buffers: free
      } else if (slot & bit(Level::Ram)) {
        ++result_.ram.reads;
      } else if (slot & bit(Level::Disk)) {
        ++result_.disk.reads;
      } else {
        fail("adjoint of step " + std::to_string(i) + " without its pullback data");
      }
      if (a.clear_pullback) {
        if (slot & bit(Level::Ram)) release(Level::Ram, i, true);
        if (slot & bit(Level::Disk)) release(Level::Disk, i, true);
        slot = 0;
        if (work_adj_ == i) work_adj_.reset();
      }
    }
    result_.adjoint_steps += a.n1 - a.n0;
    rev_ = a.n0;
    work_.reset();
  }

  // The pullback data of step i composed from x_i (stored, or the working state) and x_{i+1}
  // (stored); with keep_start, x_i moves from work into the RAM unit x_{i+1} leaves.
  void reverse_from_states(const Reverse& a) {
    const Step i = a.n0;
    if (!limits_.pullback_from_states) fail("reverse from states, but pullback data is not states");
    if (!a.from_states) fail("keep_start without from_states");
    if (a.n1 != i + 1) fail("reverse from states over more than one step");
    const auto start = ics_[static_cast<std::size_t>(i)];
    const auto end = ics_[static_cast<std::size_t>(i + 1)];
    if (!(end & (bit(Level::Ram) | bit(Level::Disk))))
      fail("reverse of step " + std::to_string(i) + " from states, but x_" + std::to_string(i + 1) +
           " is not stored");
    count_read((end & bit(Level::Ram)) ? Level::Ram : Level::Disk);
    if (a.keep_start) {
      if (work_ != i || (start & bit(Level::Ram)) || !(end & bit(Level::Ram)))
        fail("keep_start needs x_" + std::to_string(i) + " in work (not in RAM) and x_" +
             std::to_string(i + 1) + " in RAM");
      ics_[static_cast<std::size_t>(i + 1)] &= static_cast<std::uint8_t>(~bit(Level::Ram));
      release(Level::Ram, i + 1, false);
      store_ics(i, Level::Ram);
    } else if (work_ != i) {
      if (!(start & (bit(Level::Ram) | bit(Level::Disk))))
        fail("reverse of step " + std::to_string(i) + " from states, but x_" + std::to_string(i) +
             " is neither stored nor the working state");
      count_read((start & bit(Level::Ram)) ? Level::Ram : Level::Disk);
    }
    if (adj_[static_cast<std::size_t>(i)] != 0 || work_adj_ == i)
      fail("reverse of step " + std::to_string(i) + " from states while its pullback data is held");
    ++result_.adjoint_steps;
    rev_ = i;
    work_.reset();
  }

  template <class CopyOrMove>
  void transfer(const CopyOrMove& a, bool move) {
    if (ended_) fail("action after EndReverse");
    if (a.n < 0 || a.n > n_) fail("step out of range");
    if (a.from == a.to) fail("source and destination are the same level");
    if (a.from == Level::Work) {
      if (work_ != a.n)
        fail("x_" + std::to_string(a.n) + " is not the working state (" + pos(work_) + ")");
    } else if (is_store(a.from)) {
      if (!(ics_[static_cast<std::size_t>(a.n)] & bit(a.from))) {
        // x_n may be in step n-1's pullback data (pullback_holds_next): copied, never moved,
        // since the adjoint of step n-1 still reads it.
        const bool held = limits_.pullback_holds_next && a.n >= 1 &&
                          (adj_[static_cast<std::size_t>(a.n - 1)] & bit(a.from));
        if (!held) fail("x_" + std::to_string(a.n) + " is not stored at " + to_string(a.from));
        if (move || a.to != Level::Work) {
          fail("x_" + std::to_string(a.n) + " is held by step " + std::to_string(a.n - 1) +
               "'s pullback data: it can only be copied to work");
        }
        count_read(a.from);
        work_ = a.n;
        // It went through the stepper's pullback buffers: they hold step n-1's data now.
        if (work_adj_ != a.n - 1) work_adj_.reset();
        return;
      }
    } else {
      fail("source level none");
    }
    if (a.to == Level::None && !move) fail("copy to level none");
    if (is_store(a.from) && a.to != Level::None) count_read(a.from);
    if (a.to == Level::Work) {
      work_ = a.n;
    } else if (is_store(a.to)) {
      store_ics(a.n, a.to);
    }
    if (move) {
      if (a.from == Level::Work) {
        work_.reset();
      } else {
        ics_[static_cast<std::size_t>(a.n)] &= static_cast<std::uint8_t>(~bit(a.from));
        release(a.from, a.n, false);
      }
    }
  }

  void on(const Copy& a) { transfer(a, false); }
  void on(const Move& a) { transfer(a, true); }

  void on(const EndForward&) {
    if (ended_) fail("action after EndReverse");
    if (forward_ended_) fail("EndForward twice");
    if (work_ != n_)
      fail("EndForward but the working state is " + pos(work_) + ", not x_" + std::to_string(n_));
    forward_ended_ = true;
  }

  void on(const EndReverse&) {
    if (ended_) fail("EndReverse twice");
    if (!forward_ended_) fail("EndReverse before EndForward");
    if (rev_ != 0) fail("EndReverse with the adjoint at step " + std::to_string(rev_) + ", not 0");
    if (live_ram_ != 0 || live_disk_ != 0) {
      fail("EndReverse leaves " + std::to_string(live_ram_) + " RAM and " +
           std::to_string(live_disk_) + " disk checkpoints stored");
    }
    ended_ = true;
  }

  void store_ics(Step n, Level level) {
    auto& slot = ics_[static_cast<std::size_t>(n)];
    if (slot & bit(level))
      fail("x_" + std::to_string(n) + " is already stored at " + to_string(level));
    slot |= bit(level);
    count_write(level, n, false);
  }

  std::int64_t units(bool pullback) const {
    if (limits_.ram_units <= 0) return 1;
    return pullback ? limits_.pullback_units : limits_.restart_units;
  }

  // A checkpoint of x_n (or step n's pullback data) is written at `level`.
  void count_write(Level level, Step n, bool pullback) {
    const double bytes = state_bytes(limits_, n);
    if (level == Level::Ram) {
      ++result_.ram.writes;
      ++live_ram_;
      live_ram_units_ += units(pullback);
      live_ram_bytes_ += bytes;
    } else {
      ++result_.disk.writes;
      ++live_disk_;
      live_disk_bytes_ += bytes;
    }
  }

  void release(Level level, Step n, bool pullback) {
    const double bytes = state_bytes(limits_, n);
    if (level == Level::Ram) {
      --live_ram_;
      live_ram_units_ -= units(pullback);
      live_ram_bytes_ -= bytes;
    } else {
      --live_disk_;
      live_disk_bytes_ -= bytes;
    }
  }

  void count_read(Level level) {
    if (level == Level::Ram) {
      ++result_.ram.reads;
    } else {
      ++result_.disk.reads;
    }
  }

  void check_budget() {
    result_.ram.peak = std::max(result_.ram.peak, live_ram_);
    result_.ram.peak_units = std::max(result_.ram.peak_units, live_ram_units_);
    result_.disk.peak = std::max(result_.disk.peak, live_disk_);
    result_.ram.peak_bytes = std::max(result_.ram.peak_bytes, live_ram_bytes_);
    result_.disk.peak_bytes = std::max(result_.disk.peak_bytes, live_disk_bytes_);
    if (limits_.ram_bytes > 0.0) {
      // A byte budget replaces the slot count (round-off of the running sum is tolerated).
      if (live_ram_bytes_ > limits_.ram_bytes * (1.0 + 1e-12)) {
        std::ostringstream os;
        os << live_ram_bytes_ << " RAM bytes live, budget " << limits_.ram_bytes;
        fail(os.str());
      }
    } else if (limits_.ram_units > 0) {
      if (live_ram_units_ > limits_.ram_units) {
        fail(std::to_string(live_ram_units_) + " RAM units live, budget " +
             std::to_string(limits_.ram_units));
      }
    } else if (live_ram_ > limits_.ram) {
      fail(std::to_string(live_ram_) + " RAM slots live, budget " + std::to_string(limits_.ram));
    }
    if (limits_.disk != kUnlimited && live_disk_ > limits_.disk) {
      fail(std::to_string(live_disk_) + " disk slots live, budget " + std::to_string(limits_.disk));
    }
  }

  const ScheduleParams& limits_;
  Step n_;
  std::vector<std::uint8_t> ics_;  // per position: bit(Ram) | bit(Disk)
  std::vector<std::uint8_t> adj_;  // per step: bit(Ram) | bit(Disk)
  std::optional<Step> work_ = 0;   // x_0 is given
  std::optional<Step> work_adj_;   // the one step whose pullback data the stepper holds
  std::int64_t live_ram_ = 0;
  std::int64_t live_ram_units_ = 0;
  std::int64_t live_disk_ = 0;
  double live_ram_bytes_ = 0.0;
  double live_disk_bytes_ = 0.0;
  Step swept_ = 0;  // first-sweep steps run so far

 public:
  std::vector<Step> first_sweep_;  // steps run for the first time by the last action

 private:
  Step rev_;
  bool forward_ended_ = false;
  bool ended_ = false;
  SimulationResult& result_;
};

}  // namespace

SimulationResult simulate(Schedule& schedule, const ScheduleParams& limits,
                          const ActionObserver& observer, std::int64_t max_actions) {
  require(limits.steps >= 1, "simulate: steps must be >= 1, got " + std::to_string(limits.steps));
  require(limits.ram >= 0, "simulate: ram slots must be >= 0, got " + std::to_string(limits.ram));
  require(limits.ram_units >= 0 && limits.restart_units >= 1 && limits.pullback_units >= 1,
          "simulate: RAM units must be >= 0 and checkpoint sizes >= 1 unit");
  require(limits.disk >= 0 || limits.disk == kUnlimited,
          "simulate: disk slots must be >= 0 or unlimited, got " + std::to_string(limits.disk));
  SimulationResult result;
  Model model(limits, result);
  schedule.observe_step(-1, 0.0, state_bytes(limits, 0));
  const bool online = schedule.online();
  bool finalized = false;
  const auto context = [&](const Action& a) {
    std::ostringstream os;
    os << "schedule '" << schedule.name() << "' (" << describe(limits) << "): action #"
       << result.actions << " " << to_string(a) << ": ";
    return os.str();
  };
  while (auto next = schedule.next()) {
    Action action = *next;
    ++result.actions;
    if (result.actions > max_actions) {
      throw Error(ErrorCode::InvalidSchedule,
                  context(action) + "more than " + std::to_string(max_actions) + " actions");
    }
    if (online && !finalized) {
      if (auto* f = std::get_if<Forward>(&action); f && f->n1 > limits.steps) f->n1 = limits.steps;
    }
    try {
      model.apply(action);
    } catch (const Error& e) {
      if (e.code() != ErrorCode::InvalidSchedule) throw;
      throw Error(ErrorCode::InvalidSchedule, context(action) + e.what());
    }
    if (observer) observer(action);
    for (Step i : model.first_sweep_) {
      schedule.observe_step(i, step_cost(limits, i), state_bytes(limits, i + 1));
    }
    model.first_sweep_.clear();
    if (online && !finalized && model.at_end_of_forward()) {
      schedule.finalize(limits.steps);
      finalized = true;
    }
    if (model.ended()) {
      if (auto extra = schedule.next()) {
        throw Error(ErrorCode::InvalidSchedule, context(*extra) + "action after EndReverse");
      }
      break;
    }
  }
  if (!model.ended()) {
    throw Error(ErrorCode::InvalidSchedule, "schedule '" + schedule.name() + "' (" +
                                                describe(limits) +
                                                "): stream ended before EndReverse");
  }
  result.cost = result.fwd_cost + limits.write_cost * static_cast<double>(result.disk.writes) +
                limits.read_cost * static_cast<double>(result.disk.reads);
  return result;
}

}  // namespace rwd::schedule
