#include "rewind/engine/durable_log.hpp"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <set>

#include "resume_files.hpp"
#include "rewind/comm/agree.hpp"
#include "rewind/timing.hpp"

namespace rwd::engine {

using namespace detail;  // resume_files.hpp

namespace {

using comm::agree;
using comm::capture;
using storage::Key;

// Every rank's block of each field, agreed to have the same names and sizes on every rank.
std::vector<ManifestField> shapes(const std::vector<Field>& fields, MPI_Comm comm, int size,
                                  const std::string& what) {
  std::uint64_t names = fields.size();
  for (const Field& f : fields) {
    names = names * 1099511628211ull ^ std::hash<std::string_view>{}(f.name);
    names = names * 1099511628211ull ^ static_cast<std::uint64_t>(f.global_size);
  }
  agree(comm, std::nullopt, names | 1,
        "resume: " + what + " has different field names or sizes on different ranks");
  std::vector<std::int64_t> mine, all(2 * fields.size() * static_cast<std::size_t>(size));
  for (const Field& f : fields) {
    mine.push_back(f.offset);
    mine.push_back(static_cast<std::int64_t>(f.data.size()));
  }
  comm::mpi_check(MPI_Allgather(mine.data(), static_cast<int>(mine.size()), MPI_INT64_T, all.data(),
                                static_cast<int>(mine.size()), MPI_INT64_T, comm),
                  "MPI_Allgather (resume: field layout)");
  std::vector<ManifestField> out;
  for (std::size_t f = 0; f < fields.size(); ++f) {
    ManifestField m{std::string(fields[f].name), fields[f].global_size, {}, {}};
    for (int r = 0; r < size; ++r) {
      const std::size_t at = static_cast<std::size_t>(r) * mine.size() + 2 * f;
      m.offsets.push_back(all[at]);
      m.counts.push_back(all[at + 1]);
    }
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace

struct DurableLog::Impl {
  Impl(std::shared_ptr<Stores> stores, DurableSettings settings, const std::vector<Field>& state,
       const std::vector<Field>& adjoint)
      : stores_(std::move(stores)), settings_(std::move(settings)), comm_(stores_->comm()) {
    rank_ = comm::comm_rank(comm_);
    size_ = comm::comm_size(comm_);
    dir_ = settings_.directory;
    path_ = manifest_path(dir_, settings_.label);
    now_.identity = settings_.identity;
    now_.label = settings_.label;
    now_.ranks = size_;
    now_.steps = settings_.steps;
    now_.interval = settings_.interval;
    now_.state = shapes(state, comm_, size_, "Stepper::state()");
    now_.adjoint = shapes(adjoint, comm_, size_, "Stepper::adjoint_state()");
    state_id_ = stores_->next_recording_id();
    adjoint_id_ = stores_->next_recording_id();
  }

  ~Impl() {
    if (lock_fd_ >= 0) ::close(lock_fd_);
  }

  // Reads the manifest there may be, refuses it or takes it in, and sets the generation.
  void open() {
    // One live run a label and directory: a second job with the same settings is refused rather
    // than resuming (and then deleting) what the first is writing.
    agree(comm_, rank_ != 0 ? std::nullopt : capture([&] {
            lock_fd_ = lock_run(path_ + ".lock", settings_.elsewhere);
          }));
    std::string text;
    int exists = 0;
    agree(comm_, rank_ != 0 ? std::nullopt : capture([&] {
            if (std::optional<std::string> t = read_text(path_)) {
              text = std::move(*t);
              exists = 1;
            }
          }));
    comm::mpi_check(MPI_Bcast(&exists, 1, MPI_INT, 0, comm_), "MPI_Bcast (resume manifest)");
    if (!exists) {
      if (settings_.resume && rank_ == 0) {
        std::fprintf(stderr,
                     "rewind: no resume manifest '%s': nothing to resume, starting at x_0\n",
                     path_.c_str());
      }
      m_ = now_;
      m_.generation = 1;
      // Links no manifest lists are a killed run's before its first manifest: rewind's own.
      agree(comm_, rank_ != 0 ? std::nullopt
                              : capture([&] { remove_links(data_links(dir_, settings_.label)); }));
      return;
    }
    if (!settings_.resume) {
      throw Error(
          ErrorCode::InvalidArgument,
          "resume: '" + path_ +
              "' describes a run that was killed or failed, resumable from its "
              "checkpoints; this run is not told to resume it (ResumeConfig::resume; in PETSc "
              "-ts_trajectory_rewind_resume) and "
              "will not overwrite it: resume it, give this run " +
              settings_.elsewhere + ", or " + removal_hint());
    }
    long long length = static_cast<long long>(text.size());
    comm::mpi_check(MPI_Bcast(&length, 1, MPI_LONG_LONG, 0, comm_), "MPI_Bcast (resume manifest)");
    text.resize(static_cast<std::size_t>(length));
    comm::mpi_check(MPI_Bcast(text.data(), static_cast<int>(length), MPI_CHAR, 0, comm_),
                    "MPI_Bcast (resume manifest)");
    killed_text_ = text;
    Manifest saved;
    // Every rank reads the same text; whatever it throws (out of memory too) is agreed.
    agree(comm_, capture([&] {
            try {
              saved = parse_manifest(text, path_);
            } catch (const Error& e) {
              throw Error(ErrorCode::Corrupt,
                          std::string(e.what()) + "; it is not used: " + removal_hint());
            }
          }));
    const std::vector<std::string> diff = differences(saved, now_);
    if (!diff.empty()) {
      std::string what;
      for (const std::string& d : diff) what += (what.empty() ? "" : "; ") + d;
      throw another_problem(what);
    }
    // Every durable checkpoint it lists is read and checked before any is used.
    for (const ManifestEntry& e : saved.states) check_entry(e, saved.state, "state");
    if (saved.final_state) check_entry(*saved.final_state, saved.state, "final state");
    if (saved.reverse) check_entry(*saved.reverse, saved.adjoint, "adjoint state");
    m_ = saved;
    m_.generation = saved.generation + 1;
    agree(comm_, rank_ != 0 ? std::nullopt : capture([&] {
            std::set<std::string> listed;
            for (const ManifestEntry& e : m_.states) listed.insert(e.file);
            if (m_.final_state) listed.insert(m_.final_state->file);
            if (m_.reverse) listed.insert(m_.reverse->file);
            std::vector<std::string> unlisted;
            for (const std::string& name : data_links(dir_, settings_.label)) {
              if (!listed.count(name)) unlisted.push_back(name);
            }
            remove_links(unlisted);
          }));
  }

  // Removes links, and first any partial name of the same files (left by a run on another host,
  // whose cleanup cannot tell whether that process lives), so that no file outlives its last
  // name rewind knows. Rank 0.
  void remove_links(const std::vector<std::string>& links) {
    remove_partial_names_of(dir_, settings_.label, links);
    for (const std::string& name : links) {
      remove_file((std::filesystem::path(dir_) / name).string());
    }
  }

  // The refusal of a manifest of another problem, `what` naming the differences.
  Error another_problem(const std::string& what) const {
    return Error(ErrorCode::InvalidArgument,
                 "resume: '" + path_ +
                     "' was written for another problem, so it is not resumed: " + what +
                     ". Resume it with the killed run's program and settings, give this run " +
                     settings_.elsewhere + ", or " + removal_hint());
  }

  // "remove '<manifest>' and the rewind-<label>.resume-*.h5 files next to it to start again".
  std::string removal_hint() const {
    return "remove '" + path_ + "', '" + path_ + ".lock' and the " +
           data_links_pattern(settings_.label) + " files next to it to start again";
  }

  void check_entry(const ManifestEntry& e, const std::vector<ManifestField>& fields,
                   const char* what) {
    std::vector<std::vector<double>> scratch;
    std::vector<Field> spans;
    agree(comm_, capture([&] {
            for (std::size_t f = 0; f < fields.size(); ++f) {
              scratch.emplace_back(
                  static_cast<std::size_t>(fields[f].counts[static_cast<std::size_t>(rank_)]));
            }
          }));
    for (std::size_t f = 0; f < fields.size(); ++f) {
      spans.push_back({fields[f].name, scratch[f], 0, fields[f].global_size});
    }
    load(e, spans,
         std::string("; the ") + what + " at step " + std::to_string(e.step) + " (rank " +
             std::to_string(rank_) +
             "'s block) is damaged, so the manifest is refused and nothing of it is used: " +
             removal_hint());
  }

  // Reads a durable entry into `into` (this rank's blocks), on every rank or none.
  void load(const ManifestEntry& e, const std::vector<Field>& into, const std::string& note = {}) {
    const auto t0 = SteadyClock::now();
    ++io_.reads;
    for (const Field& f : into) io_.bytes_read += static_cast<std::int64_t>(f.data.size_bytes());
    const std::string file = (std::filesystem::path(dir_) / e.file).string();
    const auto& blocks = e.blocks[static_cast<std::size_t>(rank_)];
    std::optional<Error> failed = capture([&] { storage::read_sealed_blocks(file, blocks, into); });
    if (failed && !note.empty()) failed.emplace(failed->code(), failed->what() + note);
    agree(comm_, failed);
    io_.seconds += seconds_since(t0);
  }

  // The first sweep's state at `step` as the manifest lists it (durable, or reached and freed),
  // or null.
  const ManifestEntry* first_sweep_at(Step step) const {
    for (const auto* list : {&m_.states, &m_.reached}) {
      for (const ManifestEntry& e : *list) {
        if (e.step == step) return &e;
      }
    }
    if (m_.final_state && m_.final_state->step == step) return &*m_.final_state;
    return nullptr;
  }

  // The field of `fields` (a state reached again at `step`) whose checksum is not the durable
  // state's there, on this rank; empty if they agree (or nothing is listed at `step`).
  std::string differing_field(Step step, const std::vector<Field>& fields) const {
    const ManifestEntry* e = first_sweep_at(step);
    if (!e) return {};
    const auto& blocks = e->blocks[static_cast<std::size_t>(rank_)];
    for (std::size_t f = 0; f < fields.size() && f < blocks.size(); ++f) {
      if (storage::block_checksum(fields[f].data) != blocks[f].checksum) {
        return std::string(fields[f].name);
      }
    }
    return {};
  }

  // An interval taken again in the reverse sweep must reach the state the first sweep reached
  // there: a stepper that is not deterministic is stopped on every rank, naming the step and the
  // field, rather than giving a wrong gradient. What this run made durable may be as wrong as
  // the state it could not reach again, so it goes (a resumed run's killed run stays).
  void check_replay(Step step, const std::vector<Field>& fields) {
    if (!settings_.verify) return;
    std::optional<Error> differs;
    if (const std::string f = differing_field(step, fields); !f.empty()) {
      const std::string what = "resume: the state recomputed at step " + std::to_string(step) +
                               " differs from the first sweep's in field '" + f + "' on rank " +
                               std::to_string(rank_) + ": ";
      differs.emplace(
          ErrorCode::Corrupt,
          what + (saved_any_ && !killed_text_.empty()
                      ? "this run's model is not the killed run's (a change the interval it "
                        "checked first did not show), or the stepper does not take the same "
                        "steps again from the same state, so what this run made durable is "
                        "removed and the killed run's manifest is put back as it was: a run of "
                        "the killed run's program resumes it, or " +
                            removal_hint()
                  : saved_any_
                      ? "the stepper does not take the same steps again from the same state (or "
                        "its model changed during the run), so what this run made durable "
                        "cannot be trusted: the manifest and the durable checkpoints are "
                        "removed, and a run started again begins at step 0"
                      : "this program does not take the killed run's steps again (another "
                        "model, other data, or a stepper that is not deterministic), so it is "
                        "not resumed, and the killed run's files are left as they are. Run the "
                        "killed run's program with its options and data again, or " +
                            removal_hint()));
    }
    std::optional<Error> agreed;
    try {
      agree(comm_, differs);
    } catch (const Error& e) {
      agreed = e;
    }
    if (!agreed) return;
    if (saved_any_ && !killed_text_.empty()) {
      // The killed run's files are as it left them (a run writes only to its own file): its
      // manifest goes back, and this run's link goes.
      agree(comm_, rank_ != 0 ? std::nullopt : capture([&] {
              write_atomically(path_, killed_text_);
              if (linked_) remove_links({link_});
            }));
    } else if (saved_any_) {
      finish();
    }
    throw *agreed;
  }

  // A resumed run has taken the interval before its durable state at `step` again: it must reach
  // that state, else this program is not the killed run's (another model, other data). Refused
  // before this run has made anything durable, and the killed run's files are left as they are.
  void check_resume_point(Step from, Step step, const std::vector<Field>& fields) {
    if (!settings_.verify) return;
    std::optional<Error> differs;
    if (const std::string f = differing_field(step, fields); !f.empty()) {
      differs.emplace(
          ErrorCode::InvalidArgument,
          "resume: this run took the killed run's steps " + std::to_string(from) + " to " +
              std::to_string(step) + " again from its durable state and reached another state " +
              "(field '" + f + "' on rank " + std::to_string(rank_) +
              "): its program, model or data are not the killed run's, so it is not resumed and "
              "the killed run's files are left as they are. Run the killed run's program with "
              "its options and data again, or " +
              removal_hint());
    }
    agree(comm_, differs);
  }

  // The adjoint state's layout, known after open() to a host that sets its adjoint buffers late.
  void set_adjoint_layout(const std::vector<Field>& adjoint) {
    now_.adjoint = shapes(adjoint, comm_, size_, "the adjoint state");
    if (!m_.adjoint.empty() && m_.adjoint != now_.adjoint) {
      Manifest a = m_, b = m_;
      b.adjoint = now_.adjoint;
      std::string what;
      for (const std::string& d : differences(a, b)) what += (what.empty() ? "" : "; ") + d;
      throw another_problem(what);
    }
    m_.adjoint = now_.adjoint;
  }

  const ManifestEntry& state_at(Step step) const {
    for (const ManifestEntry& e : m_.states) {
      if (e.step == step) return e;
    }
    throw Error(ErrorCode::Internal, "resume: no durable state at step " + std::to_string(step));
  }

  storage::Store& disk() {
    storage::Store& store = stores_->disk();
    if (!store.durable()) {
      throw Error(
          ErrorCode::Internal,
          "resume: the disk store keeps no durable checkpoints (store '" + store.name() + "')");
    }
    if (!linked_) {
      // The store's file is removed when it closes or fails; this second name keeps it for a
      // resumed run after a kill, until this run ends cleanly.
      link_ = data_link_name(settings_.label, m_.generation);
      agree(comm_, rank_ != 0 ? std::nullopt : capture([&] {
              hard_link(store.path(), (std::filesystem::path(dir_) / link_).string());
            }));
      linked_ = true;
    }
    return store;
  }

  // Makes the state (or the adjoint state) the stepper holds at `step` durable, lists it in the
  // manifest, and frees what the manifest no longer lists.
  void save(bool adjoint, Step step, const std::vector<Field>& fields, bool last = false) {
    saved_any_ = true;
    const auto t0 = SteadyClock::now();
    storage::Store& store = disk();
    const Key key{step, Kind::Restart, adjoint ? adjoint_id_ : state_id_};
    std::vector<storage::FieldView> views;
    for (const Field& f : fields)
      views.push_back({f.name, f.data, f.offset, f.global_size, f.grid});
    store.put(key, storage::CheckpointView{views, {}});
    store.flush();
    ManifestEntry e;
    e.step = step;
    e.file = link_;
    e.blocks = gather(store.durable()->sealed_blocks(key), adjoint ? now_.adjoint : now_.state);
    std::vector<Key> freed;
    if (adjoint) {
      if (m_.reverse && m_.reverse->file == link_) {
        freed.push_back({m_.reverse->step, Kind::Restart, adjoint_id_});
      }
      m_.reverse = std::move(e);
      // A resumed reverse sweep needs the states below the adjoint's step only; of those above
      // it keeps the checksums, to check the recomputations that reach them.
      std::vector<ManifestEntry> passed;
      while (!m_.states.empty() && m_.states.back().step >= step) {
        if (m_.states.back().file == link_) {
          freed.push_back({m_.states.back().step, Kind::Restart, state_id_});
        }
        passed.insert(passed.begin(), std::move(m_.states.back()));
        passed.front().file.clear();
        m_.states.pop_back();
      }
      m_.reached.insert(m_.reached.begin(), passed.begin(), passed.end());
    } else if (last) {
      if (m_.final_state && m_.final_state->file == link_) {
        freed.push_back({m_.final_state->step, Kind::Restart, state_id_});
      }
      m_.final_state = std::move(e);
    } else {
      m_.states.push_back(std::move(e));
    }
    publish();
    // Only now that no manifest lists them may their room in the file be reused.
    for (const Key& k : freed) store.erase(k);
    // The disk store counts what it holds, and holds only the durable states and adjoint states
    // (a resumable run's intervals are planned in RAM).
    const storage::StoreStats held = stores_->disk().stats();
    io_.writes = held.writes;
    io_.bytes_written = held.bytes_written;
    io_.live = held.live;
    io_.peak = held.peak_live;
    io_.live_bytes = held.live_bytes;
    io_.peak_bytes = held.peak_bytes;
    io_.seconds += seconds_since(t0);
  }

  std::vector<std::vector<storage::SealedBlock>> gather(
      const std::vector<storage::SealedBlock>& mine, const std::vector<ManifestField>& fields) {
    std::vector<std::int64_t> out;
    for (const storage::SealedBlock& b : mine) {
      out.push_back(b.at);
      out.push_back(b.count);
      out.push_back(static_cast<std::int64_t>(b.checksum));
      out.push_back(b.stored);
    }
    std::vector<std::int64_t> all(out.size() * static_cast<std::size_t>(size_));
    comm::mpi_check(MPI_Allgather(out.data(), static_cast<int>(out.size()), MPI_INT64_T, all.data(),
                                  static_cast<int>(out.size()), MPI_INT64_T, comm_),
                    "MPI_Allgather (resume: checkpoint blocks)");
    std::vector<std::vector<storage::SealedBlock>> blocks(static_cast<std::size_t>(size_));
    for (std::size_t r = 0; r < blocks.size(); ++r) {
      for (std::size_t f = 0; f < fields.size(); ++f) {
        const std::size_t at = r * out.size() + 4 * f;
        blocks[r].push_back({fields[f].name, all[at], all[at + 1],
                             static_cast<std::uint64_t>(all[at + 2]), all[at + 3]});
      }
    }
    return blocks;
  }

  void publish() {
    agree(comm_,
          rank_ != 0 ? std::nullopt : capture([&] { write_atomically(path_, to_text(m_)); }));
  }

  // The run ended: its manifest first (so no later run resumes it), then the links.
  void finish() {
    agree(comm_, rank_ != 0 ? std::nullopt : capture([&] {
            remove_file(path_);
            remove_file(path_ + ".lock");
            remove_links(data_links(dir_, settings_.label));
          }));
  }

  std::shared_ptr<Stores> stores_;
  DurableSettings settings_;
  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;
  std::string dir_, path_, link_;
  bool linked_ = false;
  Manifest now_, m_;
  DurableTraffic io_;
  std::int64_t state_id_ = 0, adjoint_id_ = 0;  // their Key::recording
  int lock_fd_ = -1;                            // rank 0: the run's lock, held while it is live
  bool saved_any_ = false;                      // this run made a state or an adjoint state durable
  std::string killed_text_;  // the manifest of the killed run this run resumes, as it was
};

std::string resume_manifest_path(const std::string& directory, const std::string& label) {
  return manifest_path(directory, label);
}

bool resume_run_live(const std::string& directory, const std::string& label) {
  return is_locked(manifest_path(directory, label) + ".lock");
}

DurableLog::DurableLog(std::shared_ptr<Stores> stores, DurableSettings settings,
                       const std::vector<Field>& state, const std::vector<Field>& adjoint)
    : impl_(std::make_unique<Impl>(std::move(stores), std::move(settings), state, adjoint)) {}
DurableLog::~DurableLog() = default;
void DurableLog::open() {
  impl_->open();
}
const Manifest& DurableLog::manifest() const {
  return impl_->m_;
}
void DurableLog::save(bool adjoint, Step step, const std::vector<Field>& fields) {
  impl_->save(adjoint, step, fields);
}
void DurableLog::set_adjoint_layout(const std::vector<Field>& adjoint) {
  impl_->set_adjoint_layout(adjoint);
}
void DurableLog::save_final(Step step, const std::vector<Field>& fields) {
  impl_->save(false, step, fields, true);
}
void DurableLog::load(const ManifestEntry& entry, const std::vector<Field>& into) {
  impl_->load(entry, into);
}
const ManifestEntry& DurableLog::state_at(Step step) const {
  return impl_->state_at(step);
}
void DurableLog::check_replay(Step step, const std::vector<Field>& fields) {
  impl_->check_replay(step, fields);
}

void DurableLog::check_resume_point(Step from, Step step, const std::vector<Field>& fields) {
  impl_->check_resume_point(from, step, fields);
}
void DurableLog::finish() {
  impl_->finish();
}
const DurableTraffic& DurableLog::traffic() const {
  return impl_->io_;
}

}  // namespace rwd::engine
