#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The DKMS half of the install for a kernel of another architecture than the
# trixie root's (arm64's, on an amd64 machine), inside tools/debian/chroot.sh's
# root: `make install` itself runs apt for the machine's own kernel and cannot
# run here for arm64, so this drives DKMS as install.sh does, for
# KERNELRELEASE/ARCH, with the kernel's headers as the headers package would
# lay them out (/usr/lib/modules/KERNELRELEASE/build). It checks the
# toolchain check's answers for that kernel (the cross compilers it names, two
# refusals), what DKMS
# decides from dkms.conf for that architecture (BUILD_EXCLUSIVE_ARCH,
# _CONFIG, _KERNEL), that its build (build-module.sh: the cross toolchain the
# kernel names, a prepared tree) installs a module signed, with the kernel's
# vermagic and machine, and that `dkms remove` takes it away. Prints TAP; the
# module DKMS installed is copied to OUT/rust_user_events.ko for the test VM,
# whose dkms_module_test loads it into Debian's own image.
#
# Usage (inside the root): dkms-cross-test.sh KERNELRELEASE ARCH OUT
#   ARCH: DKMS's name for it (aarch64)
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
krel=$1
arch=$2
out=$3
name=rust-user-events
version=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$here/../../dkms.conf")
src=/usr/src/$name-$version
moddir=/usr/lib/modules/$krel
tmp=$(mktemp -d)
# reset: nothing of this module or kernel left in DKMS, /usr/src or /usr/lib/modules.
reset() {
	dkms remove -m "$name" -v "$version" --all >/dev/null 2>&1
	rm -rf "$src" "$moddir"
}
trap 'reset; rm -rf "$tmp"' EXIT
config=/usr/src/linux-headers-$krel/.config
# shellcheck source=tap.sh
. "$here/tap.sh"

echo "TAP version 13"
plan 13
[ -f "$config" ]
result $? "the headers of $krel are in /usr/src (unpacked by chroot.sh)"
vars=$(bash "$here/toolchain-check.sh" "$config")
result $? "the toolchain here is the one $krel was built with"
[[ "$vars" == *ARCH=arm64* && "$vars" == *CROSS_COMPILE=aarch64-linux-gnu-* &&
	"$vars" == *CROSS_COMPILE_COMPAT=arm-linux-gnueabihf-* ]]
result $? "it names the kernel's architecture, cross compiler and compat vDSO compiler" "$(echo $vars)"
refuses 's/^CONFIG_RUST=y/# CONFIG_RUST is not set/' 2 "no Rust support" \
	"a kernel without Rust is refused, saying so"
refuses 's/^CONFIG_CC_VERSION_TEXT=.*/CONFIG_CC_VERSION_TEXT="aarch64-linux-gnu-gcc-14 (Debian 14.9.9-1) 14.9.9"/' 1 \
	"C compiler mismatch" "a kernel built by another gcc is refused, naming both versions"
reset
mkdir -p "$moddir"
ln -s "/usr/src/linux-headers-$krel" "$moddir/build"
bash "$here/stage-sources.sh" "$src"
dkms add -m "$name" -v "$version" >"$tmp/add.log" 2>&1
result $? "dkms add" "$(tail -n 1 "$tmp/add.log")"

dkms install -m "$name" -v "$version" -k "$krel/$arch" >"$tmp/install.log" 2>&1
rc=$?
result $rc "dkms install builds and installs the module for $krel/$arch" \
	"exit $rc: $(tail -n 3 "$tmp/install.log" | tr '\n' ' ')"
[ "$rc" -eq 0 ] || tail -n 30 "/var/lib/dkms/$name/$version/build/make.log" 2>/dev/null | sed 's/^/# /'
dkms status -m "$name" -v "$version" -k "$krel" | grep -q ': installed'
result $? "dkms status: $name/$version installed for $krel"
ko=$(find "$moddir/updates/dkms" -name 'rust_user_events.ko*' 2>/dev/null | head -n 1)
mkdir -p "$out"
case "$ko" in
*.xz) xz -dc "$ko" >"$out/rust_user_events.ko" ;;
?*) cp "$ko" "$out/rust_user_events.ko" ;;
esac
[ -n "$ko" ] && modinfo -F vermagic "$ko" | grep -q "^$krel SMP "
result $? "the installed module's vermagic is $krel's" "${ko:-no module installed}"
[ -f "$out/rust_user_events.ko" ] && [[ "$(readelf -h "$out/rust_user_events.ko")" == *"Machine:"*AArch64* ]]
result $? "it is an $arch object"
signed_by "$out/rust_user_events.ko" /var/lib/dkms/mok.pub
result $? "DKMS signed the module with its own key, /var/lib/dkms/mok.pub" \
	"$(head -n 2 "$tmp/verify.log" 2>/dev/null | tr '\n' ' ')"

# BUILD_EXCLUSIVE_ARCH: another architecture is skipped (77) before any build.
dkms build -m "$name" -v "$version" -k "$krel/riscv64" >"$tmp/riscv.log" 2>&1
rc=$?
[ "$rc" -eq 77 ]
result $? "DKMS skips the same kernel for an architecture the sources have no paths for" "exit $rc"

dkms remove -m "$name" -v "$version" --all >"$tmp/remove.log" 2>&1
rc=$?
[ "$rc" -eq 0 ] && ! dkms status -m "$name" | grep -q . &&
	[ -z "$(find "$moddir/updates" -name 'rust_user_events.ko*' 2>/dev/null)" ]
result $? "dkms remove takes the module away" "exit $rc"

exit "$failed"
