#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Runs in the test VM booted with another build of the test kernel: the same
# tree and release, relinked with another version (#2, tools/kernel/build.sh),
# as a rebuilt kernel or a same-ABI upload is. The module built against the
# tree (build #1) must refuse to load, saying which build it wants and which
# it found (src/identity.rs), and leave nothing behind.
T=/sys/kernel/tracing
d=/rue/identity
n=0
result() { n=$((n + 1)); if [ "$1" -eq 0 ]; then echo "ok $n $2"; else echo "not ok $n $2"; fi; }

echo "TAP version 13"
echo "1..6"
recorded=$(cat $d/recorded-version)
[ "$(uname -r)" = "$(cat $d/release)" ]
result $? "this kernel has the release the module was built for ($(uname -r))"
[ -n "$recorded" ] && [ "$(uname -v)" != "$recorded" ]
result $? "but another build: '$(uname -v)', not '$recorded'"
out=$(insmod $d/rust_user_events.ko 2>&1)
status=$?
echo "# insmod: $out"
[ "$status" -ne 0 ]
result $? "the module refuses to load"
# ENOEXEC, as for a wrong vermagic: busybox's insmod words it "invalid module format", kmod's
# strerror()'s "Exec format error".
case $out in *"invalid module format"* | *"Exec format error"*) r=0 ;; *) r=1 ;; esac
result $r "insmod reports ENOEXEC, as for a wrong vermagic"
dmesg | grep -F "rust_user_events: built for the kernel build '$recorded'" | grep -qF "but this one is '$(uname -v)'"
result $? "the kernel log names the build it was made for and the one it found"
! grep -q '^rust_user_events ' /proc/modules && [ ! -e $T/user_events_data ] && [ ! -e $T/user_events_status ]
result $? "nothing of it is left: no module, no tracefs files"
