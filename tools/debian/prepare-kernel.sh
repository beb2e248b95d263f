#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Prepares a module build tree for an installed Debian kernel: Debian's
# headers packages carry no Rust metadata and no private tracing headers, so
# the tree is made from linux-source-X.Y with the kernel's own .config,
# Module.symvers, vmlinux (for module BTF) and release string, by the
# toolchain the kernel was built with (toolchain-check.sh). `make
# modules_prepare` and `make rust/` then give the kernel and core crates
# whose exported symbols match the running kernel's. Build modules against it
# with the make variables toolchain-check.sh prints (CC=...): Kbuild's
# sub-make would not see them from a Makefile in the tree.
#
# Runs on Debian trixie (a user's machine, or tools/debian/chroot.sh's root).
# The tree is cached in $RUE_KTREE_CACHE (default /var/cache/rust-user-events),
# keyed by everything it is made from; a second run prints its path at once.
#
# Usage: prepare-kernel.sh KERNELRELEASE     prints the tree's path (KDIR)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
krel=$1
headers=${RUE_HEADERS:-/usr/src/linux-headers-$krel}
series=$(echo "$krel" | sed -n 's/^\([0-9]*\.[0-9]*\).*/\1/p')   # 7.3.4+deb13-amd64: 7.3
source_pkg=linux-source-$series
tarball=/usr/src/$source_pkg.tar.xz
cache=${RUE_KTREE_CACHE:-/var/cache/rust-user-events}
jobs=${JOBS:-$(nproc)}

log() { printf 'prepare-kernel: %s\n' "$*" >&2; }
fail() { printf 'rust-user-events: %s\n' "$@" >&2; exit 1; }

[ -f "$headers/.config" ] ||
	fail "no headers for kernel $krel in $headers." "On Debian: apt install linux-headers-$krel"

pkg_version() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null || true; }
src_version=$(pkg_version "$source_pkg")
hdr_version=$(pkg_version "linux-headers-$krel")

# cached_tree: a tree prepared earlier for this kernel from its own source version, with
# the .config and Module.symvers it has now. An installed older kernel keeps being served
# after linux-source-X.Y moved on to a newer upload (or was removed with the series'
# metapackage): its source is gone, its tree is not.
cached_tree() {
	local d
	for d in "$cache/$krel"-*/; do
		d=${d%/}
		[ -f "$d/.rue-complete" ] && [ -n "$hdr_version" ] &&
			[ "$(cat "$d/source-version" 2>/dev/null)" = "$hdr_version" ] &&
			cmp -s "$headers/.config" "$d/headers.config" &&
			cmp -s "$headers/Module.symvers" "$d/build/Module.symvers" || continue
		echo "$d/build"
		return 0
	done
	return 1
}

# stamp KDIR: the upload the tree was made from, inside it, where tools/identity.sh reads it
# when the tree has no vmlinux to read the kernel's version from (trees made before gain it).
stamp() {
	[ -f "$1/rue-source-version" ] || cp "$(dirname "$1")/source-version" "$1/rue-source-version"
}

# The source must be the kernel's own: same Debian package version.
if [ ! -f "$tarball" ] || { [ -n "$hdr_version" ] && [ "$src_version" != "$hdr_version" ]; }; then
	if kdir=$(cached_tree); then
		log "$source_pkg is ${src_version:-not installed}; using the tree prepared from $krel's own $hdr_version: $kdir"
		stamp "$kdir"
		echo "$kdir"
		exit 0
	fi
	[ -f "$tarball" ] ||
		fail "no kernel source at $tarball, and no tree prepared for $krel before." \
			"On Debian: apt install $source_pkg${hdr_version:+=$hdr_version} (from the kernel's suite, e.g. trixie-backports)"
	fail "$source_pkg is version ${src_version:-(not installed)}, the kernel $krel is $hdr_version," \
		"and no tree was prepared for it before. Install the matching source: apt install $source_pkg=$hdr_version"
fi

vars=$(bash "$here/toolchain-check.sh" "$headers/.config")
mapfile -t make_vars <<<"$vars"
cc=${make_vars[0]#CC=}

# Keyed by what the tree is made from (format 1: the steps below).
key=$({
	echo "1 $src_version ${make_vars[*]}"
	cat "$headers/.config" "$headers/Module.symvers"
	"$cc" --version
	rustc --version
	bindgen --version
	pahole --version 2>/dev/null || true
} | sha256sum | cut -c1-16)
dir="$cache/$krel-$key"
kdir="$dir/build"
if [ -f "$dir/.rue-complete" ]; then
	# What cached_tree compares (trees made before it recorded them gain them here).
	[ -f "$dir/source-version" ] || echo "$src_version" >"$dir/source-version"
	[ -f "$dir/headers.config" ] || cp "$headers/.config" "$dir/headers.config"
	stamp "$kdir"
	echo "$kdir"
	exit 0
fi

log "preparing a module build tree for $krel in $dir (a few minutes)"
rm -rf "$dir"
mkdir -p "$dir" "$kdir"
tar -C "$dir" -xf "$tarball"
mv "$dir/$source_pkg" "$dir/src"

kmake() { make -C "$dir/src" O="$kdir" "${make_vars[@]}" KERNELRELEASE="$krel" -j"$jobs" "$@" >&2; }

cp "$headers/.config" "$kdir/.config"
kmake -s olddefconfig
# olddefconfig rewrites whatever the toolchain cannot give (a missing pahole
# drops DEBUG_INFO_BTF, and struct module changes layout): the tree must be
# configured exactly as the kernel was: every option the same, the signing-key
# paths and the versions of the tools aside (gcc's text may name another Debian
# revision of the same release, toolchain-check.sh; binutils' versions may be a
# later upload in the suite, which changed none of the options they imply).
filter='^CONFIG_(MODULE_SIG_KEY|SYSTEM_TRUSTED_KEYS|SYSTEM_REVOCATION_KEYS|SYSTEM_BLACKLIST_HASH_LIST|CC_VERSION_TEXT|AS_VERSION|LD_VERSION)='
if ! diff <(grep -Ev "$filter" "$headers/.config") <(grep -Ev "$filter" "$kdir/.config") >"$dir/config.diff"; then
	cat "$dir/config.diff" >&2
	fail "the prepared .config differs from the kernel's (above): the toolchain does not match the kernel."
fi

kmake -s modules_prepare
kmake -s rust/
cp "$headers/Module.symvers" "$kdir/Module.symvers"
# Module BTF is made against the kernel's vmlinux; the headers package ships it.
[ ! -f "$headers/vmlinux" ] || cp "$headers/vmlinux" "$kdir/vmlinux"
[ "$(cat "$kdir/include/config/kernel.release")" = "$krel" ] ||
	fail "the prepared tree's release is $(cat "$kdir/include/config/kernel.release"), expected $krel"

echo "$src_version" >"$dir/source-version"
stamp "$kdir"
cp "$headers/.config" "$dir/headers.config"
touch "$dir/.rue-complete"
# Only the newest tree per kernel is used, and only installed kernels need one.
for old in "$cache"/*/; do
	old=${old%/}
	release=$(basename "$old")
	release=${release%-*}
	if [ "$old" != "$dir" ] && { [ "$release" = "$krel" ] || [ ! -d "/usr/lib/modules/$release" ]; }; then
		rm -rf "$old"
	fi
done
log "ready: $kdir"
echo "$kdir"
