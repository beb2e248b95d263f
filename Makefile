# SPDX-License-Identifier: GPL-2.0
#
# rust-user-events. `make` builds rust_user_events.ko against KDIR (default:
# the project's test kernel, built first if missing), like any out-of-tree
# module. `make demo` and `make check` do all setup on a fresh machine.

TOOLS := $(CURDIR)/tools
# The compiler KDIR was built with, read from its .config in recipes: LLVM= for
# a clang-built tree (the test kernel: -19); for a GCC-built one (Debian's,
# prepared by tools/debian) the gcc it names, e.g. x86_64-linux-gnu-gcc-14.
LLVM ?= -19
llvm = $$(if grep -qx CONFIG_CC_IS_CLANG=y "$$k/.config"; then echo LLVM=$(LLVM); else \
	sed -n 's/^CONFIG_CC_VERSION_TEXT="\(\([^ ]*-linux-gnu-\)\{0,1\}[^ ]*\) .*/CC=\1 CROSS_COMPILE=\2/p' "$$k/.config"; \
	! grep -qx CONFIG_ARM64=y "$$k/.config" || echo ARCH=arm64; fi)

# The kernel tree to build against. Unless KDIR is given, the cached test
# kernel: tools/kernel/build.sh builds it if needed and prints its path. It is
# evaluated inside recipes, after setup has installed the kernel source.
ifdef KDIR
kdir = $(KDIR)
else
kdir = $$(bash $(TOOLS)/kernel/build.sh)
endif

.PHONY: all modules setup kernel clippy host-test host-fuzz check demo conformance fuzz bench vm debian packages install uninstall purge clean

all: modules

setup:
	@bash $(TOOLS)/setup.sh

kernel: setup
	@k=$(kdir) && test -f "$$k/Module.symvers" || \
		{ echo "KDIR=$$k is not a built kernel tree" >&2; exit 1; }

modules: kernel
	@k=$(kdir) && $(MAKE) -C "$$k" M=$(CURDIR) $(llvm) modules

clippy: kernel
	@k=$(kdir) && $(MAKE) -C "$$k" M=$(CURDIR) $(llvm) CLIPPY=1 modules

# rust_user_events.ko for Debian's Rust-enabled kernels, built by their own
# toolchain in a trixie root: build/debian/<release>/ (Documentation/install.md).
debian:
	@bash $(TOOLS)/setup.sh --packages
	@bash $(TOOLS)/debian/build.sh

# Debian packages of that module, signed, for every flavour, with a DKMS
# package and a signed apt repository: build/packages/repo/
# (Documentation/install.md, "Publishing: keys, maintainer, suite").
packages:
	@bash $(TOOLS)/setup.sh --packages
	@bash $(TOOLS)/debian/packages.sh

# On a Debian machine: build and install for the running kernel with DKMS,
# load it now and at every boot. Needs root; installs its own dependencies.
install:
	@bash $(TOOLS)/debian/install.sh

uninstall:
	@bash $(TOOLS)/debian/install.sh --remove

purge:
	@bash $(TOOLS)/debian/install.sh --purge

host-test: setup
	cargo test --workspace

# The fuzz properties of the pure logic (tools/hosttest/src/fuzz_tests.rs) at
# length: an optimised build that keeps overflow checks and debug assertions,
# RUE_FUZZ_ITERS inputs per property (10,000,000), RUE_FUZZ_SEED to repeat an
# input a failure printed. See Documentation/development.md.
RUE_FUZZ_ITERS ?= 10000000
host-fuzz: setup
	RUE_FUZZ_ITERS='$(RUE_FUZZ_ITERS)' RUE_FUZZ_SEED='$(RUE_FUZZ_SEED)' \
	CARGO_PROFILE_RELEASE_OVERFLOW_CHECKS=true CARGO_PROFILE_RELEASE_DEBUG_ASSERTIONS=true \
		cargo test --release -p rue-hosttest fuzz_tests:: -- --nocapture

# The Debian roots and kernel images the check needs are made in the background
# while the test kernel compiles (tools/debian/prefetch.sh, its log in
# build/prefetch.log).
check: setup
	@mkdir -p build && { bash $(TOOLS)/debian/prefetch.sh >build/prefetch.log 2>&1 & } && \
	k=$(kdir) && { test -f "$$k/Module.symvers" || { echo "KDIR=$$k is not a built kernel tree" >&2; false; }; } && \
	$(MAKE) -C "$$k" M=$(CURDIR) $(llvm) modules && \
	bash $(TOOLS)/check.sh "$$k"; rc=$$?; wait; exit $$rc

demo: modules
	@bash $(TOOLS)/demo.sh "$(kdir)"

conformance: modules
	@bash $(TOOLS)/conformance.sh "$(kdir)"

# A fuzzing soak in the test VM: FUZZ_SECONDS (600), FUZZ_SEED to repeat a run,
# FUZZ_ARGS for more fuzz_test options. See Documentation/development.md.
fuzz: modules
	@bash $(TOOLS)/fuzz.sh "$(kdir)"

# The module against the kernel's own user_events, side by side, on two
# non-debug kernels built for it (BENCH_ROUNDS, BENCH_N, BENCH_RUNS). It builds
# its own kernels and module, not the test kernel's. See
# Documentation/performance.md.
bench: setup
	@bash $(TOOLS)/bench.sh

# Boot the test VM with the module loaded, add EXTRA (a directory of static
# programs) to the guest's /rue, and run CMD there. See Documentation/development.md. CMD reaches
# the guest through the environment, so no part of it is run by the host shell.
vm: export RUE_VM_CMD = $(CMD)
vm: modules
	@bash $(TOOLS)/vm/run.sh --kdir "$(kdir)" $(if $(EXTRA),--add "$(EXTRA)") -- "$$RUE_VM_CMD"

clean:
	@k=$(kdir) && $(MAKE) -C "$$k" M=$(CURDIR) $(llvm) clean
	cargo clean
	rm -rf build
