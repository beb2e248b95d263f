#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Makes the Debian packages and their apt repository (tools/debian/packages.sh
# runs it in chroot.sh's trixie root, with the packaging tools). Two source
# packages, in Debian's conventions (debhelper, dh-dkms):
#   rust-user-events (version PKGVER-1, Architecture: all; PKGVER below)
#     rust-user-events-archive-keyring   the key apt checks the repository with,
#                                 so that a new key reaches every machine
#     rust-user-events-common     the boot entry (/usr/lib/modules-load.d) and
#                                 a commented /etc/modprobe.d file, shared by
#                                 every kernel's package
#     rust-user-events-dkms       the sources, built by DKMS for a kernel with
#                                 no prebuilt package (installable beside
#                                 them: dkms.conf skips a kernel that has one)
#     rust-user-events-ueficert   the certificate of the key the prebuilt
#                                 modules are signed with, for MOK enrolment
#   rust-user-events-modules (version PKGVER+KERNEL_VERSION)
#     rust-user-events-modules-ABI-FLAVOUR   the signed module for
#                                 linux-image-ABI-FLAVOUR, built against its
#                                 KERNEL_VERSION upload (Built-Using)
#     rust-user-events-modules-FLAVOUR       depends on the current ABI's,
#                                 as linux-image-FLAVOUR does on its image, and
#                                 on that linux-image-FLAVOUR: it follows the
#                                 kernel the machine tracks, and never brings a
#                                 kernel the machine does not track
# Both source packages are made too (.dsc, signed with the repository's key,
# and their tarballs), so that what was shipped can be rebuilt from them.
# Every package must pass lintian without an error. Then the repository:
# OUT/repo/pool/main/ (the .deb and source files), OUT/repo/dists/SUITE/
# {Release,InRelease,Release.gpg}, main/binary-{amd64,arm64}/Packages,
# main/source/Sources, and the key apt checks it with,
# OUT/repo/rust-user-events-archive-keyring.gpg.
#
# KEYS holds the signing keys (made on first use; a distributor puts its own
# there, Documentation/install.md): module.key and module.der (the module
# signing key, PEM, and its X.509 certificate, DER) and gnupg/ (a GnuPG home
# whose first secret key signs the repository).
#
# Usage (inside the root):
#   packages-build.sh OUT KEYS ABI KERNEL_VERSION FLAVOUR=KO...
#     OUT is emptied first. KO is the module built for kernel ABI-FLAVOUR.
#     RUE_PKG_VERSION, SOURCE_DATE_EPOCH: below. RUE_MAINTAINER and
#     RUE_REPO_SUITE: the packages' Maintainer and the repository's suite.
#     RUE_REPO_EXTRA: more .deb files for the repository's pool (the package
#     test's stand-in for a newer kernel), not checked by lintian.
#     RUE_SIGN_PIN_FILE: a file whose first line is the module key's
#     passphrase (packages.sh writes it from KBUILD_SIGN_PIN, the variable
#     the kernel's sign-file reads): the key is made encrypted with it, and
#     an encrypted key is refused without it. The passphrase itself is never
#     on a command line.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
out=$1 keys=$2 abi=$3 kversion=$4
shift 4
# The sources' version (dkms.conf: DKMS's and /usr/src's), and the packages'
# one: RUE_PKG_VERSION (packages.sh: the sources' version and the commit's
# date, so that a build of other sources is another version) or that.
srcver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$top/dkms.conf")
pkgver=${RUE_PKG_VERSION:-$srcver}
# The repository's own suite and codename: not Debian's (trixie-backports), whose
# name in a pin or an `apt -t` would then also select these packages.
suite=${RUE_REPO_SUITE:-trixie-rust-user-events}
maintainer=${RUE_MAINTAINER:-rust-user-events developers <rust-user-events@users.noreply.github.com>}
series=$(echo "$abi" | sed -n 's/^\([0-9]*\.[0-9]*\).*/\1/p')
cert_path=/usr/share/rust-user-events/rust-user-events-signing.der
# SOURCE_DATE_EPOCH (packages.sh: the commit's time) dates the changelog, and
# dpkg clamps the packages' file times to it.
date=$(date -R ${SOURCE_DATE_EPOCH:+-d "@$SOURCE_DATE_EPOCH"})
export DEBEMAIL=${maintainer##*<} DEBFULLNAME=${maintainer%% <*}
DEBEMAIL=${DEBEMAIL%>}
# The headers of any installed kernel have Debian's build of the kernel's
# sign-file (linux-kbuild), as DKMS uses it.
sign_file=
for f in /usr/src/linux-headers-*-"$(dpkg --print-architecture)"/scripts/sign-file; do
	[ -x "$f" ] && sign_file=$f && break
done
[ -n "$sign_file" ] || { echo "packages: no scripts/sign-file in the installed headers (/usr/src/linux-headers-*)" >&2; exit 1; }

log() { printf 'packages: %s\n' "$*" >&2; }

# The keys, once. The certificate's extended key usage names, beside
# codeSigning, the "module signing only" OID 1.3.6.1.4.1.2312.16.1.2: shim then
# never trusts the enrolled key for a bootloader or a kernel, only the kernel
# does, for modules (as Ubuntu's MOK). The repository key expires after three
# years; Documentation/install.md says how to extend it.
mkdir -p "$keys"
chmod 0700 "$keys"
pin_file=${RUE_SIGN_PIN_FILE:-}
if [ -n "$pin_file" ]; then
	[ -s "$pin_file" ] || { echo "packages: RUE_SIGN_PIN_FILE: no passphrase in $pin_file" >&2; exit 1; }
	# sign-file reads the passphrase from the environment (scripts/sign-file.c), as the
	# kernel's own build signs with it.
	KBUILD_SIGN_PIN=$(head -n 1 "$pin_file")
	export KBUILD_SIGN_PIN
	encrypt=(-passout "file:$pin_file")
else
	encrypt=(-noenc)
fi
if [ ! -f "$keys/module.key" ]; then
	log "making a module signing key in $keys (first run${pin_file:+, encrypted with the passphrase})"
	openssl req -new -x509 "${encrypt[@]}" -days 36500 -sha256 -newkey rsa:3072 -batch \
		-subj "/CN=rust-user-events module signing key/" \
		-addext basicConstraints=critical,CA:FALSE -addext keyUsage=digitalSignature \
		-addext extendedKeyUsage=codeSigning,1.3.6.1.4.1.2312.16.1.2 \
		-keyout "$keys/module.key" -outform DER -out "$keys/module.der" 2>/dev/null
fi
if grep -q '^-----BEGIN ENCRYPTED PRIVATE KEY-----' "$keys/module.key" && [ -z "$pin_file" ]; then
	echo "packages: $keys/module.key has a passphrase: run make packages with KBUILD_SIGN_PIN set to it" >&2
	exit 1
fi
export GNUPGHOME=$keys/gnupg
if [ ! -d "$GNUPGHOME" ]; then
	log "making a repository signing key in $GNUPGHOME (first run)"
	mkdir -m 0700 "$GNUPGHOME"
	gpg --batch --quiet --passphrase '' --quick-gen-key \
		"rust-user-events archive signing key <$DEBEMAIL>" rsa3072 sign 3y
fi

work=$(mktemp -d)
# gpg starts an agent, whose socket is in GNUPGHOME: stopped on the way out.
trap 'gpgconf --kill all 2>/dev/null; rm -rf "$work"' EXIT
rm -rf "$out"
mkdir -p "$out"
# The first secret key signs the repository. apt checks it with every public key of the GnuPG
# home (Signed-By): rust-user-events-archive-keyring holds them, and a copy beside the repository
# is a machine's first download. A new key imported after the old one thus reaches the machines
# before it signs (Documentation/install.md).
fpr=$(gpg --batch --with-colons --list-secret-keys | awk -F: '$1 == "fpr" { print $10; exit }')
[ -n "$fpr" ] || { echo "packages: no secret key in $GNUPGHOME" >&2; exit 1; }
archive_key=$work/rust-user-events-archive-keyring.gpg
gpg --batch --yes --quiet --export -o "$archive_key"
# rust-user-events-archive-keyring's version comes from the keys, not the sources: the time of
# the newest signature on them (a new key, or an extended one, signs itself anew), so that
# make packages run again after a key changed gives the keyring a later version, on any commit.
newest=$(gpg --batch --with-colons --list-sigs | awk -F: '$1 == "sig" && $6 > m { m = $6 } END { print m + 0 }')
[ "$newest" -gt 0 ] || { echo "packages: no signature on the keys in $GNUPGHOME" >&2; exit 1; }
keyring_version=$(TZ=UTC date -d "@$newest" +%Y.%m.%d.%H%M%S)

# changelog SOURCE VERSION: a one-entry debian/changelog.
changelog() {
	cat <<EOF
$1 ($2) $suite; urgency=medium

  * Built by tools/debian/packages.sh (make packages).

 -- $maintainer  $date
EOF
}

copyright() {
	cat <<EOF
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: rust-user-events
Source: the rust-user-events git repository this package was built from (make packages)

Files: *
Copyright: 2025-2026 rust-user-events developers
License: GPL-2.0-only
 This program is free software; you can redistribute it and/or modify it
 under the terms of the GNU General Public License version 2 as published by
 the Free Software Foundation.
 .
 On Debian systems, the complete text of the GNU General Public License
 version 2 can be found in /usr/share/common-licenses/GPL-2.
EOF
}

# The prebuilt modules are signed and must stay byte for byte as signed:
# nothing is built, and nothing strips them.
rules() {
	printf '#!/usr/bin/make -f\n%%:\n\tdh $@\n\n'
	printf 'override_dh_auto_configure override_dh_auto_build override_dh_auto_test override_dh_auto_install override_dh_auto_clean override_dh_strip override_dh_dwz:\n'
}

# source_dir NAME VERSION: a source package's directory with its common files.
source_dir() {
	local d="$work/$1"
	mkdir -p "$d/debian/source"
	changelog "$1" "$2" >"$d/debian/changelog"
	copyright >"$d/debian/copyright"
	rules >"$d/debian/rules"
	chmod 0755 "$d/debian/rules"
	echo '3.0 (quilt)' >"$d/debian/source/format"
	echo "$d"
}

# source_package DIR: DIR's source package, 3.0 (quilt), into $work/srcs: the upstream tarball
# holds all of DIR but debian/ (names sorted, times, owners and modes fixed, xz on one thread,
# so that the same inputs give the same tarball), then dpkg-source. Called before any build, which leaves its own files
# in debian/.
source_package() {
	local d=$1 name version upstream
	name=$(basename "$d")
	version=$(dpkg-parsechangelog -l "$d/debian/changelog" -S Version)
	upstream=${version%-*}
	mkdir -p "$work/srcs"
	tar -C "$work" --sort=name --mtime="@${SOURCE_DATE_EPOCH:-0}" --owner=0 --group=0 --numeric-owner \
		--mode=go-w,a+rX --exclude="$name/debian" -cf - "$name" | xz -9 -T1 >"$work/${name}_$upstream.orig.tar.xz"
	(cd "$work" && dpkg-source -b "$name" >"$work/source.log" 2>&1) ||
		{ tail -20 "$work/source.log" >&2; exit 1; }
	mv "$work/${name}_$upstream.orig.tar.xz" "$work/${name}_$version.dsc" "$work/${name}_$version.debian.tar.xz" \
		"$work/srcs/"
}

# build DIR DPKG-BUILDPACKAGE-ARGS...: binary packages into $work/debs.
build() {
	local d=$1
	shift
	mkdir -p "$work/debs"
	(cd "$d" && dpkg-buildpackage --no-sign -d "$@" >"$work/build.log" 2>&1) ||
		{ tail -40 "$work/build.log" >&2; exit 1; }
	mv "$d"/../*.deb "$work/debs/"
	rm -f "$d"/../*.buildinfo "$d"/../*.changes
}

description_tail=" user_events lets a program define trace events and emit them into ftrace,
 perf and eBPF without uprobes (OpenTelemetry's user_events exporters, the
 tracepoint and eventheader libraries, .NET EventPipe). Debian's kernels
 leave the kernel's own implementation out; rust_user_events.ko brings the
 same ABI as a loadable module written in Rust."

# rust-user-events: what every kernel shares.
log "rust-user-events $pkgver-1: archive-keyring, common, dkms, ueficert"
d=$(source_dir rust-user-events "$pkgver-1")
cat >"$d/debian/control" <<EOF
Source: rust-user-events
Section: kernel
Priority: optional
Maintainer: $maintainer
Build-Depends: debhelper-compat (= 13), dh-sequence-dkms
Standards-Version: 4.7.0
Rules-Requires-Root: no

Package: rust-user-events-archive-keyring
Architecture: all
Multi-Arch: foreign
Depends: \${misc:Depends}
Description: Linux user_events tracing ABI module - archive key
$description_tail
 .
 This package installs the OpenPGP key the rust-user-events apt repository
 is signed with, as /usr/share/keyrings/rust-user-events-archive-keyring.gpg,
 the file the repository's apt source names (Signed-By), so that a new key
 reaches the machine with an upgrade before the repository changes to it.

Package: rust-user-events-common
Architecture: all
Depends: \${misc:Depends}, kmod
Recommends: rust-user-events-archive-keyring
Description: Linux user_events tracing ABI module - boot configuration
$description_tail
 .
 This package loads rust_user_events at boot (modules-load.d) and holds
 its module options (/etc/modprobe.d/rust-user-events-common.conf). The
 module itself comes from a rust-user-events-modules-* package or from
 rust-user-events-dkms.

Package: rust-user-events-dkms
Architecture: all
Depends: \${misc:Depends}, rust-user-events-common (= \${binary:Version}),
 dkms (>= 3), linux-source (>= 7.2~) | linux-source-$series, gcc-14 | gcc-16, libc6-dev, rustc, rust-src,
 bindgen, dwarves, make, bc, flex, bison, libelf-dev, libssl-dev, python3,
 cpio, kmod, xz-utils, openssl
Description: Linux user_events tracing ABI module - DKMS source
$description_tail
 .
 This package builds the module with DKMS for every installed 7.2 or 7.3
 kernel that has its headers, by the toolchain the kernel was built with,
 and refuses kernels it cannot serve, saying why. It skips a kernel whose
 prebuilt rust-user-events-modules-KERNEL package is installed, so it can
 be installed beside them as the fallback for the kernels they do not
 cover yet.

Package: rust-user-events-ueficert
Architecture: all
Depends: \${misc:Depends}
Suggests: mokutil
Description: Linux user_events tracing ABI module - Secure Boot certificate
$description_tail
 .
 This package installs the certificate of the key the prebuilt modules are
 signed with, in /usr/share/rust-user-events/. With Secure Boot on, enroll
 it once with mokutil --import; the package says so when it is installed
 on such a machine.
EOF
mkdir -p "$d/keyring"
cp "$archive_key" "$d/keyring/"
printf 'keyring/rust-user-events-archive-keyring.gpg usr/share/keyrings/\n' \
	>"$d/debian/rust-user-events-archive-keyring.install"
printf '\noverride_dh_gencontrol:\n\tdh_gencontrol -prust-user-events-archive-keyring -- -v%s\n\tdh_gencontrol --remaining-packages\n' \
	"$keyring_version" >>"$d/debian/rules"
mkdir -p "$d/boot"
printf '# rust-user-events-common: load rust_user_events at boot (systemd-modules-load)\nrust_user_events\n' \
	>"$d/boot/rust-user-events.conf"
# And the unit that fails, saying why, when the module is not loaded after boot (enabled, not
# started by the package: it checks a boot).
cp "$here/boot/rust-user-events-check" "$here/boot/rust-user-events.service" "$d/boot/"
printf '%s\n' 'boot/rust-user-events.conf usr/lib/modules-load.d/' \
	'boot/rust-user-events-check usr/lib/rust-user-events/' \
	'boot/rust-user-events.service usr/lib/systemd/system/' >"$d/debian/rust-user-events-common.install"
printf '\noverride_dh_installsystemd:\n\tdh_installsystemd --no-start\n' >>"$d/debian/rules"
cat >"$d/debian/rust-user-events-common.modprobe" <<'EOF'
# rust_user_events' options (modinfo rust_user_events):
#
# group=GID  members of this group may read and write
#            /sys/kernel/tracing/user_events_data and read user_events_status
#            (default -1: root only, as the kernel's own user_events).
#            See /usr/share/doc/rust-user-events-common/README.Debian.
#options rust_user_events group=GID
#
# Not to load it at boot, while keeping it installed:
#blacklist rust_user_events
EOF
cat >"$d/debian/rust-user-events-common.README.Debian" <<'EOF'
rust-user-events for Debian
===========================

rust_user_events.ko is loaded at boot by /usr/lib/modules-load.d/rust-user-events.conf
(systemd-modules-load); `modprobe rust_user_events` loads it now. An
/etc/modules-load.d/rust-user-events.conf, if present, replaces that file.

After each boot, rust-user-events.service checks that it is loaded: when it is
not (no module for this kernel yet, a module built for another upload of it, a
Secure Boot key not enrolled), the unit fails and its log says why and what to
do (`systemctl status rust-user-events`). Watch it like any failed unit.

Its option `group=` (in /etc/modprobe.d/rust-user-events-common.conf) lets a
group's members use user_events without root.

The module comes from one of:
  rust-user-events-modules-FLAVOUR  prebuilt and signed, for Debian's kernel
                                    flavour FLAVOUR (amd64, cloud-amd64, ...)
  rust-user-events-dkms             built by DKMS for the 7.2 and 7.3 kernels
                                    that have no prebuilt package
EOF
# The DKMS package: the staged sources at /usr/src/rust-user-events-SRCVER,
# with dh-dkms's maintainer scripts (add, build and install for the kernels
# with headers; remove on removal).
mkdir -p "$d/dkms-src"
bash "$here/stage-sources.sh" "$d/dkms-src/rust-user-events-$srcver"
printf 'dkms-src/rust-user-events-%s usr/src/\n' "$srcver" >"$d/debian/rust-user-events-dkms.install"
printf 'dkms-src/rust-user-events-%s/dkms.conf\n' "$srcver" >"$d/debian/rust-user-events-dkms.dkms"
# What DKMS's builds leave besides the module: the kernel trees prepare-kernel.sh
# prepared, /var/cache/rust-user-events/KERNELRELEASE-KEY (some 2 GB each). A
# removed kernel's goes with it (a kernel postrm.d hook, run by the image's
# postrm); purging the package removes them all.
mkdir -p "$d/kernel"
cat >"$d/kernel/rust-user-events-dkms" <<'HOOK'
#!/bin/sh
# rust-user-events-dkms: the module build tree prepared for a kernel goes when the kernel is
# removed. Called by the kernel image's postrm with the kernel's release, for every action of
# its postrm (in DEB_MAINT_PARAMS; unset when called otherwise): only a remove or purge
# removes the tree, as initramfs-tools' hook decides.
set -e

case "${DEB_MAINT_PARAMS:-remove}" in
*remove* | *purge*) ;;
*) exit 0 ;;
esac
krel=${1:-}
[ -n "$krel" ] || exit 0
for d in /var/cache/rust-user-events/"$krel"-*; do
	[ -d "$d" ] || continue
	# KERNELRELEASE-KEY, KEY in hex: not another kernel's whose release starts with this
	# one's (7.3.4+deb13-arm64-16k-KEY for 7.3.4+deb13-arm64).
	case "${d#/var/cache/rust-user-events/"$krel"-}" in
	"" | *[!0-9a-f]*) continue ;;
	esac
	rm -rf "$d"
done
exit 0
HOOK
printf 'kernel/rust-user-events-dkms etc/kernel/postrm.d/\n' >>"$d/debian/rust-user-events-dkms.install"
printf '\noverride_dh_fixperms:\n\tdh_fixperms\n\tchmod 0755 debian/rust-user-events-dkms/etc/kernel/postrm.d/rust-user-events-dkms\n' \
	>>"$d/debian/rules"
cat >"$d/debian/rust-user-events-dkms.postrm" <<'POSTRM'
#!/bin/sh
set -e

if [ "$1" = purge ]; then
	rm -rf /var/cache/rust-user-events
fi

#DEBHELPER#
POSTRM
# make install's DKMS entry has the same name and path: refuse to install over it.
cat >"$d/debian/rust-user-events-dkms.preinst" <<PREINST
#!/bin/sh
set -e

src=/usr/src/rust-user-events-$srcver
if [ "\$1" = install ] && [ -e "\$src" ] && ! dpkg-query -S "\$src" >/dev/null 2>&1; then
	echo "rust-user-events-dkms: \$src is make install's (tools/debian/install.sh), not a package's:" >&2
	echo "rust-user-events-dkms: run make uninstall in the source tree first" >&2
	exit 1
fi

#DEBHELPER#
PREINST
# The certificate, and the note on MOK enrolment: at every configure (install,
# upgrade, reinstall, dpkg-reconfigure) on a machine booted with Secure Boot on
# where the key is not enrolled yet; mokutil tells both. Without mokutil, the
# firmware's SecureBoot variable tells whether Secure Boot is on (the byte after
# its 4 attribute bytes), and the note says to install mokutil first.
mkdir -p "$d/cert"
cp "$keys/module.der" "$d/cert/rust-user-events-signing.der"
printf 'cert/rust-user-events-signing.der usr/share/rust-user-events/\n' >"$d/debian/rust-user-events-ueficert.install"
cat >"$d/debian/rust-user-events-ueficert.postinst" <<EOF
#!/bin/sh
set -e

cert=$cert_path
efivar=/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c

# note [FIRST-STEP]: the enrolment, after FIRST-STEP if any.
note() {
	cat <<NOTE
rust-user-events: Secure Boot is on, and the key rust_user_events.ko is signed
with is not enrolled, so the kernel will refuse the module. Enroll it once:
\$1    sudo mokutil --import \$cert
(it asks for a one-time password), reboot, and choose "Enroll MOK" in the blue
MokManager screen, entering that password. Without a console at boot (a cloud
VM), see /usr/share/doc/rust-user-events-ueficert/README.Debian.
NOTE
}

if [ "\$1" = configure ]; then
	if command -v mokutil >/dev/null 2>&1; then
		if mokutil --sb-state 2>/dev/null | grep -q 'SecureBoot enabled' &&
			! mokutil --test-key "\$cert" 2>/dev/null | grep -q 'is already enrolled'; then
			note ""
		fi
	elif [ -r "\$efivar" ] && [ "\$(od -An -tu1 -j4 -N1 "\$efivar" 2>/dev/null | tr -d ' ')" = 1 ]; then
		note "(unless it is already: mokutil is not installed to tell)
    sudo apt install mokutil
"
	fi
fi

#DEBHELPER#
EOF
cat >"$d/debian/rust-user-events-ueficert.README.Debian" <<EOF
rust-user-events-ueficert
=========================

$cert_path is the certificate of the key the prebuilt
rust_user_events.ko modules (rust-user-events-modules-*) are signed with. With
Secure Boot on, Debian's kernel loads them only once the key is enrolled as a
Machine Owner Key:

    sudo mokutil --import $cert_path
    sudo reboot      # then "Enroll MOK" in MokManager

mokutil --test-key $cert_path says whether it is enrolled. Until it is, the
package says so at every configure; without mokutil it reads the firmware's
SecureBoot variable and asks for mokutil.

Without a console at boot (a cloud VM with Secure Boot on), MokManager's
screen is reached through the provider's serial console (Azure, Google Cloud
and AWS EC2 each have one). For a fleet, put the certificate where the
firmware trusts it before the machines first boot: into the image's UEFI
signature database where the provider lets an image carry its own keys
(Azure's and Google Cloud's Secure Boot images can), or into each VM's MOK
list with a firmware variable tool (virt-fw-vars --add-mok) for VMs you run
yourself. Documentation/install.md in the project's sources has the details.
EOF
source_package "$d"
build "$d" -A

# rust-user-events-modules: one package per kernel, and a metapackage per flavour.
mversion="$pkgver+$kversion"
log "rust-user-events-modules $mversion: ${*%%=*}"
d=$(source_dir rust-user-events-modules "$mversion")
cat >"$d/debian/control" <<EOF
Source: rust-user-events-modules
Section: kernel
Priority: optional
Maintainer: $maintainer
Build-Depends: debhelper-compat (= 13)
Standards-Version: 4.7.0
Rules-Requires-Root: no
EOF
arches=()
for pair in "$@"; do
	flavour=${pair%%=*} ko=${pair#*=}
	krel=$abi-$flavour
	case "$flavour" in *arm64*) arch=arm64 ;; *) arch=amd64 ;; esac
	case " ${arches[*]} " in *" $arch "*) ;; *) arches+=("$arch") ;; esac
	pkg=rust-user-events-modules-$krel
	mkdir -p "$d/modules/$krel"
	# Stripped of debug information as Debian's own modules are
	# (INSTALL_MOD_STRIP=1: BTF stays), then signed.
	case "$arch" in
	arm64) strip=aarch64-linux-gnu-strip ;;
	*) strip=x86_64-linux-gnu-strip ;;
	esac
	"$strip" --strip-debug -o "$d/modules/$krel/rust_user_events.ko" "$ko"
	"$sign_file" sha256 "$keys/module.key" "$keys/module.der" "$d/modules/$krel/rust_user_events.ko"
	cat >>"$d/debian/control" <<EOF

Package: $pkg
Architecture: $arch
Depends: \${misc:Depends}, linux-image-$krel | linux-image-$krel-unsigned,
 rust-user-events-common (>= $pkgver), kmod
Built-Using: linux (= $kversion)
Recommends: rust-user-events-ueficert
Description: Linux user_events tracing ABI module for Linux $krel
$description_tail
 .
 This package holds rust_user_events.ko for linux-image-$krel,
 built against its $kversion upload and signed with the key of
 rust-user-events-ueficert.

Package: rust-user-events-modules-$flavour
Architecture: $arch
Depends: \${misc:Depends}, $pkg (= \${binary:Version}),
 linux-image-$flavour (>= $kversion)
Description: Linux user_events tracing ABI module for the latest $flavour kernel
$description_tail
 .
 This metapackage depends on the module package of the current
 linux-image-$flavour, so that an upgrade that brings a new kernel ABI
 brings the module for it, and on that linux-image-$flavour: installed on a
 machine that tracks another kernel (trixie's own), it is refused instead of
 bringing a kernel nothing would update.
EOF
	printf 'modules/%s/rust_user_events.ko usr/lib/modules/%s/updates/\n' "$krel" "$krel" >"$d/debian/$pkg.install"
	# Debian's kernels ship no System.map, so debhelper's own depmod snippet
	# (dh_installmodules) would never run: depmod here, for this kernel only.
	for script in postinst postrm; do
		{
			printf '#!/bin/sh\nset -e\n\nkrel=%s\n' "$krel"
			# Both scripts: an initramfs of this kernel that holds the module (an
			# administrator listed it, in /etc/initramfs-tools/modules or dracut's
			# add_drivers) is made again, with this package's module or without it.
			cat <<'EOF'

# initramfs: updates this kernel's initramfs if the module is in it.
initramfs() {
	initrd=/boot/initrd.img-$krel
	[ -e "$initrd" ] || return 0
	if command -v lsinitramfs >/dev/null; then
		lsinitramfs "$initrd" 2>/dev/null | grep -q '/rust_user_events\.ko' || return 0
	elif command -v lsinitrd >/dev/null; then
		lsinitrd "$initrd" 2>/dev/null | grep -q '/rust_user_events\.ko' || return 0
	else
		return 0
	fi
	if command -v update-initramfs >/dev/null; then
		update-initramfs -u -k "$krel" ||
			echo "rust-user-events: update-initramfs failed: $initrd holds another rust_user_events" >&2
	elif command -v dracut >/dev/null; then
		dracut --force --kver "$krel" "$initrd" ||
			echo "rust-user-events: dracut failed: $initrd holds another rust_user_events" >&2
	fi
}
EOF
			if [ "$script" = postinst ]; then
				cat <<'EOF'
# rust-user-events-dkms is the fallback for kernels without a prebuilt module, and
# its dkms.conf skips this kernel from now on: a build it made for this kernel
# before (the gap between a kernel upload and this package) goes, so that
# depmod has one copy.
if [ "$1" = configure ] && command -v dkms >/dev/null; then
	for v in $(dkms status -m rust-user-events -k "$krel" 2>/dev/null |
		sed -n 's|^rust-user-events/\([^,]*\),.*: installed.*|\1|p'); do
		echo "rust-user-events: the prebuilt module replaces DKMS's build for $krel"
		dkms remove -m rust-user-events -v "$v" -k "$krel" >/dev/null || true
	done
fi
if [ "$1" = configure ] && [ -e "/usr/lib/modules/$krel/modules.order" ]; then
	depmod -a "$krel"
	initramfs
	# Into the running kernel now as well; at boot, modules-load.d loads it. Not in a
	# chroot (an image build, a system set up from outside: the running kernel is the
	# host's), and not when blacklisted (modprobe -b, as systemd-modules-load honours it).
	if [ "$(uname -r)" = "$krel" ] && ! ischroot && ! grep -q '^rust_user_events ' /proc/modules; then
		modprobe -b rust_user_events ||
			echo "rust-user-events: could not load rust_user_events now (with Secure Boot on, see rust-user-events-ueficert)" >&2
	fi
fi
EOF
			else
				cat <<'EOF'
if [ "$1" = remove ] || [ "$1" = purge ]; then
	if [ -e "/usr/lib/modules/$krel/modules.order" ] && command -v depmod >/dev/null; then
		depmod -a "$krel"
		initramfs
	fi
fi
EOF
			fi
			printf '\n#DEBHELPER#\n'
		} >"$d/debian/$pkg.$script"
	done
done
source_package "$d"
for arch in "${arches[@]}"; do
	if [ "$arch" = "$(dpkg --print-architecture)" ]; then
		build "$d" -B
	else
		build "$d" -B --host-arch "$arch"
	fi
done

# The source packages signed as an upload's are (debsign), with the repository's key: apt checks
# them through the signed Release, dpkg-source -x by this signature.
for dsc in "$work"/srcs/*.dsc; do
	gpg --batch --yes --quiet --local-user "$fpr" --clearsign -o "$dsc.asc" "$dsc"
	mv "$dsc.asc" "$dsc"
done

log "lintian"
if ! lintian --fail-on error --suppress-tags-from-file /dev/null "$work"/debs/*.deb "$work"/srcs/*.dsc \
	>"$work/lintian.log" 2>&1; then
	cat "$work/lintian.log" >&2
	echo "packages: lintian found errors (above)" >&2
	exit 1
fi
cp "$work/lintian.log" "$out/lintian.log"

# The repository: a pool and one suite, signed.
log "apt repository $out/repo, suite $suite"
repo=$out/repo
mkdir -p "$repo/pool/main"
mv "$work"/debs/*.deb "$work"/srcs/* "$repo/pool/main/"
for extra in ${RUE_REPO_EXTRA:-}; do
	cp "$extra" "$repo/pool/main/"
done
cd "$repo"
for arch in amd64 arm64; do
	mkdir -p "dists/$suite/main/binary-$arch"
	apt-ftparchive --arch "$arch" packages pool >"dists/$suite/main/binary-$arch/Packages"
	gzip -9nk "dists/$suite/main/binary-$arch/Packages"
done
mkdir -p "dists/$suite/main/source"
apt-ftparchive sources pool >"dists/$suite/main/source/Sources"
gzip -9nk "dists/$suite/main/source/Sources"
apt-ftparchive -o "APT::FTPArchive::Release::Origin=rust-user-events" \
	-o "APT::FTPArchive::Release::Label=rust-user-events" \
	-o "APT::FTPArchive::Release::Suite=$suite" -o "APT::FTPArchive::Release::Codename=$suite" \
	-o "APT::FTPArchive::Release::Architectures=amd64 arm64" \
	-o "APT::FTPArchive::Release::Components=main" \
	release "dists/$suite" >"$work/Release"
mv "$work/Release" "dists/$suite/Release"
gpg --batch --yes --quiet --local-user "$fpr" --clearsign -o "dists/$suite/InRelease" "dists/$suite/Release"
gpg --batch --yes --quiet --local-user "$fpr" --detach-sign --armor -o "dists/$suite/Release.gpg" "dists/$suite/Release"
cp "$archive_key" rust-user-events-archive-keyring.gpg
ls pool/main
