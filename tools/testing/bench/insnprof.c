// SPDX-License-Identifier: GPL-2.0
/*
 * insnprof: an exact profile of the guest kernel's instructions, as a QEMU TCG
 * plugin. Every translation block of kernel code counts its executions; at
 * the end each instruction address is written out with how many times it ran
 * ("ADDR COUNT" lines), which insnprof.py turns into instructions per
 * function and per operation. Unlike kprof's samples it misses nothing and is
 * the same on every run: it is how Documentation/performance.md's "Where the
 * time goes" was measured.
 *
 * A guest program may count only a window: it calls code at user address
 * 0x5a5a00000000 to start (the counts so far are dropped) and 0x5a5a00001000
 * to stop (the counts are written then); insnprof.h maps both.
 *
 * Build and use (the plugin API is declared here, so no QEMU headers are
 * needed; QEMU 10's plugin API version 2 or later):
 *   gcc -O2 -shared -fPIC -fvisibility=hidden -o insnprof.so insnprof.c
 *   tools/vm/run.sh --qemu -plugin --qemu $PWD/insnprof.so,out=prof.out ...
 *   tools/testing/bench/insnprof.py KDIR console.log prof.out OPS
 * The guest command should print the module's symbols to the console first:
 *   grep 'rust_user_events]' /proc/kallsyms | sed 's/^/KSYM /'
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef uint64_t qemu_plugin_id_t;
typedef struct {
	const char *target_name;
	struct {
		int min, cur;
	} version;
	bool system_emulation;
	union {
		struct {
			int smp_vcpus, max_vcpus;
		} system;
	};
} qemu_info_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
typedef void (*tb_trans_cb_t)(qemu_plugin_id_t, struct qemu_plugin_tb *);
typedef void (*vcpu_udata_cb_t)(unsigned int, void *);
typedef void (*udata_cb_t)(qemu_plugin_id_t, void *);
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t, tb_trans_cb_t);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *, vcpu_udata_cb_t, int, void *);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *, size_t);
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t, udata_cb_t, void *);

__attribute__((visibility("default"))) int qemu_plugin_version = 2;

#define KERNEL_START 0xffff800000000000ull
#define WINDOW_START 0x5a5a00000000ull
#define WINDOW_STOP 0x5a5a00001000ull

/* A translated block of kernel code: its executions and its instructions' addresses. */
struct block {
	struct block *next;
	uint64_t count;
	size_t n;
	uint64_t vaddr[];
};

static struct block *blocks;
static const char *out_path = "insnprof.out";
static int counting = 1;

static void write_out(void)
{
	static int written;
	FILE *f;

	if (written++)
		return;
	f = fopen(out_path, "w");
	if (!f)
		return;
	for (struct block *b = blocks; b; b = b->next)
		for (size_t i = 0; b->count && i < b->n; i++)
			fprintf(f, "%llx %llu\n", (unsigned long long)b->vaddr[i],
				(unsigned long long)b->count);
	fclose(f);
}

static void window(unsigned int vcpu, void *start)
{
	(void)vcpu;
	if (start) {
		for (struct block *b = blocks; b; b = b->next)
			__atomic_store_n(&b->count, 0, __ATOMIC_RELAXED);
		counting = 1;
	} else {
		counting = 0;
		write_out();
	}
}

static void executed(unsigned int vcpu, void *block)
{
	(void)vcpu;
	if (counting)
		__atomic_fetch_add(&((struct block *)block)->count, 1, __ATOMIC_RELAXED);
}

static void translated(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	uint64_t va = qemu_plugin_tb_vaddr(tb);
	size_t n = qemu_plugin_tb_n_insns(tb);
	struct block *b, *old;

	(void)id;
	if (va == WINDOW_START || va == WINDOW_STOP) {
		qemu_plugin_register_vcpu_tb_exec_cb(tb, window, 0,
						     va == WINDOW_START ? (void *)1 : NULL);
		return;
	}
	if (va < KERNEL_START)
		return;
	b = calloc(1, sizeof(*b) + n * sizeof(b->vaddr[0]));
	if (!b)
		abort();
	b->n = n;
	for (size_t i = 0; i < n; i++)
		b->vaddr[i] = qemu_plugin_insn_vaddr(qemu_plugin_tb_get_insn(tb, i));
	do {
		old = __atomic_load_n(&blocks, __ATOMIC_RELAXED);
		b->next = old;
	} while (!__atomic_compare_exchange_n(&blocks, &old, b, false, __ATOMIC_RELEASE,
					      __ATOMIC_RELAXED));
	qemu_plugin_register_vcpu_tb_exec_cb(tb, executed, 0, b);
}

static void at_exit(qemu_plugin_id_t id, void *unused)
{
	(void)id;
	(void)unused;
	write_out();
}

__attribute__((visibility("default"))) int
qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv)
{
	(void)info;
	for (int i = 0; i < argc; i++)
		if (!strncmp(argv[i], "out=", 4))
			out_path = argv[i] + 4;
	qemu_plugin_register_vcpu_tb_trans_cb(id, translated);
	qemu_plugin_register_atexit_cb(id, at_exit, NULL);
	return 0;
}
