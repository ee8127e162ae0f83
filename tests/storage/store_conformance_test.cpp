// One conformance test body, run against every store: "ram", "hdf5" (write-behind and prefetch
// on the I/O thread) and "hdf5_sync" (StoreConfig::async_io off), each HDF5 one also with zstd
// (StoreConfig::codec: the test's awkward values mostly do not compress and go as they are).
// Registered at 1, 2 and 4 ranks; the fields are spread unevenly (rank r owns 3 + 5r values, rank 1
// none; a field only rank 0 holds; an empty field).
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <regex>

#include "hdf5_store.hpp"
#include "rewind/storage/sealed_blocks.hpp"
#include "store_test_util.hpp"

namespace rwd::storage::test {
namespace {

Key restart(std::int64_t step) {
  return {step, Kind::Restart};
}
Key adjoint(std::int64_t step) {
  return {step, Kind::Pullback};
}

std::string filename(const std::string& path) {
  return std::filesystem::path(path).filename().string();
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

class StoreConformance : public ::testing::TestWithParam<std::string> {
 protected:
  bool synchronous() const { return GetParam().rfind("hdf5_sync", 0) == 0; }
  bool compressed() const { return GetParam().find("_zstd") != std::string::npos; }
  std::string store_name() const { return GetParam().rfind("hdf5", 0) == 0 ? "hdf5" : GetParam(); }
  bool disk() const { return store_name() == "hdf5"; }

  StoreConfig config(const std::string& directory = {}) const {
    StoreConfig c;
    c.comm = MPI_COMM_WORLD;
    c.directory = directory.empty() ? scratch_.path() : directory;
    c.label = "conf";
    c.capacity = 2;
    c.slot_doubles = 64;
    c.async_io = !synchronous();
    c.max_staged_bytes = 2048;  // smaller than some checkpoints: put() must wait for room
    c.inline_io_bytes = 0;      // these checkpoints are small: send them to the I/O thread anyway
    if (compressed()) c.codec = {"zstd", 0.0, 0};
    return c;
  }

  std::unique_ptr<Store> make(const StoreConfig& c) const { return make_store(store_name(), c); }

  static bool collective(const Store& s) { return s.collective_comm() != MPI_COMM_NULL; }

  // Stores that read ahead do so here, so the checks below also cover reads from a staged copy.
  static void maybe_prefetch(Store& s, const Key& key) { s.prefetch(key); }

  static std::int64_t file_offset(Store& s, const Key& key, std::string_view field) {
    return dynamic_cast<Hdf5Store&>(s).field_file_offset(key, field);
  }

  ScratchDir scratch_;
  const int rank_ = world_rank();
  const int size_ = world_size();
  const int last_ = world_size() - 1;
};

TEST_P(StoreConformance, RoundTripIsBitwise) {
  auto store = make(config());
  EXPECT_EQ(store->name(), store_name());
  EXPECT_FALSE(store->io_mode().empty());
  TestCheckpoint a(1), b(2), c(3);
  store->put(restart(0), a.view());
  store->put(restart(5), b.view());
  store->put(adjoint(5), c.view());
  EXPECT_TRUE(store->contains(restart(5)));
  EXPECT_TRUE(store->contains(adjoint(5)));
  EXPECT_FALSE(store->contains(restart(1)));
  EXPECT_FALSE(store->contains(adjoint(0)));
  maybe_prefetch(*store, restart(5));
  expect_bitwise(*store, adjoint(5), c);
  expect_bitwise(*store, restart(5), b);
  expect_bitwise(*store, restart(0), a);
  expect_bitwise(*store, restart(0), a);  // a checkpoint can be read more than once

  const StoreStats st = store->stats();
  const std::int64_t doubles = uneven().count(rank_) + on_rank_zero(17).count(rank_);
  EXPECT_EQ(st.writes, 3);
  EXPECT_EQ(st.reads, 4);
  EXPECT_EQ(st.live, 3);
  EXPECT_EQ(st.peak_live, 3);
  EXPECT_EQ(st.bytes_written, 3 * doubles * 8);
  EXPECT_EQ(st.bytes_read, 4 * doubles * 8);
}

TEST_P(StoreConformance, FreedCheckpointsAreReused) {
  auto store = make(config());
  std::vector<TestCheckpoint> cps;
  for (int i = 0; i < 10; ++i) cps.emplace_back(10 + i);
  for (int i = 0; i < 10; ++i) {
    store->put(restart(i), cps[i].view());
    if (i >= 2) {
      store->erase(restart(i - 2));
      EXPECT_FALSE(store->contains(restart(i - 2)));
    }
  }
  EXPECT_EQ(store->stats().live, 2);
  EXPECT_EQ(store->stats().peak_live, 3);
  expect_bitwise(*store, restart(8), cps[8]);
  expect_bitwise(*store, restart(9), cps[9]);

  // The same key again, with other values.
  store->erase(restart(9));
  TestCheckpoint other(99);
  store->put(restart(9), other.view());
  expect_bitwise(*store, restart(9), other);

  // A larger checkpoint with another layout, into freed space.
  store->erase(restart(8));
  TestCheckpoint bigger(50);
  bigger.add("x", even(40), 51);
  store->put(adjoint(3), bigger.view());
  expect_bitwise(*store, adjoint(3), bigger);
  expect_bitwise(*store, restart(9), other);
}

TEST_P(StoreConformance, MissingCheckpointIsAnError) {
  auto store = make(config());
  TestCheckpoint a(1);
  Readback back(a);
  auto span = back.span();
  expect_error([&] { store->get(restart(99), span); }, ErrorCode::InvalidArgument,
               {"get(restart 99)", "not held"});
  expect_error([&] { store->erase(restart(99)); }, ErrorCode::InvalidArgument,
               {"erase(restart 99)", "not held"});
  store->put(restart(1), a.view());
  store->erase(restart(1));
  expect_error([&] { store->get(restart(1), span); }, ErrorCode::InvalidArgument,
               {"restart 1", "not held"});
  expect_error([&] { store->erase(restart(1)); }, ErrorCode::InvalidArgument, {"not held"});
  // The restart state and the pullback data of one step are different checkpoints.
  store->put(restart(2), a.view());
  expect_error([&] { store->get(adjoint(2), span); }, ErrorCode::InvalidArgument,
               {"pullback 2", "not held"});
  expect_bitwise(*store, restart(2), a);
}

TEST_P(StoreConformance, DuplicatePutIsAnError) {
  auto store = make(config());
  TestCheckpoint a(1), b(2);
  store->put(adjoint(4), a.view());
  expect_error([&] { store->put(adjoint(4), b.view()); }, ErrorCode::InvalidArgument,
               {"put(pullback 4)", "already held"});
  expect_bitwise(*store, adjoint(4), a);
  EXPECT_EQ(store->stats().writes, 1);
}

TEST_P(StoreConformance, GetChecksNamesSizesAndOffsets) {
  auto store = make(config());
  const bool all = collective(*store);  // a collective store fails on every rank
  const std::string on_last = "on rank " + std::to_string(last_);
  TestCheckpoint a(1);
  store->put(restart(7), a.view());
  const auto get = [&](Readback& r) {
    return [&store, &r] {
      auto span = r.span();
      store->get(restart(7), span);
    };
  };
  {
    maybe_prefetch(*store, restart(7));
    Readback r(a);
    r.fields.pop_back();
    expect_error(get(r), ErrorCode::InvalidArgument, {"get(restart 7)", "asked for 2 fields"});
  }
  {
    Readback r(a);
    r.fields[1].name = "q";
    expect_error(get(r), ErrorCode::InvalidArgument, {"'q'", "'v'"});
  }
  {
    Readback r(a);
    if (rank_ == last_) r.fields[0].data.push_back(0.0);
    expect_error(get(r), ErrorCode::InvalidArgument, {"field 0 ('u')", "buffer holds", on_last},
                 all || rank_ == last_);
  }
  {
    Readback r(a);
    if (rank_ == last_) r.fields[0].offset += 1;
    expect_error(get(r), ErrorCode::InvalidArgument, {"offset", on_last}, all || rank_ == last_);
  }
  {
    Readback r(a);
    r.fields[1].global += 1;
    expect_error(get(r), ErrorCode::InvalidArgument, {"global size"});
  }
  {
    Readback r(a);
    r.scalars.emplace_back("pressure", 0.0);
    expect_error(get(r), ErrorCode::InvalidArgument, {"no scalar 'pressure'", "time, dt, tag"});
  }
  expect_bitwise(*store, restart(7), a);  // the failed reads left the checkpoint intact
}

TEST_P(StoreConformance, PutChecksItsArguments) {
  const auto check = [&](const std::function<void(TestCheckpoint&)>& spoil,
                         const std::vector<std::string>& parts, bool last_rank_only) {
    auto store = make(config());
    const bool here = collective(*store) || !last_rank_only || rank_ == last_;
    TestCheckpoint bad(5);
    spoil(bad);
    expect_error([&] { store->put(restart(1), bad.view()); }, ErrorCode::InvalidArgument, parts,
                 here);
    // A rank-local store took the checkpoint on the ranks that passed good arguments.
    EXPECT_EQ(store->contains(restart(1)), !here);
    if (store->contains(restart(1))) store->erase(restart(1));
    TestCheckpoint good(8);
    store->put(restart(1), good.view());
    expect_bitwise(*store, restart(1), good);
  };
  check([&](TestCheckpoint& c) { c.fields[0].offset = rank_ == last_ ? -1 : c.fields[0].offset; },
        {"put(restart 1)", "does not lie inside", "on rank " + std::to_string(last_)}, true);
  check([](TestCheckpoint& c) { c.fields[1].name = "u"; }, {"'u' is used twice"}, false);
  check([](TestCheckpoint& c) { c.fields[0].name = "a/b"; }, {"may not contain '/'"}, false);
  if (disk() && size_ > 1) {
    check([&](TestCheckpoint& c) { c.scalars[0].second = rank_ == last_ ? 1e9 : 1.0; },
          {"different checkpoint layouts"}, false);
  }
}

// Checkpoints with the same fields spread differently over the ranks (some ranks' blocks alike,
// others not) are kept apart, and each reads back bitwise, as slots and rows are freed and taken
// again.
TEST_P(StoreConformance, OneShapeSpreadInSeveralWaysReadsBack) {
  auto store = make(config());
  const int size = world_size();
  // a: rank r owns 10 + r; b: the same, with ranks 1 and 2 (0 and 1 on two ranks) swapped.
  const Distribution a{[](int r) -> std::int64_t { return 10 + r; }};
  const Distribution b{[size](int r) -> std::int64_t {
    const int lo = size >= 3 ? 1 : 0;
    const int other = r == lo ? lo + 1 : r == lo + 1 ? lo : r;
    return 10 + (size >= 2 ? other : r);
  }};
  std::vector<TestCheckpoint> cps(8);
  for (int i = 0; i < 8; ++i) cps[i].add("u", i % 3 == 1 ? b : a, 100 + i);
  for (int i = 0; i < 8; ++i) {
    store->put(restart(i), cps[i].view());
    if (i == 3) store->erase(restart(0));
    if (i == 5) store->erase(restart(1));
  }
  for (int i = 2; i < 8; ++i) expect_bitwise(*store, restart(i), cps[i]);
  store->erase(restart(4));  // a b-spread row, taken again by an a-spread checkpoint
  TestCheckpoint again;
  again.add("u", a, 200);
  store->put(restart(4), again.view());
  expect_bitwise(*store, restart(4), again);
  for (int i : {2, 3, 5, 6, 7}) expect_bitwise(*store, restart(i), cps[i]);
}

// Names may hold any character but '/': a scalar whose name looks like a list of two is not
// taken for two scalars (nor two for one), and each reads back bitwise.
TEST_P(StoreConformance, NamesThatLookLikeListsAreKeptApart) {
  auto store = make(config());
  TestCheckpoint one, two;
  one.add("u", even(4), 1);
  one.scalars.emplace_back("t\nscalar dt", 1.5);
  two.add("u", even(4), 2);
  two.scalars.emplace_back("t", 2.5);
  two.scalars.emplace_back("dt", 3.5);
  for (int round = 0; round < 2; ++round) {  // each order of first use
    store->put(restart(10 * round), (round == 0 ? one : two).view());
    store->put(restart(10 * round + 1), (round == 0 ? two : one).view());
    expect_bitwise(*store, restart(10 * round), round == 0 ? one : two);
    expect_bitwise(*store, restart(10 * round + 1), round == 0 ? two : one);
  }
}

TEST_P(StoreConformance, CollectiveBlocksMustTile) {
  if (!disk()) GTEST_SKIP() << "a rank-local store does not see the other ranks' blocks";
  auto store = make(config());
  TestCheckpoint bad(8);
  bad.fields[0].global += 1;
  if (rank_ == 0) bad.fields[0].offset += 1;  // a gap at 0, and an overlap with the next block
  expect_error([&] { store->put(restart(1), bad.view()); }, ErrorCode::InvalidArgument,
               {"put(restart 1)", "tile [0, global_size)", "field 'u'"});
  EXPECT_FALSE(store->contains(restart(1)));
  TestCheckpoint good(9);
  store->put(restart(1), good.view());
  expect_bitwise(*store, restart(1), good);
}

TEST_P(StoreConformance, CorruptionIsDetectedOnEveryRank) {
  if (!disk()) GTEST_SKIP() << "a RAM store keeps no checksums: its memory is not a file";
  auto store = make(config());
  TestCheckpoint a(11), b(12);
  store->put(restart(1), a.view());
  store->put(restart(2), b.view());
  store->flush();
  int target = 0;  // the highest rank holding part of field u
  for (int r = 0; r < size_; ++r) {
    if (uneven().count(r) > 0) target = r;
  }
  const std::int64_t offset = file_offset(*store, restart(1), "u");
  const std::string path = store->path();
  ASSERT_GT(offset, 0);
  if (rank_ == target) {
    // Flip one bit of this rank's third value of u, behind HDF5's back.
    const int fd = ::open(path.c_str(), O_RDWR);
    ASSERT_GE(fd, 0) << path;
    const off_t at = offset + 8 * (uneven().offset(target) + 2);
    std::uint64_t word = 0;
    ASSERT_EQ(::pread(fd, &word, 8, at), 8);
    EXPECT_EQ(word, bits(a.fields[0].data[2])) << "the test looks at the wrong bytes";
    word ^= std::uint64_t{1} << 40;
    ASSERT_EQ(::pwrite(fd, &word, 8, at), 8);
    ::close(fd);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  Readback back(a);
  auto span = back.span();
  expect_error([&] { store->get(restart(1), span); }, ErrorCode::Corrupt,
               {filename(path), "restart 1 (slab_", "rank " + std::to_string(target) + "'s block",
                "field 'u'", "checksum"});
  // Only that checkpoint is lost; the store carries on.
  expect_bitwise(*store, restart(2), b);
}

TEST_P(StoreConformance, DiskFullFailsOnEveryRankAndLeavesNoValidFile) {
  if (!disk()) GTEST_SKIP() << "a RAM store writes no file";
  auto store = make(config());
  TestCheckpoint a(1);
  store->put(restart(1), a.view());
  store->flush();
  const std::string path = store->path();
  std::string size_text;
  if (rank_ == 0) {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0) size_text = std::to_string(st.st_size);
  }
  size_text = broadcast(size_text);
  ASSERT_FALSE(size_text.empty()) << path;

  // Files may not grow beyond their present size: writes past it fail with EFBIG. SIGXFSZ keeps
  // its default action (kill the process): the store sees the limit coming and refuses the put
  // before HDF5 or a pwrite meets it, and blocks the signal wherever it writes.
  struct rlimit old {};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
  const auto old_handler = std::signal(SIGXFSZ, SIG_DFL);
  struct rlimit limit = old;
  limit.rlim_cur = static_cast<rlim_t>(std::stoll(size_text));
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &limit), 0);
  TestCheckpoint big;
  big.add("u", even(20000), 3);
  const auto e = error_of([&] {
    store->put(restart(2), big.view());
    store->flush();
  });
  setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, old_handler);

  ASSERT_TRUE(e.has_value()) << "a write beyond RLIMIT_FSIZE succeeded";
  EXPECT_EQ(e->code(), ErrorCode::Io) << e->what();
  EXPECT_NE(std::string(e->what()).find(path), std::string::npos) << e->what();
  EXPECT_NE(std::string(e->what()).find("restart 2"), std::string::npos) << e->what();
  EXPECT_NE(std::string(e->what()).find("RLIMIT_FSIZE"), std::string::npos) << e->what();
  EXPECT_NE(std::string(e->what()).find("File too large"), std::string::npos) << e->what();
  // The store refuses further work, alike on every rank.
  expect_error(
      [&] {
        store->put(restart(3), a.view());
        store->flush();
      },
      ErrorCode::Io, {"restart 2"});
  for (const auto& f : scratch_.files()) {
    EXPECT_TRUE(ends_with(f, ".h5.partial")) << f << " looks like a finished file";
  }
  store.reset();
  EXPECT_TRUE(scratch_.files().empty()) << "the failed run's file was left behind";
}

TEST_P(StoreConformance, StoreDestroyedWhileTheDiskIsStillFullGoesCleanly) {
  if (!disk()) GTEST_SKIP() << "a RAM store writes no file";
  struct rlimit old {};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
  const auto old_handler = std::signal(SIGXFSZ, SIG_DFL);
  std::optional<Error> e;
  {
    auto store = make(config());
    struct rlimit limit = old;
    limit.rlim_cur = 64 * 1024;
    ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &limit), 0);
    TestCheckpoint big;
    big.add("u", even(20000), 3);
    e = error_of([&] {
      store->put(restart(1), big.view());
      store->flush();
    });
    // The store goes while writes still fail. HDF5 must still close the file, or it crashes
    // in MPI_Finalize at the end of this program.
  }
  struct rlimit now {};
  getrlimit(RLIMIT_FSIZE, &now);
  EXPECT_EQ(now.rlim_cur, 64u * 1024) << "the store changed the file size limit for good";
  setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, old_handler);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->code(), ErrorCode::Io) << e->what();
  EXPECT_TRUE(scratch_.files().empty()) << "the failed run's file was left behind";
}

TEST_P(StoreConformance, BadDirectoriesFailOnEveryRank) {
  if (!disk()) GTEST_SKIP() << "a RAM store uses no directory";
  const std::string missing = scratch_.path() + "/no/such/dir";
  expect_error([&] { make(config(missing)); }, ErrorCode::Io,
               {"'" + missing + "'", "does not exist"});
  if (rank_ == 0) {
    std::FILE* f = std::fopen((scratch_.path() + "/plain").c_str(), "w");
    EXPECT_NE(f, nullptr);
    if (f != nullptr) std::fclose(f);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  const std::string under_file = scratch_.path() + "/plain/sub";
  expect_error([&] { make(config(under_file)); }, ErrorCode::Io,
               {"'" + under_file + "'", "part of its path is a file"});
  // Tests run as root, which ignores permission bits; /proc refuses new files even to root.
  expect_error([&] { make(config("/proc")); }, ErrorCode::Io,
               {"cannot create a file in directory '/proc'", "StoreConfig::directory"});
  EXPECT_EQ(scratch_.files(), std::vector<std::string>{"plain"});
}

TEST_P(StoreConformance, FilesAreNamedUniquelyAndCleanedUp) {
  if (!disk()) GTEST_SKIP() << "a RAM store writes no file";
  TestCheckpoint a(1);
  {
    auto s1 = make(config());
    auto s2 = make(config());
    EXPECT_NE(s1->path(), s2->path());
    for (const auto* s : {s1.get(), s2.get()}) {
      EXPECT_TRUE(ends_with(s->path(), ".h5.partial")) << s->path();
      EXPECT_EQ(filename(s->path()).rfind("rewind-conf-", 0), 0u) << s->path();
      EXPECT_EQ(std::filesystem::path(s->path()).parent_path(), scratch_.path());
      EXPECT_TRUE(std::filesystem::exists(s->path()));
      EXPECT_EQ(broadcast(s->path()), s->path()) << "ranks disagree on the file name";
    }
  }
  EXPECT_TRUE(scratch_.files().empty()) << "files without keep_files were left behind";

  std::string kept;
  {
    auto c = config();
    c.keep_files = true;
    auto s = make(c);
    s->put(restart(3), a.view());
    kept = s->path();
  }
  ASSERT_TRUE(ends_with(kept, ".h5.partial"));
  const std::string finished = filename(kept.substr(0, kept.size() - 8));
  EXPECT_EQ(scratch_.files(), std::vector<std::string>{finished});

  try {
    auto c = config();
    c.keep_files = true;
    c.label = "unclean";
    auto s = make(c);
    s->put(restart(3), a.view());
    throw std::runtime_error("the solver failed");
  } catch (const std::runtime_error&) {
  }
  {
    auto c = config();
    c.keep_files = true;
    c.label = "abandoned";
    auto s = make(c);
    s->put(restart(3), a.view());
    s->abandon();
  }
  EXPECT_EQ(scratch_.files(), std::vector<std::string>{finished}) << "a failed run's file was kept";
}

// What a store keeps beyond its own life is reached through the Store interface alone
// (Store::durable()): the name its file keeps, and this rank's sealed blocks, which read back
// without the store.
TEST_P(StoreConformance, DurableCheckpointsAreReachedThroughTheInterface) {
  auto c = config();
  c.keep_files = true;
  auto store = make(c);
  const Store& same = *store;
  EXPECT_EQ(same.durable(), store->durable()) << "the const and the other answer differ";
  if (!disk()) {
    EXPECT_EQ(store->durable(), nullptr) << "a RAM store keeps nothing durable";
    return;
  }
  DurableStore* durable = store->durable();
  ASSERT_NE(durable, nullptr);
  EXPECT_EQ(durable->final_path() + ".partial", store->path());
  TestCheckpoint a(4);
  store->put(restart(2), a.view());
  expect_error([&] { durable->sealed_blocks(restart(2)); }, ErrorCode::InvalidArgument,
               {"sealed_blocks(restart 2)", "not sealed yet"});
  expect_error([&] { durable->sealed_blocks(restart(9)); }, ErrorCode::InvalidArgument,
               {"sealed_blocks(restart 9)", "not held"});
  store->flush();
  const std::vector<SealedBlock> blocks = durable->sealed_blocks(restart(2));
  ASSERT_EQ(blocks.size(), a.fields.size());
  Readback back(a);
  read_sealed_blocks(store->path(), blocks, back.span().fields);
  for (std::size_t f = 0; f < a.fields.size(); ++f) {
    EXPECT_EQ(blocks[f].field, a.fields[f].name);
    ASSERT_EQ(back.fields[f].data.size(), a.fields[f].data.size());
    for (std::size_t i = 0; i < a.fields[f].data.size(); ++i) {
      ASSERT_EQ(bits(back.fields[f].data[i]), bits(a.fields[f].data[i])) << a.fields[f].name;
    }
  }
  const std::string kept = durable->final_path();
  store->close();
  EXPECT_EQ(store->path(), kept);
  EXPECT_TRUE(std::filesystem::exists(kept));
}

TEST_P(StoreConformance, KeptFileExplainsItselfInH5dump) {
  if (!disk()) GTEST_SKIP() << "a RAM store writes no file";
  std::string kept;
  {
    auto c = config();
    c.keep_files = true;
    auto s = make(c);
    TestCheckpoint a(1);
    s->put(restart(3), a.view());
    kept = s->path();
  }
  kept = kept.substr(0, kept.size() - 8);
  if (rank_ != 0) return;
  const auto [status, out] = h5dump_attributes(kept);
  if (status != 0 && out.find("not found") != std::string::npos) GTEST_SKIP() << "no h5dump";
  EXPECT_EQ(status, 0) << out;
  for (const char* part :
       {"ATTRIBUTE \"format\"", "rewind checkpoint file, format 5",
        "complete = 0 holds no checkpoint", "ATTRIBUTE \"checksum\"", "GROUP \"slab_0\"",
        "ATTRIBUTE \"scalar:time\"", "ATTRIBUTE \"step\"", "ATTRIBUTE \"kind\"",
        "ATTRIBUTE \"slots\"", "DATASET \"u\"", "ATTRIBUTE \"rank_checksums\"",
        "ATTRIBUTE \"rank_offsets\"", "ATTRIBUTE \"rank_counts\"", "ATTRIBUTE \"global_size\""}) {
    EXPECT_NE(out.find(part), std::string::npos) << "h5dump lacks " << part << ":\n" << out;
  }
  EXPECT_TRUE(
      std::regex_search(out, std::regex(R"(ATTRIBUTE "complete" \{[\s\S]*?DATA \{\s*\(0\): 1)")))
      << out;
}

INSTANTIATE_TEST_SUITE_P(Stores, StoreConformance,
                         ::testing::Values("ram", "hdf5", "hdf5_sync", "hdf5_zstd",
                                           "hdf5_sync_zstd"),
                         [](const auto& p) { return p.param; });

}  // namespace
}  // namespace rwd::storage::test
