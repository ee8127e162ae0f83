#!/usr/bin/python3
"""Compressed RAM checkpoints on PETSc's ex5adj or rewind-heat, the whole program (ctest label
`bench`).

    compress_bench.py --ex5adj PATH --rewind-lib PATH [--ranks 2 --steps 300 --grid 128
                      --budget 10 --plans zstd:1.5,blosc:1.05 --spill-plans zstd:2 --disk 40
                      --lossy-plans 1e-8:2,1e-6:3 --reps 3 --heat PATH] --json F

With --heat, the program is rewind-heat (CN, final time 0.5 in --steps steps, --grid²) instead
of ex5adj.

Runs PETSc's store-all `memory` trajectory and rewind at -ts_trajectory_max_cps_ram N: without
compression; with each codec planned as uncompressed (-ts_trajectory_rewind_compress_ratio 1:
compression saves memory, the plan is the same); with each codec:ratio of --plans (the budget's
bytes then hold more checkpoints; no disk budget, so a checkpoint that does not fit stops the
run); with each codec:ratio of --spill-plans and --disk disk checkpoints, where what does not
fit moves to disk; and with zfp (lossy, stages lossy too) at each tolerance:ratio of
--lossy-plans (no disk) and --lossy-spill-plans (--disk disk checkpoints), whose lambda must be
within 1000 times the tolerance of store-all's (normwise; the table gives the error). Each
compressed run is compared with the uncompressed run of the same budget: rewind alone, or
rewind with the same --disk disk checkpoints (run whenever a plan has disk room). The runs are interleaved (each repetition runs every configuration once, in an
order rotated from one repetition to the next), each rank under rank_probe.py. Per configuration
it prints the ratio the RAM store measured, the RAM checkpoints the plan holds (and without
compression), the checkpoints moved to disk, the TSStep calls (forward steps, recomputations
included, from -log_view), the median wall time, the model (store-all's wall time plus the extra
TSStep calls at store-all's own time per TSStep) and the peak RSS (largest rank). Every lossless
run's lambda must be bitwise store-all's, a run planned as uncompressed must take the TSStep
calls of the uncompressed run of the same budget, and a run planned with a ratio may not take
more: the command exits 1 otherwise. No timing is asserted.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from petsc_bench import (Config, ex5adj_arguments, finish, load_average,  # noqa: E402
                         program_command, run_interleaved, store_all_model, whole_program_rows)

STORED = re.compile(r"RAM checkpoints compressed by (\w+)[^:]*: [0-9.]+ MiB stored for [0-9.]+ MiB "
                    r"\(([0-9.]+)x\)")
GAINED = re.compile(r"(\d+) RAM checkpoints in the budget of [0-9.]+ MiB, (\d+) without "
                    r"compression")
MOVED = re.compile(r"(\d+) compressed worse than planned and were moved to disk")


def codec_args(codec):
    """A plan's codec, "zstd" or "zstd/3" (a compression level): its words and its options."""
    name, _, level = codec.partition("/")
    args = ["-ts_trajectory_rewind_compress", name]
    if level:
        return f"{name} level {level}", args + ["-ts_trajectory_rewind_compress_level", level]
    return name, args


def configs(n, plans, spill_plans, lossy_plans, lossy_spill_plans, disk):
    """The configurations, each with the name of the uncompressed run of the same budget (RAM
    and disk) it is compared with ("baseline")."""
    memory = ["-ts_trajectory_type", "memory", "-ts_trajectory_solution_only", "0"]
    rewind = ["-ts_trajectory_type", "rewind", "-ts_trajectory_max_cps_ram", str(n)]
    with_disk = ["-ts_trajectory_max_cps_disk", str(disk), "-ts_trajectory_dirname", "checkpoints"]
    plain, plain_disk = "rewind", f"rewind + {disk} disk"
    out = [Config("memory", memory, "petsc", "all N in RAM"),
           Config(plain, rewind, "rewind", f"{n} checkpoints")]
    if spill_plans or lossy_spill_plans:
        out.append(Config(plain_disk, rewind + with_disk, "rewind", f"{n} + {disk} checkpoints"))
    codecs = []
    for codec, _ in plans + spill_plans:
        if codec not in codecs:
            codecs.append(codec)
    for codec, ratio, spill in ([(c, "1", False) for c in codecs] +
                                [(c, r, False) for c, r in plans] +
                                [(c, r, True) for c, r in spill_plans]):
        words, args = codec_args(codec)
        out.append(Config(f"rewind {words} ratio {ratio}" + (f" + {disk} disk" if spill else ""),
                          rewind + args + ["-ts_trajectory_rewind_compress_ratio", ratio] +
                          (with_disk if spill else []), "rewind", f"{n} checkpoints"))
    # Disk compression (on the I/O thread by default with a lossless codec): alone (RAM planned
    # as uncompressed), and the spill plans with it turned off.
    for codec, ratio in spill_plans:
        words, args = codec_args(codec)
        out.append(Config(f"rewind {words} ratio 1 + {disk} disk", rewind + args + with_disk,
                          "rewind", f"{n} checkpoints"))
        out.append(Config(f"rewind {words} ratio {ratio} + {disk} disk, disk uncompressed",
                          rewind + args + ["-ts_trajectory_rewind_compress_ratio", ratio,
                                    "-ts_trajectory_rewind_compress_disk", "0"] + with_disk,
                          "rewind", f"{n} checkpoints"))
    for (tolerance, ratio), spill in ([(p, False) for p in lossy_plans] +
                                      [(p, True) for p in lossy_spill_plans]):
        out.append(Config(f"rewind zfp {tolerance} ratio {ratio}" +
                          (f" + {disk} disk" if spill else ""),
                          rewind + ["-ts_trajectory_rewind_compress", "zfp",
                                    "-ts_trajectory_rewind_compress_tolerance", tolerance,
                                    "-ts_trajectory_rewind_compress_lossy_pullbacks",
                                    "-ts_trajectory_rewind_compress_ratio", ratio] +
                          (with_disk if spill else []),
                          "rewind", f"{n} checkpoints", rtol=1000 * float(tolerance)))
    for cfg in out:
        cfg.baseline = plain_disk if "-ts_trajectory_max_cps_disk" in cfg.args else plain
    return out


def on_the_callers_thread(cfgs):
    """Each configuration with a codec, again with the codec on the caller's thread
    (-ts_trajectory_rewind_async 0; RAM-only plans use no disk), compared with it."""
    twins = []
    for cfg in cfgs:
        if "-ts_trajectory_rewind_compress" not in cfg.args or "-ts_trajectory_max_cps_disk" in cfg.args:
            continue
        twin = Config(f"{cfg.name}, codec on the caller's thread",
                      cfg.args + ["-ts_trajectory_rewind_async", "0"], cfg.kind, cfg.budget,
                      rtol=cfg.rtol)
        twin.baseline = cfg.name
        twins.append(twin)
    return cfgs + twins


def view_numbers(rec):
    """The stored ratio, the RAM checkpoints planned with and without compression, and the
    checkpoints moved to disk, as the view says (None where it does not)."""
    try:
        with open(os.path.join(rec["dir"], "output")) as f:
            text = f.read()
    except OSError:
        return None, None, None
    stored, gained, moved = STORED.search(text), GAINED.search(text), MOVED.search(text)
    return (float(stored.group(2)) if stored else None,
            (int(gained.group(1)), int(gained.group(2))) if gained else None,
            int(moved.group(1)) if moved else None)


def main():
    ap = ex5adj_arguments(__doc__, "build/bench/petsc/compress")
    ap.add_argument("--budget", type=int, default=10)
    ap.add_argument("--plans", default="zstd:1.5,blosc:1.05",
                    help="codec:ratio pairs, each run with that planning ratio; codec/level "
                    "(zstd/3) gives a compression level")
    ap.add_argument("--spill-plans", default="zstd:2",
                    help="codec:ratio pairs run with --disk disk checkpoints, for what does not fit")
    ap.add_argument("--disk", type=int, default=40)
    ap.add_argument("--lossy-plans", default="",
                    help="zfp tolerance:ratio pairs (stages lossy too), no disk budget")
    ap.add_argument("--lossy-spill-plans", default="1e-8:2,1e-6:3",
                    help="zfp tolerance:ratio pairs (stages lossy too), with --disk disk room")
    ap.add_argument("--heat", help="rewind-heat instead of ex5adj")
    ap.add_argument("--callers-thread", action="store_true",
                    help="run each RAM-only configuration with a codec again with the codec on "
                         "the caller's thread (-ts_trajectory_rewind_async 0), compared with it; "
                         "the I/O thread needs a core of its own (e.g. --mpiexec-flags='--map-by "
                         "slot:PE=2' at 1 rank)")
    opts = ap.parse_args()
    opts.ex5adj, opts.rewind_lib = map(os.path.abspath, (opts.ex5adj, opts.rewind_lib))
    program = "heat" if opts.heat else "ex5adj"
    if opts.heat:
        opts.heat = os.path.abspath(opts.heat)
    plans, spill_plans, lossy_plans, lossy_spill_plans = (
        [tuple(p.split(":")) for p in text.split(",") if p]
        for text in (opts.plans, opts.spill_plans, opts.lossy_plans, opts.lossy_spill_plans))
    outputs = ["-ts_adjoint_view_solution", "binary:lambda.bin", "-viewer_binary_skip_info",
               "-ts_trajectory_view"]
    # rewind-heat links rewind itself; ex5adj loads it.
    base = (program_command(opts, program, opts.steps, opts.grid) + ["-ts_adapt_type", "none"] +
            ([] if opts.heat else ["-dll_append", opts.rewind_lib]))
    print(f"# {program} CN, {opts.grid}x{opts.grid}, {opts.steps} steps, {opts.ranks} ranks, "
          f"-ts_trajectory_max_cps_ram {opts.budget}, {opts.reps} repetitions; load average at "
          f"start {load_average()}", flush=True)
    cfgs = configs(opts.budget, plans, spill_plans, lossy_plans, lossy_spill_plans, opts.disk)
    if opts.callers_thread:
        cfgs = on_the_callers_thread(cfgs)
    records = run_interleaved(opts, base, cfgs, os.path.abspath(opts.work), outputs)
    model = store_all_model(records["memory"])
    per_step = model[3]
    failures = []
    rows = whole_program_rows(records, cfgs, model, failures)
    for name, row in rows.items():
        row["stored_ratio"], row["slots"], row["moved"] = view_numbers(records[name][0])
    print(f"\n### {program} CN, {opts.grid}², {opts.steps} steps, {opts.ranks} ranks, "
          f"-ts_trajectory_max_cps_ram {opts.budget} (median of {opts.reps}; model: store-all's "
          f"wall + extra TSStep calls at store-all's {per_step * 1e3:.2f} ms each)\n")
    print("| configuration | stored ratio | RAM checkpoints (without compression) | moved to disk | "
          "TSStep calls | wall s | model s | peak RSS MiB | wall vs baseline (uncompressed, same "
          "budget; or the codec behind) | "
          "lambda error |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for cfg in cfgs:
        r = rows.get(cfg.name)
        if not r:
            continue
        base = rows.get(getattr(cfg, "baseline", ""))
        ratio = f"{r['stored_ratio']:.2f}" if r["stored_ratio"] else ""
        slots = f"{r['slots'][0]} ({r['slots'][1]})" if r["slots"] else ""
        vs = (f"{r['wall'] / base['wall']:.3f} ({cfg.baseline})"
              if base and cfg.kind == "rewind" and "ratio" in cfg.name else "")
        moved = "" if r["moved"] is None else str(r["moved"])
        print(f"| {cfg.name} | {ratio} | {slots} | {moved} | {r['tsstep']} | {r['wall']:.2f} | "
              f"{r['model']:.2f} | {r['rss_mib']:.1f} | {vs} | "
              f"{'%.1e' % r['error'] if cfg.rtol else 'bitwise'} |")
        if not base or "ratio" not in cfg.name:
            continue
        if cfg.name.endswith("ratio 1") and r["tsstep"] != base["tsstep"]:
            failures.append(f"{cfg.name}: {r['tsstep']} TSStep calls, uncompressed "
                            f"{base['tsstep']}: planned as uncompressed, it must plan alike")
        if r["tsstep"] > base["tsstep"]:
            failures.append(f"{cfg.name}: {r['tsstep']} TSStep calls, more than {cfg.baseline} "
                            f"{base['tsstep']}")
    print()
    return finish(opts, rows, failures)

if __name__ == "__main__":
    sys.exit(main())
