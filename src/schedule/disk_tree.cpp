#include "disk_tree.hpp"

#include <algorithm>
#include <utility>

#include "rewind/error.hpp"

namespace rwd::schedule::detail {

DiskTree::DiskTree(std::vector<double> ram_costs, std::int64_t disk, double write_cost,
                   double read_cost, double work_limit)
    : ram_(std::move(ram_costs)),
      n_(static_cast<Step>(ram_.size()) - 1),
      wd_(write_cost),
      rd_(read_cost),
      root_cost_(n_ >= 1 ? ram_[static_cast<std::size_t>(n_)] : 0.0) {
  if (n_ < 1) throw Error(ErrorCode::Internal, "DiskTree: no step");
  if (disk == 0) {
    exact_ = true;  // the RAM level alone
    return;
  }
  // A segment of L uses at most L - 2 disk slots beyond its start's.
  const std::int64_t last = disk == kUnlimited ? n_ : std::min<std::int64_t>(disk - 1, n_);
  const double per_column = 0.5 * static_cast<double>(n_) * static_cast<double>(n_);
  for (std::int64_t d = 0; d <= last; ++d) {
    if (static_cast<double>(d + 1) * per_column > work_limit) break;
    build_column(d);
    const auto k = columns_.size();
    if (k >= 2 && columns_[k - 1].cost == columns_[k - 2].cost) {
      columns_.pop_back();  // saturated: every later column is this one
      exact_ = true;
      break;
    }
  }
  if (columns_.empty()) return;
  if (static_cast<std::int64_t>(columns_.size()) == last + 1) exact_ = true;
  root_free_ = planned_free(disk == kUnlimited ? kUnlimited : disk - 1);
  const double on_disk =
      wd_ + columns_[static_cast<std::size_t>(root_free_)].cost[static_cast<std::size_t>(n_)];
  if (on_disk < root_cost_) {
    root_cost_ = on_disk;
    root_on_disk_ = true;
  }
}

std::int64_t DiskTree::planned_free(std::int64_t free_disk) const {
  const auto last = static_cast<std::int64_t>(columns_.size()) - 1;
  return free_disk == kUnlimited ? last : std::clamp<std::int64_t>(free_disk, 0, last);
}

void DiskTree::build_column(std::int64_t d) {
  const auto n = static_cast<std::size_t>(n_);
  // R(L, d): the right part by the RAM level or, written to disk, by column d - 1.
  std::vector<double> right(ram_);
  std::vector<bool> right_disk(n + 1, false);
  if (d >= 1) {
    const std::vector<double>& below = columns_[static_cast<std::size_t>(d - 1)].cost;
    for (std::size_t L = 2; L <= n; ++L) {
      if (wd_ + below[L] < right[L]) {
        right[L] = wd_ + below[L];
        right_disk[L] = true;
      }
    }
  }
  Column c{std::vector<double>(n + 1, 0.0), std::vector<std::uint32_t>(n + 1, 0),
           std::vector<bool>(n + 1, false)};
  c.cost[1] = ram_[1];
  for (std::size_t L = 2; L <= n; ++L) {
    double best = ram_[L];
    std::size_t arg = 0;
    for (std::size_t k = 1; k < L; ++k) {
      const double v = static_cast<double>(k) + right[L - k] + rd_ + c.cost[k];
      if (v < best) {
        best = v;
        arg = k;
      }
    }
    c.cost[L] = best;
    c.split[L] = static_cast<std::uint32_t>(arg);
    c.right_disk[L] = arg != 0 && right_disk[L - arg];
  }
  columns_.push_back(std::move(c));
}

DiskTree::Choice DiskTree::choose(Step length, std::int64_t planned_free) const {
  if (length < 2 || !built()) return {};
  const Column& c = columns_[static_cast<std::size_t>(planned_free)];
  const auto L = static_cast<std::size_t>(length);
  return {static_cast<Step>(c.split[L]), static_cast<bool>(c.right_disk[L])};
}

}  // namespace rwd::schedule::detail
