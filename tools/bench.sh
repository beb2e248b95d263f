#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# `make bench`: what rust_user_events.ko costs next to the kernel's own
# user_events. Builds two kernels from one non-debug fragment
# (tools/kernel/bench-fragment.sh): the module's (CONFIG_USER_EVENTS off, the
# module loaded) and the reference (CONFIG_USER_EVENTS=y, no module), which
# differ in nothing else; builds the module for the first; then boots them in
# turn, BENCH_ROUNDS times each (module, upstream, module, ...), with one guest
# image running tools/testing/bench/guest.sh, and prints the table of
# tools/testing/bench/report.py. Absolute times under QEMU's TCG mean nothing
# across machines; the ratios within one run are the result
# (Documentation/performance.md).
# Settings from the environment:
#   BENCH_ROUNDS  VM rounds per kernel (default 7: a round takes well under a
#                 minute, and other load on the host spoils whole rounds, which
#                 the median over rounds then leaves out)
#   BENCH_N       calls per run of a write case (default 20000)
#   BENCH_RUNS    runs per case inside a round, which reports their median
#                 (default 5)
#   BENCH_CLOCK   wall (default): the guests' clock is the host's, so a case
#                 costs what TCG takes to run it, and other load on the host
#                 moves it; icount: the guests run one CPU thread with
#                 QEMU's instruction counter as their clock (1 ns per guest
#                 instruction, tools/vm/run.sh --icount), so a case costs the
#                 instructions the guest executed for it, the same on every
#                 run and every host. The writers cases then share one host
#                 thread and say nothing about scaling.
#   BENCH_KERNELS two (default): the two kernels above, booted in turn; one:
#                 only the reference kernel, with the module built to load
#                 beside its user_events (RUE_BESIDE=1, rue_-prefixed names),
#                 both measured in every boot, one after the other (the order
#                 alternating by round), so that a round's ratios come from
#                 one boot of one kernel image: a host whose speed changes
#                 from boot to boot moves both sides alike.
#   BENCH_ARCH    x86_64 (default) or arm64: the two kernels built for arm64 in
#                 the trixie root with Debian's arm64 toolchain
#                 (tools/kernel/build-arm64.sh), the module built there for
#                 them as for Debian's arm64 kernels, the benchmarks
#                 cross-built, and the guests run by qemu-system-aarch64's
#                 virt machine. Writes build/bench-arm64-CLOCK[-one]/.
# Writes build/bench/ (build/bench-icount/ with BENCH_CLOCK=icount):
# results.txt (the table), results.md, results.tsv, rounds.tsv (every round's
# medians), scaling.svg, and logs/ (the VMs' console logs).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
rounds=${BENCH_ROUNDS:-7}
n=${BENCH_N:-20000}
runs=${BENCH_RUNS:-5}
clock=${BENCH_CLOCK:-wall}
kernels=${BENCH_KERNELS:-two}
arch=${BENCH_ARCH:-x86_64}
case "$arch" in
x86_64) out="$top/build/bench$([ "$clock" = wall ] || echo "-$clock")" ;;
arm64) out="$top/build/bench-arm64-$clock" ;;
*) echo "bench: BENCH_ARCH must be x86_64 or arm64" >&2; exit 1 ;;
esac
out="$out$([ "$kernels" = two ] || echo "-one")"
start=$(date +%s)

log() { printf 'bench: %s\n' "$*" >&2; }
die() { printf 'bench: %s\n' "$*" >&2; exit 1; }

for v in "$rounds" "$n" "$runs"; do
	case "$v" in
	'' | *[!0-9]* | 0) die "BENCH_ROUNDS, BENCH_N and BENCH_RUNS must be positive numbers" ;;
	esac
done
case "$kernels" in
one | two) ;;
*) die "BENCH_KERNELS must be one or two" ;;
esac
case "$clock" in
wall) clock_args=() ;;
icount) clock_args=(--icount) ;;
*) die "BENCH_CLOCK must be wall or icount" ;;
esac
rm -rf "$out/logs" "$out/guest" "$out/module"
mkdir -p "$out/logs"

# The two kernels, cached by their fragments' hashes like the test kernel.
declare -A kdir
for side in module upstream; do
	if [ "$arch" = arm64 ]; then
		log "$side kernel: $(bash "$top/tools/kernel/build-arm64.sh" --print-kdir "$side")"
		kdir[$side]=$(bash "$top/tools/kernel/build-arm64.sh" "$side")
		continue
	fi
	bash "$top/tools/kernel/bench-fragment.sh" "$side" >"$out/kernel-$side.config"
	log "$side kernel: $(RUE_KERNEL_FRAGMENT="$out/kernel-$side.config" \
		bash "$top/tools/kernel/build.sh" --print-kdir)"
	kdir[$side]=$(RUE_KERNEL_FRAGMENT="$out/kernel-$side.config" bash "$top/tools/kernel/build.sh")
done
# Whoever implements the ABI is the only difference, and no checker is left.
user_events='^CONFIG_USER_EVENTS=y$|^# CONFIG_USER_EVENTS is not set$'
if ! diff <(grep -Ev "$user_events" "${kdir[module]}/.config") \
	<(grep -Ev "$user_events" "${kdir[upstream]}/.config") >"$out/config.diff"; then
	die "the two kernels' configurations differ in more than CONFIG_USER_EVENTS: $out/config.diff"
fi
for opt in $(bash "$top/tools/kernel/bench-fragment.sh" --dropped); do
	! grep -q "^$opt=y" "${kdir[module]}/.config" || die "$opt is on in ${kdir[module]}"
done

# The module, built for the module kernel from a copy of the sources, so the
# work tree's rust_user_events.ko (the test kernel's) stays as it is; with one
# kernel, for the reference kernel, beside its user_events.
if [ "$kernels" = two ]; then
	module_kdir=${kdir[module]}
	beside=0
else
	module_kdir=${kdir[upstream]}
	beside=1
fi
log "building rust_user_events.ko for $module_kdir"
bash "$top/tools/debian/stage-sources.sh" "$out/module"
if [ "$arch" = arm64 ]; then
	# In the trixie root, by the kernels' own toolchain (toolchain-check.sh, as for Debian's
	# arm64 kernels; asked of the module kernel, which the check serves: the upstream
	# kernel has user_events built in, and the same toolchain).
	bash "$top/tools/debian/chroot.sh" --bind "$module_kdir:/rue/kernel" \
		--bind "${kdir[module]}:/rue/module-kernel" -- bash -c \
		'export PATH=/usr/bin:/bin:/usr/sbin:/sbin
		vars=$(bash /rue/src/tools/debian/toolchain-check.sh /rue/module-kernel/.config) || exit 1
		mapfile -t vars <<<"$vars"
		make -C /rue/kernel M="$1" "${vars[@]}" RUE_BESIDE="$2" modules' \
		sh "/rue/src${out#"$top"}/module" "$beside" >"$out/module-build.log" 2>&1
else
	make -C "$module_kdir" M="$out/module" LLVM=-19 RUE_BESIDE=$beside modules >"$out/module-build.log" 2>&1
fi || { tail -30 "$out/module-build.log" >&2; die "the module did not build: $out/module-build.log"; }
ko="$out/module/rust_user_events.ko"

# One guest for both kernels: the benchmarks, static, and the round's script;
# also kprof, which the rounds do not run, for looking into a case by hand
# (Documentation/performance.md, "Where the time goes").
headers="${kdir[module]}/usr/include"
mkdir -p "$out/guest/bin"
cc=(gcc)
vm_arch=()
[ "$arch" = x86_64 ] || {
	cc=(clang-19 --target=aarch64-linux-gnu -fuse-ld=lld)
	vm_arch=(--arch arm64 --busybox "$(bash "$top/tools/debian/fetch.sh" busybox-static arm64)/usr/bin/busybox")
}
for prog in write_bench scale_bench kprof; do
	"${cc[@]}" -static -O2 -Wall -Wextra -isystem "$headers" -o "$out/guest/bin/$prog" \
		"$top/tools/testing/bench/$prog.c"
done
install -m 0755 "$top/tools/testing/bench/guest.sh" "$out/guest/bench.sh"

# The rounds, alternating kernels so both see the same slow drifts of the host.
: >"$out/rounds.tsv"
: >"$out/info.tsv"
# One boot: SIDE is module or upstream (their own kernels) or both (BENCH_KERNELS
# one: the reference kernel with the module beside its user_events, SIDES the
# order to measure them in). Appends the round's case and info lines.
boot() {
	local r=$1 side=$2 sides=${3:-} vmlog provider kd
	local args=()
	vmlog="$out/logs/round$r-$side.log"
	case "$side" in
	module) args=(--module "$ko"); provider=module; kd=${kdir[module]} ;;
	upstream) args=(--no-module); provider=builtin; kd=${kdir[upstream]} ;;
	both) args=(--module "$ko"); provider=both; kd=${kdir[upstream]} ;;
	esac
	if [ "$arch" = arm64 ]; then
		args+=("${vm_arch[@]}" --kernel "$kd/arch/arm64/boot/Image")
	else
		args+=(--kdir "$kd")
	fi
	log "round $r of $rounds: $side kernel${sides:+ ($sides)}"
	t=$(date +%s)
	if ! bash "$top/tools/vm/run.sh" "${clock_args[@]}" "${args[@]}" \
		--add "$out/guest" --log "$vmlog" --timeout 1800 \
		-- "rue-run bench sh /rue/bench.sh $n $runs $sides" >"$vmlog.checked" 2>&1; then
		cat "$vmlog.checked" >&2
		die "round $r on the $side kernel failed; its console log: $vmlog"
	fi
	# Not grep -q: it would stop reading, and tr's SIGPIPE would fail the pipeline
	# (pipefail) whenever the log outgrows the pipe's buffer.
	tr -d '\r' <"$vmlog" | grep -x "info provider $provider" >/dev/null ||
		die "round $r: user_events was not provided by the $provider ($vmlog)"
	# Lines before any "side" line are the kernel's own side.
	tr -d '\r' <"$vmlog" | awk -v r="$r" -v s="$side" -v OFS='\t' \
		'$1 == "side" { s = $2 } $1 == "case" && NF >= 3 { print r, s, $2, $3 }' >>"$out/rounds.tsv"
	tr -d '\r' <"$vmlog" | awk -v r="$r" -v s="$side" -v OFS='\t' \
		'$1 == "side" { s = $2 } $1 == "info" && $2 != "provider" { $1 = r OFS s; print }' >>"$out/info.tsv"
	log "round $r of $rounds: $side kernel: $(($(date +%s) - t)) s"
}

for r in $(seq 1 "$rounds"); do
	if [ "$kernels" = two ]; then
		boot "$r" module
		boot "$r" upstream
	elif [ $((r % 2)) -eq 1 ]; then
		boot "$r" both module,upstream
	else
		boot "$r" both upstream,module
	fi
done

# The program's runs per write made, of every BPF round: upstream never runs it.
bpf_runs() {
	awk -v s="$1" '$2 == s && $3 == "bpf_runs" { runs += $4; writes += $5 }
		END { printf "%d of %d writes", runs, writes }' "$out/info.tsv"
}
{
	echo "make bench, $(date -u +%F), $(git -C "$top" describe --always --dirty 2>/dev/null || echo '(no git)'):" \
		"$rounds rounds$([ "$kernels" = two ] && echo ' per kernel, alternating' || echo ' of one boot each');" \
		"write cases $runs runs of $n calls, the median per round"
	echo "host: $(nproc) CPUs, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1);" \
		"guests: $arch, $(qemu-system-"${arch/arm64/aarch64}" --version | head -1 | sed 's/ (.*//'), TCG, 2 vCPUs, 2 GiB;" \
		"clock: $clock$([ "$clock" = wall ] || echo ' (1 ns per guest instruction, one CPU thread)')"
	if [ "$kernels" = two ]; then
		echo "module kernel:   ${kdir[module]} + rust_user_events.ko"
		echo "upstream kernel: ${kdir[upstream]} (CONFIG_USER_EVENTS=y)"
	else
		echo "one kernel: ${kdir[upstream]} (CONFIG_USER_EVENTS=y) + rust_user_events.ko built beside it" \
			"(RUE_BESIDE=1), both measured in every boot, the order alternating by round"
	fi
	echo "BPF program runs: module $(bpf_runs module), upstream $(bpf_runs upstream)"
	echo "times: median over rounds; module/upstream: median of the per-round ratios; spread: their lowest-highest"
} >"$out/meta.txt"
python3 "$top/tools/testing/bench/report.py" "$out/rounds.tsv" "$out" "$out/meta.txt"
wall=$(($(date +%s) - start))
echo "bench: $((wall / 60)) min $((wall % 60)) s; results in $out/results.txt, plot in $out/scaling.svg" |
	tee -a "$out/results.txt"
