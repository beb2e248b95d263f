#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# `sudo make install`: on Debian, builds rust_user_events.ko for the running
# kernel with DKMS (so every kernel update rebuilds it), loads it, and has it
# loaded at every boot through /etc/modules-load.d, before services start.
# Installs the packages the build needs: the kernel's headers and source, and
# the compilers the kernel was built with (toolchain-check.sh).
#
# Usage: install.sh [--kernel KERNELRELEASE] [--no-load]
#        install.sh --remove | --purge
#   --kernel   build for that installed kernel instead of the running one
#   --no-load  install only; do not load the module now (it is loaded now
#              only into the running kernel)
#   --remove   unload, uninstall from DKMS, remove the boot entry
#   --purge    the same, and delete the prepared kernel trees as well
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
name=rust-user-events
version=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$top/dkms.conf")
module=rust_user_events
boot_conf=/etc/modules-load.d/$name.conf
# The unit that fails, saying why, when the module is not loaded after a boot (as the packages').
unit=/etc/systemd/system/$name.service
unit_link=/etc/systemd/system/multi-user.target.wants/$name.service
check=/usr/local/lib/$name/$name-check
krel=$(uname -r)
load=1
action=install

fail() { printf 'rust-user-events: %s\n' "$@" >&2; exit 1; }
log() { printf 'install: %s\n' "$*"; }

while [ $# -gt 0 ]; do
	case "$1" in
	--kernel) krel=$2; shift 2 ;;
	--no-load) load=0; shift ;;
	--remove) action=remove; shift ;;
	--purge) action=purge; shift ;;
	*) fail "unknown option $1 (see the top of $0)" ;;
	esac
done
[ "$(id -u)" -eq 0 ] || fail "run as root: sudo make install"
[ -r /etc/debian_version ] && command -v apt-get >/dev/null 2>&1 ||
	fail "this installer is for Debian; Documentation/install.md says how to build elsewhere."
# The packages and this installer share DKMS's $name and /usr/src/$name-$version: one of
# them only. (rust-user-events-dkms refuses to install over this installer's tree as well.)
packages=$({ dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' "$name-*" 2>/dev/null || true; } |
	awk 'substr($1, 2, 1) !~ /[nc]/ { print $2 }' | tr '\n' ' ')
[ -z "$packages" ] ||
	fail "the $name packages are installed (${packages% }): they provide the module, and DKMS builds" \
		"for kernels without a prebuilt one with $name-dkms. make install would share their DKMS" \
		"entry and files; use apt, or remove the packages first (apt purge $name-common)."

if [ "$action" != install ]; then
	if grep -q "^$module " /proc/modules; then
		modprobe -r "$module" || fail "cannot unload $module (in use?); close its users and try again"
	fi
	if command -v dkms >/dev/null 2>&1 && dkms status -m "$name" -v "$version" | grep -q .; then
		dkms remove -m "$name" -v "$version" --all
	fi
	rm -rf "$boot_conf" "$unit_link" "$unit" "$(dirname "$check")" "/usr/src/$name-$version"
	if [ "$action" = purge ]; then
		rm -rf /var/cache/rust-user-events
	elif [ -d /var/cache/rust-user-events ]; then
		log "kept the prepared kernel trees in /var/cache/rust-user-events (make purge deletes them)"
	fi
	log "removed"
	exit 0
fi

export DEBIAN_FRONTEND=noninteractive
apt_install() { apt-get install -y -q --no-install-recommends "$@"; }

# The kernel first: refuse one the module cannot serve before installing anything.
config=/usr/lib/modules/$krel/config
[ -r "$config" ] || config=/boot/config-$krel
[ -r "$config" ] || fail "kernel $krel is not installed here (no $config)"
bash "$here/toolchain-check.sh" --kernel-only "$config"

log "installing the build dependencies of $krel"
apt_install "linux-headers-$krel" ||
	fail "cannot install linux-headers-$krel; enable the suite the kernel came from (e.g. trixie-backports)"
# A machine that follows its flavour's kernels (linux-image-amd64) gets their
# headers too, or DKMS could not rebuild for the next kernel.
flavour=${krel#*+*-}
if dpkg-query -W -f='${Status}' "linux-image-$flavour" 2>/dev/null | grep -q 'ok installed'; then
	apt_install "linux-headers-$flavour=$(dpkg-query -W -f='${Version}' "linux-image-$flavour")"
fi
kversion=$(dpkg-query -W -f='${Version}' "linux-headers-$krel")
series=$(echo "$krel" | sed -n 's/^\([0-9]*\.[0-9]*\).*/\1/p')
cc=$(sed -n 's/^CONFIG_CC_VERSION_TEXT="\([^ ]*\) .*/\1/p' "$config")
# libc6-dev: the kernel's configuration records that its compiler can link (CC_CAN_LINK).
# arm64's compat vDSO is built by the 32-bit Arm compiler when the tree is prepared.
compat=()
! grep -qx 'CONFIG_COMPAT_VDSO=y' "$config" || ! grep -qx 'CONFIG_ARM64=y' "$config" ||
	compat=(gcc-arm-linux-gnueabihf)
apt_install "linux-source-$series=$kversion" "${cc#*-linux-gnu-}" libc6-dev ${compat[@]+"${compat[@]}"} \
	rustc rust-src bindgen dwarves dkms make bc flex bison libelf-dev libssl-dev python3 cpio kmod \
	xz-utils openssl
PATH=/usr/bin:/bin:/usr/sbin:/sbin:$PATH bash "$here/toolchain-check.sh" \
	"/usr/src/linux-headers-$krel/.config" >/dev/null

log "adding $name $version to DKMS"
src=/usr/src/$name-$version
if dkms status -m "$name" -v "$version" | grep -q .; then
	dkms remove -m "$name" -v "$version" --all
fi
rm -rf "$src"
bash "$here/stage-sources.sh" "$src"
dkms add -m "$name" -v "$version"
log "building for $krel (the first build prepares a kernel tree: several minutes)"
if ! dkms install -m "$name" -v "$version" -k "$krel"; then
	tail -n 20 "/var/lib/dkms/$name/$version/build/make.log" >&2 2>/dev/null || true
	fail "the DKMS build failed (above; the whole log is /var/lib/dkms/$name/$version/build/make.log)"
fi

mkdir -p "$(dirname "$boot_conf")"
printf '# rust-user-events: the user_events tracing ABI (installed by make install)\n%s\n' \
	"$module" >"$boot_conf"
log "$boot_conf loads $module at every boot"
install -D -m 0755 "$here/boot/$name-check" "$check"
sed "s|^ExecStart=.*|ExecStart=$check|" "$here/boot/$name.service" >"$unit"
mkdir -p "$(dirname "$unit_link")"
ln -sf "$unit" "$unit_link"
log "$name.service checks after every boot that it is loaded (systemctl status $name)"

if [ "$load" -eq 1 ] && [ "$krel" = "$(uname -r)" ] && ischroot; then
	# An image build or a system set up from outside: the kernel running is the host's.
	log "in a chroot: not loaded now; $boot_conf loads it when the system boots"
elif [ "$load" -eq 1 ] && [ "$krel" = "$(uname -r)" ]; then
	# A module loaded before (an earlier install) gives way to the new one.
	if grep -q "^$module " /proc/modules; then
		modprobe -r "$module" || fail "cannot unload the $module already loaded (in use?); close its users and try again"
	fi
	if ! modprobe "$module"; then
		lockdown=$(cat /sys/kernel/security/lockdown 2>/dev/null || true)
		case "$lockdown" in
		*"[integrity]"* | *"[confidentiality]"*)
			fail "the kernel refused the module: Secure Boot is on and DKMS's key is not enrolled." \
				"Enroll it once with: mokutil --import /var/lib/dkms/mok.pub, reboot and confirm" \
				"in the MOK manager, then: modprobe $module (Documentation/install.md)." ;;
		esac
		fail "modprobe $module failed; see dmesg"
	fi
	log "loaded: $(ls /sys/kernel/tracing/user_events_data 2>/dev/null || echo "$module")"
fi
log "done"
