#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Runs in the Debian test VM: the module exactly as `make install` left it
# on a Debian system (built and signed by DKMS in the trixie root, copied to
# /rue/dkms) replaces the loaded one, serves a client, and unloads cleanly.
# The module built by make debian is loaded again afterwards.
T=/sys/kernel/tracing
n=0
result() { n=$((n + 1)); if [ "$1" -eq 0 ]; then echo "ok $n $2"; else echo "not ok $n $2"; fi; }

# A client that writes while a tracer listens: rue_example (samples/example.c) waits for
# its event to be enabled and writes 3 events; the trace holds all 3. The event is made
# persistent first (a u: line), so that it outlives the client and the trace can still
# format its records (an event deleted at the client's exit leaves "Unknown type"), then
# deleted. Prints nothing; its status says.
EVENT='rue_example u32 count; char[16] msg'
traced_client() {
	echo "u:$EVENT" >>$T/dynamic_events || return 1
	echo >$T/trace
	rue_example 3 60 >/tmp/rue_example.out 2>&1 &
	pid=$!
	echo 1 >$T/events/user_events/rue_example/enable
	wait $pid
	rc=$?
	echo 0 >$T/events/user_events/rue_example/enable
	records=$(grep -c 'rue_example: count=' $T/trace)
	echo "-:$EVENT" >>$T/dynamic_events || return 1
	[ $rc -eq 0 ] && grep -q 'wrote 3 events, skipped 0' /tmp/rue_example.out && [ "$records" -eq 3 ]
}

echo "TAP version 13"
echo "1..9"
rmmod rust_user_events
result $? "the module built by make debian unloads"
insmod /rue/dkms/rust_user_events.ko
result $? "the module DKMS installed loads into Debian's kernel"
[ -e $T/user_events_data ] && [ -e $T/user_events_status ]
result $? "it creates user_events_data and user_events_status"
traced_client
result $? "a client writes 3 events while a tracer listens, and the trace has all 3"
echo 'u:rue_dkms u32 x' >>$T/dynamic_events && grep -q '^rue_dkms' $T/user_events_status
result $? "a u: line in dynamic_events creates an event user_events_status lists"
# As upstream, a delete names the fields of an event that has any.
echo '-:rue_dkms u32 x' >>$T/dynamic_events && ! grep -q '^rue_dkms' $T/user_events_status
result $? "a -: line deletes it"
rmmod rust_user_events
result $? "the DKMS-installed module unloads"
[ ! -e $T/user_events_data ]
result $? "its files are gone after rmmod"
insmod /rue/rust_user_events.ko
result $? "the module built by make debian loads again"
