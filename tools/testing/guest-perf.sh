#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Puts Debian's perf (linux-perf) into a guest tree: the binary and every
# shared library it links, with its dynamic loader, under OUT/perf, and
# OUT/bin/perf, a wrapper that runs it through that loader. Nothing in the
# guest's root is touched, so the busybox initramfs stays as it is.
#   x86_64: the host's perf (installed by tools/setup.sh), its libraries by ldd.
#   arm64:  trixie's linux-perf:arm64 and the arm64 packages it depends on,
#           downloaded by the trixie root's apt (tools/debian/chroot.sh) and
#           unpacked once into build/perf-arm64; its libraries found by
#           following the ELF files' NEEDED entries there.
# Usage: guest-perf.sh OUT [ARCH]
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
out=$1
arch=${2:-x86_64}
mkdir -p "$out/perf/lib" "$out/bin"

case "$arch" in
x86_64)
	perf=/usr/bin/perf
	[ -x "$perf" ] || { echo "guest-perf: no $perf (run tools/setup.sh)" >&2; exit 1; }
	cp "$perf" "$out/perf/perf"
	while read -r lib; do
		cp -L "$lib" "$out/perf/lib/"
	done < <(ldd "$perf" | awk '/=> \//{print $3} /^\t\/.*ld-linux/{print $1}')
	loader=$(ldd "$perf" | awk '/^\t\/.*ld-linux/{print $1}')
	[ -n "$loader" ] || { echo "guest-perf: no dynamic loader in ldd $perf" >&2; exit 1; }
	;;
arm64)
	stage="$top/build/perf-arm64"
	if [ ! -f "$stage/.rue-complete" ]; then
		root=$(bash "$top/tools/debian/chroot.sh" --print-root)
		rm -rf "$stage" "$root/tmp/rue-perf"
		mkdir -p "$stage" "$root/tmp/rue-perf"
		# Every arm64 package in linux-perf's dependency closure (its amd64 and
		# virtual entries left out): more than it loads, never less.
		bash "$top/tools/debian/chroot.sh" sh -ec '
			cd /tmp/rue-perf
			apt-get download -q -o APT::Sandbox::User=root linux-perf:arm64 $(apt-cache depends --recurse --no-recommends \
				--no-suggests --no-conflicts --no-breaks --no-replaces --no-enhances \
				linux-perf:arm64 | sed -n "s/^\([a-z0-9][^ ]*\):arm64$/\1:arm64/p" | sort -u)' >&2
		for deb in "$root"/tmp/rue-perf/*.deb; do dpkg-deb -x "$deb" "$stage"; done
		rm -rf "$root/tmp/rue-perf"
		touch "$stage/.rue-complete"
	fi
	perf="$stage/usr/bin/perf"
	[[ "$(llvm-readelf-19 -h "$perf")" == *"Machine:"*AArch64* ]] ||
		{ echo "guest-perf: $perf is not an arm64 program" >&2; exit 1; }
	cp "$perf" "$out/perf/perf"
	# NEEDED entries, followed through the unpacked packages' library directories.
	libdirs=("$stage/usr/lib/aarch64-linux-gnu" "$stage/usr/lib")
	todo=("$perf")
	while [ "${#todo[@]}" -gt 0 ]; do
		elf=${todo[0]}
		todo=("${todo[@]:1}")
		for lib in $(llvm-readelf-19 -d "$elf" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
			[ -e "$out/perf/lib/$lib" ] && continue
			found=$(find "${libdirs[@]}" -maxdepth 1 -name "$lib" | head -n 1)
			[ -n "$found" ] || { echo "guest-perf: $lib (needed by $(basename "$elf")) is in no package" >&2; exit 1; }
			cp -L "$found" "$out/perf/lib/$lib"
			todo+=("$out/perf/lib/$lib")
		done
	done
	loader=/lib/ld-linux-aarch64.so.1
	cp -L "$(find "${libdirs[@]}" -maxdepth 1 -name ld-linux-aarch64.so.1 | head -n 1)" "$out/perf/lib/"
	;;
*) echo "guest-perf: unknown architecture $arch" >&2; exit 2 ;;
esac

cat >"$out/bin/perf" <<WRAPPER
#!/bin/sh
# Runs Debian's perf through its own loader and libraries (tools/testing/guest-perf.sh).
exec /rue/perf/lib/$(basename "$loader") --library-path /rue/perf/lib --argv0 perf /rue/perf/perf "\$@"
WRAPPER
chmod 0755 "$out/bin/perf"
