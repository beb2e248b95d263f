#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Runs in the Debian test VM booted with the files `apt install
# rust-user-events-modules-amd64` installed in the trixie root (run.sh --root:
# /usr/lib/modules/RELEASE with the packaged module and depmod's indexes,
# modules-load.d, modprobe.d), and no module loaded by the harness: the
# guest's init loaded what modules-load.d names, by modprobe, as a booting
# Debian system does (tools/vm/init). Checks that this is the packaged module,
# and that real clients work through it.
T=/sys/kernel/tracing
ko=/lib/modules/$(uname -r)/updates/rust_user_events.ko
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
echo "1..5"
[ -e /rue/no-module ] && grep -q '^rust_user_events ' /proc/modules
result $? "rust_user_events is loaded at boot by modules-load.d, not by the harness"
# The harness put no module in the guest: the packaged file is the only one.
[ -f "$ko" ] && [ "$(find / -xdev -name 'rust_user_events.ko*')" = "$(realpath "$ko")" ]
result $? "the only rust_user_events.ko in the guest is the packaged one, $ko"
# The loaded module's build ID note (as the kernel shows it) is that file's.
hex() { od -An -tx1 -v "$1" | tr -d ' \n'; }
note=$(hex /sys/module/rust_user_events/notes/.note.gnu.build-id 2>/dev/null)
[ "${#note}" -gt 32 ] && hex "$ko" | grep -q "$note"
result $? "the loaded module has that file's build ID"
[ -e $T/user_events_data ] && [ -e $T/user_events_status ]
result $? "it creates user_events_data and user_events_status"
traced_client
result $? "a client writes 3 events while a tracer listens, and the trace has all 3"
