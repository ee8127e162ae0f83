#pragma once
// One recording's checkpoints in its stores: puts, gets, erases, copies between levels, spills
// and prefetches, with the record of where each checkpoint lives and the time spent in the
// stores. The schedule's logic (what to store when) is the recording's; this is the traffic.
// Rank-local unless a call says otherwise (a collective store makes its calls collective).

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "rewind/engine/plan.hpp"
#include "rewind/engine/stepper.hpp"
#include "rewind/engine/stores.hpp"
#include "rewind/record/checkpoint_record.hpp"

namespace rwd::engine::detail {

using schedule::Level;
using storage::Key;

/// The layout of one of a stepper's fields (its name owned here), taken when a recording was
/// made: a parked recording whose stepper is gone (an ensemble task's) still moves its
/// checkpoints.
struct FieldShape {
  std::string name;
  std::size_t size = 0;
  std::int64_t offset = 0;
  std::int64_t global_size = 0;
  storage::Grid grid = {};
};
std::vector<FieldShape> shapes_of(const std::vector<Field>& fields);

/// Fields of `all` at the indices `which`, in that order.
std::vector<Field> select(const std::vector<Field>& all, const std::vector<std::size_t>& which);
std::int64_t bytes_of(const std::vector<Field>& fields);
std::vector<storage::FieldView> views(const std::vector<Field>& fields);

class CheckpointIo {
 public:
  /// `id`: the recording's Key::recording. `stepper`: whose buffers checkpoints move in and
  /// out of (told of I/O and loads); set_stepper() changes it. `state` and `pullback`: the
  /// stepper's field layouts. `plan`: the recording's plan as it stands (a thinned recording
  /// plans again), for the error of a schedule that uses a disk its budget has none of.
  CheckpointIo(std::shared_ptr<Stores> stores, std::int64_t id, Stepper* stepper,
               std::vector<FieldShape> state, std::vector<FieldShape> pullback, const Plan* plan);

  void set_stepper(Stepper* stepper) { stepper_ = stepper; }
  Key key(Step step, Kind kind) const { return Key{step, kind, id_}; }
  /// The record, for reading or changing it: settles first (settle()), so that whoever reads
  /// it finds what measuring each put inside put() would have left. Collective then.
  record::CheckpointRecord& record() {
    settle();
    return record_;
  }
  const record::CheckpointRecord& record() const { return record_; }
  Stores& stores() { return *stores_; }
  /// Seconds spent in store calls.
  double seconds() const { return seconds_; }

  /// Stores `fields` as `k`, placed at `level` by the schedule, in the store of `where` (they
  /// differ for what a parked recording takes out of the stepper). `variables`: restart data's
  /// state variables.
  void put(const Key& k, Level level, Level where, const std::vector<Field>& fields,
           std::vector<std::size_t> variables = {});
  /// Reads `k` (placed at `level`) into `fields`; `into_stepper`: they are the stepper's own
  /// buffers (not scratch space for a copy between stores), so it is told.
  void get(const Key& k, Level level, const std::vector<Field>& fields, bool into_stepper = true);
  void erase(const Key& k, Level level);
  /// Copies restart checkpoint `k` from `from` to `to` (RAM or DISK) through scratch buffers.
  void copy(const Key& k, Level from, Level to);
  /// Starts reading `k` ahead from the store of the cheapest copy the schedule will read: the
  /// disk store reads it into staging, a RAM store with a codec decodes it on the I/O thread
  /// (every rank holds the same record, so the prefetches are made alike). Never settles
  /// (settle()): a hint, right or wrong, changes no decision.
  void prefetch(const Key& k);
  /// Whether prefetch() can help: a disk store is open, or the RAM store compresses.
  bool prefetches() const;
  /// With a plan that counts on compression: measures the last RAM put against the budget
  /// (keep_to_budget) if that is not done yet. Collective. Every call that reads or changes
  /// what is held calls it first, so a put's block is made on the RAM store's I/O thread
  /// while the caller steps on, and is measured at the next such call: the same decisions at
  /// the same point of every rank's calls as measuring it inside put().
  void settle();
  /// Where put() takes a checkpoint's data while a recording is made again from a durable tape
  /// (Recording::from_durable): `source(key, out)` fills `out` (shaped like the fields put()
  /// was given) with the tape's data of that key and says whether the tape holds it (false:
  /// `out` is left as it is). Empty: the fields given (the usual case).
  using Source = std::function<bool(const Key&, const std::vector<Field>& out)>;
  /// The working state was restored from a checkpoint that holds the first sweep's bits (or
  /// not): what is stored from it afterwards inherits that (Entry::exact), and the replay check
  /// asks for the first sweep's bits only of what descends from exact data.
  void set_working_exact(bool exact) { working_exact_ = exact; }
  bool working_exact() const { return working_exact_; }
  void set_source(Source source) { source_ = std::move(source); }
  /// Every checkpoint still recorded is erased: RAM ones at once, disk ones when the stores
  /// next make a collective call. Never collective, so a destructor can call it.
  void drop() noexcept;
  /// Moves RAM checkpoints to the disk store, at most `at_most` of them, in key order.
  /// Collective (the disk store's puts).
  void spill(std::int64_t at_most);

  /// What the checkpoints held now claim, in the sizes every rank agreed on.
  Claim held(const CheckpointSizes& sizes) const;
  /// The disk slots taken by checkpoints the schedule placed in RAM that live on disk (spilled).
  std::int64_t spilled() const;

  /// With a plan that counts on compression (Plan::compressed_budget): the bytes this
  /// recording's RAM checkpoints take in the RAM store now and at most, and how many were moved
  /// to disk as they were stored because they did not fit.
  std::int64_t ram_stored_bytes() const { return ram_stored_bytes_; }
  std::int64_t ram_stored_peak() const { return ram_stored_peak_; }
  std::int64_t over_budget_moves() const { return over_budget_moves_; }

  /// Checkpoints dropped because they did not fit the compressed budget and the disk had no
  /// room (compressed_budget.cpp): the schedule still counts them held at `level`. Restoring
  /// one recomputes it from the latest state held before it; freeing one forgets it.
  bool dropped(const Key& k, Level level);
  bool dropped_anywhere(const Key& k);
  void forget_dropped(const Key& k);
  std::int64_t dropped_count() const { return dropped_count_; }
  /// The ratio RAM checkpoints reached so far (bytes given over bytes stored), the smallest of
  /// any rank's (a rank that stored none takes no part; +inf: none did). Collective.
  double measured_ratio();
  /// At the end of an import from a durable tape: what the replay holds that the tape does not
  /// was dropped by the run that made the tape, and is dropped here too.
  void drop_untaped();
  /// A plan that counts on compression, whose schedule keeps no restart checkpoint of x_0:
  /// x_0 is stored anyway (`k`, in RAM, in the budget), for what is dropped
  /// to be recomputed from, and erased by release_anchor() when the reverse ends. The schedule
  /// never names it.
  void set_anchor(const Key& k) { anchor_ = k; }
  void release_anchor();
  /// A thinned recording plans again: what the old plan dropped is forgotten, and its anchor
  /// (kept as the first restart checkpoint) is the new plan's.
  void forget_drops();
  /// Test hook, process-wide: from now on every `n`-th RAM put measured against a compressed
  /// budget counts as over it, as a checkpoint that compressed worse would (0: none). A test
  /// sets it alike on every rank.
  static void count_as_over_budget_every(std::int64_t n);

 private:
  storage::Store& store(Level where);
  // Checkpoint `k`, just put in RAM for `level` and taking `bytes` there, against the compressed
  // budget: agreed over the ranks; moved to disk on every rank when it does not fit on one, or
  // an error on every rank when the disk has no room either. Collective.
  // `raw`: its bytes before compression.
  void keep_to_budget(const Key& k, Level level, std::int64_t bytes, std::int64_t raw);
  // The RAM checkpoint to drop when over the compressed budget (compressed_budget.cpp says
  // which), pullback data only if `pullback_only`. None: nothing can be (the first state held
  // and final states cannot).
  std::optional<std::pair<Key, Level>> droppable(bool pullback_only) const;
  void drop(const Key& k, Level level);
  [[noreturn]] void throw_over_budget(const Key& k, std::int64_t bytes, int over_rank);
  [[noreturn]] void broken_tape(const Key& k) const;
  // Moves RAM checkpoint `k` (placed at `level`) to the disk store. Collective (the disk put).
  void move_to_disk(const Key& k, Level level);
  // Forgets what RAM checkpoint `k` (placed at `level`) took, when it leaves the RAM store.
  void left_ram(const Key& k, Level level);
  // Scratch buffers shaped like `like`, as fields.
  std::vector<Field> scratch_fields(const std::vector<const FieldShape*>& like);

  std::shared_ptr<Stores> stores_;
  std::int64_t id_;
  Stepper* stepper_;
  std::vector<FieldShape> state_, pullback_;
  const Plan* plan_;
  record::CheckpointRecord record_;
  Source source_;
  bool copying_ = false;       // copy() puts what it read from a store, never from the source
  bool from_tape_ = false;     // put() stores a durable tape's data
  bool copy_exact_ = false;    // copy(): what it read holds the first sweep's bits (Entry::exact)
  bool working_exact_ = true;  // the stepper's working state descends from exact data only
  std::set<Key> prefetched_;
  std::vector<std::vector<double>> scratch_;
  double seconds_ = 0.0;
  std::map<std::pair<Key, Level>, std::int64_t> ram_stored_;  // with Plan::compressed_budget
  std::int64_t ram_stored_bytes_ = 0, ram_stored_peak_ = 0, over_budget_moves_ = 0;
  std::int64_t ram_put_raw_ = 0, ram_put_stored_ = 0;  // every RAM put's bytes, before and after
  std::set<std::pair<Key, Level>> dropped_;  // over the compressed budget, still in the plan
  std::set<std::pair<Key, Level>> untaped_;  // put from a durable tape that does not hold them
  std::int64_t dropped_count_ = 0;
  std::optional<Key> anchor_;
  struct Unmeasured {  // the last RAM put, until settle() measures it
    Key k;
    Level level;
    std::int64_t raw = 0;
  };
  std::optional<Unmeasured> unmeasured_;
};

}  // namespace rwd::engine::detail
