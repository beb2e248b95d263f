#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Instructions per function from insnprof's output (insnprof.c).

Usage: insnprof.py KDIR CONSOLE_LOG INSNPROF_OUT [OPS [TOP]]

KDIR's System.map names the kernel's functions, the console log's "KSYM ADDR
TYPE NAME" lines (/proc/kallsyms, printed by the guest) the module's. Prints
the total and the TOP (default 40) functions by instructions, divided by OPS
(default 1): the operations the counted window made.
"""
import bisect
import collections
import re
import sys


def main():
    kdir, log, out = sys.argv[1:4]
    ops = float(sys.argv[4]) if len(sys.argv) > 4 else 1.0
    top = int(sys.argv[5]) if len(sys.argv) > 5 else 40
    syms = []
    with open(kdir + "/System.map") as f:
        for line in f:
            addr, kind, name = line.split()[:3]
            if kind in "tTwW":
                syms.append((int(addr, 16), name))
    with open(log, errors="replace") as f:
        for line in f:
            m = re.search(r"KSYM ([0-9a-f]+) [tT] (\S+)", line)
            if m:
                syms.append((int(m.group(1), 16), m.group(2)))
    syms.sort()
    addrs = [a for a, _ in syms]
    per_fn = collections.Counter()
    with open(out) as f:
        for line in f:
            addr, count = line.split()
            i = bisect.bisect_right(addrs, int(addr, 16)) - 1
            per_fn[syms[i][1] if i >= 0 else "?"] += int(count)
    print("total %.1f per op" % (sum(per_fn.values()) / ops))
    for name, count in per_fn.most_common(top):
        print("%10.1f  %s" % (count / ops, name))


if __name__ == "__main__":
    main()
