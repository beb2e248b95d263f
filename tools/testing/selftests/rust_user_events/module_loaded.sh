#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Runs in the test VM after module_test, which unloads and loads the module (and reports
# itself if that failed): the programs after it need the module. Loads it again if it is
# not loaded, and fails unless the module is loaded and its data file is there, so that
# the tests after it cannot skip for want of the module and pass.
echo "TAP version 13"
echo "1..1"
grep -q '^rust_user_events ' /proc/modules || insmod /rue/rust_user_events.ko
if grep -q '^rust_user_events ' /proc/modules && [ -e /sys/kernel/tracing/user_events_data ]; then
	echo "ok 1 rust_user_events is loaded, with its user_events_data, for the programs after module_test"
else
	echo "not ok 1 rust_user_events is loaded, with its user_events_data, for the programs after module_test"
	exit 1
fi
