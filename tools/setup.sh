#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Installs everything rust-user-events needs on a Debian 12 (bookworm) or 13 (trixie) host:
# Debian's linux-source-7.3 from trixie-backports (pinned low so nothing else is upgraded from
# it; sid's and experimental's lists too, for their kernels' versions), the LLVM 19 toolchain,
# QEMU, a static busybox, the kernel's build dependencies, gcc's 32-bit (i386) libraries,
# Debian's perf (run inside the test VM), rust-src, rustfmt, a pinned bindgen-cli, and
# debootstrap (tools/debian/chroot.sh makes the trixie root with Debian's own kernel toolchain
# from it); for the arm64 test VM: qemu-system-aarch64, the arm64 and 32-bit Arm C libraries
# that clang-19 cross-builds its programs with, and Rust's aarch64-unknown-linux-gnu standard
# library. Rust itself comes from rustup, which the host must have.
#
# Idempotent: every step first checks whether its result is already there, so
# a second run does nothing and takes seconds. Runs as root, or through sudo.
#
# Usage: setup.sh [--packages] [--dry-run]
#   --packages  only what `make packages` needs on the host, which makes everything in the
#               trixie root with Debian's own toolchain: debootstrap and cpio (no rustup)
#   --dry-run   adds the apt sources and updates the lists as a run does, then has apt resolve
#               every package without installing it (apt-get --simulate), and prints the rustup
#               and cargo steps instead of taking them (make check runs it in the trixie root)
set -euo pipefail

BINDGEN_VERSION=0.73.2
packages_only=0
dry_run=0
for arg in "$@"; do
	case "$arg" in
	--packages) packages_only=1 ;;
	--dry-run) dry_run=1 ;;
	*) echo "setup: unknown option $arg (usage: setup.sh [--packages] [--dry-run])" >&2; exit 2 ;;
	esac
done

# What differs between the two releases.
VERSION_CODENAME=
. /etc/os-release
case "$VERSION_CODENAME" in
bookworm)
	# The machine image ships qemu-utils from bookworm-backports, which breaks
	# bookworm's own qemu-system 7.2; take qemu-system-x86 from the same backport.
	QEMU_SUITE=bookworm-backports
	CROSS_GCC=12
	;;
trixie)
	# trixie's own QEMU (10.0, as bookworm-backports').
	QEMU_SUITE=
	CROSS_GCC=14
	;;
*)
	echo "setup: a Debian 12 (bookworm) or 13 (trixie) host is needed; this is ${PRETTY_NAME:-not Debian}" >&2
	exit 1
	;;
esac

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
	libc6-dev-arm64-cross "libgcc-$CROSS_GCC-dev-arm64-cross" libc6-dev-armhf-cross "libgcc-$CROSS_GCC-dev-armhf-cross"
)
if [ "$packages_only" -eq 1 ]; then
	APT_PACKAGES=(debootstrap cpio)
fi

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
	# Already in the machine's own sources (trixie-backports, on a trixie machine set up as
	# README.md says).
	grep -qx "$1 main Packages" <<<"$(apt-get indextargets --format '$(RELEASE) $(COMPONENT) $(CREATED-BY)')" &&
		return 1
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

# apt_install ARGS...: apt-get install ARGS (with --dry-run, resolved by apt without installing).
apt_install() {
	if [ "$dry_run" -eq 1 ]; then
		local out
		out=$($SUDO apt-get install --simulate -q --no-install-recommends "$@") || {
			printf '%s\n' "$out" | tail -n 20 >&2
			return 1
		}
		log "apt would install $(printf '%s\n' "$out" | grep -c '^Inst ') packages for: $*"
	else
		$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@"
	fi
}

# step COMMAND...: runs COMMAND (with --dry-run, says it would).
step() {
	if [ "$dry_run" -eq 1 ]; then
		log "would run: $*"
	else
		log "$*"
		"$@"
	fi
}

need_update=0
qemu_missing=0
if [ "$packages_only" -eq 0 ]; then
	if ensure_apt_source trixie-backports; then need_update=1; fi
	# experimental's kernel, for make check's build with the next toolchain (nothing is
	# installed from it: the suite is NotAutomatic, apt's priority 1).
	if ensure_apt_source experimental; then need_update=1; fi
	# sid's, for its 7.2 kernels' version (make check builds and boots them in a sid root);
	# pinned so that the host installs nothing from it.
	if ensure_apt_source sid; then need_update=1; fi
	if [ -n "$QEMU_SUITE" ] && ensure_apt_source "$QEMU_SUITE"; then need_update=1; fi
	if ensure_pin; then need_update=1; fi
	if ensure_pin_never sid; then need_update=1; fi
	command -v qemu-system-x86_64 >/dev/null 2>&1 || qemu_missing=1
	command -v qemu-system-aarch64 >/dev/null 2>&1 || qemu_missing=1
	[ "$dry_run" -eq 0 ] || qemu_missing=1
fi
# A dry run resolves every package, installed or not, so that each name is proven there.
if [ "$dry_run" -eq 1 ]; then
	missing=("${APT_PACKAGES[@]}")
else
	mapfile -t missing < <(missing_packages)
fi
if [ "${#missing[@]}" -gt 0 ] || [ "$qemu_missing" -eq 1 ]; then
	need_update=1
fi

if [ "$need_update" -eq 1 ]; then
	log "apt-get update"
	$SUDO apt-get update -qq
fi
if [ "${#missing[@]}" -gt 0 ]; then
	[ "$dry_run" -eq 1 ] || log "installing: ${missing[*]}"
	pkgs=()
	for p in "${missing[@]}"; do
		# linux-source-7.3 only exists in trixie-backports; name the suite for it.
		if [ "$p" = linux-source-7.3 ]; then
			pkgs+=("linux-source-7.3/trixie-backports")
		else
			pkgs+=("$p")
		fi
	done
	apt_install "${pkgs[@]}"
fi
if [ "$qemu_missing" -eq 1 ]; then
	[ "$dry_run" -eq 1 ] || log "installing qemu-system-x86 and qemu-system-arm from ${QEMU_SUITE:-$VERSION_CODENAME}"
	apt_install ${QEMU_SUITE:+-t "$QEMU_SUITE"} qemu-system-x86 qemu-system-arm
fi
if [ "$packages_only" -eq 1 ]; then
	log "ok (what make packages needs)"
	exit 0
fi

if ! command -v rustup >/dev/null 2>&1; then
	msg="Rust comes from rustup, which this host does not have: install it (https://rustup.rs; on trixie, sudo apt install rustup, then rustup default stable) and run make again"
	[ "$dry_run" -eq 1 ] || { echo "setup: $msg" >&2; exit 1; }
	log "$msg"
fi
# rust-src for the kernel's Rust build; rustfmt (usually there already) for make check.
for component in rust-src rustfmt clippy; do
	if ! rustup component list --installed 2>/dev/null | grep -q "^$component"; then
		step rustup component add "$component"
	fi
done
# The arm64 guest's Rust test programs.
if ! rustup target list --installed 2>/dev/null | grep -qx aarch64-unknown-linux-gnu; then
	step rustup target add aarch64-unknown-linux-gnu
fi

if ! command -v bindgen >/dev/null 2>&1 ||
	[ "$(bindgen --version 2>/dev/null | awk '{print $2}')" != "$BINDGEN_VERSION" ]; then
	step cargo install --locked --quiet bindgen-cli --version "$BINDGEN_VERSION"
fi

log "ok"
