#!/usr/bin/python3
"""rewind against PETSc's own trajectories, the disk and the model (ctest label `bench`).

    petsc_bench.py trajectories --program ex5adj --steps 300 --ranks 2 --reps 3 [tools] --json F
    petsc_bench.py events --program ex5adj --steps 300 --ranks 2 --reps 5 [tools] --json F
    petsc_bench.py scale --steps 100,1000,10000,100000 --reps 3 [tools] --json F
    petsc_bench.py plan --steps 1000,...,10000000 --rewind-plan PATH --json F

tools: --mpiexec, --mpiexec-flags, --ex5adj, --heat, --rewind-lib, --rewind-plan, --work DIR.

`trajectories` runs one program (PETSc's tutorial ex5adj built unmodified, rewind loaded with
-dll_append; or rewind-heat) with PETSc's `memory` (store all in RAM) and `basic` (store all
on disk) trajectories, what PETSc 3.18 offers under a budget (`memory` with a RAM budget, which
needs revolve, and `memory` with -ts_trajectory_stride), and rewind under RAM budgets 5, 10, 20,
10 RAM + 30 disk, 4 RAM + 30 disk and 4 RAM + N disk, with and without stages. The runs are
interleaved: each repetition runs every configuration once, in an order rotated from one
repetition to the next. Each rank runs under rank_probe.py (peak RSS and /proc/<pid>/io per rank); -log_view
gives the TSStep calls and the time in steps, adjoint steps and the trajectory; the
trajectory's view gives recomputations, checkpoint counts and I/O wait; rewind-plan gives the
schedule's prediction. Every run's lambda(0) (-ts_adjoint_view_solution, and for rewind-heat
also dJ/dkappa) must be bitwise equal to `memory`'s: the command exits 1 otherwise, and also if
a run's TSStep calls differ from the schedule's predicted forward steps. No timing is asserted.

`events` runs one program with PETSc's `memory` and rewind with no budget (store-all, the
replay check on and off) and sets PETSc's own per-call event times (TSStep, TSAdjointStep,
SNESSolve, KSPSolve, MatMult, VecScale, VecMAXPY) side by side: what the whole program pays.

`scale` runs ex5adj on a small grid (1 rank) with `memory` and with rewind at a fixed RAM budget
for growing N. `plan` times rewind-plan (revolve, online, twolevel) up to N = 10^7.

Python 3 standard library only. Every table is printed as Markdown, with the load average.
"""
import argparse
import hashlib
import json
import math
import os
import re
import shlex
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PROBE = os.path.join(HERE, "rank_probe.py")
MiB = 1024.0 * 1024.0


# ------------------------------------------------------------------------------------------
# Configurations


class Config:
    """One trajectory configuration: its name, the options it adds, and what it is."""

    def __init__(self, name, args, kind, budget="", expect_failure=None, once=False,
                 solution_only=None, needs_plan=False, rtol=None):
        self.name = name
        # Lossy checkpoints: lambda within rtol of store-all's (normwise, relative), not its bits.
        self.rtol = rtol
        self.args = args
        self.kind = kind  # "petsc", "rewind" or "forward"
        self.budget = budget
        self.expect_failure = expect_failure  # regex the failing run's output must match
        self.once = once  # run in the first repetition only (an expected failure)
        self.solution_only = solution_only
        self.needs_plan = needs_plan


def trajectory_configs(program, steps, rewind_lib):
    memory = ["-ts_trajectory_type", "memory", "-ts_trajectory_solution_only", "0"]
    out = []
    if program == "ex5adj":
        out.append(Config("forward only", ["-forwardonly"], "forward", "no adjoint"))
    out += [
        Config("memory", memory, "petsc", "all N in RAM"),
        Config("basic", ["-ts_trajectory_type", "basic", "-ts_trajectory_solution_only", "0",
                         "-ts_trajectory_dirname", "basic-ckpt"], "petsc", "all N on disk"),
        Config("memory stride 10", ["-ts_trajectory_type", "memory",
                                    "-ts_trajectory_solution_only", "0",
                                    "-ts_trajectory_stride", "10",
                                    "-ts_trajectory_dirname", "stride-ckpt"], "petsc",
               f"N/10 = {steps // 10} on disk + 10 in RAM"),
    ]
    if steps > 10:  # PETSc's memory type with fewer slots than steps needs its revolve package
        out.append(Config("memory RAM 10", memory + ["-ts_trajectory_max_cps_ram", "10"], "petsc",
                          "10 in RAM", expect_failure="revolve is needed", once=True))
    rewind = ["-ts_trajectory_type", "rewind"]
    if program == "ex5adj":
        rewind = ["-dll_append", rewind_lib] + rewind
    # Disk budgets plan with the disk costs rewind measures (the default since 2026-11-27: a
    # probe write and read of one checkpoint against the second step's time).
    budgets = [
        ("RAM 5", "5 in RAM", ["-ts_trajectory_max_cps_ram", "5"]),
        ("RAM 10", "10 in RAM", ["-ts_trajectory_max_cps_ram", "10"]),
        ("RAM 20", "20 in RAM", ["-ts_trajectory_max_cps_ram", "20"]),
        # The storage PETSc's stride 10 uses at 300 steps: its only budgeted choice here.
        ("10 RAM + 30 disk", "10 in RAM + 30 on disk",
         ["-ts_trajectory_max_cps_ram", "10", "-ts_trajectory_max_cps_disk", "30",
          "-ts_trajectory_dirname", "rewind-ckpt"]),
        ("4 RAM + 30 disk", "4 in RAM + 30 on disk",
         ["-ts_trajectory_max_cps_ram", "4", "-ts_trajectory_max_cps_disk", "30",
          "-ts_trajectory_dirname", "rewind-ckpt"]),
        ("4 RAM + N disk", f"4 in RAM + {steps} on disk",
         ["-ts_trajectory_max_cps_ram", "4", "-ts_trajectory_max_cps_disk", str(steps),
          "-ts_trajectory_dirname", "rewind-ckpt"]),
    ]
    # The same runs without the replay check, to price it in the same run of the benchmark; and
    # the disk-heavy budget with the costs given as before 2026-11-27 (1 step a write or read).
    twins = [
        ("RAM 10, no replay check", "10 in RAM",
         ["-ts_trajectory_max_cps_ram", "10", "-ts_trajectory_rewind_verify", "0"]),
        ("RAM 20, no replay check", "20 in RAM",
         ["-ts_trajectory_max_cps_ram", "20", "-ts_trajectory_rewind_verify", "0"]),
        ("4 RAM + N disk, no replay check", f"4 in RAM + {steps} on disk",
         ["-ts_trajectory_max_cps_ram", "4", "-ts_trajectory_max_cps_disk", str(steps),
          "-ts_trajectory_dirname", "rewind-ckpt", "-ts_trajectory_rewind_verify", "0"]),
        ("4 RAM + N disk, given costs 1", f"4 in RAM + {steps} on disk",
         ["-ts_trajectory_max_cps_ram", "4", "-ts_trajectory_max_cps_disk", str(steps),
          "-ts_trajectory_dirname", "rewind-ckpt", "-ts_trajectory_rewind_write_cost", "1",
          "-ts_trajectory_rewind_read_cost", "1"]),
    ]
    for label, budget, args in twins:
        out.append(Config(f"rewind {label}", rewind + args + ["-ts_trajectory_solution_only", "0"],
                          "rewind", budget, solution_only=0, needs_plan=True))
    for so in (0, 1):
        for label, budget, args in budgets:
            name = f"rewind {label}" + (", solution only" if so else "")
            out.append(Config(name, rewind + args + ["-ts_trajectory_solution_only", str(so)],
                              "rewind", budget, solution_only=so, needs_plan=True))
    return out


def program_command(opts, program, steps, grid=None):
    """The program and the options every configuration shares."""
    if program == "ex5adj":
        g = str(grid or 128)
        # dt = 0.5 (the tutorial's); the final time is set far out so -ts_max_steps ends the run.
        return [opts.ex5adj, "-da_grid_x", g, "-da_grid_y", g, "-ts_type", "cn",
                "-ts_max_steps", str(steps), "-ts_max_time", str(0.5 * steps + 1.0)]
    if program == "heat":
        dt = 0.5 / steps  # rewind-heat's final time 0.5 in `steps` steps
        args = [opts.heat, "-ts_type", "cn", "-ts_dt", repr(dt), "-ts_max_time", "0.5",
                "-progress", "0"]
        if grid:
            args += ["-da_grid_x", str(grid), "-da_grid_y", str(grid)]
        return args
    raise SystemExit(f"unknown program {program}")


# ------------------------------------------------------------------------------------------
# Running and parsing


def load_average():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


EVENT = re.compile(r"^(\w+)\s+(\d+)\s+[\d.]+\s+([0-9.]+e[-+]\d+)\s")
TIME_LINE = re.compile(r"^Time \(sec\):\s+([0-9.]+e[-+]\d+)")


def parse_log_view(text):
    """-log_view: the total time (max over ranks) and each event's count and time (max)."""
    out = {"events": {}}
    for line in text.splitlines():
        m = TIME_LINE.match(line)
        if m:
            out["total"] = float(m.group(1))
            continue
        m = EVENT.match(line)
        if m:
            out["events"][m.group(1)] = {"count": int(m.group(2)), "time": float(m.group(3))}
    return out


def parse_view(text):
    """The trajectory's -ts_trajectory_view (PETSc's lines and rewind's)."""
    v = {}
    pats = {
        "petsc_recomputations": r"recomputations for adjoint calculation = (\d+)",
        "petsc_disk_reads": r"disk checkpoint reads = (\d+)",
        "petsc_disk_writes": r"disk checkpoint writes = (\d+)",
    }
    for key, pat in pats.items():
        m = re.search(pat, text)
        if m:
            v[key] = int(m.group(1))
    m = re.search(r"rewind: schedule (\S+), budget (\S+) RAM \+ (\S+) disk", text)
    if m:
        v["schedule"] = m.group(1).rstrip(",")
        v["ram_budget"], v["disk_budget"] = m.group(2), m.group(3)
    m = re.search(r"disk costs in forward steps: write ([0-9.e+-]+), read ([0-9.e+-]+)", text)
    if m:
        v["write_cost"], v["read_cost"] = float(m.group(1)), float(m.group(2))
    v["stores_stages"] = "hold one step's stages" in text
    m = re.search(r"steps (\d+), forward steps (\d+), recomputations (\d+), adjoint steps (\d+)",
                  text)
    if m:
        v["steps"], v["forward_steps"], v["recomputations"], v["adjoint_steps"] = map(
            int, m.groups())
    for level in ("RAM", "disk"):
        m = re.search(level + r" checkpoints: (\d+) written, (\d+) read, peak (\d+) \(budget [^)]*"
                      r"\), peak ([0-9.]+) MiB", text)
        if m:
            k = level.lower()
            v[k + "_writes"], v[k + "_reads"], v[k + "_peak"] = map(int, m.groups()[:3])
            v[k + "_peak_mib"] = float(m.group(4))
    m = re.search(r"bytes written: RAM ([0-9.]+) MiB, disk ([0-9.]+) MiB", text)
    if m:
        v["ram_written_mib"], v["disk_written_mib"] = float(m.group(1)), float(m.group(2))
    m = re.search(r"time on the caller's thread: rewind ([0-9.]+) s \(([0-9.]+) % of the ([0-9.]+) s"
                  r"[^;]*; (?:I/O wait|storing and restoring checkpoints, RAM copies and disk I/O,) "
                  r"([0-9.]+) s of it\), recomputed steps ([0-9.]+) s; disk I/O "
                  r"overlapped with computing ([0-9.]+) s", text)
    if m:
        (v["rewind_s"], v["rewind_pct"], v["run_s"], v["io_wait_s"], v["recompute_s"],
         v["io_overlap_s"]) = map(float, m.groups())
    m = re.search(r"hashing ([0-9.]+) s", text)
    if m:
        v["verify_s"] = float(m.group(1))
    m = re.search(r"disk I/O: (.*)", text)
    if m:
        v["io_mode"] = m.group(1).strip()
    return v


def file_digest(path):
    if not os.path.exists(path):
        return None
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def read_petsc_vec(path):
    """The values of a PETSc binary Vec file written with -viewer_binary_skip_info (the class id
    and the length, big-endian int32s, then the values, big-endian doubles), or None."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    if len(data) < 8:
        return None
    n = struct.unpack(">i", data[4:8])[0]
    if len(data) < 8 + 8 * n:
        return None
    return struct.unpack(f">{n}d", data[8:8 + 8 * n])


def relative_error(path, reference):
    """||a - b||_2 / ||b||_2 of two PETSc binary Vec files, or None if either is unreadable."""
    a, b = read_petsc_vec(path), read_petsc_vec(reference)
    if a is None or b is None or len(a) != len(b):
        return None
    diff = math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b)))
    norm = math.sqrt(sum(y * y for y in b))
    return diff / norm if norm > 0 else diff


def heat_kappa_digest(rundir):
    """dJ/dkappa of a rewind-heat run, its raw doubles extracted from -gradient_out by h5dump."""
    src = os.path.join(rundir, "gradient.h5")
    if not os.path.exists(src) or not shutil.which("h5dump"):
        return None
    out = os.path.join(rundir, "grad_kappa.bin")
    subprocess.run(["h5dump", "-d", "/grad_kappa", "-b", "LE", "-o", out, src],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return file_digest(out)


def run_one(opts, base_cmd, cfg, ranks, rundir, outputs, timeout):
    """Runs one configuration in a fresh directory; returns its record."""
    shutil.rmtree(rundir, ignore_errors=True)
    os.makedirs(rundir)
    probe_dir = os.path.join(rundir, "probe")
    args = list(cfg.args)
    if cfg.kind != "forward":
        args += outputs
    cmd = ([opts.mpiexec, "-n", str(ranks)] + shlex.split(opts.mpiexec_flags) +
           [sys.executable, PROBE, probe_dir, "--"] + base_cmd + args + ["-log_view"])
    with open(os.path.join(rundir, "command"), "w") as f:
        f.write(shlex.join(cmd) + "\n")
    load = load_average()
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, cwd=rundir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, timeout=timeout)
        status, text = p.returncode, p.stdout
    except subprocess.TimeoutExpired as e:
        status, text = "timeout", (e.stdout or b"").decode(errors="replace")
    wall = time.monotonic() - t0
    with open(os.path.join(rundir, "output"), "w") as f:
        f.write(text)
    rec = {"config": cfg.name, "kind": cfg.kind, "status": status, "wall": wall,
           "load_before": load, "dir": rundir}
    if status != 0:
        rec["error"] = "\n".join(l for l in text.splitlines() if "PETSC ERROR" in l)[:2000]
        return rec
    rec["log"] = parse_log_view(text)
    rec["view"] = parse_view(text)
    ranks_data = []
    for r in range(ranks):
        path = os.path.join(probe_dir, f"rank{r}.json")
        if os.path.exists(path):
            with open(path) as f:
                ranks_data.append(json.load(f))
    rec["ranks"] = ranks_data
    rec["lambda"] = file_digest(os.path.join(rundir, "lambda.bin"))
    rec["lambda_path"] = os.path.join(rundir, "lambda.bin")
    if "-gradient_out" in args:
        rec["kappa"] = heat_kappa_digest(rundir)
    return rec


def ex5adj_arguments(doc, work):
    """The command line every ex5adj comparison takes; the caller adds its own."""
    ap = argparse.ArgumentParser(description=doc,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mpiexec", default="mpiexec")
    ap.add_argument("--mpiexec-flags", default="")
    ap.add_argument("--ex5adj", required=True)
    ap.add_argument("--rewind-lib", required=True)
    ap.add_argument("--work", default=work)
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--grid", type=int, default=128)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=1800)
    ap.add_argument("--json")
    return ap


def run_interleaved(opts, base_cmd, cfgs, work, outputs, label=""):
    """Runs each configuration opts.reps times at opts.ranks ranks, after one uncounted warm-up
    run of the first (a cold page cache): each repetition runs every configuration once, in an
    order rotated from one repetition to the next. Returns {name: [records]}."""
    records = {c.name: [] for c in cfgs}
    run_one(opts, base_cmd, cfgs[0], opts.ranks, os.path.join(work, "warm-up"), outputs,
            opts.timeout)
    for rep in range(opts.reps):
        k = rep % len(cfgs)
        for cfg in cfgs[k:] + cfgs[:k]:
            rundir = os.path.join(work, re.sub(r"[^A-Za-z0-9]+", "_", cfg.name), f"rep{rep}")
            rec = run_one(opts, base_cmd, cfg, opts.ranks, rundir, outputs, opts.timeout)
            records[cfg.name].append(rec)
            print(f"  {label}rep {rep}: {cfg.name:24s} {rec['wall']:8.2f} s  "
                  f"{'ok' if rec['status'] == 0 else 'exit ' + str(rec['status'])}", flush=True)
    return records


def store_all_model(mem):
    """Store-all's (PETSc's memory) runs: its lambda digest, median wall time, TSStep calls and
    time per TSStep, what the whole-program model is built from."""
    mem_steps = event(mem[0], "TSStep", "count")
    return (mem[0].get("lambda"), med([r["wall"] for r in mem]), mem_steps,
            med([event(r, "TSStep") for r in mem]) / max(mem_steps, 1), mem[0].get("lambda_path"))


def peak_rss_mib(rec):
    return max((r.get("peak_rss_kib", 0) for r in rec.get("ranks", [])), default=0) / 1024.0


def whole_program_rows(records, cfgs, model, failures, label=""):
    """Per configuration whose runs all passed with store-all's lambda: its TSStep calls, median
    wall time, peak RSS (largest rank) and the model's time (store_all_model()'s store-all wall
    plus the extra TSStep calls at its time per TSStep). A run that failed or whose lambda
    differs is added to `failures` instead; for a configuration with an rtol (lossy checkpoints),
    lambda must be within it of store-all's, and the row gives the largest error."""
    ref, mem_wall, mem_steps, per_step, ref_path = model
    rows = {}
    for cfg in cfgs:
        recs = records[cfg.name]
        errors = []
        if cfg.rtol is not None:
            errors = [relative_error(r.get("lambda_path", ""), ref_path) for r in recs]
            bad = [r for r, e in zip(recs, errors)
                   if r["status"] != 0 or e is None or e > cfg.rtol]
        else:
            bad = [r for r in recs if r["status"] != 0 or r.get("lambda") != ref]
        if bad:
            failures.append(f"{label}{cfg.name}: failed or lambda not store-all's "
                            f"({bad[0].get('error', '')[:300]})")
            continue
        steps = event(recs[0], "TSStep", "count")
        rows[cfg.name] = {"tsstep": steps, "wall": med([r["wall"] for r in recs]),
                          "rss_mib": med(map(peak_rss_mib, recs)),
                          "model": mem_wall + (steps - mem_steps) * per_step,
                          "error": max(errors) if errors else 0.0}
    return rows


def finish(opts, results, failures):
    """The closing lines of a comparison: the load, the JSON file, the failures; the exit code."""
    print(f"load average at end {load_average()}; "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump({"results": results, "failures": failures}, f, indent=1)
    for f in failures:
        print("FAIL: " + f)
    return 1 if failures else 0


def event(rec, name, what="time"):
    return rec.get("log", {}).get("events", {}).get(name, {}).get(what, 0)


def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def plan_prediction(opts, steps, view):
    """rewind-plan's prediction for the schedule and budget a run reports."""
    if "schedule" not in view:
        return None
    disk = view.get("disk_budget", "0")
    disk = "inf" if disk == "unlimited" else disk
    ram = view.get("ram_budget", "0")
    # rewind-plan refuses more slots than steps; the trajectory uses at most one a step.
    ram = str(steps) if ram == "unlimited" or (ram.isdigit() and int(ram) > steps) else ram
    cmd = [opts.rewind_plan, "--steps", str(steps), "--ram", ram, "--disk", disk,
           "--write-cost", repr(view.get("write_cost", 1.0)),
           "--read-cost", repr(view.get("read_cost", 1.0)),
           "--schedule", view["schedule"], "--json"]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        return {"error": p.stderr.strip(), "command": shlex.join(cmd)}
    out = json.loads(p.stdout)
    out["command"] = shlex.join(cmd)
    return out


# ------------------------------------------------------------------------------------------
# trajectories


def summarise(records, cfg):
    ok = [r for r in records if r["status"] == 0]
    if not ok:
        return None
    ranks = len(ok[0]["ranks"])
    s = {
        "config": cfg.name, "kind": cfg.kind, "budget": cfg.budget, "runs": len(ok),
        "wall": med([r["wall"] for r in ok]),
        "wall_min": min(r["wall"] for r in ok), "wall_max": max(r["wall"] for r in ok),
        "log_total": med([r["log"].get("total") for r in ok]),
        "tsstep_calls": med([event(r, "TSStep", "count") for r in ok]),
        "tsstep_time": med([event(r, "TSStep") for r in ok]),
        "adjoint_time": med([event(r, "TSAdjointStep") for r in ok]),
        "set_time": med([event(r, "TSTrajectorySet") for r in ok]),
        "get_time": med([event(r, "TSTrajectoryGet") for r in ok]),
        "recompute_event_time": med([event(r, "RewindRecompute") for r in ok]),
        # Time inside the trajectory's set and get that is not a recomputed step: copies,
        # restores, bookkeeping, hashing, planning, I/O waits (memory: its copies).
        "trajectory_time": med([event(r, "TSTrajectorySet") + event(r, "TSTrajectoryGet")
                                - event(r, "RewindRecompute") for r in ok]),
        "trajectory_fraction": med([(event(r, "TSTrajectorySet") + event(r, "TSTrajectoryGet")
                                     - event(r, "RewindRecompute")) / r["log"]["total"]
                                    for r in ok if r.get("log", {}).get("total")]),
        "rss_mib": [med([r["ranks"][k]["peak_rss_kib"] / 1024.0 for r in ok])
                    for k in range(ranks)],
        "cpu_s": [med([r["ranks"][k]["user_seconds"] + r["ranks"][k]["system_seconds"]
                       for r in ok]) for k in range(ranks)],
        "wchar_mib": med([sum(x["wchar"] or 0 for x in r["ranks"]) / MiB for r in ok]),
        "rchar_mib": med([sum(x["rchar"] or 0 for x in r["ranks"]) / MiB for r in ok]),
        "view": ok[-1]["view"],
        "loads": [r["load_before"] for r in ok],
    }
    s["rss_max_mib"] = max(s["rss_mib"])
    return s


def model_of(rec, mem_rec, steps, predicted_fwd):
    """The model's wall time for one rewind run, from `memory`'s run in the same repetition:
    its time outside the steps and the trajectory (setup, output), its step time times the
    schedule's predicted forward steps, its adjoint-step time, plus the I/O wait the rewind run
    did not hide. Also the rewind run's own overhead: its wall time less that time outside,
    less its own TSStep, TSAdjointStep and I/O wait (what is left is rewind's bookkeeping,
    copies, restores, the replay check's hashing and the planning)."""
    setup = (mem_rec["log"]["total"] - event(mem_rec, "TSStep") - event(mem_rec, "TSAdjointStep")
             - event(mem_rec, "TSTrajectorySet") - event(mem_rec, "TSTrajectoryGet"))
    step = event(mem_rec, "TSStep") / steps
    io = rec["view"].get("io_wait_s", 0.0)
    predicted = setup + step * predicted_fwd + event(mem_rec, "TSAdjointStep") + io
    measured = rec["log"]["total"]
    overhead = measured - setup - event(rec, "TSStep") - event(rec, "TSAdjointStep") - io
    # The same model with the run's own mean step and adjoint-step times: it does not depend on
    # how loaded the machine was during memory's run.
    own_step = event(rec, "TSStep") / max(event(rec, "TSStep", "count"), 1)
    own = setup + own_step * predicted_fwd + event(rec, "TSAdjointStep") + io
    return {"setup": setup, "step": step, "io_wait": io, "predicted": predicted,
            "measured": measured, "ratio": measured / predicted, "overhead": overhead,
            "overhead_fraction": overhead / measured, "own_step": own_step,
            "own_predicted": own, "own_ratio": measured / own}


def fmt(v, digits=2):
    if v is None:
        return "—"
    if isinstance(v, int):
        return f"{v:,}".replace(",", " ")
    return f"{v:.{digits}f}"


def cmd_trajectories(opts):
    program, steps, ranks = opts.program, opts.steps, opts.ranks
    base = program_command(opts, program, steps, opts.grid)
    configs = trajectory_configs(program, steps, opts.rewind_lib)
    if opts.configs:
        keep = re.compile(opts.configs)
        configs = [c for c in configs if c.name in ("memory", "basic") or keep.search(c.name)]
    outputs = ["-ts_adjoint_view_solution", "binary:lambda.bin", "-viewer_binary_skip_info",
               "-ts_trajectory_view"]
    if program == "heat":
        outputs += ["-gradient_out", "gradient.h5"]
    work = os.path.join(opts.work, f"{program}-n{steps}-np{ranks}")
    os.makedirs(work, exist_ok=True)
    print(f"# {program}, {steps} steps, {ranks} ranks, {opts.reps} repetitions; "
          f"load average at start {load_average()}", flush=True)
    print("# common command: " + shlex.join([opts.mpiexec, "-n", str(ranks)] +
                                             shlex.split(opts.mpiexec_flags) + base), flush=True)
    records = {c.name: [] for c in configs}
    order = [c for c in configs]
    # One run of memory first, not counted: the first run after a while pays for a cold page
    # cache and memory the host took back, which made memory slower than recomputing runs.
    warm = next(c for c in configs if c.name == "memory")
    rec = run_one(opts, base, warm, ranks, os.path.join(work, "warm-up"), outputs, opts.timeout)
    print(f"  warm-up: {warm.name:44s} {rec['wall']:8.2f} s  (not counted)", flush=True)
    for rep in range(opts.reps):
        rotated = order[rep % len(order):] + order[:rep % len(order)]
        for cfg in rotated:
            if cfg.once and rep > 0:
                continue
            rundir = os.path.join(work, re.sub(r"[^A-Za-z0-9]+", "_", cfg.name), f"rep{rep}")
            rec = run_one(opts, base, cfg, ranks, rundir, outputs, opts.timeout)
            rec["rep"] = rep
            records[cfg.name].append(rec)
            status = "ok" if rec["status"] == 0 else f"exit {rec['status']}"
            print(f"  rep {rep}: {cfg.name:44s} {rec['wall']:8.2f} s  {status}  "
                  f"(load {rec['load_before']})", flush=True)
    meta = {"load_start": records[configs[0].name][0]["load_before"], "load_end": load_average(),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    return analyse_trajectories(opts, configs, records, meta)


def analyse_trajectories(opts, configs, records, meta):
    """Checks, summaries, the model and the tables of one `trajectories` run; writes --json."""
    program, steps, ranks = opts.program, opts.steps, opts.ranks
    failures = []
    # The gradient of every run against memory's first run.
    ref = next((r for r in records["memory"] if r["status"] == 0), None)
    if ref is None:
        raise SystemExit("the memory baseline did not run; nothing to compare with")
    for cfg in configs:
        for r in records[cfg.name]:
            if cfg.expect_failure:
                r["expected_failure_seen"] = (r["status"] != 0 and re.search(
                    cfg.expect_failure, r.get("error", "")) is not None)
                if not r["expected_failure_seen"]:
                    failures.append(f"{cfg.name}: expected a failure matching "
                                    f"'{cfg.expect_failure}'")
                continue
            if r["status"] != 0:
                failures.append(f"{cfg.name} rep {r['rep']}: exit {r['status']}: "
                                f"{r.get('error', '')}")
                continue
            if cfg.kind == "forward":
                continue
            r["gradient_equal"] = r["lambda"] == ref["lambda"] and r["lambda"] is not None
            if program == "heat":
                r["gradient_equal"] = r["gradient_equal"] and r.get("kappa") == ref.get(
                    "kappa") and r.get("kappa") is not None
            if not r["gradient_equal"]:
                failures.append(f"{cfg.name} rep {r['rep']}: gradient differs from memory's")

    summaries = {c.name: summarise(records[c.name], c) for c in configs}
    mem, basic = summaries["memory"], summaries["basic"]

    # The model: predicted forward steps and wall time, per rewind run (auto disk costs are
    # measured in each run, so each run is predicted with its own costs).
    predictions = {}
    cache = {}
    for cfg in configs:
        if not cfg.needs_plan or summaries[cfg.name] is None:
            continue
        models = []
        for r in records[cfg.name]:
            if r["status"] != 0:
                continue
            v = r["view"]
            key = (v.get("schedule"), v.get("ram_budget"), v.get("disk_budget"),
                   v.get("write_cost"), v.get("read_cost"))
            if key not in cache:
                cache[key] = plan_prediction(opts, steps, v)
            pred = cache[key]
            r["prediction"] = pred
            predictions.setdefault(cfg.name, pred)
            if pred is None or "error" in pred:
                failures.append(f"{cfg.name} rep {r['rep']}: no prediction: {pred}")
                continue
            calls = event(r, "TSStep", "count")
            r["predicted_fwd"] = pred["fwd_total"]
            r["counts_match"] = (calls == pred["fwd_total"]
                                 and v.get("forward_steps") == pred["fwd_total"])
            if not r["counts_match"]:
                failures.append(f"{cfg.name} rep {r['rep']}: TSStep calls {calls}, view forward "
                                f"steps {v.get('forward_steps')}, predicted {pred['fwd_total']}")
            mem_rec = next((m for m in records["memory"] if m["rep"] == r["rep"] and
                            m["status"] == 0), ref)
            r["model"] = model_of(r, mem_rec, steps, pred["fwd_total"])
            models.append(r)
        s = summaries[cfg.name]
        if not models:
            continue
        s["predicted_fwd"] = med([r["predicted_fwd"] for r in models])
        s["predicted_fwd_all"] = sorted({r["predicted_fwd"] for r in models})
        s["schedules"] = sorted({r["view"].get("schedule") for r in models})
        for key in ("ratio", "predicted", "measured", "overhead", "overhead_fraction", "step",
                    "own_step", "io_wait", "own_predicted", "own_ratio"):
            s["model_" + key] = med([r["model"][key] for r in models])
        for key in ("write_cost", "read_cost", "io_wait_s", "io_overlap_s", "verify_s",
                    "recompute_s", "ram_writes", "ram_reads", "disk_writes", "disk_reads",
                    "ram_peak", "disk_peak", "ram_peak_mib", "disk_peak_mib", "disk_written_mib"):
            s["view_" + key] = med([r["view"].get(key) for r in models])

    print_trajectory_tables(opts, configs, summaries, records, mem, basic)
    # Figures that say the baseline and the runs did not see the same machine.
    doubtful = []
    for name, s in summaries.items():
        if not s or s.get("model_overhead") is None:
            continue
        if s["model_overhead"] < 0 or not 0.9 <= s["model_ratio"] <= 1.1:
            doubtful.append(f"{name}: overhead {s['model_overhead']:.2f} s, measured / model "
                            f"{s['model_ratio']:.3f}")
    if doubtful:
        print(f"\nWARNING: the model does not hold for these runs (negative overhead, or measured "
              f"more than 10 % from the model): memory's step time, from the same repetition, "
              f"was not theirs. A loaded or noisy host, or too few repetitions "
              f"(--reps {opts.reps}); use --reps 3 or more on a quiet host:")
        for d in doubtful:
            print("  " + d)
    if failures:
        print("\nFAILURES:")
        for f in failures:
            print("  " + f)
    result = {"bench": "petsc_trajectories", "program": program, "steps": steps, "ranks": ranks,
              "reps": opts.reps, "grid": opts.grid, **meta, "summaries": summaries,
              "predictions": predictions, "records": records, "failures": failures}
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump(result, f, indent=1)
    print(f"\n{meta['date']}; load average {meta['load_start']} at the start, "
          f"{meta['load_end']} at the end")
    return 1 if failures else 0


def cmd_report(opts):
    """The tables of an earlier `trajectories` run, from its JSON file."""
    with open(opts.input) as f:
        old = json.load(f)
    if old.get("bench") != "petsc_trajectories":
        raise SystemExit(f"{opts.input} is not a trajectories result")
    for key in ("program", "steps", "ranks", "reps", "grid"):
        setattr(opts, key, old[key])
    records = old["records"]
    configs = [c for c in trajectory_configs(opts.program, opts.steps, opts.rewind_lib)
               if c.name in records]
    meta = {"load_start": old.get("load_start", records[configs[0].name][0]["load_before"]),
            "load_end": old["load_end"], "date": old["date"]}
    return analyse_trajectories(opts, configs, records, meta)


def print_trajectory_tables(opts, configs, summaries, records, mem, basic):
    steps = opts.steps
    print(f"\n## {opts.program}, N = {steps}, {opts.ranks} ranks: medians of {opts.reps} "
          f"(ratios against memory and basic measured in the same run)\n")
    print("| trajectory | checkpoints | wall s (min–max) | / memory | / basic | CPU s, max rank | "
          "TSStep calls | recomputed | peak RSS MiB per rank | RSS / memory | RSS / basic | "
          "written MiB | read MiB | gradient |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for cfg in configs:
        s = summaries[cfg.name]
        if cfg.expect_failure:
            r = records[cfg.name][0]
            seen = "fails as expected" if r.get("expected_failure_seen") else "DID NOT FAIL"
            lines = [l for l in r.get("error", "").split("\n") if re.search(cfg.expect_failure, l)]
            msg = re.sub(r"^\[\d+\]PETSC ERROR: ", "", lines[0] if lines else "")
            msg = msg.split(" when ")[0] if len(msg) > 60 else msg
            print(f"| {cfg.name} | {cfg.budget} | {seen}: \"{msg.strip()}\" |  |  |  |  |  |  |"
                  f"  |  |  |  |  |")
            continue
        if s is None:
            print(f"| {cfg.name} | {cfg.budget} | FAILED | | | | | | | | | | | |")
            continue
        calls = s["tsstep_calls"]
        recomputed = calls - steps if cfg.kind != "forward" else None
        rss = " / ".join(f"{x:.1f}" for x in s["rss_mib"])
        ok = [r.get("gradient_equal") for r in records[cfg.name] if r["status"] == 0]
        grad = "—" if cfg.kind == "forward" else (
            "bitwise = memory" if all(ok) else f"DIFFERS ({ok.count(False)} of {len(ok)})")
        print(f"| {cfg.name} | {cfg.budget} | {s['wall']:.2f} ({s['wall_min']:.2f}–"
              f"{s['wall_max']:.2f}) | {s['wall'] / mem['wall']:.2f} | "
              f"{s['wall'] / basic['wall']:.2f} | {max(s['cpu_s']):.1f} | {fmt(int(calls))} | "
              f"{fmt(int(recomputed)) if recomputed is not None else '—'} | {rss} | "
              f"{s['rss_max_mib'] / mem['rss_max_mib']:.2f} | "
              f"{s['rss_max_mib'] / basic['rss_max_mib']:.2f} | {s['wchar_mib']:.1f} | "
              f"{s['rchar_mib']:.1f} | {grad} |")

    print(f"\n## {opts.program}, N = {steps}: rewind against the model (medians)\n")
    print("| trajectory | schedule (disk costs w, r) | predicted forward steps | TSStep calls | "
          "view: forward steps | equal | RAM w/r (peak) | disk w/r (peak) | I/O wait s | "
          "model s | measured s | measured / model | own-step model s | measured / own-step "
          "model | overhead s (% of wall) | in set/get, not recomputing: s (% of wall) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for cfg in configs:
        s = summaries.get(cfg.name)
        if not cfg.needs_plan or s is None or "predicted_fwd" not in s:
            continue
        eq = all(r.get("counts_match") for r in records[cfg.name] if r["status"] == 0)
        preds = s["predicted_fwd_all"]
        pred = fmt(preds[0]) if len(preds) == 1 else " to ".join(fmt(x) for x in
                                                                   (preds[0], preds[-1]))
        def span(values):
            values = sorted(set(values))
            return fmt(values[0]) if len(values) == 1 else f"{fmt(values[0])} to {fmt(values[-1])}"

        ok = [r for r in records[cfg.name] if r["status"] == 0]
        calls = span(event(r, "TSStep", "count") for r in ok)
        viewed = span(r["view"].get("forward_steps", -1) for r in ok)
        costs = ""
        if s.get("view_disk_writes") is not None and "disk" in cfg.budget:
            costs = f" ({s['view_write_cost']:.3g}, {s['view_read_cost']:.3g})"
        print(f"| {cfg.name} | {'/'.join(s['schedules'])}{costs} | {pred} | {calls} | "
              f"{viewed} | {'yes' if eq else 'NO'} | {fmt(s['view_ram_writes'], 0)}/"
              f"{fmt(s['view_ram_reads'], 0)} ({fmt(s['view_ram_peak'], 0)}) | "
              f"{fmt(s['view_disk_writes'], 0)}/{fmt(s['view_disk_reads'], 0)} "
              f"({fmt(s['view_disk_peak'], 0)}) | {s['model_io_wait']:.3f} | "
              f"{s['model_predicted']:.2f} | {s['model_measured']:.2f} | "
              f"{s['model_ratio']:.3f} | {s['model_own_predicted']:.2f} | "
              f"{s['model_own_ratio']:.3f} | {s['model_overhead']:.2f} "
              f"({100 * s['model_overhead_fraction']:.1f} %) | {s['trajectory_time']:.3f} "
              f"({100 * s['trajectory_fraction']:.2f} %) |")
    mem_step = statistics.median(event(r, "TSStep") / steps for r in records["memory"]
                                 if r["status"] == 0)
    print(f"\n(model = memory's run in the same repetition: its time outside steps, adjoint steps "
          f"and trajectory + its step time ({1e3 * mem_step:.2f} ms, median) × the predicted "
          f"forward steps + its adjoint-step time; plus the rewind run's unhidden I/O wait. "
          f"measured = -log_view's total time. own-step model: the same with the run's own mean "
          f"TSStep and its TSAdjointStep time. overhead = measured − memory's time outside − the "
          f"run's own TSStep, TSAdjointStep and I/O wait. In set/get, not recomputing: "
          f"TSTrajectorySet + TSTrajectoryGet − RewindRecompute (-log_view, slowest rank), "
          f"which includes the I/O wait; for PETSc's memory "
          f"{mem['trajectory_time']:.3f} s ({100 * mem['trajectory_fraction']:.2f} %), basic "
          f"{basic['trajectory_time']:.3f} s ({100 * basic['trajectory_fraction']:.2f} %).)")


# ------------------------------------------------------------------------------------------
# events: PETSc's own events, rewind store-all against memory


EVENTS = ("TSStep", "TSAdjointStep", "SNESSolve", "KSPSolve", "MatMult", "VecScale", "VecMAXPY")


def cmd_events(opts):
    """rewind with no budget (store-all, replay check on and off) against PETSc's memory, on the
    whole program: PETSc's own per-call event times from -log_view, wall time and peak RSS. What
    rewind must not do is slow the program's own solver between its calls (a dirty vector unit
    once made VecScale 8x slower while rewind's timers saw nothing)."""
    program, steps, ranks = opts.program, opts.steps, opts.ranks
    base = program_command(opts, program, steps, opts.grid)
    rewind = ["-ts_trajectory_type", "rewind"]
    if program == "ex5adj":
        rewind = ["-dll_append", opts.rewind_lib] + rewind
    configs = [
        Config("memory", ["-ts_trajectory_type", "memory", "-ts_trajectory_solution_only", "0"],
               "petsc", "all N in RAM"),
        Config("rewind store-all", rewind, "rewind", "all N in RAM"),
        Config("rewind store-all, no replay check",
               rewind + ["-ts_trajectory_rewind_verify", "0"], "rewind", "all N in RAM"),
    ]
    outputs = ["-ts_adjoint_view_solution", "binary:lambda.bin", "-viewer_binary_skip_info",
               "-ts_trajectory_view"]
    if program == "heat":
        outputs += ["-gradient_out", "gradient.h5"]
    work = os.path.join(opts.work, f"events-{program}-n{steps}-np{ranks}")
    print(f"# events: {program}, {steps} steps, {ranks} ranks, {opts.reps} repetitions; load "
          f"average at start {load_average()}", flush=True)
    print("# common command: " + shlex.join([opts.mpiexec, "-n", str(ranks)] +
                                             shlex.split(opts.mpiexec_flags) + base), flush=True)
    records = {c.name: [] for c in configs}
    run_one(opts, base, configs[0], ranks, os.path.join(work, "warm-up"), outputs, opts.timeout)
    for rep in range(opts.reps):
        for cfg in configs[rep % 3:] + configs[:rep % 3]:
            rundir = os.path.join(work, re.sub(r"[^A-Za-z0-9]+", "_", cfg.name), f"rep{rep}")
            rec = run_one(opts, base, cfg, ranks, rundir, outputs, opts.timeout)
            rec["rep"] = rep
            records[cfg.name].append(rec)
            print(f"  rep {rep}: {cfg.name:36s} {rec['wall']:8.2f} s  "
                  f"{'ok' if rec['status'] == 0 else rec['status']}  (load {rec['load_before']})",
                  flush=True)
    failures = []
    ref = next((r for r in records["memory"] if r["status"] == 0), None)
    if ref is None:
        raise SystemExit("the memory baseline did not run; nothing to compare with")
    for cfg in configs:
        for r in records[cfg.name]:
            if r["status"] != 0:
                failures.append(f"{cfg.name} rep {r['rep']}: exit {r['status']}: "
                                f"{r.get('error', '')}")
            elif r["lambda"] != ref["lambda"] or r["lambda"] is None or (
                    program == "heat" and r.get("kappa") != ref.get("kappa")):
                failures.append(f"{cfg.name} rep {r['rep']}: gradient differs from memory's")
    rows = {}
    for cfg in configs:
        ok = [r for r in records[cfg.name] if r["status"] == 0]
        row = {"wall": med([r["wall"] for r in ok]), "total": med([r["log"].get("total")
                                                                    for r in ok]),
               "rss_mib": med([max(x["peak_rss_kib"] for x in r["ranks"]) / 1024.0 for r in ok]),
               "rewind_s": med([r["view"].get("rewind_s") for r in ok]),
               "rewind_pct": med([r["view"].get("rewind_pct") for r in ok]), "events": {}}
        for name in EVENTS:
            counts = {event(r, name, "count") for r in ok}
            if counts == {0}:
                continue
            per_call = [event(r, name) / event(r, name, "count") for r in ok
                        if event(r, name, "count")]
            row["events"][name] = {"count": med([event(r, name, "count") for r in ok]),
                                   "per_call": med(per_call), "per_call_min": min(per_call)}
        rows[cfg.name] = row
    mem = rows["memory"]
    # Other jobs on the host only ever add time: the fastest repetition of each event is what
    # the program pays with rewind and nothing else, the median what a run sees.
    print(f"\n## {program}, N = {steps}, {ranks} ranks: PETSc's own events, rewind store-all "
          f"against memory ({opts.reps} repetitions; µs a call: fastest repetition, and median)\n")
    head = "| event | calls | memory µs a call: fastest (median) |"
    for cfg in configs[1:]:
        head += f" {cfg.name}: fastest (median) | / memory, fastest (median) |"
    print(head)
    print("|---|---|---|" + "---|---|" * (len(configs) - 1))
    worst, worst_median = {}, {}
    for name in EVENTS:
        if name not in mem["events"]:
            continue
        m = mem["events"][name]
        line = (f"| {name} | {fmt(int(m['count']))} | {1e6 * m['per_call_min']:.1f} "
                f"({1e6 * m['per_call']:.1f}) |")
        for cfg in configs[1:]:
            e = rows[cfg.name]["events"].get(name)
            if not e:
                line += " — | — |"
                continue
            ratio = e["per_call_min"] / m["per_call_min"]
            ratio_median = e["per_call"] / m["per_call"]
            worst[cfg.name] = max(worst.get(cfg.name, 0.0), ratio)
            worst_median[cfg.name] = max(worst_median.get(cfg.name, 0.0), ratio_median)
            if e["count"] != m["count"]:
                failures.append(f"{cfg.name}: {name} called {e['count']} times, memory "
                                f"{m['count']}")
            line += (f" {1e6 * e['per_call_min']:.1f} ({1e6 * e['per_call']:.1f}) | "
                     f"{ratio:.3f} ({ratio_median:.3f}) |")
        print(line)
    print("\n| run | wall s | -log_view total s | / memory | peak RSS MiB (largest rank) | "
          "rewind on the caller's thread (view) | slowest event a call / memory, fastest "
          "(median) |")
    print("|---|---|---|---|---|---|---|")
    for cfg in configs:
        r = rows[cfg.name]
        own = "—" if r["rewind_s"] is None else f"{r['rewind_s']:.3f} s ({r['rewind_pct']:.2f} %)"
        w = worst.get(cfg.name)
        wm = worst_median.get(cfg.name)
        print(f"| {cfg.name} | {r['wall']:.2f} | {r['total']:.2f} | "
              f"{r['total'] / mem['total']:.3f} | {r['rss_mib']:.1f} | {own} | "
              f"{'—' if w is None else f'{w:.3f} ({wm:.3f})'} |")
    within = all(w <= 1.05 for w in worst.values())
    print(f"\nevery event within 5 % of memory's a call (fastest repetitions): "
          f"{'yes' if within else 'NO'} (a figure, not asserted: a loaded host moves it)")
    if failures:
        print("\nFAILURES:")
        for f in failures:
            print("  " + f)
    print(f"\nload average at end {load_average()}")
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump({"bench": "petsc_events", "program": program, "steps": steps,
                       "ranks": ranks, "reps": opts.reps, "rows": rows, "worst": worst,
                       "worst_median": worst_median,
                       "records": records, "failures": failures, "load_end": load_average(),
                       "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}, f, indent=1)
    return 1 if failures else 0


# ------------------------------------------------------------------------------------------
# scale


def cmd_scale(opts):
    steps_list = [int(float(x)) for x in opts.steps_list.split(",")]
    configs = [
        Config("memory", ["-ts_trajectory_type", "memory", "-ts_trajectory_solution_only", "0"],
               "petsc", "all N in RAM"),
        Config(f"rewind RAM {opts.ram}", ["-dll_append", opts.rewind_lib, "-ts_trajectory_type",
                                          "rewind", "-ts_trajectory_max_cps_ram", str(opts.ram)],
               "rewind", f"{opts.ram} in RAM", needs_plan=True),
    ]
    outputs = ["-ts_adjoint_view_solution", "binary:lambda.bin", "-viewer_binary_skip_info",
               "-ts_trajectory_view"]
    work = os.path.join(opts.work, f"scale-g{opts.grid}-np{opts.ranks}")
    print(f"# scale: ex5adj {opts.grid}x{opts.grid}, {opts.ranks} rank(s), N = {steps_list}; "
          f"load average at start {load_average()}", flush=True)
    rows, failures = [], []
    for n in steps_list:
        base = program_command(opts, "ex5adj", n, opts.grid)
        reps = opts.reps if n <= opts.max_rep_steps else 1
        recs = {c.name: [] for c in configs}
        for rep in range(reps):
            for cfg in (configs if rep % 2 == 0 else configs[::-1]):
                rundir = os.path.join(work, f"n{n}", re.sub(r"[^A-Za-z0-9]+", "_", cfg.name),
                                      f"rep{rep}")
                rec = run_one(opts, base, cfg, opts.ranks, rundir, outputs, opts.timeout)
                rec["rep"] = rep
                recs[cfg.name].append(rec)
                print(f"  N={n} rep {rep}: {cfg.name:16s} {rec['wall']:8.2f} s  "
                      f"{'ok' if rec['status'] == 0 else rec['status']} "
                      f"(load {rec['load_before']})", flush=True)
        ref = recs["memory"][0]
        for cfg in configs:
            for r in recs[cfg.name]:
                if r["status"] != 0:
                    failures.append(f"N={n} {cfg.name}: exit {r['status']} {r.get('error', '')}")
                elif r["lambda"] != ref.get("lambda"):
                    failures.append(f"N={n} {cfg.name} rep {r['rep']}: gradient differs")
            s = summarise(recs[cfg.name], cfg)
            if s is None:
                continue
            row = {"steps": n, "config": cfg.name, "reps": reps, **s}
            if cfg.needs_plan:
                pred = plan_prediction(opts, n, s["view"])
                row["predicted_fwd"] = pred.get("fwd_total") if pred else None
                if row["predicted_fwd"] != int(s["tsstep_calls"]):
                    failures.append(f"N={n} {cfg.name}: TSStep calls {s['tsstep_calls']}, "
                                    f"predicted {row['predicted_fwd']}")
            rows.append(row)
    print(f"\n## scale: ex5adj {opts.grid}x{opts.grid}, {opts.ranks} rank(s), medians\n")
    print("| N | trajectory | runs | wall s | TSStep calls | recomputed / N | peak RSS MiB | "
          "RSS growth over N = 100 MiB | RAM checkpoints peak MiB | s per step (wall / N) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    first = {}
    for row in rows:
        first.setdefault(row["config"], row["rss_max_mib"])
        calls = int(row["tsstep_calls"])
        print(f"| {fmt(row['steps'])} | {row['config']} | {row['reps']} | {row['wall']:.2f} | "
              f"{fmt(calls)} | {(calls - row['steps']) / row['steps']:.2f} | "
              f"{row['rss_max_mib']:.1f} | {row['rss_max_mib'] - first[row['config']]:.1f} | "
              f"{fmt(row['view'].get('ram_peak_mib'))} | "
              f"{1e3 * row['wall'] / row['steps']:.3f} ms |")
    if failures:
        print("\nFAILURES:")
        for f in failures:
            print("  " + f)
    print(f"\nload average at end {load_average()}")
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump({"bench": "petsc_scale", "grid": opts.grid, "ranks": opts.ranks,
                       "ram": opts.ram, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                       "rows": rows, "failures": failures, "load_end": load_average()}, f,
                      indent=1)
    return 1 if failures else 0


# ------------------------------------------------------------------------------------------
# plan


def cmd_plan(opts):
    steps_list = [int(float(x)) for x in opts.steps_list.split(",")]
    cases = [
        ("revolve", ["--ram", "10", "--schedule", "revolve"], "10 RAM"),
        ("revolve", ["--ram", "100", "--schedule", "revolve"], "100 RAM"),
        ("online", ["--ram", "10", "--schedule", "online", "--online"], "10 RAM, N unknown"),
        ("twolevel", ["--ram", "10", "--disk", "100", "--write-cost", "2", "--read-cost", "2",
                      "--schedule", "twolevel"], "10 RAM + 100 disk, wd = rd = 2"),
    ]
    work = os.path.join(opts.work, "plan")
    os.makedirs(work, exist_ok=True)
    print(f"# planning time, load average at start {load_average()}", flush=True)
    rows = []
    skip = set()
    for n in steps_list:
        for name, args, budget in cases:
            key = (name, budget)
            if key in skip:
                rows.append({"schedule": name, "budget": budget, "steps": n, "skipped": True})
                continue
            cmd = [opts.rewind_plan, "--steps", str(n)] + args + ["--json"]
            probe_dir = os.path.join(work, f"{name}-{len(rows)}")
            shutil.rmtree(probe_dir, ignore_errors=True)
            t0 = time.monotonic()
            try:
                p = subprocess.run([sys.executable, PROBE, probe_dir, "--"] + cmd,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   timeout=opts.timeout)
                status = p.returncode
            except subprocess.TimeoutExpired:
                status = "timeout"
            wall = time.monotonic() - t0
            row = {"schedule": name, "budget": budget, "steps": n, "wall": wall,
                   "status": status, "command": shlex.join(cmd)}
            if status == 0:
                row.update(json.loads(p.stdout))
                with open(os.path.join(probe_dir, "rank0.json")) as f:
                    row["peak_rss_mib"] = json.load(f)["peak_rss_kib"] / 1024.0
            else:
                row["error"] = p.stderr.strip() if status != "timeout" else "timeout"
                skip.add(key)  # larger N would take longer still
            rows.append(row)
            print(f"  {name:9s} {budget:32s} N={n:>9d} {wall:8.2f} s {status}", flush=True)
    print("\n## planning time (rewind-plan: build the schedule and replay it in the simulator)\n")
    print("| schedule | budget | N | planned and replayed s | wall s | actions | forward steps "
          "/ N | peak RSS MiB |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        if r.get("skipped"):
            print(f"| {r['schedule']} | {r['budget']} | {fmt(r['steps'])} | not run (smaller N "
                  f"timed out) | | | | |")
        elif r["status"] != 0:
            print(f"| {r['schedule']} | {r['budget']} | {fmt(r['steps'])} | {r['status']}: "
                  f"{r.get('error', '')[:80]} | {r['wall']:.1f} | | | |")
        else:
            print(f"| {r['schedule']} | {r['budget']} | {fmt(r['steps'])} | "
                  f"{r['plan_seconds']:.3f} | {r['wall']:.3f} | {fmt(r['actions'])} | "
                  f"{r['fwd_total'] / r['steps']:.3f} | {r['peak_rss_mib']:.1f} |")
    print(f"\nload average at end {load_average()}")
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump({"bench": "petsc_plan", "rows": rows, "load_end": load_average(),
                       "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}, f, indent=1)
    return 0


# ------------------------------------------------------------------------------------------


def main():
    # A SIGTERM (ctest's timeout) unwinds like an exception, so subprocess.run kills the run.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)

    def tools(p):
        p.add_argument("--mpiexec", default="mpiexec")
        p.add_argument("--mpiexec-flags", default="", help="extra flags, one string")
        p.add_argument("--ex5adj", default="build/bin/petsc-tutorials/ex5adj")
        p.add_argument("--heat", default="build/bin/rewind-heat")
        p.add_argument("--rewind-lib", default="build/lib/librewind.so")
        p.add_argument("--rewind-plan", default="build/bin/rewind-plan")
        p.add_argument("--work", default="build/bench/petsc")
        p.add_argument("--json", help="write every run and the summaries here")
        p.add_argument("--timeout", type=float, default=1800, help="seconds a run may take")

    t = sub.add_parser("trajectories", help="one program with every trajectory")
    tools(t)
    t.add_argument("--program", choices=["ex5adj", "heat"], default="ex5adj")
    t.add_argument("--steps", type=int, default=300)
    t.add_argument("--ranks", type=int, default=2)
    t.add_argument("--grid", type=int, default=None, help="cells a side (ex5adj 128, heat 64)")
    t.add_argument("--reps", type=int, default=3)
    t.add_argument("--configs", help="regex: run only the configurations whose name matches it "
                   "(memory and basic always run)")

    e = sub.add_parser("events", help="PETSc's own events: rewind store-all against memory")
    tools(e)
    e.add_argument("--program", choices=["ex5adj", "heat"], default="ex5adj")
    e.add_argument("--steps", type=int, default=300)
    e.add_argument("--ranks", type=int, default=2)
    e.add_argument("--grid", type=int, default=None, help="cells a side (ex5adj 128, heat 64)")
    e.add_argument("--reps", type=int, default=5)

    s = sub.add_parser("scale", help="memory and rewind as N grows, small ex5adj")
    tools(s)
    s.add_argument("--steps", dest="steps_list", default="100,1000,10000,100000")
    s.add_argument("--grid", type=int, default=16)
    s.add_argument("--ranks", type=int, default=1)
    s.add_argument("--ram", type=int, default=20)
    s.add_argument("--reps", type=int, default=3)
    s.add_argument("--max-rep-steps", type=int, default=10000,
                   help="larger N run once (a single run is then the figure)")

    r = sub.add_parser("report", help="the tables of a trajectories run, from its JSON file")
    tools(r)
    r.add_argument("input", help="a trajectories --json file")

    p = sub.add_parser("plan", help="rewind-plan's planning time up to N = 10^7")
    tools(p)
    p.add_argument("--steps", dest="steps_list",
                   default="1000,10000,100000,1000000,10000000")

    opts = ap.parse_args()
    for attr in ("ex5adj", "heat", "rewind_lib", "rewind_plan", "work"):
        setattr(opts, attr, os.path.abspath(getattr(opts, attr)))
    if opts.command in ("trajectories", "events") and opts.grid is None:
        opts.grid = 128 if opts.program == "ex5adj" else None
    sys.exit({"trajectories": cmd_trajectories, "events": cmd_events, "scale": cmd_scale,
              "plan": cmd_plan, "report": cmd_report}[opts.command](opts))


if __name__ == "__main__":
    main()
