#!/usr/bin/python3
"""rewind against PETSc's `memory` trajectory with CAMS, at the same -ts_trajectory_max_cps_ram
(ctest label `bench`; needs PETSc configured with CAMS: scripts/build-petsc.sh 3.25.4 cams and
rewind built against it, e.g. BUILD_DIR=build-petsc-3.25.4-cams).

    cams_bench.py --ex5adj PATH --rewind-lib PATH [--ranks 2 --steps 300 --grid 128
                  --methods cn,rk4 --budgets 5,10,20 --disk 20,100 --reps 3] --json F

For each method (ex5adj with CN, and with explicit RK4: -implicitform 0 -ts_type rk
-ts_rk_type 4; also beuler and rk3bs, first-same-as-last) it runs PETSc's store-all `memory`, `memory` + CAMS and rewind (auto) under each
budget, interleaved (each repetition runs every configuration once, in an order rotated from
one repetition to the next), each rank under rank_probe.py. It prints per configuration the
TSStep calls (forward steps, recomputations included, from -log_view), the median wall time,
the peak RSS (largest rank), and the model: store-all's wall time plus the extra TSStep calls at
store-all's own time per TSStep. Every run's lambda must be bitwise store-all's, and rewind may
not take more TSStep calls than CAMS: the command exits 1 otherwise. No timing is asserted.

With --disk D1,D2,... rewind also runs each budget with D disk checkpoints added
(-ts_trajectory_max_cps_disk D, files in the run's directory, write and read costs measured as a
user's run measures them); CAMS has no disk level, so these rows are compared with CAMS at the
same RAM budget and must take fewer TSStep calls.
"""
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from petsc_bench import (Config, ex5adj_arguments, finish, load_average,  # noqa: E402
                         run_interleaved, store_all_model, whole_program_rows)

MiB = 1024.0 * 1024.0
METHODS = {"cn": ["-ts_type", "cn"],
           "rk3bs": ["-implicitform", "0", "-ts_type", "rk", "-ts_rk_type", "3bs"],
           "beuler": ["-ts_type", "beuler"],
           "rk4": ["-implicitform", "0", "-ts_type", "rk", "-ts_rk_type", "4"]}


def configs(budgets, disks):
    memory = ["-ts_trajectory_type", "memory", "-ts_trajectory_solution_only", "0"]
    out = [Config("memory", memory, "petsc", "all N in RAM")]
    for n in budgets:
        cps = ["-ts_trajectory_max_cps_ram", str(n)]
        out.append(Config(f"memory + CAMS {n}", memory + ["-ts_trajectory_memory_type", "cams"] +
                          cps, "petsc", f"{n} checkpoints"))
        out.append(Config(f"rewind {n}", ["-ts_trajectory_type", "rewind"] + cps, "rewind",
                          f"{n} checkpoints"))
        for d in disks:
            out.append(Config(f"rewind {n} + {d} disk", ["-ts_trajectory_type", "rewind"] + cps +
                              ["-ts_trajectory_max_cps_disk", str(d),
                               "-ts_trajectory_dirname", "checkpoints"], "rewind",
                              f"{n} checkpoints, {d} on disk"))
    return out


def main():
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    ap = ex5adj_arguments(__doc__, "build/bench/petsc/cams")
    ap.add_argument("--methods", default="cn,rk4")
    ap.add_argument("--budgets", default="5,10,20")
    ap.add_argument("--disk", default="", help="disk checkpoints added to rewind's budgets")
    opts = ap.parse_args()
    opts.ex5adj, opts.rewind_lib = map(os.path.abspath, (opts.ex5adj, opts.rewind_lib))
    budgets = [int(b) for b in opts.budgets.split(",")]
    disks = [int(d) for d in opts.disk.split(",") if d]
    outputs = ["-ts_adjoint_view_solution", "binary:lambda.bin", "-viewer_binary_skip_info",
               "-ts_trajectory_view"]
    failures, results = [], {}
    print(f"# ex5adj, {opts.grid}x{opts.grid}, {opts.steps} steps, {opts.ranks} ranks, "
          f"{opts.reps} repetitions; load average at start {load_average()}", flush=True)
    for method in opts.methods.split(","):
        base = [opts.ex5adj, "-da_grid_x", str(opts.grid), "-da_grid_y", str(opts.grid),
                "-ts_max_steps", str(opts.steps), "-ts_max_time", str(0.5 * opts.steps + 1.0),
                "-ts_adapt_type", "none", "-dll_append", opts.rewind_lib] + METHODS[method]
        cfgs = configs(budgets, disks)
        records = run_interleaved(opts, base, cfgs, os.path.join(os.path.abspath(opts.work), method),
                                  outputs, f"{method} ")
        model = store_all_model(records["memory"])
        per_step = model[3]
        rows = whole_program_rows(records, cfgs, model, failures, f"{method} ")
        results[method] = rows
        print(f"\n### ex5adj {method}, {opts.grid}², {opts.steps} steps, {opts.ranks} ranks "
              f"(median of {opts.reps}; model: store-all's wall + extra TSStep calls at "
              f"store-all's {per_step * 1e3:.2f} ms each)\n")
        print("| budget | configuration | TSStep calls | wall s | model s | wall / model | "
              "peak RSS MiB | TSStep vs CAMS | wall vs CAMS |")
        print("|---|---|---|---|---|---|---|---|---|")
        for cfg in cfgs:
            r = rows.get(cfg.name)
            if not r:
                continue
            n = cfg.name.split()[1] if cfg.name != "memory" else "all"
            n = cfg.name.split()[-1] if cfg.name.startswith("memory + CAMS") else n
            cams = rows.get(f"memory + CAMS {n}")
            vs = (f"{r['tsstep'] / cams['tsstep']:.3f} | {r['wall'] / cams['wall']:.3f}"
                  if cams and cfg.kind == "rewind" else " | ")
            print(f"| {cfg.budget} | {cfg.name} | {r['tsstep']} | {r['wall']:.2f} | {r['model']:.2f} | "
                  f"{r['wall'] / r['model']:.2f} | {r['rss_mib']:.1f} | {vs} |")
            on_disk = "disk" in cfg.name
            if cams and cfg.kind == "rewind" and (r["tsstep"] > cams["tsstep"] or
                                                  (on_disk and r["tsstep"] >= cams["tsstep"])):
                failures.append(f"{method} {cfg.name}: {r['tsstep']} TSStep calls, CAMS "
                                f"{cams['tsstep']}")
        print(flush=True)
    return finish(opts, results, failures)

if __name__ == "__main__":
    sys.exit(main())
