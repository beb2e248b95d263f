# SPDX-License-Identifier: GPL-2.0
#
# rust-user-events. `make` builds rust_user_events.ko against KDIR (default: the
# project's test kernel, built first if missing). `make demo` and `make check`
# do all setup on a fresh machine. See README.md.

LLVM ?= -19
RUE_TOOLS := $(CURDIR)/tools

# KDIR defaults to the cached test kernel (tools/kernel/build.sh).
ifeq ($(origin KDIR),undefined)
KDIR := $(shell $(RUE_TOOLS)/kernel/build.sh --print-kdir)
RUE_OWN_KERNEL := 1
endif

.PHONY: all modules setup kernel clippy clean check host-test demo conformance vm

all: modules

setup:
	@bash $(RUE_TOOLS)/setup.sh

ifdef RUE_OWN_KERNEL
kernel: setup
	@bash $(RUE_TOOLS)/kernel/build.sh >/dev/null
else
kernel:
	@test -f $(KDIR)/Module.symvers || { echo "KDIR=$(KDIR) is not a built kernel tree" >&2; exit 1; }
endif

modules: kernel
	$(MAKE) -C $(KDIR) M=$(CURDIR) LLVM=$(LLVM) modules

clippy: kernel
	$(MAKE) -C $(KDIR) M=$(CURDIR) LLVM=$(LLVM) CLIPPY=1 modules

host-test: setup
	cargo test --workspace --offline -q 2>/dev/null || cargo test --workspace -q

check: modules
	@bash $(RUE_TOOLS)/check.sh "$(KDIR)"

demo: modules
	@bash $(RUE_TOOLS)/demo.sh "$(KDIR)"

conformance: modules
	@bash $(RUE_TOOLS)/conformance.sh "$(KDIR)"

# Boot the test VM with the module loaded and run CMD (see README.md).
vm: modules
	@bash $(RUE_TOOLS)/vm/run.sh --kdir "$(KDIR)" $(if $(EXTRA),--extra "$(EXTRA)") -- $(CMD)

clean:
	$(MAKE) -C $(KDIR) M=$(CURDIR) LLVM=$(LLVM) clean
	cargo clean
