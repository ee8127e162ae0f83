#include "rewind/ensemble/tape_room.hpp"

#include <algorithm>
#include <string>

#include "rewind/error.hpp"

namespace rwd::ensemble {

namespace {

std::string describe(const engine::Claim& c) {
  const auto count = [](std::int64_t n) {
    return n == schedule::kUnlimited ? std::string("unlimited") : std::to_string(n);
  };
  return std::to_string(c.ram) + " RAM checkpoints (" +
         std::to_string(static_cast<long long>(c.ram_bytes)) + " bytes) and " + count(c.disk) +
         " disk checkpoints";
}

}  // namespace

void make_room(engine::Stores& stores, const std::vector<HeldTape>& given, std::int64_t task,
               const engine::Claim& need, std::int64_t run,
               const std::function<void(std::int64_t)>& spilled,
               const std::function<void(std::int64_t)>& cut) {
  std::vector<HeldTape> tapes = given;
  const auto other = [&](const HeldTape& t) {
    return t.recording != nullptr && t.recording->id() != run;
  };
  while (!stores.fits(run, need)) {
    HeldTape* spill = nullptr;
    for (HeldTape& t : tapes) {
      if (!other(t) || t.recording->claim().ram == 0) continue;
      if (!spill || t.order < spill->order) spill = &t;
    }
    if (spill) {
      const engine::Claim held = spill->recording->claim();
      const engine::Claim moved{
          0, 0.0, held.disk == schedule::kUnlimited ? held.disk : held.disk + held.ram};
      if (stores.fits(spill->recording->id(), moved)) {
        spill->recording->spill();
        spill->spilled = true;
        spilled(spill->task);
        continue;
      }
    }
    HeldTape* victim = nullptr;
    for (HeldTape& t : tapes) {
      if (!other(t)) continue;
      if (!victim || t.steps < victim->steps) victim = &t;
    }
    if (!victim) {
      throw Error(ErrorCode::InvalidArgument,
                  "ensemble: task " + std::to_string(task) + " needs " + describe(need) +
                      ", more than the group's stores hold with every other tape spilled or cut "
                      "(claimed now: " +
                      describe(stores.claimed()) +
                      "); raise the group's capacity or lower the per-task budget");
    }
    cut(victim->task);
    victim->recording = nullptr;
    stores.collect();
  }
}

std::vector<std::int64_t> reverse_order(std::vector<HeldTape> tapes) {
  const auto rank = [](const HeldTape& t) {
    const int where = !t.recording ? 2 : t.spilled ? 1 : 0;
    return std::pair{where, -t.order};
  };
  std::stable_sort(tapes.begin(), tapes.end(),
                   [&](const HeldTape& a, const HeldTape& b) { return rank(a) < rank(b); });
  std::vector<std::int64_t> out;
  out.reserve(tapes.size());
  for (const HeldTape& t : tapes) out.push_back(t.task);
  return out;
}

}  // namespace rwd::ensemble
