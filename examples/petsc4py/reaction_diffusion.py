#!/usr/bin/python3
"""The adjoint of a 1D reaction-diffusion equation in petsc4py, with rewind as its trajectory.

    u_t = k u_xx + r u (1 - u)   on (0, 1), u = 0 on the boundary, n interior points,
    J = |u(T)|^2 / 2

TSAdjointSolve gives the gradient of J with respect to the initial state u(0) and to the
parameters k (diffusivity) and r (growth rate). Explicit RK4 with fixed steps; any TS option
applies. The program does not name rewind: options choose the trajectory.

    # rewind, 5 RAM checkpoints (librewind.so from rewind's build or <prefix>/lib):
    mpirun -n 2 /usr/bin/python3 reaction_diffusion.py -dll_append /path/to/librewind.so \\
        -ts_trajectory_type rewind -ts_trajectory_max_cps_ram 5 -ts_trajectory_view
    # PETSc's store-all, the same gradient bit for bit:
    mpirun -n 2 /usr/bin/python3 reaction_diffusion.py -ts_trajectory_type memory
    # options set in the script (PETSc.Options), the library named in PETSC_OPTIONS:
    PETSC_OPTIONS="-dll_append /path/to/librewind.so" \\
        mpirun -n 2 /usr/bin/python3 reaction_diffusion.py -rewind_ram_in_script 5

Options of this program:
    -n <points>              interior grid points (64)
    -steps <n>               time steps (50)
    -gradient_out <file>     write J and the gradient (dJ/dk, dJ/dr, dJ/du(0) in grid order),
                             one hexadecimal float a line, for bitwise comparisons
    -check_gradient          compare dJ/dk and dJ/dr with central differences of J; exit 1 if
                             they differ by more than 1e-6 (relative)
    -rewind_ram_in_script <n>  set -ts_trajectory_type rewind and -ts_trajectory_max_cps_ram n
                             with PETSc.Options() before TS.setFromOptions (librewind must be
                             loaded already: -dll_append on the command line or in PETSC_OPTIONS)

petsc4py must be built for the PETSc that librewind was built against (Debian 12:
python3-petsc4py, PETSc 3.18).
"""

import sys

import numpy as np
import petsc4py

# PETSc reads the command line here (and PETSC_OPTIONS, and -dll_append, which loads librewind).
# Without it, `from petsc4py import PETSc` initialises PETSc with no command-line options.
petsc4py.init(sys.argv)
from petsc4py import PETSc  # noqa: E402  (after petsc4py.init, on purpose)


class ReactionDiffusion:
    """The right-hand side, its Jacobian in u and its Jacobian in (k, r)."""

    def __init__(self, comm, n, k, r):
        self.n, self.k, self.r = n, k, r
        h = 1.0 / (n + 1)
        # L: the second difference, u_xx with zero boundary values.
        self.L = PETSc.Mat().createAIJ([n, n], nnz=(3, 2), comm=comm)
        lo, hi = self.L.getOwnershipRange()
        for i in range(lo, hi):
            if i > 0:
                self.L.setValue(i, i - 1, 1.0 / h**2)
            self.L.setValue(i, i, -2.0 / h**2)
            if i < n - 1:
                self.L.setValue(i, i + 1, 1.0 / h**2)
        self.L.assemble()
        self.Lu = self.L.createVecLeft()

    def rhs(self, ts, t, u, f):
        self.L.mult(u, f)
        ua = u.getArray(readonly=True)
        f.array = self.k * f.array_r + self.r * ua * (1.0 - ua)

    def jacobian(self, ts, t, u, J, P):
        self.L.copy(J, structure=PETSc.Mat.Structure.SAME_NONZERO_PATTERN)
        J.scale(self.k)
        d = u.duplicate()
        d.array = self.r * (1.0 - 2.0 * u.getArray(readonly=True))
        J.setDiagonal(d, addv=PETSc.InsertMode.ADD_VALUES)
        d.destroy()

    def jacobian_p(self, ts, t, u, Jp):
        # Columns: df/dk = L u, df/dr = u (1 - u).
        self.L.mult(u, self.Lu)
        ua = u.getArray(readonly=True)
        lo, hi = u.getOwnershipRange()
        Jp.setValues(range(lo, hi), [0, 1], np.column_stack([self.Lu.array_r, ua * (1.0 - ua)]))
        Jp.assemble()


def initial_state(problem):
    u = problem.L.createVecRight()
    lo, hi = u.getOwnershipRange()
    for i in range(lo, hi):
        x = (i + 1) / (problem.n + 1)
        u.setValue(i, 0.6 * x * (1.0 - x) * 4.0 + 0.1 * (1.0 if 0.3 < x < 0.5 else 0.0))
    u.assemble()
    return u


def make_ts(problem, steps):
    ts = PETSc.TS().create(comm=problem.L.getComm())
    ts.setProblemType(PETSc.TS.ProblemType.NONLINEAR)
    ts.setType(PETSc.TS.Type.RK)
    ts.setRKType(PETSc.TS.RKType.RK4)
    ts.setRHSFunction(problem.rhs)
    J = problem.L.duplicate(copy=True)
    ts.setRHSJacobian(problem.jacobian, J, J)
    ts.setTimeStep(0.002)
    ts.setMaxSteps(steps)
    ts.setMaxTime(1e6)
    ts.setExactFinalTime(PETSc.TS.ExactFinalTime.MATCHSTEP)
    return ts


def cost(problem, steps):
    """J alone: a forward solve that keeps no trajectory."""
    ts = make_ts(problem, steps)
    ts.setFromOptions()  # the same -ts_* options as gradient()'s solve
    u = initial_state(problem)
    ts.solve(u)
    value = 0.5 * u.dot(u)
    ts.destroy()
    return value


def gradient(problem, steps):
    """J, dJ/du(0) and dJ/d(k, r), by TSAdjointSolve over the saved trajectory."""
    ts = make_ts(problem, steps)
    Jp = PETSc.Mat().createDense([(problem.L.getLocalSize()[0], problem.n), (None, 2)],
                                 comm=problem.L.getComm())
    Jp.setUp()
    ts.setRHSJacobianP(problem.jacobian_p, Jp)
    ts.setSaveTrajectory()
    ts.setFromOptions()  # -ts_trajectory_type, -ts_trajectory_max_cps_ram, ... apply here
    u = initial_state(problem)
    ts.solve(u)
    value = 0.5 * u.dot(u)
    lam = u.copy()  # dJ/du(T) = u(T)
    mu = Jp.createVecRight()
    mu.set(0.0)  # J does not depend on (k, r) directly
    ts.setCostGradients([lam], [mu])
    ts.adjointSolve()
    ts.destroy()
    return value, lam, mu


def on_every_rank(vec):
    """The whole vector as a list, on every rank."""
    scatter, whole = PETSc.Scatter.toAll(vec)
    scatter.scatter(vec, whole, PETSc.InsertMode.INSERT_VALUES, PETSc.ScatterMode.FORWARD)
    values = list(whole.getArray(readonly=True))
    scatter.destroy()
    whole.destroy()
    return values


def main():
    opts = PETSc.Options()
    n = opts.getInt("n", 64)
    steps = opts.getInt("steps", 50)
    out = opts.getString("gradient_out", "")
    check = opts.getBool("check_gradient", False)
    ram = opts.getInt("rewind_ram_in_script", 0)
    if ram > 0:
        # The same as -ts_trajectory_type rewind -ts_trajectory_max_cps_ram <ram> on the command
        # line; read by TS.setFromOptions in gradient().
        opts.setValue("ts_trajectory_type", "rewind")
        opts.setValue("ts_trajectory_max_cps_ram", ram)

    comm = PETSc.COMM_WORLD
    problem = ReactionDiffusion(comm, n, k=0.05, r=2.0)
    value, lam, mu = gradient(problem, steps)
    du0, dp = on_every_rank(lam), on_every_rank(mu)
    norm = float(np.sqrt(np.dot(du0, du0)))
    PETSc.Sys.Print(f"J = {value!r}")
    PETSc.Sys.Print(f"dJ/dk = {dp[0]!r}, dJ/dr = {dp[1]!r}, |dJ/du(0)| = {norm!r}")
    if out and comm.getRank() == 0:
        with open(out, "w") as f:
            for g in [value] + dp + du0:
                f.write(float(g).hex() + "\n")

    # Every rank has J and the gradient, so every rank comes to the same verdict.
    failed = False
    if check:
        for name, derivative in (("k", dp[0]), ("r", dp[1])):
            base = getattr(problem, name)
            eps = 1e-6 * base
            setattr(problem, name, base + eps)
            plus = cost(problem, steps)
            setattr(problem, name, base - eps)
            minus = cost(problem, steps)
            setattr(problem, name, base)
            fd = (plus - minus) / (2.0 * eps)
            error = abs(fd - derivative) / max(abs(fd), 1e-300)
            failed = failed or not error < 1e-6
            PETSc.Sys.Print(f"dJ/d{name}: adjoint {derivative!r}, central difference {fd!r}, "
                            f"relative difference {error:.1e}: "
                            f"{'PASSED' if error < 1e-6 else 'FAILED'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
