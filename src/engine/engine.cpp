#include "rewind/engine/engine.hpp"

#include "resume/resumable_run.hpp"
#include "rewind/comm/agree.hpp"
#include "rewind/timing.hpp"

namespace rwd::engine {

namespace {

StoresConfig stores_config(const EngineConfig& c) {
  StoresConfig s;
  s.store = c.store;
  s.ram_store = c.ram_store;
  s.disk_store = c.disk_store;
  s.lossy_pullbacks = c.lossy_pullbacks;
  s.compress_disk = c.compress_disk;
  return s;
}

}  // namespace

struct Engine::Impl {
  Stepper& stepper;
  EngineConfig config;
  std::shared_ptr<Stores> stores;
  Plan plan;
};

Engine::Engine(Stepper& stepper, EngineConfig config)
    : impl_(std::make_unique<Impl>(
          Impl{stepper, config, std::make_shared<Stores>(stores_config(config)), {}})) {
  const EngineConfig& c = impl_->config;
  if (c.resume.enabled || c.resume.resume) {
    // A setting wrong on one rank only is an error on every rank, not a rank left waiting.
    comm::agree(impl_->stores->comm(), comm::capture([&] { detail::check_resumable(stepper, c); }));
    detail::agree_resume_config(impl_->stores->comm(), c);
    // Each interval is planned alike (the last may be shorter); the durable states go to disk.
    try {
      impl_->plan = plan_for(impl_->stepper, impl_->stores->comm(),
                             detail::interval_config(c, detail::resume_interval(c)));
    } catch (const Error& e) {
      throw Error(e.code(),
                  std::string("a resumable run plans each interval with the RAM budget alone "
                              "(params.disk holds its durable states): ") +
                      e.what());
    }
    impl_->stores->disk();
    return;
  }
  // Planning checks the configuration now; the recording made by run() reuses the plan.
  impl_->plan = plan_for(impl_->stepper, impl_->stores->comm(), impl_->config);
  // A directory that cannot take the disk checkpoints is an error now, not in the middle of run().
  if (impl_->plan.params.disk != 0) impl_->stores->disk();
}

Engine::~Engine() = default;

const Plan& Engine::plan() const {
  return impl_->plan;
}

RunStats Engine::run() {
  Impl& s = *impl_;
  const auto t0 = SteadyClock::now();
  try {
    if (s.config.resume.enabled) return detail::run_resumable(s.stepper, s.stores, s.config);
    Recording recording(s.stepper, s.stores, s.config);
    recording.record();
    RunStats stats = recording.reverse();
    s.stores->close();
    stats.total_seconds = seconds_since(t0);
    return stats;
  } catch (...) {
    s.stores->abandon();
    throw;
  }
}

}  // namespace rwd::engine
