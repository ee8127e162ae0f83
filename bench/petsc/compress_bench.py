#!/usr/bin/python3
"""Compressed RAM checkpoints on PETSc's ex5adj, the whole program (ctest label `bench`).

    compress_bench.py --ex5adj PATH --rewind-lib PATH [--ranks 2 --steps 300 --grid 128
                      --budget 10 --ratios 1.5,2 --reps 3] --json F

Runs PETSc's store-all `memory` trajectory and rewind at -ts_trajectory_max_cps_ram N: without
compression, with zstd and blosc planned as uncompressed (-ts_trajectory_rewind_compress_ratio 1:
compression saves memory, the plan is the same), and with each codec planned at each ratio given
(the budget's bytes then hold more checkpoints). The runs are interleaved (each repetition runs
every configuration once, in an order rotated from one repetition to the next), each rank under
rank_probe.py. Per configuration it prints the TSStep calls (forward steps, recomputations
included, from -log_view), the median wall time, the peak RSS (largest rank), the ratio the RAM
store measured, the checkpoints the plan gained, the checkpoints moved to disk (none: no disk
budget is given, and a checkpoint that does not fit stops the run), and the model: store-all's
wall time plus the extra TSStep calls at store-all's own time per TSStep. Every run's lambda
must be bitwise store-all's, a compressed run planned as uncompressed must take the TSStep calls
of the run without compression, and a run planned with a ratio may not take more: the command
exits 1 otherwise. No timing is asserted.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from petsc_bench import (Config, ex5adj_arguments, finish, load_average,  # noqa: E402
                         run_interleaved, store_all_model, whole_program_rows)

STORED = re.compile(r"RAM checkpoints compressed by (\w+): [0-9.]+ MiB stored for [0-9.]+ MiB "
                    r"\(([0-9.]+)x\)")
GAINED = re.compile(r"(\d+) RAM checkpoints in the budget of [0-9.]+ MiB, (\d+) without "
                    r"compression")


def configs(n, ratios):
    memory = ["-ts_trajectory_type", "memory", "-ts_trajectory_solution_only", "0"]
    rewind = ["-ts_trajectory_type", "rewind", "-ts_trajectory_max_cps_ram", str(n)]
    out = [Config("memory", memory, "petsc", "all N in RAM"),
           Config("rewind", rewind, "rewind", f"{n} checkpoints")]
    for codec in ("zstd", "blosc"):
        for r in ["1"] + ratios:
            out.append(Config(f"rewind {codec} ratio {r}",
                              rewind + ["-ts_trajectory_rewind_compress", codec,
                                        "-ts_trajectory_rewind_compress_ratio", r],
                              "rewind", f"{n} checkpoints"))
    return out


def view_numbers(rec):
    """The stored ratio and the checkpoints the plan holds with and without compression."""
    try:
        with open(os.path.join(rec["dir"], "output")) as f:
            text = f.read()
    except OSError:
        return None, None
    stored = STORED.search(text)
    gained = GAINED.search(text)
    return (float(stored.group(2)) if stored else None,
            (int(gained.group(1)), int(gained.group(2))) if gained else None)


def main():
    ap = ex5adj_arguments(__doc__, "build/bench/petsc/compress")
    ap.add_argument("--budget", type=int, default=10)
    ap.add_argument("--ratios", default="1.5,2")
    opts = ap.parse_args()
    opts.ex5adj, opts.rewind_lib = map(os.path.abspath, (opts.ex5adj, opts.rewind_lib))
    ratios = [r for r in opts.ratios.split(",") if r]
    outputs = ["-ts_adjoint_view_solution", "binary:lambda.bin", "-viewer_binary_skip_info",
               "-ts_trajectory_view"]
    base = [opts.ex5adj, "-da_grid_x", str(opts.grid), "-da_grid_y", str(opts.grid),
            "-ts_max_steps", str(opts.steps), "-ts_max_time", str(0.5 * opts.steps + 1.0),
            "-ts_adapt_type", "none", "-ts_type", "cn", "-dll_append", opts.rewind_lib]
    print(f"# ex5adj CN, {opts.grid}x{opts.grid}, {opts.steps} steps, {opts.ranks} ranks, "
          f"-ts_trajectory_max_cps_ram {opts.budget}, {opts.reps} repetitions; load average at "
          f"start {load_average()}", flush=True)
    cfgs = configs(opts.budget, ratios)
    records = run_interleaved(opts, base, cfgs, os.path.abspath(opts.work), outputs)
    model = store_all_model(records["memory"])
    per_step = model[3]
    failures = []
    rows = whole_program_rows(records, cfgs, model, failures)
    for name, row in rows.items():
        row["stored_ratio"], row["slots"] = view_numbers(records[name][0])
    plain = rows.get("rewind")
    print(f"\n### ex5adj CN, {opts.grid}², {opts.steps} steps, {opts.ranks} ranks, "
          f"-ts_trajectory_max_cps_ram {opts.budget} (median of {opts.reps}; model: store-all's "
          f"wall + extra TSStep calls at store-all's {per_step * 1e3:.2f} ms each)\n")
    print("| configuration | stored ratio | RAM checkpoints (without compression) | TSStep calls | "
          "wall s | model s | peak RSS MiB | wall vs rewind uncompressed |")
    print("|---|---|---|---|---|---|---|---|")
    for cfg in cfgs:
        r = rows.get(cfg.name)
        if not r:
            continue
        ratio = f"{r['stored_ratio']:.2f}" if r["stored_ratio"] else ""
        slots = f"{r['slots'][0]} ({r['slots'][1]})" if r["slots"] else ""
        vs = f"{r['wall'] / plain['wall']:.3f}" if plain and cfg.kind == "rewind" else ""
        print(f"| {cfg.name} | {ratio} | {slots} | {r['tsstep']} | {r['wall']:.2f} | "
              f"{r['model']:.2f} | {r['rss_mib']:.1f} | {vs} |")
        if plain and cfg.name.endswith("ratio 1") and r["tsstep"] != plain["tsstep"]:
            failures.append(f"{cfg.name}: {r['tsstep']} TSStep calls, uncompressed "
                            f"{plain['tsstep']}: planned as uncompressed, it must plan alike")
        if plain and "ratio" in cfg.name and r["tsstep"] > plain["tsstep"]:
            failures.append(f"{cfg.name}: {r['tsstep']} TSStep calls, more than uncompressed "
                            f"{plain['tsstep']}")
    print()
    return finish(opts, rows, failures)

if __name__ == "__main__":
    sys.exit(main())
