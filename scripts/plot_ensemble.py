#!/usr/bin/python3
"""Pictures of a rewind-ensemble run.

    scripts/plot_ensemble.py --summary ens.json --out build/demo/ensemble [--costs]
                             [--gradient ens.h5]

writes <out>-timeline.png from the -summary_json file: one row per group, a bar per task
(labelled with its index k) from when the group started it to when it finished, in the forward
pass and in the backward pass side by side (each pass's clock starts at zero). The same task has
the same colour in both. Tapes spilled from RAM to disk to make room are hatched; tapes cut (their
forward run again before their adjoint) have a red edge. With --costs, a bar chart below gives
each task's steps: its first sweep, the steps recomputed for its adjoint, its adjoint steps.

With --gradient FILE.h5 (written with -gradient_out) it also writes <out>-gradient.png:
dPhi/dkappa with the true kappa as contours, the sources and the receivers.

Needs Debian's python3-matplotlib, and python3-h5py for the gradient picture.
"""
import argparse
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402


def task_colour(k, tasks):
    cmap = plt.get_cmap("tab20" if tasks > 10 else "tab10")
    return cmap(k % cmap.N)


def draw_pass(ax, mapping, groups, which, tasks):
    """Bars of one pass ("forward" or "backward"), one row per group."""
    for m in mapping:
        begin, end = m[which]
        width = max(end - begin, 1e-9)
        row = m["group"]
        edge = "tab:red" if m["cut"] else "black"
        ax.barh(row, width, left=begin, height=0.6, color=task_colour(m["task"], tasks),
                edgecolor=edge, linewidth=2.0 if edge == "tab:red" else 0.6,
                hatch="///" if m["spilled"] else None)
        ax.text(begin + width / 2, row, str(m["task"]), ha="center", va="center", fontsize=8,
                color="black", clip_on=True,
                bbox=dict(boxstyle="round,pad=0.15", facecolor="white", edgecolor="none",
                          alpha=0.75))
    ax.set_yticks(range(groups))
    ax.set_ylim(groups - 0.05, -0.5)  # a strip below the last group for the legend
    ax.set_xlabel("seconds since the start of the pass")
    ax.grid(axis="x", alpha=0.3)


def plot_timeline(summary, out, costs):
    ens = summary["ensemble"]
    mapping = ens["mapping"]
    if not mapping:
        sys.exit("the summary's ensemble report has no tasks")
    groups, tasks, g = ens["groups"], ens["tasks"], ens["group_size"]
    rows = 2 if costs else 1
    height = max(2.6, 0.55 * groups + 1.6)
    fig = plt.figure(figsize=(12, height + (3.2 if costs else 0)), constrained_layout=True)
    grid = fig.add_gridspec(rows, 2, height_ratios=[height, 3.2][:rows])
    forward = fig.add_subplot(grid[0, 0])
    backward = fig.add_subplot(grid[0, 1], sharey=forward)
    draw_pass(forward, mapping, groups, "forward", tasks)
    draw_pass(backward, mapping, groups, "backward", tasks)
    ranks = [f"group {q}\n(rank{'s' if g > 1 else ''} {q * g}{f'-{q * g + g - 1}' if g > 1 else ''})"
             for q in range(groups)]
    forward.set_yticklabels(ranks)
    plt.setp(backward.get_yticklabels(), visible=False)
    how = "tasks as groups claim them" if ens["assign"] == "dynamic" else "task k on group k mod G"
    forward.set_title(f"forward pass ({ens['forward_seconds']:.2f} s): {how}")
    backward.set_title(f"backward pass ({ens['backward_seconds']:.2f} s): each group reverses "
                       "its own tapes")
    spilled = sum(m["spilled"] for m in mapping)
    cut = sum(m["cut"] for m in mapping)
    handles = [Patch(facecolor="white", edgecolor="black", hatch="///",
                     label=f"spilled to disk ({spilled})"),
               Patch(facecolor="white", edgecolor="tab:red", linewidth=2,
                     label=f"cut, forward run again ({cut})")]
    backward.legend(handles=handles, loc="lower right", fontsize=8, ncol=2)
    fig.suptitle(f"{summary.get('app', 'rewind-ensemble')}: {tasks} tasks on {groups} group"
                 f"{'s' if groups != 1 else ''} of {g} rank{'s' if g != 1 else ''} "
                 f"({ens['assign']} assignment); backward sent "
                 f"{ens['backward_cotangent_bytes']} bytes of cotangents")
    if costs:
        ax = fig.add_subplot(grid[1, :])
        ordered = sorted(mapping, key=lambda m: m["task"])
        ks = [m["task"] for m in ordered]
        first = [m["steps"] for m in ordered]
        recomputed = [m["forward_steps"] - m["steps"] for m in ordered]
        adjoint = [m["adjoint_steps"] for m in ordered]
        w = 0.27
        ax.bar([k - w for k in ks], first, w, color="tab:blue", label="first sweep")
        ax.bar(ks, recomputed, w, color="tab:orange", label="recomputed (and run again if cut)")
        ax.bar([k + w for k in ks], adjoint, w, color="tab:green", label="adjoint")
        ax.set_xticks(ks)
        ax.set_xticklabels([f"{m['task']}\ng{m['group']}" for m in ordered], fontsize=8)
        ax.set_xlabel("task (and the group that ran it)")
        ax.set_ylabel("steps")
        ax.legend(fontsize=8)
        ax.set_title("what each task cost")
    fig.savefig(out, dpi=100)
    print(f"wrote {out}")


def plot_gradient(path, summary, out):
    import h5py  # only this picture needs it

    with h5py.File(path, "r") as f:
        grad = f["grad_kappa"][()]
        truth = f["kappa_true"][()] if "kappa_true" in f else None
    ny, nx = grad.shape
    density = grad * nx * ny  # per unit area, independent of the grid
    # Point receivers make the adjoint sharply peaked at their cells: clip the colour scale at
    # the 98th percentile of |dPhi/dkappa| so that the rest of the field shows.
    magnitudes = sorted(abs(v) for v in density.ravel())
    lim = magnitudes[int(0.98 * (len(magnitudes) - 1))] or magnitudes[-1] or 1.0
    fig, ax = plt.subplots(figsize=(6.4, 5.2), constrained_layout=True)
    im = ax.imshow(density, origin="lower", extent=(0, 1, 0, 1), cmap="RdBu_r", vmin=-lim,
                   vmax=lim)
    if truth is not None and truth.max() > truth.min():
        ax.contour(truth, levels=5, origin="lower", extent=(0, 1, 0, 1), colors="k",
                   linewidths=0.6, alpha=0.6)
    xs = [s["x"] for s in summary.get("sources", [])]
    ys = [s["y"] for s in summary.get("sources", [])]
    ax.scatter(xs, ys, marker="*", s=60, color="gold", edgecolor="black", linewidth=0.5,
               label="sources")
    rx = [r[0] for r in summary.get("receivers", [])]
    ry = [r[1] for r in summary.get("receivers", [])]
    ax.scatter(rx, ry, marker="v", s=40, color="white", edgecolor="black", label="receivers")
    ax.set_title("dPhi/dkappa (contours: the true kappa; colours clipped)")
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    ax.legend(loc="upper right", fontsize=8, framealpha=0.8)
    fig.colorbar(im, ax=ax, shrink=0.85)
    fig.savefig(out, dpi=100)
    print(f"wrote {out}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--summary", required=True, help="the -summary_json file")
    p.add_argument("--out", required=True, help="prefix of the PNG files")
    p.add_argument("--costs", action="store_true", help="add a bar chart of each task's steps")
    p.add_argument("--gradient", help="the -gradient_out HDF5 file")
    a = p.parse_args()
    with open(a.summary) as f:
        summary = json.load(f)
    if "ensemble" not in summary:
        sys.exit(f"{a.summary}: not a rewind-ensemble summary (no 'ensemble' report)")
    plot_timeline(summary, f"{a.out}-timeline.png", a.costs)
    if a.gradient:
        plot_gradient(a.gradient, summary, f"{a.out}-gradient.png")


if __name__ == "__main__":
    main()
