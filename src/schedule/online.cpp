// online: checkpointing when the step count is learnt only at the end of the forward run
// (adaptive time stepping). The forward sweep keeps checkpoints by OnlinePlacement; finalize(n)
// then reverses from what is kept, choosing which checkpoints to use. With disk slots the
// placement runs over blocks of P steps on disk (P: the disk-revolve period for the RAM slots and
// the disk costs), each block start waiting in RAM until the next block begins, so long runs
// spill to disk instead of raising the RAM repetition number; the disk intervals are then
// reversed by the two-level plan.
#include <algorithm>
#include <memory>
#include <string>

#include "builtin.hpp"
#include "online_base.hpp"
#include "online_placement.hpp"
#include "rewind/error.hpp"
#include "rewind/schedule/binomial.hpp"
#include "rewind/schedule/twolevel.hpp"
#include "twolevel_plan.hpp"

namespace rwd::schedule {

namespace {

using detail::OnlinePlacement;
using detail::SegmentStream;

class OnlineSchedule final : public detail::OnlineBase {
 public:
  explicit OnlineSchedule(const ScheduleParams& p) : OnlineBase(p) {
    require(p.ram >= 0, "online: RAM slots must be >= 0, got " + std::to_string(p.ram));
    require(p.disk >= 0 || p.disk == kUnlimited,
            "online: disk slots must be >= 0 or unlimited, got " + std::to_string(p.disk));
    require(p.write_cost >= 0.0 && p.read_cost >= 0.0,
            "online: disk write and read costs must be >= 0");
    require(p.ram >= 1 || p.disk != 0,
            "online: needs at least one RAM or disk slot (the count includes x_0's slot)");
    disk_ = p.disk != 0;
    if (disk_) {
      ScheduleParams q = p;
      q.steps = 0;
      q.period = 0;
      block_ = disk_revolve_period(q);
      if (p.disk != kUnlimited) {
        // Without RAM the current block's start waits on disk too: one disk slot for it.
        const std::int64_t kept = p.ram >= 1 ? p.disk : p.disk - 1;
        require(kept >= 1, "online: without RAM slots at least 2 disk slots are needed");
        placement_ = std::make_unique<OnlinePlacement>(kept);
      }
    } else {
      placement_ = std::make_unique<OnlinePlacement>(p.ram);
    }
    if (p.steps > 0) planned_ = p.steps;
  }

  std::string name() const override { return "online"; }

  void finalize(Step n) override {
    require(!finalized_, "online: finalize called twice");
    require(n >= 1, "online: the run must have at least one step");
    // A driver may have fetched (and run the stores before) the next Forward without running
    // it, when the run ended exactly where the last one stopped: n may be that Forward's start.
    require(n >= position_ - last_forward_ && n <= position_,
            "online: finalize(" + std::to_string(n) +
                ") does not lie in the last forward action, which ended at x_" +
                std::to_string(position_));
    finalized_ = true;
    n_ = n;
  }

  // After finalize(n): the offline optimum for n with the same budget (Revolve in RAM, the
  // two-level plan's lower bound with disk): no schedule that knew n in advance does better.
  std::optional<double> lower_bound() const override {
    if (!finalized_) return std::nullopt;
    if (!lower_) {
      if (!disk_) {
        lower_ =
            static_cast<double>(revolve_fwd_total(n_, std::min<std::int64_t>(params_.ram, n_)));
      } else {
        ScheduleParams q = params_;
        q.steps = n_;
        lower_ = plan_twolevel(q).lower_bound;
      }
    }
    return lower_;
  }

 private:
  // --- forward sweep -----------------------------------------------------------------------

  void sweep() override { disk_ ? forward_two_level() : forward_ram(); }
  void reverse() override { disk_ ? reverse_two_level() : reverse_ram(); }

  // A step count given in advance only clips the sweep; the driver still calls finalize.
  Step clip(Step to) const { return planned_ ? std::min(to, *planned_) : to; }

  void forward_ram() {
    const Step t = position_;
    const OnlinePlacement::Decision d = placement_->at(t);
    if (d.drop) pending_.push_back(Move{*d.drop, Level::Ram, Level::None});
    if (d.store) pending_.push_back(Copy{t, Level::Work, Level::Ram});
    const Step to = clip(placement_->next_event(t));
    pending_.push_back(Forward{t, to, false, true, Level::Work});
    last_forward_ = to - t;
    position_ = to;
  }

  // Blocks of P steps: block b starts at x_{bP}. The start of the current block is held in RAM
  // (or on disk without RAM); when the next block begins it moves to disk if the placement keeps
  // it, else it is dropped.
  void forward_two_level() {
    const Step t = position_;
    const Step b = t / block_;
    const Level hold = params_.ram >= 1 ? Level::Ram : Level::Disk;
    if (b > 0) {
      const Step prev = t - block_;
      bool keep = true;
      if (placement_) {
        const OnlinePlacement::Decision d = placement_->at(b - 1);
        if (d.drop) {
          pending_.push_back(Move{*d.drop * block_, Level::Disk, Level::None});
          std::erase(on_disk_, *d.drop * block_);
        }
        keep = d.store;
      }
      if (hold == Level::Ram) {
        pending_.push_back(Move{prev, Level::Ram, keep ? Level::Disk : Level::None});
      } else if (!keep) {
        pending_.push_back(Move{prev, Level::Disk, Level::None});
      }
      if (keep) on_disk_.push_back(prev);
    }
    pending_.push_back(Copy{t, Level::Work, hold});
    held_ = t;
    const Step to = clip(t + block_);
    pending_.push_back(Forward{t, to, false, true, Level::Work});
    last_forward_ = to - t;
    position_ = to;
  }

  // --- reverse sweep -----------------------------------------------------------------------

  void reverse_ram() {
    const Step n = n_;
    std::vector<Step> use;
    detail::reverse_from_kept(placement_->kept(), n, params_.ram, &use);
    pending_.push_back(EndForward{});
    for (Step p : placement_->kept()) {
      if (!std::binary_search(use.begin(), use.end(), p)) {
        pending_.push_back(Move{p, Level::Ram, Level::None});
      }
    }
    pending_.push_back(Reverse{n, n - 1, true});
    stream_ = std::make_unique<SegmentStream>(params_.ram, nullptr, true);
    for (std::size_t j = 0; j < use.size(); ++j) {
      const Step end = j + 1 < use.size() ? use[j + 1] : n - 1;
      stream_->push_restore_ram(use[j], end, params_.ram - static_cast<std::int64_t>(j));
    }
  }

  void reverse_two_level() {
    const Step n = n_;
    // The start of the block the run ended in is held (in RAM, or without RAM on disk with blocks
    // of one step); earlier kept block starts are on disk. If the driver fetched the next block
    // without running it, the held state is x_n itself: useless, and the block before ends the
    // run from its disk start.
    const Level hold = params_.ram >= 1 ? Level::Ram : Level::Disk;
    pending_.push_back(EndForward{});
    std::optional<Step> ram_start;
    if (held_ < n - 1) {
      ram_start = held_;
    } else {
      pending_.push_back(Move{held_, hold, Level::None});
    }
    std::vector<Step> starts;
    for (Step p : on_disk_) {
      if (p < n - 1) {
        starts.push_back(p);
      } else {
        pending_.push_back(Move{p, Level::Disk, Level::None});
      }
    }
    std::sort(starts.begin(), starts.end());
    pending_.push_back(Reverse{n, n - 1, true});
    const Step tail_end = ram_start ? *ram_start : n - 1;
    Step longest = 1;
    for (std::size_t j = 0; j < starts.size(); ++j) {
      const Step end = j + 1 < starts.size() ? starts[j + 1] : tail_end;
      longest = std::max(longest, end - starts[j]);
    }
    const std::int64_t D = params_.disk;
    std::vector<detail::DiskSegment> segments;
    for (std::size_t j = 0; j < starts.size(); ++j) {
      const Step end = j + 1 < starts.size() ? starts[j + 1] : tail_end;
      const std::int64_t free_disk =
          D == kUnlimited ? kUnlimited : D - 1 - static_cast<std::int64_t>(j);
      segments.push_back({.length = end - starts[j], .free_disk = free_disk});
    }
    const bool tail_on_disk = ram_start && hold == Level::Disk;
    if (tail_on_disk) {
      segments.push_back(
          {.length = n - 1 - *ram_start, .free_disk = D == kUnlimited ? kUnlimited : 0});
    }
    // Each disk interval starts on disk with the earlier starts still held: the plan must
    // honour the free disk slots it is given, so no unlimited-disk shortcut.
    if (longest >= 2) {
      detail::TwoLevelRequest request =
          detail::two_level_request(params_, TwoLevelMethod::Auto, kTwoLevelTableEntries);
      request.steps = longest;
      request.unlimited_shortcut = false;
      plan_ = std::make_unique<detail::TwoLevelDiskPlan>(
          detail::plan_two_level_segments(request, segments));
    }
    stream_ = std::make_unique<SegmentStream>(params_.ram, plan_.get(), true);
    for (std::size_t j = 0; j < starts.size(); ++j) {
      stream_->push_restore_disk(starts[j], starts[j] + segments[j].length, segments[j].free_disk);
    }
    if (ram_start && hold == Level::Ram) stream_->push_restore_ram(*ram_start, n - 1, params_.ram);
    if (tail_on_disk) stream_->push_restore_disk(*ram_start, n - 1, segments.back().free_disk);
  }

  bool disk_ = false;
  Step block_ = 1;
  std::unique_ptr<OnlinePlacement> placement_;
  std::optional<Step> planned_;
  Step position_ = 0;
  Step last_forward_ = 0;
  Step held_ = 0;  // two-level: the block start held at the current block
  Step n_ = 0;
  std::vector<Step> on_disk_;
  std::unique_ptr<detail::TwoLevelDiskPlan> plan_;
  mutable std::optional<double> lower_;
};

}  // namespace

namespace detail {

void register_online(ScheduleRegistry& registry) {
  registry.add(
      {.name = "online",
       .summary = "step count unknown until the run ends (adaptive time stepping): "
                  "within 1 step of revolve up to beta(s,2) steps, 3 up to beta(s,3); "
                  "spills to disk if given",
       .online = true,
       .uses_disk = true,
       .factory = [](const ScheduleParams& p) { return std::make_unique<OnlineSchedule>(p); },
       .restart_only = true});
}

}  // namespace detail

}  // namespace rwd::schedule
