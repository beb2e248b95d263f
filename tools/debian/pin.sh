#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The module signing key's passphrase, KBUILD_SIGN_PIN (the variable the
# kernel's sign-file reads), put where chroot.sh's root can read it: a new
# directory, readable by its owner only, holding the file pin, whose path is
# printed. packages-build.sh reads it (RUE_SIGN_PIN_FILE=/rue/pin/pin when the
# directory is bound at /rue/pin), so the passphrase is never on a command line.
# The caller removes the directory. Exits 1, printing nothing, when
# KBUILD_SIGN_PIN is unset or empty.
#
# Usage: pin.sh
set -euo pipefail
[ -n "${KBUILD_SIGN_PIN:-}" ] || exit 1
dir=$(mktemp -d)
chmod 0700 "$dir"
(umask 077 && printf '%s\n' "$KBUILD_SIGN_PIN" >"$dir/pin")
echo "$dir"
