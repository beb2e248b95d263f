#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Prints the shell commands README.md shows under a heading: the contents of every ```sh block
# of the section whose heading is HEADING (its text without the #s), up to the next heading of
# the same or a higher level. The tests that run the README's commands take them from here, so
# what they run is what the README says. Fails if the section has no such block.
#
# Usage: readme.sh HEADING [README]
set -euo pipefail

heading=$1
readme=${2:-$(cd "$(dirname "$0")/../.." && pwd)/README.md}

awk -v want="$heading" '
	/^```/ && in_block { in_block = 0; next }
	in_block { print; found = 1; next }
	/^#+ / {
		level = index($0, " ") - 1
		text = substr($0, level + 2)
		if (in_section && level <= section_level)
			in_section = 0
		if (text == want) {
			in_section = 1
			section_level = level
		}
		next
	}
	/^```sh$/ && in_section { in_block = 1; next }
	END { exit found ? 0 : 1 }
' "$readme" || {
	echo "readme.sh: no sh block under '$heading' in $readme" >&2
	exit 1
}
