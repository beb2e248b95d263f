// SPDX-License-Identifier: GPL-2.0
/*
 * perf on user events, through perf_event_open() and its mmap ring:
 *   - the raw sample is [trace_entry][payload] with every field type at the
 *     offset, size and signedness the format file gives; a validator failure
 *     or a fault leaves no sample;
 *   - perf and ftrace attached at once both record; the enable bit and
 *     user_events_status follow each one's attach and detach;
 *   - payloads over 8184 bytes are accepted, recorded by nobody, counted in
 *     user_events_stats, and raise no kernel warning (upstream: WARN_ONCE, Q12);
 *   - perf and ftrace attach and detach while writers run on two CPUs.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <linux/user_events.h>

#include "kselftest_harness.h"
#include "rue_perf.h"

/* The number of writes user_events_stats says were too large; -1 if unreadable. */
static long long dropped_too_large(void)
{
	char buf[256], *p;

	if (read_file(RUE_TRACEFS "user_events_stats", buf, sizeof(buf)) <= 0)
		return -1;
	p = strstr(buf, "dropped_too_large: ");
	return p ? atoll(p + strlen("dropped_too_large: ")) : -1;
}

FIXTURE(perf) {
	int data;
	__u32 check;
};

FIXTURE_SETUP(perf)
{
	self->check = 0;
	self->data = open(RUE_TRACEFS "user_events_data", O_RDWR);
	ASSERT_LE(0, self->data);
}

FIXTURE_TEARDOWN(perf)
{
	close(self->data);
}

/* One field of the layout test: the format file's declaration and the field's bytes. */
struct layout_field {
	const char *decl;
	int size;
	int is_signed;
};

#define LAYOUT_ARGS "__rue_layout s8 a; u8 b; char c; unsigned char d; s16 e; u16 f; short g; " \
	"unsigned short h; s32 i; u32 j; int k; unsigned int l; s64 m; u64 n; char[5] q; " \
	"unsigned char[3] u; struct rue_pair r 6; __data_loc char[] s; __rel_loc char[] t"

static const struct layout_field layout[] = {
	{ "s8 a", 1, 1 }, { "u8 b", 1, 0 }, { "char c", 1, 1 }, { "unsigned char d", 1, 0 },
	{ "s16 e", 2, 1 }, { "u16 f", 2, 0 }, { "short g", 2, 1 }, { "unsigned short h", 2, 0 },
	{ "s32 i", 4, 1 }, { "u32 j", 4, 0 }, { "int k", 4, 1 }, { "unsigned int l", 4, 0 },
	{ "s64 m", 8, 1 }, { "u64 n", 8, 0 },
	/* The core prints arrays as name[len]; upstream's len is uninitialised (Q2), ours 0. */
	{ "char q[]", 5, 1 }, { "unsigned char u[]", 3, 0 },
	{ "struct rue_pair r", 6, 1 },
	{ "__data_loc char[] s", 4, 1 }, { "__rel_loc char t[]", 4, 1 },
};

#define LAYOUT_FIXED 66	/* sum of the sizes above */
#define LAYOUT_SIZE (LAYOUT_FIXED + 10)	/* and the two strings */

/*
 * Fills @payload (LAYOUT_SIZE bytes) with distinct bytes for the fixed fields,
 * then the strings of s ("hello", record offset 74) and t ("rel", offset 80).
 */
static void layout_payload(unsigned char *payload)
{
	__u32 loc;

	for (int i = 0; i < LAYOUT_FIXED; i++)
		payload[i] = 0x80 + i;
	memcpy(payload + LAYOUT_FIXED, "hello", 6);
	memcpy(payload + LAYOUT_FIXED + 6, "rel", 4);
	loc = 6 << 16 | (8 + LAYOUT_FIXED);	/* __data_loc: from the record start */
	memcpy(payload + LAYOUT_FIXED - 8, &loc, 4);
	loc = 4 << 16 | 6;			/* __rel_loc: from the end of the field */
	memcpy(payload + LAYOUT_FIXED - 4, &loc, 4);
}

TEST_F(perf, format_file_gives_every_field_type_packed_after_the_header)
{
	char fmt[8192], *p;
	int offset = 8;

	ASSERT_LE(0, rue_reg(self->data, LAYOUT_ARGS, &self->check, 0));
	ASSERT_LT(0, read_file(EVENTS_DIR "__rue_layout/format", fmt, sizeof(fmt)));
	p = strstr(fmt, "common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n");
	ASSERT_NE(NULL, p) TH_LOG("format:\n%s", fmt);
	p = strchr(p, '\n') + 2;
	for (size_t i = 0; i < sizeof(layout) / sizeof(layout[0]); i++) {
		char want[128];
		int len = snprintf(want, sizeof(want), "\tfield:%s;\toffset:%d;\tsize:%d;\tsigned:%d;\n",
				   layout[i].decl, offset, layout[i].size, layout[i].is_signed);

		ASSERT_EQ(0, strncmp(p, want, len)) TH_LOG("field %zu: want %sformat:\n%s", i, want, fmt);
		p += len;
		offset += layout[i].size;
	}
	EXPECT_EQ(8 + LAYOUT_FIXED, offset);
	EXPECT_EQ(0, rue_unreg(self->data, &self->check, 0));
}

TEST_F(perf, sample_is_trace_entry_then_payload_for_every_field_type)
{
	unsigned char payload[LAYOUT_SIZE], raw[256];
	struct { __u16 type; __u8 flags, preempt; __s32 pid; } hdr;
	struct perf_handle h;
	int index, id;

	index = rue_reg(self->data, LAYOUT_ARGS, &self->check, 0);
	ASSERT_LE(0, index) TH_LOG("register: %s", strerror(-index));
	id = event_id("__rue_layout");
	ASSERT_LT(0, id);
	layout_payload(payload);

	ASSERT_EQ(0, perf_open(&h, "__rue_layout", 0, -1, 1));
	EXPECT_EQ(1u, self->check);
	EXPECT_TRUE(status_has_line("__rue_layout # Used by perf"));
	ASSERT_EQ(4 + sizeof(payload), rue_emit(self->data, index, payload, sizeof(payload)));

	/* perf pads the raw data so that it and its u32 size end on 8 bytes. */
	ASSERT_EQ((8 + (int)sizeof(payload) + 4 + 7) / 8 * 8 - 4, next_sample(&h, raw, sizeof(raw)));
	memcpy(&hdr, raw, sizeof(hdr));
	EXPECT_EQ(id, hdr.type);
	EXPECT_EQ(syscall(SYS_gettid), hdr.pid);
	EXPECT_EQ(0, memcmp(raw + 8, payload, sizeof(payload)));
	EXPECT_STREQ("hello", (char *)raw + 74);
	EXPECT_STREQ("rel", (char *)raw + 70 + 4 + 6);
	EXPECT_TRUE(ring_empty(&h));

	perf_close(&h);
	EXPECT_EQ(0u, self->check);
	EXPECT_TRUE(status_has_line("__rue_layout"));
	EXPECT_EQ(0, rue_unreg(self->data, &self->check, 0));
}

TEST_F(perf, validator_failure_is_efault_and_leaves_no_sample)
{
	unsigned char payload[LAYOUT_SIZE];
	struct perf_handle h;
	__u32 loc = 7 << 16 | (8 + LAYOUT_FIXED + 4);	/* s runs past the payload */
	int index;

	index = rue_reg(self->data, LAYOUT_ARGS, &self->check, 0);
	ASSERT_LE(0, index);
	layout_payload(payload);
	memcpy(payload + LAYOUT_FIXED - 8, &loc, 4);
	ASSERT_EQ(0, perf_open(&h, "__rue_layout", 0, -1, 1));
	EXPECT_EQ(-EFAULT, rue_emit(self->data, index, payload, sizeof(payload)));
	EXPECT_TRUE(ring_empty(&h));
	perf_close(&h);
	EXPECT_EQ(0, rue_unreg(self->data, &self->check, 0));
}

TEST_F(perf, unreadable_payload_is_efault_and_leaves_no_sample)
{
	long page = sysconf(_SC_PAGESIZE);
	void *hole = mmap(NULL, page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct perf_handle h;
	int index;

	ASSERT_NE(MAP_FAILED, hole);
	index = rue_reg(self->data, LAYOUT_ARGS, &self->check, 0);
	ASSERT_LE(0, index);
	ASSERT_EQ(0, perf_open(&h, "__rue_layout", 0, -1, 1));
	EXPECT_EQ(-EFAULT, rue_emit(self->data, index, hole, LAYOUT_SIZE));
	EXPECT_TRUE(ring_empty(&h));
	perf_close(&h);
	munmap(hole, page);
	EXPECT_EQ(0, rue_unreg(self->data, &self->check, 0));
}

/*
 * The payload in a page this process has not touched (a memfd mapping with no
 * page table entry yet): the copy with page faults disabled comes up short, the
 * write faults the page in and copies again, and perf gets one whole sample.
 */
TEST_F(perf, payload_in_a_page_not_yet_mapped_is_recorded_whole)
{
	long page = sysconf(_SC_PAGESIZE);
	unsigned char payload[LAYOUT_SIZE], raw[256];
	struct perf_handle h;
	unsigned char *mapped;
	int index, fd;

	layout_payload(payload);
	fd = memfd_create("rue_payload", 0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ftruncate(fd, page));
	ASSERT_EQ((ssize_t)sizeof(payload), pwrite(fd, payload, sizeof(payload), 0));
	mapped = mmap(NULL, page, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, mapped);
	index = rue_reg(self->data, LAYOUT_ARGS, &self->check, 0);
	ASSERT_LE(0, index);
	ASSERT_EQ(0, perf_open(&h, "__rue_layout", 0, -1, 1));
	ASSERT_EQ(4 + sizeof(payload), rue_emit(self->data, index, mapped, sizeof(payload)));
	ASSERT_EQ((8 + (int)sizeof(payload) + 4 + 7) / 8 * 8 - 4, next_sample(&h, raw, sizeof(raw)));
	EXPECT_EQ(0, memcmp(raw + 8, payload, sizeof(payload)));
	EXPECT_TRUE(ring_empty(&h));
	perf_close(&h);
	munmap(mapped, page);
	close(fd);
	EXPECT_EQ(0, rue_unreg(self->data, &self->check, 0));
}

/*
 * Registers __rue_both (bit 3 of @check), empties the trace buffer, enables
 * the event in ftrace and attaches perf with a ring to this task: the write
 * index, or -errno.
 */
static int attach_both(int data, __u32 *check, struct perf_handle *h)
{
	int index = rue_reg(data, "__rue_both u32 a", check, 3), ret;

	if (index < 0)
		return index;
	ret = write_file(RUE_TRACEFS "trace", "");
	if (!ret)
		ret = write_file(EVENTS_DIR "__rue_both/enable", "1");
	if (!ret)
		ret = perf_open(h, "__rue_both", 0, -1, 1);
	return ret ? ret : index;
}

TEST_F(perf, perf_and_ftrace_attached_at_once_both_record_every_write)
{
	char buf[16384], line[64];
	struct perf_handle h;
	unsigned char raw[64];
	__u32 a, got;
	int index;

	index = attach_both(self->data, &self->check, &h);
	ASSERT_LE(0, index) TH_LOG("attach_both: %s", strerror(-index));
	EXPECT_EQ(1u << 3, self->check);
	EXPECT_TRUE(status_has_line("__rue_both # Used by ftrace perf"));

	for (a = 1; a <= 3; a++)
		ASSERT_EQ(8, rue_emit(self->data, index, &a, sizeof(a)));
	for (a = 1; a <= 3; a++) {
		ASSERT_EQ(12, next_sample(&h, raw, sizeof(raw)));
		memcpy(&got, raw + 8, sizeof(got));
		EXPECT_EQ(a, got);
	}
	EXPECT_TRUE(ring_empty(&h));
	ASSERT_LT(0, read_file(RUE_TRACEFS "trace", buf, sizeof(buf)));
	for (a = 1; a <= 3; a++) {
		snprintf(line, sizeof(line), "__rue_both: a=0x%x (%u)\n", a, a);
		EXPECT_NE(NULL, strstr(buf, line)) TH_LOG("trace:\n%s", buf);
	}

	perf_close(&h);
	ASSERT_EQ(0, write_file(EVENTS_DIR "__rue_both/enable", "0"));
	EXPECT_EQ(0, rue_unreg(self->data, &self->check, 3));
}

TEST_F(perf, each_consumer_detaches_alone)
{
	char buf[16384];
	struct perf_handle h;
	__u32 a = 4;
	int index;

	index = attach_both(self->data, &self->check, &h);
	ASSERT_LE(0, index) TH_LOG("attach_both: %s", strerror(-index));

	/* perf leaves: ftrace alone keeps the event enabled and recording. */
	perf_close(&h);
	EXPECT_EQ(1u << 3, self->check);
	EXPECT_TRUE(status_has_line("__rue_both # Used by ftrace"));
	ASSERT_EQ(8, rue_emit(self->data, index, &a, sizeof(a)));
	ASSERT_LT(0, read_file(RUE_TRACEFS "trace", buf, sizeof(buf)));
	EXPECT_NE(NULL, strstr(buf, "__rue_both: a=0x4 (4)\n")) TH_LOG("trace:\n%s", buf);

	/* ftrace leaves too: disabled, and writes fail with EBADF as upstream. */
	ASSERT_EQ(0, write_file(EVENTS_DIR "__rue_both/enable", "0"));
	EXPECT_EQ(0u, self->check);
	EXPECT_TRUE(status_has_line("__rue_both"));
	EXPECT_EQ(-EBADF, rue_emit(self->data, index, &a, sizeof(a)));
	EXPECT_EQ(0, rue_unreg(self->data, &self->check, 3));
}

TEST_F(perf, payload_over_8184_bytes_is_dropped_and_counted)
{
	static unsigned char payload[MAX_PAYLOAD + 1], raw[MAX_PAYLOAD + 64];
	struct perf_handle h;
	long long before;
	int index;

	index = rue_reg(self->data, "__rue_big u32 a", &self->check, 0);
	ASSERT_LE(0, index);
	ASSERT_EQ(0, perf_open(&h, "__rue_big", 0, -1, 1));
	before = dropped_too_large();
	ASSERT_LE(0, before);

	/* One byte too many: accepted as upstream, recorded by nobody, counted. */
	memset(payload, 0x5a, sizeof(payload));
	EXPECT_EQ(4 + MAX_PAYLOAD + 1, rue_emit(self->data, index, payload, MAX_PAYLOAD + 1));
	EXPECT_TRUE(ring_empty(&h));
	EXPECT_EQ(before + 1, dropped_too_large());

	/* The largest payload fills perf's 8192-byte record exactly. */
	EXPECT_EQ(4 + MAX_PAYLOAD, rue_emit(self->data, index, payload, MAX_PAYLOAD));
	EXPECT_EQ(8 + MAX_PAYLOAD + 4, next_sample(&h, raw, sizeof(raw)));
	EXPECT_EQ(0, memcmp(raw + 8, payload, MAX_PAYLOAD));
	EXPECT_EQ(before + 1, dropped_too_large());

	perf_close(&h);
	EXPECT_EQ(0, rue_unreg(self->data, &self->check, 0));
}

/* Writers for the race test: write until told to stop, count outcomes. */
struct writer {
	pthread_t thread;
	int cpu, data, index;
	atomic_long written, disabled, other;
	atomic_int *stop;
	int last_errno;
	int affinity;	/* sched_setaffinity's result: 0 if pinned to @cpu */
};

static void *writer_fn(void *arg)
{
	struct writer *w = arg;
	cpu_set_t set;
	__u32 a = 0;

	CPU_ZERO(&set);
	CPU_SET(w->cpu, &set);
	w->affinity = sched_setaffinity(0, sizeof(set), &set);
	while (!atomic_load(w->stop)) {
		ssize_t n = rue_emit(w->data, w->index, &a, sizeof(a));

		a++;
		if (n == 8) {
			atomic_fetch_add(&w->written, 1);
		} else if (n == -EBADF) {
			atomic_fetch_add(&w->disabled, 1);
		} else {
			w->last_errno = (int)-n;
			atomic_fetch_add(&w->other, 1);
		}
	}
	return NULL;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * Waits (bounded) until each writer has written twice more since @seen. The
 * first write counted after @seen may have started before it and reached no
 * consumer (a write racing a detach succeeds and records nothing, as
 * upstream); the second one started after @seen was taken.
 */
static int writers_progressed(struct writer *w, const long *seen)
{
	double deadline = now() + rue_bound_ms(10000) / 1000.0;

	for (int i = 0; i < 2; i++) {
		while (atomic_load(&w[i].written) < seen[i] + 2) {
			if (now() > deadline)
				return 0;
			sched_yield();
		}
	}
	return 1;
}

#define RACE_ROUNDS 100

/*
 * About 20 s under TCG with KASAN, which the harness's default 30 s timeout
 * does not always cover; the bounded waits inside keep any real hang finite.
 */
TEST_F_TIMEOUT(perf, attach_and_detach_race_with_writers_on_two_cpus, 180)
{
	double start = now();
	struct writer w[2] = {};
	atomic_int stop = 0;
	long seen[2];
	struct perf_handle cpu_ev[2];
	long long count;
	int index;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		SKIP(return, "needs two CPUs");
	index = rue_reg(self->data, "__rue_race u32 a", &self->check, 0);
	ASSERT_LE(0, index);
	for (int i = 0; i < 2; i++) {
		w[i].cpu = i;
		w[i].data = self->data;
		w[i].index = index;
		w[i].stop = &stop;
		ASSERT_EQ(0, pthread_create(&w[i].thread, NULL, writer_fn, &w[i]));
	}

	for (int round = 0; round < RACE_ROUNDS; round++) {
		/* System-wide perf events on both CPUs, with a ring on one of them. */
		for (int cpu = 0; cpu < 2; cpu++)
			ASSERT_EQ(0, perf_open(&cpu_ev[cpu], "__rue_race", -1, cpu, cpu == round % 2));
		if (round % 3 == 0)
			ASSERT_EQ(0, write_file(EVENTS_DIR "__rue_race/enable", "1"));
		EXPECT_EQ(1u, self->check) TH_LOG("round %d: bit not set while attached", round);
		/* Writes that start from here on run while perf is attached on their CPU. */
		for (int i = 0; i < 2; i++)
			seen[i] = atomic_load(&w[i].written);
		ASSERT_TRUE(writers_progressed(w, seen)) TH_LOG("round %d: no write while enabled", round);
		/* Detach in the order opposite to attach on every other round. */
		if (round % 3 == 0 && round % 2)
			ASSERT_EQ(0, write_file(EVENTS_DIR "__rue_race/enable", "0"));
		for (int cpu = 0; cpu < 2; cpu++) {
			ASSERT_EQ(sizeof(count), read(cpu_ev[cpu].fd, &count, sizeof(count)));
			EXPECT_LE(1, count) TH_LOG("round %d: perf on cpu %d counted nothing", round, cpu);
			perf_close(&cpu_ev[cpu]);
		}
		if (round % 3 == 0 && !(round % 2))
			ASSERT_EQ(0, write_file(EVENTS_DIR "__rue_race/enable", "0"));
		EXPECT_EQ(0u, self->check) TH_LOG("round %d: bit left set", round);
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < 2; i++) {
		pthread_join(w[i].thread, NULL);
		EXPECT_EQ(0, w[i].affinity) TH_LOG("writer %d not pinned to its CPU", i);
		EXPECT_EQ(0, atomic_load(&w[i].other)) TH_LOG("cpu %d: errno %d", i, w[i].last_errno);
		TH_LOG("cpu %d: %ld written, %ld while disabled", i, atomic_load(&w[i].written),
		       atomic_load(&w[i].disabled));
	}
	TH_LOG("%d rounds in %.1f s", RACE_ROUNDS, now() - start);
	EXPECT_EQ(0u, self->check);
	EXPECT_TRUE(status_has_line("__rue_race"));
	EXPECT_EQ(0, rue_unreg(self->data, &self->check, 0));
}

TEST_HARNESS_MAIN
