// SPDX-License-Identifier: GPL-2.0
/*
 * eBPF on user events: a BPF_PROG_TYPE_TRACEPOINT program, loaded with the raw
 * bpf() syscall (no library) and attached through perf_event_open() +
 * PERF_EVENT_IOC_SET_BPF, runs on every write with the record as its context.
 * It counts the events and sums their first field into an array map. A second
 * program, attached through a BPF link, decides which writes reach perf.
 * Upstream attaches such programs but never runs them (spec §5.5).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <linux/user_events.h>

#include "kselftest_harness.h"
#include "rue_perf.h"

#define EVENTS 100

static long sys_bpf(int cmd, union bpf_attr *attr)
{
	return syscall(__NR_bpf, cmd, attr, sizeof(*attr));
}

#define INSN(c, d, s, o, i) ((struct bpf_insn){ .code = (c), .dst_reg = (d), .src_reg = (s), .off = (o), .imm = (i) })

/* Loads a BPF_PROG_TYPE_TRACEPOINT program; prints the verifier's log on failure. */
static int load_insns(const struct bpf_insn *insns, __u32 count)
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

/* Load a field, look up key 0 and 1, add 1 to the first and the field to the second. */
static int load_prog(int map_fd)
{
	struct bpf_insn insns[] = {
		/* r6 = *(u32 *)(ctx + 8): field `a`, right after the 8-byte trace_entry */
		INSN(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_6, BPF_REG_1, 8, 0),
		/* *(u32 *)(fp - 4) = 0; r2 = fp - 4 */
		INSN(BPF_ST | BPF_MEM | BPF_W, BPF_REG_10, 0, -4, 0),
		INSN(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_2, BPF_REG_10, 0, 0),
		INSN(BPF_ALU64 | BPF_ADD | BPF_K, BPF_REG_2, 0, 0, -4),
		/* r1 = map (ld_imm64 with BPF_PSEUDO_MAP_FD) */
		INSN(BPF_LD | BPF_DW | BPF_IMM, BPF_REG_1, BPF_PSEUDO_MAP_FD, 0, map_fd),
		INSN(0, 0, 0, 0, 0),
		INSN(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_map_lookup_elem),
		INSN(BPF_JMP | BPF_JEQ | BPF_K, BPF_REG_0, 0, 2, 0),
		/* lock *(u64 *)(r0) += 1 */
		INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_1, 0, 0, 1),
		INSN(BPF_STX | BPF_ATOMIC | BPF_DW, BPF_REG_0, BPF_REG_1, 0, BPF_ADD),
		/* *(u32 *)(fp - 4) = 1; r2 = fp - 4; lookup again */
		INSN(BPF_ST | BPF_MEM | BPF_W, BPF_REG_10, 0, -4, 1),
		INSN(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_2, BPF_REG_10, 0, 0),
		INSN(BPF_ALU64 | BPF_ADD | BPF_K, BPF_REG_2, 0, 0, -4),
		INSN(BPF_LD | BPF_DW | BPF_IMM, BPF_REG_1, BPF_PSEUDO_MAP_FD, 0, map_fd),
		INSN(0, 0, 0, 0, 0),
		INSN(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_map_lookup_elem),
		INSN(BPF_JMP | BPF_JEQ | BPF_K, BPF_REG_0, 0, 1, 0),
		/* lock *(u64 *)(r0) += r6 */
		INSN(BPF_STX | BPF_ATOMIC | BPF_DW, BPF_REG_0, BPF_REG_6, 0, BPF_ADD),
		/* return 0: nothing for perf itself */
		INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0),
		INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
	};

	return load_insns(insns, sizeof(insns) / sizeof(insns[0]));
}

/* Counts every event in key 0 and lets only those with an even `a` through to perf. */
static int load_even_filter(int map_fd)
{
	struct bpf_insn insns[] = {
		INSN(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_6, BPF_REG_1, 8, 0),
		INSN(BPF_ST | BPF_MEM | BPF_W, BPF_REG_10, 0, -4, 0),
		INSN(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_2, BPF_REG_10, 0, 0),
		INSN(BPF_ALU64 | BPF_ADD | BPF_K, BPF_REG_2, 0, 0, -4),
		INSN(BPF_LD | BPF_DW | BPF_IMM, BPF_REG_1, BPF_PSEUDO_MAP_FD, 0, map_fd),
		INSN(0, 0, 0, 0, 0),
		INSN(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_map_lookup_elem),
		INSN(BPF_JMP | BPF_JEQ | BPF_K, BPF_REG_0, 0, 2, 0),
		INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_1, 0, 0, 1),
		INSN(BPF_STX | BPF_ATOMIC | BPF_DW, BPF_REG_0, BPF_REG_1, 0, BPF_ADD),
		/* return (a & 1) ^ 1: 1 lets the record through to perf, 0 drops it */
		INSN(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_0, BPF_REG_6, 0, 0),
		INSN(BPF_ALU64 | BPF_AND | BPF_K, BPF_REG_0, 0, 0, 1),
		INSN(BPF_ALU64 | BPF_XOR | BPF_K, BPF_REG_0, 0, 0, 1),
		INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
	};

	return load_insns(insns, sizeof(insns) / sizeof(insns[0]));
}

static __u64 map_get(int map_fd, __u32 key)
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

TEST(bpf_program_counts_and_sums_every_write)
{
	__u32 check = 0;
	struct user_reg reg = {
		.size = sizeof(reg),
		.enable_bit = 31,
		.enable_size = 4,
		.enable_addr = (__u64)(uintptr_t)&check,
		.name_args = (__u64)(uintptr_t)"__rue_bpf u32 a",
	};
	struct user_unreg unreg = {
		.size = sizeof(unreg),
		.disable_bit = 31,
		.disable_addr = (__u64)(uintptr_t)&check,
	};
	union bpf_attr map_attr = {
		.map_type = BPF_MAP_TYPE_ARRAY,
		.key_size = 4,
		.value_size = 8,
		.max_entries = 2,
	};
	struct perf_event_attr pe = {
		.type = PERF_TYPE_TRACEPOINT,
		.size = sizeof(pe),
		.sample_period = 1,
		.sample_type = PERF_SAMPLE_RAW,
		.wakeup_events = 1,
	};
	struct { __s32 idx; __u32 a; } rec;
	int data, map_fd, prog_fd, perf_fd, id;
	__u64 want_sum = 0;

	data = open(RUE_TRACEFS "user_events_data", O_RDWR);
	ASSERT_NE(-1, data);
	ASSERT_EQ(0, ioctl(data, DIAG_IOCSREG, &reg));
	id = event_id("__rue_bpf");
	ASSERT_LT(0, id);

	map_fd = sys_bpf(BPF_MAP_CREATE, &map_attr);
	ASSERT_LE(0, map_fd) TH_LOG("BPF_MAP_CREATE: %s", strerror(errno));
	prog_fd = load_prog(map_fd);
	ASSERT_LE(0, prog_fd) TH_LOG("BPF_PROG_LOAD: %s", strerror(errno));

	pe.config = id;
	perf_fd = syscall(__NR_perf_event_open, &pe, -1, 0, -1, PERF_FLAG_FD_CLOEXEC);
	ASSERT_LE(0, perf_fd) TH_LOG("perf_event_open: %s", strerror(errno));
	ASSERT_EQ(0, ioctl(perf_fd, PERF_EVENT_IOC_SET_BPF, prog_fd)) TH_LOG("SET_BPF: %s", strerror(errno));
	ASSERT_EQ(0, ioctl(perf_fd, PERF_EVENT_IOC_ENABLE, 0));
	EXPECT_EQ(1u << 31, check);

	rec.idx = reg.write_index;
	for (__u32 i = 0; i < EVENTS; i++) {
		rec.a = i + 1;
		want_sum += i + 1;
		ASSERT_EQ(sizeof(rec), write(data, &rec, sizeof(rec)));
	}
	EXPECT_EQ(EVENTS, map_get(map_fd, 0));
	EXPECT_EQ(want_sum, map_get(map_fd, 1));

	close(perf_fd);
	EXPECT_EQ(0, check);
	close(prog_fd);
	close(map_fd);
	EXPECT_EQ(0, ioctl(data, DIAG_IOCSUNREG, &unreg));
	close(data);
}

TEST(bpf_link_decides_which_writes_reach_perf)
{
	__u32 check = 0;
	struct user_reg reg = {
		.size = sizeof(reg),
		.enable_bit = 7,
		.enable_size = 4,
		.enable_addr = (__u64)(uintptr_t)&check,
		.name_args = (__u64)(uintptr_t)"__rue_bpfl u32 a",
	};
	struct user_unreg unreg = {
		.size = sizeof(unreg),
		.disable_bit = 7,
		.disable_addr = (__u64)(uintptr_t)&check,
	};
	union bpf_attr map_attr = {
		.map_type = BPF_MAP_TYPE_ARRAY,
		.key_size = 4,
		.value_size = 8,
		.max_entries = 1,
	};
	union bpf_attr link_attr = {};
	struct { __s32 idx; __u32 a; } rec;
	struct perf_handle h;
	unsigned char raw[64];
	int data, map_fd, prog_fd, link_fd;
	__u32 got;

	data = open(RUE_TRACEFS "user_events_data", O_RDWR);
	ASSERT_NE(-1, data);
	ASSERT_EQ(0, ioctl(data, DIAG_IOCSREG, &reg));
	map_fd = sys_bpf(BPF_MAP_CREATE, &map_attr);
	ASSERT_LE(0, map_fd) TH_LOG("BPF_MAP_CREATE: %s", strerror(errno));
	prog_fd = load_even_filter(map_fd);
	ASSERT_LE(0, prog_fd) TH_LOG("BPF_PROG_LOAD: %s", strerror(errno));
	ASSERT_EQ(0, perf_open(&h, "__rue_bpfl", 0, -1, 1));

	link_attr.link_create.prog_fd = prog_fd;
	link_attr.link_create.target_fd = h.fd;
	link_attr.link_create.attach_type = BPF_PERF_EVENT;
	link_fd = sys_bpf(BPF_LINK_CREATE, &link_attr);
	ASSERT_LE(0, link_fd) TH_LOG("BPF_LINK_CREATE: %s", strerror(errno));
	EXPECT_EQ(1u << 7, check);
	/* A BPF program rides on a perf event: the status says perf, as upstream's would. */
	EXPECT_TRUE(status_has_line("__rue_bpfl # Used by perf"));

	rec.idx = reg.write_index;
	for (rec.a = 0; rec.a < 10; rec.a++)
		ASSERT_EQ(sizeof(rec), write(data, &rec, sizeof(rec)));
	EXPECT_EQ(10, map_get(map_fd, 0));
	for (__u32 want = 0; want < 10; want += 2) {
		ASSERT_EQ(12, next_sample(&h, raw, sizeof(raw)));
		memcpy(&got, raw + 8, sizeof(got));
		EXPECT_EQ(want, got);
	}
	EXPECT_TRUE(ring_empty(&h));

	/* Closing the link detaches the program: perf sees every write again. */
	close(link_fd);
	for (rec.a = 11; rec.a < 13; rec.a++)
		ASSERT_EQ(sizeof(rec), write(data, &rec, sizeof(rec)));
	EXPECT_EQ(10, map_get(map_fd, 0));
	for (__u32 want = 11; want < 13; want++) {
		ASSERT_EQ(12, next_sample(&h, raw, sizeof(raw)));
		memcpy(&got, raw + 8, sizeof(got));
		EXPECT_EQ(want, got);
	}

	perf_close(&h);
	EXPECT_EQ(0, check);
	close(prog_fd);
	close(map_fd);
	EXPECT_EQ(0, ioctl(data, DIAG_IOCSUNREG, &unreg));
	close(data);
}

TEST_HARNESS_MAIN
