#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Builds every guest test program as a static binary into OUT/bin:
#   - the project's kselftest-style C tests (tools/testing/selftests/rust_user_events),
#     compat_test twice: as an i386 program (compat_test) and natively (compat_test_64),
#   - the project's Rust tests (tools/testing/rust), among them the tests of real
#     clients from crates.io (their crates are fetched and built by cargo),
#   - the samples: samples/example.c as rue_example, samples/rust-example as rue_example_rs,
#   - the kernel's own user_events selftests, unmodified, from KDIR's source tree,
#   - perf_tool_test (a shell script) and the host's perf with its libraries,
#   - module_loaded (a shell script: the module is loaded after module_test),
#   - traced_client (a shell script: rue_example's 3 events recorded, for the tests of
#     the DKMS-built and the packaged module),
#   - rue_calibrate, the one calibration of a VM run's time bounds (tools/vm/init),
#   - rust_user_twin00.ko: MODULE renamed, a second provider for module_test.
# With --arch arm64, every program is cross-built for arm64 (clang-19 with
# Debian's cross C libraries, Rust's aarch64-unknown-linux-gnu), compat_test for
# 32-bit Arm (AArch32), and perf is Debian's arm64 one (guest-perf.sh).
# Usage: build-guest.sh [--arch x86_64|arm64] KDIR OUT MODULE
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
arch=x86_64
if [ "${1:-}" = --arch ]; then
	arch=$2
	shift 2
fi
kdir=$1
out=$2
module=$3
src=$(readlink -f "$kdir/source" 2>/dev/null || echo "$kdir")
selftests="$src/tools/testing/selftests"
mkdir -p "$out/bin"

# uapi_headers ARCH: the source tree's UAPI headers for ARCH (make headers), made once.
uapi_headers() {
	local dir="$top/build/uapi/$1"
	if [ ! -f "$dir/usr/include/linux/user_events.h" ]; then
		rm -rf "$dir"
		make -s -C "$src" O="$dir" ARCH="$1" headers >/dev/null
	fi
	echo "$dir/usr/include"
}

case "$arch" in
x86_64)
	headers="$kdir/usr/include"
	[ -f "$headers/linux/user_events.h" ] || make -s -C "$kdir" headers >/dev/null
	cc=(gcc)
	# A 32-bit program on the 64-bit kernel (IA-32 emulation): the module's compat_ioctl.
	# The x86_64 UAPI headers serve -m32 as well (asm/ picks by __i386__).
	cc32=(gcc -m32 -isystem "$headers")
	rust_target=x86_64-unknown-linux-gnu
	rust_link_flags=
	;;
arm64)
	headers=$(uapi_headers arm64)
	# clang-19 with lld, and Debian's cross C libraries (tools/setup.sh).
	cc=(clang-19 --target=aarch64-linux-gnu -fuse-ld=lld)
	# The same on arm64: an AArch32 program (CONFIG_COMPAT), with 32-bit Arm's headers.
	cc32=(clang-19 --target=arm-linux-gnueabihf -fuse-ld=lld -isystem "$(uapi_headers arm)")
	rust_target=aarch64-unknown-linux-gnu
	export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=clang-19
	rust_link_flags="-C link-arg=--target=aarch64-linux-gnu -C link-arg=-fuse-ld=lld"
	;;
*) echo "build-guest: unknown --arch $arch (x86_64, arm64)" >&2; exit 2 ;;
esac

cflags=(-static -O2 -Wall -I "$selftests")

for c in "$top"/tools/testing/selftests/rust_user_events/*.c; do
	name=$(basename "$c" .c)
	# compat_test is the 32-bit build below; natively it runs the same checks.
	[ "$name" != compat_test ] || name=compat_test_64
	"${cc[@]}" -isystem "$headers" "${cflags[@]}" -o "$out/bin/$name" "$c" -lpthread
done
"${cc32[@]}" "${cflags[@]}" -o "$out/bin/compat_test" \
	"$top/tools/testing/selftests/rust_user_events/compat_test.c" -lpthread

# The real perf tool, and the script that drives it.
bash "$top/tools/testing/guest-perf.sh" "$out" "$arch"
install -m 0755 "$top/tools/testing/selftests/rust_user_events/perf_tool_test.sh" "$out/bin/perf_tool_test"
install -m 0755 "$top/tools/testing/selftests/rust_user_events/module_loaded.sh" "$out/bin/module_loaded"
install -m 0755 "$top/tools/testing/traced_client.sh" "$out/bin/traced_client"

# The kernel's own tests, built as their Makefile does (LDLIBS = -lrt -lpthread -lm).
for t in ftrace_test dyn_test perf_test abi_test; do
	"${cc[@]}" -isystem "$headers" "${cflags[@]}" -I "$selftests/user_events" -o "$out/bin/$t" \
		"$selftests/user_events/$t.c" -lrt -lpthread -lm
done

# The C sample, built as the README tells users to build their own programs.
"${cc[@]}" -static -O2 -Wall -Wextra -isystem "$headers" -o "$out/bin/rue_example" \
	"$top/samples/example.c"

target=$rust_target
RUSTFLAGS="-C target-feature=+crt-static $rust_link_flags" cargo build -q --release \
	--manifest-path "$top/Cargo.toml" -p rue-guest-tests -p rue-example --target "$target" \
	--target-dir "$top/target/guest"
find "$top/target/guest/$target/release" -maxdepth 1 -type f -executable \
	-exec cp {} "$out/bin/" \;

# Same length, so every string table stays valid; nothing else refers to the name.
perl -pe 's/rust_user_events/rust_user_twin00/g' "$module" >"$out/rust_user_twin00.ko"
