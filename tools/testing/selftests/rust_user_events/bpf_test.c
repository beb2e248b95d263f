// SPDX-License-Identifier: GPL-2.0
/*
 * eBPF on user events: a BPF_PROG_TYPE_TRACEPOINT program, loaded with the raw
 * bpf() syscall (no library) and attached through perf_event_open() +
 * PERF_EVENT_IOC_SET_BPF, runs on every write with the record as its context.
 * It counts the events and sums their first field into an array map. A second
 * program, attached through a BPF link, decides which writes reach perf.
 * Upstream attaches such programs but never runs them: its perf probe submits
 * with perf_trace_buf_submit(), which skips BPF.
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
#include "rue_bpf.h"
#include "rue_perf.h"

#define EVENTS 100

/*
 * Adds register @src to the u64 at @key of the array map @map_fd; skipped if
 * the lookup fails. Clobbers r0-r5 (r6-r9 survive the helper call).
 */
#define MAP_ADD(map_fd, key, src) \
	INSN(BPF_ST | BPF_MEM | BPF_W, BPF_REG_10, 0, -4, (key)), \
	INSN(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_2, BPF_REG_10, 0, 0), \
	INSN(BPF_ALU64 | BPF_ADD | BPF_K, BPF_REG_2, 0, 0, -4), \
	INSN(BPF_LD | BPF_DW | BPF_IMM, BPF_REG_1, BPF_PSEUDO_MAP_FD, 0, (map_fd)), \
	INSN(0, 0, 0, 0, 0), \
	INSN(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_map_lookup_elem), \
	INSN(BPF_JMP | BPF_JEQ | BPF_K, BPF_REG_0, 0, 1, 0), \
	INSN(BPF_STX | BPF_ATOMIC | BPF_DW, BPF_REG_0, (src), 0, BPF_ADD)

/* r6 = field `a` (*(u32 *)(ctx + 8), right after the 8-byte trace_entry); r7 = 1. */
#define LOAD_A_AND_ONE \
	INSN(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_6, BPF_REG_1, 8, 0), \
	INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_7, 0, 0, 1)

/* Counts the events in key 0 and sums `a` in key 1; returns 0: nothing for perf itself. */
static int load_prog(int map_fd)
{
	struct bpf_insn insns[] = {
		LOAD_A_AND_ONE,
		MAP_ADD(map_fd, 0, BPF_REG_7),
		MAP_ADD(map_fd, 1, BPF_REG_6),
		INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0),
		INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
	};

	return rue_bpf_load(insns, sizeof(insns) / sizeof(insns[0]));
}

/* Counts every event in key 0 and lets only those with an even `a` through to perf. */
static int load_even_filter(int map_fd)
{
	struct bpf_insn insns[] = {
		LOAD_A_AND_ONE,
		MAP_ADD(map_fd, 0, BPF_REG_7),
		/* return (a & 1) ^ 1: 1 lets the record through to perf, 0 drops it */
		INSN(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_0, BPF_REG_6, 0, 0),
		INSN(BPF_ALU64 | BPF_AND | BPF_K, BPF_REG_0, 0, 0, 1),
		INSN(BPF_ALU64 | BPF_XOR | BPF_K, BPF_REG_0, 0, 0, 1),
		INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
	};

	return rue_bpf_load(insns, sizeof(insns) / sizeof(insns[0]));
}

FIXTURE(bpf) {
	int data;
	__u32 check;
	int map_fd;
};

FIXTURE_SETUP(bpf)
{
	self->check = 0;
	self->data = open(RUE_TRACEFS "user_events_data", O_RDWR);
	ASSERT_LE(0, self->data);
	self->map_fd = rue_bpf_array_map(2);
	ASSERT_LE(0, self->map_fd) TH_LOG("BPF_MAP_CREATE: %s", strerror(errno));
}

FIXTURE_TEARDOWN(bpf)
{
	close(self->map_fd);
	close(self->data);
}

TEST_F(bpf, program_counts_and_sums_every_write)
{
	struct perf_handle h;
	int index, prog_fd;
	__u64 want_sum = 0;

	index = rue_reg(self->data, "__rue_bpf u32 a", &self->check, 31);
	ASSERT_LE(0, index);
	prog_fd = load_prog(self->map_fd);
	ASSERT_LE(0, prog_fd) TH_LOG("BPF_PROG_LOAD: %s", strerror(errno));

	/* A system-wide perf event on CPU 0 with no ring: only the program consumes. */
	ASSERT_EQ(0, perf_open(&h, "__rue_bpf", -1, 0, 0));
	ASSERT_EQ(0, ioctl(h.fd, PERF_EVENT_IOC_SET_BPF, prog_fd)) TH_LOG("SET_BPF: %s", strerror(errno));
	ASSERT_EQ(0, ioctl(h.fd, PERF_EVENT_IOC_ENABLE, 0));
	EXPECT_EQ(1u << 31, self->check);

	for (__u32 a = 1; a <= EVENTS; a++) {
		want_sum += a;
		ASSERT_EQ(8, rue_emit(self->data, index, &a, sizeof(a)));
	}
	EXPECT_EQ(EVENTS, rue_bpf_map_get(self->map_fd, 0));
	EXPECT_EQ(want_sum, rue_bpf_map_get(self->map_fd, 1));

	perf_close(&h);
	EXPECT_EQ(0, self->check);
	close(prog_fd);
	EXPECT_EQ(0, rue_unreg(self->data, &self->check, 31));
}

TEST_F(bpf, link_decides_which_writes_reach_perf)
{
	union bpf_attr link_attr = {};
	struct perf_handle h;
	unsigned char raw[64];
	int index, prog_fd, link_fd;
	__u32 a, got;

	index = rue_reg(self->data, "__rue_bpfl u32 a", &self->check, 7);
	ASSERT_LE(0, index);
	prog_fd = load_even_filter(self->map_fd);
	ASSERT_LE(0, prog_fd) TH_LOG("BPF_PROG_LOAD: %s", strerror(errno));
	ASSERT_EQ(0, perf_open(&h, "__rue_bpfl", 0, -1, 1));

	link_attr.link_create.prog_fd = prog_fd;
	link_attr.link_create.target_fd = h.fd;
	link_attr.link_create.attach_type = BPF_PERF_EVENT;
	link_fd = sys_bpf(BPF_LINK_CREATE, &link_attr);
	ASSERT_LE(0, link_fd) TH_LOG("BPF_LINK_CREATE: %s", strerror(errno));
	EXPECT_EQ(1u << 7, self->check);
	/* A BPF program rides on a perf event: the status says perf, as upstream's would. */
	EXPECT_TRUE(status_has_line("__rue_bpfl # Used by perf"));

	for (a = 0; a < 10; a++)
		ASSERT_EQ(8, rue_emit(self->data, index, &a, sizeof(a)));
	EXPECT_EQ(10, rue_bpf_map_get(self->map_fd, 0));
	for (__u32 want = 0; want < 10; want += 2) {
		ASSERT_EQ(12, next_sample(&h, raw, sizeof(raw)));
		memcpy(&got, raw + 8, sizeof(got));
		EXPECT_EQ(want, got);
	}
	EXPECT_TRUE(ring_empty(&h));

	/* Closing the link detaches the program: perf sees every write again. */
	close(link_fd);
	for (a = 11; a < 13; a++)
		ASSERT_EQ(8, rue_emit(self->data, index, &a, sizeof(a)));
	EXPECT_EQ(10, rue_bpf_map_get(self->map_fd, 0));
	for (__u32 want = 11; want < 13; want++) {
		ASSERT_EQ(12, next_sample(&h, raw, sizeof(raw)));
		memcpy(&got, raw + 8, sizeof(got));
		EXPECT_EQ(want, got);
	}
	EXPECT_TRUE(ring_empty(&h));

	perf_close(&h);
	EXPECT_EQ(0, self->check);
	close(prog_fd);
	EXPECT_EQ(0, rue_unreg(self->data, &self->check, 7));
}

TEST_HARNESS_MAIN
