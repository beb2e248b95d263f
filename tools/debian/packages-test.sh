#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Tests make packages' packages as a Debian user meets them, inside a
# throwaway copy of chroot.sh's trixie root (chroot.sh --overlay): the
# repository added with its signed-by key, then
#   modules FLAVOUR: `apt install rust-user-events-modules-FLAVOUR` brings
#     Debian's kernel image and the signed module for it, registered with
#     depmod and loaded at boot by modules-load.d; the installed files are
#     copied to OUT/root for the test VM to boot with (tools/check.sh). Then a
#     kernel ABI bump: a second snapshot of the repository with a newer kernel
#     (a stand-in package: Debian's archive has one ABI at a time) and the
#     module packages for it; `apt upgrade` brings the new module, and the old
#     one stays as long as the old kernel, which apt keeps. Last, purging
#     rust-user-events-common and -ueficert leaves nothing behind.
#   dkms FLAVOUR: on a machine with FLAVOUR's kernel, its prebuilt module
#     package, and the headers of cloud-FLAVOUR's kernel, which has none: `apt
#     install rust-user-events-dkms` beside the prebuilt package builds the
#     module with DKMS for cloud-FLAVOUR only (one copy per kernel); cloud-
#     FLAVOUR's prebuilt package, installed later, replaces DKMS's build; make
#     install and the packages refuse each other; DKMS skips a kernel the
#     module cannot serve, and `apt purge` removes all of it.
# Prints TAP.
#
# Usage (inside the root): packages-test.sh modules|dkms ABI FLAVOUR REPO KEYS OUT
#   ABI and FLAVOUR name the kernel (linux-image-ABI-FLAVOUR), REPO is make
#   packages' repository (build/packages/repo), KEYS its keys.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
mode=$1 abi=$2 flavour=$3 repo=$4 keys=$5 out=$6
krel=$abi-$flavour
name=rust-user-events
version=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$here/../../dkms.conf")
# Debian's suite of the kernels, and the repository's own (its one dists/ entry).
kernel_suite=trixie-backports
suite=$(basename "$(find "$repo/dists" -mindepth 1 -maxdepth 1 -type d | head -n 1)")
keyring=/usr/share/keyrings/rust-user-events-archive-keyring.gpg
sources=/etc/apt/sources.list.d/rust-user-events.sources
tmp=$(mktemp -d)
# The agents gpg starts (their sockets in the GnuPG homes) are stopped on the way out.
trap 'GNUPGHOME=$tmp/otherkey gpgconf --kill all 2>/dev/null; GNUPGHOME=$keys/gnupg gpgconf --kill all 2>/dev/null; rm -rf "$tmp"' EXIT
# shellcheck source=tap.sh
. "$here/tap.sh"
export DEBIAN_FRONTEND=noninteractive
apt_get() { apt-get -y -q -o APT::Sandbox::User=root "$@"; }

kversion=$(dpkg-query -W -f='${Version}' "linux-headers-$krel")

# add_repo DIR: DIR's repository as an apt source, checked with its key.
add_repo() {
	cp "$1/rust-user-events-archive-keyring.gpg" "$keyring"
	printf 'Types: deb\nURIs: file:%s\nSuites: %s\nComponents: main\nSigned-By: %s\n' \
		"$1" "$suite" "$keyring" >"$sources"
	apt_get update >"$tmp/update.log" 2>&1 && ! grep -q '^[WE]:' "$tmp/update.log"
}

# mokutil_says STATE: a stand-in mokutil for a machine booted with Secure Boot on, whose
# --test-key says the key STATE ("is not enrolled", "is already enrolled"), as the real one
# words it.
mokutil_says() {
	printf '#!/bin/sh\ncase "$1" in\n--sb-state) echo "SecureBoot enabled" ;;\n--test-key) echo "$2 %s"; exit 1 ;;\nesac\n' \
		"$1" >/usr/bin/mokutil
	chmod 0755 /usr/bin/mokutil
}

# no_trace: nothing of the packages is left on the system.
no_trace() {
	local left
	left=$( {
		dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' "$name*" 2>/dev/null | grep -v '^un '
		find /usr/lib/modules /usr/src /var/lib/dkms /usr/lib/modules-load.d /etc/modprobe.d \
			/usr/share/rust-user-events /usr/share/doc /usr/share/keyrings /etc/kernel \
			\( -name 'rust_user_events*' -o -name "$name*" \) 2>/dev/null
		find /var/cache -maxdepth 1 -name "$name*" 2>/dev/null
		grep -rls rust_user_events /usr/lib/modules/*/modules.dep 2>/dev/null
	} )
	[ -z "$left" ] || { echo "$left" | head -n 5 | tr '\n' ' '; return 1; }
}

echo "TAP version 13"
case "$mode" in
modules) plan 28 ;;
*) plan 14 ;;
esac
echo "# $mode, $krel ($kversion)"

# A repository signed by another key is refused: apt checks the signature.
mkdir -p "$tmp/otherkey" "$tmp/other"
chmod 0700 "$tmp/otherkey"
GNUPGHOME=$tmp/otherkey gpg --batch --quiet --passphrase '' --quick-gen-key 'not the archive key' rsa2048 sign never
GNUPGHOME=$tmp/otherkey gpg --batch --quiet --export -o "$tmp/other/rust-user-events-archive-keyring.gpg"
mkdir -p "$tmp/other/dists"
cp -a "$repo/dists/$suite" "$tmp/other/dists/"
ln -s "$repo/pool" "$tmp/other/pool"
! add_repo "$tmp/other" && grep -q 'NO_PUBKEY\|not signed\|signature' "$tmp/update.log"
result $? "apt refuses the repository with another key than its own" "$(grep '^[WE]:' "$tmp/update.log" | head -n 2)"
add_repo "$repo"
result $? "apt accepts the repository, signed-by its key (InRelease)" "$(grep '^[WE]:' "$tmp/update.log" | head -n 2)"

if [ "$mode" = modules ]; then
	meta=$name-modules-$flavour
	pkg=$name-modules-$krel
	ko=/usr/lib/modules/$krel/updates/rust_user_events.ko
	# Nothing of the root's own module builds: the packages need no prepared tree.
	rm -rf /var/cache/rust-user-events
	# A trixie machine as installed tracks trixie's own kernel (linux-image-FLAVOUR from
	# trixie): the metapackage is refused there, and brings no kernel of its own.
	apt_get install "$meta" >"$tmp/refused.log" 2>&1
	rc=$?
	[ "$rc" -ne 0 ] && ! dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' 'linux-image-*' 2>/dev/null | grep -q '^ii' &&
		grep -q "linux-image-$flavour" "$tmp/refused.log"
	result $? "on a machine that tracks trixie's kernel, apt install $meta is refused, naming linux-image-$flavour, and installs no kernel" \
		"exit $rc: $(grep -i 'depends\|unmet' "$tmp/refused.log" | head -n 2 | tr '\n' ' ')"
	# The user's machine then: it tracks the backports kernel, installed as Debian says (apt
	# install -t trixie-backports linux-image-FLAVOUR), at the upload the modules were built for.
	apt_get install -t "$kernel_suite" "linux-image-$flavour=$kversion" "linux-image-$krel=$kversion" \
		>"$tmp/kernel.log" 2>&1
	rc=$?
	result $rc "the machine tracks linux-image-$flavour $kversion (apt install -t $kernel_suite)" \
		"exit $rc: $(tail -n 3 "$tmp/kernel.log" | tr '\n' ' ')"
	# A machine booted with Secure Boot on, whose MOK list lacks the key: a
	# stand-in mokutil answers as the real one does there (where the real one
	# is: apt runs maintainer scripts with PATH=DPkg::Path, no /usr/local).
	mokutil_says "is not enrolled"
	apt_get install "$meta" >"$tmp/install.log" 2>&1
	rc=$?
	result $rc "apt install $meta installs $pkg" "exit $rc: $(tail -n 3 "$tmp/install.log" | tr '\n' ' ')"
	grep -q "sudo mokutil --import /usr/share/rust-user-events/rust-user-events-signing.der" "$tmp/install.log"
	result $? "with Secure Boot on, rust-user-events-ueficert says how to enroll its key" "$(grep -A3 "Setting up $name-ueficert" "$tmp/install.log" | tr "\\n" " ")"
	apt_get install --reinstall "$name-ueficert" >"$tmp/reinstall.log" 2>&1 && grep -q 'sudo mokutil --import' "$tmp/reinstall.log"
	result $? "it says so again at the next configure (reinstalled), the key still not enrolled"
	mokutil_says "is already enrolled"
	apt_get install --reinstall "$name-ueficert" >"$tmp/reinstall.log" 2>&1 && ! grep -q 'mokutil --import' "$tmp/reinstall.log"
	result $? "and not once the key is enrolled"
	# Without mokutil: the firmware's SecureBoot variable (attributes, then 1: on), as the
	# kernel shows it, made in this root's /sys (never the host's: chroot.sh mounts no sysfs).
	rm /usr/bin/mokutil
	mountpoint -q /sys && { echo "Bail out! /sys is mounted in the root"; exit 1; }
	mkdir -p /sys/firmware/efi/efivars
	printf '\006\000\000\000\001' >/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c
	apt_get install --reinstall "$name-ueficert" >"$tmp/reinstall.log" 2>&1 &&
		grep -q 'sudo apt install mokutil' "$tmp/reinstall.log" && grep -q 'sudo mokutil --import' "$tmp/reinstall.log"
	result $? "without mokutil, it reads Secure Boot's state from the firmware and says to install mokutil first" \
		"$(grep -A4 "Setting up $name-ueficert" "$tmp/reinstall.log" | tr "\\n" " ")"
	rm -rf /sys/firmware
	openssl x509 -inform DER -noout -ext extendedKeyUsage -in /usr/share/rust-user-events/rust-user-events-signing.der \
		>"$tmp/eku" 2>&1 && grep -q '1\.3\.6\.1\.4\.1\.2312\.16\.1\.2' "$tmp/eku" && grep -q 'Code Signing' "$tmp/eku"
	result $? "the certificate is for code signing, module signing only (OID 1.3.6.1.4.1.2312.16.1.2: shim trusts it for no bootloader)" \
		"$(tr '\n' ' ' <"$tmp/eku")"
	[ "$(dpkg -S "$keyring" 2>/dev/null)" = "$name-archive-keyring: $keyring" ] &&
		cmp -s "$keyring" "$repo/rust-user-events-archive-keyring.gpg"
	result $? "$name-archive-keyring (recommended) owns $keyring, the repository's key apt checks it with"
	[ "$(dpkg-query -W -f='${Version}' "linux-image-$krel" 2>/dev/null)" = "$kversion" ] &&
		dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'
	result $? "the kernel image is $kversion, and $pkg is installed"
	[ "$(dpkg -S "$ko" 2>/dev/null)" = "$pkg: $ko" ]
	result $? "the module is $ko, owned by $pkg"
	modinfo -F vermagic "$ko" 2>/dev/null | grep -q "^$krel SMP "
	result $? "its vermagic is $krel's" "$(modinfo -F vermagic "$ko" 2>&1)"
	signer=$(modinfo -F signer "$ko" 2>/dev/null)
	subject=$(openssl x509 -inform DER -noout -subject -nameopt multiline -in /usr/share/rust-user-events/rust-user-events-signing.der 2>/dev/null |
		sed -n 's/^ *commonName *= *//p')
	[ -n "$signer" ] && [ "$signer" = "$subject" ] && [ "$(modinfo -F sig_hashalgo "$ko")" = sha256 ]
	result $? "it is signed (sha256) by the key whose certificate rust-user-events-ueficert installed" \
		"signer '$signer', certificate '$subject'"
	# The signature itself, checked as the kernel would (tap.sh).
	signed_by "$ko" /usr/share/rust-user-events/rust-user-events-signing.der
	result $? "the signature verifies against that certificate" "$(head -n 2 "$tmp/verify.log" | tr '\n' ' ')"
	[ "$(realpath -q "$(modinfo -k "$krel" -n rust_user_events 2>/dev/null)")" = "$(realpath "$ko")" ]
	result $? "depmod ran: modprobe finds rust_user_events in $krel's updates/" "$(modinfo -k "$krel" -n rust_user_events 2>&1)"
	grep -qx rust_user_events /usr/lib/modules-load.d/rust-user-events.conf &&
		! grep -v '^#' /etc/modprobe.d/rust-user-events-common.conf | grep -q .
	result $? "modules-load.d loads rust_user_events at boot; the modprobe.d file is all comments"

	# An initramfs that holds the module (an administrator listed it: dracut's add_drivers,
	# or /etc/initramfs-tools/modules) is made again by the package's scripts: with the
	# package's module at configure, without it at removal. The kernel's install made
	# /boot/initrd.img-$krel, with dracut: Debian's image depends on "dracut |
	# initramfs-tools", and apt takes the first.
	initrd=/boot/initrd.img-$krel
	if command -v dracut >/dev/null && [ -e "$initrd" ]; then
		echo 'add_drivers+=" rust_user_events "' >/etc/dracut.conf.d/90-rue-test.conf
		# The initramfs made now holds another module than the package's.
		printf 'stale' >>"$ko"
		dracut --force --kver "$krel" "$initrd" >"$tmp/initramfs.log" 2>&1
		# in_initrd: the module's copy in the initramfs, on standard output.
		in_initrd() {
			local at
			at=$(lsinitrd "$initrd" 2>/dev/null | awk '$NF ~ /\/rust_user_events\.ko$/ { print $NF; exit }')
			[ -n "$at" ] && lsinitrd -f "$at" "$initrd" 2>/dev/null
		}
		# (dracut strips an unsigned module, as the stale one now is: another copy still.)
		in_initrd | cmp -s - "$ko"
		stale=$?
		apt_get install --reinstall "$pkg" >"$tmp/reinstall.log" 2>&1
		[ "$stale" -ne 0 ] && in_initrd | cmp -s - "$ko"
		result $? "an initramfs that holds the module is made again at configure, with the package's module" \
			"another copy in it first: $stale ($(lsinitrd "$initrd" 2>&1 | grep -m 1 rust_user_events)); $(grep -i 'dracut\|initrd' "$tmp/reinstall.log" | head -n 2 | tr '\n' ' ')"
		dpkg -r --force-depends "$pkg" >"$tmp/remove.log" 2>&1
		lsinitrd "$initrd" >"$tmp/lsinitrd.log" 2>&1 && ! grep -q 'rust_user_events\.ko' "$tmp/lsinitrd.log"
		result $? "and at removal, without it" "$(grep -i 'dracut\|initrd' "$tmp/remove.log" | head -n 2 | tr '\n' ' ')"
		rm /etc/dracut.conf.d/90-rue-test.conf
		apt_get install "$pkg" >>"$tmp/reinstall.log" 2>&1
	else
		result 1 "an initramfs that holds the module is made again at configure" "no dracut or no $initrd"
		result 1 "and at removal, without it" "no dracut or no $initrd"
	fi

	# What the VM boots with: the installed module tree (without the kernel's
	# own modules, which the test VM does not need) and the boot files.
	rm -rf "$out/root"
	mkdir -p "$out/root/usr/lib" "$out/root/etc"
	(cd / && find "usr/lib/modules/$krel" -path "usr/lib/modules/$krel/kernel" -prune -o -print |
		cpio -pdm --quiet "$out/root") &&
		cp -a /usr/lib/modules-load.d "$out/root/usr/lib/" && cp -a /etc/modprobe.d "$out/root/etc/" &&
		ln -s usr/lib "$out/root/lib"
	result $? "the installed files are copied for the boot test ($out/root)"

	# The ABI bump: a newer kernel (7.3.99+rue) in a second snapshot, and the
	# module packages for it. The stand-in image carries no kernel, only what
	# depmod needs, and its module package the same module (its vermagic is
	# not checked: no such kernel boots).
	abi2=7.3.99+rue
	krel2=$abi2-$flavour
	kversion2=7.3.99-1~rue1
	img=$tmp/image
	mkdir -p "$img/DEBIAN" "$img/usr/lib/modules/$krel2"
	: >"$img/usr/lib/modules/$krel2/modules.order"
	: >"$img/usr/lib/modules/$krel2/modules.builtin"
	: >"$img/usr/lib/modules/$krel2/modules.builtin.modinfo"
	printf 'Package: linux-image-%s\nVersion: %s\nArchitecture: %s\nMaintainer: rust-user-events tests <tests@invalid>\nDescription: stand-in for a newer kernel (packages-test.sh)\n' \
		"$krel2" "$kversion2" "$(dpkg --print-architecture)" >"$img/DEBIAN/control"
	# Named as Debian names it: apt-ftparchive --arch goes by the name's _ARCH.deb.
	image_deb=$tmp/linux-image-${krel2}_${kversion2}_$(dpkg --print-architecture).deb
	dpkg-deb -b -Zxz "$img" "$image_deb" >/dev/null
	# And linux-image-FLAVOUR moved on to it, as the archive's does.
	mkdir -p "$tmp/meta/DEBIAN"
	printf 'Package: linux-image-%s\nVersion: %s\nArchitecture: %s\nDepends: linux-image-%s\nMaintainer: rust-user-events tests <tests@invalid>\nDescription: stand-in for the metapackage of a newer kernel (packages-test.sh)\n' \
		"$flavour" "$kversion2" "$(dpkg --print-architecture)" "$krel2" >"$tmp/meta/DEBIAN/control"
	meta_deb=$tmp/linux-image-${flavour}_${kversion2}_$(dpkg --print-architecture).deb
	dpkg-deb -b -Zxz "$tmp/meta" "$meta_deb" >/dev/null
	# The same version of the sources: what the repository's packages have.
	common_version=$(dpkg-query -W -f='${Version}' "$name-common")
	RUE_REPO_EXTRA="$image_deb $meta_deb" RUE_PKG_VERSION=${common_version%-1} \
		bash "$here/packages-build.sh" "$tmp/snapshot2" "$keys" "$abi2" "$kversion2" "$flavour=$ko" \
		>"$tmp/snapshot2.log" 2>&1
	rc=$?
	result $rc "a second snapshot of the repository, for kernel $krel2" "exit $rc: $(tail -n 3 "$tmp/snapshot2.log" | tr '\n' ' ')"
	add_repo "$tmp/snapshot2/repo"
	result $? "apt accepts the second snapshot"
	apt upgrade -y -q -o APT::Sandbox::User=root >"$tmp/upgrade.log" 2>&1
	rc=$?
	new=$name-modules-$krel2
	[ "$rc" -eq 0 ] && dpkg-query -W -f='${Status}' "$new" 2>/dev/null | grep -q 'install ok installed' &&
		[ "$(dpkg-query -W -f='${Version}' "$meta")" = "${common_version%-1}+$kversion2" ] &&
		[ "$(dpkg -S "/usr/lib/modules/$krel2/updates/rust_user_events.ko" 2>/dev/null)" = \
			"$new: /usr/lib/modules/$krel2/updates/rust_user_events.ko" ]
	result $? "apt upgrade brings $new with the new kernel, and the metapackage follows" \
		"exit $rc: $(tail -n 6 "$tmp/upgrade.log" | tr '\n' ' ')"
	[ -e "/usr/lib/modules/$krel2/updates/rust_user_events.ko" ] &&
		[ "$(realpath -q "$(modinfo -k "$krel2" -n rust_user_events 2>/dev/null)")" = \
		"$(realpath "/usr/lib/modules/$krel2/updates/rust_user_events.ko")" ] &&
		[ "$(realpath -q "$(modinfo -k "$krel" -n rust_user_events 2>/dev/null)")" = "$(realpath "$ko")" ]
	result $? "each kernel finds its own module (depmod for $krel2; $krel's left for the kernel apt keeps)"
	# apt counts rust-user-events-modules-ABI-FLAVOUR among a kernel's own
	# packages (APT::VersionedKernelPackages, ".*-modules"): it keeps the old
	# one while it keeps the old kernel, and both go together.
	apt_get autoremove --dry-run >"$tmp/autoremove.log" 2>&1
	dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' &&
		! grep -q "^Remv $pkg " "$tmp/autoremove.log"
	result $? "$pkg stays installed for the old kernel; autoremove keeps it as it keeps that kernel"
	apt_get purge "linux-image-$krel" >"$tmp/purge-kernel.log" 2>&1
	rc=$?
	[ "$rc" -eq 0 ] && ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'ok installed' && [ ! -e "$ko" ] &&
		dpkg-query -W -f='${Status}' "$new" 2>/dev/null | grep -q 'install ok installed'
	result $? "apt purge linux-image-$krel takes $pkg with it, and leaves $new" "exit $rc"

	# Removing it all: every module package depends on rust-user-events-common.
	apt_get purge "$name-common" "$name-ueficert" >"$tmp/remove.log" 2>&1 &&
		apt_get autoremove --purge >>"$tmp/remove.log" 2>&1
	rc=$?
	no_trace >"$tmp/left" 2>&1
	result $(($? + rc)) "apt purge $name-common $name-ueficert, then autoremove, leaves nothing of $name behind" \
		"exit $rc: $(cat "$tmp/left")"
else
	# A machine with two kernels' headers, $krel and $other: the others' are hidden in this
	# copy of the root. $krel has its prebuilt module package; $other has none, the gap
	# between a kernel upload and the project's republish.
	other=$abi-cloud-$flavour
	for dir in /usr/lib/modules/*/; do
		rel=$(basename "$dir")
		[ "$rel" = "$krel" ] || [ "$rel" = "$other" ] || rm -rf "$dir"
	done
	apt_get install -t "$kernel_suite" "linux-image-$krel=$kversion" >"$tmp/kernel.log" 2>&1 &&
		apt_get install "$name-modules-$krel" >>"$tmp/kernel.log" 2>&1
	rc=$?
	result $rc "the machine runs linux-image-$krel with its prebuilt $name-modules-$krel" \
		"exit $rc: $(tail -n 3 "$tmp/kernel.log" | tr '\n' ' ')"
	apt_get install "$name-dkms" >"$tmp/install.log" 2>&1
	rc=$?
	result $rc "apt install $name-dkms beside it (no conflict) builds the module with DKMS" \
		"exit $rc: $(tail -n 5 "$tmp/install.log" | tr '\n' ' ')"
	dkms status -m "$name" -v "$version" -k "$other" 2>/dev/null | grep -q ': installed' &&
		! dkms status -m "$name" -v "$version" -k "$krel" 2>/dev/null | grep -q ': installed'
	result $? "DKMS built for $other, which has no prebuilt module, and skipped $krel, which has one" \
		"$(dkms status 2>&1 | head -n 3 | tr '\n' ' ')"
	copies=$(find "/usr/lib/modules/$krel" -name 'rust_user_events.ko*' | wc -l)
	[ "$copies" -eq 1 ] && [ "$(realpath -q "$(modinfo -k "$krel" -n rust_user_events 2>/dev/null)")" = \
		"/usr/lib/modules/$krel/updates/rust_user_events.ko" ]
	result $? "$krel has one copy of the module, the prebuilt one, and modprobe finds it" \
		"$copies copies: $(find "/usr/lib/modules/$krel" -name 'rust_user_events.ko*' | tr '\n' ' ')"
	ko=$(find "/usr/lib/modules/$other/updates/dkms" -name 'rust_user_events.ko*' 2>/dev/null | head -n 1)
	case "$ko" in
	*.xz) xz -dc "$ko" >"$tmp/dkms.ko" ;;
	?*) cp "$ko" "$tmp/dkms.ko" ;;
	esac
	[ -n "$ko" ] && modinfo -F vermagic "$ko" | grep -q "^$other SMP " && signed_by "$tmp/dkms.ko" /var/lib/dkms/mok.pub
	result $? "the module DKMS installed for $other has its vermagic and is signed with DKMS's key, /var/lib/dkms/mok.pub" \
		"${ko:-no module}: $(head -n 2 "$tmp/verify.log" 2>/dev/null | tr '\n' ' ')"
	grep -qx rust_user_events /usr/lib/modules-load.d/rust-user-events.conf
	result $? "modules-load.d (rust-user-events-common) loads it at boot"
	# The republish: $other's prebuilt package arrives, and replaces DKMS's build.
	apt_get install "$name-modules-$other" >"$tmp/republish.log" 2>&1
	rc=$?
	copies=$(find "/usr/lib/modules/$other" -name 'rust_user_events.ko*' | wc -l)
	[ "$rc" -eq 0 ] && [ "$copies" -eq 1 ] &&
		! dkms status -m "$name" -v "$version" -k "$other" 2>/dev/null | grep -q ': installed' &&
		[ "$(realpath -q "$(modinfo -k "$other" -n rust_user_events 2>/dev/null)")" = \
			"/usr/lib/modules/$other/updates/rust_user_events.ko" ]
	result $? "$name-modules-$other, installed later, replaces DKMS's build: one copy, the prebuilt" \
		"exit $rc, $copies copies: $(grep 'rust-user-events:' "$tmp/republish.log" | tr '\n' ' ')"
	# make install beside the packages is refused, naming them.
	bash "$here/install.sh" --no-load --kernel "$krel" >"$tmp/make-install.log" 2>&1
	rc=$?
	[ "$rc" -ne 0 ] && grep -q "the $name packages are installed" "$tmp/make-install.log" &&
		dpkg-query -S "/usr/src/$name-$version" >/dev/null 2>&1
	result $? "make install beside the packages refuses, naming them, and leaves their tree alone" "exit $rc: $(head -n 2 "$tmp/make-install.log" | tr '\n' ' ')"
	# A kernel the module must not build for: user_events built in.
	fake=7.3.97-rue-fake
	mkdir -p "/usr/lib/modules/$fake/build/include"
	sed 's/^# CONFIG_USER_EVENTS is not set/CONFIG_USER_EVENTS=y/' "/usr/src/linux-headers-$krel/.config" \
		>"/usr/lib/modules/$fake/build/.config"
	dkms build -m "$name" -v "$version" -k "$fake" >"$tmp/fake.log" 2>&1
	rc=$?
	rm -rf "/usr/lib/modules/$fake" "/var/lib/dkms/$name/$version/$fake"
	[ "$rc" -eq 77 ]
	result $? "the packaged dkms.conf skips a 7.3 kernel with user_events built in" "exit $rc"
	# A removed kernel's prepared tree goes with it (the package's kernel postrm.d hook), and
	# only its own: $other's stays while $other is installed.
	ls -d "/var/cache/rust-user-events/$krel"-* >/dev/null 2>&1 &&
		apt_get purge "linux-image-$krel" >"$tmp/purge-kernel.log" 2>&1
	rc=$?
	trees=$(ls -d /var/cache/rust-user-events/*/ 2>/dev/null | xargs -rn1 basename | tr '\n' ' ')
	[ "$rc" -eq 0 ] && ! ls -d "/var/cache/rust-user-events/$krel"-????????????????/ >/dev/null 2>&1 &&
		ls -d "/var/cache/rust-user-events/$other"-*/ >/dev/null 2>&1
	result $? "apt purge linux-image-$krel removes $krel's prepared tree, and keeps $other's" \
		"exit $rc; trees: $trees"
	# And the other way: rust-user-events-dkms does not install over make install's tree.
	apt_get purge "$name-dkms" >"$tmp/purge-dkms.log" 2>&1 &&
		bash "$here/stage-sources.sh" "/usr/src/$name-$version" >/dev/null 2>&1
	apt_get install "$name-dkms" >"$tmp/over.log" 2>&1
	rc=$?
	[ "$rc" -ne 0 ] && grep -q "make install's" "$tmp/over.log" &&
		! dpkg-query -W -f='${Status}' "$name-dkms" 2>/dev/null | grep -q 'ok installed'
	result $? "$name-dkms refuses to install over make install's /usr/src/$name-$version" \
		"exit $rc: $(grep "$name-dkms:" "$tmp/over.log" | head -n 2 | tr '\n' ' ')"
	rm -rf "/usr/src/$name-$version"
	# The refused install is left selected; dpkg forgets it.
	dpkg --purge "$name-dkms" >/dev/null 2>&1
	apt_get purge "$name-common" "$name-ueficert" >"$tmp/remove.log" 2>&1 &&
		apt_get autoremove --purge >>"$tmp/remove.log" 2>&1
	rc=$?
	no_trace >"$tmp/left" 2>&1
	result $(($? + rc)) "apt purge $name-common $name-ueficert, then autoremove, leaves nothing of $name behind" \
		"exit $rc: $(cat "$tmp/left")"
fi

exit "$failed"
