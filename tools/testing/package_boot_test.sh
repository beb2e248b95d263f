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
# traced_client (tools/testing/traced_client.sh): rue_example writes 3 events, all in the trace.
traced_client
result $? "a client writes 3 events while a tracer listens, and the trace has all 3"
