#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Debian's own kernel image, unmodified, for the test VM: downloads
# linux-binary-$DEBIAN_ABI-FLAVOUR (the package holding
# /usr/lib/modules/<release>/vmlinuz) of the version kernels.conf resolves,
# once, into $RUE_CACHE/debian and prints the image's path.
#
# Usage: vmlinuz.sh FLAVOUR
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=kernels.conf
. "$here/kernels.conf"
cache=${RUE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rust-user-events}
krel="$DEBIAN_ABI-$1"
pkg="linux-binary-$krel"
dir="$cache/debian/$pkg-$DEBIAN_VERSION"
image="$dir/usr/lib/modules/$krel/vmlinuz"

if [ ! -f "$image" ]; then
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	(cd "$tmp" && apt-get download -q -o APT::Sandbox::User=root "$pkg=$DEBIAN_VERSION" >&2)
	rm -rf "$cache/debian/$pkg"-*
	mkdir -p "$dir"
	dpkg-deb -x "$tmp/${pkg}_"*.deb "$dir"
	[ -f "$image" ] || { echo "vmlinuz: $pkg has no $image" >&2; exit 1; }
fi
echo "$image"
