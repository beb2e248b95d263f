#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# A real kernel upgrade keeps the module. A Debian trixie system, with systemd
# as init and its own disk, runs trixie-backports' previous kernel ABI (the
# newest 7.2, kernels.conf's trixie-7.2 set) with the module from the
# project's packages for it; Debian's real linux-image-amd64 then moves it to
# the current ABI (7.3.4+deb13) with `apt upgrade`, and the system boots the
# new kernel under QEMU: systemd-modules-load must load the module, the one
# the new kernel's package installed. Booted back into the old kernel, it
# loads that kernel's own module. Then, its package removed, the new kernel boots
# without a module, and rust-user-events.service fails, saying why. Two cases:
#   with the package: the project's repository already has the new kernel's
#     module package, and the upgrade brings it (rust-user-events-modules-amd64
#     follows the kernel);
#   in the gap: the repository does not have it yet (Debian uploaded first),
#     and rust-user-events-dkms, installed beside the prebuilt package, builds
#     the module for the new kernel during the upgrade.
# And the README's commands, as a user runs them (tools/testing/readme.sh takes
# them from README.md): the first case installs the packages with its "From
# packages" commands; a third system, from source, takes the backports kernel
# with its "A Rust-enabled kernel" commands and installs with its "From source"
# ones (`sudo make install`, DKMS); both then boot the new kernel, where the
# rest of its commands run ("Check that it works", the group setup, `uname
# -r`), and a service of the group opens user_events_data. Only its Secure
# Boot commands are not run here (mokutil needs firmware to enroll into).
# apt runs in a chroot of the system's disk between boots (the same maintainer
# scripts and kernel hooks: initramfs-tools, DKMS); each boot is the disk,
# copied into an ext4 image, with the kernel and initramfs the system has in
# /boot. A unit of the system reports what it booted with on the console and
# powers off.
#
# The system's base (debootstrap, systemd, the old kernel) is cached in
# $RUE_CACHE/debian/system-KEY. Debian's archive keeps one linux-image-amd64
# (the current one), so the old one is a stand-in metapackage of the old
# version depending on the old kernel's image, as Debian's did.
#
# Usage (as root): upgrade-test.sh REPO KEYS OUT
#   REPO: make packages' repository for the current ABI (tools/check.sh's);
#   KEYS: its signing keys; OUT: a scratch directory under the work tree.
# Prints TAP.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
repo=$(realpath "$1") keys=$(realpath "$2") out=$(realpath -m "$3")
cache=${RUE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rust-user-events}
mirror=http://deb.debian.org/debian
# shellcheck source=kernels.conf
. "$here/kernels.conf"
new_abi=$DEBIAN_ABI new_version=$DEBIAN_VERSION
eval "$(RUE_DEBIAN=trixie-7.2 bash -c '. "$1" && echo "old_abi=$DEBIAN_ABI old_version=$DEBIAN_VERSION"' \
	sh "$here/kernels.conf")"
old=$old_abi-amd64 new=$new_abi-amd64
tmp=$out/tmp
# How long a boot may take until its power-off: 7 times the slowest seen (60 s).
boot_limit=${RUE_UPGRADE_BOOT_LIMIT:-420}
# What the kernel prints when something went wrong (a boot showing one is not made again).
kernel_reports='blocked for more than|BUG:|WARNING:|Oops|Call Trace'
# shellcheck source=tap.sh
. "$here/tap.sh"

rm -rf "$out"
mkdir -p "$tmp"
case "$out/" in
"$top"/*) ;;
*) echo "upgrade-test: OUT must be under $top (the roots see only the work tree)" >&2; exit 2 ;;
esac
in_tree() { echo "/rue/src${1#"$top"}"; }

echo "TAP version 13"
plan 15
echo "# $old ($old_version) upgraded to $new ($new_version)"

# The old ABI's packages: make packages' build for the old kernel's module, the same version of
# the sources as REPO's, and stand-ins for Debian's linux-image-amd64 and linux-headers-amd64 of
# the old version.
common=$(find "$repo/pool" -name 'rust-user-events-common_*.deb' | head -n 1)
pkgver=$(dpkg-deb -f "$common" Version)
pkgver=${pkgver%-1}
# The stand-ins are installed from their files, not from a repository: apt then upgrades them
# from Debian's trixie-backports, as it upgrades the real ones.
for kind in image headers; do
	meta=$tmp/meta-$kind
	mkdir -p "$meta/DEBIAN"
	printf 'Package: linux-%s-amd64\nVersion: %s\nArchitecture: amd64\nDepends: linux-%s-%s\nMaintainer: rust-user-events tests <tests@invalid>\nDescription: stand-in for the previous ABI'"'"'s metapackage (upgrade-test.sh)\n' \
		"$kind" "$old_version" "$kind" "$old" >"$meta/DEBIAN/control"
	dpkg-deb -b -Zxz "$meta" "$tmp/linux-$kind-amd64_${old_version}_amd64.deb" >/dev/null
done
# The keys' passphrase, if they have one (KBUILD_SIGN_PIN, as for make packages).
pin=() pin_env=()
if pin_dir=$(bash "$here/pin.sh"); then
	pin=(--bind "$pin_dir:/rue/pin")
	pin_env=(RUE_SIGN_PIN_FILE=/rue/pin/pin)
fi
bash "$here/chroot.sh" --packaging --bind "$keys:/rue/keys" "${pin[@]}" -- \
	env RUE_PKG_VERSION="$pkgver" "${pin_env[@]}" \
	bash /rue/src/tools/debian/packages-build.sh "$(in_tree "$out/old-repo")" /rue/keys "$old_abi" \
	"$old_version" "amd64=/rue/src/build/debian/$old/rust_user_events.ko" >"$tmp/old-repo.log" 2>&1
rc=$?
[ "${#pin[@]}" -eq 0 ] || rm -rf "$pin_dir"
result $rc "the packages for $old, a snapshot of the project's repository before $new" \
	"exit $rc: $(tail -n 3 "$tmp/old-repo.log" | tr '\n' ' ')"

# The system: trixie with systemd, booting from /dev/vda, reporting each boot on the console.
base_packages=(systemd-sysv udev kmod initramfs-tools zstd apt procps)
key=$(echo "1 $mirror ${base_packages[*]} $old $old_version" | sha256sum | cut -c1-16)
base=$cache/debian/system-$key
apt_archives=$cache/debian/apt-archives-system
mkdir -p "$apt_archives/partial"
# in_system DIR CMD...: CMD in the system DIR (chroot.sh's mounts, the archives cache, the repositories).
in_system() {
	local dir=$1
	shift
	bash "$here/chroot.sh" --in "$dir" --bind "$apt_archives:/var/cache/apt/archives" -- "$@"
}
if [ ! -f "$base/.rue-complete" ]; then
	rm -rf "$base" "$base.tmp"
	for stale in "$cache"/debian/system-*/; do rm -rf "$stale"; done
	debootstrap --variant=minbase --include="$(IFS=,; echo "${base_packages[*]}")" trixie "$base.tmp" "$mirror" \
		>"$tmp/debootstrap.log" 2>&1 || { tail -n 20 "$tmp/debootstrap.log" >&2; }
	printf 'Types: deb\nURIs: %s\nSuites: trixie trixie-updates trixie-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
		"$mirror" >"$base.tmp/etc/apt/sources.list.d/debian.sources"
	rm -f "$base.tmp/etc/apt/sources.list"
	printf '/dev/vda / ext4 defaults 0 1\n' >"$base.tmp/etc/fstab"
	echo rue-upgrade >"$base.tmp/etc/hostname"
	# The old kernel, installed as Debian says (apt install -t trixie-backports).
	in_system "$base.tmp" sh -ec "apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends -t trixie-backports \
			linux-image-$old=$old_version" >"$tmp/base.log" 2>&1 &&
		touch "$base.tmp/.rue-complete" && mv "$base.tmp" "$base"
fi
[ -f "$base/.rue-complete" ] && [ -f "$base/boot/vmlinuz-$old" ] && [ -f "$base/boot/initrd.img-$old" ]
result $? "a trixie system with systemd and linux-image-$old, its initramfs made by initramfs-tools" \
	"$(tail -n 3 "$tmp/base.log" 2>/dev/null | tr '\n' ' ')"

# The report: what this boot runs, on the console, then power off.
mkdir -p "$tmp/report"
cat >"$tmp/report/rue-boot-report" <<'EOF'
#!/bin/sh
# rust-user-events' upgrade test: what this boot loaded, on the serial console, then power off.
exec >/dev/ttyS0 2>&1
say() { echo "RUE-BOOT $*"; }
say kernel "$(uname -r)"
if grep -q '^rust_user_events ' /proc/modules; then say loaded yes; else say loaded no; fi
file=$(realpath -q "$(modinfo -n rust_user_events 2>/dev/null)")
say file "${file:-none}"
say owner "$(dpkg -S "$file" 2>/dev/null | cut -d: -f1)"
[ "$(cat /sys/module/rust_user_events/srcversion 2>/dev/null)" = "$(modinfo -F srcversion "$file" 2>/dev/null)" ] &&
	say same-file yes || say same-file no
# Loaded at boot by systemd-modules-load, the only thing that names it (modules-load.d: the
# packages' file, or make install's).
[ "$(systemctl show -P Result systemd-modules-load.service)" = success ] &&
	cat /usr/lib/modules-load.d/rust-user-events.conf /etc/modules-load.d/rust-user-events.conf \
		2>/dev/null | grep -qx rust_user_events &&
	say by-modules-load yes || say by-modules-load no
journalctl -b -q --no-pager -g rust_user_events | head -n 3 | sed 's/^/RUE-BOOT journal /'
[ -e /sys/kernel/tracing/user_events_data ] && say data yes || say data no
# The unit that checks the boot, and what it said.
say unit "$(systemctl is-active rust-user-events.service)"
journalctl -b -q --no-pager -o cat -u rust-user-events.service | head -n 4 | sed 's/^/RUE-BOOT unit-log /'
# The README's commands for after its reboot, where the test put them (readme_after_boot).
[ ! -x /usr/local/sbin/rue-readme ] || /usr/local/sbin/rue-readme 2>&1 | sed 's/^/RUE-README /'
dmesg | grep -E '(WARNING|BUG|Oops|Call Trace)' | head -n 5 | sed 's/^/RUE-BOOT dmesg /'
say end
systemctl poweroff --no-block
EOF
cat >"$tmp/report/rue-boot-report.service" <<'EOF'
[Unit]
Description=rust-user-events upgrade test: what this boot loaded
After=multi-user.target systemd-modules-load.service

[Service]
Type=oneshot
ExecStart=/usr/local/sbin/rue-boot-report

[Install]
WantedBy=multi-user.target
EOF

# boot DIR KERNEL LOG: DIR's system booted with KERNEL under QEMU; its report in LOG.
boot() {
	local dir=$1 kernel=$2 log=$3 img=$tmp/disk.img size rc attempt start
	# A boot takes 40 to 60 s here, with other VMs running beside it. Two failures are the
	# emulator's, not the system's, and the boot is made again, once, from a fresh disk, its
	# first log kept in LOG.1; the second boot is judged like any other:
	#   - QEMU dying by a signal (status above 128; timeout's own is 124): once, CI saw TCG
	#     abort booting a kernel that had booted before;
	#   - a boot that never ends (timeout's 124): once, CI saw a boot of the old kernel print
	#     nothing of its report in 900 s, where the same disk booted at once the next time.
	# Neither is made again when the kernel reported something on the console (a task blocked,
	# a warning, an oops): that is the system's failure, and the log shows it. A system that
	# hangs or dies each time still fails, and its logs say where.
	for attempt in 1 2; do
		rc=0
		start=$(date +%s)
		# The prepared kernel trees (DKMS's, 2 GB each) stay out of the disk: booting needs none.
		[ ! -d "$dir/var/cache/rust-user-events" ] || mv "$dir/var/cache/rust-user-events" "$tmp/ktrees"
		size=$(($(du -sm "$dir" | cut -f1) + 600))
		rm -f "$img"
		mkfs.ext4 -q -F -L root -d "$dir" -E root_owner=0:0 "$img" "${size}M" >"$tmp/mkfs.log" 2>&1 || rc=$?
		[ ! -d "$tmp/ktrees" ] || mv "$tmp/ktrees" "$dir/var/cache/rust-user-events"
		[ "$rc" -eq 0 ] || { echo "RUE-BOOT mkfs failed: $(tail -n 2 "$tmp/mkfs.log")" >"$log"; return 1; }
		timeout --foreground "$boot_limit" qemu-system-x86_64 -machine q35 -accel tcg -cpu max -smp 2 -m 2048 \
			-kernel "$dir/boot/vmlinuz-$kernel" -initrd "$dir/boot/initrd.img-$kernel" \
			-drive "file=$img,if=virtio,format=raw" -nographic -no-reboot -net none \
			-append "root=/dev/vda rw console=ttyS0 panic=-1 systemd.show_status=0" \
			</dev/null >"$log" 2>&1 || rc=$?
		rm -f "$img"
		echo "# booted $kernel in $(($(date +%s) - start)) s (QEMU status $rc)"
		{ [ "$rc" -eq 124 ] || [ "$rc" -gt 128 ]; } && [ "$attempt" -eq 1 ] || break
		! grep -Eq "$kernel_reports" "$log" || break
		mv "$log" "$log.1"
		echo "# $(if [ "$rc" -eq 124 ]; then echo "the boot did not end in $boot_limit s"; else echo "QEMU died (status $rc)"; fi), the console's last words: $(last_words "$log.1") - booting again"
	done
	[ "$rc" -ne 124 ] || echo "RUE-BOOT hung: no power-off within $boot_limit s: $(last_words "$log")" >>"$log"
	[ "$rc" -le 128 ] || echo "RUE-BOOT qemu died (status $rc): $(last_words "$log")" >>"$log"
}

# report_of LOG: the report's lines in a console log, on one line; the log's last lines when it
# has none.
report_of() {
	local lines
	lines=$(grep '^RUE-BOOT' "$1" | tr -d '\r' | tr '\n' ' ' | cut -c1-400)
	[ -n "$lines" ] || lines="no report; the console's last words: $(last_words "$1")"
	echo "$lines"
}

# last_words LOG: the last lines of a console log, on one line.
last_words() {
	tail -n 4 "$1" | tr -d '\r' | tr '\n' ' ' | cut -c1-400
}

# booted LOG KERNEL OWNER DESCRIPTION: the boot in LOG ran KERNEL, and systemd-modules-load
# loaded the module OWNER's package installed for it (OWNER: a package, or dkms for DKMS's).
booted() {
	local log=$1 kernel=$2 owner=$3 want file
	want=/usr/lib/modules/$kernel/updates/rust_user_events.ko
	file=$(sed -n 's/^RUE-BOOT file \([^[:space:]]*\).*/\1/p' "$log" | head -n 1)
	grep -q "^RUE-BOOT kernel $kernel" "$log" && grep -q '^RUE-BOOT loaded yes' "$log" &&
		grep -q '^RUE-BOOT same-file yes' "$log" && grep -q '^RUE-BOOT by-modules-load yes' "$log" &&
		grep -q '^RUE-BOOT data yes' "$log" && grep -q '^RUE-BOOT unit active' "$log" &&
		grep -q '^RUE-BOOT end' "$log" &&
		! grep -q '^RUE-BOOT dmesg' "$log" &&
		if [ "$owner" = dkms ]; then
			case "$file" in "/usr/lib/modules/$kernel/updates/dkms/rust_user_events.ko"*) ;; *) false ;; esac
		else
			[ "$file" = "$want" ] && grep -q "^RUE-BOOT owner $owner" "$log"
		fi
	result $? "$4" "$(report_of "$log")"
}

# A system: the base with the report installed, ready for the README's commands (below).
new_system() {
	local dir=$1
	rm -rf "$dir"
	cp -a "$base" "$dir"
	install -D -m 0755 "$tmp/report/rue-boot-report" "$dir/usr/local/sbin/rue-boot-report"
	install -D -m 0644 "$tmp/report/rue-boot-report.service" "$dir/etc/systemd/system/rue-boot-report.service"
	ln -sf /etc/systemd/system/rue-boot-report.service \
		"$dir/etc/systemd/system/multi-user.target.wants/rue-boot-report.service"
	# No login prompt on the console the report writes to (a getty would hang it up).
	ln -sf /dev/null "$dir/etc/systemd/system/serial-getty@ttyS0.service"
	ln -sf /dev/null "$dir/etc/systemd/system/getty@tty1.service"
	mkdir -p "$dir/rue/repo" "$dir/rue/standin"
	cp "$tmp"/linux-*-amd64_"${old_version}"_amd64.deb "$dir/rue/standin/"
	# The README's commands run as a user types them on a trixie machine as installed, in the
	# system's chroot. What such a machine has that debootstrap's minbase has not: sudo, for
	# its administrator (root here), D-Bus (systemd-run needs it), its name in /etc/hosts
	# (sudo looks it up). What the user does besides typing them: answers apt's
	# question yes (APT::Get::Assume-Yes) and debconf's none, runs them from the home
	# directory, and runs those after the README's reboot in the kernel booted (in the chroot,
	# `uname -r` says the kernel the system boots next: uname_as). What the README leaves to
	# the reader: the repository's address (the system's copy, file:///rue/repo) and this
	# project's (the work tree's git repository: a clone has its commits, not uncommitted
	# changes).
	printf 'APT::Get::Assume-Yes "true";\n' >"$dir/etc/apt/apt.conf.d/90rue-readme-yes"
	in_system "$dir" sh -ec 'echo "debconf debconf/frontend select Noninteractive" | debconf-set-selections
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends sudo dbus'
	printf '127.0.0.1\tlocalhost\n127.0.1.1\t%s\n' "$(cat "$dir/etc/hostname")" >"$dir/etc/hosts"
}

# A case's system, on the old ABI with its module package: the old ABI's repository, Debian's
# kernel metapackage of the old version (a stand-in) and PACKAGES. With --readme, the module
# package is installed by the README's "From packages" commands.
system() {
	local dir=$1 readme=0
	shift
	if [ "${1:-}" = --readme ]; then
		readme=1
		shift
	fi
	new_system "$dir" || return 1
	cp -a "$out/old-repo/repo/." "$dir/rue/repo/"
	if [ "$readme" -eq 1 ]; then
		in_system "$dir" sh -ec "DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
			--no-install-recommends /rue/standin/linux-image-amd64_${old_version}_amd64.deb" || return 1
		uname_as "$dir" "$old"
		readme_run "$dir" "2a. From packages"
		local rc=$?
		uname_as "$dir"
		return "$rc"
	fi
	cp "$out/old-repo/repo/rust-user-events-archive-keyring.gpg" "$dir/usr/share/keyrings/"
	printf 'Types: deb\nURIs: file:/rue/repo\nSuites: trixie-rust-user-events\nComponents: main\nSigned-By: /usr/share/keyrings/rust-user-events-archive-keyring.gpg\n' \
		>"$dir/etc/apt/sources.list.d/rust-user-events.sources"
	in_system "$dir" sh -ec "apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
			/rue/standin/linux-image-amd64_${old_version}_amd64.deb rust-user-events-modules-amd64 $*"
}

# uname_as DIR KERNEL: `uname -r` says KERNEL in DIR's chroot; without KERNEL, the real uname.
uname_as() {
	if [ -n "${2:-}" ]; then
		printf '#!/bin/sh\n[ "$*" != -r ] || { echo %s; exit 0; }\nexec /usr/bin/uname "$@"\n' "$2" \
			>"$1/usr/local/bin/uname"
		chmod 0755 "$1/usr/local/bin/uname"
	else
		rm -f "$1/usr/local/bin/uname"
	fi
}

# readme_block HEADING [SED-ARGS...]: the README's commands under HEADING, its placeholders
# filled in, edited by SED-ARGS.
readme_block() {
	local heading=$1
	shift
	bash "$top/tools/testing/readme.sh" "$heading" |
		sed -e 's|https://apt.example.org/rue|file:///rue/repo|g' -e 's|REPOSITORY|/rue/src|g' "$@"
}

# readme_run DIR HEADING [SED-ARGS...]: runs them in DIR's chroot, from the home directory,
# stopping at the first that fails; its output goes to the caller's.
readme_run() {
	local dir=$1 heading=$2
	shift 2
	{ echo 'cd "$HOME"'; readme_block "$heading" "$@"; } >"$dir/rue/readme-run.sh" || return 1
	in_system "$dir" bash -ex /rue/readme-run.sh
}

# readme_after_boot DIR [uname]: the README's commands for the booted system, each block
# reporting its output and exit status on the console (RUE-README NAME ...): with uname,
# what follows its reboot first; then its check and its group setup; a service of the group
# (a dynamic user with the group as its supplementary group, as the README's unit line says)
# opens user_events_data for writing; last, its look at rust-user-events.service.
readme_after_boot() {
	local dir=$1
	mkdir -p "$dir/rue/readme"
	if [ "${2:-}" = uname ]; then
		readme_block "1. A Rust-enabled kernel" -e '1,/^sudo reboot/d' >"$dir/rue/readme/1-uname"
	fi
	readme_block "Check that it works" >"$dir/rue/readme/2-check"
	readme_block "Letting a non-root service write events" >"$dir/rue/readme/3-group"
	readme_block "Kernel updates" >"$dir/rue/readme/5-status"
	printf '%s\n' \
		'systemd-run --wait --pipe --quiet -p DynamicUser=yes -p SupplementaryGroups=user-events \' \
		"    sh -c ': 3<>/sys/kernel/tracing/user_events_data'" >"$dir/rue/readme/4-service"
	cat >"$dir/usr/local/sbin/rue-readme" <<'EOF'
#!/bin/sh
cd /root
for block in /rue/readme/*; do
	name=${block##*/}
	bash -e "$block" >/tmp/rue-readme.out 2>&1
	rc=$?
	sed "s|^|$name |" /tmp/rue-readme.out
	echo "$name exit $rc"
done
EOF
	chmod 0755 "$dir/usr/local/sbin/rue-readme"
}

# readme_booted LOG DESCRIPTION [KERNEL]: every README block of the boot in LOG exited 0 (and,
# with KERNEL, the first printed KERNEL); the group setup left user_events_data to user-events.
readme_booted() {
	local blocks=(2-check 3-group 4-service 5-status) b ok=0 lines
	# The console's lines end in CR LF.
	lines=$(tr -d '\r' <"$1" | grep '^RUE-README')
	[ -z "${3:-}" ] || blocks=(1-uname "${blocks[@]}")
	for b in "${blocks[@]}"; do
		grep -qx "RUE-README $b exit 0" <<<"$lines" || ok=1
	done
	[ -z "${3:-}" ] || grep -qx "RUE-README 1-uname $3" <<<"$lines" || ok=1
	result "$ok" "$2" "$(tr '\n' ' ' <<<"$lines" | cut -c1-600)"
}

# The project republished: its repository is now REPO (the new ABI's packages). REPO was made
# before the old snapshot, so apt's lists of the snapshot go too: apt keeps the newer of two
# Release files, and a real republish is the newer one.
republish() {
	rm -rf "$1/rue/repo" "$1"/var/lib/apt/lists/_rue_repo_*
	mkdir -p "$1/rue/repo"
	cp -a "$repo/." "$1/rue/repo/"
}

# The upgrade: Debian's linux-image-amd64 moves to the new ABI.
upgrade() {
	in_system "$1" sh -ec 'apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt upgrade -y -q -o APT::Sandbox::User=root'
}

# With the package: the repository has the new kernel's module when Debian's kernel arrives.
# Installed with the README's commands.
a=$out/with-package
system "$a" --readme >"$tmp/a-system.log" 2>&1
rc=$?
boot "$a" "$old" "$tmp/a-boot-old.log"
booted "$tmp/a-boot-old.log" "$old" "rust-user-events-modules-$old" \
	"installed by the README's commands, $old boots with systemd, and systemd-modules-load loads its packaged module (setup exit $rc: $(tail -n 2 "$tmp/a-system.log" | tr '\n' ' '))"
republish "$a"
upgrade "$a" >"$tmp/a-upgrade.log" 2>&1
rc=$?
[ "$rc" -eq 0 ] && [ -f "$a/boot/vmlinuz-$new" ] && [ -f "$a/boot/initrd.img-$new" ] &&
	[ -f "$a/usr/lib/modules/$new/updates/rust_user_events.ko" ]
result $? "apt upgrade moves linux-image-amd64 to $new and brings rust-user-events-modules-$new" \
	"exit $rc: $(tail -n 4 "$tmp/a-upgrade.log" | tr '\n' ' ')"
readme_after_boot "$a"
boot "$a" "$new" "$tmp/a-boot-new.log"
booted "$tmp/a-boot-new.log" "$new" "rust-user-events-modules-$new" \
	"rebooted into $new, systemd-modules-load loads the module of its package"
readme_booted "$tmp/a-boot-new.log" \
	"on $new with the packages, the README's check and group setup work, and a service of the group opens user_events_data"
rm -rf "$a/rue/readme" "$a/usr/local/sbin/rue-readme"
boot "$a" "$old" "$tmp/a-boot-back.log"
booted "$tmp/a-boot-back.log" "$old" "rust-user-events-modules-$old" \
	"booted back into $old, it loads its own module, still installed"
# A kernel without its module (the package removed here; the same as a new kernel before the
# repository has its module): the system boots without it, and rust-user-events.service fails,
# saying why.
in_system "$a" sh -ec "DEBIAN_FRONTEND=noninteractive apt-get purge -y -q rust-user-events-modules-$new" \
	>"$tmp/a-purge.log" 2>&1
rc=$?
boot "$a" "$new" "$tmp/a-boot-missing.log"
[ "$rc" -eq 0 ] && grep -q "^RUE-BOOT kernel $new" "$tmp/a-boot-missing.log" &&
	grep -q '^RUE-BOOT loaded no' "$tmp/a-boot-missing.log" &&
	grep -q '^RUE-BOOT unit failed' "$tmp/a-boot-missing.log" &&
	grep -q "^RUE-BOOT unit-log rust_user_events is not installed for $new" "$tmp/a-boot-missing.log" &&
	grep -q '^RUE-BOOT end' "$tmp/a-boot-missing.log" && ! grep -q '^RUE-BOOT dmesg' "$tmp/a-boot-missing.log"
result $? "without a module for $new, it boots, and rust-user-events.service fails, saying why" \
	"purge exit $rc: $(grep '^RUE-BOOT' "$tmp/a-boot-missing.log" | tr '\n' ' ' | cut -c1-400)"
rm -rf "$a"

# In the gap: Debian's kernel arrives before the project's package; DKMS builds for it.
b=$out/in-gap
system "$b" rust-user-events-dkms "/rue/standin/linux-headers-amd64_${old_version}_amd64.deb" \
	"linux-source=$old_version" \
	>"$tmp/b-system.log" 2>&1
rc=$?
[ "$rc" -eq 0 ] && ! in_system "$b" dkms status -m rust-user-events -k "$old" 2>/dev/null | grep -q ': installed'
result $? "rust-user-events-dkms installs beside the prebuilt package, and leaves $old to it" \
	"exit $rc: $(tail -n 4 "$tmp/b-system.log" | tr '\n' ' ')"
# The tree DKMS prepares for the new kernel (a few minutes of compiling) is the one make debian
# prepared for it in the trixie root, from the same packages: lent to the system, as a machine
# that had prepared it before would have it. A different key (other packages) prepares anew.
trixie_root=$(bash "$here/chroot.sh" --print-root)
# lend_trees DIR: the trixie root's prepared trees for the new kernel, copied into DIR.
lend_trees() {
	local tree
	for tree in "$trixie_root"/var/cache/rust-user-events/"$new"-*/; do
		[ -f "$tree/.rue-complete" ] || continue
		mkdir -p "$1/var/cache/rust-user-events"
		cp -a "${tree%/}" "$1/var/cache/rust-user-events/"
	done
}
lend_trees "$b"
upgrade "$b" >"$tmp/b-upgrade.log" 2>&1
rc=$?
[ "$rc" -eq 0 ] && [ -f "$b/boot/vmlinuz-$new" ] &&
	[ -n "$(find "$b/usr/lib/modules/$new/updates/dkms" -name 'rust_user_events.ko*' 2>/dev/null)" ] &&
	[ ! -e "$b/usr/lib/modules/$new/updates/rust_user_events.ko" ]
result $? "apt upgrade to $new without its package: DKMS builds the module for $new" \
	"exit $rc: $(grep -i 'error\|rust-user-events' "$tmp/b-upgrade.log" | tail -n 4 | tr '\n' ' ')"
boot "$b" "$new" "$tmp/b-boot-new.log"
booted "$tmp/b-boot-new.log" "$new" dkms "rebooted into $new, systemd-modules-load loads DKMS's module"
rm -rf "$b"

# From source, as the README says: the trixie system (on trixie-backports' previous kernel,
# with no module) takes the current backports kernel with the README's kernel commands, then
# installs the module with its source commands (sudo make install: DKMS builds it, from the
# tree lent as above), and boots the new kernel, where the rest of its commands run.
d=$out/from-source
new_system "$d" >"$tmp/d-system.log" 2>&1 &&
	readme_run "$d" "1. A Rust-enabled kernel" -e '/^sudo reboot/,$d' >"$tmp/d-kernel.log" 2>&1
rc=$?
[ "$rc" -eq 0 ] && [ -f "$d/boot/vmlinuz-$new" ] && [ -f "$d/boot/initrd.img-$new" ]
result $? "the README's kernel commands install $new from trixie-backports" \
	"exit $rc: $(tail -n 3 "$tmp/d-system.log" "$tmp/d-kernel.log" 2>/dev/null | tr '\n' ' ')"
lend_trees "$d"
uname_as "$d" "$new"
readme_run "$d" "2b. From source" >"$tmp/d-install.log" 2>&1
rc=$?
uname_as "$d"
[ "$rc" -eq 0 ] && [ -n "$(find "$d/usr/lib/modules/$new/updates/dkms" -name 'rust_user_events.ko*' 2>/dev/null)" ] &&
	grep -q 'in a chroot' "$tmp/d-install.log"
result $? "the README's source commands (git clone, sudo make install) build the module for $new with DKMS, and load nothing into the chroot's host" \
	"exit $rc: $(tail -n 3 "$tmp/d-install.log" | tr '\n' ' ')"
readme_after_boot "$d" uname
boot "$d" "$new" "$tmp/d-boot-new.log"
booted "$tmp/d-boot-new.log" "$new" dkms "rebooted into $new, systemd-modules-load loads the module make install built"
readme_booted "$tmp/d-boot-new.log" \
	"on $new from source, the README's commands after its reboot work: uname -r, its check and group setup, and a service of the group opens user_events_data" \
	"$new"
rm -rf "$d"

exit "$failed"
