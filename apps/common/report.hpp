#pragma once
// What an app run reports: the human summary, the JSON summary, progress lines, and the
// timeline of forward, recomputed and adjoint steps that the plotting script draws.
#include <petscsys.h>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "rewind/petsc/trajectory.h"

namespace rwd::apps {

/// printf into a string (at most 511 characters).
std::string format(const char* fmt, auto... args) {
  char buf[512];
  std::snprintf(buf, sizeof buf, fmt, args...);
  return buf;
}

/// A JSON object built key by key: JsonObject o; o.num("x", 1).str("name", "a"); o.done().
class JsonObject {
 public:
  JsonObject& num(const char* key, double v);  ///< null if not finite
  JsonObject& integer(const char* key, long long v) { return raw(key, std::to_string(v)); }
  JsonObject& boolean(const char* key, bool v) { return raw(key, v ? "true" : "false"); }
  JsonObject& str(const char* key, const std::string& v) { return raw(key, quote(v)); }
  /// `json` must be a JSON value (an object, an array, ...).
  JsonObject& raw(const char* key, const std::string& json);
  std::string done() const { return "{" + os_.str() + "}"; }
  static std::string quote(const std::string& s);

 private:
  std::ostringstream os_;
  bool first_ = true;
};

/// One step taken: 'F' first forward sweep, 'R' recomputed during the adjoint, 'A' adjoint.
struct StepEvent {
  double seconds;  ///< wall-clock time since the forward solve began
  PetscInt step;   ///< step i goes from x_i to x_{i+1}
  char kind;
};

/// A restart state the schedule stored: x_step, stored when `forward_index` forward steps ('F'
/// and 'R' events) had run, at the level it ended up on (a state moved from RAM to disk
/// counts as stored on disk).
struct CheckpointEvent {
  std::int64_t forward_index;
  std::int64_t step;
  std::string level;  ///< "ram" or "disk"
};

/// What the rewind trajectory did, reduced over the ranks (times: slowest rank; bytes, peak
/// bytes included: sum).
struct TrajectoryReport {
  std::string type;         ///< "rewind", "memory", ...
  bool have_stats = false;  ///< rewind statistics are available
  TSTrajectoryRewindStats stats{};
  std::string schedule;  ///< as resolved by the trajectory ("auto" never appears)
  std::string ram_budget, disk_budget;
  bool online = false;
  std::string dirname;
  std::vector<CheckpointEvent> checkpoints;  ///< empty if the schedule could not be replayed
};

struct TaylorRow {
  PetscReal h, J, first, second;  ///< J(m + h dm), |J_h - J|, |J_h - J - h dJ.dm|
  std::optional<PetscReal> order;
};

struct TaylorReport {
  PetscReal J = 0, dJdm = 0;
  std::vector<TaylorRow> rows;
  PetscReal min_order = 0, max_order = 0;
  bool passed = false;
};

struct FieldComparison {
  std::string name;
  PetscInt size = 0, differing = 0;
  PetscReal max_abs_diff = 0;
  PetscReal max_abs_reference = 0;  ///< the reference's largest entry
  /// The largest difference relative to the reference's largest entry.
  PetscReal relative_diff() const {
    return max_abs_reference > 0 ? max_abs_diff / max_abs_reference : max_abs_diff;
  }
};

struct CompareReport {
  std::string reference;  ///< what the gradients were compared with
  std::vector<FieldComparison> fields;
  bool identical = false;
  PetscReal rtol = 0;   ///< -compare_storeall_rtol: 0 asks for the same bits
  bool passed = false;  ///< identical, or every field within rtol
};

/// Everything the summaries print.
struct Report {
  std::string app, description;
  PetscInt mx = 0, my = 0;
  int ranks = 1;
  std::string ts_type;
  bool adaptive = false;
  PetscInt steps = 0;
  PetscReal t_final = 0, dt = 0;  ///< dt: the fixed step (0 when adaptive)
  TrajectoryReport trajectory;
  double forward_seconds = 0, adjoint_seconds = 0;
  PetscReal J = 0, J_terminal = 0, J_integral = 0;
  std::string parameter;  ///< name of the parameter field, empty if none
  PetscReal norm_u0 = 0, norm_p = 0;
  std::vector<StepEvent> timeline;
  std::optional<TaylorReport> taylor;
  std::optional<CompareReport> compare;
};

/// The Taylor test's table and verdict: J(m) and dJ.dm given, J(m + h dm) from `J_at` for
/// h = h0, h0/2, ... (`points` values, in that order). Passes when every observed order of the
/// second-order remainder is between 1.8 and 2.2.
TaylorReport taylor_table(PetscReal J, PetscReal dJdm, PetscReal h0, PetscInt points,
                          const std::function<PetscReal(PetscReal h)>& J_at);

/// The human summary (printed on rank 0 by the caller).
std::string summary_text(const Report& r);
/// What the Taylor test is about to do, and then its table and verdict.
std::string taylor_header(const std::string& parameter, PetscInt points);
/// `objective` names J in the table ("J", "Phi").
std::string taylor_text(const TaylorReport& t, const char* objective = "J");
std::string taylor_json(const TaylorReport& t);
/// What the store-all comparison is about to do, and then its verdict for each gradient.
std::string compare_header();
std::string compare_text(const CompareReport& c);
/// The verdict of a comparison whose gradients differ within (or beyond) a relative tolerance
/// given by `option`: "<comparison> passed: the gradients differ, within 1.0e-05 relative
/// (<option>)".
std::string within_verdict(const char* comparison, bool passed, PetscReal rtol, const char* option);
/// The same as one JSON object.
std::string summary_json(const Report& r);

/// Where each stored checkpoint went, from replaying schedule `name` (built for `steps`, 0 for
/// an online schedule) in the simulator for n steps; empty if the replay does not take exactly
/// `forward_steps` forward steps (then it is not the run that happened).
std::vector<CheckpointEvent> replay_checkpoints(const std::string& name, std::int64_t steps,
                                                std::int64_t n, std::int64_t ram, std::int64_t disk,
                                                double write_cost, double read_cost,
                                                std::int64_t forward_steps);

/// Progress lines on rank 0 for runs that last: one line every two seconds, none for phases
/// shorter than that.
class Progress {
 public:
  explicit Progress(bool enabled);
  void start(const char* phase);
  void update(const std::string& text);
  void finish();

 private:
  bool enabled_;
  const char* phase_ = "";
  double start_ = 0, last_ = 0;
  bool printed_ = false;
  std::string last_text_;
};

}  // namespace rwd::apps
