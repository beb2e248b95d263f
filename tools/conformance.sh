#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# `make conformance`: the kernel's own user_events selftests, built unmodified
# from KDIR's source tree, run in the test VM against rust_user_events.
# Prints each program's "# Totals:" line. Informational: exits 0 whatever the
# totals, unless the VM itself failed to run them (kernel log reports included).
# Usage: conformance.sh KDIR
set -uo pipefail

. "$(dirname "$0")/common.sh"
rue_begin conformance "$@"
rue_build_guest || exit 1
{
	for t in ftrace_test dyn_test perf_test abi_test; do
		echo "rue-run upstream-$t $t"
	done
} >"$build/guest/conformance-cmd.sh"
bash "$top/tools/vm/run.sh" --kdir "$kdir" --add "$build/guest" --log "$build/vm.log" \
	-- sh /rue/conformance-cmd.sh >"$build/vmlog.txt" 2>&1
vm_status=$?
echo "== upstream selftests (unmodified) against rust_user_events"
current=
while IFS= read -r line; do
	line=${line%$'\r'}
	case "$line" in
	"RUE-PROG-BEGIN "*) current=${line#RUE-PROG-BEGIN upstream-} ;;
	"# Totals:"*) printf '%-12s %s\n' "$current" "$line" ;;
	esac
done <"$build/vm.log"
grep -E '^(FAIL|SKIP) vm:|kernel log reports' -A20 "$build/vmlog.txt" | grep -v '^FAIL upstream' || true
echo "full results: $build/vmlog.txt"
if grep -q '^FAIL vm:' "$build/vmlog.txt"; then
	exit 1
fi
exit 0
