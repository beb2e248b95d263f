/* SPDX-License-Identifier: GPL-2.0 */
/*
 * BPF helpers shared by the rust_user_events guest tests and benchmarks: the bpf(2) call, an
 * instruction initializer, a tracepoint program loader and an array map of u64 counters.
 * Without libbpf, so the programs stay static and self-contained.
 */
#ifndef RUE_BPF_H
#define RUE_BPF_H

#include <stdint.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/bpf.h>

static inline long sys_bpf(int cmd, union bpf_attr *attr)
{
	return syscall(__NR_bpf, cmd, attr, sizeof(*attr));
}

#define INSN(c, d, s, o, i) ((struct bpf_insn){ .code = (c), .dst_reg = (d), .src_reg = (s), .off = (o), .imm = (i) })

/* Loads a BPF_PROG_TYPE_TRACEPOINT program; prints the verifier's log on failure. */
static inline int rue_bpf_load(const struct bpf_insn *insns, __u32 count)
{
	static char log[65536];
	union bpf_attr attr = {
		.prog_type = BPF_PROG_TYPE_TRACEPOINT,
		.insn_cnt = count,
		.insns = (__u64)(uintptr_t)insns,
		.license = (__u64)(uintptr_t)"GPL",
		.log_buf = (__u64)(uintptr_t)log,
		.log_size = sizeof(log),
		.log_level = 1,
	};
	int fd = sys_bpf(BPF_PROG_LOAD, &attr);

	if (fd < 0)
		fprintf(stderr, "# verifier: %s\n", log);
	return fd;
}

/* A BPF array map of @entries u64 values, keyed by u32; its fd or -1. */
static inline int rue_bpf_array_map(__u32 entries)
{
	union bpf_attr attr = {
		.map_type = BPF_MAP_TYPE_ARRAY,
		.key_size = 4,
		.value_size = 8,
		.max_entries = entries,
	};

	return sys_bpf(BPF_MAP_CREATE, &attr);
}

/* The u64 at @key of the array map @map_fd; ~0 if the lookup fails. */
static inline __u64 rue_bpf_map_get(int map_fd, __u32 key)
{
	__u64 value = ~0ULL;
	union bpf_attr attr = {
		.map_fd = map_fd,
		.key = (__u64)(uintptr_t)&key,
		.value = (__u64)(uintptr_t)&value,
	};

	if (sys_bpf(BPF_MAP_LOOKUP_ELEM, &attr))
		return ~0ULL;
	return value;
}

#endif /* RUE_BPF_H */
