#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Checks that this machine's compilers are the ones a kernel was built with,
# as its .config records them. A Rust module must be compiled by the very
# rustc that built the kernel (crate metadata and symbol names depend on it),
# its C by the same gcc, and its BTF made by a pahole of the same version.
#
# Usage: toolchain-check.sh [--kernel-only] CONFIG
#   Prints the make variables that select those compilers (CC=...), one per
#   line, on success. On a mismatch, says which tool differs, what the kernel
#   wants and what to install, and exits 1. Exits 2 for a kernel it cannot
#   serve at all (no Rust, no kprobes, user_events built in).
#   --kernel-only: only that last check, before any toolchain is installed.
set -euo pipefail

kernel_only=0
if [ "${1:-}" = --kernel-only ]; then
	kernel_only=1
	shift
fi
config=$1
fail() { printf 'rust-user-events: %s\n' "$@" >&2; exit "${code:-1}"; }
value() { sed -n "s/^$1=\"\{0,1\}\([^\"]*\)\"\{0,1\}\$/\1/p" "$config"; }

[ -r "$config" ] || fail "no kernel config at $config (install the kernel's headers package)"

code=2
grep -qx 'CONFIG_RUST=y' "$config" ||
	fail "this kernel has no Rust support (CONFIG_RUST is off): the module cannot be built for it." \
		"Debian's Rust-enabled kernels are trixie-backports' linux-image-7.3.4+deb13-FLAVOUR, for every" \
		"FLAVOUR: amd64, cloud-amd64, rt-amd64, arm64, cloud-arm64, rt-arm64, arm64-16k."
grep -qx 'CONFIG_KPROBES=y' "$config" ||
	fail "this kernel has no kprobes (CONFIG_KPROBES), which the module needs to find tracing internals."
grep -qx 'CONFIG_KALLSYMS_ALL=y' "$config" ||
	fail "this kernel lacks CONFIG_KALLSYMS_ALL, which the module needs to find tracing internals."
if grep -qx 'CONFIG_USER_EVENTS=y' "$config"; then
	fail "this kernel already has user_events built in (CONFIG_USER_EVENTS=y): use it, no module is needed."
fi
code=1
[ "$kernel_only" -eq 0 ] || exit 0

# Compilers by the names the kernel's build used.
if grep -qx 'CONFIG_CC_IS_GCC=y' "$config"; then
	cc_text=$(value CONFIG_CC_VERSION_TEXT)
	cc=${cc_text%% *}            # e.g. x86_64-linux-gnu-gcc-14
	command -v "$cc" >/dev/null 2>&1 ||
		fail "the kernel was built with '$cc_text', and $cc is not installed." \
			"On Debian: apt install ${cc##*-linux-gnu-}."
	have=$("$cc" --version | head -n 1)
	# The same GCC release is required; another Debian revision of it (16.2.0-4 for the
	# kernel's 16.2.0-3, once the suite moved on) is accepted, as Kbuild accepts it.
	if [ "$have" != "$cc_text" ]; then
		# The name, and the release after Debian's "(Debian VERSION)": 16.2.0, or a
		# snapshot's whole "16.0.0 20260101 (experimental)".
		[ "${have%% *}" = "$cc" ] && [ "${have#*) }" = "${cc_text#*) }" ] ||
			fail "C compiler mismatch: the kernel was built with '$cc_text', $cc is '$have'." \
				"Install the gcc package of the kernel's release (e.g. trixie's gcc-14)."
		echo "rust-user-events: the kernel was built with '$cc_text'; building with '$have'," \
			"the same GCC release" >&2
	fi
	# The kernel's configuration records that its compiler could link a program.
	if grep -qx 'CONFIG_CC_CAN_LINK=y' "$config" &&
		! echo 'int main(void) { return 0; }' | "$cc" -x c - -o /dev/null >/dev/null 2>&1; then
		fail "$cc cannot link a program, as the kernel's compiler could (CONFIG_CC_CAN_LINK)." \
			"On Debian: apt install libc6-dev (libc6-dev-arm64-cross when building for arm64 on amd64)."
	fi
	echo "CC=$cc"
	case "$cc" in
	*-linux-gnu-*) echo "CROSS_COMPILE=${cc%gcc*}" ;;
	esac
	# arm64's compat vDSO is built by a 32-bit Arm compiler (Debian's kernels: arm-linux-gnueabihf-gcc).
	if grep -qx 'CONFIG_COMPAT_VDSO=y' "$config" && grep -qx 'CONFIG_ARM64=y' "$config"; then
		command -v arm-linux-gnueabihf-gcc >/dev/null 2>&1 ||
			fail "the kernel has a 32-bit vDSO (CONFIG_COMPAT_VDSO), built by arm-linux-gnueabihf-gcc," \
				"which is not installed. On Debian: apt install gcc-arm-linux-gnueabihf."
		echo "CROSS_COMPILE_COMPAT=arm-linux-gnueabihf-"
	fi
	# The kernel's architecture, for a build on another (arm64's kernels on amd64).
	if grep -qx 'CONFIG_ARM64=y' "$config"; then
		echo "ARCH=arm64"
	elif grep -qx 'CONFIG_X86_64=y' "$config"; then
		echo "ARCH=x86"
	fi
else
	fail "only GCC-built distribution kernels are handled here; for a clang-built tree run make KDIR=... LLVM=1"
fi

rustc_text=$(value CONFIG_RUSTC_VERSION_TEXT)
have=$(rustc --version 2>/dev/null || echo "no rustc")
[ "$have" = "$rustc_text" ] ||
	fail "rustc mismatch: the kernel was built with '$rustc_text', this machine's rustc is '$have'." \
		"A Rust module must be built by the kernel's own rustc: install the distribution's rustc" \
		"(on Debian trixie: apt install rustc rust-src) and make sure it comes first in PATH (not rustup's)."
[ -d "$(rustc --print sysroot)/lib/rustlib/src/rust/library/core" ] ||
	fail "rustc's library sources are missing (on Debian: apt install rust-src)."

bindgen_text=$(value CONFIG_BINDGEN_VERSION_TEXT)
have=$(bindgen --version 2>/dev/null || echo "no bindgen")
[ "$have" = "$bindgen_text" ] ||
	fail "bindgen mismatch: the kernel was built with '$bindgen_text', this machine has '$have'." \
		"On Debian trixie: apt install bindgen."

if grep -qx 'CONFIG_DEBUG_INFO_BTF=y' "$config"; then
	want=$(value CONFIG_PAHOLE_VERSION)
	have=$(pahole --version 2>/dev/null | sed -n 's/^v\([0-9]*\)\.\([0-9]*\).*/\1\2/p')
	[ "$have" = "$want" ] ||
		fail "pahole mismatch: the kernel was built with pahole version $want, this machine has '${have:-none}'." \
			"Without it the kernel's BTF options change and the module would not load. On Debian: apt install dwarves."
fi
