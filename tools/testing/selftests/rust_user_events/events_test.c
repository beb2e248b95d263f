// SPDX-License-Identifier: GPL-2.0
/*
 * Events: registration errnos (upstream's user_events_ioctl_reg()), write
 * indexes, the format, trace and status texts, multi-format naming,
 * persistence, auto-delete, kernel.user_events_max, UNREG, 8-byte enable words
 * and the write path's errnos. Every event here is named __rue_*, so nothing
 * clashes with the upstream selftests.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/io_uring.h>
#include <linux/user_events.h>

#include "kselftest_harness.h"
#include "rue_helpers.h"
#include "rue_perf.h"

#define TRACEFS "/sys/kernel/tracing/"
#define DATA_FILE TRACEFS "user_events_data"
#define STATUS_FILE TRACEFS "user_events_status"
#define MAX_FILE "/proc/sys/kernel/user_events_max"

static int reg_event(int fd, const char *name_args, void *addr, int size, int bit,
		     int flags, __u32 *index)
{
	struct user_reg reg = {
		.size = sizeof(reg),
		.enable_bit = bit,
		.enable_size = size,
		.flags = flags,
		.enable_addr = (__u64)(uintptr_t)addr,
		.name_args = (__u64)(uintptr_t)name_args,
	};
	int ret = ioctl(fd, DIAG_IOCSREG, &reg);

	if (!ret && index)
		*index = reg.write_index;
	return ret ? -errno : 0;
}

static int unreg_event(int fd, void *addr, int bit)
{
	struct user_unreg unreg = {
		.size = sizeof(unreg),
		.disable_bit = bit,
		.disable_addr = (__u64)(uintptr_t)addr,
	};

	return ioctl(fd, DIAG_IOCSUNREG, &unreg) ? -errno : 0;
}

static int del_event(int fd, const char *name)
{
	return ioctl(fd, DIAG_IOCSDEL, name) ? -errno : 0;
}

FIXTURE(ev) {
	int fd;
	__u32 check;
	__u64 check64;
};

FIXTURE_SETUP(ev)
{
	self->fd = open(DATA_FILE, O_RDWR);
	ASSERT_NE(-1, self->fd);
	self->check = 0;
	self->check64 = 0;
}

FIXTURE_TEARDOWN(ev)
{
	close(self->fd);
}

TEST_F(ev, reg_struct_errnos)
{
	struct user_reg reg = {};
	char big[4096 + 64] = {};

	/* size beyond PAGE_SIZE */
	reg.size = 4097;
	EXPECT_EQ(-1, ioctl(self->fd, DIAG_IOCSREG, &reg));
	EXPECT_EQ(E2BIG, errno);
	/* size below offsetofend(write_index) */
	reg.size = 27;
	EXPECT_EQ(-1, ioctl(self->fd, DIAG_IOCSREG, &reg));
	EXPECT_EQ(EINVAL, errno);
	/* non-zero bytes past the known struct */
	memset(big, 0, sizeof(big));
	*(__u32 *)big = 32;
	big[30] = 1;
	EXPECT_EQ(-1, ioctl(self->fd, DIAG_IOCSREG, big));
	EXPECT_EQ(E2BIG, errno);
	/* unreadable struct */
	EXPECT_EQ(-1, ioctl(self->fd, DIAG_IOCSREG, (void *)8));
	EXPECT_EQ(EFAULT, errno);
}

TEST_F(ev, reg_field_errnos)
{
	void *c = &self->check;
	char long_name[600];

	EXPECT_EQ(-EINVAL, reg_event(self->fd, "__rue_a u32 a", c, 4, 0, 4, NULL));
	EXPECT_EQ(-EINVAL, reg_event(self->fd, "__rue_a u32 a", c, 3, 0, 0, NULL));
	EXPECT_EQ(-EINVAL, reg_event(self->fd, "__rue_a u32 a", (char *)c + 2, 4, 0, 0, NULL));
	EXPECT_EQ(-EINVAL, reg_event(self->fd, "__rue_a u32 a", c, 4, 32, 0, NULL));
	EXPECT_EQ(-EFAULT, reg_event(self->fd, "__rue_a u32 a", (void *)-4096L, 4, 0, 0, NULL));
	EXPECT_EQ(-EFAULT, reg_event(self->fd, NULL, c, 4, 0, 0, NULL));
	memset(long_name, 'a', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	EXPECT_EQ(-EINVAL, reg_event(self->fd, long_name, c, 4, 0, 0, NULL));
	EXPECT_EQ(-EINVAL, reg_event(self->fd, "__rue_a:flag u32 a", c, 4, 0, 0, NULL));
	EXPECT_EQ(-EINVAL, reg_event(self->fd, "__rue_a long a", c, 4, 0, 0, NULL));
	EXPECT_EQ(-EINVAL, reg_event(self->fd, "__rue_a u32 a ", c, 4, 0, 0, NULL));
	EXPECT_EQ(-EINVAL, reg_event(self->fd, "__rue_a char[1025] a", c, 4, 0, 0, NULL));
	EXPECT_EQ(-EINVAL, reg_event(self->fd, "__rue_a struct x a 2147483648", c, 4, 0, 0, NULL));
}

/*
 * A name shorter than 128 bytes is copied onto the stack, a longer one into an
 * allocation (strndup_user): both register, at every length up to the limit of
 * 511 bytes; 512 is EINVAL; a name that runs into unreadable memory is EFAULT
 * on either side of 128.
 */
TEST_F(ev, reg_names_of_every_length_up_to_the_limit)
{
	static const int lens[] = { 20, 126, 127, 128, 129, 300, 511 };
	long page = sysconf(_SC_PAGESIZE);
	char name[600], *pages;
	__u32 words[8] = {};

	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		int n = snprintf(name, sizeof(name), "__rue_nl%d u32 ", lens[i]);

		memset(name + n, 'f', lens[i] - n);
		name[lens[i]] = '\0';
		ASSERT_EQ(lens[i], strlen(name));
		EXPECT_EQ(0, reg_event(self->fd, name, &words[i], 4, 0, 0, NULL)) TH_LOG("length %d", lens[i]);
	}
	memset(name, 'a', 512);
	name[512] = '\0';
	EXPECT_EQ(-EINVAL, reg_event(self->fd, name, &words[7], 4, 0, 0, NULL));

	pages = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, pages);
	ASSERT_EQ(0, mprotect(pages + page, page, PROT_NONE));
	memset(pages, 'b', page);
	EXPECT_EQ(-EFAULT, reg_event(self->fd, pages + page - 100, &words[7], 4, 0, 0, NULL));
	EXPECT_EQ(-EFAULT, reg_event(self->fd, pages + page - 200, &words[7], 4, 0, 0, NULL));
	EXPECT_EQ(-EFAULT, del_event(self->fd, pages + page - 100));
	EXPECT_EQ(-EFAULT, del_event(self->fd, pages + page - 200));
	munmap(pages, 2 * page);
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
		EXPECT_EQ(0, unreg_event(self->fd, &words[i], 0));
}

TEST_F(ev, same_addr_bit_and_different_fields_give_eaddrinuse)
{
	__u32 idx = 99;

	ASSERT_EQ(0, reg_event(self->fd, "__rue_dup u32 a", &self->check, 4, 0, 0, &idx));
	EXPECT_EQ(0, idx);
	EXPECT_EQ(-EADDRINUSE, reg_event(self->fd, "__rue_dup u32 a", &self->check, 4, 0, 0, NULL));
	EXPECT_EQ(-EADDRINUSE, reg_event(self->fd, "__rue_dup u64 a", &self->check, 4, 1, 0, NULL));
	EXPECT_EQ(0, unreg_event(self->fd, &self->check, 0));
}

TEST_F(ev, write_index_is_per_file_and_reused)
{
	__u32 a = 9, b = 9, again = 9;
	int other = open(DATA_FILE, O_RDWR);

	ASSERT_NE(-1, other);
	ASSERT_EQ(0, reg_event(self->fd, "__rue_ia u32 a", &self->check, 4, 0, 0, &a));
	ASSERT_EQ(0, reg_event(self->fd, "__rue_ib u32 b", &self->check, 4, 1, 0, &b));
	ASSERT_EQ(0, reg_event(self->fd, "__rue_ia u32 a", &self->check, 4, 2, 0, &again));
	EXPECT_EQ(0, a);
	EXPECT_EQ(1, b);
	EXPECT_EQ(0, again);
	ASSERT_EQ(0, reg_event(other, "__rue_ib u32 b", &self->check, 4, 3, 0, &b));
	EXPECT_EQ(0, b);
	EXPECT_EQ(0, unreg_event(self->fd, &self->check, 0));
	EXPECT_EQ(0, unreg_event(self->fd, &self->check, 1));
	EXPECT_EQ(0, unreg_event(self->fd, &self->check, 2));
	EXPECT_EQ(0, unreg_event(self->fd, &self->check, 3));
	close(other);
}

TEST_F(ev, format_file_is_exact)
{
	char buf[2048];
	const char *want =
		"name: __rue_fmt\n"
		"ID: ";
	const char *fields =
		"\tfield:u32 a;\toffset:8;\tsize:4;\tsigned:0;\n"
		"\tfield:char b[];\toffset:12;\tsize:20;\tsigned:1;\n"
		"\tfield:__rel_loc char c[];\toffset:32;\tsize:4;\tsigned:1;\n"
		"\n"
		"print fmt: \"a=%u b=%s c=%s\", REC->a, REC->b, __get_rel_str(c)\n";

	ASSERT_EQ(0, reg_event(self->fd, "__rue_fmt u32 a; char[20] b; __rel_loc char[] c",
			       &self->check, 4, 0, 0, NULL));
	ASSERT_LT(0, read_file(TRACEFS "events/user_events/__rue_fmt/format", buf, sizeof(buf)));
	EXPECT_EQ(0, strncmp(buf, want, strlen(want)));
	ASSERT_NE(NULL, strstr(buf, "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"));
	EXPECT_NE(NULL, strstr(buf, fields)) TH_LOG("format:\n%s", buf);
	EXPECT_EQ(0, unreg_event(self->fd, &self->check, 0));
}

/*
 * A print format longer than the 256 bytes the module writes on the stack (it
 * then writes it into an allocation), and one just under: both exact.
 */
TEST_F(ev, long_print_formats_are_exact)
{
	static char buf[8192], cmd[2048], want[4096];
	int counts[] = { 4, 5 };

	for (int k = 0; k < 2; k++) {
		int n = counts[k], c = 0, w;

		c += snprintf(cmd + c, sizeof(cmd) - c, "__rue_lf%d", n);
		w = snprintf(want, sizeof(want), "print fmt: \"");
		for (int i = 0; i < n; i++) {
			c += snprintf(cmd + c, sizeof(cmd) - c, "%s u64 field_with_a_long_name_%02d",
				      i ? ";" : "", i);
			w += snprintf(want + w, sizeof(want) - w, "%sfield_with_a_long_name_%02d=%%llu",
				      i ? " " : "", i);
		}
		w += snprintf(want + w, sizeof(want) - w, "\"");
		for (int i = 0; i < n; i++)
			w += snprintf(want + w, sizeof(want) - w, ", REC->field_with_a_long_name_%02d", i);
		snprintf(want + w, sizeof(want) - w, "\n");
		/* 4 fields: 253 bytes of format; 5: 316. */
		EXPECT_EQ(k ? 316 : 253, (int)strlen(want) - 12) TH_LOG("%s", want);
		ASSERT_EQ(0, reg_event(self->fd, cmd, &self->check, 4, 0, 0, NULL));
		snprintf(cmd, sizeof(cmd), TRACEFS "events/user_events/__rue_lf%d/format", n);
		ASSERT_LT(0, read_file(cmd, buf, sizeof(buf)));
		EXPECT_NE(NULL, strstr(buf, want)) TH_LOG("want %s\nformat:\n%s", want, buf);
		EXPECT_EQ(0, unreg_event(self->fd, &self->check, 0));
	}
}

TEST_F(ev, enable_sets_bit_and_trace_shows_fields)
{
	struct {
		__s32 idx;
		__u32 a;
		char b[4];
	} __attribute__((packed)) rec = { 0, 0xc001, "xyz" };
	char buf[65536];
	__u32 idx = 9;

	self->check = 0xf0;	/* neighbouring bits stay */
	ASSERT_EQ(0, reg_event(self->fd, "__rue_tr u32 a; char[4] b", &self->check, 4, 0, 0, &idx));
	EXPECT_EQ(0xf0, self->check);
	EXPECT_EQ(-1, write(self->fd, &rec, sizeof(rec)));
	EXPECT_EQ(EBADF, errno);
	ASSERT_EQ(0, write_file(TRACEFS "trace", ""));
	ASSERT_EQ(0, write_file(TRACEFS "events/user_events/__rue_tr/enable", "1"));
	EXPECT_EQ(0xf1, self->check);
	rec.idx = idx;
	EXPECT_EQ(sizeof(rec), write(self->fd, &rec, sizeof(rec)));
	ASSERT_LT(0, read_file(TRACEFS "trace", buf, sizeof(buf)));
	EXPECT_NE(NULL, strstr(buf, "__rue_tr: a=0xc001 (49153) b=xyz\n")) TH_LOG("trace:\n%s", buf);
	ASSERT_LT(0, read_file(STATUS_FILE, buf, sizeof(buf)));
	EXPECT_NE(NULL, strstr(buf, "__rue_tr # Used by ftrace\n")) TH_LOG("status:\n%s", buf);
	ASSERT_EQ(0, write_file(TRACEFS "events/user_events/__rue_tr/enable", "0"));
	EXPECT_EQ(0xf0, self->check);
	EXPECT_EQ(0, unreg_event(self->fd, &self->check, 0));
}

TEST_F(ev, filter_and_hist_trigger_use_the_fields)
{
	struct {
		__s32 idx;
		__u32 a;
	} __attribute__((packed)) rec = { 0, 0 };
	char buf[65536];
	__u32 idx = 9;

	ASSERT_EQ(0, reg_event(self->fd, "__rue_fh u32 a", &self->check, 4, 0, 0, &idx));
	ASSERT_EQ(0, write_file(TRACEFS "trace", ""));
	ASSERT_EQ(0, write_file(TRACEFS "events/user_events/__rue_fh/filter", "a > 5"));
	ASSERT_EQ(0, write_file(TRACEFS "events/user_events/__rue_fh/trigger", "hist:keys=a"));
	ASSERT_EQ(0, write_file(TRACEFS "events/user_events/__rue_fh/enable", "1"));
	rec.idx = idx;
	for (rec.a = 1; rec.a <= 10; rec.a++)
		ASSERT_EQ(sizeof(rec), write(self->fd, &rec, sizeof(rec)));
	ASSERT_LT(0, read_file(TRACEFS "trace", buf, sizeof(buf)));
	EXPECT_EQ(NULL, strstr(buf, "__rue_fh: a=0x5 (5)\n")) TH_LOG("trace:\n%s", buf);
	EXPECT_NE(NULL, strstr(buf, "__rue_fh: a=0x6 (6)\n")) TH_LOG("trace:\n%s", buf);
	EXPECT_NE(NULL, strstr(buf, "__rue_fh: a=0xa (10)\n"));
	ASSERT_LT(0, read_file(TRACEFS "events/user_events/__rue_fh/hist", buf, sizeof(buf)));
	/* Triggers see every record; the event filter only decides what is kept in the buffer. */
	EXPECT_NE(NULL, strstr(buf, "{ a:         10 } hitcount:          1\n")) TH_LOG("hist:\n%s", buf);
	EXPECT_NE(NULL, strstr(buf, "Hits: 10\n")) TH_LOG("hist:\n%s", buf);
	EXPECT_NE(NULL, strstr(buf, "Entries: 10\n")) TH_LOG("hist:\n%s", buf);
	ASSERT_EQ(0, write_file(TRACEFS "events/user_events/__rue_fh/enable", "0"));
	/* O_TRUNC clears the triggers. */
	ASSERT_EQ(0, write_file(TRACEFS "events/user_events/__rue_fh/trigger", ""));
	ASSERT_EQ(0, write_file(TRACEFS "events/user_events/__rue_fh/filter", "0"));
	EXPECT_EQ(0, unreg_event(self->fd, &self->check, 0));
}

TEST_F(ev, write_path_errnos)
{
	struct {
		__s32 idx;
		__u32 loc;
		char data[8];
	} __attribute__((packed)) rec = { 0 };
	__u32 idx = 9;

	ASSERT_EQ(0, reg_event(self->fd, "__rue_wr __rel_loc char[] s", &self->check, 4, 0, 0, &idx));
	EXPECT_EQ(-1, write(self->fd, &idx, sizeof(idx)));	/* payload < min_size */
	EXPECT_EQ(EINVAL, errno);
	idx = 7;
	EXPECT_EQ(-1, write(self->fd, &idx, sizeof(idx)));	/* unknown index */
	EXPECT_EQ(ENOENT, errno);
	ASSERT_EQ(0, write_file(TRACEFS "events/user_events/__rue_wr/enable", "1"));
	rec.loc = (5 << 16) | 0;
	memcpy(rec.data, "Test", 5);
	EXPECT_EQ(sizeof(rec), write(self->fd, &rec, sizeof(rec)));
	rec.loc = (9 << 16) | 0;		/* past the record */
	EXPECT_EQ(-1, write(self->fd, &rec, sizeof(rec)));
	EXPECT_EQ(EFAULT, errno);
	memset(rec.data, 'A', sizeof(rec.data));	/* no NUL */
	rec.loc = (8 << 16) | 0;
	EXPECT_EQ(-1, write(self->fd, &rec, sizeof(rec)));
	EXPECT_EQ(EFAULT, errno);
	ASSERT_EQ(0, write_file(TRACEFS "events/user_events/__rue_wr/enable", "0"));
	EXPECT_EQ(0, unreg_event(self->fd, &self->check, 0));
}

/* Lines of @buf that contain @what. */
static int count_in(const char *buf, const char *what)
{
	int n = 0;

	for (const char *p = buf; (p = strstr(p, what)); p += strlen(what))
		n++;
	return n;
}

/*
 * With one ftrace file the only consumer, a write is copied straight into its
 * reserved record: a payload that fails validation, or that cannot be read
 * whole, must leave no record, filtered file (a per-CPU scratch event) or not,
 * and a payload in a page not yet mapped is faulted in and recorded whole.
 */
TEST_F(ev, failed_writes_leave_no_record_filtered_or_not)
{
	long page = sysconf(_SC_PAGESIZE);
	struct {
		__s32 idx;
		__u32 loc;
		char data[8];
	} __attribute__((packed)) rec = { 0 };
	static char buf[1 << 20];
	unsigned char *pages, *mapped;
	__u32 idx = 9;
	int fd;

	pages = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, pages);
	ASSERT_EQ(0, mprotect(pages + page, page, PROT_NONE));
	fd = memfd_create("rue_payload", 0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ftruncate(fd, page));
	ASSERT_EQ(0, reg_event(self->fd, "__rue_dc __rel_loc char[] s", &self->check, 4, 0, 0, &idx));
	rec.idx = idx;
	ASSERT_EQ((ssize_t)sizeof(rec), pwrite(fd, &rec, sizeof(rec), 0));
	ASSERT_EQ(0, write_file(TRACEFS "events/user_events/__rue_dc/enable", "1"));
	for (int filtered = 0; filtered < 2; filtered++) {
		ASSERT_EQ(0, write_file(TRACEFS "events/user_events/__rue_dc/filter",
					filtered ? "common_pid != 0" : "0"));
		ASSERT_EQ(0, write_file(TRACEFS "trace", ""));

		rec.loc = 8 << 16;		/* no NUL in the string */
		memset(rec.data, 'A', sizeof(rec.data));
		EXPECT_EQ(-1, write(self->fd, &rec, sizeof(rec)));
		EXPECT_EQ(EFAULT, errno);

		/* The payload's last 4 bytes on the PROT_NONE page. */
		rec.loc = 4 << 16;
		memcpy(rec.data, "bad", 4);
		memcpy(pages + page - (sizeof(rec) - 4), &rec, sizeof(rec) - 4);
		EXPECT_EQ(-1, write(self->fd, pages + page - (sizeof(rec) - 4), sizeof(rec)));
		EXPECT_EQ(EFAULT, errno);

		rec.loc = 5 << 16;
		memcpy(rec.data, "good", 5);
		EXPECT_EQ(sizeof(rec), write(self->fd, &rec, sizeof(rec)));

		/* A memfd page this process has never touched: no page table entry yet. */
		memcpy(rec.data, "late", 5);
		ASSERT_EQ((ssize_t)sizeof(rec), pwrite(fd, &rec, sizeof(rec), 0));
		mapped = mmap(NULL, page, PROT_READ, MAP_SHARED, fd, 0);
		ASSERT_NE(MAP_FAILED, mapped);
		EXPECT_EQ(sizeof(rec), write(self->fd, mapped, sizeof(rec)));
		munmap(mapped, page);

		ASSERT_LT(0, read_file(TRACEFS "trace", buf, sizeof(buf)));
		EXPECT_EQ(2, count_in(buf, "__rue_dc:")) TH_LOG("filtered %d, trace:\n%s", filtered, buf);
		EXPECT_EQ(1, count_in(buf, "__rue_dc: s=good\n")) TH_LOG("trace:\n%s", buf);
		EXPECT_EQ(1, count_in(buf, "__rue_dc: s=late\n")) TH_LOG("trace:\n%s", buf);
	}
	ASSERT_EQ(0, write_file(TRACEFS "events/user_events/__rue_dc/enable", "0"));
	ASSERT_EQ(0, write_file(TRACEFS "events/user_events/__rue_dc/filter", "0"));
	EXPECT_EQ(0, unreg_event(self->fd, &self->check, 0));
	close(fd);
	munmap(pages, 2 * page);
}

/* What the event's trigger file says of its "snapshot:N" trigger: N now, or -1. */
static int snapshot_count(const char *event)
{
	char path[256], buf[256];
	const char *at;

	snprintf(path, sizeof(path), TRACEFS "events/user_events/%s/trigger", event);
	if (read_file(path, buf, sizeof(buf)) <= 0)
		return -1;
	at = strstr(buf, "snapshot:count=");
	return at ? atoi(at + strlen("snapshot:count=")) : -1;
}

/*
 * An event's unconditional triggers run once per write, before the payload is copied, as
 * upstream's ftrace probe runs them: also when the payload's page was not present yet (the
 * write path copies with page faults disabled, faults the page in and copies again), and also
 * when the payload fails validation, with one consumer or with several. A counted snapshot
 * trigger counts its runs (stacktrace and traceoff run after a record is committed, a counted
 * enable_event only when it changes something).
 */
TEST_F(ev, triggers_run_once_per_write)
{
	long page = sysconf(_SC_PAGESIZE);
	struct {
		__u32 loc;
		char data[8];
	} __attribute__((packed)) rec = { 0 };
	struct perf_handle perf = { .fd = -1 };
	struct iovec io[2];
	__u32 idx = 9;
	int fd, consumers, want = 50;
	void *mapped;

	if (access(TRACEFS "snapshot", F_OK))
		SKIP(return, "the kernel has no snapshot trigger (CONFIG_TRACER_SNAPSHOT)");
	ASSERT_EQ(0, reg_event(self->fd, "__rue_tg __rel_loc char[] s", &self->check, 4, 0, 0,
			       &idx));
	ASSERT_EQ(0, write_file(TRACEFS "events/user_events/__rue_tg/trigger", "snapshot:50"));
	ASSERT_EQ(0, write_file(TRACEFS "events/user_events/__rue_tg/enable", "1"));
	ASSERT_EQ(want, snapshot_count("__rue_tg"));
	io[0].iov_base = &idx;
	io[0].iov_len = sizeof(idx);
	io[1].iov_len = sizeof(rec);
	fd = memfd_create("rue_payload", 0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ftruncate(fd, page));
	for (consumers = 1; consumers <= 2; consumers++) {
		if (consumers == 2)
			ASSERT_EQ(0, perf_open(&perf, "__rue_tg", 0, -1, 0));

		/* Valid. */
		rec.loc = 5 << 16;
		memcpy(rec.data, "good", 5);
		io[1].iov_base = &rec;
		EXPECT_EQ(sizeof(idx) + sizeof(rec), writev(self->fd, io, 2));
		EXPECT_EQ(--want, snapshot_count("__rue_tg")) TH_LOG("%d consumers", consumers);

		/* Valid, from a page of a file this process has not touched: not present. */
		ASSERT_EQ((ssize_t)sizeof(rec), pwrite(fd, &rec, sizeof(rec), 0));
		mapped = mmap(NULL, page, PROT_READ, MAP_SHARED, fd, 0);
		ASSERT_NE(MAP_FAILED, mapped);
		io[1].iov_base = mapped;
		EXPECT_EQ(sizeof(idx) + sizeof(rec), writev(self->fd, io, 2));
		munmap(mapped, page);
		EXPECT_EQ(--want, snapshot_count("__rue_tg"))
			TH_LOG("%d consumers, a page not present", consumers);

		/* Invalid: no NUL in the string. */
		memset(rec.data, 'A', sizeof(rec.data));
		rec.loc = 8 << 16;
		io[1].iov_base = &rec;
		EXPECT_EQ(-1, writev(self->fd, io, 2));
		EXPECT_EQ(EFAULT, errno);
		EXPECT_EQ(--want, snapshot_count("__rue_tg"))
			TH_LOG("%d consumers, a payload that fails validation", consumers);
	}
	perf_close(&perf);
	close(fd);
	ASSERT_EQ(0, write_file(TRACEFS "events/user_events/__rue_tg/enable", "0"));
	ASSERT_EQ(0, write_file(TRACEFS "events/user_events/__rue_tg/trigger", "!snapshot"));
	/* Frees the snapshot buffer the trigger allocated. */
	ASSERT_EQ(0, write_file(TRACEFS "snapshot", "0"));
	EXPECT_EQ(0, unreg_event(self->fd, &self->check, 0));
	/* Deleted once unused: the trigger's removal is synchronised, the file closed. */
	close(self->fd);
	self->fd = open(DATA_FILE, O_RDWR);
	EXPECT_TRUE(gone_within(TRACEFS "events/user_events/__rue_tg", 10000));
}

/*
 * The fields of the "trace" line a record of __rue_hd with a == @a begins
 * with: "comm-pid", the CPU and the latency flags. Returns 0 if found.
 */
static int header_of(const char *buf, unsigned int a, char *task, size_t task_len,
		     int *cpu, char *flags)
{
	char want[64], line[512];
	const char *hit, *start, *end;
	char t[256];

	snprintf(want, sizeof(want), "__rue_hd: a=0x%x (%u)\n", a, a);
	hit = strstr(buf, want);
	if (!hit)
		return -1;
	for (start = hit; start > buf && start[-1] != '\n'; start--)
		;
	end = strchr(hit, '\n');
	if ((size_t)(end - start) >= sizeof(line))
		return -1;
	memcpy(line, start, end - start);
	line[end - start] = 0;
	if (sscanf(line, " %255s [%d] %7s", t, cpu, flags) != 3)
		return -1;
	snprintf(task, task_len, "%s", t);
	return 0;
}

/*
 * A record written straight into the ring buffer (no filter, trigger or stack
 * option on the event's file) has the header the tracing core's own path
 * writes: the writer's pid and name (saved for the output at its next context
 * switch), its CPU, and the context flags of the write, with neither the write
 * path's nor the ring buffer's preemption count counted. The core's path is
 * forced with a filter that keeps everything; the stacktrace option still adds
 * a kernel stack after the record.
 */
TEST_F(ev, direct_records_have_the_core_paths_header)
{
	struct {
		__s32 idx;
		__u32 a;
	} __attribute__((packed)) rec = { 0, 0 };
	static char buf[1 << 20];
	char task[2][256], flags[2][8], want[64];
	int cpu[2], status;
	cpu_set_t one, all;
	__u32 idx = 9;
	pid_t child;

	ASSERT_EQ(0, sched_getaffinity(0, sizeof(all), &all));
	CPU_ZERO(&one);
	CPU_SET(0, &one);
	ASSERT_EQ(0, sched_setaffinity(0, sizeof(one), &one));
	ASSERT_EQ(0, reg_event(self->fd, "__rue_hd u32 a", &self->check, 4, 0, 0, &idx));
	rec.idx = idx;
	ASSERT_EQ(0, write_file(TRACEFS "trace", ""));
	ASSERT_EQ(0, write_file(TRACEFS "events/user_events/__rue_hd/enable", "1"));

	/* A new task, whose name only the direct path's record can have saved. */
	child = fork();
	ASSERT_LE(0, child);
	if (child == 0) {
		rec.a = 1;
		prctl(PR_SET_NAME, "rue_hd_direct");
		_exit(write(self->fd, &rec, sizeof(rec)) == sizeof(rec) ? 0 : 1);
	}
	ASSERT_EQ(child, waitpid(child, &status, 0));
	ASSERT_EQ(0, status);

	ASSERT_EQ(0, write_file(TRACEFS "events/user_events/__rue_hd/filter", "a != 0"));
	rec.a = 2;
	ASSERT_EQ(sizeof(rec), write(self->fd, &rec, sizeof(rec)));
	ASSERT_EQ(0, write_file(TRACEFS "events/user_events/__rue_hd/filter", "0"));
	rec.a = 3;
	ASSERT_EQ(sizeof(rec), write(self->fd, &rec, sizeof(rec)));
	ASSERT_EQ(0, write_file(TRACEFS "options/stacktrace", "1"));
	rec.a = 4;
	EXPECT_EQ(sizeof(rec), write(self->fd, &rec, sizeof(rec)));
	ASSERT_EQ(0, write_file(TRACEFS "options/stacktrace", "0"));
	ASSERT_EQ(0, write_file(TRACEFS "events/user_events/__rue_hd/enable", "0"));

	ASSERT_LT(0, read_file(TRACEFS "trace", buf, sizeof(buf)));
	snprintf(want, sizeof(want), "rue_hd_direct-%d", child);
	ASSERT_EQ(0, header_of(buf, 1, task[0], sizeof(task[0]), &cpu[0], flags[0]))
		TH_LOG("trace:\n%s", buf);
	EXPECT_STREQ(want, task[0]) TH_LOG("trace:\n%s", buf);
	ASSERT_EQ(0, header_of(buf, 2, task[1], sizeof(task[1]), &cpu[1], flags[1]))
		TH_LOG("trace:\n%s", buf);
	snprintf(want, sizeof(want), "-%d", getpid());
	EXPECT_NE(NULL, strstr(task[1], want)) TH_LOG("trace:\n%s", buf);
	EXPECT_EQ(0, cpu[0]);
	EXPECT_EQ(0, cpu[1]);
	/*
	 * irqs-off, need-resched, hardirq/softirq, preempt-depth, migrate-disable:
	 * all but need-resched (which a timer tick may set) are "." for a write.
	 */
	for (int i = 0; i < 2; i++) {
		EXPECT_EQ(5, strlen(flags[i])) TH_LOG("flags %s", flags[i]);
		EXPECT_EQ('.', flags[i][0]) TH_LOG("flags %s", flags[i]);
		EXPECT_EQ(0, strcmp(flags[i] + 2, "...")) TH_LOG("flags %s", flags[i]);
	}
	ASSERT_EQ(0, header_of(buf, 3, task[1], sizeof(task[1]), &cpu[1], flags[1]))
		TH_LOG("trace:\n%s", buf);
	EXPECT_EQ(0, strcmp(flags[1] + 2, "...")) TH_LOG("flags %s", flags[1]);
	/* Only the record written with the stacktrace option is followed by a stack. */
	EXPECT_EQ(1, count_in(buf, "<stack trace>")) TH_LOG("trace:\n%s", buf);
	EXPECT_NE(NULL, strstr(buf, "__rue_hd: a=0x4 (4)\n")) TH_LOG("trace:\n%s", buf);
	EXPECT_NE(NULL, strstr(strstr(buf, "__rue_hd: a=0x4 (4)\n"), "<stack trace>"));
	EXPECT_EQ(0, unreg_event(self->fd, &self->check, 0));
	ASSERT_EQ(0, sched_setaffinity(0, sizeof(all), &all));
}

/*
 * Upstream faults the whole payload in before any consumer runs, so a payload it
 * cannot read is EFAULT even when nothing is recorded. The module copies first
 * and faults in only what it did not copy: when its one consumer declines after
 * all (here an ftrace file whose pid filter leaves this task out), it must still
 * fault the payload in. A readable payload succeeds and leaves no record.
 */
TEST_F(ev, unreadable_payload_is_efault_when_the_pid_filter_skips_the_writer)
{
	long page = sysconf(_SC_PAGESIZE);
	struct {
		__s32 idx;
		__u32 v;
	} __attribute__((packed)) rec = { 0 };
	static char buf[1 << 16];
	unsigned char *pages;
	__u32 idx = 9;

	pages = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, pages);
	ASSERT_EQ(0, mprotect(pages + page, page, PROT_NONE));
	ASSERT_EQ(0, reg_event(self->fd, "__rue_pf u32 v", &self->check, 4, 0, 0, &idx));
	rec.idx = idx;
	rec.v = 42;
	/* The index on the last readable bytes, the payload on the PROT_NONE page. */
	memcpy(pages + page - sizeof(rec.idx), &rec.idx, sizeof(rec.idx));
	ASSERT_EQ(0, write_file(TRACEFS "events/user_events/__rue_pf/enable", "1"));
	ASSERT_EQ(0, write_file(TRACEFS "trace", ""));

	/* pid 1 (init) only: never this test. Cleared below whatever happens. */
	EXPECT_EQ(0, write_file(TRACEFS "set_event_pid", "1"));
	EXPECT_EQ(-1, write(self->fd, pages + page - sizeof(rec.idx), sizeof(rec)));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(sizeof(rec), write(self->fd, &rec, sizeof(rec)));
	EXPECT_EQ(0, write_file(TRACEFS "set_event_pid", ""));
	EXPECT_LT(0, read_file(TRACEFS "trace", buf, sizeof(buf)));
	EXPECT_EQ(0, count_in(buf, "__rue_pf:")) TH_LOG("trace:\n%s", buf);

	/* Without the filter: the unreadable payload is EFAULT, the readable one recorded. */
	EXPECT_EQ(-1, write(self->fd, pages + page - sizeof(rec.idx), sizeof(rec)));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(sizeof(rec), write(self->fd, &rec, sizeof(rec)));
	EXPECT_LT(0, read_file(TRACEFS "trace", buf, sizeof(buf)));
	EXPECT_EQ(1, count_in(buf, "__rue_pf: v=0x2a (42)\n")) TH_LOG("trace:\n%s", buf);
	ASSERT_EQ(0, write_file(TRACEFS "events/user_events/__rue_pf/enable", "0"));
	EXPECT_EQ(0, unreg_event(self->fd, &self->check, 0));
	munmap(pages, 2 * page);
}

/*
 * The write index wherever the iovecs put it: alone in the first iovec (as the
 * clients do), with the payload, split over several, after empty iovecs, or
 * one write() buffer. Each write records its payload once; an index that
 * cannot be read is EFAULT and records nothing.
 */
TEST_F(ev, every_iovec_shape_of_the_index_records_the_payload)
{
	static char buf[1 << 16];
	/* Below any mapping: every read of it faults. */
	void *unmapped = (void *)(uintptr_t)8;
	struct iovec bad[2], half[3];
	unsigned char rec[8];
	char want[64];
	__u32 idx = 9, v;
	int n = 0;

	ASSERT_EQ(0, reg_event(self->fd, "__rue_ix u32 v", &self->check, 4, 0, 0, &idx));
	ASSERT_EQ(0, write_file(TRACEFS "events/user_events/__rue_ix/enable", "1"));
	ASSERT_EQ(0, write_file(TRACEFS "trace", ""));
	memcpy(rec, &idx, 4);
#define SHAPE(...)                                                                 \
	do {                                                                       \
		struct iovec iov[] = { __VA_ARGS__ };                              \
		v = 1001 + n++;                                                    \
		memcpy(rec + 4, &v, 4);                                            \
		EXPECT_EQ(8, writev(self->fd, iov, sizeof(iov) / sizeof(iov[0])))  \
			TH_LOG("shape %d: %s", n, strerror(errno));                \
	} while (0)
	SHAPE({ rec, 4 }, { rec + 4, 4 });
	SHAPE({ rec, 8 });
	SHAPE({ NULL, 0 }, { rec, 4 }, { rec + 4, 4 });
	SHAPE({ rec, 2 }, { rec + 2, 2 }, { rec + 4, 4 });
	SHAPE({ rec, 3 }, { rec + 3, 5 });
	SHAPE({ rec, 1 }, { NULL, 0 }, { rec + 1, 3 }, { rec + 4, 4 });
	SHAPE({ rec, 4 }, { NULL, 0 }, { NULL, 0 }, { rec + 4, 4 });
	SHAPE({ rec, 6 }, { rec + 6, 2 });
#undef SHAPE
	v = 1001 + n++;
	memcpy(rec + 4, &v, 4);
	EXPECT_EQ(8, write(self->fd, rec, 8));
	bad[0] = (struct iovec){ unmapped, 4 };
	bad[1] = (struct iovec){ rec + 4, 4 };
	EXPECT_EQ(-1, writev(self->fd, bad, 2));
	EXPECT_EQ(EFAULT, errno);
	half[0] = (struct iovec){ rec, 2 };
	half[1] = (struct iovec){ unmapped, 2 };
	half[2] = (struct iovec){ rec + 4, 4 };
	EXPECT_EQ(-1, writev(self->fd, half, 3));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(-1, syscall(SYS_write, self->fd, unmapped, 8));
	EXPECT_EQ(EFAULT, errno);
	ASSERT_EQ(0, write_file(TRACEFS "events/user_events/__rue_ix/enable", "0"));
	EXPECT_LT(0, read_file(TRACEFS "trace", buf, sizeof(buf)));
	EXPECT_EQ(n, count_in(buf, "__rue_ix:")) TH_LOG("trace:\n%s", buf);
	for (int i = 0; i < n; i++) {
		snprintf(want, sizeof(want), "__rue_ix: v=0x%x (%u)\n", 1001 + i, 1001 + i);
		EXPECT_EQ(1, count_in(buf, want)) TH_LOG("%s missing; trace:\n%s", want, buf);
	}
	EXPECT_EQ(0, unreg_event(self->fd, &self->check, 0));
}

/*
 * The payload wherever the iovecs put it: in one iovec after the index's, spread
 * over several (of up to 64 bytes, copied a word at a time, and longer ones),
 * after empty iovecs, sharing the index's iovec, or one write() buffer. Each is
 * recorded byte for byte;
 * one that runs into a PROT_NONE page, inside a word or past 64 bytes, in its
 * first iovec or a later one, is EFAULT and records nothing.
 */
TEST_F(ev, payload_from_every_segment_shape_is_recorded_exactly)
{
	enum { LEN = 100 };
	long page = sysconf(_SC_PAGESIZE);
	static char buf[1 << 17];
	unsigned char rec[4 + LEN], *p = rec + 4, *pages, *edge;
	char want[LEN + 32];
	__u32 idx = 9;
	int n = 0;

	pages = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, pages);
	ASSERT_EQ(0, mprotect(pages + page, page, PROT_NONE));
	ASSERT_EQ(0, reg_event(self->fd, "__rue_pl char[100] s", &self->check, 4, 0, 0, &idx));
	ASSERT_EQ(0, write_file(TRACEFS "events/user_events/__rue_pl/enable", "1"));
	ASSERT_EQ(0, write_file(TRACEFS "trace", ""));
	memcpy(rec, &idx, 4);
	/* Shape n's payload: LEN - 1 letters from 'A' + n, then NUL. */
#define FILL()                                                                     \
	do {                                                                       \
		for (int i = 0; i < LEN - 1; i++)                                  \
			p[i] = 'A' + (n + i) % 26;                                 \
		p[LEN - 1] = 0;                                                    \
		n++;                                                               \
	} while (0)
#define SHAPE(...)                                                                 \
	do {                                                                       \
		struct iovec iov[] = { __VA_ARGS__ };                              \
		FILL();                                                            \
		EXPECT_EQ(sizeof(rec),                                             \
			  writev(self->fd, iov, sizeof(iov) / sizeof(iov[0])))     \
			TH_LOG("shape %d: %s", n, strerror(errno));                \
	} while (0)
	SHAPE({ rec, 4 }, { p, LEN });
	SHAPE({ rec, 4 }, { p, 1 }, { p + 1, 63 }, { p + 64, 36 });
	SHAPE({ rec, 4 }, { p, 70 }, { p + 70, 30 });
	SHAPE({ rec, 4 }, { NULL, 0 }, { p, 13 }, { NULL, 0 }, { p + 13, LEN - 13 });
	SHAPE({ rec, 50 }, { rec + 50, sizeof(rec) - 50 });
	SHAPE({ rec, 5 }, { rec + 5, 3 }, { rec + 8, sizeof(rec) - 8 });
	FILL();
	EXPECT_EQ(sizeof(rec), write(self->fd, rec, sizeof(rec)));
#undef SHAPE
#undef FILL

	/* The payload's last bytes on the PROT_NONE page: 13 short (inside a word), 1 short. */
	memset(pages, 'x', page);
	for (int shortfall = 13; shortfall > 0; shortfall -= 12) {
		edge = pages + page + shortfall;
		struct iovec one[] = { { rec, 4 }, { edge - LEN, LEN } };
		struct iovec later[] = { { rec, 4 }, { p, 40 }, { edge - (LEN - 40), LEN - 40 } };
		struct iovec words[] = { { rec, 4 }, { p, LEN - 8 }, { pages + page - 4, 8 } };

		EXPECT_EQ(-1, writev(self->fd, one, 2));
		EXPECT_EQ(EFAULT, errno);
		EXPECT_EQ(-1, writev(self->fd, later, 3));
		EXPECT_EQ(EFAULT, errno);
		EXPECT_EQ(-1, writev(self->fd, words, 3));
		EXPECT_EQ(EFAULT, errno);
	}

	ASSERT_EQ(0, write_file(TRACEFS "events/user_events/__rue_pl/enable", "0"));
	EXPECT_LT(0, read_file(TRACEFS "trace", buf, sizeof(buf)));
	EXPECT_EQ(n, count_in(buf, "__rue_pl:")) TH_LOG("trace:\n%s", buf);
	for (int k = 0; k < n; k++) {
		int len = snprintf(want, sizeof(want), "__rue_pl: s=");

		for (int i = 0; i < LEN - 1; i++)
			want[len++] = 'A' + (k + i) % 26;
		want[len++] = '\n';
		want[len] = 0;
		EXPECT_EQ(1, count_in(buf, want)) TH_LOG("shape %d missing; trace:\n%s", k + 1, buf);
	}
	EXPECT_EQ(0, unreg_event(self->fd, &self->check, 0));
	munmap(pages, 2 * page);
}

/*
 * A write from kernel pages (io_uring's IORING_OP_WRITE_FIXED: a registered
 * buffer, an ITER_BVEC iterator, not the writer's memory) is recorded byte for
 * byte too. Skipped where the kernel has no io_uring (the test kernel).
 */
TEST_F(ev, payload_from_a_registered_io_uring_buffer_is_recorded)
{
	struct io_uring_params par = { 0 };
	static char buf[1 << 16];
	static unsigned char rec[4 + 16] __attribute__((aligned(4096)));
	struct iovec reg = { rec, sizeof(rec) };
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	unsigned char *sq, *cq;
	__u32 idx = 9, *tail, *head;
	int ring;

	ring = syscall(__NR_io_uring_setup, 4, &par);
	if (ring < 0 && (errno == ENOSYS || errno == EPERM))
		SKIP(return, "no io_uring here: %s", strerror(errno));
	ASSERT_LE(0, ring) TH_LOG("io_uring_setup: %s", strerror(errno));
	sq = mmap(NULL, par.sq_off.array + par.sq_entries * sizeof(__u32), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_SQ_RING);
	cq = mmap(NULL, par.cq_off.cqes + par.cq_entries * sizeof(*cqe), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_CQ_RING);
	sqe = mmap(NULL, par.sq_entries * sizeof(*sqe), PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_SQES);
	ASSERT_NE(MAP_FAILED, sq);
	ASSERT_NE(MAP_FAILED, cq);
	ASSERT_NE(MAP_FAILED, sqe);
	ASSERT_EQ(0, syscall(__NR_io_uring_register, ring, IORING_REGISTER_BUFFERS, &reg, 1));

	ASSERT_EQ(0, reg_event(self->fd, "__rue_ur char[16] s", &self->check, 4, 0, 0, &idx));
	ASSERT_EQ(0, write_file(TRACEFS "events/user_events/__rue_ur/enable", "1"));
	ASSERT_EQ(0, write_file(TRACEFS "trace", ""));
	memcpy(rec, &idx, 4);
	memcpy(rec + 4, "from-kernel-pag", 16);

	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = IORING_OP_WRITE_FIXED;
	sqe->fd = self->fd;
	sqe->addr = (__u64)(uintptr_t)rec;
	sqe->len = sizeof(rec);
	sqe->buf_index = 0;
	tail = (__u32 *)(sq + par.sq_off.tail);
	((__u32 *)(sq + par.sq_off.array))[*tail & *(__u32 *)(sq + par.sq_off.ring_mask)] = 0;
	__atomic_store_n(tail, *tail + 1, __ATOMIC_RELEASE);
	ASSERT_EQ(1, syscall(__NR_io_uring_enter, ring, 1, 1, IORING_ENTER_GETEVENTS, NULL, 0))
		TH_LOG("io_uring_enter: %s", strerror(errno));
	head = (__u32 *)(cq + par.cq_off.head);
	ASSERT_NE(*head, __atomic_load_n((__u32 *)(cq + par.cq_off.tail), __ATOMIC_ACQUIRE));
	cqe = (struct io_uring_cqe *)(cq + par.cq_off.cqes) +
	      (*head & *(__u32 *)(cq + par.cq_off.ring_mask));
	EXPECT_EQ(sizeof(rec), cqe->res) TH_LOG("WRITE_FIXED: %s", strerror(-cqe->res));
	__atomic_store_n(head, *head + 1, __ATOMIC_RELEASE);

	ASSERT_EQ(0, write_file(TRACEFS "events/user_events/__rue_ur/enable", "0"));
	EXPECT_LT(0, read_file(TRACEFS "trace", buf, sizeof(buf)));
	EXPECT_EQ(1, count_in(buf, "__rue_ur: s=from-kernel-pag\n")) TH_LOG("trace:\n%s", buf);
	EXPECT_EQ(0, unreg_event(self->fd, &self->check, 0));
	close(ring);
}

TEST_F(ev, unregister_errnos_and_clears_bit_while_enabled)
{
	struct user_unreg unreg = { .size = 15 };

	EXPECT_EQ(-1, ioctl(self->fd, DIAG_IOCSUNREG, &unreg));
	EXPECT_EQ(EINVAL, errno);
	unreg.size = sizeof(unreg);
	unreg.__reserved = 1;
	EXPECT_EQ(-1, ioctl(self->fd, DIAG_IOCSUNREG, &unreg));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-ENOENT, unreg_event(self->fd, &self->check, 5));

	ASSERT_EQ(0, reg_event(self->fd, "__rue_un u32 a", &self->check, 4, 5, 0, NULL));
	ASSERT_EQ(0, write_file(TRACEFS "events/user_events/__rue_un/enable", "1"));
	EXPECT_EQ(1 << 5, self->check);
	EXPECT_EQ(0, unreg_event(self->fd, &self->check, 5));
	EXPECT_EQ(0, self->check);
	ASSERT_EQ(0, write_file(TRACEFS "events/user_events/__rue_un/enable", "0"));
	ASSERT_EQ(0, write_file(TRACEFS "events/user_events/__rue_un/enable", "1"));
	EXPECT_EQ(0, self->check);	/* no longer follows the event */
	ASSERT_EQ(0, write_file(TRACEFS "events/user_events/__rue_un/enable", "0"));
}

/*
 * UNREG of an enabled event clears exactly its bit, whatever the word's shape: the lowest and
 * highest bit of a 4-byte word, a 4-byte word in the upper half of a long, the lowest, a middle
 * and the highest bit of an 8-byte word. The word's other bits, set by the program, are left
 * as they were.
 */
TEST_F(ev, unreg_while_enabled_clears_only_its_bit_in_every_word_shape)
{
	__u32 words[2] __attribute__((aligned(8)));
	__u64 word64;
	static const struct {
		int size, second, bit;
	} shapes[] = {
		{ 4, 0, 0 }, { 4, 0, 31 }, { 4, 1, 0 }, { 4, 1, 31 },
		{ 8, 0, 0 }, { 8, 0, 32 }, { 8, 0, 63 },
	};

	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		int size = shapes[i].size, bit = shapes[i].bit;
		void *addr = size == 8 ? (void *)&word64 : (void *)&words[shapes[i].second];
		__u64 others = size == 8 ? ~(1ULL << bit) : (__u64)(__u32)~(1U << bit);

		/* Every other bit set, in the word and next to it. */
		words[0] = words[1] = 0xffffffff;
		word64 = ~0ULL;
		if (size == 8)
			word64 = others;
		else
			words[shapes[i].second] = (__u32)others;
		ASSERT_EQ(0, reg_event(self->fd, "__rue_us u32 a", addr, size, bit, 0, NULL));
		ASSERT_EQ(0, write_file(TRACEFS "events/user_events/__rue_us/enable", "1"));
		if (size == 8) {
			EXPECT_EQ(~0ULL, word64) TH_LOG("size %d bit %d", size, bit);
		} else {
			EXPECT_EQ(0xffffffff, words[shapes[i].second]) TH_LOG("size 4 bit %d", bit);
		}
		EXPECT_EQ(0, unreg_event(self->fd, addr, bit)) TH_LOG("size %d bit %d", size, bit);
		if (size == 8) {
			EXPECT_EQ(others, word64) TH_LOG("size %d bit %d", size, bit);
		} else {
			EXPECT_EQ((__u32)others, words[shapes[i].second]) TH_LOG("size 4 bit %d", bit);
			EXPECT_EQ(0xffffffff, words[!shapes[i].second]) TH_LOG("size 4 bit %d", bit);
		}
		ASSERT_EQ(0, write_file(TRACEFS "events/user_events/__rue_us/enable", "0"));
	}
}

/*
 * A word on a page still shared copy-on-write with a forked child: the parent's UNREG breaks
 * the sharing and clears its own bit only; the child's copy of the word (and of the enabler)
 * keeps the bit while the event stays enabled.
 */
TEST_F(ev, unreg_after_fork_clears_the_parents_word_only)
{
	__u32 *word = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int to_child[2], to_parent[2];
	char c = 0;
	__u32 seen = 0;
	pid_t pid;

	ASSERT_NE(MAP_FAILED, word);
	ASSERT_EQ(0, pipe(to_child));
	ASSERT_EQ(0, pipe(to_parent));
	ASSERT_EQ(0, reg_event(self->fd, "__rue_uf u32 a", word, 4, 7, 0, NULL));
	ASSERT_EQ(0, write_file(TRACEFS "events/user_events/__rue_uf/enable", "1"));
	ASSERT_EQ(1 << 7, *word);
	pid = fork();
	ASSERT_NE(-1, pid);
	if (pid == 0) {
		/* Wait for the parent's UNREG, then report the word as the child sees it. */
		if (read(to_child[0], &c, 1) != 1)
			_exit(1);
		seen = *word;
		_exit(write(to_parent[1], &seen, sizeof(seen)) == sizeof(seen) ? 0 : 1);
	}
	EXPECT_EQ(0, unreg_event(self->fd, word, 7));
	EXPECT_EQ(0, *word);
	ASSERT_EQ(1, write(to_child[1], &c, 1));
	ASSERT_EQ(sizeof(seen), read(to_parent[0], &seen, sizeof(seen)));
	EXPECT_EQ(1 << 7, seen);
	ASSERT_EQ(pid, waitpid(pid, NULL, 0));
	ASSERT_EQ(0, write_file(TRACEFS "events/user_events/__rue_uf/enable", "0"));
	munmap(word, 4096);
}

/*
 * Both structs are size-extensible (copy_struct_from_user): a larger struct with a zero tail
 * works as the known one, the index lands at offset 24 and the tail stays as it was; a non-zero
 * tail is E2BIG, a size above a page E2BIG, a tail the kernel cannot read EFAULT.
 */
TEST_F(ev, reg_and_unreg_are_size_extensible)
{
	long page = sysconf(_SC_PAGESIZE);
	char *pages = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct user_reg *reg;
	struct user_unreg *unreg;
	char *edge;
	int i;

	ASSERT_NE(MAP_FAILED, pages);
	reg = (struct user_reg *)pages;
	reg->size = 64;
	reg->enable_bit = 3;
	reg->enable_size = 4;
	reg->enable_addr = (__u64)(uintptr_t)&self->check;
	reg->name_args = (__u64)(uintptr_t)"__rue_ext u32 a";
	reg->write_index = 0xdeadbeef;
	EXPECT_EQ(0, ioctl(self->fd, DIAG_IOCSREG, reg));
	EXPECT_EQ(0, reg->write_index);
	for (i = sizeof(*reg); i < 64; i++) {
		EXPECT_EQ(0, pages[i]) TH_LOG("byte %d of the tail", i);
	}

	/* The same for UNREG: too large, a non-zero tail, then a zero tail that works. */
	memset(pages, 0, page);
	unreg = (struct user_unreg *)pages;
	unreg->size = page + 1;
	unreg->disable_bit = 3;
	unreg->disable_addr = (__u64)(uintptr_t)&self->check;
	EXPECT_EQ(-1, ioctl(self->fd, DIAG_IOCSUNREG, unreg));
	EXPECT_EQ(E2BIG, errno);
	unreg->size = 32;
	pages[20] = 1;
	EXPECT_EQ(-1, ioctl(self->fd, DIAG_IOCSUNREG, unreg));
	EXPECT_EQ(E2BIG, errno);
	pages[20] = 0;
	EXPECT_EQ(0, ioctl(self->fd, DIAG_IOCSUNREG, unreg));
	EXPECT_EQ(-ENOENT, unreg_event(self->fd, &self->check, 3));

	/* A struct whose tail runs into a page the kernel cannot read. */
	ASSERT_EQ(0, mprotect(pages + page, page, PROT_NONE));
	edge = pages + page - sizeof(struct user_reg);
	memset(edge, 0, sizeof(struct user_reg));
	reg = (struct user_reg *)edge;
	reg->size = sizeof(*reg) + 8;
	reg->enable_size = 4;
	reg->enable_addr = (__u64)(uintptr_t)&self->check;
	reg->name_args = (__u64)(uintptr_t)"__rue_ext u32 a";
	EXPECT_EQ(-1, ioctl(self->fd, DIAG_IOCSREG, reg));
	EXPECT_EQ(EFAULT, errno);
	edge = pages + page - sizeof(struct user_unreg);
	memset(edge, 0, sizeof(struct user_unreg));
	unreg = (struct user_unreg *)edge;
	unreg->size = sizeof(*unreg) + 8;
	EXPECT_EQ(-1, ioctl(self->fd, DIAG_IOCSUNREG, unreg));
	EXPECT_EQ(EFAULT, errno);
	munmap(pages, 2 * page);
}

TEST_F(ev, eight_byte_word_bit_63)
{
	self->check64 = 1;
	ASSERT_EQ(0, reg_event(self->fd, "__rue_w8 u32 a", &self->check64, 8, 63, 0, NULL));
	ASSERT_EQ(0, write_file(TRACEFS "events/user_events/__rue_w8/enable", "1"));
	EXPECT_EQ((1ULL << 63) | 1, self->check64);
	ASSERT_EQ(0, write_file(TRACEFS "events/user_events/__rue_w8/enable", "0"));
	EXPECT_EQ(1, self->check64);
	EXPECT_EQ(0, unreg_event(self->fd, &self->check64, 63));
}

TEST_F(ev, four_byte_word_in_upper_half_of_long)
{
	__u32 words[4] __attribute__((aligned(8))) = { 0, 0, 0, 0 };

	ASSERT_EQ(0, reg_event(self->fd, "__rue_hi u32 a", &words[1], 4, 3, 0, NULL));
	ASSERT_EQ(0, write_file(TRACEFS "events/user_events/__rue_hi/enable", "1"));
	EXPECT_EQ(0, words[0]);
	EXPECT_EQ(1 << 3, words[1]);
	ASSERT_EQ(0, write_file(TRACEFS "events/user_events/__rue_hi/enable", "0"));
	EXPECT_EQ(0, words[1]);
	EXPECT_EQ(0, unreg_event(self->fd, &words[1], 3));
}

TEST_F(ev, unwritable_enable_address_gives_efault)
{
	void *ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	ASSERT_NE(MAP_FAILED, ro);
	EXPECT_EQ(-EFAULT, reg_event(self->fd, "__rue_ro u32 a", ro, 4, 0, 0, NULL));
	munmap(ro, 4096);
}

TEST_F(ev, multi_format_names_and_versions)
{
	glob_t g;

	ASSERT_EQ(0, reg_event(self->fd, "__rue_mf u32 a", &self->check, 4, 0,
			       USER_EVENT_REG_MULTI_FORMAT, NULL));
	ASSERT_EQ(0, reg_event(self->fd, "__rue_mf u64 a", &self->check, 4, 1,
			       USER_EVENT_REG_MULTI_FORMAT, NULL));
	ASSERT_EQ(0, glob(TRACEFS "events/user_events_multi/__rue_mf.*", 0, NULL, &g));
	EXPECT_EQ(2, g.gl_pathc);
	globfree(&g);
	EXPECT_FALSE(exists(TRACEFS "events/user_events/__rue_mf"));
	EXPECT_EQ(0, unreg_event(self->fd, &self->check, 0));
	EXPECT_EQ(0, unreg_event(self->fd, &self->check, 1));
}

/*
 * Two multi-format events can match one format: "u32 a;;" does not match the
 * fields of "u32 a" (its empty pieces never match, quirk Q4), so it creates a
 * second event with the same field. A REG of "u32 a" then gets the newer one,
 * as upstream walks its hash bucket newest first (hash_for_each_possible).
 */
TEST_F(ev, multi_format_lookup_takes_the_newest_match)
{
	__u32 first, second, again;

	ASSERT_EQ(0, reg_event(self->fd, "__rue_mfn u32 a", &self->check, 4, 0,
			       USER_EVENT_REG_MULTI_FORMAT, &first));
	ASSERT_EQ(0, reg_event(self->fd, "__rue_mfn u32 a;;", &self->check, 4, 1,
			       USER_EVENT_REG_MULTI_FORMAT, &second));
	ASSERT_NE(first, second);
	ASSERT_EQ(0, reg_event(self->fd, "__rue_mfn u32 a", &self->check, 4, 2,
			       USER_EVENT_REG_MULTI_FORMAT, &again));
	EXPECT_EQ(second, again);
	for (int bit = 0; bit < 3; bit++)
		EXPECT_EQ(0, unreg_event(self->fd, &self->check, bit));
}

/*
 * A persistent event outlives its last close. Auto-deletion is asynchronous, so a fixed sleep
 * proves nothing: a non-persistent twin, let go right after it, must be deleted first. The
 * module destroys events one at a time in the order their last references went (an ordered
 * workqueue), so once the twin is gone, a destroy the persistent event's close had queued
 * would have run too.
 */
TEST_F(ev, persistent_event_survives_close_until_deleted)
{
	int fd = open(DATA_FILE, O_RDWR);
	int twin = open(DATA_FILE, O_RDWR);

	ASSERT_NE(-1, fd);
	ASSERT_NE(-1, twin);
	ASSERT_EQ(0, reg_event(fd, "__rue_p u32 a", &self->check, 4, 0, USER_EVENT_REG_PERSIST, NULL));
	ASSERT_EQ(0, reg_event(twin, "__rue_pt u32 a", &self->check, 4, 1, 0, NULL));
	ASSERT_EQ(0, unreg_event(fd, &self->check, 0));
	ASSERT_EQ(0, unreg_event(twin, &self->check, 1));
	close(fd);
	close(twin);
	EXPECT_TRUE(gone_within(TRACEFS "events/user_events/__rue_pt", 5000))
		TH_LOG("the non-persistent twin was not auto-deleted");
	EXPECT_TRUE(exists(TRACEFS "events/user_events/__rue_p/enable"));
	EXPECT_EQ(0, del_event(self->fd, "__rue_p"));
	EXPECT_FALSE(exists(TRACEFS "events/user_events/__rue_p"));
	EXPECT_EQ(-ENOENT, del_event(self->fd, "__rue_p"));
}

TEST_F(ev, non_persistent_delete_is_busy_then_auto_deleted)
{
	int fd = open(DATA_FILE, O_RDWR);

	ASSERT_NE(-1, fd);
	ASSERT_EQ(0, reg_event(fd, "__rue_ad u32 a", &self->check, 4, 0, 0, NULL));
	EXPECT_EQ(-EBUSY, del_event(self->fd, "__rue_ad"));
	ASSERT_EQ(0, unreg_event(fd, &self->check, 0));
	close(fd);
	EXPECT_TRUE(gone_within(TRACEFS "events/user_events/__rue_ad", 1000));
}

TEST_F(ev, user_events_max_limits_creation)
{
	char old[32];

	ASSERT_LT(0, read_file(MAX_FILE, old, sizeof(old)));
	EXPECT_STREQ("32768\n", old);
	ASSERT_EQ(0, write_file(MAX_FILE, "0"));
	EXPECT_EQ(-EMFILE, reg_event(self->fd, "__rue_max u32 a", &self->check, 4, 0, 0, NULL));
	ASSERT_EQ(0, write_file(MAX_FILE, old));
	EXPECT_EQ(0, reg_event(self->fd, "__rue_max u32 a", &self->check, 4, 0, 0, NULL));
	EXPECT_EQ(0, unreg_event(self->fd, &self->check, 0));
}

#define GROWTH_EVENTS 200

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/*
 * A REG that adds an event to a file's write indexes must not wait for
 * anything (an RCU grace period, say) inside the REG, under the global
 * reg_mutex, which would stall every REG, DEL and UNREG on the system: REGs
 * that grow the table must cost about what the same REGs cost when they find
 * their event already there. (The module's table only grows, so nothing is
 * freed until the file is released.)
 */
TEST(reg_growing_the_index_array_waits_for_no_grace_period)
{
	static __u32 words[3][GROWTH_EVENTS];
	char name[64];
	int creator = open(DATA_FILE, O_RDWR);
	int fd = open(DATA_FILE, O_RDWR);
	double t0, t1, t2;

	ASSERT_NE(-1, creator);
	ASSERT_NE(-1, fd);
	for (int i = 0; i < GROWTH_EVENTS; i++) {
		snprintf(name, sizeof(name), "__rue_grow%d u32 x", i);
		ASSERT_EQ(i, rue_reg(creator, name, &words[0][i], 0));
	}
	t0 = now_ms();
	for (int i = 0; i < GROWTH_EVENTS; i++) {
		snprintf(name, sizeof(name), "__rue_grow%d u32 x", i);
		ASSERT_EQ(i, rue_reg(fd, name, &words[1][i], 0));
	}
	t1 = now_ms();
	for (int i = 0; i < GROWTH_EVENTS; i++) {
		snprintf(name, sizeof(name), "__rue_grow%d u32 x", i);
		ASSERT_EQ(i, rue_reg(fd, name, &words[2][i], 0));
	}
	t2 = now_ms();
	TH_LOG("%d REGs growing the index array: %.1f ms; finding their index: %.1f ms",
	       GROWTH_EVENTS, t1 - t0, t2 - t1);
	EXPECT_LT(t1 - t0, 4 * (t2 - t1) + rue_bound_ms(100));
	close(fd);
	close(creator);
}

#define STATUS_EVENTS 5000
#define STATUS_REGS 100

static volatile int status_reader_stop;
static volatile long status_reads;

static void *status_reader(void *arg)
{
	static char buf[1 << 20];

	while (!status_reader_stop) {
		if (read_file(STATUS_FILE, buf, sizeof(buf)) > 0)
			status_reads++;
	}
	return NULL;
}

/* Active: count of the status text, or -1. */
static long status_active(void)
{
	static char buf[1 << 20];
	char *active;

	if (read_file(STATUS_FILE, buf, sizeof(buf)) <= 0)
		return -1;
	active = strstr(buf, "\nActive: ");
	return active ? atol(active + 9) : -1;
}

/* Mean ms of a REG plus UNREG of an existing event; the slowest pair in *@worst. */
/*
 * Mean ms of a REG plus UNREG of an existing event, over at least STATUS_REGS
 * pairs and, with a reader running, until it read the file @min_reads times
 * (bounded: rue_bound_ms(60 s)); the slowest pair in *@worst.
 */
static double reg_unreg_ms(int fd, __u32 *word, double *worst, long min_reads)
{
	double start = now_ms();
	long reads = status_reads;
	int i;

	*worst = 0;
	for (i = 0; i < STATUS_REGS || (status_reads - reads < min_reads && now_ms() < start + rue_bound_ms(60000));
	     i++) {
		double t = now_ms();

		if (rue_reg(fd, "__rue_st0 u32 x", word, 0) < 0 || rue_unreg(fd, word, 0))
			return -1;
		t = now_ms() - t;
		if (t > *worst)
			*worst = t;
	}
	return (now_ms() - start) / i;
}

/*
 * Reading user_events_status lists the event table under event_mutex, which
 * every REG, UNREG, DEL and ftrace or perf change also takes. With thousands
 * of events, a reader in a loop must not stall registrations: the lock is held
 * for one pass that takes a reference on each event (the text is written
 * after), once per read (the buffer is sized at open; seq_file's retries with
 * doubled buffers would repeat the pass), and a REG looks at one hash bucket.
 */
/* Thousands of REGs and destroys take minutes under TCG with KASAN. */
FIXTURE(big) {};
FIXTURE_SETUP(big) {}
FIXTURE_TEARDOWN(big) {}

TEST_F_TIMEOUT(big, status_reads_do_not_stall_registration, 900)
{
	static __u32 words[STATUS_EVENTS];
	double idle, busy, idle_worst, busy_worst;
	int fd = open(DATA_FILE, O_RDWR);
	__u32 word = 0;
	pthread_t reader;
	char name[64];
	long before = status_active();

	ASSERT_NE(-1, fd);
	ASSERT_LE(0, before);
	for (int i = 0; i < STATUS_EVENTS; i++) {
		snprintf(name, sizeof(name), "__rue_st%d u32 x", i);
		ASSERT_LE(0, rue_reg(fd, name, &words[i], 0)) TH_LOG("event %d", i);
	}
	ASSERT_EQ(before + STATUS_EVENTS, status_active());
	idle = reg_unreg_ms(fd, &word, &idle_worst, 0);
	EXPECT_LT(0, idle);
	ASSERT_EQ(0, pthread_create(&reader, NULL, status_reader, NULL));
	busy = reg_unreg_ms(fd, &word, &busy_worst, 5);
	status_reader_stop = 1;
	pthread_join(reader, NULL);
	TH_LOG("%d events, %ld status reads: REG+UNREG %.2f ms (worst %.1f) idle, %.2f ms (worst %.1f) with a reader",
	       STATUS_EVENTS, status_reads, idle, idle_worst, busy, busy_worst);
	/* Expectations only: the events below must go whatever happened. */
	EXPECT_LT(0, busy);
	EXPECT_LE(5, status_reads);
	/*
	 * Measured in the test VM (TCG, KASAN): 10.6 ms idle and 24.9 ms with
	 * the reader when REG searched the whole table and the status file
	 * formatted every line under event_mutex, one pass per bucket and per
	 * seq_file retry; 1.7 ms and 3.8 ms with one bucket per lookup and the
	 * text written after the lock is released. Bounds for that machine, scaled to this run.
	 */
	EXPECT_LT(busy, rue_bound_ms(12));
	EXPECT_LT(busy, 4 * idle + rue_bound_ms(5));
	EXPECT_LT(busy_worst, rue_bound_ms(250));
	for (int i = 0; i < STATUS_EVENTS; i++)
		ASSERT_EQ(0, rue_unreg(fd, &words[i], 0));
	close(fd);
	/* The events go asynchronously: wait, so that later tests see the table they expect. */
	idle = now_ms();
	rue_wait_until(status_active() <= before, 300000, 100000);
	EXPECT_EQ(before, status_active());
	TH_LOG("the %d events went in %.1f s", STATUS_EVENTS, (now_ms() - idle) / 1000);
}

TEST_HARNESS_MAIN
