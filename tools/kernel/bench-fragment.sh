#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Prints the config fragment of one of make bench's two kernels, derived from
# the test kernel's tools/kernel/rue.config so the three never drift apart:
#   - everything before rue.config's debug section, as it is;
#   - from the debug section on (lockdep, KASAN, kmemleak, atomic-sleep
#     checks, kCFI, fault injection) only the options that cost nothing at run
#     time and that distribution kernels have as well (KEEP below); the rest
#     is dropped and its top-level switches are turned off explicitly, so
#     build.sh's check proves they are off;
#   - -O2, as distribution kernels are built (tinyconfig picks -Os).
# The two sides differ in one line: "module" keeps "# CONFIG_USER_EVENTS is not
# set" (rust_user_events.ko provides the ABI), "upstream" has
# CONFIG_USER_EVENTS=y (the kernel's own kernel/trace/trace_events_user.c).
#
# Usage: bench-fragment.sh module|upstream
#        bench-fragment.sh --dropped    the options dropped (CONFIG_X, one a
#                                       line), which a bench kernel must not have
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
test_fragment="$here/rue.config"
# How the line that opens rue.config's debug section starts; everything before
# it is kept.
debug_start="# Debug options that catch a module's bugs"
# Options of the debug section a bench kernel keeps. DEBUG_KERNEL only makes
# debug options visible (KALLSYMS_ALL, which the module needs, depends on it;
# Debian's kernels set it too); DEBUG_FS and STACKTRACE cost nothing unless
# used; the tiny slab allocator stays off, as in every distribution kernel.
KEEP="CONFIG_DEBUG_KERNEL CONFIG_DEBUG_FS CONFIG_STACKTRACE CONFIG_SLUB_TINY"

grep -q "^$debug_start" "$test_fragment" ||
	{ echo "bench-fragment: no '$debug_start' line in $test_fragment" >&2; exit 1; }

# The option a fragment line sets ("CONFIG_X=..." or "# CONFIG_X is not set"), if any.
option_of() {
	case "$1" in
	CONFIG_*=*) echo "${1%%=*}" ;;
	"# CONFIG_"*" is not set") echo "${1#\# }" | cut -d' ' -f1 ;;
	esac
}

kept() { case " $KEEP " in *" $1 "*) return 0 ;; esac; return 1; }

# debug_lines: rue.config from its debug section on.
debug_lines() { sed -n "/^$debug_start/,\$p" "$test_fragment"; }

if [ "${1:-}" = --dropped ]; then
	debug_lines | while IFS= read -r line; do
		opt=$(option_of "$line")
		case "$line" in
		CONFIG_*=y) kept "$opt" || echo "$opt" ;;
		esac
	done
	exit 0
fi

case "${1:-}" in
module) user_events="# CONFIG_USER_EVENTS is not set" ;;
upstream) user_events="# In this kernel it is built in: the reference.\\nCONFIG_USER_EVENTS=y" ;;
*) echo "usage: bench-fragment.sh module|upstream|--dropped" >&2; exit 2 ;;
esac

grep -qxF "# CONFIG_USER_EVENTS is not set" "$test_fragment" ||
	{ echo "bench-fragment: $test_fragment does not turn CONFIG_USER_EVENTS off" >&2; exit 1; }

cat <<EOF
# SPDX-License-Identifier: GPL-2.0
# make bench's $1 kernel, made by tools/kernel/bench-fragment.sh from
# tools/kernel/rue.config: the test kernel's fragment without its debug options,
# built -O2; the module and upstream kernels differ only in CONFIG_USER_EVENTS.

EOF
# rue.config up to its debug section, without its header (up to the first blank line).
sed -n "/^$debug_start/q;p" "$test_fragment" | sed '1,/^$/d' |
	sed "s/^# CONFIG_USER_EVENTS is not set\$/$user_events/"
cat <<EOF
# Kept from the test kernel's debug section (the rest is left out).
EOF
debug_lines | while IFS= read -r line; do
	opt=$(option_of "$line")
	if [ -n "$opt" ] && kept "$opt"; then
		echo "$line"
	fi
done
cat <<'EOF'

# The test kernel's checkers, off: lockdep (PROVE_RCU needs it), atomic-sleep
# checks, KASAN, kmemleak, fault injection (FAILSLAB needs it), and kCFI, which
# distribution kernels built by GCC (Debian's 7.3 among them) do not have.
# CONFIG_PROVE_LOCKING is not set
# CONFIG_DEBUG_ATOMIC_SLEEP is not set
# CONFIG_KASAN is not set
# CONFIG_DEBUG_KMEMLEAK is not set
# CONFIG_FAULT_INJECTION is not set
# CONFIG_CFI is not set

# Optimised as distribution kernels are (-O2, Rust opt-level 2); tinyconfig
# picks -Os.
CONFIG_CC_OPTIMIZE_FOR_PERFORMANCE=y
EOF
