#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Installs everything rust-user-events needs on a Debian 12 (bookworm) host:
# Debian's linux-source-7.3 from trixie-backports (pinned low so nothing else
# is upgraded from it; sid's and experimental's lists too, for their kernels' versions), the LLVM 19 toolchain, QEMU, a static busybox, the
# kernel's build dependencies, gcc's 32-bit (i386) libraries, Debian's perf (run inside the test VM), rust-src,
# rustfmt, a pinned bindgen-cli, and debootstrap (tools/debian/chroot.sh makes
# the trixie root with Debian's own kernel toolchain from it); for the arm64
# test VM: qemu-system-aarch64, the arm64 and 32-bit Arm C libraries that
# clang-19 cross-builds its programs with, and Rust's aarch64-unknown-linux-gnu
# standard library.
#
# Idempotent: every step first checks whether its result is already there, so
# a second run does nothing and takes seconds. Runs as root, or through sudo.
set -euo pipefail

BINDGEN_VERSION=0.73.2
# The machine image ships qemu-utils from bookworm-backports, which breaks
# bookworm's own qemu-system 7.2; take qemu-system-x86 from the same backport.
QEMU_SUITE=bookworm-backports

APT_PACKAGES=(
	linux-source-7.3
	clang-19 lld-19 llvm-19 libclang-19-dev
	busybox-static
	bc flex bison libelf-dev libssl-dev cpio kmod xz-utils
	build-essential libc6-dev python3
	# gcc -m32 -static: the i386 libc and libgcc for compat_test (a 32-bit program).
	gcc-multilib
	linux-perf
	debootstrap
	# The arm64 guest's programs, cross-built by clang-19 (tools/testing/build-guest.sh
	# --arch arm64): the arm64 and 32-bit Arm C libraries and libgcc. (bookworm's gcc cross
	# compilers conflict with gcc-multilib.)
	libc6-dev-arm64-cross libgcc-12-dev-arm64-cross libc6-dev-armhf-cross libgcc-12-dev-armhf-cross
)

if [ "$(id -u)" -ne 0 ]; then
	SUDO=sudo
else
	SUDO=
fi

log() { printf 'setup: %s\n' "$*"; }

# ensure_apt_source SUITE: adds a deb822 source for SUITE; true if it added one.
ensure_apt_source() {
	local file="/etc/apt/sources.list.d/rue-$1.sources"
	[ -f "$file" ] && return 1
	log "adding apt source $1"
	printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
		"$1" | $SUDO tee "$file" >/dev/null
	return 0
}

# ensure_pin: packages come from trixie-backports only when asked for by name.
ensure_pin() {
	local file=/etc/apt/preferences.d/rue-trixie-backports
	[ -f "$file" ] && return 1
	printf 'Package: *\nPin: release n=trixie-backports\nPin-Priority: 100\n' | $SUDO tee "$file" >/dev/null
	return 0
}

# ensure_pin_never SUITE: nothing is ever installed from SUITE; its lists are read only.
ensure_pin_never() {
	local file=/etc/apt/preferences.d/rue-$1
	[ -f "$file" ] && return 1
	printf 'Package: *\nPin: release n=%s\nPin-Priority: -1\n' "$1" | $SUDO tee "$file" >/dev/null
	return 0
}

missing_packages() {
	local p
	for p in "${APT_PACKAGES[@]}"; do
		dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' ||
			printf '%s\n' "$p"
	done
}

need_update=0
if ensure_apt_source trixie-backports; then need_update=1; fi
# experimental's kernel, for make check's build with the next toolchain (nothing is
# installed from it: the suite is NotAutomatic, apt's priority 1).
if ensure_apt_source experimental; then need_update=1; fi
# sid's, for its 7.2 kernels' version (make check builds and boots them in a sid root);
# pinned so that the host installs nothing from it.
if ensure_apt_source sid; then need_update=1; fi
if ensure_apt_source "$QEMU_SUITE"; then need_update=1; fi
if ensure_pin; then need_update=1; fi
if ensure_pin_never sid; then need_update=1; fi
mapfile -t missing < <(missing_packages)
qemu_missing=0
command -v qemu-system-x86_64 >/dev/null 2>&1 || qemu_missing=1
command -v qemu-system-aarch64 >/dev/null 2>&1 || qemu_missing=1
if [ "${#missing[@]}" -gt 0 ] || [ "$qemu_missing" -eq 1 ]; then
	need_update=1
fi

if [ "$need_update" -eq 1 ]; then
	log "apt-get update"
	$SUDO apt-get update -qq
fi
if [ "${#missing[@]}" -gt 0 ]; then
	log "installing: ${missing[*]}"
	pkgs=()
	for p in "${missing[@]}"; do
		# linux-source-7.3 only exists in trixie-backports; name the suite for it.
		if [ "$p" = linux-source-7.3 ]; then
			pkgs+=("linux-source-7.3/trixie-backports")
		else
			pkgs+=("$p")
		fi
	done
	$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${pkgs[@]}"
fi
if [ "$qemu_missing" -eq 1 ]; then
	log "installing qemu-system-x86 and qemu-system-arm from $QEMU_SUITE"
	$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		-t "$QEMU_SUITE" qemu-system-x86 qemu-system-arm
fi

# rust-src for the kernel's Rust build; rustfmt (usually there already) for make check.
for component in rust-src rustfmt clippy; do
	if ! rustup component list --installed 2>/dev/null | grep -q "^$component"; then
		log "rustup component add $component"
		rustup component add "$component"
	fi
done
# The arm64 guest's Rust test programs.
if ! rustup target list --installed 2>/dev/null | grep -qx aarch64-unknown-linux-gnu; then
	log "rustup target add aarch64-unknown-linux-gnu"
	rustup target add aarch64-unknown-linux-gnu
fi

if ! command -v bindgen >/dev/null 2>&1 ||
	[ "$(bindgen --version 2>/dev/null | awk '{print $2}')" != "$BINDGEN_VERSION" ]; then
	log "cargo install bindgen-cli $BINDGEN_VERSION"
	cargo install --locked --quiet bindgen-cli --version "$BINDGEN_VERSION"
fi

log "ok"
