#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# traced_client: in the test VM, a client that writes while a tracer listens, for the tests
# of a module users install (dkms_module_test, package_boot_test). rue_example
# (samples/example.c) waits for its event to be enabled and writes 3 events; the trace must
# hold all 3. The event is made persistent first (a u: line), so that it outlives the client
# and the trace can still format its records (an event deleted at the client's exit leaves
# "Unknown type"), then deleted. Prints nothing; exits 0 if all 3 were recorded.
T=/sys/kernel/tracing
EVENT='rue_example u32 count; char[16] msg'
echo "u:$EVENT" >>$T/dynamic_events || exit 1
echo >$T/trace
rue_example 3 60 >/tmp/rue_example.out 2>&1 &
pid=$!
echo 1 >$T/events/user_events/rue_example/enable
wait $pid
rc=$?
echo 0 >$T/events/user_events/rue_example/enable
records=$(grep -c 'rue_example: count=' $T/trace)
echo "-:$EVENT" >>$T/dynamic_events || exit 1
[ $rc -eq 0 ] && grep -q 'wrote 3 events, skipped 0' /tmp/rue_example.out && [ "$records" -eq 3 ]
