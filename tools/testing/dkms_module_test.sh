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

echo "TAP version 13"
echo "1..9"
rmmod rust_user_events
result $? "the module built by make debian unloads"
insmod /rue/dkms/rust_user_events.ko
result $? "the module DKMS installed loads into Debian's kernel"
[ -e $T/user_events_data ] && [ -e $T/user_events_status ]
result $? "it creates user_events_data and user_events_status"
# traced_client (tools/testing/traced_client.sh): rue_example writes 3 events, all in the trace.
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
