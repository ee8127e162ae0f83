#pragma once
// Helpers shared by the storage tests: test checkpoints with awkward values, uneven
// distributions, a scratch directory shared by the ranks, and checks that every rank threw.

#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "rewind/error.hpp"
#include "rewind/storage/store.hpp"

namespace rwd::storage::test {

inline int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

inline int world_size() {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

/// True on every rank iff `mine` holds on every rank.
inline bool all_ranks(bool mine) {
  int in = mine ? 1 : 0, out = 0;
  MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  return out != 0;
}

inline std::string broadcast(std::string text) {
  int n = static_cast<int>(text.size());
  MPI_Bcast(&n, 1, MPI_INT, 0, MPI_COMM_WORLD);
  text.resize(static_cast<std::size_t>(n));
  MPI_Bcast(text.data(), n, MPI_CHAR, 0, MPI_COMM_WORLD);
  return text;
}

/// A fresh directory every rank sees; removed with everything in it at destruction.
class ScratchDir {
 public:
  ScratchDir() {
    std::string made;
    if (world_rank() == 0) {
      std::string pattern =
          (std::filesystem::temp_directory_path() / "rewind-store-test-XXXXXX").string();
      if (mkdtemp(pattern.data()) != nullptr) made = pattern;
    }
    path_ = broadcast(made);
  }
  ~ScratchDir() {
    MPI_Barrier(MPI_COMM_WORLD);
    if (world_rank() == 0 && !path_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(path_, ec);
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::string& path() const { return path_; }

  /// Names of the files in the directory (rank 0's view, broadcast), sorted.
  std::vector<std::string> files() const {
    std::string joined;
    if (world_rank() == 0) {
      std::vector<std::string> names;
      for (const auto& e : std::filesystem::directory_iterator(path_)) {
        names.push_back(e.path().filename().string());
      }
      std::sort(names.begin(), names.end());
      for (const auto& n : names) joined += n + "\n";
    }
    joined = broadcast(joined);
    std::vector<std::string> out;
    std::size_t start = 0;
    for (std::size_t i = 0; i < joined.size(); ++i) {
      if (joined[i] == '\n') {
        out.push_back(joined.substr(start, i - start));
        start = i + 1;
      }
    }
    return out;
  }

 private:
  std::string path_;
};

/// How a field is spread over the ranks: rank r owns count(r) elements after those of lower ranks.
struct Distribution {
  std::function<std::int64_t(int rank)> count;

  std::int64_t offset(int rank) const {
    std::int64_t o = 0;
    for (int r = 0; r < rank; ++r) o += count(r);
    return o;
  }
  std::int64_t global(int size) const { return offset(size); }
};

/// Rank r owns 3 + 5r elements, except rank 1, which owns none.
inline Distribution uneven() {
  return {[](int r) -> std::int64_t { return r == 1 ? 0 : 3 + 5 * r; }};
}
/// Rank 0 owns `n`, the others none.
inline Distribution on_rank_zero(std::int64_t n) {
  return {[n](int r) -> std::int64_t { return r == 0 ? n : 0; }};
}
/// Every rank owns `n`.
inline Distribution even(std::int64_t n) {
  return {[n](int) { return n; }};
}

/// Awkward but exact values: NaNs with payloads (quiet, signalling, negative), denormals, -0.0,
/// infinities, extremes, and ordinary numbers that depend on (seed, global index).
inline double awkward_value(std::uint64_t seed, std::int64_t index) {
  static const std::uint64_t patterns[] = {
      0x7FF8000000000000ull | 0x00000000DEADBEEFull,  // quiet NaN with payload
      0x7FF0000000000001ull,                          // signalling NaN
      0xFFF8000000000000ull | 0x0000000000C0FFEEull,  // negative quiet NaN with payload
      0x0000000000000001ull,                          // smallest denormal
      0x800FFFFFFFFFFFFFull,                          // largest negative denormal
      0x8000000000000000ull,                          // -0.0
      0x7FF0000000000000ull,                          // +inf
      0xFFF0000000000000ull,                          // -inf
      0x7FEFFFFFFFFFFFFFull,                          // max
  };
  const auto i = static_cast<std::uint64_t>(index);
  const std::uint64_t pick = (i + seed) % 13;
  if (pick < 9) return std::bit_cast<double>(patterns[pick] ^ (pick < 3 ? seed << 20 : 0));
  return static_cast<double>(seed) * 1000.0 + static_cast<double>(index) / 7.0;
}

/// A checkpoint this rank writes: named fields with its blocks, and scalars.
class TestCheckpoint {
 public:
  struct Field {
    std::string name;
    std::vector<double> data;
    std::int64_t offset = 0;
    std::int64_t global = 0;
  };

  TestCheckpoint() = default;
  /// Fields "u" (uneven), "v" (all on rank 0), "w" (empty everywhere); scalars time, dt, tag.
  explicit TestCheckpoint(std::uint64_t seed) {
    add("u", uneven(), seed);
    add("v", on_rank_zero(17), seed + 1);
    add("w", even(0), seed + 2);
    scalars.emplace_back("time", 0.125 * static_cast<double>(seed));
    scalars.emplace_back("dt", -0.0);
    scalars.emplace_back("tag", std::bit_cast<double>(0x7FF80000000ABCDEull ^ seed));
  }

  void add(const std::string& name, const Distribution& d, std::uint64_t seed) {
    const int rank = world_rank();
    Field f{name, {}, d.offset(rank), d.global(world_size())};
    for (std::int64_t i = 0; i < d.count(rank); ++i) {
      f.data.push_back(awkward_value(seed, f.offset + i));
    }
    fields.push_back(std::move(f));
  }

  CheckpointView view() {
    views_.clear();
    for (const auto& f : fields) views_.push_back({f.name, f.data, f.offset, f.global});
    scalar_views_.clear();
    for (const auto& [n, v] : scalars) scalar_views_.push_back({n, v});
    return {views_, scalar_views_};
  }

  std::vector<Field> fields;
  std::vector<std::pair<std::string, double>> scalars;

 private:
  std::vector<FieldView> views_;
  std::vector<Scalar> scalar_views_;
};

/// Buffers to read a checkpoint into, shaped like `like` and filled with a sentinel.
class Readback {
 public:
  explicit Readback(const TestCheckpoint& like) {
    for (const auto& f : like.fields) {
      fields.push_back(
          {f.name, std::vector<double>(f.data.size(), sentinel()), f.offset, f.global});
    }
    for (const auto& s : like.scalars) scalars.push_back({s.first, sentinel()});
  }

  static double sentinel() { return std::bit_cast<double>(0x5A5A5A5A5A5A5A5Aull); }

  CheckpointSpan span() {
    spans_.clear();
    for (auto& f : fields) spans_.push_back({f.name, f.data, f.offset, f.global});
    scalar_views_.clear();
    for (const auto& [n, v] : scalars) scalar_views_.push_back({n, v});
    return {spans_, scalar_views_};
  }

  /// Copies the scalar values filled in by get() back into `scalars`.
  void collect() {
    for (std::size_t i = 0; i < scalars.size(); ++i) scalars[i].second = scalar_views_[i].value;
  }

  std::vector<TestCheckpoint::Field> fields;
  std::vector<std::pair<std::string, double>> scalars;

 private:
  std::vector<FieldSpan> spans_;
  std::vector<Scalar> scalar_views_;
};

inline std::uint64_t bits(double x) {
  return std::bit_cast<std::uint64_t>(x);
}

/// Reads `key` and checks every value and scalar is bit-for-bit what `expected` holds.
inline void expect_bitwise(Store& store, const Key& key, const TestCheckpoint& expected) {
  Readback back(expected);
  auto span = back.span();
  ASSERT_NO_THROW(store.get(key, span)) << to_string(key);
  back.collect();
  for (std::size_t f = 0; f < expected.fields.size(); ++f) {
    const auto& want = expected.fields[f].data;
    const auto& got = back.fields[f].data;
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(bits(got[i]), bits(want[i]))
          << to_string(key) << " field " << expected.fields[f].name << " local index " << i
          << " on rank " << world_rank();
    }
  }
  for (std::size_t i = 0; i < expected.scalars.size(); ++i) {
    EXPECT_EQ(bits(back.scalars[i].second), bits(expected.scalars[i].second))
        << to_string(key) << " scalar " << expected.scalars[i].first;
  }
}

/// Runs `fn`; returns the rwd::Error it threw (nullopt if none). Fails on other exceptions.
inline std::optional<Error> error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected rwd::Error, got std::exception: " << e.what();
  }
  return std::nullopt;
}

/// Expects `fn` to throw Error(code) whose message holds every one of `parts` on this rank when
/// `here` is true, and to return normally otherwise. Checks across ranks that no rank failed
/// the expectation silently.
inline void expect_error(const std::function<void()>& fn, ErrorCode code,
                         const std::vector<std::string>& parts, bool here = true) {
  const auto e = error_of(fn);
  if (!here) {
    EXPECT_FALSE(e.has_value()) << "rank " << world_rank() << " threw: " << (e ? e->what() : "");
    return;
  }
  ASSERT_TRUE(e.has_value()) << "rank " << world_rank() << " did not throw";
  EXPECT_EQ(e->code(), code) << to_string(e->code()) << ": " << e->what();
  for (const auto& p : parts) {
    EXPECT_NE(std::string(e->what()).find(p), std::string::npos)
        << "message lacks '" << p << "': " << e->what();
  }
}

/// `h5dump -A` of `path`: its exit status and output (status -1 and "not found" without h5dump).
inline std::pair<int, std::string> h5dump_attributes(const std::string& path) {
  std::FILE* pipe = ::popen(("h5dump -A '" + path + "' 2>&1").c_str(), "r");
  if (pipe == nullptr) return {-1, "popen: not found"};
  std::string out;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;) out.append(buf, n);
  return {::pclose(pipe), out};
}

}  // namespace rwd::storage::test
