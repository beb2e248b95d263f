#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Boots the test kernel under QEMU (TCG) with a busybox initramfs built from
# scratch (x86-64, or arm64 under qemu-system-aarch64's virt machine), loads
# rust_user_events.ko, runs a command and powers off. The console log is
# checked by tools/vmlog: the run fails on any failed test and on any WARNING,
# BUG, lockdep, RCU, KASAN or kmemleak report.
#
# Usage: run.sh (--kdir KDIR | --kernel IMAGE) [options] [-- CMD...]
#   --kdir KDIR     boot KDIR's arch/x86/boot/bzImage
#   --kernel IMAGE  boot this kernel image (e.g. Debian's vmlinuz)
#   --arch ARCH     the image's architecture: x86_64 (default) or arm64
#   --busybox FILE  a static busybox of that architecture (default: the
#                   host's /bin/busybox, which serves x86_64 only)
#   --module KO     module to load (default: ./rust_user_events.ko)
#   --no-module     boot without loading the module
#   --add DIR       copy DIR's contents into the guest's /rue (repeatable);
#                   /rue/bin is on PATH, so static programs there run by name
#   --root DIR      copy DIR's contents into the guest's / (repeatable): an
#                   installed /usr/lib/modules tree and modules-load.d, whose
#                   modules the guest's init loads as a booting system does
#   --log FILE      console log (default: build/vm/console.log)
#   --summary FILE  write "passed failed skipped" there
#   --programs FILE the command's script: each program it runs (rue-run NAME)
#                   must begin and end in the log
#   --skips LIST    the expected skips (tools/testing/expected-skips): any
#   --name KERNEL   other skip on the kernel named KERNEL fails the run
#   --timeout S     give up after S seconds (default: 1200)
#   --smp N         CPUs (default: 2)
#   --kvm           use KVM instead of TCG (it hangs on the project's machines)
#   --icount        TCG with one CPU thread and a virtual clock that counts
#                   instructions (1 ns each, -icount shift=0,sleep=off): guest
#                   time is then independent of the host's speed and load
#   --qemu ARG      pass ARG to QEMU as well (repeatable), e.g. a TCG plugin:
#                   --qemu -plugin --qemu tools/testing/bench/insnprof.so,out=F
#   CMD             shell command run in the guest (default: none)
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
kdir=
bzimage=
module="$top/rust_user_events.ko"
load_module=1
adds=()
roots=()
extra=()
log="$top/build/vm/console.log"
summary=
programs=
skips=
name=
timeout=1200
smp=2
arch=x86_64
busybox=/bin/busybox
icount=0
kvm=0

while [ $# -gt 0 ]; do
	case "$1" in
	--kdir) kdir=$2; shift 2 ;;
	--kernel) bzimage=$2; shift 2 ;;
	--arch) arch=$2; shift 2 ;;
	--busybox) busybox=$2; shift 2 ;;
	--module) module=$2; shift 2 ;;
	--no-module) load_module=0; shift ;;
	--add) adds+=("$2"); shift 2 ;;
	--root) roots+=("$2"); shift 2 ;;
	--log) log=$2; shift 2 ;;
	--summary) summary=$2; shift 2 ;;
	--programs) programs=$2; shift 2 ;;
	--skips) skips=$2; shift 2 ;;
	--name) name=$2; shift 2 ;;
	--timeout) timeout=$2; shift 2 ;;
	--smp) smp=$2; shift 2 ;;
	--kvm) kvm=1; shift ;;
	--icount) icount=1; shift ;;
	--qemu) extra+=("$2"); shift 2 ;;
	--) shift; break ;;
	*) echo "run.sh: unknown option $1" >&2; exit 2 ;;
	esac
done
[ -n "$bzimage" ] || [ -n "$kdir" ] || { echo "run.sh: --kdir or --kernel is required" >&2; exit 2; }
[ -n "$bzimage" ] || bzimage="$kdir/arch/x86/boot/bzImage"
[ -f "$bzimage" ] || { echo "run.sh: no $bzimage" >&2; exit 2; }

case "$arch" in
x86_64)
	qemu=(qemu-system-x86_64 -machine q35)
	console=ttyS0
	accel=(-accel tcg -cpu max)
	[ "$kvm" -eq 0 ] || accel=(-enable-kvm -cpu host)
	[ "$icount" -eq 0 ] || accel=(-accel tcg,thread=single -icount shift=0,sleep=off -cpu max)
	;;
arm64)
	# pauth-impdef: QEMU's own pointer-authentication hash, much cheaper under TCG than
	# the architected QARMA one; the kernel (ARM64_PTR_AUTH_KERNEL) cannot tell.
	qemu=(qemu-system-aarch64 -machine virt)
	console=ttyAMA0
	accel=(-accel tcg -cpu max,pauth-impdef=on)
	[ "$icount" -eq 0 ] || accel=(-accel tcg,thread=single -icount shift=0,sleep=off -cpu max,pauth-impdef=on)
	[ "$kvm" -eq 0 ] || { echo "run.sh: --kvm is for x86_64 only" >&2; exit 2; }
	;;
*) echo "run.sh: unknown --arch $arch (x86_64, arm64)" >&2; exit 2 ;;
esac
[ -x "$busybox" ] || { echo "run.sh: no busybox at $busybox" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root="$work/root"
mkdir -p "$root"/{bin,sbin,proc,sys,dev,tmp,rue/bin,etc}
cp "$busybox" "$root/bin/busybox"
# The list of applets is the host busybox's: the guest's may be of another architecture.
for applet in $(/bin/busybox --list); do
	[ -e "$root/bin/$applet" ] || ln -s busybox "$root/bin/$applet"
done
install -m 0755 "$top/tools/vm/init" "$root/init"
install -m 0755 "$top/tools/vm/rue-run" "$root/rue/bin/rue-run"
if [ "$load_module" -eq 1 ]; then
	cp "$module" "$root/rue/rust_user_events.ko"
else
	touch "$root/rue/no-module"
fi
for d in ${adds[@]+"${adds[@]}"}; do
	cp -a "$d"/. "$root/rue/"
done
for d in ${roots[@]+"${roots[@]}"}; do
	cp -a "$d"/. "$root/"
done
printf '%s\n' "$*" >"$root/rue/cmd.sh"
(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) >"$work/initramfs.cpio.gz"

mkdir -p "$(dirname "$log")"
vmlog_args=("$log")
[ -n "$summary" ] && vmlog_args+=("$summary")
[ -n "$programs" ] && vmlog_args+=(--programs "$programs")
if [ -n "$skips" ] || [ -n "$name" ]; then
	[ -n "$skips" ] && [ -n "$name" ] || { echo "run.sh: --skips and --name go together" >&2; exit 2; }
	vmlog_args+=(--skips "$skips" --kernel "$name")
fi

# log_buf_len: a kernel log buffer that holds the whole run (Debian's kernels and
# the test kernel keep 128 KiB), so the scan of dmesg at the end sees every
# report since boot; tools/vmlog checks that the boot banner is still in it.
# A kernel report during early boot (before /init) cannot come from the module
# or the tests, but it turns lock debugging off for the whole run. It has been
# seen under TCG (an early interrupt while the boot CPU is identified), so such
# a boot is retried once; a second one fails the run like any other report.
# So is a guest that never reached /init (no RUE-VM-BOOTED within RUE_VM_BOOT_LIMIT
# seconds, 300 by default: the slowest boot in make check reached /init in
# 26 s, the debug kernel beside a build; one starved by `nice -n 15` beside
# a cold make check took over 180 s): once, under TCG,
# experimental's kernel printed nothing for 20 minutes, QEMU nearly idle. Nothing of
# the module's has run then; it is stopped, its log kept, and booted again.
boot_limit=${RUE_VM_BOOT_LIMIT:-300}
for attempt in 1 2; do
	start=$(date +%s)
	status=0
	: >"$log"
	timeout --foreground "$timeout" "${qemu[@]}" "${accel[@]}" -smp "$smp" -m 2048 \
		-kernel "$bzimage" -initrd "$work/initramfs.cpio.gz" \
		-append "console=$console loglevel=3 log_buf_len=8M panic=-1 rdinit=/init" \
		${extra[@]+"${extra[@]}"} -display none -serial file:"$log" -monitor none -no-reboot </dev/null &
	qemu_pid=$!
	booted=0
	while kill -0 "$qemu_pid" 2>/dev/null; do
		if grep -aq 'RUE-VM-BOOTED' "$log"; then
			booted=1
			echo "vm: reached /init in $(($(date +%s) - start)) s" >&2
			break
		fi
		[ $(($(date +%s) - start)) -lt "$boot_limit" ] || break
		sleep 2
	done
	if [ "$booted" -eq 0 ] && kill -0 "$qemu_pid" 2>/dev/null && [ "$attempt" -eq 1 ]; then
		# timeout passes the signal on to QEMU.
		kill "$qemu_pid"
		wait "$qemu_pid" || true
		cp "$log" "$log.no-boot"
		echo "vm: the guest did not reach /init in $boot_limit s (log kept in $log.no-boot); booting again" >&2
		continue
	fi
	wait "$qemu_pid" || status=$?
	echo "vm: ran $(($(date +%s) - start)) s (qemu status $status)" >&2
	vmlog_status=0
	"$top/tools/vm/vmlog.sh" "${vmlog_args[@]}" || vmlog_status=$?
	if [ "$vmlog_status" -eq 3 ] && [ "$attempt" -eq 1 ]; then
		cp "$log" "$log.boot-report"
		echo "vm: kernel report during boot, before /init (log kept in $log.boot-report); booting again" >&2
		continue
	fi
	[ "$vmlog_status" -eq 0 ] && exit 0
	exit 1
done
