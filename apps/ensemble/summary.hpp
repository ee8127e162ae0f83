#pragma once
// What rewind-ensemble reports: the lines it prints (the problem, the mapping the ensemble
// recorded, the checks), the JSON summary (-summary_json) and the gradient file (-gradient_out).
#include <petscsys.h>

#include <optional>
#include <string>
#include <vector>

#include "checks.hpp"
#include "problem.hpp"
#include "report.hpp"
#include "rewind/petsc/ensemble.h"

namespace rwd::apps::multisource {

struct Times {
  double data = 0, forward = 0, backward = 0, compare = 0, taylor = 0, total = 0;
};

/// Everything the summaries show.
struct Run {
  Settings settings;
  Layout layout;
  PetscInt mx = 0, my = 0;
  PetscReal phi = 0, gradient_norm = 0;
  RewindEnsembleStats stats{};                  ///< RewindEnsembleGetStats
  std::vector<RewindEnsembleTaskRecord> tasks;  ///< RewindEnsembleGetTaskRecord, in task order
  std::string report_json;                      ///< RewindEnsembleGetReport
  Times times;
  std::optional<CompareResult> compare;
  std::optional<TaylorReport> taylor;
};

/// The first line: K sources on G groups.
std::string start_text(const Settings& s, const Layout& l);
/// The problem, the mapping (which group ran which task, in which order, spilled and cut), the
/// backward's bytes and the times.
std::string summary_text(const Run& r);
/// What the serial comparison is about to do, and its verdict.
std::string compare_header(const Settings& s, const Layout& l);
std::string compare_text(const CompareResult& c, const Layout& l, PetscInt tasks);
/// What the Taylor test is about to do.
std::string taylor_header(const Settings& s);
/// The -summary_json object: K, g, G, Phi, the sources, the receivers, the times, the checks and
/// the ensemble's report.
std::string run_json(const Run& r);
/// Writes grad_kappa, kappa and kappa_true to `file`: called on every rank, written by group 0
/// (collective on its communicator), a no-op on the other groups.
void write_gradient(const char* file, const Run& r, const std::vector<PetscScalar>& g,
                    const std::vector<PetscScalar>& kappa);

/// Prints on rank 0 of PETSC_COMM_WORLD.
void print0(const std::string& text);

}  // namespace rwd::apps::multisource
