#pragma once
// Checks on action streams beyond what the simulator enforces, used as simulate() observers.

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "rewind/schedule/action.hpp"
#include "rewind/schedule/schedule.hpp"

namespace rwd::schedule::testing {

/// Tracks where restart states are stored and fails the test if a checkpoint the reverse sweep
/// has passed is still stored: after Reverse down to step k, no x_q with q >= k may be kept.
class PassedCheckpointsFreed {
 public:
  explicit PassedCheckpointsFreed(std::string context) : context_(std::move(context)) {}

  void operator()(const Action& action) {
    if (const auto* f = std::get_if<Forward>(&action)) {
      if (f->write_restart) stored_[key(f->n0, f->level)] = true;
    } else if (const auto* c = std::get_if<Copy>(&action)) {
      if (c->to == Level::Ram || c->to == Level::Disk) stored_[key(c->n, c->to)] = true;
    } else if (const auto* m = std::get_if<Move>(&action)) {
      stored_.erase(key(m->n, m->from));
      if (m->to == Level::Ram || m->to == Level::Disk) stored_[key(m->n, m->to)] = true;
    } else if (const auto* r = std::get_if<Reverse>(&action)) {
      for (const auto& [k, live] : stored_) {
        ASSERT_FALSE(live && k.first >= r->n0)
            << context_ << ": x_" << k.first << " still stored at " << to_string(k.second)
            << " after the reverse passed step " << r->n0;
      }
    }
  }

 private:
  static std::pair<Step, Level> key(Step n, Level level) { return {n, level}; }
  std::string context_;
  std::map<std::pair<Step, Level>, bool> stored_;
};

/// Plays a driver that owns the time loop, like the engine in pull mode: when a Forward ends at
/// x_n it does not know yet that the run is over, so it fetches the next actions, runs the stores
/// and frees before the next Forward, and only then calls finalize(n), that Forward fetched but
/// never run. A Forward that crosses x_n is cut there and finalize(n) follows at once.
class PrefetchingDriver final : public Schedule {
 public:
  PrefetchingDriver(Schedule& inner, Step n) : Schedule(inner.params()), inner_(inner), n_(n) {}
  std::string name() const override { return inner_.name() + " (prefetching driver)"; }
  std::optional<Action> next() override {
    if (!queue_.empty()) {
      Action a = queue_.front();
      queue_.erase(queue_.begin());
      return a;
    }
    auto a = inner_.next();
    if (!a || finalized_) return a;
    if (auto* f = std::get_if<Forward>(&*a); f && f->n1 >= n_) {
      if (f->n1 > n_) {
        f->n1 = n_;
      } else {
        while (auto b = inner_.next()) {
          if (std::holds_alternative<Forward>(*b)) break;  // fetched, never run
          if (std::holds_alternative<EndForward>(*b)) {
            queue_.push_back(*b);
            break;
          }
          queue_.push_back(*b);
        }
      }
      inner_.finalize(n_);
      finalized_ = true;
    }
    return a;
  }

 private:
  Schedule& inner_;
  Step n_;
  bool finalized_ = false;
  std::vector<Action> queue_;
};

}  // namespace rwd::schedule::testing
