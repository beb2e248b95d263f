# SPDX-License-Identifier: GPL-2.0
#
# TAP helpers of the install tests (install-test.sh, dkms-cross-test.sh),
# sourced by them. They set n and failed, and use here (the tools/debian
# directory), config (the kernel's .config) and tmp (a scratch directory).

n=0
failed=0

# result OK DESCRIPTION [DETAIL]: one TAP line; DETAIL is shown on failure.
result() {
	n=$((n + 1))
	if [ "$1" -eq 0 ]; then
		echo "ok $n $2"
	else
		echo "not ok $n $2${3:+ ($3)}"
		failed=1
	fi
}

# refuses CONFIG_EDIT EXIT MESSAGE DESCRIPTION: toolchain-check.sh on the
# kernel's .config edited by the sed expression exits EXIT and says MESSAGE.
refuses() {
	sed -e "$1" "$config" >"$tmp/config"
	bash "$here/toolchain-check.sh" "$tmp/config" >/dev/null 2>"$tmp/err"
	local rc=$?
	[ "$rc" -eq "$2" ] && grep -q "$3" "$tmp/err"
	result $? "$4" "exit $rc: $(head -n 1 "$tmp/err")"
}
