#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# `make check`: host unit tests, a rustfmt check of the module's sources and
# the import-circle check of src/ (tools/import-graph.py), then the project's guest tests and every passing upstream selftest
# (tools/testing/upstream-pass.txt) in the test VM, on two kernels:
#   - the project's debug test kernel (KDIR: clang, KASAN, lockdep, kmemleak);
#   - Debian's own 7.3.4 kernel images, every Rust-enabled flavour
#     (tools/debian/kernels.conf: amd64, cloud-amd64, rt-amd64, and arm64,
#     cloud-arm64, rt-arm64, arm64-16k under qemu-system-aarch64), unmodified,
#     with the module built for each by Debian's toolchain
#     (tools/debian/build.sh), after the Debian install itself (make install,
#     DKMS) is tested in a trixie root. The arm64 guests run the same
#     programs, cross-built (build-guest.sh --arch arm64). Then make packages,
#     its packages installed, upgraded and removed with apt in the trixie root
#     (packages-test.sh), and Debian's amd64 kernel booted with them. Each
#     flavour's suite loads the module of that flavour's package;
#   - Debian's 7.2 kernels: sid's 7.2.13+deb14 amd64 and arm64 (gcc-16, rustc
#     1.97.1, in a sid root; RUE_DEBIAN=sid), and trixie-backports' newest,
#     7.2.12+deb13 amd64 (gcc-14, rustc 1.85.1; RUE_DEBIAN=trixie-7.2);
#   - a real kernel upgrade (tools/debian/upgrade-test.sh): a trixie system
#     with systemd on 7.2.12+deb13 and the module's packages, apt upgrade to
#     7.3.4+deb13, rebooted with and without the new module package (DKMS);
#   - the next toolchain: Debian experimental's 7.3 kernel (7.3~rc7), the
#     module built for it in a sid root by gcc-16 and rustc 1.97.1
#     (RUE_DEBIAN=experimental, tools/debian/kernels.conf).
# The whole suite runs where the module's code path differs (architecture,
# preemption model, page size, kernel series, toolchain); a smaller set (the
# module loads, the real clients, the upstream selftests, a clean kernel log)
# where only the configuration differs: Debian's cloud flavours,
# trixie-backports' 7.2 and experimental's kernel (when no mirror changed).
# Prints a summary per kernel and ends with one line
# "check: N passed, N failed, N skipped" over all of them; exits 1 on any failure.
# RUE_CHECK_KERNELS=test (or debian, sid, trixie-7.2, experimental) runs one set only, for quicker local runs;
# test-rt (not in the default set) adds the test kernel's PREEMPT_RT variant
# (tools/kernel/rt-fragment.sh), built and cached like the test kernel.
# Usage: check.sh KDIR
set -uo pipefail

. "$(dirname "$0")/common.sh"
kernels=${RUE_CHECK_KERNELS:-test debian sid trixie-7.2 experimental}
for k in $kernels; do
	case "$k" in
	test | test-rt | debian | sid | trixie-7.2 | experimental) ;;
	*) echo "check: RUE_CHECK_KERNELS: unknown kernel '$k' (test, test-rt, debian, sid, trixie-7.2, experimental)" >&2; exit 2 ;;
	esac
done
rue_begin check "$@"
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
# No host test is expected to be ignored: one that is did not run.
if [ "$skipped" -ne 0 ]; then
	echo "FAIL host: cargo test ignored $skipped test(s); no host test is expected to be ignored"
	failed=$((failed + skipped)) skipped=0
fi
echo "host: $(($(date +%s) - start)) s"

echo "== host: rustfmt --check with the kernel's .rustfmt.toml"
ksrc=$(readlink -f "$kdir/source" 2>/dev/null || echo "$kdir")
mapfile -t module_sources < <(find "$top/src" -name '*.rs' ! -name '*_generated.rs' | sort)
if rustfmt --edition 2021 --config-path "$ksrc/.rustfmt.toml" --check "${module_sources[@]}"; then
	echo "PASS host: module sources are rustfmt-clean"
	passed=$((passed + 1))
else
	echo "FAIL host: module sources are not rustfmt-clean (see the diff above)"
	failed=$((failed + 1))
fi

echo "== host: clippy on the module (the kernel's lints, CLIPPY=1)"
# A staged copy, so the work tree's rust_user_events.ko is not rebuilt under clippy.
cl="$build/clippy"
rm -rf "$cl"
if bash "$top/tools/debian/stage-sources.sh" "$cl/src" &&
	make -C "$kdir" M="$cl/src" LLVM=-19 CLIPPY=1 modules >"$cl/build.log" 2>&1 &&
	! grep -q '^warning' "$cl/build.log"; then
	echo "PASS host: clippy has nothing to say about the module"
	passed=$((passed + 1))
else
	grep -A8 -E '^(warning|error)' "$cl/build.log" | head -60
	echo "FAIL host: clippy (above; $cl/build.log)"
	failed=$((failed + 1))
fi

echo "== host: imports in src/ only go down the layer map, no circle (tools/import-graph.py)"
if python3 "$top/tools/import-graph.py" "$top/src" >"$build/import-graph.txt"; then
	echo "PASS host: src/ imports only go down the layer map, and none circles"
	passed=$((passed + 1))
else
	cat "$build/import-graph.txt"
	echo "FAIL host: src/ has an import circle or an import up the layer map (above)"
	failed=$((failed + 1))
fi

echo "== guest: building test programs"
if ! rue_build_guest; then
	echo "FAIL guest: test programs did not build"
	echo "check: $passed passed, $((failed + 1)) failed, $skipped skipped"
	exit 1
fi

{
	for t in files_test rue_files_rs events_test dyn_events_test compat_test compat_test_64 fault_test bpf_test \
		perf_events_test perf_tool_test rue_tracepoint_rs rue_eventheader_rs rue_otel_logs_rs rue_eventpipe_rs \
		lifecycle_test enabler_test charge_test group_test module_test; do
		echo "rue-run $t $t"
	done
	# A failed module_test may leave the module unloaded; later programs need it: loads it
	# again if so, and fails unless it is loaded.
	echo "rue-run module_loaded module_loaded"
	# The syscall fuzzer, every operation, with a new seed each run (printed first; `make fuzz
	# FUZZ_SEED=N` repeats it): 60 s, then 30 s failing allocations in its module calls (-f, a
	# skip on a kernel without fault injection).
	echo "rue-run fuzz_test fuzz_test -t 60"
	echo "rue-run 'fuzz_test faults' fuzz_test -t 30 -f 10"
	grep -Ev '^#|^$' "$top/tools/testing/upstream-pass.txt" | while read -r prog test; do
		echo "rue-run 'upstream $prog' $prog -t $test"
	done
} >"$build/guest/check-cmd.sh"
# The smaller set, for a kernel that differs from one the whole suite runs on only in its
# configuration (kernels.conf's DEBIAN_SHORT_FLAVOURS; experimental's when no mirrored body
# changed): the module loads and is usable (module_loaded), the real clients run through it,
# every upstream selftest that passes passes, and the kernel log stays clean (every VM run).
{
	echo "rue-run module_loaded module_loaded"
	for t in rue_tracepoint_rs rue_eventheader_rs rue_otel_logs_rs rue_eventpipe_rs perf_tool_test; do
		echo "rue-run $t $t"
	done
	grep "^rue-run 'upstream " "$build/guest/check-cmd.sh"
} >"$build/guest/check-cmd-short.sh"
# Every program build-guest.sh built runs, but for those the tests themselves drive (perf and
# its writer, perf_tool_test's decoder and client, the module tests' traced_client) and the
# samples: a new test program left
# out of the list above would otherwise never run.
helpers=" perf perf_tool_writer rue_calibrate rue_example rue_example_rs rue_otel_demo_rs rue_perf_decode_rs traced_client "
for prog in "$build"/guest/bin/*; do
	prog=$(basename "$prog")
	case "$helpers" in *" $prog "*) continue ;; esac
	if ! grep -qw -- "$prog" "$build/guest/check-cmd.sh"; then
		echo "FAIL guest: $prog is built, but make check does not run it"
		failed=$((failed + 1))
	fi
done

summaries=()

# suite NAME TAG SCRIPT RUN.SH-ARGS...: one VM run of check-cmd.sh (the run's --add
# directories give it and the programs; SCRIPT is the copy the guest gets, the last one
# added); adds its counts. The run passes only if every program SCRIPT lists began and
# ended, every skip is one tools/testing/expected-skips expects on kernel TAG, run.sh
# succeeded and its summary is well-formed.
suite() {
	local name=$1 tag=$2 script=$3 status=0 p f i
	shift 3
	echo "== guest: $name"
	rm -f "$build/$tag.vm.summary"
	bash "$top/tools/vm/run.sh" "$@" --log "$build/$tag.vm.log" --summary "$build/$tag.vm.summary" \
		--programs "$script" --skips "$top/tools/testing/expected-skips" --name "$tag" \
		-- sh /rue/check-cmd.sh 2>&1 || status=$?
	if [ -f "$build/$tag.vm.summary" ] && read -r p f i <"$build/$tag.vm.summary" &&
		[[ "$p $f $i" =~ ^[0-9]+\ [0-9]+\ [0-9]+$ ]]; then
		if [ "$status" -ne 0 ] && [ "$f" -eq 0 ]; then
			echo "FAIL guest: the $name VM run exited $status, yet no test failed"
			f=1
		fi
	else
		echo "FAIL guest: the $name VM run gave no well-formed summary (run.sh exited $status)"
		p=0 f=1 i=0
	fi
	passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + i))
	summaries+=("$name: $p passed, $f failed, $i skipped")
}

# VM lanes. A TCG guest keeps about one of the machine's two cores busy, so the VM runs (and the
# upgrade test, which boots its own) go in the background, each as soon as what it needs is built
# and a lane is free: one lane while this script still builds (the test kernel's VM while the
# Debian kernels' modules, install tests and packages are built, then Debian's 7.3.4 kernels'
# while the other sets' roots and modules are), RUE_CHECK_LANES (2) once every build is done, the
# whole suite's runs before the smaller set's. Two VMs beside a build were too many: a cold run
# slowed Debian's rt-amd64 run to twice its calibration, and a fork-copy bound failed. A lane's
# output is kept and printed when it ends. Every time bound in a guest is scaled by the
# calibration its VM measures at boot (tools/vm/init), under the load it runs in.
lanes=${RUE_CHECK_LANES:-2}
lane_limit=1
declare -A lane_tags=()
lane_queue=()
# A lane's output, when it ends, goes to the script's own output, wherever the step that noticed
# sends its own (polled).
exec 3>&1

# lane TAG FUNCTION ARGS...: queues FUNCTION ARGS for a lane; it starts at once if one is free,
# else when lane_poll or lane_wait finds one. Never waits.
lane() {
	lane_queue+=("$(printf '%q ' "$@")")
	lane_poll
}

# lane_first TAG FUNCTION ARGS...: as lane, but first in the queue: a run much longer than the
# others (the upgrade test's), so that it does not end alone after every other.
lane_first() {
	lane_queue=("$(printf '%q ' "$@")" ${lane_queue[@]+"${lane_queue[@]}"})
	lane_poll
}

# polled CMD...: runs CMD (a program: what it changes in this shell is lost) in the background
# and polls the lanes every 2 s until it ends, so that a lane that ends during a long build
# starts the next run at once; returns CMD's status. CMD's output goes where polled's does.
polled() {
	"$@" &
	local pid=$!
	while kill -0 "$pid" 2>/dev/null; do
		lane_poll
		sleep 2
	done
	wait "$pid"
}

# lane_start TAG FUNCTION ARGS...: FUNCTION ARGS in the background; its counts and summary lines
# go to $build/TAG.lane.result, for lane_collect.
lane_start() {
	local tag=$1
	shift
	rm -f "$build/$tag.lane.result"
	(
		passed=0 failed=0 skipped=0 summaries=()
		"$@"
		{
			echo "$passed $failed $skipped"
			[ "${#summaries[@]}" -eq 0 ] || printf '%s\n' "${summaries[@]}"
		} >"$build/$tag.lane.result"
	) >"$build/$tag.lane.out" 2>&1 &
	lane_tags[$!]=$tag
}

# lane_collect [PID]: waits for lane PID (any lane without it) to end, prints its output and adds
# its counts. A lane that left no well-formed result (killed, or a bug of this script) fails
# and did not run.
lane_collect() {
	local pid=${1:-} tag p f i
	local -a lines=()
	if [ -n "$pid" ]; then
		wait "$pid"
	elif ! wait -n -p pid "${!lane_tags[@]}" && [ -z "$pid" ]; then
		for pid in "${!lane_tags[@]}"; do
			echo "FAIL guest: lost the ${lane_tags[$pid]} run in the background"
			failed=$((failed + 1))
			summaries+=("${lane_tags[$pid]}: not run")
		done
		lane_tags=()
		return
	fi
	tag=${lane_tags[$pid]}
	unset "lane_tags[$pid]"
	cat "$build/$tag.lane.out"
	if [ -f "$build/$tag.lane.result" ] && mapfile -t lines <"$build/$tag.lane.result" &&
		[ "${#lines[@]}" -ge 1 ] && [[ "${lines[0]}" =~ ^[0-9]+\ [0-9]+\ [0-9]+$ ]]; then
		read -r p f i <<<"${lines[0]}"
		passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + i))
		summaries+=("${lines[@]:1}")
	else
		echo "FAIL guest: the $tag run in the background gave no result"
		failed=$((failed + 1))
		summaries+=("$tag: not run")
	fi
}

# lane_poll: counts the lanes that ended and starts queued runs in the free ones. Never waits.
lane_poll() {
	local pid
	for pid in "${!lane_tags[@]}"; do
		kill -0 "$pid" 2>/dev/null || lane_collect "$pid" >&3
	done
	while [ "${#lane_tags[@]}" -lt "$lane_limit" ] && [ "${#lane_queue[@]}" -gt 0 ]; do
		eval "lane_start ${lane_queue[0]}"
		lane_queue=("${lane_queue[@]:1}")
	done
}

# lane_wait: every queued run started, and every lane ended and counted; called once every build
# is done, it opens every lane.
lane_wait() {
	lane_limit=$lanes
	lane_poll
	while [ "${#lane_tags[@]}" -gt 0 ]; do
		lane_collect
		lane_poll
	done
}

# tap_log LOG STATUS: adds the results of a TAP log of the install or package tests
# (tools/debian), whose script exited STATUS, to the counts, and sets p and f. None of them is
# expected to skip; each declares its plan before its first result, its results must number
# the plan, and a script that failed must have reported a failure.
tap_log() {
	local log=$1 status=$2 plan_at first_at planned ran skips
	p=$(grep -c '^ok ' "$log")
	skips=$(grep -c '^ok .* # [Ss][Kk][Ii][Pp]' "$log")
	f=$(grep -c '^not ok ' "$log")
	ran=$((p + f))
	p=$((p - skips))
	if [ "$skips" -ne 0 ]; then
		echo "FAIL $log: $skips skip(s); no install or package test is expected to skip"
		f=$((f + skips))
	fi
	plan_at=$(grep -n -m 1 -E '^1\.\.[0-9]+$' "$log" | cut -d: -f1)
	first_at=$(grep -n -m 1 -E '^(not )?ok ' "$log" | cut -d: -f1)
	[ -z "$plan_at" ] || planned=$(sed -n "${plan_at}s/^1\.\.//p" "$log")
	if [ -z "$plan_at" ]; then
		echo "FAIL $log: no TAP plan"
		f=$((f + 1))
	elif [ -n "$first_at" ] && [ "$first_at" -lt "$plan_at" ]; then
		echo "FAIL $log: the TAP plan comes after the first result"
		f=$((f + 1))
	elif [ "$planned" -ne "$ran" ]; then
		echo "FAIL $log: planned $planned results, reported $ran"
		f=$((f + 1))
	fi
	if [ "$status" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "FAIL $log: the script exited $status, yet no test failed"
		f=1
	fi
	passed=$((passed + p)) failed=$((failed + f))
}

# arm64_guest: the arm64 kernels' guest, built once: the same programs cross-built, arm64's
# busybox; sets arm64_args, left empty when it could not be built.
arm64_args=()
arm64_tried=0
arm64_guest() {
	[ "$arm64_tried" -eq 0 ] || return 0
	arm64_tried=1
	echo "== guest: building test programs for arm64"
	if polled bash "$top/tools/testing/build-guest.sh" --arch arm64 "$kdir" "$build/guest-arm64" \
		"$top/rust_user_events.ko" && bbdir=$(bash "$top/tools/debian/fetch.sh" busybox-static arm64); then
		arm64_args=(--arch arm64 --busybox "$bbdir/usr/bin/busybox" --add "$build/guest-arm64")
	else
		echo "FAIL guest: test programs for arm64 did not build"
		failed=$((failed + 1))
	fi
}

# debian_suite NAME TAG FLAVOUR VMLINUZ KO EXTRA [RUN.SH-ARGS...]: the suite on a Debian kernel's
# own image VMLINUZ with the module KO, the guest programs of FLAVOUR's architecture and the
# directory EXTRA, which holds the run's command list (check-cmd.sh) and gets module_test's
# second provider, made from KO.
debian_suite() {
	local name=$1 tag=$2 flavour=$3 vmlinuz=$4 ko=$5 extra=$6
	local -a guest_args
	shift 6
	case "$flavour" in
	*arm64*)
		arm64_guest
		guest_args=("${arm64_args[@]}")
		;;
	*) guest_args=(--add "$build/guest") ;;
	esac
	if [ "${#guest_args[@]}" -eq 0 ]; then
		echo "FAIL debian: no test programs for $name"
		failed=$((failed + 1))
		summaries+=("$name: not run")
		return
	fi
	perl -pe 's/rust_user_events/rust_user_twin00/g' "$ko" >"$extra/rust_user_twin00.ko"
	suite "$name" "$tag" "$extra/check-cmd.sh" --kernel "$vmlinuz" --module "$ko" "${guest_args[@]}" \
		--add "$extra" "$@"
}

# debian_set_build SET LABEL: another set of Debian's kernels (kernels.conf's RUE_DEBIAN=SET):
# the module built for each of its flavours by that set's toolchain in its own root; the modules'
# paths are kept in $build/SET.kos for debian_set_run.
debian_set_build() {
	local set=$1 label=$2 built start ko
	local -a kos=()
	echo "== $set: the module for $label, by its toolchain"
	start=$(date +%s)
	rm -f "$build/$set.kos"
	if polled env RUE_DEBIAN="$set" bash "$top/tools/debian/build.sh" >"$build/$set.built" &&
		mapfile -t kos <"$build/$set.built" && [ "${#kos[@]}" -gt 0 ] && [ -f "${kos[0]}" ]; then
		echo "$set build: $(($(date +%s) - start)) s"
		for ko in "${kos[@]}"; do
			echo "PASS $set: built $ko"
			passed=$((passed + 1))
		done
		printf '%s\n' "${kos[@]}" >"$build/$set.kos"
	else
		echo "FAIL $set: the module did not build for $label (built: ${kos[*]:-nothing})"
		failed=$((failed + 1))
		summaries+=("Debian $label: not run")
	fi
}

# debian_set_run SET LABEL WHICH: the suite on each image of the set debian_set_build built for,
# in a lane each: the whole suite (WHICH full), or the smaller set on the set's
# DEBIAN_SHORT_FLAVOURS (WHICH short). A series other than the one the mirrors were audited
# against may have changed bodies: the build says which (and takes their fallbacks), and the
# suite runs the module as built.
debian_set_run() {
	local set=$1 label=$2 which=$3 ko krel flavour changed extra vmlinuz short is
	local -a kos=()
	[ -f "$build/$set.kos" ] || return 0
	mapfile -t kos <"$build/$set.kos"
	short=$(RUE_DEBIAN=$set bash -c '. "$1" && echo "${DEBIAN_SHORT_FLAVOURS[*]}"' sh \
		"$top/tools/debian/kernels.conf")
	for ko in "${kos[@]}"; do
		krel=$(basename "$(dirname "$ko")")
		flavour=${krel#*+deb[0-9]*-}
		case " $short " in *" $flavour "*) is=short ;; *) is=full ;; esac
		[ "$is" = "$which" ] || continue
		changed=$(sed -n 's/^pub(crate) const CHANGED: &str = "\(.*\)";$/\1/p' \
			"$(dirname "$ko")/src/src/mirrors_generated.rs")
		echo "$set: $krel: mirrored bodies that differ from their audited text: ${changed:-none}"
		extra="$build/$set-$flavour"
		rm -rf "$extra"
		mkdir -p "$extra"
		case "$is" in
		short) cp "$build/guest/check-cmd-short.sh" "$extra/check-cmd.sh" ;;
		*) cp "$build/guest/check-cmd.sh" "$extra/check-cmd.sh" ;;
		esac
		if vmlinuz=$(RUE_DEBIAN=$set bash "$top/tools/debian/vmlinuz.sh" "$flavour"); then
			case "$flavour" in *arm64*) arm64_guest ;; esac
			lane "debian-$set-$flavour" debian_suite "Debian $krel ($label)" "debian-$set-$flavour" \
				"$flavour" "$vmlinuz" "$ko" "$extra"
		else
			echo "FAIL $set: no kernel image for $krel"
			failed=$((failed + 1))
			summaries+=("Debian $krel ($label): not run")
		fi
	done
}

# debian_flavour FLAVOUR: the suite on Debian's FLAVOUR image, in a lane: the whole suite, or the
# smaller set on a flavour that differs from another only in its configuration.
debian_flavour() {
	local flavour=$1 frel ko extra vmlinuz deb
	frel=$DEBIAN_ABI-$flavour
	ko="$top/build/debian/$frel/rust_user_events.ko"
	extra="$build/debian-$flavour"
	rm -rf "$extra"
	mkdir -p "$extra/bin"
	# module_test's wrong-symbol builds, made for the amd64 and arm64 kernels (below).
	case "$flavour" in
	amd64 | arm64) cp "$build/wrong-symbol-$flavour/extra/"*.ko "$extra/" 2>/dev/null || true ;;
	esac
	if ! vmlinuz=$(bash "$top/tools/debian/vmlinuz.sh" "$flavour") || [ ! -f "$ko" ]; then
		echo "FAIL debian: no kernel image or module for $frel"
		failed=$((failed + 1))
		summaries+=("Debian $frel: not run")
		return
	fi
	# The module users get: the one in this kernel's package (signed, stripped of debug
	# information), which make packages made from make debian's above.
	deb=$(find "$build/packages/repo/pool" -name "rust-user-events-modules-${frel}_*.deb" 2>/dev/null | head -n 1)
	if [ -n "$deb" ] && dpkg-deb -x "$deb" "$extra/package" &&
		[ -f "$extra/package/usr/lib/modules/$frel/updates/rust_user_events.ko" ]; then
		ko="$extra/package/usr/lib/modules/$frel/updates/rust_user_events.ko"
	else
		echo "FAIL debian: no package of the module for $frel; the suite runs make debian's module"
		failed=$((failed + 1))
	fi
	case " ${DEBIAN_SHORT_FLAVOURS[*]} " in
	*" $flavour "*) cp "$build/guest/check-cmd-short.sh" "$extra/check-cmd.sh" ;;
	*) cp "$build/guest/check-cmd.sh" "$extra/check-cmd.sh" ;;
	esac
	case " ${DEBIAN_INSTALL_FLAVOURS[*]} " in
	*" $flavour "*)
		if [ -f "$build/debian-dkms-$flavour/rust_user_events.ko" ]; then
			# The very module DKMS installed in the root, loaded into its kernel.
			cp -a "$build/debian-dkms-$flavour" "$extra/dkms"
			install -m 0755 "$top/tools/testing/dkms_module_test.sh" "$extra/bin/dkms_module_test"
			echo "rue-run dkms_module_test dkms_module_test" >>"$extra/check-cmd.sh"
		else
			echo "FAIL debian: DKMS installed no module for $frel to load"
			failed=$((failed + 1))
		fi
		;;
	esac
	case "$flavour" in *arm64*) arm64_guest ;; esac
	lane "debian-$flavour" debian_suite "Debian $frel" "debian-$flavour" "$flavour" "$vmlinuz" "$ko" "$extra"
}

# upgrade_test: a real kernel upgrade keeps the module: a trixie system with systemd, on the
# previous ABI (trixie-7.2's kernel and its module package), upgraded by apt to the current one
# and rebooted, with the new module package in the repository and without it (DKMS's build).
upgrade_test() {
	local start
	echo "== debian: a real kernel upgrade to $DEBIAN_ABI-amd64, booted with systemd"
	start=$(date +%s)
	if [ -f "$build/trixie-7.2.kos" ] && [ -d "$build/packages/repo" ]; then
		bash "$top/tools/debian/upgrade-test.sh" "$build/packages/repo" "$build/signing" "$build/upgrade" |
			tee "$build/upgrade-test.log"
		tap_log "$build/upgrade-test.log" "${PIPESTATUS[0]}"
		summaries+=("Debian kernel upgrade (systemd, apt upgrade, reboot): $p passed, $f failed, 0 skipped")
	else
		echo "FAIL debian: no module for trixie-backports' 7.2 kernel or no repository for the upgrade test"
		failed=$((failed + 1))
		summaries+=("Debian kernel upgrade: not run")
	fi
	echo "debian upgrade test: $(($(date +%s) - start)) s"
}

# pass_fail STATUS TEXT DIAGNOSIS: PASS TEXT if STATUS is 0, else FAIL TEXT (DIAGNOSIS); counted.
pass_fail() {
	if [ "$1" -eq 0 ]; then
		echo "PASS $2"
		passed=$((passed + 1))
	else
		echo "FAIL $2 ($3)"
		failed=$((failed + 1))
	fi
}

# setup_trixie: tools/setup.sh on a trixie host, in a throwaway copy of the trixie root (apt's
# Valid-Until check as the host's apt has it, for its archive snapshot): a dry run of the
# developer's setup has apt resolve every package it names from trixie's archive (and says how
# to get rustup, which the root lacks); --packages, make packages' own, installs debootstrap and
# cpio, and a second run installs nothing.
setup_trixie() {
	local valid= out=$build/setup-trixie.log before=$passed dry pkgs again
	echo "== setup: tools/setup.sh on trixie (a copy of the trixie root)"
	# (Not apt-config | grep -q: under pipefail, grep's early exit fails the pipeline.)
	if grep -qi '^Acquire::Check-Valid-Until "false";' <<<"$(apt-config dump)"; then
		valid='Acquire::Check-Valid-Until "false";'
	fi
	polled bash "$top/tools/debian/chroot.sh" --overlay -- sh -c '
		[ -z "$1" ] || echo "$1" >/etc/apt/apt.conf.d/99rue-check-valid-until
		! command -v debootstrap >/dev/null || { echo "debootstrap is in the root already"; exit 1; }
		echo "== dry run"; bash /rue/src/tools/setup.sh --dry-run || echo "dry-run status $?"
		echo "== packages"; bash /rue/src/tools/setup.sh --packages || echo "packages status $?"
		command -v debootstrap >/dev/null && command -v cpio >/dev/null && echo "debootstrap and cpio installed"
		echo "== again"; bash /rue/src/tools/setup.sh --packages || echo "again status $?"' sh "$valid" >"$out" 2>&1
	dry=$(sed -n '/^== dry run/,/^== packages/p' "$out")
	pkgs=$(sed -n '/^== packages/,/^== again/p' "$out")
	again=$(sed -n '/^== again/,$p' "$out")
	grep -q '^setup: apt would install [0-9]* packages for: linux-source-7.3/trixie-backports clang-19 .* libgcc-14-dev-arm64-cross ' <<<"$dry" &&
		grep -q '^setup: apt would install [0-9]* packages for: qemu-system-x86 qemu-system-arm$' "$out" &&
		grep -q '^setup: Rust comes from rustup, which this host does not have' "$out" &&
		grep -qx 'setup: ok' <<<"$dry" && ! grep -q 'status [0-9]' "$out"
	pass_fail $? "setup: on trixie, a dry run resolves every package of the developer's setup from trixie's archive" \
		"$(sed -n '/^== dry run/,/^== packages/p' "$out" | grep -v '^W:' | tail -n 6 | tr '\n' ' ')"
	grep -q '^setup: installing: debootstrap' <<<"$pkgs" &&
		grep -qx 'debootstrap and cpio installed' "$out" &&
		! grep -q 'installing' <<<"$again" && ! grep -q 'status [0-9]' "$out"
	pass_fail $? "setup: on trixie, --packages (make packages' setup) installs debootstrap and cpio, and a second run nothing" \
		"$(sed -n '/^== packages/,$p' "$out" | grep -v '^W:' | grep -v '^\(Selecting\|Preparing\|Unpacking\|Setting up\|(Reading\)' | tail -n 6 | tr '\n' ' ')"
	summaries+=("tools/setup.sh on trixie (a copy of the trixie root): $((passed - before)) passed, $((2 - passed + before)) failed, 0 skipped")
}

# secureboot_test: Debian's amd64 image booted through OVMF, shim and GRUB with Secure Boot on
# (tools/debian/secureboot-test.sh): the packaged module with the project's certificate in the
# MOK list, an unsigned build, the packaged module without the certificate, and README.md's
# enrolment (mokutil --import, MokManager answered at the serial console) and the boot after.
secureboot_test() {
	local start
	echo "== debian: Secure Boot under OVMF with Debian's shim, GRUB and $DEBIAN_ABI-amd64"
	start=$(date +%s)
	bash "$top/tools/debian/secureboot-test.sh" "$build/packages/repo" "$build/signing" \
		"$top/build/debian/$DEBIAN_ABI-amd64/rust_user_events.ko" "$build/secureboot" |
		tee "$build/secureboot-test.log"
	tap_log "$build/secureboot-test.log" "${PIPESTATUS[0]}"
	summaries+=("Debian Secure Boot (OVMF, shim, GRUB, $DEBIAN_ABI-amd64): $p passed, $f failed, 0 skipped")
	echo "debian secure boot test: $(($(date +%s) - start)) s"
}

case " $kernels " in
*" test "*)
	# A build that resolves a wrong kernel symbol, which module_test loads and the symbol
	# checks must refuse; renamed, so that it is not the loaded module to the kernel.
	ws="$build/wrong-symbol"
	rm -rf "$ws" && mkdir -p "$ws/extra"
	if bash "$top/tools/debian/stage-sources.sh" "$ws/src" &&
		make -C "$kdir" M="$ws/src" LLVM=-19 RUE_WRONG_SYMBOL=1 modules >"$ws/build.log" 2>&1; then
		perl -pe 's/rust_user_events/rust_user_wsym00/g' "$ws/src/rust_user_events.ko" \
			>"$ws/extra/rust_user_wsym00.ko"
	else
		tail -n 20 "$ws/build.log"
		echo "FAIL guest: the build with a wrong symbol did not build"
		failed=$((failed + 1))
	fi
	# The build-time check of mirrored kernel bodies, against copies of the test kernel's
	# tree with one body changed; module_test loads the build that took the fallback.
	echo "== host: builds against a kernel tree with a mirrored body changed (tools/testing/mirror-test.sh)"
	mt="$build/mirrors"
	bash "$top/tools/testing/mirror-test.sh" "$kdir" "$mt" | tee "$build/mirror-test.log"
	mt_status=${PIPESTATUS[0]}
	passed=$((passed + $(grep -c '^PASS' "$build/mirror-test.log")))
	failed=$((failed + $(grep -c '^FAIL' "$build/mirror-test.log")))
	if [ "$mt_status" -ne 0 ] && ! grep -q '^FAIL' "$build/mirror-test.log"; then
		echo "FAIL mirrors: mirror-test.sh exited $mt_status"
		failed=$((failed + 1))
	fi
	mkdir -p "$mt/extra"
	# The debug kernel runs charge_test's hundreds of thousands of fork copies under KASAN too:
	# half an hour's bound instead of run.sh's 20 minutes, which it passed on 2026-11-29.
	lane test suite "test kernel ($(basename "$kdir"))" test "$build/guest/check-cmd.sh" --kdir "$kdir" \
		--module "$top/rust_user_events.ko" --add "$build/guest" --add "$ws/extra" --add "$mt/extra" \
		--timeout 1800
	# The suite again, on a build with every gate off (make RUE_GATES_OFF=1): each mirror's
	# fallback, the exported path a kernel whose bodies changed gets, runs here under KASAN
	# and lockdep before a user's kernel takes it. All of it but charge_test and enabler_test
	# (some 1,000 s of fork copies on this kernel), whose code no gate selects: the gated
	# paths they pass through (REG's copies, current) every other program runs too.
	go="$build/gates-off"
	rm -rf "$go" && mkdir -p "$go/extra/bin"
	if bash "$top/tools/debian/stage-sources.sh" "$go/src" &&
		make -C "$kdir" M="$go/src" LLVM=-19 RUE_GATES_OFF=1 modules >"$go/build.log" 2>&1 &&
		! grep -q ': bool = true;' "$go/src/src/mirrors_generated.rs" &&
		grep -qx 'pub(crate) const ALL_OFF_BY: &str = "RUE_GATES_OFF=1";' "$go/src/src/mirrors_generated.rs"; then
		echo "PASS guest: built the module with every gate off ($(grep -c ': bool = false;' \
			"$go/src/src/mirrors_generated.rs") gates)"
		passed=$((passed + 1))
		perl -pe 's/rust_user_events/rust_user_twin00/g' "$go/src/rust_user_events.ko" \
			>"$go/extra/rust_user_twin00.ko"
		install -m 0755 "$top/tools/testing/gates_off_test.sh" "$go/extra/bin/gates_off_test"
		{
			echo "rue-run gates_off_test gates_off_test"
			grep -v '^rue-run \(charge_test\|enabler_test\) ' "$build/guest/check-cmd.sh"
		} >"$go/extra/check-cmd.sh"
		lane test-gates-off suite "test kernel, every gate off" test-gates-off "$go/extra/check-cmd.sh" \
			--kdir "$kdir" --module "$go/src/rust_user_events.ko" --add "$build/guest" --add "$ws/extra" \
			--add "$mt/extra" --add "$go/extra" --timeout 1800
	else
		tail -n 20 "$go/build.log" 2>/dev/null
		grep -s 'bool = true\|ALL_OFF' "$go/src/src/mirrors_generated.rs"
		echo "FAIL guest: the build with every gate off did not build, or left a gate on"
		failed=$((failed + 1))
		summaries+=("test kernel, every gate off: not run")
	fi
	# The same module, on another build of the test kernel's release (tools/kernel/build.sh
	# relinks it as #2): refused at load (src/identity.rs).
	id="$build/identity"
	rm -rf "$id" && mkdir -p "$id/identity" "$id/bin"
	if [ -f "$kdir/other-build/bzImage" ] && [ -f "$top/src/identity_generated.rs" ]; then
		cp "$top/rust_user_events.ko" "$id/identity/"
		cp "$kdir/include/config/kernel.release" "$id/identity/release"
		sed -n 's/^pub(crate) const VERSION: &str = "\(.*\)";$/\1/p' "$top/src/identity_generated.rs" \
			>"$id/identity/recorded-version"
		install -m 0755 "$top/tools/testing/identity_test.sh" "$id/bin/identity_test"
		echo "rue-run identity_test identity_test" >"$id/check-cmd.sh"
		lane identity suite "test kernel, another build of its release" identity "$id/check-cmd.sh" \
			--kernel "$kdir/other-build/bzImage" --no-module --add "$build/guest" --add "$id"
	else
		echo "FAIL guest: no other build of the test kernel, or no recorded build, for the identity test"
		failed=$((failed + 1))
		summaries+=("test kernel, another build of its release: not run")
	fi
	;;
esac

case " $kernels " in
*" debian "*)
	if ! . "$top/tools/debian/kernels.conf"; then
		echo "FAIL debian: cannot tell which Debian kernel to test (above)"
		failed=$((failed + 1))
		summaries+=("Debian: not run")
		# Only Debian's trixie kernels are dropped: experimental's build reads the file
		# again and fails on its own account.
		kernels=${kernels/debian/}
	fi
	;;
esac

case " $kernels " in
*" debian "*)
	echo "== debian: building the module for Debian's kernels"
	start=$(date +%s)
	kos=()
	if polled bash "$top/tools/debian/build.sh" >"$build/debian.kos" && mapfile -t kos <"$build/debian.kos" &&
		[ "${#kos[@]}" -eq "${#DEBIAN_FLAVOURS[@]}" ]; then
		for ko in "${kos[@]}"; do
			echo "PASS debian: built $ko"
			passed=$((passed + 1))
			# Debian's tree is the one the mirrors were audited against: every gate on.
			gen=$(dirname "$ko")/src/src/mirrors_generated.rs
			if [ -f "$gen" ] && ! grep -q ': bool = false;' "$gen"; then
				echo "PASS debian: every mirrored body matches its audited text ($(basename "$(dirname "$ko")"))"
				passed=$((passed + 1))
			else
				grep -s 'false\|CHANGED' "$gen"
				echo "FAIL debian: mirrored bodies differ from their audited text ($(basename "$(dirname "$ko")"))"
				failed=$((failed + 1))
			fi
		done
	else
		echo "FAIL debian: building for Debian's kernels failed (built: ${kos[*]:-nothing})"
		failed=$((failed + 1))
	fi
	# The wrong-symbol build (as the test kernel's) for Debian's arm64 kernel, and the build
	# that expects a per-CPU symbol of another type (RUE_WRONG_SYMBOL=type; the test kernel has
	# no BTF to tell) for its amd64 and arm64 kernels, which their module_test loads: the
	# symbol checks refuse them on both architectures.
	for wrong in arm64:1:wsym00 arm64:type:wtyp00 amd64:type:wtyp00; do
		IFS=: read -r arch variant name <<<"$wrong"
		wdir="$build/wrong-symbol-$arch/$name"
		rm -rf "$wdir" && mkdir -p "$build/wrong-symbol-$arch/extra"
		if bash "$top/tools/debian/stage-sources.sh" "$wdir" &&
			polled bash "$top/tools/debian/chroot.sh" bash /rue/src/tools/debian/build-module.sh \
				"$DEBIAN_ABI-$arch" "/rue/src/${wdir#"$top"/}" RUE_WRONG_SYMBOL=$variant >"$wdir.log" 2>&1; then
			perl -pe "s/rust_user_events/rust_user_$name/g" "$wdir/rust_user_events.ko" \
				>"$build/wrong-symbol-$arch/extra/rust_user_$name.ko"
		else
			tail -n 20 "$wdir.log"
			echo "FAIL debian: the build RUE_WRONG_SYMBOL=$variant for $DEBIAN_ABI-$arch did not build"
			failed=$((failed + 1))
		fi
	done
	echo "debian build: $(($(date +%s) - start)) s"

	for flavour in "${DEBIAN_INSTALL_FLAVOURS[@]}"; do
		krel=$DEBIAN_ABI-$flavour
		rm -rf "$build/debian-dkms-$flavour"
		if [ "$(debian_arch "$flavour")" = "$(dpkg --print-architecture)" ]; then
			echo "== debian: make install (DKMS) in a trixie root, for $krel"
			polled bash "$top/tools/debian/chroot.sh" bash /rue/src/tools/debian/install-test.sh "$krel" \
				"/rue/src/build/check/debian-dkms-$flavour" >"$build/install-test-$flavour.log"
		else
			# Another architecture's kernel: DKMS's half of the install, cross-built.
			echo "== debian: DKMS install in a trixie root, for $krel (cross-built)"
			polled bash "$top/tools/debian/chroot.sh" bash /rue/src/tools/debian/dkms-cross-test.sh "$krel" \
				"$(debian_arch "$flavour" | sed 's/^arm64$/aarch64/')" \
				"/rue/src/build/check/debian-dkms-$flavour" >"$build/install-test-$flavour.log"
		fi
		status=$?
		cat "$build/install-test-$flavour.log"
		tap_log "$build/install-test-$flavour.log" "$status"
		how=DKMS
		[ "$(debian_arch "$flavour")" = "$(dpkg --print-architecture)" ] || how="DKMS, cross-built"
		summaries+=("Debian install ($krel, $how): $p passed, $f failed, 0 skipped")
	done
	# make packages, then the packages as a user meets them: added as an apt repository,
	# installed, upgraded across a kernel ABI bump and removed, in throwaway copies of the
	# trixie root (packages-test.sh); the installed files boot in the VM further down.
	echo "== debian: make packages; apt install, upgrade and remove in a trixie root"
	# Its own keys, made afresh (a distributor's are never used by a test), and its own
	# output, in this run's directory.
	cache=${RUE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rust-user-events}
	keys=$build/signing
	start=$(date +%s)
	# The module key with a passphrase, as a distributor's should be (KBUILD_SIGN_PIN, which
	# packages.sh, upgrade-test.sh and the package test's second snapshot pass on in a file).
	KBUILD_SIGN_PIN=rue-check-$(head -c 12 /dev/urandom | base64 | tr -dc 'A-Za-z0-9')
	export KBUILD_SIGN_PIN
	if polled env -u RUE_REPO_SUITE RUE_SIGNING_DIR="$keys" bash "$top/tools/debian/packages.sh" --prebuilt \
		--out "$build/packages" >"$build/packages.log" 2>&1; then
		echo "PASS debian: make packages: $(find "$build/packages/repo/pool" -name '*.deb' | wc -l) packages, lintian without errors, a signed repository"
		passed=$((passed + 1))
		if grep -q '^-----BEGIN ENCRYPTED PRIVATE KEY-----' "$keys/module.key" &&
			! env -u KBUILD_SIGN_PIN RUE_SIGNING_DIR="$keys" bash "$top/tools/debian/packages.sh" --prebuilt \
				--out "$build/packages-nopin" >"$build/packages-nopin.log" 2>&1 &&
			grep -q 'module.key has a passphrase: run make packages with KBUILD_SIGN_PIN set' "$build/packages-nopin.log"; then
			echo "PASS debian: the module key is encrypted with KBUILD_SIGN_PIN, and make packages without it refuses, saying so"
			passed=$((passed + 1))
		else
			tail -n 5 "$build/packages-nopin.log" 2>/dev/null
			echo "FAIL debian: the module key has no passphrase, or make packages signed without it"
			failed=$((failed + 1))
		fi
		pin_dir=$(bash "$top/tools/debian/pin.sh")
		mkdir -p "$cache/debian/apt-archives/partial"
		for mode in modules dkms; do
			rm -rf "$build/packages-$mode"
			polled bash "$top/tools/debian/chroot.sh" --packaging --overlay --bind "$keys:/rue/keys" \
				--bind "$pin_dir:/rue/pin" --bind "$cache/debian/apt-archives:/var/cache/apt/archives" -- \
				env RUE_SIGN_PIN_FILE=/rue/pin/pin bash /rue/src/tools/debian/packages-test.sh "$mode" "$DEBIAN_ABI" amd64 \
				/rue/src/build/check/packages/repo /rue/keys "/rue/src/build/check/packages-$mode" \
				>"$build/packages-$mode.log"
			status=$?
			cat "$build/packages-$mode.log"
			tap_log "$build/packages-$mode.log" "$status"
			summaries+=("Debian packages ($mode, $DEBIAN_ABI-amd64, apt): $p passed, $f failed, 0 skipped")
		done
		rm -rf "$pin_dir"
		# The source packages: fetched with apt-get source, signed, rebuilt byte for byte.
		polled bash "$top/tools/debian/chroot.sh" --packaging --overlay \
			--bind "$cache/debian/apt-archives:/var/cache/apt/archives" -- \
			bash /rue/src/tools/debian/packages-source-test.sh /rue/src/build/check/packages/repo \
			/rue/src/build/check/packages-source >"$build/packages-source.log"
		status=$?
		cat "$build/packages-source.log"
		tap_log "$build/packages-source.log" "$status"
		summaries+=("Debian source packages (apt-get source, rebuilt): $p passed, $f failed, 0 skipped")
		setup_trixie
		# The packaged module under Secure Boot, in a lane (five short boots: with and without
		# the certificate, and the README's enrolment through MokManager).
		lane secureboot secureboot_test
	else
		tail -n 30 "$build/packages.log"
		echo "FAIL debian: make packages (above; $build/packages.log)"
		failed=$((failed + 1))
		summaries+=("Debian Secure Boot: not run")
	fi
	echo "debian packages: $(($(date +%s) - start)) s"
	;;
esac

# Debian's 7.3.4 kernels' whole-suite runs, queued: they start as lanes free, while the other
# sets' roots and modules are built.
case " $kernels " in
*" debian "*)
	for flavour in "${DEBIAN_FLAVOURS[@]}"; do
		case " ${DEBIAN_SHORT_FLAVOURS[*]} " in *" $flavour "*) ;; *) debian_flavour "$flavour" ;; esac
	done
	;;
esac

# trixie-backports' newest 7.2 kernel (7.2's kernel crate built by rustc 1.85.1) and Debian
# unstable's 7.2 kernels (sid's gcc-16 and rustc 1.97.1, amd64 and arm64, the whole suite on
# both), each set's whole-suite runs queued once it is built. The upgrade test, the longest run
# (some 12 minutes), needs trixie-backports' 7.2 module: built first, and the test put first in
# the queue.
declare -A set_label=([sid]="unstable's 7.2" [trixie-7.2]="trixie-backports' 7.2")
for set in trixie-7.2 sid; do
	case " $kernels " in
	*" $set "*)
		debian_set_build "$set" "${set_label[$set]}"
		lane_poll
		debian_set_run "$set" "${set_label[$set]}" full
		if [[ "$set" == trixie-7.2 && " $kernels " == *" debian "* ]]; then
			lane_first upgrade upgrade_test
		fi
		;;
	esac
done

case " $kernels " in
*" experimental "*)
	# The next toolchain: experimental's kernel and its compilers (kernels.conf), the whole
	# suite on its own image. Its bodies may differ from the 7.3.4 text the mirrors were
	# audited against; the build says which, and takes their fallbacks.
	echo "== experimental: the module for Debian experimental's kernel, by its toolchain"
	start=$(date +%s)
	exp_ko=
	if polled env RUE_DEBIAN=experimental bash "$top/tools/debian/build.sh" >"$build/experimental.built" &&
		exp_ko=$(cat "$build/experimental.built") && [ -f "$exp_ko" ] &&
		exp_vmlinuz=$(RUE_DEBIAN=experimental bash "$top/tools/debian/vmlinuz.sh" amd64); then
		exp_rel=$(basename "$(dirname "$exp_ko")")
		echo "PASS experimental: built $exp_ko"
		passed=$((passed + 1))
		exp_changed=$(sed -n 's/^pub(crate) const CHANGED: &str = "\(.*\)";$/\1/p' \
			"$(dirname "$exp_ko")/src/src/mirrors_generated.rs")
		echo "experimental: mirrored bodies that differ from the audited ones: ${exp_changed:-none}"
		echo "experimental build: $(($(date +%s) - start)) s"
	else
		echo "FAIL experimental: the module did not build for experimental's kernel, or its image is missing"
		failed=$((failed + 1))
		summaries+=("Debian experimental: not run")
		exp_ko=
	fi
	;;
esac

# The arm64 kernels' guest programs (built already when an arm64 run was queued).
case " $kernels " in *" debian "* | *" sid "*) arm64_guest ;; esac
lane_poll

# Every build done: the remaining runs queued, the smaller set's (seconds each) after the whole
# suite's (minutes).
case " $kernels " in
*" test-rt "*)
	# The test kernel with PREEMPT_RT (every spinlock_t a sleeping lock, atomic-sleep checks
	# on), and the module built for it from the same sources.
	echo "== guest: the test kernel with PREEMPT_RT"
	rt="$build/test-rt"
	mkdir -p "$rt/extra"
	bash "$top/tools/kernel/rt-fragment.sh" >"$rt/rt.config"
	if rt_kdir=$(RUE_KERNEL_FRAGMENT="$rt/rt.config" bash "$top/tools/kernel/build.sh") &&
		bash "$top/tools/debian/stage-sources.sh" "$rt/src" &&
		make -C "$rt_kdir" M="$rt/src" LLVM=-19 modules >"$rt/build.log" 2>&1; then
		perl -pe 's/rust_user_events/rust_user_twin00/g' "$rt/src/rust_user_events.ko" \
			>"$rt/extra/rust_user_twin00.ko"
		lane test-rt suite "test kernel, PREEMPT_RT ($(basename "$rt_kdir"))" test-rt "$build/guest/check-cmd.sh" \
			--kdir "$rt_kdir" --module "$rt/src/rust_user_events.ko" --add "$build/guest" --add "$rt/extra" \
			--timeout 1800
	else
		tail -n 20 "$rt/build.log" 2>/dev/null
		echo "FAIL guest: the PREEMPT_RT test kernel or its module did not build"
		failed=$((failed + 1))
		summaries+=("test kernel, PREEMPT_RT: not run")
	fi
	;;
esac

case " $kernels " in
*" debian "*)
	for flavour in "${DEBIAN_SHORT_FLAVOURS[@]}"; do
		debian_flavour "$flavour"
	done
	# Debian's amd64 kernel booted with what apt installed above (the packaged module, its
	# depmod indexes, modules-load.d): init loads the module as a booting system does, and
	# the harness loads none.
	pkgroot="$build/packages-modules/root"
	extra="$build/packages-boot"
	rm -rf "$extra"
	mkdir -p "$extra/bin"
	if [ -f "$pkgroot/usr/lib/modules/$DEBIAN_ABI-amd64/updates/rust_user_events.ko" ] &&
		vmlinuz=$(bash "$top/tools/debian/vmlinuz.sh" amd64); then
		install -m 0755 "$top/tools/testing/package_boot_test.sh" "$extra/bin/package_boot_test"
		printf '%s\n' "rue-run package_boot_test package_boot_test" "rue-run rue_tracepoint_rs rue_tracepoint_rs" \
			"rue-run rue_otel_logs_rs rue_otel_logs_rs" >"$extra/check-cmd.sh"
		lane packages-boot suite "Debian $DEBIAN_ABI-amd64, booted with the installed packages" packages-boot \
			"$extra/check-cmd.sh" --kernel "$vmlinuz" --no-module --root "$pkgroot" --add "$build/guest" --add "$extra"
	else
		echo "FAIL debian: no installed package tree or kernel image to boot"
		failed=$((failed + 1))
		summaries+=("Debian $DEBIAN_ABI-amd64 with the installed packages: not run")
	fi
	;;
esac
for set in trixie-7.2 sid; do
	case " $kernels " in *" $set "*) debian_set_run "$set" "${set_label[$set]}" short ;; esac
done

case " $kernels " in
*" experimental "*)
	if [ -n "${exp_ko:-}" ]; then
		extra="$build/experimental"
		rm -rf "$extra"
		mkdir -p "$extra"
		# The 7.3 series runs the whole suite on trixie-backports' kernels, and this toolchain
		# on sid's: with every mirrored body as audited, the module takes the same paths as on
		# those, and the smaller set runs; with a changed one, the whole suite.
		if [ -z "$exp_changed" ]; then
			cp "$build/guest/check-cmd-short.sh" "$extra/check-cmd.sh"
		else
			cp "$build/guest/check-cmd.sh" "$extra/check-cmd.sh"
		fi
		lane experimental debian_suite "Debian experimental $exp_rel" experimental amd64 "$exp_vmlinuz" \
			"$exp_ko" "$extra"
	fi
	;;
esac

lane_wait

echo "== summary"
for line in "${summaries[@]}"; do echo "$line"; done
echo "check: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
