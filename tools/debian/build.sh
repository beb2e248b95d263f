#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# `make debian`: builds rust_user_events.ko for Debian's Rust-enabled kernels
# (tools/debian/kernels.conf), inside a trixie root with the kernels' own
# toolchain (chroot.sh), against trees prepared from Debian's packages
# (prepare-kernel.sh). Both are cached; a second run only rebuilds the module.
#
# Usage: build.sh [FLAVOUR...]     default: every flavour in kernels.conf
#   Writes build/debian/KERNELRELEASE/rust_user_events.ko and prints its path,
#   one line per kernel.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
# shellcheck source=kernels.conf
. "$here/kernels.conf"
[ $# -gt 0 ] || set -- "${DEBIAN_FLAVOURS[@]}"

for flavour in "$@"; do
	krel="$DEBIAN_ABI-$flavour"
	out="$top/build/debian/$krel"
	echo "debian: building rust_user_events.ko for $krel" >&2
	rm -rf "$out"
	bash "$here/stage-sources.sh" "$out/src"
	bash "$here/chroot.sh" bash /rue/src/tools/debian/build-module.sh "$krel" \
		"/rue/src/build/debian/$krel/src" >&2
	cp "$out/src/rust_user_events.ko" "$out/rust_user_events.ko"
	echo "$out/rust_user_events.ko"
done
