#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Secure Boot, under real firmware: Debian's amd64 kernel booted as a Secure Boot machine boots
# it, by OVMF with Microsoft's keys enrolled as Debian's ovmf package ships them, Debian's signed
# shim and GRUB, and Debian's signed kernel (which then is locked down and enforces module
# signatures), all unmodified from trixie's archive. The project's certificate is put in shim's
# MOK list in the firmware's variables by a tool (virt-fw-vars, as an image build would), not at
# MokManager's console. In that boot the packaged module (make packages', signed) loads and
# works, and an unsigned build of it is refused; booted again without the certificate, the
# packaged module is refused with the messages Documentation/install.md gives. Then the way
# README.md enrolls the certificate, from a machine without it: its "Secure Boot" commands run
# as written (mokutil --import, from Debian's package, asks for a one-time password; reboot),
# MokManager is answered at the serial console as a person would (tools/debian/console.py:
# "Enroll MOK", the key, "Yes", the password, "Reboot"), and the boot after loads the packaged
# module. Only the initramfs is the test's (a busybox, mokutil and the modules), as nothing
# verifies an initramfs.
#
# QEMU runs on the host; the disk image and the variables are made in chroot.sh's trixie root
# (mtools, sfdisk, virt-fw-vars: its packaging tools). Prints TAP.
#
# Usage: secureboot-test.sh REPO KEYS UNSIGNED_KO OUT
#   REPO: make packages' repository; KEYS: its keys (module.der); UNSIGNED_KO: make debian's
#   module for the same kernel, unsigned; OUT: a directory under the work tree, emptied first.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
repo=$1 keys=$2 unsigned=$3 out=$4
# shellcheck source=kernels.conf
. "$here/kernels.conf"
# shellcheck source=tap.sh
. "$here/tap.sh"
krel=$DEBIAN_ABI-amd64
# shim's GUID, the owner of its MOK list's entries by convention.
shim_guid=605dab50-e046-4300-abb6-3dd810dd8b23
limit=${RUE_SB_BOOT_LIMIT:-300}

echo "TAP version 13"
plan 13
echo "# $krel under OVMF with Secure Boot, shim and GRUB from trixie"

case "$out/" in
"$top"/*) ;;
*) echo "Bail out! OUT must be under $top (the root sees only the work tree)"; exit 2 ;;
esac
rm -rf "$out"
mkdir -p "$out/initrd/bin" "$out/initrd/mods" "$out/esp"
in_root() { bash "$here/chroot.sh" --packaging "$@"; }
inside() { echo "/rue/src${1#"$top"}"; }

# Debian's files, unmodified.
fetched=1
vmlinuz=$(bash "$here/vmlinuz.sh" amd64) &&
	ovmf=$(bash "$here/fetch.sh" ovmf all)/usr/share/OVMF &&
	shim=$(bash "$here/fetch.sh" shim-signed amd64)/usr/lib/shim/shimx64.efi.signed &&
	mm=$(bash "$here/fetch.sh" shim-helpers-amd64-signed amd64)/usr/lib/shim/mmx64.efi.signed &&
	grub=$(bash "$here/fetch.sh" grub-efi-amd64-signed amd64)/usr/lib/grub/x86_64-efi-signed/grubx64.efi.signed &&
	[ -f "$ovmf/OVMF_CODE_4M.secboot.fd" ] && [ -f "$ovmf/OVMF_VARS_4M.ms.fd" ] && [ -f "$shim" ] &&
	[ -f "$grub" ] && [ -f "$mm" ] && [ -f "$vmlinuz" ] || fetched=0
# mokutil as trixie has it, with the libraries it links (its Depends, and libssl3t64's).
for pkg in mokutil libc6 libcrypt1 libefivar1t64 libkeyutils1 libssl3t64 zlib1g libzstd1; do
	dir=$(bash "$here/fetch.sh" "$pkg" amd64) && cp -a "$dir/usr" "$out/initrd/" || fetched=0
done
rm -rf "$out/initrd/usr/share" "$out/initrd/usr/lib/x86_64-linux-gnu/"{gconv,engines-3,ossl-modules}
ln -s usr/lib64 "$out/initrd/lib64"
# And efivarfs, where mokutil writes the request: a module in Debian's kernel (signed by it).
efivarfs=$(bash "$here/fetch.sh" "linux-modules-$krel" amd64 "$DEBIAN_VERSION")/usr/lib/modules/$krel/kernel/fs/efivarfs/efivarfs.ko.xz &&
	xz -dc "$efivarfs" >"$out/initrd/mods/efivarfs.ko" || fetched=0
# The module users get: the one in the kernel's package.
deb=$(find "$repo/pool" -name "rust-user-events-modules-${krel}_*.deb" | head -n 1)
signed=$out/pkg/usr/lib/modules/$krel/updates/rust_user_events.ko
[ -n "$deb" ] && dpkg-deb -x "$deb" "$out/pkg" && [ -f "$signed" ] && [ -f "$unsigned" ] &&
	[ -f "$keys/module.der" ] || fetched=0
# And the certificate where its package puts it, for the README's commands.
cert=usr/share/rust-user-events/rust-user-events-signing.der
deb=$(find "$repo/pool" -name "rust-user-events-ueficert_*.deb" | head -n 1)
[ -n "$deb" ] && dpkg-deb -x "$deb" "$out/cert" && mkdir -p "$out/initrd/${cert%/*}" &&
	cp "$out/cert/$cert" "$out/initrd/$cert" || fetched=0
readme=$(bash "$top/tools/testing/readme.sh" "Secure Boot") || fetched=0
if [ "$fetched" -eq 0 ]; then
	echo "Bail out! missing an input: Debian's OVMF, shim, MokManager, GRUB, kernel or mokutil, the packaged module or certificate ($repo), $unsigned, $keys/module.der or README.md's Secure Boot commands"
	exit 1
fi

# The initramfs: the host's static busybox, the two modules and the steps; each step's result
# is a line on the serial console, read below.
cp /bin/busybox "$out/initrd/bin/busybox"
cp "$signed" "$out/initrd/mods/packaged.ko"
cp "$unsigned" "$out/initrd/mods/unsigned.ko"
cat >"$out/initrd/init" <<'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin:/usr/bin
mkdir -p /proc /sys /dev
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mount -t securityfs securityfs /sys/kernel/security
mount -t tracefs tracefs /sys/kernel/tracing
say() { echo "RUE-SB $*"; }
say "lockdown $(cat /sys/kernel/security/lockdown)"
say "sig_enforce $(cat /sys/module/module/parameters/sig_enforce)"
say "secure-boot $(dmesg | grep -c 'Secure boot enabled')"
say "mok-cert $(dmesg | grep -c "Loaded X.509 cert 'rust-user-events module signing key")"
for m in $(cat /mods/order); do
	err=$(insmod /mods/$m.ko 2>&1)
	say "insmod $m $? $err"
	say "rejected-unsigned $m $(dmesg | grep -c 'Loading of unsigned module is rejected')"
	say "rejected-key $m $(dmesg | grep -c 'Loading of module with unavailable key is rejected')"
	[ -d /sys/module/rust_user_events ] || continue
	[ -e /sys/kernel/tracing/user_events_data ] && say "data $m"
	echo 'u:rue_sb u32 n' >>/sys/kernel/tracing/dynamic_events &&
		grep -q '^rue_sb' /sys/kernel/tracing/user_events_status && say "event $m"
	echo '-:rue_sb u32 n' >>/sys/kernel/tracing/dynamic_events
	rmmod rust_user_events && say "rmmod $m"
done
# The README's enrolment, where the test asks for it and the certificate is not there: its
# commands with the one-time password typed twice, as mokutil asks for it. Once only: with a
# request pending (MokNew), MokManager was not answered, and the run ends here.
if [ -f /readme/enroll.sh ] && [ "$(dmesg | grep -c "Loaded X.509 cert 'rust-user-events module signing key")" = 0 ]; then
	insmod /mods/efivarfs.ko
	mount -t efivarfs efivarfs /sys/firmware/efi/efivars
	if ls /sys/firmware/efi/efivars | grep -q '^MokNew-'; then
		say "moknew pending"
	else
		sh /readme/enroll.sh </readme/password
		say "readme exit $?"
	fi
fi
say end
poweroff -f
INIT
chmod 0755 "$out/initrd/init"

# boot NAME ORDER VARS [STEP...]: boots with the modules ORDER (their insmod order) and the
# firmware's variables VARS: "mok" (as Debian ships them, the project's certificate added to the
# MOK list), "none" (as shipped) or "keep:NAME" (those boot NAME left). The serial console goes
# to OUT/NAME.log, and each STEP answers a prompt there (console.py). Returns QEMU's status
# (124: stopped after $limit s; 3: a prompt never came).
boot() {
	local name=$1 order=$2 how=$3 vars=$out/$1.vars.fd
	shift 3
	echo "$order" >"$out/initrd/mods/order"
	(cd "$out/initrd" && find . | cpio -o -H newc --quiet) >"$out/esp/initrd.img" || return 1
	# Fresh variables each boot (shim writes its SBAT level there), but for the enrolment's.
	case "$how" in
	keep:*) cp "$out/${how#keep:}.vars.fd" "$vars" ;;
	*) cp "$ovmf/OVMF_VARS_4M.ms.fd" "$vars" ;;
	esac
	cp "$keys/module.der" "$out/module.der"
	{
		[ "$how" != mok ] || echo "virt-fw-vars --inplace $(inside "$vars") --add-mok $shim_guid $(inside "$out/module.der")"
		# A GPT disk with one EFI system partition at 1 MiB, FAT, made with mtools (no loop
		# device). shim boots from the removable-media path and loads grubx64.efi beside it;
		# Debian's signed GRUB reads /EFI/debian/grub.cfg from the partition it came from.
		cat <<EOF
img=$(inside "$out/$name.img") p=$(inside "$out/$name.img")@@1M
rm -f "\$img" && truncate -s 96M "\$img"
printf 'label: gpt\nstart=2048, type=C12A7328-F81F-11D2-BA4B-00A0C93EC93B, name="ESP"\n' | sfdisk -q "\$img"
mformat -i "\$p" -F -v ESP ::
mmd -i "\$p" ::/EFI ::/EFI/BOOT ::/EFI/debian
mcopy -i "\$p" $(inside "$out/esp/shim.efi") ::/EFI/BOOT/BOOTX64.EFI
mcopy -i "\$p" $(inside "$out/esp/grub.efi") ::/EFI/BOOT/grubx64.efi
mcopy -i "\$p" $(inside "$out/esp/mm.efi") ::/EFI/BOOT/mmx64.efi
mcopy -i "\$p" $(inside "$out/esp/grub.cfg") ::/EFI/debian/grub.cfg
mcopy -i "\$p" $(inside "$out/esp/vmlinuz") ::/vmlinuz
mcopy -i "\$p" $(inside "$out/esp/initrd.img") ::/initrd.img
EOF
	} >"$out/$name.sh"
	in_root sh -e "$(inside "$out/$name.sh")" >"$out/$name.make.log" 2>&1 || return 1
	python3 "$here/console.py" "$out/$name.log" "$limit" "$@" -- qemu-system-x86_64 \
		-machine q35,smm=on -accel tcg -cpu max -m 1024 -smp 1 \
		-nodefaults -vga none -display none -no-reboot -net none \
		-global driver=cfi.pflash01,property=secure,value=on -global ICH9-LPC.disable_s3=1 \
		-drive if=pflash,format=raw,unit=0,file="$ovmf/OVMF_CODE_4M.secboot.fd",readonly=on \
		-drive if=pflash,format=raw,unit=1,file="$vars" \
		-drive if=none,id=esp,format=raw,file="$out/$name.img" -device virtio-blk-pci,drive=esp,bootindex=1 \
		-chardev stdio,id=serial,signal=off -serial chardev:serial -monitor none 2>"$out/$name.stderr"
	local rc=$?
	tr -d '\r' <"$out/$name.log" >"$out/$name.console"
	return "$rc"
}

cp "$shim" "$out/esp/shim.efi"
cp "$grub" "$out/esp/grub.efi"
cp "$mm" "$out/esp/mm.efi"
cp "$vmlinuz" "$out/esp/vmlinuz"
cat >"$out/esp/grub.cfg" <<'EOF'
serial --unit=0 --speed=115200
terminal_input serial console
terminal_output serial console
set timeout=0
menuentry "rust-user-events Secure Boot test" {
	linux /vmlinuz console=ttyS0,115200 panic=-1
	initrd /initrd.img
}
EOF

# said LOG WORDS...: the console line "RUE-SB WORDS..." (its start) is in LOG.
said() {
	local log=$1
	shift
	grep -q "^RUE-SB $*" "$log"
}

start=$(date +%s)
boot mok "unsigned packaged" mok
rc=$?
log=$out/mok.console
echo "# booted in $(($(date +%s) - start)) s"
[ "$rc" -eq 0 ] && said "$log" end
result $? "Debian's signed shim, GRUB and kernel boot under OVMF with Secure Boot on, the project's certificate in the MOK list" \
	"exit $rc: $(tail -n 3 "$log" 2>/dev/null | tr '\n' ' ') $(tail -n 3 "$out/mok.make.log" 2>/dev/null | tr '\n' ' ')"
said "$log" "secure-boot [1-9]" && grep -q '^RUE-SB lockdown .*\[\(integrity\|confidentiality\)\]' "$log" &&
	said "$log" "sig_enforce Y"
result $? "the kernel says Secure Boot is on, is locked down and enforces module signatures" \
	"$(grep '^RUE-SB \(lockdown\|sig_enforce\|secure-boot\)' "$log" | tr '\n' ' ')"
said "$log" "mok-cert 1"
result $? "it loaded the project's certificate from shim's MOK list" "$(grep -i 'x\.509\|moklist' "$log" | head -n 3 | tr '\n' ' ')"
said "$log" "insmod unsigned [1-9][0-9]* .*Key was rejected by service" &&
	said "$log" "rejected-unsigned unsigned [1-9]"
result $? "an unsigned build is refused: Key was rejected by service, 'Loading of unsigned module is rejected'" \
	"$(grep '^RUE-SB [a-z-]* unsigned' "$log" | tr '\n' ' ')"
said "$log" "insmod packaged 0" && said "$log" "data packaged" && said "$log" "event packaged"
result $? "the packaged module loads, and user_events works (user_events_data, an event from dynamic_events)" \
	"$(grep '^RUE-SB [a-z-]* packaged' "$log" | tr '\n' ' ')"
said "$log" "rmmod packaged"
result $? "and it unloads"

start=$(date +%s)
boot nomok packaged none
rc=$?
log=$out/nomok.console
echo "# booted in $(($(date +%s) - start)) s"
[ "$rc" -eq 0 ] && said "$log" end && said "$log" "secure-boot [1-9]" && said "$log" "mok-cert 0"
result $? "booted again the same way, without the certificate in the MOK list" \
	"exit $rc: $(tail -n 3 "$log" 2>/dev/null | tr '\n' ' ')"
said "$log" "insmod packaged [1-9][0-9]* .*Key was rejected by service" &&
	said "$log" "rejected-key packaged [1-9]"
result $? "the packaged module is refused: Key was rejected by service, 'Loading of module with unavailable key is rejected'" \
	"$(grep '^RUE-SB [a-z-]* packaged' "$log" | tr '\n' ' ')"
[ "$rc" -eq 0 ] && said "$log" end && ! grep -q '^RUE-SB data' "$log"
result $? "and user_events is not there"

# The README's way in, from the same machine as shipped: its commands, then MokManager.
password=rue-$RANDOM$RANDOM
mkdir -p "$out/initrd/readme"
{
	echo 'set -e'
	# As root already; the reboot is the README's, once the request is in the variables.
	echo 'sudo() {'
	echo '	[ "$1" = reboot ] || { "$@"; return; }'
	echo '	echo "RUE-SB readme moknew $(ls /sys/firmware/efi/efivars | grep -c "^MokNew-")"'
	echo '	reboot -f'
	echo '}'
	echo "$readme"
} >"$out/initrd/readme/enroll.sh"
printf '%s\n%s\n' "$password" "$password" >"$out/initrd/readme/password"
start=$(date +%s)
boot enroll packaged none
rc=$?
log=$out/enroll.console
echo "# booted in $(($(date +%s) - start)) s"
[ "$rc" -eq 0 ] && said "$log" "insmod packaged [1-9][0-9]* .*Key was rejected by service" &&
	said "$log" "readme moknew 1"
result $? "without the certificate, the module is refused, and README.md's Secure Boot commands ask mokutil for the enrolment (one MokNew request) and reboot" \
	"exit $rc: $(grep '^RUE-SB \(insmod\|readme\)' "$log" | tr '\n' ' ') $(grep -v '^$' "$log" | tail -n 3 | tr '\n' ' ')"
# MokManager, as shim starts it for the request: the answers a person gives at the console.
start=$(date +%s)
boot mokmanager packaged keep:enroll \
	'Press any key to perform MOK management=> ' \
	'Enroll hash from disk=>{down}{pause}{enter}' \
	'View key 0=>{down}{pause}{enter}' \
	'Enroll the key(s)?=>' \
	'Yes=>{down}{pause}{enter}' \
	'Password:=>'"$password"'{enter}' \
	'Reboot=>{enter}'
rc=$?
log=$out/mokmanager.console
echo "# booted in $(($(date +%s) - start)) s"
[ "$rc" -eq 0 ] && ! grep -q '^RUE-SB' "$log"
result $? "at the next boot MokManager asks, and answered at the serial console (Enroll MOK, Continue, Yes, the password, Reboot) enrolls the certificate and resets the machine" \
	"exit $rc: $(tr '\n' ' ' <"$out/mokmanager.stderr") ... $(tail -c 300 "$out/mokmanager.log.text" | tr -s '\r\n' ' ')"
start=$(date +%s)
boot enrolled packaged keep:mokmanager
rc=$?
log=$out/enrolled.console
echo "# booted in $(($(date +%s) - start)) s"
[ "$rc" -eq 0 ] && said "$log" end && said "$log" "mok-cert 1" && ! said "$log" "readme"
result $? "the boot after: the kernel loads the certificate from the MOK list MokManager wrote" \
	"exit $rc: $(grep '^RUE-SB \(mok-cert\|readme\|moknew\)' "$log" | tr '\n' ' ') $(grep -v '^$' "$log" | tail -n 3 | tr '\n' ' ')"
said "$log" "insmod packaged 0" && said "$log" "data packaged" && said "$log" "event packaged"
result $? "and the packaged module loads, and user_events works" \
	"$(grep '^RUE-SB [a-z-]* packaged' "$log" | tr '\n' ' ')"

exit "$failed"
