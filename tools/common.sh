# SPDX-License-Identifier: GPL-2.0
#
# The prologue that tools/check.sh, tools/demo.sh and tools/conformance.sh
# share; they source it (it is not run on its own). Each of them takes the
# kernel build directory as its one argument and works in a fresh build/NAME.
#
#   rue_begin NAME KDIR  sets top (the repository), kdir and build
#                        (top/build/NAME, emptied and created)
#   rue_build_guest      builds the guest programs and the module into
#                        $build/guest (tools/testing/build-guest.sh); its status

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

rue_begin() {
	local name=$1
	if [ $# -lt 2 ] || [ -z "$2" ]; then
		echo "usage: $(basename "$0") KDIR" >&2
		exit 2
	fi
	kdir=$2
	build="$top/build/$name"
	rm -rf "$build"
	mkdir -p "$build"
}

rue_build_guest() {
	bash "$top/tools/testing/build-guest.sh" "$kdir" "$build/guest" "$top/rust_user_events.ko"
}
