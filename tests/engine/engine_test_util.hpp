#pragma once
// What the engine and recording tests share: configurations, runs and cross-rank checks.

#include <mpi.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "rewind/engine/engine.hpp"
#include "steppers.hpp"

namespace rwd::testing {

using engine::Engine;
using engine::EngineConfig;
using engine::RunStats;
using schedule::kUnlimited;

constexpr Step kSteps = 30;

inline std::string scratch_dir(const std::string& sub = {}) {
  auto dir = std::filesystem::temp_directory_path() / "rewind-engine-test";
  if (!sub.empty()) dir /= sub;
  std::filesystem::create_directories(dir);
  return dir.string();
}

inline EngineConfig config(const std::string& schedule, std::int64_t ram, std::int64_t disk) {
  EngineConfig c;
  c.schedule = schedule;
  c.params.steps = kSteps;
  c.params.ram = ram;
  c.params.disk = disk;
  c.params.write_cost = 0.5;
  c.params.read_cost = 0.5;
  c.store.comm = MPI_COMM_WORLD;
  c.store.directory = scratch_dir();
  c.store.label = "engine-test";
  return c;
}

/// Store-all, one checkpoint per step whatever its size: the reference every schedule matches.
inline EngineConfig storeall_config() {
  EngineConfig c = config("storeall", kSteps, 0);
  c.slot_size = engine::SlotSize::Any;
  return c;
}

inline std::pair<std::vector<double>, RunStats> adjoint(TestStepper& s, const EngineConfig& c) {
  s.reset(0.0);
  Engine engine(s, c);
  RunStats stats = engine.run();
  return {s.gradient(), stats};
}

inline bool bitwise_equal(const std::vector<double>& a, const std::vector<double>& b) {
  // memcmp must not see the null data() of an empty vector, even for zero bytes.
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
}

inline int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

inline int world_size() {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

/// True on every rank if `ok` holds on every rank.
inline bool all_ranks(bool ok) {
  int mine = ok ? 1 : 0, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all == 1;
}

/// Files whose names start with "rewind-" in `dir`.
inline int rewind_files(const std::string& dir) {
  int n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    n += entry.path().filename().string().rfind("rewind-", 0) == 0 ? 1 : 0;
  }
  return n;
}

}  // namespace rwd::testing
