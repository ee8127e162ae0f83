#!/usr/bin/python3
"""Forward steps of the `endpoints` schedule: pullback data made of states (docs/schedules.md,
"Pullback data made of states: `endpoints`"), an independent copy in Python of its recursion
(src/schedule/endpoints.cpp) and of an exhaustive search of its machine.

For a theta method in endpoint form (PETSc's CN and backward Euler) a step's stages are the state
it starts from and the state it ends in, so the adjoint of step i needs states i and i + 1 and no
re-run of the step. The machine: a working state (the stepper's own vectors, not counted), at
most U stored states (x_0 included, never freed), steps of cost 1, stores, restores and frees of
cost 0; the adjoint of step a - 1 runs when states a - 1 and a are both held (working or
stored). The recursion

    T(1, s) = 1,  T(n, s) = min_{1<=j<n}  j + T(n-j, s-1) + S(j, s-1)          (s = U - 1)
    S(1, u) = 0,  S(j, u) = min( j-1 + S(j-1, u),  min_{1<=i<j-1} i + S(j-i, u-1) + S(i, u) )

(S: the end state stored in a unit of its own, u more units; the inner minimum needs u >= 1)
is checked against an exhaustive search of the machine for n <= 9, U <= 5, then evaluated for
ex5adj's 300 steps. Prints the table docs/schedules.md quotes; exits 1 if a cell differs.

    python3 bench/theta_model.py [--steps 300 --units 10,20,40,269]
"""
import argparse
import functools
import heapq
import sys

INF = float("inf")


@functools.lru_cache(None)
def stored_end(j, u):
    if j == 1:
        return 0
    best = (j - 1) + stored_end(j - 1, u)
    if u >= 1:
        for i in range(1, j - 1):
            best = min(best, i + stored_end(j - i, u - 1) + stored_end(i, u))
    return best


@functools.lru_cache(None)
def steps(n, s):
    """Fewest forward steps (the first sweep included) to reverse n steps with s units
    besides x_0."""
    if n == 1:
        return 1
    best = n + steps(n - 1, s)
    if s >= 1:
        for j in range(1, n):
            best = min(best, j + steps(n - j, s - 1) + min(stored_end(j, s - 1), steps(j, s)))
    return best


def exhaustive(n, units):
    """Shortest path over the machine's states (working, stored, next adjoint)."""
    start = (0, frozenset([0]), n)
    dist = {start: 0}
    queue = [(0, start)]
    while queue:
        d, state = heapq.heappop(queue)
        if d > dist[state]:
            continue
        work, held, a = state
        if a == 0:
            return d
        moves = []
        if work < a:
            moves.append((1, (work + 1, held, a)))
        if work == a - 1:  # step a - 1 recorded: its stages hold both states
            moves.append((1, (a, frozenset(y for y in held if y < a), a - 1)))
        if work not in held and len(held) < units:
            moves.append((0, (work, held | {work}, a)))
        for x in held:
            moves.append((0, (x, held, a)))
            if x != 0:
                moves.append((0, (work, held - {x}, a)))
        if a - 1 in held | {work} and a in held | {work}:
            moves.append((0, (work, frozenset(y for y in held if y < a), a - 1)))
        for cost, nxt in moves:
            if dist.get(nxt, INF) > d + cost:
                dist[nxt] = d + cost
                heapq.heappush(queue, (d + cost, nxt))
    return INF


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--units", default="10,20,40,269")
    args = p.parse_args()
    sys.setrecursionlimit(100000)
    differ = [(n, u) for n in range(1, 10) for u in range(1, 6)
              if exhaustive(n, u) != steps(n, u - 1)]
    print(f"recursion against the exhaustive search, n <= 9, U <= 5: {len(differ)} cells differ"
          + (f" {differ}" if differ else ""))
    for u in (int(x) for x in args.units.split(",")):
        print(f"{args.steps} steps, {u} units: {steps(args.steps, u - 1)} forward steps")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
