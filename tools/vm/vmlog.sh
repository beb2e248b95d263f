#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Builds (once) and runs tools/vmlog on a console log: vmlog.sh LOG [SUMMARY].
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cargo build -q --release -p rue-vmlog --manifest-path "$top/Cargo.toml"
exec "$top/target/release/rue-vmlog" "$@"
