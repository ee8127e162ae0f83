#!/usr/bin/python3
"""Pictures of a rewind-heat or rewind-burgers run.

    scripts/plot_adjoint.py --gradient heat.h5 --summary heat.json --out docs/img/heat

writes <out>-gradient.png (each gradient field written with -gradient_out, with the control it
is taken against drawn as contours) and <out>-timeline.png (from the -summary_json file: every
forward, recomputed and adjoint step against wall-clock time, and where the schedule stored its
checkpoints). Either input may be left out. Needs Debian's python3-matplotlib, and
python3-h5py for the gradient picture.
"""
import argparse
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def plot_gradient(path, out, summary):
    import h5py  # only this picture needs it

    with h5py.File(path, "r") as f:
        grads = sorted((name for name in f if name.startswith("grad_")),
                       key=lambda name: (name != "grad_u0", name))
        fields = {name: f[name][()] for name in grads}
        controls = {name: f[name[len("grad_"):]][()] for name in grads if name[len("grad_"):] in f}
    if not grads:
        sys.exit(f"{path}: no grad_* datasets (write it with -gradient_out)")
    width = max(6.5, 5.2 * len(grads))
    fig, axes = plt.subplots(1, len(grads), figsize=(width, 4.6), squeeze=False,
                             constrained_layout=True)
    for ax, name in zip(axes[0], grads):
        g = fields[name]
        ny, nx = g.shape
        # The discrete gradient is dJ/d(cell value); divided by the cell area it is a density,
        # independent of the grid.
        density = g * nx * ny
        lim = abs(density).max() or 1.0
        im = ax.imshow(density, origin="lower", extent=(0, 1, 0, 1), cmap="RdBu_r", vmin=-lim,
                       vmax=lim)
        control = controls.get(name)
        if control is not None:
            ax.contour(control, levels=6, origin="lower", extent=(0, 1, 0, 1), colors="k",
                       linewidths=0.6, alpha=0.6)
        what = name[len("grad_"):]
        ax.set_title(f"dJ/d{what} (contours: {what})")
        ax.set_xlabel("x")
        ax.set_ylabel("y")
        fig.colorbar(im, ax=ax, shrink=0.85)
    if summary:
        fig.suptitle(f"{summary['app']}: gradient on a {summary['grid']['mx']} x "
                     f"{summary['grid']['my']} grid, {summary['ranks']} ranks, "
                     f"{summary['steps']} steps")
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")


def plot_timeline(summary, out, wall_clock):
    tl = summary["timeline"]
    steps, kinds = tl["step"], tl["kind"]
    if not kinds:
        sys.exit("the summary has no timeline")
    # x: steps evaluated so far (forward, recomputed and adjoint alike), which shows the
    # schedule's shape; or wall-clock seconds, which shows where the time went.
    seconds = tl["seconds"] if wall_clock else list(range(len(kinds)))
    fig, ax = plt.subplots(figsize=(10, 5), constrained_layout=True)
    style = {"F": ("first forward sweep", "tab:blue"), "R": ("recomputed", "tab:orange"),
             "A": ("adjoint", "tab:green")}
    for kind, (label, color) in style.items():
        xs = [s for s, k in zip(seconds, kinds) if k == kind]
        ys = [n for n, k in zip(steps, kinds) if k == kind]
        if xs:
            ax.scatter(xs, ys, s=4, color=color, label=f"{label} ({len(xs)} steps)")
    forward_times = [s for s, k in zip(seconds, kinds) if k in "FR"]
    for level, marker, color in (("ram", "s", "tab:purple"), ("disk", "^", "tab:red")):
        cps = [c for c in tl.get("checkpoints", []) if c["level"] == level
               and c["forward_index"] < len(forward_times)]
        if cps:
            ax.scatter([forward_times[c["forward_index"]] for c in cps], [c["step"] for c in cps],
                       s=28, marker=marker, facecolors="none", edgecolors=color,
                       label=f"checkpoint stored in {level.upper()} ({len(cps)})")
    traj = summary["trajectory"]
    title = f"{summary['app']}: {summary['steps']} steps"
    if traj.get("have_stats"):
        title += (f", schedule {traj['schedule']} with {traj['ram_budget']} RAM + "
                  f"{traj['disk_budget']} disk checkpoints: {traj['recomputed']} steps "
                  "recomputed")
    ax.set_title(title, fontsize=10)
    ax.set_xlabel("wall-clock time (s)" if wall_clock else
                  "steps evaluated so far (forward, recomputed and adjoint)")
    ax.set_ylabel("time step")
    ax.legend(loc="upper left", fontsize=8, markerscale=2)
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gradient", help="HDF5 file written with -gradient_out")
    p.add_argument("--summary", help="JSON file written with -summary_json")
    p.add_argument("--out", required=True, help="prefix of the PNG files")
    p.add_argument("--wall-clock", action="store_true",
                   help="timeline against wall-clock time instead of steps evaluated")
    a = p.parse_args()
    if not a.gradient and not a.summary:
        p.error("give --gradient, --summary or both")
    summary = None
    if a.summary:
        with open(a.summary) as f:
            summary = json.load(f)
    if a.gradient:
        plot_gradient(a.gradient, f"{a.out}-gradient.png", summary)
    if summary:
        plot_timeline(summary, f"{a.out}-timeline.png", a.wall_clock)


if __name__ == "__main__":
    main()
