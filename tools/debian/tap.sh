# SPDX-License-Identifier: GPL-2.0
#
# TAP helpers of the install and package tests (install-test.sh,
# dkms-cross-test.sh, packages-test.sh), sourced by them. They set n and
# failed, and use here (the tools/debian directory), config (the kernel's
# .config) and tmp (a scratch directory). Each script declares its plan before
# its first result; tools/check.sh fails a log whose results do not number it.

n=0
failed=0

# plan N: the TAP plan, printed before the first result.
plan() { echo "1..$1"; }

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

# signed_by KO CERT: KO carries a module signature that verifies, over KO's
# bytes before it, against the X.509 certificate CERT (DER): it was made with
# that certificate's key and no other. The signature is read as the kernel
# reads it: the 28-byte marker, before it struct module_signature (12 bytes,
# the last 4 the PKCS#7 message's length, big-endian), before that the message.
signed_by() {
	local ko=$1 cert=$2 size siglen
	[ -f "$ko" ] && [ -f "$cert" ] && [ "$(tail -c 28 "$ko")" = "~Module signature appended~" ] || return 1
	size=$(stat -c %s "$ko")
	siglen=$(tail -c 32 "$ko" | head -c 4 | od -An -tu1 | awk '{ print $1 * 16777216 + $2 * 65536 + $3 * 256 + $4 }')
	head -c $((size - 40 - siglen)) "$ko" >"$tmp/signed-module"
	tail -c $((40 + siglen)) "$ko" | head -c "$siglen" >"$tmp/signature.p7"
	openssl x509 -inform DER -in "$cert" -out "$tmp/signer.pem" &&
		openssl cms -verify -binary -inform DER -in "$tmp/signature.p7" -content "$tmp/signed-module" \
			-certfile "$tmp/signer.pem" -nointern -noverify -out /dev/null >"$tmp/verify.log" 2>&1
}
