# SPDX-License-Identifier: GPL-2.0
#
# rust-user-events. `make` builds rust_user_events.ko against KDIR (default:
# the project's test kernel, built first if missing), like any out-of-tree
# module. `make demo` and `make check` do all setup on a fresh machine.

LLVM ?= -19
TOOLS := $(CURDIR)/tools

# The kernel tree to build against. Unless KDIR is given, the cached test
# kernel: tools/kernel/build.sh builds it if needed and prints its path. It is
# evaluated inside recipes, after setup has installed the kernel source.
ifdef KDIR
kdir = $(KDIR)
else
kdir = $$(bash $(TOOLS)/kernel/build.sh)
endif

.PHONY: all modules setup kernel clippy host-test check demo conformance vm clean

all: modules

setup:
	@bash $(TOOLS)/setup.sh

kernel: setup
	@k=$(kdir) && test -f "$$k/Module.symvers" || \
		{ echo "KDIR=$$k is not a built kernel tree" >&2; exit 1; }

modules: kernel
	@$(MAKE) -C "$(kdir)" M=$(CURDIR) LLVM=$(LLVM) modules

clippy: kernel
	@$(MAKE) -C "$(kdir)" M=$(CURDIR) LLVM=$(LLVM) CLIPPY=1 modules

host-test: setup
	cargo test --workspace

check: modules
	@bash $(TOOLS)/check.sh "$(kdir)"

demo: modules
	@bash $(TOOLS)/demo.sh "$(kdir)"

conformance: modules
	@bash $(TOOLS)/conformance.sh "$(kdir)"

# Boot the test VM with the module loaded, add EXTRA (a directory of static
# programs) to the guest's /rue, and run CMD there. See README.md. CMD reaches
# the guest through the environment, so no part of it is run by the host shell.
vm: export RUE_VM_CMD = $(CMD)
vm: modules
	@bash $(TOOLS)/vm/run.sh --kdir "$(kdir)" $(if $(EXTRA),--add "$(EXTRA)") -- "$$RUE_VM_CMD"

clean:
	@$(MAKE) -C "$(kdir)" M=$(CURDIR) LLVM=$(LLVM) clean
	cargo clean
	rm -rf build
