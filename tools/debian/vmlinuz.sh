#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Debian's own kernel image, unmodified, for the test VM: the package holding
# /usr/lib/modules/<release>/vmlinuz (linux-binary-$DEBIAN_ABI-FLAVOUR) of the
# version kernels.conf resolves, unpacked once by fetch.sh; prints the image's
# path (an x86 bzImage, or an arm64 Image).
#
# Usage: vmlinuz.sh FLAVOUR
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=kernels.conf
. "$here/kernels.conf"
krel="$DEBIAN_ABI-$1"
dir=$(bash "$here/fetch.sh" "linux-binary-$krel" "$(debian_arch "$1")" "$DEBIAN_VERSION")
image="$dir/usr/lib/modules/$krel/vmlinuz"
[ -f "$image" ] || { echo "vmlinuz: linux-binary-$krel has no $image" >&2; exit 1; }
echo "$image"
