#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Builds one of make bench's arm64 kernels (BENCH_ARCH=arm64, tools/bench.sh)
# from Debian's linux-source-7.3, in the trixie root of tools/debian/chroot.sh
# with the toolchain Debian's arm64 kernels are built with (gcc-14's aarch64
# cross compiler, the 32-bit Arm one for the compat vDSO, Debian's rustc and
# bindgen): tinyconfig + bench-fragment.sh's fragment of the side, made arm64's
# (arm64_fragment below). The two sides differ, as on x86-64, in
# CONFIG_USER_EVENTS alone. Cached in $RUE_CACHE/kernel-arm64-VERSION-HASH,
# keyed by the fragment, like the x86-64 kernels (build.sh).
#
# Usage: build-arm64.sh [--print-kdir] module|upstream
#   Prints the build directory (KDIR); its image is KDIR/arch/arm64/boot/Image,
#   its UAPI headers KDIR/usr/include.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
print_only=0
if [ "${1:-}" = --print-kdir ]; then
	print_only=1
	shift
fi
side=${1:-}
case "$side" in
module | upstream) ;;
*) echo "usage: build-arm64.sh [--print-kdir] module|upstream" >&2; exit 2 ;;
esac
cache=${RUE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rust-user-events}
jobs=${JOBS:-$(nproc)}
log() { printf 'kernel (arm64): %s\n' "$*" >&2; }

# arm64_fragment SIDE: the x86-64 bench fragment with what only x86-64 has replaced: the
# PL011 UART of QEMU's virt machine (its console, ttyAMA0) for the 8250, COMPAT (32-bit
# programs) for IA32_EMULATION; ACPI and PCI left out (the virt machine boots from its
# device tree, and the guest has no PCI device), and CFI, which a GCC-built kernel cannot
# have (kCFI is Clang's).
arm64_fragment() {
	bash "$here/bench-fragment.sh" "$1" |
		grep -Ev '^CONFIG_(SERIAL_8250|SERIAL_8250_CONSOLE|IA32_EMULATION|ACPI|PCI)=y$' |
		grep -Ev '^# CONFIG_(IA32_EMULATION_DEFAULT_DISABLED|CFI) is not set$'
	cat <<'EOF'

# arm64 (build-arm64.sh): QEMU virt's UART and console, and 32-bit programs.
CONFIG_SERIAL_AMBA_PL011=y
CONFIG_SERIAL_AMBA_PL011_CONSOLE=y
CONFIG_COMPAT=y
EOF
}

fragment=$(arm64_fragment "$side")
src_version=$(bash "$top/tools/debian/chroot.sh" dpkg-query -W -f='${Version}' linux-source-7.3)
key="arm64-$src_version-$({ echo "$fragment"; echo "stamp: 1"; } | sha256sum | cut -c1-16)"
kdir=$cache/kernel-$key
if [ "$print_only" -eq 1 ] || [ -f "$kdir/.rue-complete" ]; then
	echo "$kdir"
	exit 0
fi

rm -rf "$kdir"
mkdir -p "$kdir"
echo "$fragment" >"$kdir/fragment.config"
log "building $kdir in the trixie root (jobs=$jobs)"
start=$(date +%s)
# In the root: the source extracted into the build directory, configured, checked and built.
# Kconfig silently drops a value whose dependencies are unmet: the build refuses that.
script='set -euo pipefail
	export PATH=/usr/bin:/bin:/usr/sbin:/sbin
	k=$1 jobs=$2
	mkdir -p "$k/linux"
	tar -C "$k/linux" --strip-components=1 -xf /usr/src/linux-source-7.3.tar.xz
	vars=(ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu- CC=aarch64-linux-gnu-gcc-14
		CROSS_COMPILE_COMPAT=arm-linux-gnueabihf- RUSTC=rustc BINDGEN=bindgen
		KBUILD_BUILD_VERSION=1)
	kmake() { make -C "$k/linux" O="$k" "${vars[@]}" -j"$jobs" "$@"; }
	kmake -s tinyconfig >/dev/null
	"$k/linux/scripts/kconfig/merge_config.sh" -m -O "$k" "$k/.config" "$k/fragment.config" >"$k/merge.log"
	kmake -s olddefconfig
	bash /rue/src/tools/kernel/config-check.sh "$k/fragment.config" "$k/.config"
	kmake all
	kmake -s headers'
bash "$top/tools/debian/chroot.sh" --bind "$kdir:/rue/kernel" -- bash -c "$script" sh /rue/kernel "$jobs" >&2
echo $(($(date +%s) - start)) >"$kdir/build-seconds"
touch "$kdir/.rue-complete"
log "built in $(cat "$kdir/build-seconds") s"
echo "$kdir"
