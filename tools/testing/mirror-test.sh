#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make check's test of the build-time mirror check (tools/mirrors.sh,
# mirrors/list): builds the module against copies of KDIR's source tree in which
# one mirrored kernel body was changed.
#
# 0. The build against KDIR's own tree (make check's module) has every gate on.
# 1. __preempt_count_dec_and_test() gains a statement: the build must name it and
#    its file, show the change, turn the gate inline_section off and nothing
#    else, and compile the write section as C calls (rue_tracepoint_write_lock),
#    which the build from the unchanged tree does not. The module goes to
#    OUT/extra/mirror/rust_user_events.ko, which module_test loads in the test
#    VM (a_changed_mirror_is_built_with_its_fallback).
# 2. dyn_event_add() gains a statement: the mirror has no exported fallback, so
#    the build must stop, naming it, and make no module.
# 3. A configuration the mirrors were not audited with (below).
# 4. arm64's bodies (below): a changed one turns its gates off for an arm64
#    build and is not compared in an x86-64 one.
#
# The copies are hard links of KDIR's source but for the changed file, which is
# written anew, made beside the source (the same file system) and removed at the
# end; KDIR's objects are used as they are (make -C COPY O=KDIR).
#
# Usage: mirror-test.sh KDIR OUT   (prints PASS/FAIL lines; exits 1 on a FAIL)
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
kdir=$1
out=$2
src=$(readlink -f "$kdir/source")
fails=0
trees=$(mktemp -d "$(dirname "$src")/mirror-test.XXXXXX") || {
	fail "no room for the tree copies beside $src"
	exit 1
}
trap 'rm -rf "$trees"' EXIT

pass() { echo "PASS mirrors: $*"; }
fail() {
	echo "FAIL mirrors: $*"
	fails=$((fails + 1))
}

# build NAME FILE SED: a copy of the source with SED applied to FILE, and the
# module's sources; builds, leaving the log in OUT/NAME/build.log. Returns 0 if
# the module built, 1 if not, 3 if SED changed nothing (reported here).
build() {
	local name=$1 file=$2 script=$3 tree=$trees/$1
	mkdir -p "$out/$name"
	cp -al "$src" "$tree"
	sed "$script" "$src/$file" >"$tree/$file.new" && mv "$tree/$file.new" "$tree/$file"
	if cmp -s "$src/$file" "$tree/$file"; then
		fail "$name: the change to $file changed nothing (has the kernel's text moved?)"
		return 3
	fi
	bash "$top/tools/debian/stage-sources.sh" "$out/$name/mod"
	make -C "$tree" O="$kdir" M="$out/$name/mod" LLVM=-19 modules >"$out/$name/build.log" 2>&1 ||
		return 1
}

# calls_section_in_c OBJECT: does OBJECT call the C entry of the write section?
calls_section_in_c() {
	[ "$(objdump -r "$1" | grep -c 'rue_tracepoint_write_lock')" -gt 0 ]
}

rm -rf "$out"
mkdir -p "$out/extra/mirror"

# The tree the mirrors were audited against: every gate on, nothing changed.
gen=$top/src/mirrors_generated.rs
if [ -f "$gen" ] && ! grep -q ': bool = false;' "$gen" && grep -qx 'pub(crate) const CHANGED: &str = "";' "$gen"; then
	pass "unchanged: the build against KDIR's own tree has every gate on"
else
	fail "unchanged: the build against KDIR's own tree has a gate off, or was not made ($gen)"
fi

name=fallback
build $name arch/x86/include/asm/preempt.h \
	'/^static __always_inline bool __preempt_count_dec_and_test(void)$/,/^}/s/^\treturn GEN_UNARY_RMWcc(__pc_dec/\tbarrier();\n&/'
status=$?
log=$out/$name/build.log
gen=$out/$name/mod/src/mirrors_generated.rs
if [ $status -eq 3 ]; then
	:
elif [ $status -ne 0 ]; then
	tail -n 20 "$log"
	fail "$name: the build against the changed tree failed"
else
	if grep -q "the kernel's x86_preempt_count_dec_and_test (arch/x86/include/asm/preempt.h) differs" "$log" &&
		grep -q '^    +	barrier();' "$log" &&
		grep -q "x86_preempt_count_dec_and_test: gate 'inline_section' off" "$log"; then
		pass "$name: the build names the changed body, its file and its diff"
	else
		cat "$log"
		fail "$name: the build does not name the changed body and its gate"
	fi
	if grep -qx 'pub(crate) const INLINE_SECTION: bool = false;' "$gen" &&
		[ "$(grep -c ': bool = false;' "$gen")" -eq 1 ] &&
		grep -qx 'pub(crate) const CHANGED: &str = "x86_preempt_count_dec_and_test";' "$gen"; then
		pass "$name: inline_section is off, every other gate on"
	else
		cat "$gen"
		fail "$name: the gates are not inline_section alone off"
	fi
	if calls_section_in_c "$out/$name/mod/src/rust_user_events_main.o" &&
		! calls_section_in_c "$top/src/rust_user_events_main.o"; then
		pass "$name: the write section is C calls in this build, inline in the unchanged one"
	else
		fail "$name: the write section's calls are not what the gate says"
	fi
	cp "$out/$name/mod/rust_user_events.ko" "$out/extra/mirror/"
fi

name=refusal
build $name kernel/trace/trace_dynevent.h \
	'/^static inline int dyn_event_add(struct dyn_event \*ev,$/,/^}/s/^\tlockdep_assert_held(&event_mutex);$/&\n\tbarrier();/'
status=$?
log=$out/$name/build.log
if [ $status -eq 3 ]; then
	:
elif [ $status -eq 0 ]; then
	fail "$name: the build against a changed dyn_event_add() succeeded"
elif grep -q "the kernel's dyn_event_add (kernel/trace/trace_dynevent.h) differs" "$log" &&
	grep -q 'rust_user_events: not built: re-audit the mirrors of dyn_event_add' "$log" &&
	[ ! -e "$out/$name/mod/src/rust_user_events_main.o" ]; then
	pass "$name: a changed body without a fallback stops the build before compiling, naming it"
else
	cat "$log"
	fail "$name: the build did not stop on the changed dyn_event_add(), or did not say why"
fi

# 3. A configuration choice the mirrors assume (mirrors/list's config lines): KDIR's own
#    auto.conf with CONFIG_NEED_SRCU_NMI_SAFE=y added turns inline_section off, naming it;
#    tools/mirrors.sh alone, as Kbuild runs it (no build: the objects are KDIR's).
name=config
mkdir -p "$out/$name"
sed '$a CONFIG_NEED_SRCU_NMI_SAFE=y' "$kdir/include/config/auto.conf" >"$out/$name/auto.conf"
if sh "$top/tools/mirrors.sh" "$src" "$top/mirrors" x86 "$out/$name/auto.conf" \
	>"$out/$name/mirrors_generated.rs" 2>"$out/$name/build.log"; then
	if grep -q 'the kernel has CONFIG_NEED_SRCU_NMI_SAFE=y; the module.s mirrors were audited with n' "$out/$name/build.log" &&
		grep -qx 'pub(crate) const INLINE_SECTION: bool = false;' "$out/$name/mirrors_generated.rs" &&
		[ "$(grep -c ': bool = false;' "$out/$name/mirrors_generated.rs")" -eq 1 ] &&
		grep -qx 'pub(crate) const CHANGED: &str = "CONFIG_NEED_SRCU_NMI_SAFE=y";' "$out/$name/mirrors_generated.rs"; then
		pass "$name: a configuration the mirrors were not audited with turns inline_section off, naming it"
	else
		cat "$out/$name/build.log" "$out/$name/mirrors_generated.rs"
		fail "$name: CONFIG_NEED_SRCU_NMI_SAFE=y did not turn inline_section alone off"
	fi
else
	cat "$out/$name/build.log"
	fail "$name: tools/mirrors.sh failed on an auto.conf with CONFIG_NEED_SRCU_NMI_SAFE=y"
fi

# 4. arm64's mirrors, checked by tools/mirrors.sh alone as an arm64 build's Kbuild runs it (the
#    test kernel is x86-64: no arm64 objects to build against): in a copy of the tree,
#    arm64's __preempt_count_dec_and_test() loses its second read, and struct thread_info
#    gains a field. Each turns off exactly the gates whose mirrors use it, naming it; the same
#    copy seen as an x86-64 tree has every gate on, as another architecture's arch/ is not
#    compared.
# arm64_gates NAME FILE SED GATES: GATES (the constants, space-separated) off alone for arm64.
arm64_gates() {
	local name=$1 file=$2 script=$3 want=$4 tree=$trees/$1 off
	mkdir -p "$out/$name"
	cp -al "$src" "$tree"
	sed "$script" "$src/$file" >"$tree/$file.new" && mv "$tree/$file.new" "$tree/$file"
	if cmp -s "$src/$file" "$tree/$file"; then
		fail "$name: the change to $file changed nothing (has the kernel's text moved?)"
		return
	fi
	if ! sh "$top/tools/mirrors.sh" "$tree" "$top/mirrors" arm64 >"$out/$name/arm64.rs" \
		2>"$out/$name/arm64.log" ||
		! sh "$top/tools/mirrors.sh" "$tree" "$top/mirrors" x86 >"$out/$name/x86.rs" \
			2>"$out/$name/x86.log"; then
		cat "$out/$name/arm64.log" "$out/$name/x86.log"
		fail "$name: tools/mirrors.sh failed on the changed tree"
		return
	fi
	off=$(sed -n 's/^pub(crate) const \([A-Z_]*\): bool = false;$/\1/p' "$out/$name/arm64.rs" | sort | xargs)
	if [ "$off" = "$want" ] && grep -q "differs from the text" "$out/$name/arm64.log"; then
		pass "$name: an arm64 build turns $want off alone, naming the body"
	else
		cat "$out/$name/arm64.log" "$out/$name/arm64.rs"
		fail "$name: an arm64 build has off: '${off}', not '$want'"
	fi
	if ! grep -q ': bool = false;' "$out/$name/x86.rs" &&
		grep -qx 'pub(crate) const CHANGED: &str = "";' "$out/$name/x86.rs"; then
		pass "$name: an x86-64 build does not compare arm64's body: every gate on"
	else
		cat "$out/$name/x86.rs"
		fail "$name: an x86-64 build turned a gate off for arm64's body"
	fi
}
arm64_gates arm64-preempt arch/arm64/include/asm/preempt.h \
	'/^static inline bool __preempt_count_dec_and_test(void)$/,/^}/s/^\treturn !pc || !READ_ONCE(ti->preempt_count);$/\treturn !pc;/' \
	INLINE_SECTION
arm64_gates arm64-thread-info arch/arm64/include/asm/thread_info.h \
	'/^struct thread_info {$/,/^};/s/^\tu32\t\t\tcpu;$/&\n\tu32\t\t\tspare;/' \
	"INLINE_SECTION PERCPU_INLINE"

[ $fails -eq 0 ]
