#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Copies what building rust_user_events.ko needs, and nothing a build left in
# the work tree, into DEST: the module's sources, its Kbuild, dkms.conf and
# the Debian build scripts. The DKMS source directory, the Debian build
# (build.sh) and make bench's module (tools/bench.sh) are made this way.
#
# Usage: stage-sources.sh DEST
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
dest=$1
mkdir -p "$dest"
cd "$top"
{
	printf '%s\n' Kbuild dkms.conf
	find include src -type f \( -name '*.rs' -o -name '*.c' -o -name '*.h' \) ! -name '*_generated.rs'
	find mirrors -type f
	printf 'tools/%s\n' mirrors.sh identity.sh debian/toolchain-check.sh debian/prepare-kernel.sh \
		debian/build-module.sh
} | sort | cpio -pdm --quiet "$dest"
