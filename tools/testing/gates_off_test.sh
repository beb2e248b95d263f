#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Runs first in the test VM whose module was built with every gate off
# (make RUE_GATES_OFF=1, tools/check.sh): the suite that follows then runs each
# mirror's fallback, the exported paths a kernel whose bodies changed gets
# (Documentation/design.md, "Mirrored kernel bodies"). Checks that the module
# the harness loaded is that build.
n=0
result() { n=$((n + 1)); if [ "$1" -eq 0 ]; then echo "ok $n $2"; else echo "not ok $n $2"; fi; }

echo "TAP version 13"
echo "1..2"
grep -q '^rust_user_events ' /proc/modules
result $? "the module is loaded"
dmesg | grep -qF 'rust_user_events: built with every gate off (RUE_GATES_OFF=1): the exported paths only'
result $? "it says it was built with every gate off"
