#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# `make demo`: boots the test VM, loads rust_user_events.ko, shows the tracefs
# files and user_events_status, and unloads the module.
# Usage: demo.sh KDIR
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
kdir=$1
build="$top/build/demo"
rm -rf "$build"
mkdir -p "$build/guest"
cat >"$build/guest/demo.sh" <<'DEMO'
set -x
lsmod
ls -l /sys/kernel/tracing/user_events_data /sys/kernel/tracing/user_events_status
cat /sys/kernel/tracing/user_events_status
rmmod rust_user_events
ls /sys/kernel/tracing/ | grep user_events || echo "(no user_events files after rmmod)"
insmod /rue/rust_user_events.ko
cat /sys/kernel/tracing/user_events_status
DEMO
bash "$top/tools/vm/run.sh" --kdir "$kdir" --add "$build/guest" --log "$build/vm.log" \
	-- sh /rue/demo.sh >"$build/vmlog.txt" 2>&1
status=$?
sed -n '/^RUE-VM-BOOTED/,/^RUE-CMD-EXIT/p' "$build/vm.log" | tr -d '\r' | grep -v '^RUE-'
grep -E '^(FAIL|vm:)' "$build/vmlog.txt"
exit $status
