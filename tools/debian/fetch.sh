#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# One Debian package, of any architecture the trixie root knows (amd64 and
# arm64; tools/debian/chroot.sh), downloaded by the root's apt, unpacked once
# into $RUE_CACHE/debian/PACKAGE_ARCH-VERSION; prints that directory. The test
# VM takes Debian's kernel images (vmlinuz.sh) and arm64's busybox and perf
# from here.
#
# Usage: fetch.sh PACKAGE ARCH [VERSION]    default VERSION: the candidate
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
pkg=$1
arch=$2
cache=${RUE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rust-user-events}
root=$(bash "$here/chroot.sh" --print-root)
version=${3:-$(bash "$here/chroot.sh" apt-cache policy "$pkg:$arch" |
	sed -n 's/^ *Candidate: \(.*\)/\1/p')}
[ -n "$version" ] && [ "$version" != "(none)" ] ||
	{ echo "fetch: no $pkg for $arch in the trixie root's suites" >&2; exit 1; }
dir="$cache/debian/${pkg}_$arch-$version"

# One fetch at a time (they share the root's download directory): make check fetches ahead, in
# the background (prefetch.sh).
mkdir -p "$cache/debian"
exec 9>"$cache/debian/fetch.lock"
flock 9
if [ ! -f "$dir/.rue-complete" ]; then
	rm -rf "$cache/debian/${pkg}_$arch"-* "$root/tmp/rue-fetch"
	mkdir -p "$root/tmp/rue-fetch"
	bash "$here/chroot.sh" sh -ec 'cd /tmp/rue-fetch && apt-get download -q -o APT::Sandbox::User=root "$1"' sh \
		"$pkg:$arch=$version" >&2
	mkdir -p "$dir"
	dpkg-deb -x "$root/tmp/rue-fetch/"*.deb "$dir"
	rm -rf "$root/tmp/rue-fetch"
	touch "$dir/.rue-complete"
fi
echo "$dir"
