#include "rewind/schedule/adaptors.hpp"

#include <type_traits>
#include <variant>

namespace rwd::schedule {

ShiftedSchedule::ShiftedSchedule(std::unique_ptr<Schedule> inner, Step by)
    : Schedule(inner->params()), inner_(std::move(inner)), by_(by) {}

std::optional<Action> ShiftedSchedule::next() {
  std::optional<Action> a = inner_->next();
  if (!a) return a;
  std::visit(
      [this](auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, Forward> || std::is_same_v<T, Reverse>) {
          x.n0 += by_;
          x.n1 += by_;
        } else if constexpr (std::is_same_v<T, Copy> || std::is_same_v<T, Move>) {
          x.n += by_;
        }
      },
      *a);
  return a;
}

void ShiftedSchedule::observe_step(Step i, double cost, double bytes) {
  inner_->observe_step(i < 0 ? i : i - by_, cost, bytes);
}

std::optional<Action> EndOnlySchedule::next() {
  if (done_) return std::nullopt;
  done_ = true;
  return EndReverse{};
}

}  // namespace rwd::schedule
