#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# `make check`: host unit tests and a rustfmt check of the module's sources,
# then one test-VM run with the project's guest tests and every passing
# upstream selftest (tools/testing/upstream-pass.txt).
# Ends with one line "check: N passed, N failed, N skipped"; exits 1 on any failure.
# Usage: check.sh KDIR
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
kdir=$1
build="$top/build/check"
rm -rf "$build"
mkdir -p "$build"
passed=0 failed=0 skipped=0

echo "== host: cargo test"
start=$(date +%s)
cargo test --workspace --manifest-path "$top/Cargo.toml" 2>&1 | tee "$build/host.log"
host_status=${PIPESTATUS[0]}
while read -r p f i; do
	passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + i))
done < <(sed -n 's/^test result: [a-zA-Z]*\. \([0-9]*\) passed; \([0-9]*\) failed; \([0-9]*\) ignored.*/\1 \2 \3/p' "$build/host.log")
if [ "$host_status" -ne 0 ] && [ "$failed" -eq 0 ]; then
	echo "FAIL host: cargo test exited $host_status"
	failed=$((failed + 1))
fi
echo "host: $(($(date +%s) - start)) s"

echo "== host: rustfmt --check with the kernel's .rustfmt.toml"
ksrc=$(readlink -f "$kdir/source" 2>/dev/null || echo "$kdir")
mapfile -t module_sources < <(find "$top/src" -name '*.rs' ! -name bindings_generated.rs | sort)
if rustfmt --edition 2021 --config-path "$ksrc/.rustfmt.toml" --check "${module_sources[@]}"; then
	echo "PASS host: module sources are rustfmt-clean"
	passed=$((passed + 1))
else
	echo "FAIL host: module sources are not rustfmt-clean (see the diff above)"
	failed=$((failed + 1))
fi

echo "== guest: building test programs"
if ! bash "$top/tools/testing/build-guest.sh" "$kdir" "$build/guest" "$top/rust_user_events.ko"; then
	echo "FAIL guest: test programs did not build"
	echo "check: $passed passed, $((failed + 1)) failed, $skipped skipped"
	exit 1
fi

{
	for t in files_test rue_files_rs events_test dyn_events_test bpf_test perf_events_test perf_tool_test lifecycle_test module_test; do
		echo "rue-run $t $t"
	done
	# A failed module_test may leave the module unloaded; later programs need it.
	echo "grep -q '^rust_user_events ' /proc/modules || insmod /rue/rust_user_events.ko" 
	grep -Ev '^#|^$' "$top/tools/testing/upstream-pass.txt" | while read -r prog test; do
		echo "rue-run 'upstream $prog' $prog -t $test"
	done
} >"$build/guest/check-cmd.sh"

echo "== guest: test VM"
bash "$top/tools/vm/run.sh" --kdir "$kdir" --module "$top/rust_user_events.ko" \
	--add "$build/guest" --log "$build/vm.log" --summary "$build/vm.summary" \
	-- sh /rue/check-cmd.sh 2>&1 || true
if [ -f "$build/vm.summary" ]; then
	read -r p f i <"$build/vm.summary"
	passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + i))
else
	echo "FAIL guest: the test VM produced no summary"
	failed=$((failed + 1))
fi

echo "check: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
