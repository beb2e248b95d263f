#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# `make packages`: Debian packages of the module for every Rust-enabled flavour
# of the current trixie-backports kernel (tools/debian/kernels.conf), signed,
# with a DKMS package and a signed apt repository, made in chroot.sh's trixie
# root by packages-build.sh, which says what each package holds.
#
# Keys: $RUE_SIGNING_DIR (default ~/.config/rust-user-events/signing, not a
# cache: a new module key means enrolling it again on every Secure Boot
# machine) holds the module signing key and the repository's GnuPG key; the
# first run makes them, and a distributor puts its own there instead
# (Documentation/install.md). RUE_MAINTAINER and RUE_REPO_SUITE are passed on
# to packages-build.sh. KBUILD_SIGN_PIN, as for the kernel's own signing, is
# the module key's passphrase: the first run encrypts the key with it, and a
# key with a passphrase needs it (passed to the root in a file of its own,
# pin.sh, never on a command line).
#
# The packages' version is dkms.conf's PACKAGE_VERSION and the date and time of
# the commit built, after a tilde (0.1.0~git20261128.041500): a snapshot sorts
# below the release of that version, and a later commit above an earlier one.
# A work tree with changes adds "~dirty" and the time of the build, so that such
# a build sorts below the clean build of its commit, and above its earlier ones.
#
# Usage: packages.sh [--prebuilt] [--out DIR]
#   --prebuilt  package the modules make debian built (build/debian/) instead
#               of building them first (make check does)
#   --out DIR   write there, a directory under the work tree (default:
#               build/packages)
#   Writes DIR/repo/ and prints its path.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
case "${RUE_DEBIAN:-trixie}" in
trixie) ;;
*) echo "packages: packages are made for trixie-backports' 7.3 kernels only (RUE_DEBIAN=${RUE_DEBIAN})" >&2; exit 2 ;;
esac
# shellcheck source=kernels.conf
. "$here/kernels.conf"
cache=${RUE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rust-user-events}
keys=${RUE_SIGNING_DIR:-${XDG_CONFIG_HOME:-$HOME/.config}/rust-user-events/signing}
out=$top/build/packages
prebuilt=0
while [ $# -gt 0 ]; do
	case "$1" in
	--prebuilt) prebuilt=1; shift ;;
	--out) out=$(realpath -m "$2"); shift 2 ;;
	*) echo "packages: unknown option $1" >&2; exit 2 ;;
	esac
done
case "$out/" in
"$top"/*) ;;
*) echo "packages: --out must be under $top (the root sees only the work tree)" >&2; exit 2 ;;
esac

if [ "$prebuilt" -eq 0 ]; then
	bash "$here/build.sh" >/dev/null
fi
srcver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$top/dkms.conf")
if commit_time=$(git -C "$top" log -1 --format=%ct 2>/dev/null); then
	version=$srcver~git$(TZ=UTC date -d "@$commit_time" +%Y%m%d.%H%M%S)
	if [ -n "$(git -C "$top" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
		version=$version~dirty$(TZ=UTC date +%Y%m%d%H%M%S)
	fi
else
	version=$srcver commit_time=$(date +%s)
fi
modules=()
for flavour in "${DEBIAN_FLAVOURS[@]}"; do
	ko=build/debian/$DEBIAN_ABI-$flavour/rust_user_events.ko
	[ -f "$top/$ko" ] || { echo "packages: no $ko (make debian builds it)" >&2; exit 1; }
	modules+=("$flavour=/rue/src/$ko")
done
mkdir -p "$keys"
# The root's commands start with a clean environment: what they read of it is passed.
settings=("RUE_PKG_VERSION=$version" "SOURCE_DATE_EPOCH=$commit_time")
[ -z "${RUE_MAINTAINER:-}" ] || settings+=("RUE_MAINTAINER=$RUE_MAINTAINER")
[ -z "${RUE_REPO_SUITE:-}" ] || settings+=("RUE_REPO_SUITE=$RUE_REPO_SUITE")
pin=()
if pin_dir=$(bash "$here/pin.sh"); then
	trap 'rm -rf "$pin_dir"' EXIT
	pin=(--bind "$pin_dir:/rue/pin")
	settings+=("RUE_SIGN_PIN_FILE=/rue/pin/pin")
fi
bash "$here/chroot.sh" --packaging --bind "$keys:/rue/keys" "${pin[@]}" -- \
	env "${settings[@]}" bash /rue/src/tools/debian/packages-build.sh "/rue/src${out#"$top"}" /rue/keys \
	"$DEBIAN_ABI" "$DEBIAN_VERSION" "${modules[@]}"
echo "$out/repo"
