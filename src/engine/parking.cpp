#include "parking.hpp"

#include <variant>

#include "keeping.hpp"
#include "rewind/error.hpp"
#include "rewind/schedule/adaptors.hpp"
#include "rewind/schedule/registry.hpp"

namespace rwd::engine::detail {

std::pair<int, double> Parking::park_adds() const {
  int count = 0;
  double bytes = 0.0;
  const CheckpointSizes stored = stored_sizes(sizes);
  if (!thinned_without_final()) {
    ++count;
    bytes += static_cast<double>(stored.state);
  }
  if (io->record().work_pullback() == steps - 1) {
    ++count;
    bytes += static_cast<double>(stored.pullback);
  }
  return {count, bytes};
}

std::pair<Claim, Level> Parking::park_plan() const {
  const auto [count, bytes] = park_adds();
  Claim ram = held_claim();
  ram.ram_bytes += bytes;
  ram.ram = claimed_slots(plan, ram.ram + count, ram.ram_bytes);  // as held_claim() counts after
  if (stores->fits(id, ram) || count == 0) return {ram, Level::Ram};
  Claim disk = held_claim();
  if (disk.disk != schedule::kUnlimited) disk.disk += count;
  if (stores->config().disk != 0 && stores->fits(id, disk)) return {disk, Level::Disk};
  return {ram, Level::Ram};
}

Claim Parking::park_claim() const {
  return park_plan().first;
}

bool Parking::can_rebuild() const {
  return detail::last_restart(*io, steps).has_value() || last_held_state().has_value();
}

std::optional<std::pair<Key, Level>> Parking::last_held_state() const {
  return detail::last_held_state(*io, steps, plan.params.pullback_holds_next);
}

bool Parking::whole() const {
  if (phase != Phase::Recorded && phase != Phase::Parked) return false;
  if (thinned || work_lost) return false;
  const record::CheckpointRecord& r = io->record();
  for (Step i = 0; i < steps; ++i) {
    if (r.cheapest(key(i, Kind::Pullback))) continue;
    if (i == steps - 1 && r.work_pullback() == i) continue;  // in the stepper until parked
    return false;
  }
  return true;
}

void Parking::park() {
  require_phase(Phase::Recorded, "park()");
  require_buffers("park()");
  if (work_lost) {
    throw Error(ErrorCode::InvalidArgument,
                "recording: park() after lose_work(): the stepper no longer holds x_n (the "
                "reverse rebuilds it; a recording with lost work needs no parking)");
  }
  if (position != steps) broken("parks with the working state not at x_n");
  const auto [claim, where] = park_plan();
  stores->claim(id, claim);  // a refused park leaves the recording as it was
  if (!thinned_without_final()) {
    const std::vector<Field> state = stepper().state();
    std::vector<std::size_t> all(state.size());
    for (std::size_t v = 0; v < all.size(); ++v) all[v] = v;
    io->put(key(steps, Kind::Final), Level::Work, where, state, all);
  }
  if (io->record().work_pullback() == steps - 1) {
    io->put(key(steps - 1, Kind::Pullback), Level::Work, where, stepper().pullback());
  }
  position.reset();
  phase = Phase::Parked;
  ++stats.parks;
  stores->claim(id, held_claim());
  release_stepper();
}

void Parking::unpark() {
  stores->claim(id, thinned ? held_claim() : reverse_claim());
  const Key final_key = key(steps, Kind::Final);
  const auto* entry = io->record().find(final_key, Level::Work);
  if (!entry && !thinned) broken("a parked recording lost its final state");
  if (entry) {
    io->get(final_key, Level::Work, select(stepper().state(), entry->variables));
    io->set_working_exact(entry->exact);
    io->erase(final_key, Level::Work);
  }
  const Key work = key(steps - 1, Kind::Pullback);
  if (io->record().find(work, Level::Work)) {
    io->get(work, Level::Work, stepper().pullback());
    io->erase(work, Level::Work);
  }
  position = steps;
}

void Parking::spill(std::int64_t at_most) {
  if (phase != Phase::Recorded && phase != Phase::Parked) require_phase(Phase::Parked, "spill()");
  io->spill(at_most);
  stores->claim(id, held_claim());
}

void Parking::lose_work() {
  require_phase(Phase::Recorded, "lose_work()");
  work_lost = true;
  position.reset();
  release_stepper();
}

void Parking::rebuild() {
  const std::optional<std::pair<Key, Level>> last = detail::last_restart(*io, steps);
  const std::optional<std::pair<Key, Level>> held = last_held_state();
  if (!last && !held) {
    throw Error(ErrorCode::InvalidArgument,
                "recording: the host lost the state at the end of the first sweep and no "
                "restart checkpoint is held to recompute it from");
  }
  const bool pullback = io->record().work_pullback().has_value();
  Step from = 0;
  if (held && (!last || held->first.step + 1 > last->first.step)) {
    from = held->first.step + 1;  // x_{k+1} from step k's pullback data
    restore_from_pullback(from, held->second);
  } else {
    const Key k = last->first;
    const auto* entry = io->record().find(k, last->second);
    io->get(k, last->second, select(stepper().state(), entry->variables));
    io->set_working_exact(entry->exact);
    from = k.step;
  }
  position = from;
  const Step before = stats.forward_steps;
  recompute(schedule::Forward{from, steps, false, pullback, Level::Work});
  stats.rebuilt_steps += stats.forward_steps - before;
  settle_check();
  work_lost = false;
}

bool Parking::tail_held() const {
  return io->record().find(key(steps - 1, Kind::Pullback), Level::Work);
}

bool Parking::thinned_without_final() const {
  return thinned && final_dropped;
}

Claim Parking::thin(bool keep_final) {
  if (phase != Phase::Recorded && phase != Phase::Parked) require_phase(Phase::Parked, "thin()");
  // Step n-1's pullback data stays where the parked or recorded recording holds it.
  const bool tail = phase == Phase::Parked
                        ? tail_held()
                        : !work_lost && io->record().work_pullback() == steps - 1;
  const detail::Thinned t = detail::thin(*io, steps, tail, keep_final, sets.variables(),
                                         plan.schedule, plan.params.pullback_holds_next);
  io->forget_drops();
  thinned = true;
  tail_kept = t.tail_kept;
  final_dropped = t.final_dropped;
  base = t.base;
  held_base = t.held_base;
  stores->claim(id, held_claim());
  return held_claim();
}

void Parking::replan(Step m) {
  thinned = false;
  served_below = base;
  const Key first = held_base ? key(base - 1, Kind::Pullback) : key(base, Kind::Restart);
  const auto level = io->record().cheapest(first);
  if (!level) broken("a thinned recording lost x_" + std::to_string(base));
  if (held_base) {  // x_base from step base-1's pullback data, which its adjoint still reads
    if (m > base) restore_from_pullback(base, *level);
  } else {
    if (m > base) {
      const auto* entry = io->record().find(first, *level);
      io->get(first, *level, select(stepper().state(), entry->variables));
      io->set_working_exact(entry->exact);
      position = base;
    }
    for (Level l : {Level::Ram, Level::Disk}) {
      if (io->record().find(first, l)) io->erase(first, l);
    }
  }
  if (m <= base) {  // every step left has its pullback data kept
    stream.reset(std::make_unique<schedule::EndOnlySchedule>(plan.params));
    return;
  }
  const Claim held = held_claim();
  plan =
      plan_recording(detail::replan_config(config, m - base, stores->available(id), held), sizes);
  stream.reset(std::make_unique<schedule::ShiftedSchedule>(
      schedule::make_schedule(plan.schedule, plan.params), base));
  Claim claim = full_claim();
  claim.ram += held.ram;
  claim.ram_bytes += held.ram_bytes;
  if (claim.disk != schedule::kUnlimited) claim.disk += held.disk;
  stores->claim(id, claim);
  // Planned again with the ratio the first sweep reached (replan_measured): every RAM put is
  // still measured against the first plan's budget, held checkpoints included, whatever the new
  // plan counts on (an expanding codec is planned as uncompressed and still kept to it).
  if (first_plan) plan.compressed_budget = first_plan->compressed_budget;
  const Step before = stats.forward_steps;
  while (true) {
    const Action a = next_action();
    if (const auto* f = std::get_if<schedule::Forward>(&a)) {
      recompute(*f);
    } else if (std::holds_alternative<schedule::EndForward>(a)) {
      break;
    } else if (!transfer_action(a)) {
      broken("reverses before the first sweep ended");
    }
  }
  if (position != m) {
    broken("the first sweep planned again ended at x_" + std::to_string(position.value_or(-1)));
  }
  stats.rerecorded_steps += stats.forward_steps - before;
  settle_check();
}

}  // namespace rwd::engine::detail
