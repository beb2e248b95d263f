#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Checks that a kernel's .config has every value its fragment asked for: Kconfig
# silently drops a value whose dependencies are unmet (build.sh, build-arm64.sh).
# Says each value it did not get, and exits 1 if there is any.
#
# Usage: config-check.sh FRAGMENT CONFIG
set -euo pipefail

bad=0
while IFS= read -r line; do
	case "$line" in
	CONFIG_*=* | "# CONFIG_"*" is not set") want=$line ;;
	*) continue ;;
	esac
	if ! grep -qxF "$want" "$2"; then
		name=${want#\# }
		name=${name%%[= ]*}
		echo "config: wanted '$want', got '$(grep -E "^$name=|^# $name is not set" "$2" || echo unset)'" >&2
		bad=1
	fi
done <"$1"
exit "$bad"
