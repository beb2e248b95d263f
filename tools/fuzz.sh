#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# fuzz.sh KDIR: a fuzzing soak in the test VM (make fuzz). Builds the guest
# programs and runs fuzz_test alone in a VM with the module loaded; the run
# fails on a fuzzer failure or any kernel report (the VM's log checks, kmemleak
# included). Settings come from the environment:
#   FUZZ_SECONDS  how long (default 600)
#   FUZZ_SEED     repeat a run: the seed a run printed ("# fuzz_test: seed N")
#   FUZZ_ARGS     more fuzz_test options, e.g. "-p 6 -j 4 -f 2" (see fuzz_test.c)
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
kdir=$1
out="$top/build/fuzz"
seconds=${FUZZ_SECONDS:-600}
args="-t $seconds ${FUZZ_SEED:+-s $FUZZ_SEED} ${FUZZ_ARGS:-}"

bash "$top/tools/testing/build-guest.sh" "$kdir" "$out/guest" "$top/rust_user_events.ko"
# The VM's own limit: the run, reaping and cleanup, and a boot under TCG.
exec bash "$top/tools/vm/run.sh" --kdir "$kdir" --add "$out/guest" --log "$out/console.log" \
	--timeout $((seconds * 2 + 600)) -- "rue-run fuzz_test fuzz_test $args"
