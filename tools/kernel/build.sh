#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Builds the rust-user-events test kernel from Debian's linux-source-7.3 with
# LLVM=-19: tinyconfig + tools/kernel/rue.config. The build lives outside the
# work tree, in $RUE_CACHE (default ~/.cache/rust-user-events), in a directory
# keyed by the source package version and the fragment's hash, so an unchanged
# fragment never rebuilds.
#
# Usage: build.sh [--print-kdir]
#   Without arguments: build if needed, then print the build directory (KDIR).
#   --print-kdir: only print where KDIR is (or would be); build nothing.
# RUE_KERNEL_FRAGMENT=FILE builds tinyconfig + FILE instead of rue.config, keyed
# the same way by FILE's hash (make bench's two kernels, bench-fragment.sh).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
fragment="$here/rue.config"
if [ -n "${RUE_KERNEL_FRAGMENT:-}" ]; then
	fragment=$(readlink -f "$RUE_KERNEL_FRAGMENT")
	[ -f "$fragment" ] || { echo "kernel: no fragment $RUE_KERNEL_FRAGMENT" >&2; exit 2; }
fi
cache=${RUE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rust-user-events}
tarball=/usr/src/linux-source-7.3.tar.xz
jobs=${JOBS:-$(nproc)}

log() { printf 'kernel: %s\n' "$*" >&2; }

src_version() {
	dpkg-query -W -f='${Version}' linux-source-7.3 2>/dev/null || echo unknown
}

# The fragment, and how the build is stamped (below).
key="$(src_version)-$({ cat "$fragment"; echo "stamp: 1"; } | sha256sum | cut -c1-16)"
srcdir="$cache/src/linux-source-7.3-$(src_version)"
kdir="$cache/kernel-$key"

if [ "${1:-}" = --print-kdir ]; then
	echo "$kdir"
	exit 0
fi

if [ -f "$kdir/.rue-complete" ]; then
	echo "$kdir"
	exit 0
fi

[ -f "$tarball" ] || bash "$here/../setup.sh" >&2

if [ ! -f "$srcdir/.rue-extracted" ]; then
	log "extracting $tarball"
	rm -rf "$srcdir"
	mkdir -p "$cache/src"
	tmp=$(mktemp -d "$cache/src/.extract.XXXXXX")
	tar -C "$tmp" -xf "$tarball"
	mv "$tmp/linux-source-7.3" "$srcdir"
	rmdir "$tmp"
	touch "$srcdir/.rue-extracted"
fi

mkdir -p "$kdir"
# Everything make prints goes to stderr: stdout carries only the path (callers capture it).
# Stamped with the key, not the time: `uname -v` is "#1 SMP PREEMPT_DYNAMIC KEY", the same
# after a relink (below), and the module compares it at load (src/identity.rs).
kmake() {
	make -C "$srcdir" O="$kdir" LLVM=-19 -j"$jobs" KBUILD_BUILD_VERSION=1 \
		KBUILD_BUILD_VERSION_TIMESTAMP="$key" "$@" >&2
}

log "configuring $kdir"
kmake -s tinyconfig >/dev/null
# Kept with the build: which fragment made it.
cp "$fragment" "$kdir/fragment.config"
"$srcdir/scripts/kconfig/merge_config.sh" -m -O "$kdir" "$kdir/.config" "$fragment" >"$kdir/merge.log"
kmake -s olddefconfig

# Kconfig silently drops values whose dependencies are unmet: refuse that.
bash "$here/config-check.sh" "$fragment" "$kdir/.config" || { log "fragment not satisfied"; exit 1; }

log "building (jobs=$jobs)"
start=$(date +%s)
kmake all
if [ -z "${RUE_KERNEL_FRAGMENT:-}" ]; then
	# Another build of the same tree, which only its version tells apart (a rebuilt kernel,
	# or a same-ABI upload): the module built against the tree must refuse it (make check's
	# identity_test). The tree is then relinked as it was.
	log "relinking another build (#2) for the identity test"
	kmake KBUILD_BUILD_VERSION=2 bzImage
	mkdir -p "$kdir/other-build"
	cp "$kdir/arch/x86/boot/bzImage" "$kdir/other-build/bzImage"
	kmake bzImage
	grep -q '"#1 ' "$kdir/include/generated/utsversion.h" ||
		{ log "the tree was not relinked as build #1"; exit 1; }
fi
# UAPI headers for the selftests (linux/user_events.h): $kdir/usr/include.
kmake -s headers
echo $(($(date +%s) - start)) >"$kdir/build-seconds"
touch "$kdir/.rue-complete"
log "built in $(cat "$kdir/build-seconds") s"
echo "$kdir"
