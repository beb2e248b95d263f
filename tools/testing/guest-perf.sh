#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Puts the host's perf (Debian's linux-perf, installed by tools/setup.sh) into a
# guest tree: the binary and every shared library it links, with the host's
# dynamic loader, under OUT/perf, and OUT/bin/perf, a wrapper that runs it
# through that loader. Nothing in the guest's root is touched, so the busybox
# initramfs stays as it is.
# Usage: guest-perf.sh OUT
set -euo pipefail

out=$1
perf=/usr/bin/perf
[ -x "$perf" ] || { echo "guest-perf: no $perf (run tools/setup.sh)" >&2; exit 1; }
mkdir -p "$out/perf/lib" "$out/bin"
cp "$perf" "$out/perf/perf"
while read -r lib; do
	cp -L "$lib" "$out/perf/lib/"
done < <(ldd "$perf" | awk '/=> \//{print $3} /^\t\/.*ld-linux/{print $1}')
loader=$(ldd "$perf" | awk '/^\t\/.*ld-linux/{print $1}')
[ -n "$loader" ] || { echo "guest-perf: no dynamic loader in ldd $perf" >&2; exit 1; }
cat >"$out/bin/perf" <<WRAPPER
#!/bin/sh
# Runs the host's perf through its own loader and libraries (tools/testing/guest-perf.sh).
exec /rue/perf/lib/$(basename "$loader") --library-path /rue/perf/lib --argv0 perf /rue/perf/perf "\$@"
WRAPPER
chmod 0755 "$out/bin/perf"
