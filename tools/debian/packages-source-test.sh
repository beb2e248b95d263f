#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The repository's source packages, as a distribution's user or a rebuilder meets them, inside
# a throwaway copy of chroot.sh's trixie root (with make packages' tools: debhelper, dh-dkms):
# the repository added as a deb-src source with its signed-by key, `apt-get source` fetches
# and unpacks both source packages (apt checks them through the signed Release), each .dsc is
# signed by the repository's key, and each rebuilds with dpkg-buildpackage (its Build-Depends
# installed by apt-get build-dep) into the very packages the repository ships, byte for byte:
# rust-user-events' (Architecture: all) and the module packages for this machine's
# architecture, their modules as signed.
# Prints TAP.
#
# Usage (inside the root): packages-source-test.sh REPO OUT
#   REPO: make packages' repository (build/packages/repo); OUT: a scratch directory.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$1 out=$2
suite=$(basename "$(find "$repo/dists" -mindepth 1 -maxdepth 1 -type d | head -n 1)")
keyring=/usr/share/keyrings/rust-user-events-archive-keyring.gpg
# shellcheck source=tap.sh
. "$here/tap.sh"
export DEBIAN_FRONTEND=noninteractive

# unpacked DEB DIR: DEB's files in DIR/files (unpacked), its maintainer scripts and control
# files in DIR/control, its control fields but Installed-Size in DIR/fields.
unpacked() {
	rm -rf "$2" && mkdir -p "$2" &&
		dpkg-deb -x "$1" "$2/files" && dpkg-deb -e "$1" "$2/control" &&
		dpkg-deb -f "$1" | grep -v '^Installed-Size:' >"$2/fields"
}

# built_as_listed SRC ARCH DIR: DIR holds a .deb of every package SRC's .dsc lists for ARCH
# (its Package-List), and of none other.
built_as_listed() {
	local dsc want got
	dsc=$(find "$out/$1" -maxdepth 1 -name "$1_*.dsc" | head -n 1)
	want=$(sed -n '/^Package-List:/,/^[^ ]/{/^ /p}' "$dsc" | awk -v a="arch=$2" '$2 == "deb" && $5 == a { print $1 }' | sort)
	got=$(for deb in "$3"/*.deb; do dpkg-deb -f "$deb" Package; done | sort)
	[ -n "$want" ] && [ "$want" = "$got" ] ||
		{ echo "# $1 for $2: listed $(echo $want), built $(echo $got)"; return 1; }
}

# same_as_shipped DIR: every .deb in DIR is the repository's .deb of its name, byte for byte
# (the build is reproducible: dpkg dates every file by the changelog); where one is not, what
# differs (files, maintainer scripts, fields) is printed.
same_as_shipped() {
	local deb shipped differ=0 n=0
	for deb in "$1"/*.deb; do
		shipped=$repo/pool/main/$(basename "$deb")
		n=$((n + 1))
		if [ ! -f "$shipped" ]; then
			echo "# not in the repository: $(basename "$deb")"
			differ=1
		elif ! cmp -s "$shipped" "$deb"; then
			unpacked "$shipped" "$out/a" && unpacked "$deb" "$out/b"
			diff -r "$out/a" "$out/b" >"$out/diff.txt" 2>&1
			echo "# differs: $(basename "$deb"): $(head -n 4 "$out/diff.txt" | tr '\n' ' ')"
			differ=1
		fi
	done
	[ "$n" -gt 0 ] && [ "$differ" -eq 0 ]
}

echo "TAP version 13"
plan 5
rm -rf "$out"
mkdir -p "$out"
cp "$repo/rust-user-events-archive-keyring.gpg" "$keyring"
printf 'Types: deb-src\nURIs: file:%s\nSuites: %s\nComponents: main\nSigned-By: %s\n' \
	"$repo" "$suite" "$keyring" >/etc/apt/sources.list.d/rust-user-events-src.sources
# Only this repository's warnings and errors count (the root's other sources are Debian's
# mirrors, whose hiccups are not this test's).
apt-get -q -o APT::Sandbox::User=root update >"$out/update.log" 2>&1
! grep "^[WE]:" "$out/update.log" | grep -q "$repo" &&
	apt-cache showsrc rust-user-events rust-user-events-modules 2>/dev/null | grep -q '^Package: rust-user-events-modules$'
result $? "apt reads the repository's source index (deb-src), signed-by its key" \
	"$(grep '^[WE]:' "$out/update.log" | head -n 2 | tr '\n' ' ')"

cd "$out" || exit 1
ok=1
for src in rust-user-events rust-user-events-modules; do
	mkdir -p "$out/$src" && cd "$out/$src" &&
		apt-get -q -o APT::Sandbox::User=root source "$src" >"$out/$src.log" 2>&1 &&
		[ -f "$(find . -maxdepth 3 -path "./$src-*/debian/control" | head -n 1)" ] || ok=0
	cd "$out" || exit 1
done
[ "$ok" -eq 1 ]
result $? "apt-get source fetches and unpacks rust-user-events and rust-user-events-modules" \
	"$(tail -n 3 "$out"/*.log | tr '\n' ' ')"

ok=1
mkdir -m 0700 "$out/gnupg"
for dsc in "$out"/*/*.dsc; do
	gpg --homedir "$out/gnupg" --batch --no-default-keyring --keyring "$keyring" --verify "$dsc" \
		>>"$out/verify.log" 2>&1 || ok=0
done
gpgconf --homedir "$out/gnupg" --kill all 2>/dev/null
[ "$ok" -eq 1 ] && [ "$(find "$out" -name '*.dsc' | wc -l)" -eq 2 ]
result $? "each .dsc is signed by the repository's key (gpg --verify with its keyring)" \
	"$(tail -n 3 "$out/verify.log" | tr '\n' ' ')"

# Rebuilt from the sources alone, their Build-Depends installed by apt (build-dep): the
# Architecture: all packages, and this architecture's module packages.
rebuild() {
	local src=$1 what=$2 dir
	dir=$(find "$out/$src" -mindepth 1 -maxdepth 1 -type d -name "$src-*" | head -n 1)
	apt-get -y -q -o APT::Sandbox::User=root build-dep "$dir" >"$out/$src-build.log" 2>&1 &&
		(cd "$dir" && dpkg-buildpackage --no-sign "$what" >>"$out/$src-build.log" 2>&1) &&
		mkdir -p "$out/$src-debs" && mv "$out/$src"/*.deb "$out/$src-debs/"
}
rebuild rust-user-events -A && built_as_listed rust-user-events all "$out/rust-user-events-debs" &&
	same_as_shipped "$out/rust-user-events-debs"
result $? "rust-user-events rebuilds (dpkg-buildpackage -A) into every Architecture: all package its .dsc lists, each the repository's byte for byte" \
	"$(tail -n 3 "$out/rust-user-events-build.log" | tr '\n' ' ')"
rebuild rust-user-events-modules -B &&
	built_as_listed rust-user-events-modules "$(dpkg --print-architecture)" "$out/rust-user-events-modules-debs" &&
	same_as_shipped "$out/rust-user-events-modules-debs"
result $? "rust-user-events-modules rebuilds (dpkg-buildpackage -B) into every $(dpkg --print-architecture) package its .dsc lists, each the repository's byte for byte" \
	"$(tail -n 3 "$out/rust-user-events-modules-build.log" | tr '\n' ' ')"

exit "$failed"
