#include "segments.hpp"

#include <algorithm>
#include <limits>
#include <string>

#include "rewind/error.hpp"
#include "rewind/schedule/binomial.hpp"

namespace rwd::schedule::detail {

Step revolve_split(Step length, std::int64_t slots) {
  // The cost (r+1)L - beta(s+1, r-1) is met exactly when beta(s, r-2) <= m <= beta(s, r-1) and
  // L - m lies in [beta(s-1, r-1), beta(s-1, r)]; take the largest such m.
  const std::int64_t r = repetitions(length, slots);
  const Step lo = std::max({Step{1}, beta(slots, r - 2), length - beta(slots - 1, r)});
  const Step hi = std::min({length - 1, beta(slots, r - 1), length - beta(slots - 1, r - 1)});
  if (lo > hi) {
    throw Error(ErrorCode::Internal, "no optimal Revolve split for length " +
                                         std::to_string(length) + " with " + std::to_string(slots) +
                                         " slots");
  }
  return hi;
}

std::vector<double> revolve_costs(Step n, std::int64_t slots) {
  std::vector<double> cost(static_cast<std::size_t>(std::max<Step>(n, 1)) + 1, 0.0);
  cost[1] = 1.0;
  if (slots < 1) {
    std::fill(cost.begin() + 2, cost.end(), std::numeric_limits<double>::infinity());
    return cost;
  }
  // The Revolve cost is continuous and piecewise linear in L with slope r + 1, r the
  // repetition number of L; r steps up where L passes beta(s, r).
  std::int64_t r = 0;
  std::int64_t next = beta(slots, 0);
  for (Step L = 2; L < static_cast<Step>(cost.size()); ++L) {
    while (L > next) next = beta(slots, ++r);
    cost[static_cast<std::size_t>(L)] =
        cost[static_cast<std::size_t>(L - 1)] + static_cast<double>(r + 1);
  }
  return cost;
}

void SegmentStream::push_ram(Step l, Step h, std::int64_t slots, bool stored) {
  frames_.push_back({Kind::Ram, l, h, slots, stored, Start::Absent});
}

void SegmentStream::push_disk(Step l, Step h, std::int64_t free_disk, Start start) {
  frames_.push_back({Kind::Disk, l, h, free_disk, false, start});
}

void SegmentStream::push_step(Step l) {
  frames_.push_back({Kind::Ram, l, l + 1, 0, false, Start::Absent});
}

void SegmentStream::push_restore_ram(Step l, Step h, std::int64_t slots) {
  frames_.push_back({Kind::RestoreRam, l, h, slots, true, Start::Absent});
}

void SegmentStream::push_restore_disk(Step l, Step h, std::int64_t free_disk) {
  frames_.push_back({Kind::RestoreDisk, l, h, free_disk, false, Start::Held});
}

std::optional<Action> SegmentStream::next() {
  while (pending_.empty() && !frames_.empty()) {
    const Frame f = frames_.back();
    frames_.pop_back();
    expand(f);
  }
  if (pending_.empty()) return std::nullopt;
  Action a = pending_.front();
  pending_.pop_front();
  return a;
}

void SegmentStream::step(Step l) {
  pending_.push_back(Forward{l, l + 1, false, true, Level::Work});
  if (!forward_done_) {
    pending_.push_back(EndForward{});
    forward_done_ = true;
  }
  pending_.push_back(Reverse{l + 1, l, true});
}

void SegmentStream::expand(const Frame& f) {
  const Step length = f.h - f.l;
  switch (f.kind) {
    case Kind::Ram: {
      if (length == 1) {
        step(f.l);
        return;
      }
      if (f.slots < 1) {
        throw Error(ErrorCode::Internal,
                    "RAM segment of " + std::to_string(length) + " steps without a RAM slot");
      }
      const Step m = f.slots == 1 ? length - 1 : revolve_split(length, f.slots);
      pending_.push_back(
          Forward{f.l, f.l + m, !f.stored, false, f.stored ? Level::None : Level::Ram});
      frames_.push_back({Kind::RestoreRam, f.l, f.l + m, f.slots, true, Start::Absent});
      frames_.push_back({Kind::Ram, f.l + m, f.h, f.slots - 1, false, Start::Absent});
      return;
    }
    case Kind::RestoreRam: {
      if (length == 1) {
        pending_.push_back(Move{f.l, Level::Ram, Level::Work});
        step(f.l);
      } else {
        pending_.push_back(Copy{f.l, Level::Ram, Level::Work});
        frames_.push_back({Kind::Ram, f.l, f.h, f.slots, true, Start::Absent});
      }
      return;
    }
    case Kind::Disk: {
      if (length == 1) {
        step(f.l);
        if (f.start == Start::Held) pending_.push_back(Move{f.l, Level::Disk, Level::None});
        return;
      }
      const DiskChoice c = policy_->choose(length, f.slots);
      if (c.kind == DiskChoice::Kind::ToRam) {
        if (f.start == Start::Held) pending_.push_back(Move{f.l, Level::Disk, Level::None});
        frames_.push_back({Kind::Ram, f.l, f.h, ram_slots_, false, Start::Absent});
        return;
      }
      if (f.start == Start::Absent) {
        throw Error(ErrorCode::Internal, "disk segment split without its start on disk");
      }
      const bool write = f.start == Start::WriteFirst;
      pending_.push_back(Forward{f.l, f.l + c.m, write, false, write ? Level::Disk : Level::None});
      frames_.push_back({Kind::RestoreDisk, f.l, f.l + c.m, f.slots, false, Start::Held});
      const Step right = f.l + c.m;
      if (f.h - right == 1) {
        frames_.push_back({Kind::Ram, right, f.h, 0, false, Start::Absent});
      } else if (c.right_disk) {
        frames_.push_back(
            {Kind::Disk, right, f.h, policy_->right_free_disk(f.slots), false, Start::WriteFirst});
      } else {
        frames_.push_back({Kind::Ram, right, f.h, ram_slots_, false, Start::Absent});
      }
      return;
    }
    case Kind::RestoreDisk: {
      const bool again =
          length >= 2 && policy_->choose(length, f.slots).kind == DiskChoice::Kind::Split;
      if (again) {
        pending_.push_back(Copy{f.l, Level::Disk, Level::Work});
        frames_.push_back({Kind::Disk, f.l, f.h, f.slots, false, Start::Held});
      } else {
        pending_.push_back(Move{f.l, Level::Disk, Level::Work});
        frames_.push_back({Kind::Disk, f.l, f.h, f.slots, false, Start::Absent});
      }
      return;
    }
  }
}

}  // namespace rwd::schedule::detail
