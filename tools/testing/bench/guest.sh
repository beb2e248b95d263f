#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# One round of make bench inside a VM (tools/bench.sh copies it to the guest's
# /rue/bench.sh): write_bench and scale_bench, their "case" lines collected in
# /tmp and printed at the end, so the console is quiet while they measure.
# Prints "info provider module|builtin" (who implements user_events here) and
# one TAP line per program for tools/vmlog.
# Usage: bench.sh N RUNS
n=$1
runs=$2
out=/tmp/bench.out
tracefs=/sys/kernel/tracing

if grep -q '^rust_user_events ' /proc/modules; then
	echo "info provider module" >$out
else
	echo "info provider builtin" >$out
fi
# 8 KiB sub-buffers, so a record with a 4 KiB payload fits (write_bench checks
# it lands); both kernels run with the same ring buffer.
echo 8 >$tracefs/buffer_subbuf_size_kb

t=0
step() {
	t=$((t + 1))
	if "$@" >>$out; then
		echo "ok $t $*"
	else
		echo "not ok $t $*"
	fi
}
step write_bench -n "$n" -r "$runs"
step scale_bench -r "$runs" events 10 1000 10000
step scale_bench -r "$runs" enablers 10 1000 10000
step scale_bench -r "$runs" fanout 1x1000 10x100 100x10
cat $out
