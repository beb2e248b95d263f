#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
#
# Prints which of the module's files each file of src/ imports (`use crate::...`
# and `crate::...`/`super::...` paths, comments ignored), then every edge that
# lies on an import circle, then every edge that goes up the layer map of
# Documentation/design.md ("Layers", LAYERS below): a file may import only from
# the rows below its own, or from the files after it in its own row. Exits 1 if
# there is either.
#
# Usage: tools/import-graph.py [SRC]   (default: src/ next to tools/)
import glob
import os
import re
import sys

src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "src")
mods = sorted(os.path.basename(f)[:-3] for f in glob.glob(os.path.join(src, "*.rs")))
mods = [m for m in mods if not m.endswith("_generated") and m != "rust_user_events_main"]
mods.append("logic")


def names(group):
    """Top-level names in a `{a, b::c, d::{e}}` use group."""
    depth, cur, out = 0, "", []
    for ch in group[1:-1]:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if depth == 0 and ch == ",":
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    return [n.strip().split("::")[0].strip() for n in out if n.strip()]


graph = {}
for m in mods:
    path = os.path.join(src, "logic", "mod.rs") if m == "logic" else os.path.join(src, m + ".rs")
    deps = set()
    if os.path.exists(path):
        text = re.sub(r"//[^\n]*", "", open(path).read())
        for hit in re.finditer(r"\b(?:crate|super)::(\{[^;]*\}|[a-z_0-9]+)", text):
            deps.update(names(hit.group(1)) if hit.group(1).startswith("{") else [hit.group(1)])
    graph[m] = sorted(d for d in deps if d in mods and d != m)

for m in mods:
    print(f"{m:12} -> {' '.join(graph[m])}")


def reaches(a, b):
    seen, todo = set(), [a]
    while todo:
        for y in graph[todo.pop()]:
            if y == b:
                return True
            if y not in seen:
                seen.add(y)
                todo.append(y)
    return False


circle = [(a, b) for a in mods for b in graph[a] if reaches(b, a)]
print("circle edges:", " ".join(f"{a}->{b}" for a, b in circle) if circle else "none")

# Documentation/design.md's layer map, top row first; within a row, a file may import the
# files after it.
LAYERS = [
    ["data_file", "status_file", "stats_file", "sysctl", "dyn_ops", "lifecycle"],
    ["file_info", "dyn_events"],
    ["group"],
    ["write"],
    ["probes"],
    ["trace_text", "perf_sample", "ftrace_record"],
    ["scope"],
    ["enabler"],
    ["event"],
    ["event_mutex", "deferred"],
    ["tracefs", "symbols", "ksym", "identity", "layout", "seq", "kbuf", "names", "tracepoint", "uaccess",
     "percpu", "trace_call", "user_word", "wait", "task", "compat", "bindings", "mirrors"],
    ["logic"],
]
place = {m: (row, col) for row, files in enumerate(LAYERS) for col, m in enumerate(files)}
unplaced = [m for m in mods if m not in place]
up = [(a, b) for a in mods if a in place for b in graph[a] if b in place
      and not (place[b][0] > place[a][0] or (place[b][0] == place[a][0] and place[b][1] > place[a][1]))]
print("files not on the layer map:", " ".join(unplaced) if unplaced else "none")
print("edges up the layer map:", " ".join(f"{a}->{b}" for a, b in up) if up else "none")
sys.exit(1 if circle or up or unplaced else 0)
