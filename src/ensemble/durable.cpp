#include "durable.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <limits>

#include "rewind/comm/agree.hpp"
#include "rewind/engine/durable_files.hpp"
#include "rewind/error.hpp"
#include "rewind/storage/store.hpp"

namespace rwd::ensemble::detail {

using comm::mpi_check;

namespace {

// What to do with the files of a manifest that cannot be used, for messages.
std::string files_of(const std::string& label) {
  return "rewind-ensemble-" + engine::file_label(label) + ".*";
}

// Every rank gets rank 0's strings.
std::vector<std::string> broadcast(MPI_Comm comm, std::vector<std::string> texts) {
  std::int64_t count = static_cast<std::int64_t>(texts.size());
  mpi_check(MPI_Bcast(&count, 1, MPI_INT64_T, 0, comm), "MPI_Bcast (manifest)");
  texts.resize(static_cast<std::size_t>(count));
  for (std::string& t : texts) {
    std::int64_t n = static_cast<std::int64_t>(t.size());
    mpi_check(MPI_Bcast(&n, 1, MPI_INT64_T, 0, comm), "MPI_Bcast (manifest)");
    t.resize(static_cast<std::size_t>(n));
    for (std::int64_t done = 0; done < n;) {
      const int part = static_cast<int>(std::min<std::int64_t>(n - done, 1 << 30));
      mpi_check(MPI_Bcast(t.data() + done, part, MPI_CHAR, 0, comm), "MPI_Bcast (manifest)");
      done += part;
    }
  }
  return texts;
}

// Runs `fn` where `here` holds and agrees the outcome over `comm` (every rank throws the lowest
// failing rank's error).
template <class Fn>
void on(MPI_Comm comm, bool here, Fn&& fn) {
  std::optional<Error> failure;
  if (here) failure = comm::capture(std::forward<Fn>(fn));
  comm::agree(comm, failure);
}

}  // namespace

DurableEnsemble::DurableEnsemble(const Groups& groups, const EnsembleResumeConfig& c)
    : groups_(groups), config_(c) {
  require(!c.directory.empty(),
          "ensemble: EnsembleResumeConfig::directory is empty; a resumable ensemble keeps its "
          "manifest there (PETSc: -rewind_ensemble_dirname)");
  require(c.enabled || !c.resume,
          "ensemble: EnsembleResumeConfig::resume needs EnsembleResumeConfig::enabled");
  on(groups.world(), groups.world_rank() == 0, [&] {
    std::error_code ec;
    if (!std::filesystem::is_directory(c.directory, ec)) {
      throw Error(ErrorCode::InvalidArgument,
                  "ensemble: the resume directory '" + c.directory +
                      "' does not exist; make it first, on a file system every rank sees");
    }
    lock_ = engine::lock_durable_run(
        path(lock_name(c.label)),
        "another EnsembleResumeConfig::label or directory (PETSc: -rewind_ensemble_dirname)");
  });
}

DurableEnsemble::~DurableEnsemble() {
  if (lock_ < 0) return;
  ::unlink(path(lock_name(config_.label)).c_str());  // the lock file goes before the lock
  ::close(lock_);
}

std::string DurableEnsemble::path(const std::string& name) const {
  return (std::filesystem::path(config_.directory) / name).string();
}

// Rank 0: the head and every group file of a killed run ("" where a group made nothing
// durable), or nothing for a fresh start.
std::vector<std::string> DurableEnsemble::read_manifest(const std::string& head_path) {
  const std::optional<std::string> text = engine::read_durable(head_path);
  if (!text) {
    // Files of a run that was removing them (or a refused one's), without a head: never a
    // manifest; this run holds the label's lock, so no live run owns them.
    remove_generations(std::numeric_limits<std::int64_t>::max());
    if (config_.resume && !told_afresh_) {  // once: a loop's later passes start afresh too
      std::fprintf(stderr, "rewind ensemble: no manifest '%s': starting afresh\n",
                   head_path.c_str());
      told_afresh_ = true;
    }
    return {};
  }
  const DurableHead saved = parse_head(*text, head_path);
  if (saved.phase == "done") {  // a run that ended was killed while it removed its files
    remove_generations(saved.generation + 1);
    engine::remove_durable(head_path);
    return {};
  }
  if (!config_.resume) {
    throw Error(ErrorCode::InvalidArgument,
                "ensemble: '" + head_path +
                    "' is the manifest of a killed ensemble run that can be resumed; resume it "
                    "(EnsembleResumeConfig::resume; PETSc: -rewind_ensemble_resume), give this "
                    "run another label or directory, or remove its files (" +
                    files_of(config_.label) + ") to start again");
  }
  std::vector<std::string> texts{*text};
  for (int q = 0; q < saved.groups; ++q) {
    texts.push_back(
        engine::read_durable(path(group_name(config_.label, saved.generation, q))).value_or(""));
  }
  return texts;
}

void DurableEnsemble::check_problem(const DurableHead& saved) const {
  std::vector<std::string> diffs;
  if (saved.identity != head_.identity) {
    diffs.push_back("the identity text ('" + saved.identity + "' there, '" + head_.identity +
                    "' now)");
  }
  if (saved.label != head_.label) {
    diffs.push_back("the label ('" + saved.label + "' there, '" + head_.label + "' now)");
  }
  if (saved.tasks != head_.tasks) {
    diffs.push_back("the task count (" + std::to_string(saved.tasks) + " there, " +
                    std::to_string(head_.tasks) + " now)");
  }
  if (saved.group_size != head_.group_size) {
    const std::string g = std::to_string(saved.group_size);
    diffs.push_back("the group size (" + g + " there, " + std::to_string(head_.group_size) +
                    " now: a task's arithmetic depends on its group's decomposition, so its "
                    "output and partial sums would not be this run's bits; resume with group "
                    "size " +
                    g + " (PETSc: -rewind_ensemble_group_size " + g + ") on a multiple of " + g +
                    " ranks)");
  }
  if (diffs.empty()) return;
  std::string all;
  for (const std::string& d : diffs) all += (all.empty() ? "" : "; ") + d;
  throw Error(ErrorCode::InvalidArgument,
              "ensemble: the manifest '" + path(head_name(config_.label)) +
                  "' is of another problem: " + all +
                  "; resume it with the killed run's program and settings, give this run "
                  "another label or directory, or remove its files (" +
                  files_of(config_.label) + ") to start again");
}

// Every rank: the killed run's outputs and sums, taken over by this run's groups (old group q
// goes to group q mod G).
void DurableEnsemble::take_over(const std::vector<std::string>& texts) {
  const DurableHead saved = parse_head(texts[0], path(head_name(config_.label)));
  check_problem(saved);
  const int G = groups_.groups(), mine = groups_.group_index();
  for (int q = 0; q < saved.groups; ++q) {
    const std::string& text = texts[static_cast<std::size_t>(q) + 1];
    if (text.empty()) continue;
    const std::string name = group_name(config_.label, saved.generation, q);
    const DurableGroup g = parse_group(text, path(name), saved.tasks, saved.group_size);
    if (g.generation != saved.generation || g.group != q) {
      throw Error(ErrorCode::Corrupt, "ensemble resume: " + path(name) +
                                          " names another generation or group than its file "
                                          "name; the manifest cannot be used (remove " +
                                          files_of(config_.label) + " to start again)");
    }
    for (const auto& [k, o] : g.outputs) {
      if (!resumed_.outputs.emplace(k, o).second) {
        throw Error(ErrorCode::Corrupt, "ensemble resume: task " + std::to_string(k) +
                                            " is listed by two groups; the manifest cannot be "
                                            "used (remove " +
                                            files_of(config_.label) + " to start again)");
      }
      resumed_.owner[k] = q % G;
    }
    resumed_.summed.insert(g.summed.begin(), g.summed.end());
    for (const auto& [k, sums] : g.tapes) {
      if (std::find(g.summed.begin(), g.summed.end(), k) != g.summed.end()) continue;
      resumed_.with_tape.insert(k);
      if (q % G != mine) continue;
      const auto r = static_cast<std::size_t>(groups_.group_rank());
      const std::string file =
          path(tape_name(config_.label, saved.generation, k, static_cast<int>(r)));
      const std::optional<std::string> bytes = engine::read_durable(file);
      if (!bytes || engine::durable_checksum(*bytes) != sums[r]) {
        // That tape is recorded again (its output is listed): no reason to give up the rest.
        std::fprintf(stderr,
                     "rewind ensemble: the tape description %s %s: task %lld's tape is recorded "
                     "again\n",
                     file.c_str(), bytes ? "fails its checksum" : "is missing",
                     static_cast<long long>(k));
        continue;
      }
      resumed_.tapes[k] = *bytes;
    }
    if (q % G != mine || g.sums.empty()) continue;
    if (static_cast<int>(g.sums.size()) != groups_.group_size()) {
      throw Error(ErrorCode::Corrupt, "ensemble resume: " + path(name) + " lists " +
                                          std::to_string(g.sums.size()) +
                                          " partial sums for a group of " +
                                          std::to_string(groups_.group_size()) + " ranks");
    }
    const DurableSum& s = g.sums[static_cast<std::size_t>(groups_.group_rank())];
    const std::string file = path(s.file);
    const std::optional<std::string> bytes = engine::read_durable(file);
    if (!bytes) {
      throw Error(ErrorCode::Corrupt, "ensemble resume: the partial sum " + file +
                                          " its group's file lists is missing (remove " +
                                          files_of(config_.label) + " to start again)");
    }
    ReproducibleSum part = parse_sum(*bytes, s, file);
    if (!resumed_.partial) {
      resumed_.partial = std::move(part);
    } else {
      resumed_.partial->merge(part);
    }
  }
  resumed_.generation = saved.generation;
  head_.generation = saved.generation + 1;
  head_.phase = saved.phase;
  head_.cotangents = saved.cotangents;
}

const Resumed& DurableEnsemble::begin_forward(std::int64_t tasks) {
  resumed_ = {};
  head_ = {config_.identity,
           config_.label,
           tasks,
           groups_.group_size(),
           groups_.groups(),
           1,
           "forward",
           0};
  const MPI_Comm world = groups_.world();
  std::vector<std::string> texts;
  on(world, groups_.world_rank() == 0,
     [&] { texts = read_manifest(path(head_name(config_.label))); });
  texts = broadcast(world, std::move(texts));
  if (!texts.empty()) on(world, true, [&] { take_over(texts); });
  // A tape is taken over only where every rank of its group has its description (every rank
  // learns which, for the report).
  std::vector<std::int64_t> lost;
  for (std::int64_t k : resumed_.with_tape) {
    int mine = resumed_.owner.at(k) != groups_.group_index() || resumed_.tapes.contains(k) ? 1 : 0;
    int all = 0;
    mpi_check(MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, world), "MPI_Allreduce (tapes)");
    if (all == 0) lost.push_back(k);
  }
  for (std::int64_t k : lost) {
    resumed_.tapes.erase(k);
    resumed_.with_tape.erase(k);
  }

  group_ = {};
  group_.generation = head_.generation;
  group_.group = groups_.group_index();
  for (const auto& [k, o] : resumed_.outputs) {
    if (resumed_.owner.at(k) == group_.group) group_.outputs[k] = o;
  }
  for (std::int64_t k : resumed_.summed) {
    if (resumed_.owner.at(k) == group_.group) group_.summed.push_back(k);
  }
  last_sum_.clear();
  live_ = true;
  if (resumed_.generation > 0) {
    // This generation's files list what the killed run's did, then the head moves to them.
    if (resumed_.partial) summed_files(*resumed_.partial);
    on(world, groups_.leader(), [&] { write_group(); });
  }
  listed_tapes_.clear();
  on(world, groups_.world_rank() == 0, [&] { write_head(); });
  return resumed_;
}

void DurableEnsemble::taken_over() {
  if (resumed_.generation == 0) return;
  on(groups_.world(), groups_.world_rank() == 0, [&] {
    remove_generations(head_.generation);
    // The killed run's group stores left partial files; its tapes are taken over or dropped.
    storage::remove_files_of_dead_runs(config_.directory);
  });
  resumed_.generation = 0;
  resumed_.tapes.clear();
}

std::string DurableEnsemble::tape_link() const {
  return path(tapes_file_name(config_.label, head_.generation, groups_.group_index()));
}

void DurableEnsemble::forward_done(std::int64_t task, std::int64_t steps, std::span<const double> y,
                                   const std::string& tape) {
  std::uint64_t mine[2] = {tape.empty() ? 0u : 1u, 0};
  const std::string file =
      path(tape_name(config_.label, head_.generation, task, groups_.group_rank()));
  on(groups_.group(), !tape.empty(), [&] {
    mine[1] = engine::durable_checksum(tape);
    engine::write_durable(file, tape);
  });
  const int g = groups_.group_size();
  std::vector<std::uint64_t> all(2 * static_cast<std::size_t>(g));
  mpi_check(MPI_Gather(mine, 2, MPI_UINT64_T, all.data(), 2, MPI_UINT64_T, 0, groups_.group()),
            "MPI_Gather (tapes)");
  if (!tape.empty()) listed_tapes_.insert(task);
  on(groups_.group(), groups_.leader(), [&] {
    group_.outputs[task] = {steps, std::vector<double>(y.begin(), y.end())};
    std::vector<std::uint64_t> sums;
    bool every = true;
    for (int r = 0; r < g; ++r) {
      every = every && all[2 * static_cast<std::size_t>(r)] == 1;
      sums.push_back(all[2 * static_cast<std::size_t>(r) + 1]);
    }
    if (every) {
      group_.tapes[task] = std::move(sums);
    } else {
      group_.tapes.erase(task);
    }
    write_group();
  });
}

void DurableEnsemble::unlist_tape(std::int64_t task) {
  if (listed_tapes_.erase(task) == 0) return;
  on(groups_.group(), groups_.leader(), [&] {
    group_.tapes.erase(task);
    write_group();
  });
  ::unlink(path(tape_name(config_.label, head_.generation, task, groups_.group_rank())).c_str());
}

void DurableEnsemble::begin_backward(std::span<const double> ybar, int root) {
  std::uint64_t h = groups_.world_rank() == root ? cotangents_hash(ybar.data(), ybar.size()) : 0;
  mpi_check(MPI_Bcast(&h, 1, MPI_UINT64_T, root, groups_.world()), "MPI_Bcast (cotangents)");
  if (head_.phase == "backward" && h != head_.cotangents) {
    throw Error(ErrorCode::InvalidArgument,
                "ensemble: this backward pass resumes a killed run's, but its cotangents differ "
                "from the ones that run was given: the partial sums it left were reversed with "
                "those, and a gradient mixing the two would be wrong; give backward() the same "
                "ybar (the same program, outputs and objective), or remove the ensemble's files "
                "(" +
                    files_of(config_.label) + ") to start again");
  }
  head_.phase = "backward";
  head_.cotangents = h;
  on(groups_.world(), groups_.world_rank() == 0, [&] { write_head(); });
}

void DurableEnsemble::summed(std::int64_t task, const ReproducibleSum& sum) {
  group_.summed.push_back(task);
  const std::string previous = last_sum_;
  summed_files(sum);
  on(groups_.group(), groups_.leader(), [&] { write_group(); });
  // Listed no more: the partial sum it replaces (a kill before this leaves a file that
  // remove_generation() finds).
  if (!previous.empty()) ::unlink(previous.c_str());
}

// Every rank of the group writes its partial sum (after the group's summed tasks so far) to a
// file of its own; the leader learns their checksums for the group's file. The file it replaces
// goes once the new one is listed (by the caller). Collective on the group.
void DurableEnsemble::summed_files(const ReproducibleSum& sum) {
  const std::string name =
      sum_name(config_.label, group_.generation, group_.group, groups_.group_rank(),
               static_cast<std::int64_t>(group_.summed.size()));
  std::uint64_t mine[3] = {sum.length(), sum.terms(), 0};
  on(groups_.group(), true, [&] {
    const std::string bytes = sum_bytes(sum);
    mine[2] = engine::durable_checksum(bytes);
    engine::write_durable(path(name), bytes);
  });
  std::vector<std::uint64_t> all(3 * static_cast<std::size_t>(groups_.group_size()));
  mpi_check(MPI_Gather(mine, 3, MPI_UINT64_T, all.data(), 3, MPI_UINT64_T, 0, groups_.group()),
            "MPI_Gather (partial sums)");
  group_.sums.clear();
  for (int r = 0; r < groups_.group_size(); ++r) {
    const std::uint64_t* w = all.data() + 3 * r;
    group_.sums.push_back({r,
                           sum_name(config_.label, group_.generation, group_.group, r,
                                    static_cast<std::int64_t>(group_.summed.size())),
                           w[0], w[1], w[2]});
  }
  last_sum_ = path(name);
}

void DurableEnsemble::write_group() {
  engine::write_durable(path(group_name(config_.label, group_.generation, group_.group)),
                        to_text(group_));
}

void DurableEnsemble::write_head() {
  engine::write_durable(path(head_name(config_.label)), to_text(head_));
}

// Removes, in the directory, every file of the generations below `below` (their group files,
// partial sums, tape descriptions and tape files, listed or left by a kill).
void DurableEnsemble::remove_generations(std::int64_t below) {
  const std::string prefix = "rewind-ensemble-" + engine::file_label(config_.label) + ".";
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(config_.directory, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    const std::size_t digits = name.find_first_not_of("0123456789", prefix.size());
    if (digits == prefix.size() || digits == std::string::npos || name[digits] != '.') continue;
    const std::string rest = name.substr(digits + 1);
    const bool ours = rest.rfind("group-", 0) == 0 || rest.rfind("sum-", 0) == 0 ||
                      rest.rfind("tape-", 0) == 0 || rest.rfind("tapes-", 0) == 0;
    if (ours && std::stoll(name.substr(prefix.size(), digits - prefix.size())) < below) {
      engine::remove_durable(entry.path().string());
    }
  }
}

void DurableEnsemble::finish() {
  if (!live_) return;
  live_ = false;
  on(groups_.world(), groups_.world_rank() == 0, [&] {
    head_.phase = "done";
    write_head();
    remove_generations(head_.generation + 1);
    engine::remove_durable(path(head_name(config_.label)));
  });
}

void DurableEnsemble::forget() noexcept {
  live_ = false;
  if (groups_.world_rank() != 0) return;
  try {
    engine::remove_durable(path(head_name(config_.label)));
    remove_generations(std::numeric_limits<std::int64_t>::max());
  } catch (...) {
    // What cannot be removed stays; without its head it is never taken for a manifest.
  }
}

}  // namespace rwd::ensemble::detail
