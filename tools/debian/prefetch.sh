#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make check's Debian roots and kernel images, made ahead: make check runs this
# in the background while the test kernel compiles, so that the downloads and
# unpacking (a minute or two per root, mostly waiting on the network) overlap
# the compiler instead of holding up the steps that need them. Every root is
# made under chroot.sh's lock and every image under fetch.sh's, so a step that
# gets there first makes it itself, and one that comes while it is being made
# waits for it. A failure here is not make check's: the step that needs the
# root or image makes it again and reports.
#
# Usage: prefetch.sh          (the sets of RUE_CHECK_KERNELS, as check.sh)
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
kernels=" ${RUE_CHECK_KERNELS:-test debian sid trixie-7.2 experimental} "
start=$(date +%s)

# root SET [ARGS...]: SET's root (chroot.sh), with ARGS (--packaging).
root() {
	local set=$1
	shift
	echo "prefetch: the $set root ($(($(date +%s) - start)) s)"
	RUE_DEBIAN=$set bash "$here/chroot.sh" "$@" -- true
}

# images SET: the kernel images of SET's flavours (vmlinuz.sh).
images() {
	local set=$1 flavour
	local -a flavours
	mapfile -t flavours < <(RUE_DEBIAN=$set bash -c '. "$1" && printf "%s\n" "${DEBIAN_FLAVOURS[@]}"' sh \
		"$here/kernels.conf")
	for flavour in "${flavours[@]}"; do
		RUE_DEBIAN=$set bash "$here/vmlinuz.sh" "$flavour" >/dev/null
	done
}

# The order in which make check needs them: trixie-backports' 7.3 root first (and make
# packages' tools in it), then the other sets' in the order check.sh builds them.
case "$kernels" in *" debian "* | *" trixie-7.2 "* | *" sid "* | *" experimental "*)
	root trixie --packaging ;;
esac
case "$kernels" in *" debian "*)
	images trixie
	bash "$here/fetch.sh" busybox-static arm64 >/dev/null
	# The Secure Boot test's firmware, boot loaders, MokManager, mokutil and the kernel's
	# efivarfs module (secureboot-test.sh).
	for pkg in ovmf:all shim-signed shim-helpers-amd64-signed grub-efi-amd64-signed mokutil libc6 \
		libcrypt1 libefivar1t64 libkeyutils1 libssl3t64 zlib1g libzstd1; do
		bash "$here/fetch.sh" "${pkg%%:*}" "$(echo "$pkg:amd64" | cut -d: -f2)" >/dev/null
	done
	(. "$here/kernels.conf" && bash "$here/fetch.sh" "linux-modules-$DEBIAN_ABI-amd64" amd64 "$DEBIAN_VERSION" >/dev/null)
	;;
esac
for set in trixie-7.2 sid experimental; do
	case "$kernels" in *" $set "*)
		root "$set"
		images "$set"
		;;
	esac
done
echo "prefetch: done ($(($(date +%s) - start)) s)"
