#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# One round of make bench inside a VM (tools/bench.sh copies it to the guest's
# /rue/bench.sh): write_bench and scale_bench, their "case" lines collected in
# /tmp and printed at the end, so the console is quiet while they measure.
# Prints "info provider module|builtin|both" (who implements user_events here)
# and one TAP line per program for tools/vmlog.
# Usage: bench.sh N RUNS [SIDES]
# SIDES, make bench's shared mode (BENCH_KERNELS=one: the kernel's own
# user_events and the module built to load beside it, in one kernel): the
# order to measure scale_bench in, e.g. "module,upstream": it runs once per
# side, the module's with its rue_-prefixed names (RUE_BENCH_PREFIX), each
# side's lines after a line "side NAME". write_bench -P measures both sides
# itself, every run of a case on one right after the other.
n=$1
runs=$2
sides=${3:-}
out=/tmp/bench.out
tracefs=/sys/kernel/tracing

if grep -q '^rust_user_events ' /proc/modules; then
	if [ -e $tracefs/user_events_data ] && [ -e $tracefs/rue_user_events_data ]; then
		echo "info provider both" >$out
	else
		echo "info provider module" >$out
	fi
else
	echo "info provider builtin" >$out
fi
# 8 KiB sub-buffers, so a record with a 4 KiB payload fits (write_bench checks
# it lands); both kernels run with the same ring buffer.
echo 8 >$tracefs/buffer_subbuf_size_kb

# The TAP plan, declared before the first step (tools/vmlog checks the count): write_bench,
# then scale's three steps once, or once per side.
nsides=1
[ -z "$sides" ] || nsides=$(echo "$sides" | tr , '\n' | grep -c .)
echo "1..$((1 + 3 * nsides))"
t=0
step() {
	t=$((t + 1))
	if "$@" >>$out; then
		echo "ok $t $*"
	else
		echo "not ok $t $*"
	fi
}
scale() {
	step scale_bench -r "$runs" events 10 1000 10000
	step scale_bench -r "$runs" enablers 10 1000 10000 100000
	step scale_bench -r "$runs" fanout 1x1000 10x100 100x10
}
if [ -z "$sides" ]; then
	step write_bench -n "$n" -r "$runs"
	scale
else
	step write_bench -P -n "$n" -r "$runs"
	for side in $(echo "$sides" | tr , " "); do
		echo "side $side" >>$out
		if [ "$side" = module ]; then
			export RUE_BENCH_PREFIX=rue_
		else
			unset RUE_BENCH_PREFIX
		fi
		scale
	done
fi
cat $out
