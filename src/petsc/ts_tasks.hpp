#pragma once
// The PETSc ensemble's TaskRunner (src/petsc/ensemble.cpp): the tasks of one group, each a TS
// made by the program's callbacks, solved with its rewind trajectory in the group's stores and
// kept until its TSAdjointSolve; room made by the group's rule (spill, then cut).

#include <petscts.h>

#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "check.hpp"
#include "rewind/engine/stores.hpp"
#include "rewind/ensemble/ensemble.hpp"
#include "rewind/ensemble/group_room.hpp"
#include "rewind/error.hpp"
#include "rewind/petsc/ensemble.h"
#include "rewind/petsc/trajectory.h"
#include "shared_stores.hpp"
#include "trajectory_state.hpp"

namespace rwd::petsc {

// The tasks of one group, each a TS kept from its solve to its adjoint solve.
class TsTasks final : public ensemble::TaskRunner {
 public:
  TsTasks(MPI_Comm group, const RewindEnsembleTaskOps& ops, void* ctx, PetscInt output_size,
          PetscInt gradient_size, engine::StoresConfig stores)
      : group_(group),
        ops_(ops),
        ctx_(ctx),
        output_size_(output_size),
        gradient_size_(gradient_size) {
    stores.store.comm = group;
    stores_ = std::make_shared<engine::Stores>(stores);
  }
  ~TsTasks() override { discard(); }

  std::vector<double> forward(std::int64_t k) override {
    Held held;
    held.order = recorded_++;
    solve(k, held);
    std::vector<double> y(static_cast<std::size_t>(output_size_));
    REWIND_PETSC(ops_.output(static_cast<PetscInt>(k), held.ts, ctx_, y.data()));
    held.output = y;
    held_[k] = std::move(held);
    return y;
  }

  std::vector<std::int64_t> backward_order(std::vector<std::int64_t>) override {
    return engine::reverse_order(tapes());
  }

  std::vector<double> backward(std::int64_t k, std::span<const double> ybar) override {
    Held& h = held_.at(k);
    if (!h.ts) {  // cut: solve it again; it must give the output it gave
      solve(k, h);
      h.cost.cut = true;
      std::vector<double> again(static_cast<std::size_t>(output_size_));
      REWIND_PETSC(ops_.output(static_cast<PetscInt>(k), h.ts, ctx_, again.data()));
      ensemble::require_same_output(k, h.output, again);
    } else if (engine::Recording* r = recording(h.ts)) {
      make_room(k, r->reverse_claim(), r->id());
    }
    REWIND_PETSC(ops_.seed(static_cast<PetscInt>(k), h.ts, ctx_, ybar.data()));
    REWIND_PETSC(TSAdjointSolve(h.ts));
    std::vector<double> g(static_cast<std::size_t>(gradient_size_));
    REWIND_PETSC(ops_.gradient(static_cast<PetscInt>(k), h.ts, ctx_, g.data()));
    TSTrajectory tj = nullptr;
    REWIND_PETSC(TSGetTrajectory(h.ts, &tj));
    TSTrajectoryRewindStats st;
    REWIND_PETSC(TSTrajectoryRewindGetStats(tj, &st));
    h.cost.steps = st.steps;
    // This TS's first sweep was counted when solve() ran it.
    h.cost.forward_steps += st.recomputed;
    h.cost.adjoint_steps = st.adjoint_steps;
    h.cost.ram_peak_bytes = trajectory(tj).carry.report.stats.ram.peak_bytes;
    h.cost.disk_bytes_written = trajectory(tj).carry.report.stats.disk.bytes_written;
    done_[k] = h.cost;
    destroy(k, h);
    held_.erase(k);
    return g;
  }

  /// The program's estimates (the ensemble's, RewindEnsembleSetTaskCosts), or unknown.
  const std::vector<double>* estimates = nullptr;
  double estimate(std::int64_t k) const override {
    const auto i = static_cast<std::size_t>(k);
    return estimates && i < estimates->size() ? (*estimates)[i] : -1.0;
  }

  ensemble::TaskCost cost(std::int64_t k) const override {
    if (auto d = done_.find(k); d != done_.end()) return d->second;
    if (auto h = held_.find(k); h != held_.end()) return h->second.cost;
    return {};
  }

  ensemble::GroupCodecs codecs() const override {
    return {stores_->ram_codec_stats(), stores_->disk_codec_stats(), stores_->config().store.codec,
            stores_->config().lossy_pullbacks};
  }

  // A task whose forward ran in a killed run: solved again before its reverse, as a cut one (a
  // TS's tape is not made durable: its TSSolve sets the TS's own state too).
  void adopt(std::int64_t k, std::span<const double> output, std::string_view) override {
    require(!held_.contains(k), "ensemble: task " + std::to_string(k) + " is held already");
    Held h;
    h.order = recorded_++;
    h.cost.cut = true;
    h.output.assign(output.begin(), output.end());
    held_[k] = h;
  }

  void discard() noexcept override {
    for (auto& [k, h] : held_) destroy(k, h);
    held_.clear();
  }

  engine::Stores& stores() { return *stores_; }

 private:
  struct Held {
    TS ts = nullptr;  // null once cut
    std::int64_t order = 0;
    ensemble::TaskCost cost;
    std::vector<double> output;  // its first sweep's: a solve run again must give it
  };

  static engine::Recording* recording(TS ts) {
    TSTrajectory tj = nullptr;
    if (TSGetTrajectory(ts, &tj) || !tj) return nullptr;
    return current_recording(tj);
  }

  std::vector<engine::HeldRecording> tapes() const {
    std::vector<engine::HeldRecording> out;
    for (const auto& [k, h] : held_) {
      out.push_back({k, h.ts ? recording(h.ts) : nullptr, h.order, h.cost.steps, h.cost.spilled});
    }
    return out;
  }

  void make_room(std::int64_t task, const engine::Claim& need, std::int64_t run) {
    std::vector<engine::HeldRecording> recordings = tapes();
    engine::RoomHooks hooks;
    hooks.spilled = [&](std::int64_t k) { held_.at(k).cost.spilled = true; };
    hooks.cut = [&](std::int64_t k) {
      Held& h = held_.at(k);
      destroy(k, h);
      h.cost.cut = true;
    };
    ensemble::make_room_for_task(*stores_, recordings, task, need, run, hooks);
  }

  // Creates task k's TS, gives its rewind trajectory the group's stores, makes room for its
  // budget and solves it.
  void solve(std::int64_t k, Held& h) {
    REWIND_PETSC(ops_.create(static_cast<PetscInt>(k), group_, ctx_, &h.ts));
    require(h.ts != nullptr,
            "ensemble: the create callback returned no TS for task " + std::to_string(k));
    TSTrajectory tj = nullptr;
    REWIND_PETSC(TSGetTrajectory(h.ts, &tj));
    require(tj != nullptr, "ensemble: task " + std::to_string(k) +
                               "'s TS saves no trajectory; call TSSetSaveTrajectory in create");
    PetscBool rewind = PETSC_FALSE;
    REWIND_PETSC(PetscObjectTypeCompare((PetscObject)tj, TSTRAJECTORYREWIND, &rewind));
    if (!rewind) {
      REWIND_PETSC(TSTrajectorySetType(tj, h.ts, TSTRAJECTORYREWIND));
      REWIND_PETSC(TSTrajectorySetFromOptions(tj, h.ts));
    }
    share_stores(tj, stores_);
    // The budget the task's recording will claim, from its trajectory's options.
    const Options& o = trajectory(tj).carry.options;
    require(o.max_cps_ram >= 1 || stores_->config().ram == schedule::kUnlimited,
            "ensemble: a group RAM capacity (-rewind_ensemble_max_cps_ram) needs a RAM budget per "
            "task (-ts_trajectory_max_cps_ram)");
    engine::Claim need;
    need.ram = std::max<PetscInt>(o.max_cps_ram, 0);
    need.disk = o.max_cps_disk < 0 ? schedule::kUnlimited : o.max_cps_disk;
    make_room(k, need, 0);
    REWIND_PETSC(TSSolve(h.ts, nullptr));
    TSTrajectoryRewindStats st;
    REWIND_PETSC(TSTrajectoryRewindGetStats(tj, &st));
    if (engine::Recording* r = current_recording(tj)) {
      h.cost.steps = r->steps();
      h.cost.forward_steps += r->stats().forward_steps;
    }
  }

  void destroy(std::int64_t k, Held& h) noexcept {
    if (!h.ts) return;
    if (ops_.destroy) (void)ops_.destroy(static_cast<PetscInt>(k), h.ts, ctx_);
    (void)TSDestroy(&h.ts);
    h.ts = nullptr;
  }

  MPI_Comm group_;
  RewindEnsembleTaskOps ops_;
  void* ctx_;
  PetscInt output_size_, gradient_size_;
  std::shared_ptr<engine::Stores> stores_;
  std::map<std::int64_t, Held> held_;
  std::map<std::int64_t, ensemble::TaskCost> done_;
  std::int64_t recorded_ = 0;
};

}  // namespace rwd::petsc
