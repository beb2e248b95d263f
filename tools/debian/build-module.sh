#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Builds rust_user_events.ko in DIR (default: the current directory, which is
# what DKMS's MAKE gives) for an installed Debian kernel, against a tree
# prepared from the kernel's own configuration by its own toolchain
# (prepare-kernel.sh). Runs on Debian trixie: DKMS calls it on a user's
# machine, and make debian in tools/debian/chroot.sh's root.
#
# Usage: build-module.sh KERNELRELEASE [DIR [VAR=VALUE...]]
#   VAR=VALUE: more make variables (make check's RUE_WRONG_SYMBOL=1)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
krel=$1
dir=${2:-$PWD}
shift $(($# < 2 ? $# : 2))
# The kernel was built by the distribution's rustc: find it before any
# rustup or ~/.cargo toolchain that root's PATH may carry.
export PATH=/usr/bin:/bin:/usr/sbin:/sbin:$PATH
kdir=$(bash "$here/prepare-kernel.sh" "$krel")
vars=$(bash "$here/toolchain-check.sh" "$kdir/.config")
mapfile -t make_vars <<<"$vars"
make -C "$kdir" M="$dir" "${make_vars[@]}" "$@" modules
