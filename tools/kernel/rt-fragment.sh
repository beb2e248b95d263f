#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Prints the config fragment of the test kernel's PREEMPT_RT variant: the test
# kernel's tools/kernel/rue.config (its debug options, lockdep and atomic-sleep
# checks among them) with the realtime preemption model, under which a
# spinlock_t sleeps. `RUE_CHECK_KERNELS=test-rt make check` boots it: the module
# taking a sleeping lock where the kernel forbids sleeping is then a report.
#
# Usage: rt-fragment.sh
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cat "$here/rue.config"
printf '\n# The realtime preemption model (rt-fragment.sh).\nCONFIG_EXPERT=y\nCONFIG_PREEMPT_RT=y\n'
