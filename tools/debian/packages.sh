#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# `make packages`: Debian packages of the module for every Rust-enabled flavour
# of the current trixie-backports kernel (tools/debian/kernels.conf), signed,
# with a DKMS package and a signed apt repository, made in chroot.sh's trixie
# root by packages-build.sh, which says what each package holds.
#
# Keys: $RUE_SIGNING_DIR (default $RUE_CACHE/signing) holds the module signing
# key and the repository's GnuPG key; the first run makes them, and a
# distributor puts its own there instead (Documentation/install.md).
# RUE_MAINTAINER and RUE_REPO_SUITE are passed on to packages-build.sh.
#
# Usage: packages.sh [--prebuilt]
#   --prebuilt  package the modules make debian built (build/debian/) instead
#               of building them first (make check does)
#   Writes build/packages/repo/ and prints its path.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
[ "${RUE_DEBIAN:-}" != experimental ] ||
	{ echo "packages: packages are made for trixie-backports' kernels only" >&2; exit 2; }
# shellcheck source=kernels.conf
. "$here/kernels.conf"
cache=${RUE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rust-user-events}
keys=${RUE_SIGNING_DIR:-$cache/signing}

if [ "${1:-}" != --prebuilt ]; then
	bash "$here/build.sh" >/dev/null
fi
modules=()
for flavour in "${DEBIAN_FLAVOURS[@]}"; do
	ko=build/debian/$DEBIAN_ABI-$flavour/rust_user_events.ko
	[ -f "$top/$ko" ] || { echo "packages: no $ko (make debian builds it)" >&2; exit 1; }
	modules+=("$flavour=/rue/src/$ko")
done
mkdir -p "$keys"
# The root's commands start with a clean environment: what they read of it is passed.
settings=()
[ -z "${RUE_MAINTAINER:-}" ] || settings+=("RUE_MAINTAINER=$RUE_MAINTAINER")
[ -z "${RUE_REPO_SUITE:-}" ] || settings+=("RUE_REPO_SUITE=$RUE_REPO_SUITE")
bash "$here/chroot.sh" --packaging --bind "$keys:/rue/keys" -- \
	env ${settings[@]+"${settings[@]}"} bash /rue/src/tools/debian/packages-build.sh /rue/src/build/packages /rue/keys \
	"$DEBIAN_ABI" "$DEBIAN_VERSION" "${modules[@]}"
echo "$top/build/packages/repo"
