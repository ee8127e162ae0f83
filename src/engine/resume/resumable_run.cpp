#include "resumable_run.hpp"

#include <algorithm>
#include <functional>

#include "rewind/comm/agree.hpp"
#include "rewind/engine/durable_log.hpp"
#include "rewind/engine/recording.hpp"
#include "rewind/timing.hpp"

namespace rwd::engine::detail {

namespace {

using comm::agree;
using schedule::kUnlimited;

// The stepper's steps from `first` on, as a recording of one interval sees them (steps 0, 1,
// ...); `recompute` marks every step a recomputation (the interval was taken before).
class Shifted final : public Stepper {
 public:
  Shifted(Stepper& inner, Step first, bool recompute)
      : inner_(inner), first_(first), recompute_(recompute) {}
  std::vector<Field> state() override { return inner_.state(); }
  std::vector<Field> pullback() override { return inner_.pullback(); }
  StepAccess access(Step i) override { return inner_.access(first_ + i); }
  void forward(Step i, const StepContext& c) override {
    inner_.forward(first_ + i, StepContext{c.record, c.recompute || recompute_});
  }
  void begin_adjoint(std::span<const double> seed) override { inner_.begin_adjoint(seed); }
  void adjoint(Step i) override { inner_.adjoint(first_ + i); }
  void loaded(Kind kind) override { inner_.loaded(kind); }
  void on_io(IoEvent event) override { inner_.on_io(event); }
  std::vector<Field> adjoint_state() override { return inner_.adjoint_state(); }

 private:
  Stepper& inner_;
  Step first_;
  bool recompute_;
};

std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}

class ResumableRun {
 public:
  ResumableRun(Stepper& stepper, const std::shared_ptr<Stores>& stores, const EngineConfig& config)
      : stepper_(stepper),
        stores_(stores),
        config_(config),
        log_(stores,
             DurableSettings{config.store.directory, config.store.label, config.resume.identity,
                             config.resume.resume, config.verify, config.params.steps,
                             resume_interval(config)},
             stepper.state(), stepper.adjoint_state()) {}

  RunStats run() {
    const auto t0 = SteadyClock::now();
    log_.open();
    const Manifest& m = log_.manifest();
    const Step n = m.steps, interval = m.interval;
    const DurableTraffic& io = log_.traffic();
    RunStats total;
    Step a = n;  // the reverse sweep has reached x_a
    Step first_sweep = 0;
    if (m.reverse) {
      log_.load(*m.reverse, stepper_.adjoint_state());
      a = m.reverse->step;
      total.resumed_at = a;
      total.resumed_in_reverse = true;
    } else {
      Step b = 0;
      if (!m.states.empty()) {
        b = m.states.back().step;
        if (b > 0 && config_.verify) check_program(b - interval, b, total);
        log_.load(m.states.back(), stepper_.state());
        stepper_.loaded(Kind::Restart);
        total.resumed_at = b;
      } else {
        log_.save(false, 0, stepper_.state());
      }
      first_sweep = n - b;
      const auto tf = SteadyClock::now();
      const double io_before = io.seconds;
      for (; b + interval < n; b += interval) {
        for (Step i = b; i < b + interval; ++i) stepper_.forward(i, StepContext{});
        total.forward_steps += interval;
        log_.save(false, b + interval, stepper_.state());
      }
      total.forward_seconds += seconds_since(tf) - (io.seconds - io_before);
      Shifted last(stepper_, b, false);
      Recording r(last, stores_, interval_config(config_, n - b));
      r.record();
      total.add(r.reverse());
      a = b;
      if (a > 0) log_.save(true, a, stepper_.adjoint_state());
    }
    for (; a > 0; a -= interval) {
      const Step b = a - interval;
      log_.load(log_.state_at(b), stepper_.state());
      stepper_.loaded(Kind::Restart);
      Shifted again(stepper_, b, true);
      Recording h(again, stores_, interval_config(config_, interval));
      h.record();
      log_.check_replay(a, stepper_.state());
      h.begin_reverse();
      for (Step i = interval - 1; i >= 0; --i) {
        h.prepare_adjoint(i);
        const auto ta = SteadyClock::now();
        stepper_.adjoint(b + i);
        total.adjoint_seconds += seconds_since(ta);
        h.adjoint_done(i);
      }
      RunStats s = h.finish();
      // The interval's first sweep recomputes steps the run took before.
      s.recompute_seconds += s.forward_seconds;
      s.forward_seconds = 0.0;
      s.steps = 0;
      total.add(s);
      if (b > 0) log_.save(true, b, stepper_.adjoint_state());
    }
    total.steps = first_sweep;
    // The durable states and adjoint states: disk traffic of their own.
    total.add_durable(io, io.seconds);
    total.schedule = "resumable(" + std::to_string(interval) + ", " + total.schedule + ")";
    // The manifest goes first: once the store closes, its file is gone.
    log_.finish();
    stores_->close();
    total.total_seconds = seconds_since(t0);
    return total;
  }

 private:
  // Before going on from its durable state at b, a resumed run takes the interval before it
  // again: a program that is not the killed run's is refused before it makes anything durable.
  // (Without EngineConfig::verify nothing would be compared, so it is not taken.)
  void check_program(Step a, Step b, RunStats& total) {
    log_.load(log_.state_at(a), stepper_.state());
    stepper_.loaded(Kind::Restart);
    const auto t = SteadyClock::now();
    // Steps taken before, again: a stepper that accumulates along the first sweep skips them.
    for (Step i = a; i < b; ++i)
      stepper_.forward(i, StepContext{.record = false, .recompute = true});
    total.forward_steps += b - a;
    total.recompute_seconds += seconds_since(t);
    log_.check_resume_point(a, b, stepper_.state());
  }

  Stepper& stepper_;
  std::shared_ptr<Stores> stores_;
  const EngineConfig& config_;
  DurableLog log_;
};

}  // namespace

Step resume_interval(const EngineConfig& config) {
  const Step n = config.params.steps;
  const std::int64_t disk = config.params.disk;
  if (config.resume.interval < 0) {
    throw Error(ErrorCode::InvalidArgument,
                "ResumeConfig::interval must be >= 0 (0: from the "
                "disk budget), not " +
                    std::to_string(config.resume.interval));
  }
  Step interval = config.resume.interval;
  if (interval == 0) {
    if (disk == kUnlimited) {
      throw Error(ErrorCode::InvalidArgument,
                  "ResumeConfig::interval = 0 takes the interval from the disk budget, and "
                  "params.disk is unlimited: set the interval or a disk budget");
    }
    if (disk < 2) {
      throw Error(ErrorCode::InvalidArgument,
                  "a resumable run keeps its durable states and an adjoint state on disk: "
                  "params.disk must be >= 2, not " +
                      std::to_string(disk));
    }
    interval = ceil_div(n, disk - 1);
  }
  interval = std::min(interval, n);
  if (disk != kUnlimited && ceil_div(n, interval) + 1 > disk) {
    throw Error(ErrorCode::InvalidArgument,
                "ResumeConfig::interval " + std::to_string(interval) + " makes " +
                    std::to_string(ceil_div(n, interval)) + " durable states over " +
                    std::to_string(n) +
                    " steps, and with an adjoint state that is more than params.disk = " +
                    std::to_string(disk) +
                    ": raise the interval (or 0 for the smallest that "
                    "fits) or the disk budget");
  }
  return interval;
}

RecordingConfig interval_config(const EngineConfig& config, Step n) {
  RecordingConfig c = config;
  c.params.steps = n;
  c.params.disk = 0;
  if (c.params.ram != kUnlimited) c.params.ram = std::min(c.params.ram, n);
  return c;
}

void check_resumable(Stepper& stepper, const EngineConfig& config) {
  if (config.params.steps <= 0) {
    throw Error(ErrorCode::InvalidArgument,
                "a resumable run (ResumeConfig::enabled) needs the step count (params.steps)");
  }
  if (config.disk_store != "hdf5") {
    throw Error(ErrorCode::InvalidArgument,
                "a resumable run keeps its durable states in the "
                "\"hdf5\" disk store, not \"" +
                    config.disk_store + "\"");
  }
  if (config.store.directory.empty()) {
    throw Error(ErrorCode::InvalidArgument,
                "a resumable run keeps its durable states and manifest on disk: set "
                "StoreConfig::directory (EngineConfig::store.directory)");
  }
  if (stepper.adjoint_state().empty()) {
    throw Error(ErrorCode::InvalidArgument,
                "a resumable run saves the adjoint in the reverse sweep, and this stepper has no "
                "Stepper::adjoint_state(): implement it (the buffers the adjoint carries from "
                "step to step)");
  }
  for (const auto& [what, fields] :
       {std::pair{"state", stepper.state()}, std::pair{"adjoint_state", stepper.adjoint_state()}}) {
    for (const Field& f : fields) {
      if (f.name.empty() || f.name == "." || f.name == ".." ||
          f.name.find('/') != std::string_view::npos) {
        throw Error(ErrorCode::InvalidArgument,
                    std::string("Stepper::") + what + "() has a field named '" +
                        std::string(f.name) +
                        "': a resumable run stores it on disk, where a name is not empty, '.', "
                        "'..' or one with '/'");
      }
    }
  }
  if (config.resume.resume && !config.resume.enabled) {
    throw Error(ErrorCode::InvalidArgument,
                "ResumeConfig::resume is set and ResumeConfig::enabled is not: a run resumes "
                "only as a resumable run");
  }
  (void)resume_interval(config);
}

void agree_resume_config(MPI_Comm comm, const EngineConfig& config) {
  const ResumeConfig& resume = config.resume;
  const Step steps = config.params.steps, interval = resume_interval(config);
  using comm::setting_hash;
  const comm::Setting settings[] = {{"ResumeConfig::enabled", setting_hash(resume.enabled)},
                                    {"ResumeConfig::resume", setting_hash(resume.resume)},
                                    {"ResumeConfig::interval", setting_hash(resume.interval)},
                                    {"params.steps", setting_hash(steps)},
                                    {"the interval params.disk makes", setting_hash(interval)},
                                    {"ResumeConfig::identity", setting_hash(resume.identity)}};
  comm::agree_settings(comm, settings);
}

RunStats run_resumable(Stepper& stepper, const std::shared_ptr<Stores>& stores,
                       const EngineConfig& config) {
  ResumableRun run(stepper, stores, config);
  return run.run();
}

}  // namespace rwd::engine::detail
