// rewind-ensemble: one gradient from many adjoint solves, spread over groups of MPI ranks by
// rewind's ensemble map (include/rewind/petsc/ensemble.h). A multi-source inverse problem on
// rewind-heat's model (apps/common/advection_diffusion.hpp): K sources at different places, each
// switched on for its own duration (so the tasks have different step counts), the field read at
// a few receiver cells at each source's final time, and a misfit that couples the sources:
//
//   u_t + v . grad(u) = div(kappa grad(u)) + s_k,   u(0) = 0,   0 <= t <= T_k   (task k)
//   y_k = u(T_k) at the receiver cells;   d_k = the same for a "true" kappa
//   Phi(kappa) = log( sum_k |y_k - d_k|^2 / sum_k |d_k|^2 )
//
// dPhi/dkappa = sum_k (the adjoint of task k seeded with ybar_k = dPhi/dy_k), and ybar_k is
// known only when every task has run forward. Each task is a TS with the rewind trajectory on
// its group's communicator (its own DMDA there); the ensemble runs the forwards on the groups as
// they come free, keeps each task's checkpoints on the group that made them, sends each group
// the cotangents of its own tasks and sums the gradient reproducibly. -compare_serial checks the
// gradient bit for bit against a plain loop over the tasks on one group with PETSc's store-all
// trajectory; -taylor checks it against finite differences of Phi.
//
//   mpirun -n 2 build/bin/rewind-ensemble
//   mpirun -n 2 build/bin/rewind-ensemble -ensemble_tasks 12 -ts_trajectory_max_cps_ram 4
//       -compare_serial -taylor                                                  (one command)
//   mpirun -n 4 --oversubscribe build/bin/rewind-ensemble -rewind_ensemble_group_size 2
//       -rewind_ensemble_assign static -ts_trajectory_max_cps_ram 3
//       -rewind_ensemble_max_cps_ram 6 -rewind_ensemble_max_cps_disk 6
//       -summary_json ens.json -gradient_out ens.h5                              (one command)
//   mpirun -n 4 --oversubscribe build/bin/rewind-ensemble -rewind_ensemble_resume
//       -rewind_ensemble_dirname /scratch/ens      (killed? the same command again goes on)
//
// The problem is problem.hpp, one task source_task.hpp, the passes through the ensemble API
// ensemble_pass.hpp, the checks checks.hpp, and what the run prints and writes summary.hpp.
#include <petscsys.h>

#include <cmath>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "adjoint_app.hpp"
#include "checks.hpp"
#include "ensemble_pass.hpp"
#include "problem.hpp"
#include "source_task.hpp"
#include "summary.hpp"

namespace rwd::apps::multisource {
namespace {

constexpr char kHelp[] =
    "rewind-ensemble: the gradient of a multi-source misfit Phi(kappa) for 2D\n"
    "advection-diffusion, one TS adjoint task per source, spread over groups of ranks by\n"
    "rewind's ensemble map. Options: -ensemble_tasks K (12), -ensemble_steps_min/_max (20/80),\n"
    "-ensemble_kappa0 (0.01), -ensemble_velocity (1), -da_grid_x/-da_grid_y (64),\n"
    "-ts_dt (0.005), -rewind_ensemble_* (groups, assignment, group budget), -ts_trajectory_*\n"
    "(each task's budget), -compare_serial, -taylor, -summary_json FILE, -gradient_out FILE.h5.\n"
    "-rewind_ensemble_resume: a job killed in either pass goes on where it was when started\n"
    "again with the same command (its manifest in -rewind_ensemble_dirname).\n";

// The grid every task uses, as the -da_ options make it.
void grid_size(const Layout& l, PetscInt* mx, PetscInt* my) {
  OwnedDM dm = make_grid(kGrid, l.group);
  DMDALocalInfo info;
  REWIND_APP_CALL(DMDAGetLocalInfo(dm, &info));
  *mx = info.mx;
  *my = info.my;
}

// -compare_serial: 1 if the serial loop's outputs differ, or its gradient (beyond
// -compare_serial_rtol, for lossy group checkpoints).
int check_serial(Run& r, const std::vector<PetscScalar>& kappa,
                 const std::vector<PetscScalar>& data, const Passes& p) {
  print0(compare_header(r.settings, r.layout));
  const double t0 = MPI_Wtime();
  const CompareResult c = compare_serial(r.settings, r.layout, kappa, data, p.y, p.g);
  r.times.compare = MPI_Wtime() - t0;
  print0(compare_text(c, r.layout, r.settings.tasks));
  r.compare = c;
  return c.passed ? 0 : 1;
}

// -taylor: 1 if the observed order is not 2.
int check_taylor(Run& r, const std::vector<PetscScalar>& kappa,
                 const std::vector<PetscScalar>& data, const Passes& p) {
  print0(taylor_header(r.settings));
  const double t0 = MPI_Wtime();
  const TaylorReport t = taylor_check(r.settings, r.layout, kappa, data, r.phi, p.g);
  r.times.taylor = MPI_Wtime() - t0;
  print0(taylor_text(t, "Phi"));
  r.taylor = t;
  return t.passed ? 0 : 1;
}

int run() {
  const double t_start = MPI_Wtime();
  Run r;
  r.settings = read_settings();
  const Settings& s = r.settings;
  SourceEnsemble ensemble;
  r.layout = ensemble.layout();
  const Layout& l = r.layout;
  grid_size(l, &r.mx, &r.my);
  const std::vector<PetscScalar> kappa = field_block(l.group, s, kappa_guess);

  print0(start_text(s, l));
  const double t0 = MPI_Wtime();
  const std::vector<PetscScalar> data =
      outputs_everywhere(s, l, field_block(l.group, s, kappa_true));
  r.times.data = MPI_Wtime() - t0;

  // The map: forward, Phi and its cotangents, backward.
  const Passes p = ensemble.run(s, kappa, data);
  r.phi = p.phi;
  r.stats = p.stats;
  r.tasks = p.tasks;
  r.report_json = p.report_json;
  r.times.forward = p.stats.forward_seconds;
  r.times.backward = p.stats.backward_seconds;
  r.gradient_norm = std::sqrt(group_dot(l, p.g, p.g));
  print0("\n" + summary_text(r));

  int code = 0;
  if (s.compare && check_serial(r, kappa, data, p) != 0) code = 1;
  if (s.taylor && check_taylor(r, kappa, data, p) != 0) code = 1;
  ensemble.destroy();

  if (s.gradient[0]) {
    write_gradient(s.gradient, r, p.g, kappa);
    print0(std::string("\nwrote dPhi/dkappa to ") + s.gradient + "\n");
  }
  r.times.total = MPI_Wtime() - t_start;
  if (s.json[0] && l.rank == 0) write_summary(s.json, run_json(r));
  if (s.json[0]) print0(std::string("wrote the summary to ") + s.json + "\n");
  REWIND_APP_CALL(MPI_Comm_free(&r.layout.group));
  print0(format("total %.2f s\n", r.times.total));
  return code;
}

}  // namespace
}  // namespace rwd::apps::multisource

int main(int argc, char** argv) {
  if (PetscInitialize(&argc, &argv, nullptr, rwd::apps::multisource::kHelp)) return 1;
  int code = 0;
  try {
    code = rwd::apps::multisource::run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rewind-ensemble: error: %s\n", e.what());
    std::fflush(stderr);
    MPI_Abort(PETSC_COMM_WORLD, 2);
  }
  if (PetscFinalize()) return 1;
  return code;
}
