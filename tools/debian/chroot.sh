#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# A Debian trixie environment with the toolchain Debian's 7.3 kernels were
# built with (gcc-14, Debian's rustc, rust-src, bindgen, pahole), Debian's
# linux-source-7.3 and the headers packages of the supported kernels, made with
# debootstrap (with RUE_DEBIAN=sid or experimental, a sid one with sid's 7.2
# kernels or experimental's: kernels.conf). It stands in for a Debian user's machine: make check builds the
# module there for Debian's kernels, and tests the install (DKMS) there.
#
# The root lives in $RUE_CACHE/debian/DEBIAN_ROOT-KEY, keyed by the packages
# it holds, so it is made once per kernel upload (kernels.conf); the set's
# older roots are deleted.
# Commands run in it with a clean environment.
#
# Usage: chroot.sh --print-root     build if needed, print the root's path
#        chroot.sh [OPTIONS] [--] CMD...
#                                   build if needed, run CMD inside it as root,
#                                   with /proc, /dev and the work tree mounted
#                                   (private mounts, gone when CMD ends)
#   --packaging       install make packages' tools first (packaging, below)
#   --overlay         run CMD in a throwaway copy of the root (an overlay whose
#                     changes are deleted when CMD ends): the package tests
#                     install and remove there
#   --bind HOST:PATH  mount the host's directory HOST at PATH too (repeatable;
#                     neither may contain a space)
#   --in DIR          run CMD in the root DIR instead (another system: the
#                     upgrade test's), with the same mounts
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
# shellcheck source=kernels.conf
. "$here/kernels.conf"
cache=${RUE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rust-user-events}
mirror=http://deb.debian.org/debian

log() { printf 'debian: %s\n' "$*" >&2; }

# What a Debian user installs to build the module (README, install.sh), plus
# dkms for the install test.
packages=(
	"${DEBIAN_TOOLCHAIN_PACKAGES[@]}" "${DEBIAN_CROSS_PACKAGES[@]}"
	make bc flex bison libelf-dev libssl-dev python3 cpio kmod xz-utils openssl
	dkms
)
# What `make packages` (tools/debian/packages.sh) and its tests need besides
# (the Secure Boot test's disk image and firmware variables: mtools, fdisk,
# python3-virt-firmware): installed into the root on first use (--packaging),
# not part of its key, so that adding them neither remakes the root nor the
# trees prepared in it.
packaging=(apt-utils gnupg lintian debhelper dh-dkms mtools fdisk python3-virt-firmware)
# Headers of another architecture's kernels (arm64's, on an amd64 host) cannot
# be installed beside the native ones (both flavours' linux-kbuild packages own
# the same paths), and only their .config, Module.symvers and vmlinux are used
# (prepare-kernel.sh): they are unpacked into /usr/src instead, unregistered.
foreign=()
for flavour in "${DEBIAN_FLAVOURS[@]}"; do
	arch=$(debian_arch "$flavour")
	if [ "$arch" = "$(dpkg --print-architecture)" ]; then
		packages+=("linux-headers-$DEBIAN_ABI-$flavour=$DEBIAN_VERSION")
	else
		foreign+=("linux-headers-$DEBIAN_ABI-$flavour:$arch=$DEBIAN_VERSION")
	fi
done
packages+=("linux-source-$DEBIAN_SERIES=$DEBIAN_VERSION")
# The root is keyed by what goes into it (format 2: debootstrap minbase, arm64
# as a foreign architecture), so a new kernel upload in the suite makes a new root.
key=$(echo "2 $mirror ${packages[*]} ${foreign[*]}" | sha256sum | cut -c1-16)
root="$cache/debian/$DEBIAN_ROOT-$key"
# Each set's logs of making its root: make check makes the roots ahead, one after another
# (prefetch.sh), while its other steps may make another.
logs="$cache/debian/$DEBIAN_ROOT"

make_root() {
	command -v debootstrap >/dev/null 2>&1 || {
		log "installing debootstrap"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >&2
	}
	local tmp="$root.tmp"
	rm -rf "$tmp"
	mkdir -p "$(dirname "$root")"
	log "debootstrap $DEBIAN_BASE into $root (a few minutes)"
	debootstrap --variant=minbase "$DEBIAN_BASE" "$tmp" "$mirror" >"$logs-debootstrap.log" 2>&1 ||
		{ tail -20 "$logs-debootstrap.log" >&2; exit 1; }
	printf 'Types: deb\nURIs: %s\nSuites: %s %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
		"$mirror" "${DEBIAN_BASE_SUITES[*]}" "$DEBIAN_SUITE" >"$tmp/etc/apt/sources.list.d/debian.sources"
	rm -f "$tmp/etc/apt/sources.list"
	# The host's archive may be a snapshot older than sid's and experimental's Release
	# files allow (Valid-Until); the packages are named by version all the same.
	if [ "$DEBIAN_BASE" = sid ]; then
		printf 'Acquire::Check-Valid-Until "false";\n' >"$tmp/etc/apt/apt.conf.d/99rue-valid-until"
	fi
	# Nothing may start services inside the root.
	printf '#!/bin/sh\nexit 101\n' >"$tmp/usr/sbin/policy-rc.d"
	chmod 0755 "$tmp/usr/sbin/policy-rc.d"
	log "installing ${packages[*]}"
	# arm64's lists too: its kernels' headers and images, busybox and perf for the test VM.
	in_root "$tmp" dpkg --add-architecture arm64
	in_root "$tmp" apt-get update -qq
	in_root "$tmp" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		"${packages[@]}" >"$logs-apt.log" 2>&1 ||
		{ tail -30 "$logs-apt.log" >&2; exit 1; }
	if [ "${#foreign[@]}" -gt 0 ]; then
		log "unpacking ${foreign[*]}"
		in_root "$tmp" sh -ec 'mkdir -p /tmp/foreign && cd /tmp/foreign && apt-get download -q "$@" &&
			for deb in *.deb; do dpkg-deb -x "$deb" /; done && cd / && rm -rf /tmp/foreign' \
			sh "${foreign[@]}" >>"$logs-apt.log" 2>&1 ||
			{ tail -30 "$logs-apt.log" >&2; exit 1; }
	fi
	in_root "$tmp" apt-get clean
	touch "$tmp/.rue-complete"
	mv "$tmp" "$root"
	# Only this set's older roots: another set's name may begin with this one's (sid, sid-7.2).
	for old in "$cache/debian/$DEBIAN_ROOT"-*/; do
		old=${old%/}
		[[ "${old##*/}" =~ ^"$DEBIAN_ROOT"-[0-9a-f]{16}$ ]] || continue
		[ "$old" = "$root" ] || rm -rf "$old"
	done
}

# in_root ROOT CMD...: CMD inside ROOT, in a private mount namespace; in a
# throwaway overlay of ROOT with --overlay, with the --bind directories.
overlay=0
binds=()
in_root() {
	local r=$1 upper= rc=0
	shift
	if [ "$overlay" -eq 1 ]; then
		upper=$(mktemp -d "$cache/debian/overlay.XXXXXX")
		# Deleted however this script ends (the mounts end with the namespace).
		overlay_upper=$upper
		trap 'rm -rf "${overlay_upper:-}"' EXIT
	fi
	unshare --mount --propagation private -- /bin/sh -ec '
		r=$1; top=$2; upper=$3; binds=$4; shift 4
		if [ -n "$upper" ]; then
			mkdir -p "$upper/changes" "$upper/work" "$upper/root"
			mount -t overlay overlay -o "lowerdir=$r,upperdir=$upper/changes,workdir=$upper/work" "$upper/root"
			r=$upper/root
		fi
		mount -t proc proc "$r/proc"
		mount --rbind /dev "$r/dev"
		mkdir -p "$r/rue/src"
		mount --bind "$top" "$r/rue/src"
		for b in $binds; do
			mkdir -p "$r${b#*:}"
			mount --bind "${b%%:*}" "$r${b#*:}"
		done
		exec chroot "$r" /usr/bin/env -i HOME=/root LANG=C.UTF-8 \
			PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"' sh "$r" "$top" "$upper" \
		"${binds[*]}" "$@" || rc=$?
	[ -z "$upper" ] || rm -rf "$upper"
	return "$rc"
}

# ensure_packaging: the packaging tools in the root, once.
ensure_packaging() {
	local stamp overlay=0
	local -a binds=()
	stamp="$root/.rue-packaging-$(echo "${packaging[*]}" | sha256sum | cut -c1-16)"
	[ -f "$stamp" ] && return 0
	log "installing ${packaging[*]} into the root (make packages)"
	in_root "$root" sh -ec 'apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@"
		apt-get clean' sh "${packaging[@]}" >"$logs-apt-packaging.log" 2>&1 ||
		{ tail -30 "$logs-apt-packaging.log" >&2; exit 1; }
	touch "$stamp"
}

# The root is made, and the packaging tools installed, under a lock: make check makes them
# ahead, in the background (prefetch.sh), and a step that needs the root meanwhile waits.
mkdir -p "$cache/debian"
exec 9>"$root.lock"
flock 9
[ -f "$root/.rue-complete" ] || make_root

packaging_first=0
target=$root
while [ $# -gt 0 ]; do
	case "$1" in
	--print-root) echo "$root"; exit 0 ;;
	--packaging) packaging_first=1; shift ;;
	--in) target=$2; shift 2 ;;
	--overlay) overlay=1; shift ;;
	--bind) binds+=("$2"); shift 2 ;;
	--) shift; break ;;
	*) break ;;
	esac
done
[ "$packaging_first" -eq 0 ] || ensure_packaging
exec 9>&-
[ $# -eq 0 ] || in_root "$target" "$@"
