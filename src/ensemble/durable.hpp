#pragma once
// An ensemble's progress kept on disk so that a killed job goes on where it was
// (EnsembleResumeConfig; docs/ensemble.md, "Resume after a kill"): the files of
// durable_format.hpp written as the passes go, read back and taken over by a resumed run, with
// another group count if need be. Private to the ensemble layer.

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "durable_format.hpp"
#include "groups.hpp"
#include "rewind/ensemble/ensemble.hpp"
#include "rewind/ensemble/reproducible_sum.hpp"

namespace rwd::ensemble::detail {

/// What a killed run left for this pass (the same on every rank but `partial`).
struct Resumed {
  std::int64_t generation = 0;                    ///< the killed run's; 0: a fresh start
  std::map<std::int64_t, DurableOutput> outputs;  ///< every task whose forward is durable
  std::map<std::int64_t, int> owner;              ///< of those, the group that takes it over
  std::set<std::int64_t> summed;                  ///< the tasks whose gradient is summed
  std::set<std::int64_t> with_tape;               ///< the tasks whose tape is durable
  std::map<std::int64_t, std::string> tapes;      ///< this rank's part of its group's tapes
  std::optional<ReproducibleSum> partial;         ///< this rank's share of those sums
};

class DurableEnsemble {
 public:
  /// Checks the settings and takes the run's lock (world rank 0). Collective on the world.
  DurableEnsemble(const Groups& groups, const EnsembleResumeConfig& config);
  /// Lets the lock go (rank-local).
  ~DurableEnsemble();
  DurableEnsemble(const DurableEnsemble&) = delete;
  DurableEnsemble& operator=(const DurableEnsemble&) = delete;

  /// The identity of the next passes (EnsembleResumeConfig::identity).
  void set_identity(std::string identity) { config_.identity = std::move(identity); }
  /// A forward pass of `tasks` begins: takes in a killed run's manifest (with `resume`; refused
  /// otherwise) and writes this run's. Collective on the world.
  const Resumed& begin_forward(std::int64_t tasks);
  /// Task k's forward ended on this group with output `y`, and `tape` is this rank's description
  /// of its durable tape (empty: none): each rank writes its description, then the leader lists
  /// them with the output. Collective on the group.
  void forward_done(std::int64_t task, std::int64_t steps, std::span<const double> y,
                    const std::string& tape);
  /// The second name this group's store file gets, in which its durable tapes live.
  std::string tape_link() const;
  /// Task k's tape is listed no more (it is about to be reversed, or was cut): its room in the
  /// file may be used again once this returns. Collective on the group.
  void unlist_tape(std::int64_t task);
  /// The forward pass ended: the killed run's files (whose tapes were taken over and made durable
  /// again) go. Collective on the world.
  void taken_over();
  /// The backward pass begins with `ybar` (read on `root`): a resumed one must have the killed
  /// run's. Collective on the world.
  void begin_backward(std::span<const double> ybar, int root);
  /// Task k's gradient is in `sum`, this rank's partial sum: made durable on every rank of the
  /// group, then listed. Collective on the group.
  void summed(std::int64_t task, const ReproducibleSum& sum);
  /// The pass ended (or was given up): every file goes. Collective on the world.
  void finish();
  /// What the files list cannot be trusted (the program is not the one that wrote them): every
  /// file goes, the head first (world rank 0; never throws). Rank-local.
  void forget() noexcept;

 private:
  std::string path(const std::string& name) const;
  std::vector<std::string> read_manifest(const std::string& head_path);
  void check_problem(const DurableHead& saved) const;
  void take_over(const std::vector<std::string>& texts);
  void summed_files(const ReproducibleSum& sum);
  void write_group();
  void write_head();
  void remove_generations(std::int64_t below);

  const Groups& groups_;
  EnsembleResumeConfig config_;
  int lock_ = -1;
  DurableHead head_;    // this run's
  DurableGroup group_;  // this group's, this generation (the leader writes it)
  std::string last_sum_;
  std::set<std::int64_t> listed_tapes_;  // this group's tapes the manifest lists
  Resumed resumed_;
  bool live_ = false;  // this pass's files exist
  bool told_afresh_ = false;
};

}  // namespace rwd::ensemble::detail
