#include "agreed_plan.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "checkpoint_io.hpp"
#include "rewind/comm/agree.hpp"
#include "rewind/error.hpp"
#include "rewind/storage/codec.hpp"

namespace rwd::engine {

namespace detail {

namespace {

// The settings every rank must pass alike, each with its name for the message: the
// recording's, and its stores' when it has them.
std::vector<comm::Setting> settings_of(const RecordingConfig& c, const StoresConfig* st) {
  using comm::setting_hash;
  const auto& p = c.params;
  const SettingNames& n = c.names;
  std::uint64_t costs = setting_hash(p.step_cost.size());
  for (double v : p.step_cost) costs = comm::setting_hash(&v, sizeof v, costs);
  for (double v : p.state_bytes) costs = comm::setting_hash(&v, sizeof v, costs);
  std::vector<comm::Setting> out = {
      {n.schedule, setting_hash(c.schedule)},
      {n.steps, setting_hash(p.steps)},
      {n.ram, setting_hash(p.ram)},
      {n.disk, setting_hash(p.disk)},
      {"the disk write cost", setting_hash(p.write_cost)},
      {"the disk read cost", setting_hash(p.read_cost)},
      {"the period", setting_hash(p.period)},
      {n.ram_bytes, setting_hash(c.ram_bytes)},
      {"the slot size", setting_hash(c.slot_size)},
      {n.no_pullback, setting_hash(c.pullback_checkpoints)},
      {"RecordingConfig::max_steps", setting_hash(c.max_steps)},
      {"RecordingConfig::verify", setting_hash(c.verify)},
      {n.verify_tolerance, setting_hash(c.verify_tolerance)},
      {"RecordingConfig::first_sweep_again", setting_hash(c.first_sweep_again)},
      {"the step costs and sizes", costs},
      {n.compress_ratio, setting_hash(c.compress_ratio)}};
  if (st) {
    out.insert(out.end(), {{"StoresConfig::ram", setting_hash(st->ram)},
                           {"StoresConfig::ram_bytes", setting_hash(st->ram_bytes)},
                           {"StoresConfig::disk", setting_hash(st->disk)},
                           {n.directory, setting_hash(st->store.directory)},
                           {"StoreConfig::label", setting_hash(st->store.label)},
                           {"StoreConfig::keep_files", setting_hash(st->store.keep_files)},
                           {n.async_io, setting_hash(st->store.async_io)},
                           {n.max_staged_bytes, setting_hash(st->store.max_staged_bytes)},
                           {"StoresConfig::ram_store", setting_hash(st->ram_store)},
                           {"StoresConfig::disk_store", setting_hash(st->disk_store)},
                           {n.compress, setting_hash(st->store.codec.name)},
                           {n.compress_tolerance, setting_hash(st->store.codec.tolerance)},
                           {n.compress_precision, setting_hash(st->store.codec.precision)},
                           {n.compress_level, setting_hash(st->store.codec.level)},
                           {n.lossy_pullbacks, setting_hash(st->lossy_pullbacks)},
                           {n.compress_disk, setting_hash(st->compress_disk)}});
  }
  return out;
}

// The compression ratio RAM checkpoints are planned with (RecordingConfig::compress_ratio): the
// given one, or each rank's restart data compressed once, the smallest ratio over the ranks
// with kCompressMargin (a rank with no data takes no part).
void plan_ratio(const std::vector<Field>& restart, MPI_Comm comm, const RecordingConfig& config,
                const StoresConfig* stores, CheckpointSizes& sizes) {
  const double given = config.compress_ratio;
  check_compress_ratio(given, config.names.compress_ratio);
  if (!stores) return;  // planned without its stores (plan_for()): as if uncompressed
  const bool compressed = !stores->store.codec.name.empty() && stores->store.codec.name != "none";
  require(compressed || given == 1.0, config.names.compress_ratio +
                                          " plans with compressed checkpoints, but they are not "
                                          "compressed; choose a codec (" +
                                          config.names.compress + ") or leave the ratio 1");
  if (!compressed || given == 1.0) return;
  if (given > 1.0) {
    sizes.compress_ratio = given;
    sizes.compress_source =
        config.compress_ratio_source.empty() ? "given" : config.compress_ratio_source;
    return;
  }
  // Under a lossy codec that keeps pullback data exact (zstd), the plan counts on the smaller
  // of the two ratios: one ratio plans every kind of checkpoint.
  const bool exact_too =
      storage::codec_is_lossy(stores->store.codec.name) && !stores->lossy_pullbacks;
  std::int64_t raw = 0, stored = 0;
  std::vector<std::byte> block;
  for (const Field& f : restart) {
    if (f.data.empty()) continue;
    block.clear();
    std::size_t bytes = storage::encode_block(stores->store.codec, f.data, block);
    if (exact_too) {
      bytes = std::max(bytes, storage::encode_block(storage::codec_for(stores->store.codec, true),
                                                    f.data, block));
    }
    stored += static_cast<std::int64_t>(bytes);
    raw += static_cast<std::int64_t>(f.data.size_bytes());
  }
  // A rank with no data takes no part (+inf); none with data leaves the plan uncompressed.
  double smallest =
      raw > 0 ? static_cast<double>(raw) / static_cast<double>(std::max<std::int64_t>(stored, 1))
              : std::numeric_limits<double>::infinity();
  comm::mpi_check(MPI_Allreduce(MPI_IN_PLACE, &smallest, 1, MPI_DOUBLE, MPI_MIN, comm),
                  "MPI_Allreduce (compression ratio)");
  if (!std::isfinite(smallest)) return;  // no rank has data
  char what[64];
  std::snprintf(what, sizeof what, "measured on x_0 (%.3g)", smallest);
  sizes.compress_source = what;
  sizes.compress_ratio = ratio_with_margin(smallest);
}

// What is wrong with Stepper::pullback_from_states(): "" when it names a state variable of
// the same size for every pullback field, or says nothing.
std::string sources_fault(Stepper& stepper, const std::vector<Field>& state) {
  const std::vector<Stepper::StateSource> from = stepper.pullback_from_states();
  const std::vector<Field> pullback = stepper.pullback();
  if (from.empty()) return {};
  if (from.size() != pullback.size()) {
    return "it names " + std::to_string(from.size()) + " sources for the " +
           std::to_string(pullback.size()) + " fields pullback() returns";
  }
  for (std::size_t k = 0; k < from.size(); ++k) {
    if (from[k].variable >= state.size()) {
      return "pullback field " + std::to_string(k) + " ('" + std::string(pullback[k].name) +
             "') comes from state variable " + std::to_string(from[k].variable) +
             ", but state() has " + std::to_string(state.size());
    }
    if (state[from[k].variable].data.size() != pullback[k].data.size()) {
      return "pullback field '" + std::string(pullback[k].name) + "' has " +
             std::to_string(pullback[k].data.size()) + " values and state variable '" +
             std::string(state[from[k].variable].name) + "' " +
             std::to_string(state[from[k].variable].data.size());
    }
  }
  return {};
}

// 0: pullback data made of states, 1: not declared, 2: declared wrong (sources_fault()).
std::uint64_t sources_code(Stepper& stepper, const std::vector<Field>& state) {
  if (stepper.pullback_from_states().empty()) return 1;
  return sources_fault(stepper, state).empty() ? 0 : 2;
}

}  // namespace

std::size_t variables_of(Stepper& s) {
  const std::size_t n = s.state().size();
  require(n > 0, "recording: the stepper declares no state variables (Stepper::state())");
  return n;
}

CheckpointSizes agreed_sizes(Stepper& stepper, record::RestartSets& sets, MPI_Comm comm,
                             const RecordingConfig& config, const StoresConfig* stores) {
  comm::agree_settings(comm, settings_of(config, stores));
  const std::vector<Field> state = stepper.state();
  // The fourth value is 1 where step i's pullback data does not hold x_{i+1}, the fifth where it
  // is not made of x_i and x_{i+1}: each holds only if it does on every rank.
  const std::uint64_t local[5] = {
      static_cast<std::uint64_t>(bytes_of(select(state, sets.written()))),
      static_cast<std::uint64_t>(bytes_of(stepper.pullback())),
      static_cast<std::uint64_t>(bytes_of(state)),
      stepper.next_state_in_pullback().size() == state.size() ? 0u : 1u,
      sources_code(stepper, state)};
  std::uint64_t largest[5] = {0, 0, 0, 0, 0};
  comm::mpi_check(MPI_Allreduce(local, largest, 5, MPI_UINT64_T, MPI_MAX, comm),
                  "MPI_Allreduce (checkpoint sizes)");
  CheckpointSizes sizes;
  sizes.restart = static_cast<std::int64_t>(largest[0]);
  sizes.pullback = static_cast<std::int64_t>(largest[1]);
  sizes.state = static_cast<std::int64_t>(largest[2]);
  sizes.pullback_holds_next = largest[3] == 0;
  if (largest[4] == 2) {
    const std::string mine = sources_fault(stepper, state);
    throw Error(ErrorCode::InvalidArgument,
                "Stepper::pullback_from_states() is malformed on at least one rank (this rank: " +
                    (mine.empty() ? std::string("fine") : mine) +
                    "); return {} where the pullback data is not made of the two states a step "
                    "joins");
  }
  // Composed from solution checkpoints, pullback data would be as lossy as they are: under a
  // lossy codec that keeps pullback data exact, no schedule composes it.
  const bool lossy_states = stores != nullptr && !stores->lossy_pullbacks &&
                            storage::codec_is_lossy(stores->store.codec.name);
  sizes.pullback_from_states = largest[4] == 0 && !lossy_states;
  plan_ratio(select(state, sets.written()), comm, config, stores, sizes);
  return sizes;
}

record::RestartSets restart_sets(Stepper& s, const RecordingConfig& c) {
  return record::RestartSets(
      variables_of(s), [&s](Step i) { return s.access(i); },
      record::Horizon{c.params.steps, c.max_steps, 64});
}

}  // namespace detail

Claim claim_of(const Plan& plan) {
  Claim c;
  // Planned in units, params.ram is already the slots the units fill (plan_recording).
  c.ram = plan.params.ram_units > 0 && plan.compressed_budget <= 0
              ? plan.params.ram
              : claimed_slots(plan, plan.params.ram, plan.ram_bytes_bound);
  c.ram_bytes = plan.ram_bytes_bound;
  c.disk = plan.params.disk;
  return c;
}

Plan plan_for(Stepper& stepper, MPI_Comm comm, const RecordingConfig& config) {
  record::RestartSets sets = detail::restart_sets(stepper, config);
  return plan_recording(config, detail::agreed_sizes(stepper, sets, comm, config, nullptr));
}

}  // namespace rwd::engine
