#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# `make demo`: boots the test VM with rust_user_events.ko loaded, shows the
# tracefs files and user_events_status, unloads and reloads the module, then
# runs the sample programs (samples/example.c as rue_example, samples/rust-example
# as rue_example_rs): once with nobody listening (every event is skipped), once
# with the event enabled in ftrace (every event is written), showing
# user_events_status and the events' lines in the trace buffer; then records
# the C sample with the real perf tool and shows the samples with perf script,
# and records a real client (OpenTelemetry's user_events logs exporter, in
# rue_otel_demo_rs) with perf and decodes its events with Microsoft's decoder.
# Exits non-zero if the build, the VM or anything in the demo fails.
# Usage: demo.sh KDIR
set -uo pipefail

. "$(dirname "$0")/common.sh"
rue_begin demo "$@"

echo "== building the sample programs (and the test programs) for the VM"
if ! rue_build_guest; then
	echo "demo: building the guest programs failed" >&2
	exit 1
fi

# Runs in the VM (busybox sh). Each command is shown as "$ command" before it runs.
cat >"$build/guest/demo.sh" <<'DEMO'
T=/sys/kernel/tracing
section() { echo; echo "== $*"; }
run() { echo "\$ $*"; eval "$*"; }
die() { echo "demo: FAILED: $*"; exit 1; }

section "the module and its tracefs files"
run lsmod
run ls -l $T/user_events_data $T/user_events_status $T/user_events_stats
run cat $T/user_events_status
run cat $T/user_events_stats

section "rmmod removes the files, insmod brings them back"
run rmmod rust_user_events || die "rmmod"
run "ls $T | grep user_events || echo '(no user_events files after rmmod)'"
run insmod /rue/rust_user_events.ko || die "insmod"
run cat $T/user_events_status

# sample PROG: the two runs of one sample program.
sample() {
	prog=$1
	ev=$T/events/user_events/$prog

	section "$prog: nobody listening, so it skips every event"
	echo "\$ $prog 5"
	$prog 5 >/tmp/out 2>&1
	rc=$?
	cat /tmp/out
	[ $rc -eq 0 ] || die "$prog exited $rc"
	grep -q 'wrote 0 events, skipped 5' /tmp/out || die "$prog wrote events nobody listened to"

	section "$prog: ftrace enables the event, so it writes every event"
	# The event exists only while a program has it registered (it is deleted
	# with its last user), so the program registers first and waits for the
	# kernel to set its enable bit.
	echo "\$ $prog 5 10 &    # register, wait up to 10 s for a tracer, then loop"
	$prog 5 10 >/tmp/out 2>&1 &
	pid=$!
	# Registered once it says it is waiting (its output goes to a file to keep
	# the order of the lines here).
	i=0
	until grep -q '^[^ ]*: waiting' /tmp/out; do
		i=$((i + 1))
		if ! kill -0 $pid 2>/dev/null || [ $i -gt 100 ]; then
			kill $pid 2>/dev/null
			cat /tmp/out
			die "$prog did not register and wait"
		fi
		sleep 0.1
	done
	cat /tmp/out
	shown=$(wc -l </tmp/out)
	[ -e $ev/enable ] || die "$ev does not exist while $prog has it registered"
	run "echo 1 > $ev/enable" || die "enabling $prog"
	wait $pid
	rc=$?
	sed "1,${shown}d" /tmp/out
	[ $rc -eq 0 ] || die "$prog exited $rc"
	grep -q 'wrote 5 events, skipped 0' /tmp/out || die "$prog did not write 5 events"
	run cat $T/user_events_status
	grep -q "^$prog # Used by ftrace" $T/user_events_status || die "status does not show $prog used by ftrace"
	run "grep ' $prog:' $T/trace"
	n=$(grep -c " $prog:" $T/trace)
	[ "$n" -eq 5 ] || die "expected 5 trace lines of $prog, found $n"
	run "echo 0 > $ev/enable" || die "disabling $prog"
	run ": > $T/trace"
}

sample rue_example
sample rue_example_rs

section "perf: perf record and perf script on the C sample"
# perf resolves user_events:rue_example when it starts, so the event must exist
# first: dynamic_events creates it (persistent), the program then matches it.
fields="u32 count; char[16] msg"
run "echo 'u:rue_example $fields' >> $T/dynamic_events" || die "creating rue_example"
run perf record -q -e user_events:rue_example -o /tmp/perf.data -- rue_example 5 >/tmp/out 2>&1
rc=$?
cat /tmp/out
[ $rc -eq 0 ] || die "perf record exited $rc"
grep -q 'wrote 5 events, skipped 0' /tmp/out || die "rue_example did not write 5 events under perf"
run perf script -i /tmp/perf.data >/tmp/script 2>&1 || die "perf script"
cat /tmp/script
n=$(grep -c 'user_events:rue_example: count=' /tmp/script)
[ "$n" -eq 5 ] || die "expected 5 perf samples of rue_example, found $n"
run "echo '-:rue_example $fields' >> $T/dynamic_events" || die "deleting rue_example"

section "perf: a real client, OpenTelemetry's user_events logs exporter"
# rue_otel_demo_rs logs through opentelemetry-user-events-logs, whose exporter registers one
# EventHeader tracepoint per level (rue_otel_demo_L1K1 .. _L5K1). perf records the Info one;
# dynamic_events creates it first with the fields the exporter registers.
ehfields="u8 eventheader_flags; u8 version; u16 id; u16 tag; u8 opcode; u8 level"
run "echo 'u:rue_otel_demo_L4K1 $ehfields' >> $T/dynamic_events" || die "creating rue_otel_demo_L4K1"
# --sample-identifier: the decoder finds each sample's event by its id.
run perf record -q --sample-identifier -e user_events:rue_otel_demo_L4K1 -o /tmp/otel.data \
	-- rue_otel_demo_rs 3 >/tmp/out 2>&1
rc=$?
cat /tmp/out
[ $rc -eq 0 ] || die "perf record exited $rc"
grep -q 'logged 3 records, skipped 0' /tmp/out || die "rue_otel_demo_rs did not log 3 records under perf"
# perf shows the EventHeader header fields; the rest of the event is its EventHeader payload.
run perf script -i /tmp/otel.data >/tmp/script 2>&1 || die "perf script"
cat /tmp/script
n=$(grep -c 'user_events:rue_otel_demo_L4K1: ' /tmp/script)
[ "$n" -eq 3 ] || die "expected 3 perf samples of rue_otel_demo_L4K1, found $n"
# Microsoft's decoder (tracepoint_perf, tracepoint_decode) reads the whole event.
run rue_perf_decode_rs /tmp/otel.data >/tmp/decoded 2>&1
rc=$?
cat /tmp/decoded
[ $rc -eq 0 ] || die "rue_perf_decode_rs exited $rc"
n=$(grep -c 'rue_otel_demo:Log .*"body": "hello from OpenTelemetry"' /tmp/decoded)
[ "$n" -eq 3 ] || die "expected 3 decoded OpenTelemetry logs, found $n"
run "echo '-:rue_otel_demo_L4K1 $ehfields' >> $T/dynamic_events" || die "deleting rue_otel_demo_L4K1"

section "done"
DEMO

echo "== booting the test VM (QEMU without KVM: a few minutes)"
bash "$top/tools/vm/run.sh" --kdir "$kdir" --add "$build/guest" --log "$build/vm.log" \
	-- sh /rue/demo.sh >"$build/vmlog.txt" 2>&1
status=$?
tr -d '\r' <"$build/vm.log" | sed -n '/^RUE-VM-BOOTED/,/^RUE-CMD-EXIT/p' | grep -v '^RUE-'
grep -E '^(FAIL|vm:)' "$build/vmlog.txt"
cmd_exit=$(tr -d '\r' <"$build/vm.log" | sed -n 's/^RUE-CMD-EXIT \([0-9]*\)$/\1/p' | tail -n 1)
if [ "$cmd_exit" != 0 ]; then
	echo "demo: the demo failed in the VM (exit status ${cmd_exit:-unknown}); console log: $build/vm.log" >&2
	status=1
fi
exit $status
