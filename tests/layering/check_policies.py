#!/usr/bin/env python3
"""Policies that live in one place (docs/runtime.md, "Layers"), checked on the source tree:

  - one room policy: outside src/engine/, nothing thins or spills a recording itself
    (`.thin(`, `->thin(`, `.spill(`, `->spill(`): it goes through engine::make_room
    (include/rewind/engine/room.hpp), whose policy the PETSc trajectory and the ensemble share.

usage: check_policies.py --root <repo>   (exit 1 listing every violation)
"""
import argparse
import os
import re
import sys

CALL = re.compile(r"(\.|->)(thin|spill)\s*\(")


def strip(text):
    """The code without comments and string literals (line breaks kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif text[i] == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('""')
            i = j + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", required=True)
    root = ap.parse_args().root
    problems = []
    for top in ("src", "apps"):
        for base, _, files in os.walk(os.path.join(root, top)):
            for name in files:
                if not name.endswith((".cpp", ".hpp", ".h", ".c")):
                    continue
                path = os.path.join(base, name)
                rel = os.path.relpath(path, root)
                if rel.startswith(os.path.join("src", "engine") + os.sep):
                    continue
                with open(path, encoding="utf-8", errors="replace") as f:
                    code = strip(f.read())
                for number, line in enumerate(code.split("\n"), 1):
                    if CALL.search(line):
                        problems.append(f"{rel}:{number}: thins or spills a recording itself; "
                                        "make room through engine::make_room (engine/room.hpp)")
    for p in problems:
        print(p)
    if problems:
        print(f"check_policies: {len(problems)} problem(s)")
        return 1
    print("check_policies: one room policy (engine/room.hpp)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
