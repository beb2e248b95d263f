#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# The build-time check of the kernel bodies the module mirrors (mirrors/list,
# Documentation/design.md "Mirrored kernel bodies"). Every definition the list
# names is cut out of the target kernel's source tree and compared with the text
# it was audited against (mirrors/audited/ID). Prints the Rust file the module
# includes (src/mirrors.rs): one constant per gate, true when every mirror under
# that gate matches. A changed mirror is named on stderr with its diff, and the
# module is built with the gate's fallback; a changed mirror under the gate
# `refuse` (no exported path exists) stops the build.
#
# Usage: mirrors.sh SRCTREE MIRRORS_DIR [SRCARCH [AUTOCONF]]  (Kbuild, via filechk)
#        mirrors.sh --audit SRCTREE MIRRORS_DIR   (record SRCTREE's text as audited)
# With SRCARCH, a definition under another architecture's arch/ directory is not
# part of this build and is not compared. With AUTOCONF (the target's
# include/config/auto.conf), the list's "config" lines are compared too: a
# configuration choice a gate's mirrors assume and no cfg of the module's
# selects (another value turns the gate off, as a changed body does).
# With RUE_GATES_OFF=1 in the environment (make RUE_GATES_OFF=1: make check's
# build that runs every fallback) every gate is off, whatever the bodies say.
#
# POSIX sh and awk only: it runs in every build, DKMS's included.
set -eu

audit=
if [ "${1-}" = --audit ]; then
	audit=1
	shift
fi
srctree=$1
dir=$2
srcarch=${3-}
autoconf=${4-}
list=$dir/list
[ -f "$list" ] || { echo "mirrors.sh: no $list" >&2; exit 1; }

# extract FILE FIRST-LINE: every definition in FILE whose first line is exactly
# FIRST-LINE (blanks at its ends aside), to its end: a macro to its last
# continued line, an assembly routine to its SYM_*_END, a function or type to the
# brace that closes its first one (from the line before when FIRST-LINE starts
# with the name: the kernel's style puts the type on a line of its own), a
# declaration to its semicolon, a macro invocation (TRACE_EVENT(...),
# DEFINE_MUTEX(...);) to its closing parenthesis, an assembler .macro to its
# .endm, and an enumerator or other line alone. Each occurrence (a definition under #ifdef may have several) is printed;
# none prints a line saying so.
extract() {
	FIRST=$2 awk '
	BEGIN { first = ENVIRON["FIRST"] }
	function flush() { if (n) { printf "%s", text; n = 0; text = "" } }
	{ bare = $0; gsub(/^[ \t]+|[ \t]+$/, "", bare) }
	!inside && bare == first {
		inside = 1; found++; depth = 0; opened = 0; text = ""; n = 0
		kind = (bare ~ /^#[ \t]*define/) ? "macro" : (bare ~ /^SYM_[A-Z_]*START/) ? "asm" : \
			(bare ~ /^\.macro/) ? "asm-macro" : (bare ~ /^[A-Z_][A-Z0-9_]*\(/) ? "call" : \
			(bare ~ /[({]|^(struct|union|enum) /) ? "c" : "line"
		# A name that starts its line: its type is on the line before.
		if (kind == "c" && $0 ~ /^[A-Za-z_][A-Za-z0-9_]*\(/) text = prev "\n"
	}
	inside {
		text = text $0 "\n"; n++
		if (kind == "line") {
			inside = 0; flush()
		} else if (kind == "macro") {
			if ($0 !~ /\\$/) { inside = 0; flush() }
		} else if (kind == "asm") {
			if ($0 ~ /^SYM_[A-Z_]*END/) { inside = 0; flush() }
		} else if (kind == "asm-macro") {
			if ($0 ~ /^[ \t]*\.endm/) { inside = 0; flush() }
		} else if (kind == "call") {
			line = $0
			sub(/\/\/.*/, "", line)
			depth += gsub(/\(/, "(", line) - gsub(/\)/, ")", line)
			if (depth <= 0) { inside = 0; flush() }
		} else {
			line = $0
			sub(/\/\/.*/, "", line)
			opens = gsub(/\{/, "{", line); closes = gsub(/\}/, "}", line)
			depth += opens - closes
			if (opens) opened = 1
			# A declaration, not a definition: it ends at its semicolon.
			if ((opened && depth <= 0) || (!opened && line ~ /;/)) { inside = 0; flush() }
		}
	}
	{ prev = $0 }
	END {
		if (inside) printf "%s(no end before the end of the file)\n", text
		if (!found) print "(no definition starting with this line)"
	}' "$srctree/$1"
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The list: "gate NAME | fallback" lines, "config CONFIG_NAME | GATE[,GATE...] |
# VALUE" lines (VALUE as auto.conf has it, or n for unset), then "ID |
# GATE[,GATE...] | FILE | FIRST-LINE" lines.
# Blanks around the separators (one in a gate line, three in a mirror line, whose
# first line may hold a "|" of its own) and at the end of a line go.
fields() {
	awk -v n="$1" '{
		out = ""
		for (i = 1; i < n; i++) {
			at = index($0, "|")
			f = substr($0, 1, at - 1); $0 = substr($0, at + 1)
			gsub(/^[ \t]+|[ \t]+$/, "", f)
			out = out f "|"
		}
		sub(/^[ \t]+/, ""); print out $0
	}'
}
grep -Ev '^[[:space:]]*(#|$)' "$list" | sed 's/[[:space:]]*$//' >"$tmp/list"
grep '^gate ' "$tmp/list" | sed 's/^gate //' | fields 2 >"$tmp/gates"
grep '^config ' "$tmp/list" | sed 's/^config //' | fields 3 >"$tmp/configs"
grep -Ev '^(gate|config) ' "$tmp/list" | fields 4 >"$tmp/mirrors"

changed=
refused=
# off ID GATES: ID changed; turns each of GATES off, or refuses the build for `refuse`.
off() {
	for gate in $(echo "$2" | tr , ' '); do
		if ! grep -q "^$gate|" "$tmp/gates"; then
			echo "mirrors/list: $1 names gate '$gate', which no 'gate' line declares" >&2
			exit 1
		fi
		fallback=$(sed -n "s/^$gate|//p" "$tmp/gates")
		if [ "$gate" = refuse ]; then
			echo "rust_user_events: $1: $fallback" >&2
			refused="$refused $1"
		else
			echo "rust_user_events: $1: gate '$gate' off: $fallback" >&2
			echo "$gate" >>"$tmp/off"
		fi
	done
	changed="$changed${changed:+, }$1"
}

if [ -z "$audit" ] && [ -n "$autoconf" ]; then
	[ -f "$autoconf" ] || { echo "mirrors.sh: no $autoconf" >&2; exit 1; }
	while IFS='|' read -r name gates want; do
		have=$(sed -n "s/^$name=//p" "$autoconf")
		[ -n "$have" ] || have=n
		[ "$have" != "$want" ] || continue
		echo "rust_user_events: the kernel has $name=$have; the module's mirrors were audited with $want:" >&2
		off "$name=$have" "$gates"
	done <"$tmp/configs"
fi
while IFS='|' read -r id gates file first; do
	for gate in $(echo "$gates" | tr , ' '); do
		if ! grep -q "^$gate|" "$tmp/gates"; then
			echo "mirrors/list: $id names gate '$gate', which no 'gate' line declares" >&2
			exit 1
		fi
	done
	case "$file" in
	arch/*)
		arch=${file#arch/}
		arch=${arch%%/*}
		if [ -z "$audit" ] && [ -n "$srcarch" ] && [ "$arch" != "$srcarch" ]; then
			continue
		fi
		;;
	esac
	if [ ! -f "$srctree/$file" ]; then
		printf '(no file %s)\n' "$file" >"$tmp/$id"
	else
		extract "$file" "$first" >"$tmp/$id"
	fi
	if [ -n "$audit" ]; then
		if grep -q '^(no ' "$tmp/$id"; then
			echo "mirrors/list: $id: $(grep '^(no ' "$tmp/$id") in $srctree/$file" >&2
			exit 1
		fi
		mkdir -p "$dir/audited"
		cp "$tmp/$id" "$dir/audited/$id"
		continue
	fi
	if [ ! -f "$dir/audited/$id" ]; then
		echo "mirrors/list: $id has no audited text (mirrors/audited/$id)" >&2
		exit 1
	fi
	if cmp -s "$dir/audited/$id" "$tmp/$id"; then
		continue
	fi
	echo "rust_user_events: the kernel's $id ($file) differs from the text the module's mirror of it was audited against:" >&2
	diff -u "$dir/audited/$id" "$tmp/$id" | sed -n '3,40s/^/    /p' >&2 || true
	off "$id" "$gates"
done <"$tmp/mirrors"

[ -z "$audit" ] || exit 0
if [ -n "$refused" ]; then
	echo "rust_user_events: not built: re-audit the mirrors of$refused against this kernel (Documentation/design.md, \"Mirrored kernel bodies\")" >&2
	exit 1
fi

all_off=
if [ "${RUE_GATES_OFF-}" = 1 ]; then
	echo "rust_user_events: RUE_GATES_OFF=1: every gate off, every fallback built" >&2
	all_off=RUE_GATES_OFF=1
fi
echo "// Generated by tools/mirrors.sh from mirrors/list and $srctree: do not edit."
while IFS='|' read -r gate fallback; do
	[ "$gate" != refuse ] || continue
	on=true
	if [ "${RUE_GATES_OFF-}" = 1 ] || { [ -f "$tmp/off" ] && grep -qx "$gate" "$tmp/off"; }; then
		on=false
	fi
	const=$(echo "$gate" | tr 'a-z-' 'A-Z_')
	printf '/// `%s`: off means %s\npub(crate) const %s: bool = %s;\n' "$gate" "$fallback" "$const" "$on"
done <"$tmp/gates"
printf '/// The mirrors whose kernel text changed, for the load-time notice.\npub(crate) const CHANGED: &str = "%s";\n' "$changed"
printf '/// What turned every gate off whatever the bodies say (`make RUE_GATES_OFF=1`), if anything,\n/// for the load-time notice.\npub(crate) const ALL_OFF_BY: &str = "%s";\n' "$all_off"
