#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Tests the Debian install inside tools/debian/chroot.sh's root, as a Debian
# user would run it: the refusals of kernels and toolchains the module cannot
# serve, `make install` (tools/debian/install.sh) through DKMS for KERNELRELEASE,
# what it leaves installed, DKMS's refusal of a kernel with user_events built
# in, and `make uninstall`. Prints TAP; the DKMS-built module is copied to
# OUT/rust_user_events.ko for the test VM to load.
#
# Usage (inside the root): install-test.sh KERNELRELEASE OUT
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
krel=$1
out=$2
name=rust-user-events
version=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$here/../../dkms.conf")
config=/usr/src/linux-headers-$krel/.config
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=tap.sh
. "$here/tap.sh"

echo "TAP version 13"
plan 18
bash "$here/toolchain-check.sh" "$config" >/dev/null
result $? "the toolchain here is the one $krel was built with"
refuses 's/^CONFIG_RUST=y/# CONFIG_RUST is not set/' 2 "no Rust support" \
	"a kernel without Rust is refused, saying so"
refuses 's/^# CONFIG_USER_EVENTS is not set/CONFIG_USER_EVENTS=y/' 2 "already has user_events" \
	"a kernel with user_events built in is refused, saying so"
refuses 's/^CONFIG_RUSTC_VERSION_TEXT=.*/CONFIG_RUSTC_VERSION_TEXT="rustc 1.99.0"/' 1 "rustc mismatch" \
	"a kernel built by another rustc is refused, naming both versions"
refuses 's/^CONFIG_CC_VERSION_TEXT=.*/CONFIG_CC_VERSION_TEXT="x86_64-linux-gnu-gcc-14 (Debian 14.9.9-1) 14.9.9"/' 1 \
	"C compiler mismatch" "a kernel built by another gcc is refused, naming both versions"
# Another Debian revision of the kernel's GCC release (sid's gcc moves between kernel uploads).
refuses 's/^\(CONFIG_CC_VERSION_TEXT="[^ ]* (Debian \)[^)]*\() [^"]*"\)$/\1999-rue\2/' 0 \
	"the same GCC release" "a kernel built by another Debian revision of the same gcc is accepted, with a note"

bash "$here/install.sh" --kernel "$krel" >"$tmp/install.log" 2>&1
rc=$?
result $rc "make install builds and installs the module for $krel with DKMS" "exit $rc: $(tail -n 3 "$tmp/install.log" | tr '\n' ' ')"
dkms status -m "$name" -v "$version" -k "$krel" | grep -q ': installed'
result $? "dkms status: $name/$version installed for $krel"
ko=$(find "/usr/lib/modules/$krel/updates/dkms" -name 'rust_user_events.ko*' 2>/dev/null | head -n 1)
[ -n "$ko" ] && modinfo -F vermagic "$ko" | grep -q "^$krel SMP "
result $? "the installed module's vermagic is $krel's" "${ko:-no module installed}"
# For the test VM, decompressed if DKMS compressed it (the signature is inside).
mkdir -p "$out"
case "$ko" in
*.xz) xz -dc "$ko" >"$out/rust_user_events.ko" ;;
?*) cp "$ko" "$out/rust_user_events.ko" ;;
esac
signed_by "$out/rust_user_events.ko" /var/lib/dkms/mok.pub
result $? "DKMS signed the module with its own key, /var/lib/dkms/mok.pub (Secure Boot: enroll it with mokutil)" \
	"$(head -n 2 "$tmp/verify.log" 2>/dev/null | tr '\n' ' ')"
grep -qx rust_user_events /etc/modules-load.d/rust-user-events.conf
result $? "/etc/modules-load.d loads rust_user_events at boot"
# The unit that checks each boot, enabled; its check run here says the module is not loaded
# (this is not the running kernel) and fails, naming what to do.
[ -L /etc/systemd/system/multi-user.target.wants/rust-user-events.service ] &&
	grep -qx 'ExecStart=/usr/local/lib/rust-user-events/rust-user-events-check' \
		/etc/systemd/system/rust-user-events.service &&
	! /usr/local/lib/rust-user-events/rust-user-events-check >"$tmp/check.log" 2>&1 &&
	grep -q 'rust_user_events is not installed for' "$tmp/check.log"
result $? "rust-user-events.service is enabled, and its check fails where the module is not loaded, saying why" \
	"$(head -n 2 "$tmp/check.log" 2>/dev/null | tr '\n' ' ')"

# The kernel's source moved on (a newer linux-source upload, or the series' metapackage took it
# away): DKMS still rebuilds for this installed kernel, from the tree prepared for it.
tarball=/usr/src/linux-source-$(echo "$krel" | sed -n 's/^\([0-9]*\.[0-9]*\).*/\1/p').tar.xz
mv "$tarball" "$tmp/source.tar.xz"
trap 'mv "$tmp/source.tar.xz" "$tarball" 2>/dev/null; rm -rf "$tmp"' EXIT
dkms remove -m "$name" -v "$version" -k "$krel" >/dev/null 2>&1
dkms install -m "$name" -v "$version" -k "$krel" >"$tmp/moved-on.log" 2>&1
rc=$?
mv "$tmp/source.tar.xz" "$tarball"
# (Without that tree, prepare-kernel.sh refuses: "no kernel source at ...".)
[ "$rc" -eq 0 ] && dkms status -m "$name" -v "$version" -k "$krel" | grep -q ': installed'
result $? "without the kernel's source (it moved on), DKMS rebuilds for $krel from the tree prepared for it" \
	"exit $rc: $(grep -h 'rust-user-events:\|prepare-kernel:' "$tmp/moved-on.log" \
		"/var/lib/dkms/$name/$version/build/make.log" 2>/dev/null | head -n 3 | tr '\n' ' ')"

# dkms_build RELEASE SED: runs `dkms build` for a made-up kernel RELEASE whose
# .config is the real one edited by SED; prints DKMS's exit status.
dkms_build() {
	mkdir -p "/usr/lib/modules/$1/build/include"
	sed -e "$2" "$config" >"/usr/lib/modules/$1/build/.config"
	dkms build -m "$name" -v "$version" -k "$1" >"$tmp/dkms-$1.log" 2>&1
	echo $?
	rm -rf "/usr/lib/modules/$1" "/var/lib/dkms/$name/$version/$1"
}
rc=$(dkms_build 7.3.99-rue-fake 's/^# CONFIG_USER_EVENTS is not set/CONFIG_USER_EVENTS=y/')
[ "$rc" -eq 77 ]
result $? "DKMS skips a 7.3 kernel with user_events built in (BUILD_EXCLUSIVE_CONFIG)" "exit $rc"
rc=$(dkms_build 7.3.98-rue-fake '')
[ "$rc" -ne 77 ] && [ "$rc" -ne 0 ] && grep -q 'no headers for kernel 7.3.98-rue-fake' "/var/lib/dkms/$name/$version/build/make.log"
result $? "DKMS tries a 7.3 kernel without user_events, and the build says its headers are missing" "exit $rc"
rc=$(dkms_build 7.2.98-rue-fake '')
[ "$rc" -ne 77 ] && [ "$rc" -ne 0 ] && grep -q 'no headers for kernel 7.2.98-rue-fake' "/var/lib/dkms/$name/$version/build/make.log"
result $? "DKMS tries a 7.2 kernel too (the other series the sources support)" "exit $rc"
rc=$(dkms_build 7.4.0-rue-fake '')
[ "$rc" -eq 77 ]
result $? "DKMS skips a kernel of another series (BUILD_EXCLUSIVE_KERNEL)" "exit $rc"

bash "$here/install.sh" --remove >"$tmp/remove.log" 2>&1
rc=$?
[ "$rc" -eq 0 ] && ! dkms status -m "$name" | grep -q . && [ ! -e /etc/modules-load.d/rust-user-events.conf ] &&
	[ ! -e /etc/systemd/system/rust-user-events.service ] && [ ! -e /usr/local/lib/rust-user-events ] &&
	[ ! -L /etc/systemd/system/multi-user.target.wants/rust-user-events.service ] &&
	[ -z "$(find "/usr/lib/modules/$krel/updates" -name 'rust_user_events.ko*' 2>/dev/null)" ]
result $? "make uninstall removes the module, the DKMS entry, the boot entry and the unit" "exit $rc"

exit "$failed"
