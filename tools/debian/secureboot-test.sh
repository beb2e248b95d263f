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
# packaged module is refused with the messages Documentation/install.md gives. Only the
# initramfs is the test's (a busybox and the modules), as nothing verifies an initramfs.
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
plan 9
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
	grub=$(bash "$here/fetch.sh" grub-efi-amd64-signed amd64)/usr/lib/grub/x86_64-efi-signed/grubx64.efi.signed &&
	[ -f "$ovmf/OVMF_CODE_4M.secboot.fd" ] && [ -f "$ovmf/OVMF_VARS_4M.ms.fd" ] && [ -f "$shim" ] &&
	[ -f "$grub" ] && [ -f "$vmlinuz" ] || fetched=0
# The module users get: the one in the kernel's package.
deb=$(find "$repo/pool" -name "rust-user-events-modules-${krel}_*.deb" | head -n 1)
signed=$out/pkg/usr/lib/modules/$krel/updates/rust_user_events.ko
[ -n "$deb" ] && dpkg-deb -x "$deb" "$out/pkg" && [ -f "$signed" ] && [ -f "$unsigned" ] &&
	[ -f "$keys/module.der" ] || fetched=0
if [ "$fetched" -eq 0 ]; then
	echo "Bail out! missing an input: Debian's OVMF, shim, GRUB or kernel, the packaged module ($repo), $unsigned or $keys/module.der"
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
export PATH=/bin
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
say end
poweroff -f
INIT
chmod 0755 "$out/initrd/init"

# boot NAME ORDER WITH_MOK: boots with the modules ORDER (their insmod order), the project's
# certificate in the MOK list if WITH_MOK is 1; the serial console goes to OUT/NAME.log. Returns
# QEMU's status (124: stopped after $limit s).
boot() {
	local name=$1 order=$2 mok=$3 vars=$out/$1.vars.fd
	echo "$order" >"$out/initrd/mods/order"
	(cd "$out/initrd" && find . | cpio -o -H newc --quiet) >"$out/esp/initrd.img" || return 1
	cp "$ovmf/OVMF_VARS_4M.ms.fd" "$vars"
	cp "$keys/module.der" "$out/module.der"
	{
		[ "$mok" -eq 0 ] || echo "virt-fw-vars --inplace $(inside "$vars") --add-mok $shim_guid $(inside "$out/module.der")"
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
mcopy -i "\$p" $(inside "$out/esp/grub.cfg") ::/EFI/debian/grub.cfg
mcopy -i "\$p" $(inside "$out/esp/vmlinuz") ::/vmlinuz
mcopy -i "\$p" $(inside "$out/esp/initrd.img") ::/initrd.img
EOF
	} >"$out/$name.sh"
	in_root sh -e "$(inside "$out/$name.sh")" >"$out/$name.make.log" 2>&1 || return 1
	# Fresh variables each boot: shim writes its SBAT level there.
	timeout "$limit" qemu-system-x86_64 \
		-machine q35,smm=on -accel tcg -cpu max -m 1024 -smp 1 \
		-nodefaults -vga none -display none -no-reboot -net none \
		-global driver=cfi.pflash01,property=secure,value=on -global ICH9-LPC.disable_s3=1 \
		-drive if=pflash,format=raw,unit=0,file="$ovmf/OVMF_CODE_4M.secboot.fd",readonly=on \
		-drive if=pflash,format=raw,unit=1,file="$vars" \
		-drive if=none,id=esp,format=raw,file="$out/$name.img" -device virtio-blk-pci,drive=esp,bootindex=1 \
		-serial file:"$out/$name.log" -monitor none </dev/null
	local rc=$?
	tr -d '\r' <"$out/$name.log" >"$out/$name.console"
	return "$rc"
}

cp "$shim" "$out/esp/shim.efi"
cp "$grub" "$out/esp/grub.efi"
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
boot mok "unsigned packaged" 1
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
boot nomok packaged 0
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

exit "$failed"
