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
# loads that kernel's own module. Two cases:
#   with the package: the project's repository already has the new kernel's
#     module package, and the upgrade brings it (rust-user-events-modules-amd64
#     follows the kernel);
#   in the gap: the repository does not have it yet (Debian uploaded first),
#     and rust-user-events-dkms, installed beside the prebuilt package, builds
#     the module for the new kernel during the upgrade.
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
plan 9
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
bash "$here/chroot.sh" --packaging --bind "$keys:/rue/keys" -- \
	env RUE_PKG_VERSION="$pkgver" \
	bash /rue/src/tools/debian/packages-build.sh "$(in_tree "$out/old-repo")" /rue/keys "$old_abi" \
	"$old_version" "amd64=/rue/src/build/debian/$old/rust_user_events.ko" >"$tmp/old-repo.log" 2>&1
rc=$?
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
# Loaded at boot by systemd-modules-load, the only thing that names it (modules-load.d).
[ "$(systemctl show -P Result systemd-modules-load.service)" = success ] &&
	grep -qx rust_user_events /usr/lib/modules-load.d/rust-user-events.conf &&
	say by-modules-load yes || say by-modules-load no
journalctl -b -q --no-pager -g rust_user_events | head -n 3 | sed 's/^/RUE-BOOT journal /'
[ -e /sys/kernel/tracing/user_events_data ] && say data yes || say data no
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
	local dir=$1 kernel=$2 log=$3 img=$tmp/disk.img size rc=0
	# The prepared kernel trees (DKMS's, 2 GB each) stay out of the disk: booting needs none.
	[ ! -d "$dir/var/cache/rust-user-events" ] || mv "$dir/var/cache/rust-user-events" "$tmp/ktrees"
	size=$(($(du -sm "$dir" | cut -f1) + 600))
	rm -f "$img"
	mkfs.ext4 -q -F -L root -d "$dir" -E root_owner=0:0 "$img" "${size}M" >"$tmp/mkfs.log" 2>&1 || rc=$?
	[ ! -d "$tmp/ktrees" ] || mv "$tmp/ktrees" "$dir/var/cache/rust-user-events"
	[ "$rc" -eq 0 ] || { echo "RUE-BOOT mkfs failed: $(tail -n 2 "$tmp/mkfs.log")" >"$log"; return 1; }
	timeout --foreground 900 qemu-system-x86_64 -machine q35 -accel tcg -cpu max -smp 2 -m 2048 \
		-kernel "$dir/boot/vmlinuz-$kernel" -initrd "$dir/boot/initrd.img-$kernel" \
		-drive "file=$img,if=virtio,format=raw" -nographic -no-reboot -net none \
		-append "root=/dev/vda rw console=ttyS0 panic=-1 systemd.show_status=0" </dev/null >"$log" 2>&1
	rm -f "$img"
}

# booted LOG KERNEL OWNER DESCRIPTION: the boot in LOG ran KERNEL, and systemd-modules-load
# loaded the module OWNER's package installed for it (OWNER: a package, or dkms for DKMS's).
booted() {
	local log=$1 kernel=$2 owner=$3 want file
	want=/usr/lib/modules/$kernel/updates/rust_user_events.ko
	file=$(sed -n 's/^RUE-BOOT file \([^[:space:]]*\).*/\1/p' "$log" | head -n 1)
	grep -q "^RUE-BOOT kernel $kernel" "$log" && grep -q '^RUE-BOOT loaded yes' "$log" &&
		grep -q '^RUE-BOOT same-file yes' "$log" && grep -q '^RUE-BOOT by-modules-load yes' "$log" &&
		grep -q '^RUE-BOOT data yes' "$log" && grep -q '^RUE-BOOT end' "$log" &&
		! grep -q '^RUE-BOOT dmesg' "$log" &&
		if [ "$owner" = dkms ]; then
			case "$file" in "/usr/lib/modules/$kernel/updates/dkms/rust_user_events.ko"*) ;; *) false ;; esac
		else
			[ "$file" = "$want" ] && grep -q "^RUE-BOOT owner $owner" "$log"
		fi
	result $? "$4" "$(grep '^RUE-BOOT' "$log" | tr '\n' ' ' | cut -c1-400)"
}

# A case's system: the base, the old ABI's repository, the module and the report installed.
system() {
	local dir=$1
	shift
	rm -rf "$dir"
	cp -a "$base" "$dir"
	install -D -m 0755 "$tmp/report/rue-boot-report" "$dir/usr/local/sbin/rue-boot-report"
	install -D -m 0644 "$tmp/report/rue-boot-report.service" "$dir/etc/systemd/system/rue-boot-report.service"
	ln -sf /etc/systemd/system/rue-boot-report.service \
		"$dir/etc/systemd/system/multi-user.target.wants/rue-boot-report.service"
	# No login prompt on the console the report writes to (a getty would hang it up).
	ln -sf /dev/null "$dir/etc/systemd/system/serial-getty@ttyS0.service"
	ln -sf /dev/null "$dir/etc/systemd/system/getty@tty1.service"
	cp "$out/old-repo/repo/rust-user-events-archive-keyring.gpg" "$dir/usr/share/keyrings/"
	mkdir -p "$dir/rue/repo" "$dir/rue/standin"
	cp -a "$out/old-repo/repo/." "$dir/rue/repo/"
	cp "$tmp"/linux-*-amd64_"${old_version}"_amd64.deb "$dir/rue/standin/"
	printf 'Types: deb\nURIs: file:/rue/repo\nSuites: trixie-backports\nComponents: main\nSigned-By: /usr/share/keyrings/rust-user-events-archive-keyring.gpg\n' \
		>"$dir/etc/apt/sources.list.d/rust-user-events.sources"
	in_system "$dir" sh -ec "apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
			/rue/standin/linux-image-amd64_${old_version}_amd64.deb rust-user-events-modules-amd64 $*"
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
a=$out/with-package
system "$a" >"$tmp/a-system.log" 2>&1
rc=$?
boot "$a" "$old" "$tmp/a-boot-old.log"
booted "$tmp/a-boot-old.log" "$old" "rust-user-events-modules-$old" \
	"$old boots with systemd, and systemd-modules-load loads its packaged module (setup exit $rc)"
republish "$a"
upgrade "$a" >"$tmp/a-upgrade.log" 2>&1
rc=$?
[ "$rc" -eq 0 ] && [ -f "$a/boot/vmlinuz-$new" ] && [ -f "$a/boot/initrd.img-$new" ] &&
	[ -f "$a/usr/lib/modules/$new/updates/rust_user_events.ko" ]
result $? "apt upgrade moves linux-image-amd64 to $new and brings rust-user-events-modules-$new" \
	"exit $rc: $(tail -n 4 "$tmp/a-upgrade.log" | tr '\n' ' ')"
boot "$a" "$new" "$tmp/a-boot-new.log"
booted "$tmp/a-boot-new.log" "$new" "rust-user-events-modules-$new" \
	"rebooted into $new, systemd-modules-load loads the module of its package"
boot "$a" "$old" "$tmp/a-boot-back.log"
booted "$tmp/a-boot-back.log" "$old" "rust-user-events-modules-$old" \
	"booted back into $old, it loads its own module, still installed"

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
for tree in "$trixie_root"/var/cache/rust-user-events/"$new"-*/; do
	[ -f "$tree/.rue-complete" ] || continue
	mkdir -p "$b/var/cache/rust-user-events"
	cp -a "${tree%/}" "$b/var/cache/rust-user-events/"
done
upgrade "$b" >"$tmp/b-upgrade.log" 2>&1
rc=$?
[ "$rc" -eq 0 ] && [ -f "$b/boot/vmlinuz-$new" ] &&
	[ -n "$(find "$b/usr/lib/modules/$new/updates/dkms" -name 'rust_user_events.ko*' 2>/dev/null)" ] &&
	[ ! -e "$b/usr/lib/modules/$new/updates/rust_user_events.ko" ]
result $? "apt upgrade to $new without its package: DKMS builds the module for $new" \
	"exit $rc: $(grep -i 'error\|rust-user-events' "$tmp/b-upgrade.log" | tail -n 4 | tr '\n' ' ')"
boot "$b" "$new" "$tmp/b-boot-new.log"
booted "$tmp/b-boot-new.log" "$new" dkms "rebooted into $new, systemd-modules-load loads DKMS's module"

exit "$failed"
