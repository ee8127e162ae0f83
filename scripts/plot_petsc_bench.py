#!/usr/bin/python3
"""Pictures of the PETSc trajectory benchmarks (bench/petsc/petsc_bench.py, ctest bench.petsc.*).

    scripts/plot_petsc_bench.py --results build/bench/petsc --out docs/img

reads the JSON files the benchmarks wrote into --results and writes into --out, for each that
is there:

- petsc-<program>-n<N>-budget.png (from <program>-n<N>.json): wall time and peak RSS per rank
  against rewind's RAM budget, with and without stages, the two disk budgets as points at their
  RAM budget, and PETSc's memory, basic and stride runs as horizontal lines;
- petsc-recompute.png: forward steps per step (TSStep calls / N) against the RAM budget for every
  trajectories file, with the Revolve curve (its closed form) for each N;
- petsc-scale.png (from scale.json): peak RSS and wall time against N;
- petsc-plan.png (from plan.json): planning time against N;
- store-bandwidth.png (from the files build/bin/rewind-bench-store --json wrote, any name, with
  the label "page cache", its default): write, write+sync and read bandwidth of POSIX, the HDF5
  store with and without write-behind, and the RAM store, per rank count and checkpoint size;
- store-hidden.png (from every rewind-bench-store file, each label, e.g. a run under
  scripts/slow-disk.sh given --label "200 MB/s disk"): the part of the I/O time that a
  computing solver does not wait for, writes and reads, with and without write-behind/prefetch.

Needs Debian's python3-matplotlib (scripts/install-deps.sh installs it).
"""
import argparse
import glob
import json
import math
import os
import re

plt = None  # matplotlib.pyplot, imported in main() so that --help works without it


def save(fig, out):
    """Lays out, writes and closes a figure."""
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    print(f"wrote {out}")


def revolve_fwd_total(n, s):
    """Forward steps of single-level Revolve with s slots (x_0's included), n steps:
    n + r n - C(s + r, r - 1) with r the least r such that C(s + r, s) >= n."""
    r = 1
    while math.comb(s + r, s) < n:
        r += 1
    return n + r * n - math.comb(s + r, s + 1)


RAM_ONLY = re.compile(r"^rewind RAM (\d+)(, solution only)?$")
DISK = re.compile(r"^rewind 4 RAM \+ (30|N) disk(, solution only)?$")


def rewind_series(summaries, solution_only):
    """(budgets, summaries) of the RAM-only rewind runs, by budget."""
    pts = []
    for name, s in summaries.items():
        m = RAM_ONLY.match(name)
        if m and s and bool(m.group(2)) == solution_only:
            pts.append((int(m.group(1)), s))
    return sorted(pts, key=lambda p: p[0])


def plot_budget(result, out):
    summ = result["summaries"]
    fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(12, 4.6))
    styles = {False: ("tab:blue", "o", "rewind, stages stored"),
              True: ("tab:orange", "s", "rewind, solution only")}
    for so, (colour, marker, label) in styles.items():
        pts = rewind_series(summ, so)
        if not pts:
            continue
        xs = [p[0] for p in pts]
        ax_t.plot(xs, [p[1]["wall"] for p in pts], marker=marker, color=colour, label=label)
        ax_m.plot(xs, [p[1]["rss_max_mib"] for p in pts], marker=marker, color=colour,
                  label=label)
        for name, s in summ.items():
            m = DISK.match(name)
            if not m or s is None or bool(m.group(2)) != so:
                continue
            disk = "30" if m.group(1) == "30" else str(result["steps"])
            mk = "^" if m.group(1) == "30" else "v"
            lab = f"rewind 4 RAM + {disk} disk" + (", solution only" if so else "")
            ax_t.plot([4], [s["wall"]], marker=mk, color=colour, linestyle="none",
                      markersize=9, markerfacecolor="none", markeredgewidth=2, label=lab)
            ax_m.plot([4], [s["rss_max_mib"]], marker=mk, color=colour, linestyle="none",
                      markersize=9, markerfacecolor="none", markeredgewidth=2, label=lab)
    lines = {"memory": ("black", "-"), "basic": ("tab:red", "--"),
             "memory stride 10": ("tab:green", ":"), "forward only": ("grey", "-.")}
    for name, (colour, ls) in lines.items():
        s = summ.get(name)
        if not s:
            continue
        label = f"PETSc {name}" if name != "forward only" else "forward run only (no adjoint)"
        if name != "forward only":
            ax_t.axhline(s["wall"], color=colour, linestyle=ls, label=label)
        ax_m.axhline(s["rss_max_mib"], color=colour, linestyle=ls, label=label)
    title = (f"{result['program']}, N = {result['steps']}, {result['ranks']} ranks "
             f"(medians of {result['reps']}; {result['date']})")
    ax_t.set_title("wall time")
    ax_t.set_ylabel("s")
    ax_m.set_title("peak RSS, largest rank")
    ax_m.set_ylabel("MiB")
    for ax in (ax_t, ax_m):
        ax.set_xlabel("rewind RAM checkpoints (disk budgets drawn at 4)")
        ax.set_xticks([4, 5, 10, 20])
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    ax_m.legend(fontsize=7, loc="lower right")
    fig.suptitle(title)
    save(fig, out)


def plot_recompute(results, out):
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    colours = plt.get_cmap("tab10")
    for i, res in enumerate(results):
        n = res["steps"]
        c = colours(i)
        s_grid = list(range(2, 41))
        ax.plot(s_grid, [revolve_fwd_total(n, s) / n for s in s_grid], color=c, alpha=0.5,
                label=f"Revolve (closed form), N = {n}")
        for so, marker in ((False, "o"), (True, "s")):
            pts = rewind_series(res["summaries"], so)
            if not pts:
                continue
            ax.plot([p[0] for p in pts], [p[1]["tsstep_calls"] / n for p in pts], marker=marker,
                    linestyle="none", color=c, markerfacecolor="none" if so else c,
                    label=f"{res['program']} N = {n}: measured, "
                          f"{'solution only' if so else 'stages stored'}")
    ax.set_xlabel("RAM checkpoints s (x_0's included)")
    ax.set_ylabel("forward steps per step (TSStep calls / N)")
    ax.set_title("recomputation against the RAM budget")
    ax.set_ylim(bottom=1)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    save(fig, out)


def plot_scale(result, out):
    rows = result["rows"]
    fig, (ax_m, ax_t) = plt.subplots(1, 2, figsize=(12, 4.6))
    for config in sorted({r["config"] for r in rows}):
        pts = sorted((r["steps"], r) for r in rows if r["config"] == config)
        xs = [p[0] for p in pts]
        ax_m.plot(xs, [p[1]["rss_max_mib"] for p in pts], marker="o", label=config)
        ax_t.plot(xs, [p[1]["wall"] for p in pts], marker="o", label=config)
    ax_m.set_title("peak RSS")
    ax_m.set_ylabel("MiB")
    ax_t.set_title("wall time")
    ax_t.set_ylabel("s")
    ax_t.set_yscale("log")
    for ax in (ax_m, ax_t):
        ax.set_xscale("log")
        ax.set_xlabel("time steps N")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=8)
    fig.suptitle(f"ex5adj {result['grid']}x{result['grid']}, {result['ranks']} rank(s), "
                 f"rewind at {result['ram']} RAM checkpoints ({result['date']})")
    save(fig, out)


def plot_plan(result, out):
    rows = [r for r in result["rows"] if r.get("status") == 0]
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    for key in sorted({(r["schedule"], r["budget"]) for r in rows}):
        pts = sorted((r["steps"], r["plan_seconds"]) for r in rows
                     if (r["schedule"], r["budget"]) == key)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o",
                label=f"{key[0]}, {key[1]}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("time steps N")
    ax.set_ylabel("s (planned and replayed in the simulator)")
    ax.set_title(f"rewind-plan planning time ({result['date']})")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    save(fig, out)


STORES = ["posix pwrite/pread", "hdf5", "hdf5 async", "ram"]


def store_cases(results):
    """(label, ranks, MiB, size entry) of every rewind-bench-store result, in a stable order."""
    cases = []
    for res in results:
        for size in res["sizes"]:
            cases.append((res.get("label", "page cache"), res["ranks"], size["mib"], size))
    return sorted(cases, key=lambda c: (c[0] != "page cache", c[0], c[1], c[2]))


def plot_store_bandwidth(results, out):
    cases = [c for c in store_cases(results) if c[0] == "page cache"]
    if not cases:
        print(f"no rewind-bench-store run labelled 'page cache' (its default): {out} not drawn")
        return
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.6), sharey=False)
    width = 0.8 / len(STORES)
    for ax, (key, title) in zip(axes, [("write_gibs", "write (page cache)"),
                                       ("write_sync_gibs", "write + sync"),
                                       ("read_gibs", "read (page cache)")]):
        for k, store in enumerate(STORES):
            xs, ys = [], []
            for i, (_, ranks, mib, size) in enumerate(cases):
                row = next((r for r in size["stores"] if r["store"] == store), None)
                if row and row.get(key) is not None:
                    xs.append(i + (k - (len(STORES) - 1) / 2) * width)
                    ys.append(row[key])
            if xs:
                ax.bar(xs, ys, width, label=store)
        ax.set_xticks(range(len(cases)))
        ax.set_xticklabels([f"{c[1]} rank{'s' if c[1] > 1 else ''}\n{c[2]} MiB" for c in cases])
        ax.set_title(title)
        ax.set_ylabel("GiB/s (all ranks' bytes / slowest rank's time)")
        ax.grid(alpha=0.3, axis="y")
    axes[0].legend(fontsize=8)
    fig.suptitle("checkpoint stores against POSIX on the same bytes (rewind-bench-store)")
    save(fig, out)


def plot_store_hidden(results, out):
    cases = [c for c in store_cases(results) if "overlap" in c[3]]
    if not cases:
        return
    fig, axes = plt.subplots(1, 2, figsize=(15, 5.2), sharey=True)
    width = 0.38
    for ax, sweep in zip(axes, ["writes", "reads"]):
        for k, (key, name) in enumerate([("left_hdf5_s", "hdf5 (synchronous)"),
                                         ("left_hdf5_async_s", "hdf5 async (write-behind, "
                                                               "prefetch)")]):
            ys = []
            for (_, _, _, size) in cases:
                o = size["overlap"][sweep]
                ys.append(100.0 * (1.0 - o[key] / o["io_alone_s"]))
            ax.bar([i + (k - 0.5) * width for i in range(len(cases))], ys, width, label=name)
        ax.axhline(90, color="black", linestyle=":", linewidth=1, label="90 %")
        ax.set_xticks(range(len(cases)))
        ax.set_xticklabels([f"{c[0]}\n{c[1]} rank{'s' if c[1] > 1 else ''}\n{c[2]} MiB"
                            for c in cases], fontsize=7)
        ax.set_title(f"{sweep}: a step computes 1.25 x its I/O"
                     + (" (reads from the disk)" if sweep == "reads" else ""))
        ax.set_ylabel("% of the I/O time not added to the computation")
        ax.set_ylim(min(-20, ax.get_ylim()[0]), 105)
        ax.grid(alpha=0.3, axis="y")
    axes[0].legend(fontsize=8)
    fig.suptitle("I/O hidden behind computation (rewind-bench-store, medians of 3)")
    save(fig, out)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", default="build/bench/petsc")
    ap.add_argument("--out", default="docs/img")
    opts = ap.parse_args()
    global plt
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot
    except ImportError:
        raise SystemExit("needs matplotlib: run it with Debian's /usr/bin/python3 and "
                         "python3-matplotlib (scripts/install-deps.sh installs it)")
    plt = matplotlib.pyplot
    os.makedirs(opts.out, exist_ok=True)
    trajectories, stores = [], []
    for path in sorted(glob.glob(os.path.join(opts.results, "*.json"))):
        with open(path) as f:
            res = json.load(f)
        kind = res.get("bench")
        if kind == "petsc_trajectories":
            same = [t for t in trajectories
                    if (t["program"], t["steps"]) == (res["program"], res["steps"])]
            if same:
                print(f"note: {path} is another {res['program']} run at N = {res['steps']}: "
                      f"it replaces the earlier one's budget picture and is drawn beside it in "
                      f"petsc-recompute.png")
            trajectories.append(res)
            plot_budget(res, os.path.join(
                opts.out, f"petsc-{res['program']}-n{res['steps']}-budget.png"))
        elif kind == "petsc_scale":
            plot_scale(res, os.path.join(opts.out, "petsc-scale.png"))
        elif kind == "petsc_plan":
            plot_plan(res, os.path.join(opts.out, "petsc-plan.png"))
        elif kind == "store":
            stores.append(res)
    if trajectories:
        plot_recompute(trajectories, os.path.join(opts.out, "petsc-recompute.png"))
    if stores:
        plot_store_bandwidth(stores, os.path.join(opts.out, "store-bandwidth.png"))
        plot_store_hidden(stores, os.path.join(opts.out, "store-hidden.png"))
    if not trajectories and not glob.glob(os.path.join(opts.results, "*.json")):
        raise SystemExit(f"no benchmark results (*.json) in {opts.results}")


if __name__ == "__main__":
    main()
