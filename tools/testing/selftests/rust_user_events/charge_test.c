// SPDX-License-Identifier: GPL-2.0
/*
 * What a program's use of user_events allocates is charged to its memory cgroup, as upstream
 * charges it (GFP_KERNEL_ACCOUNT, and __GFP_ACCOUNT in the fork path):
 *   - events: registering CG_EVENTS events with 480-byte field lists charges the registering
 *     cgroup for each event's strings, fields and print format;
 *   - fork copies: a process with CG_ENABLERS enablers forking CG_CHILDREN children is charged
 *     for the copies, although they are made in a worker or in the child.
 * Each runs in a cgroup of its own (cgroup v2) and reads its "slab" bytes (memory.stat) before
 * and after. Needs the memory controller: Debian's kernels have it; the test kernel has no
 * CONFIG_MEMCG, and skips.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/user_events.h>

#include "kselftest_harness.h"
#include "rue_helpers.h"

#define CGROOT "/sys/fs/cgroup"
#define DATA_FILE RUE_TRACEFS "user_events_data"
#define STATS_FILE RUE_TRACEFS "user_events_stats"

#define CG_EVENTS 2000
#define CG_FIELDS 24		/* "u32 f000_pad_pad_pa" is 19 bytes: 479 with the separators */
/* An event with such a field list keeps about 1.5 KiB of strings and 1 KiB of fields. */
#define CG_MIN_PER_EVENT 2000
#define CG_ENABLERS 20000
#define CG_CHILDREN 20
/* A copied enabler is one object and one tree node: well over 100 bytes. */
#define CG_MIN_PER_COPY 100

/*
 * Mounts cgroup v2 if needed. 1 if it has the memory controller, enabled for children; 0 if
 * the kernel has none (no cgroup v2, or no memory controller in it: the one reason to skip);
 * -errno if setting up what the kernel has failed, which fails the test.
 */
static int memcg_ready(void)
{
	char buf[512];

	if (!exists(CGROOT "/cgroup.controllers") && mount("none", CGROOT, "cgroup2", 0, NULL))
		return errno == ENODEV || errno == ENOENT ? 0 : -errno;
	if (read_file(CGROOT "/cgroup.controllers", buf, sizeof(buf)) < 0)
		return -errno;
	if (!strstr(buf, "memory"))
		return 0;
	return rue_write_text(CGROOT "/cgroup.subtree_control", 0, "+memory") ?: 1;
}

/* Creates the cgroup @name; its directory in @dir. */
static int make_cgroup(const char *name, char *dir, size_t len)
{
	snprintf(dir, len, CGROOT "/%s", name);
	rmdir(dir);
	return mkdir(dir, 0755) ? -errno : 0;
}

/* The cgroup's slab bytes (memory.stat "slab"), or -1. */
static long long slab_bytes(const char *dir)
{
	char path[256], buf[8192], *p;

	snprintf(path, sizeof(path), "%s/memory.stat", dir);
	if (read_file(path, buf, sizeof(buf)) < 0)
		return -1;
	p = strstr(buf, "\nslab ");
	return p ? atoll(p + 6) : -1;
}

/* Moves the calling process into the cgroup at @dir. */
static int join_cgroup(const char *dir)
{
	char path[256], pid[32];

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	snprintf(pid, sizeof(pid), "%d", getpid());
	return rue_write_text(path, 0, pid);
}

/* "enablers: N" of user_events_stats, or -1. */
static long long stats_enablers(void)
{
	char buf[4096], *p;

	if (read_file(STATS_FILE, buf, sizeof(buf)) < 0)
		return -1;
	p = strstr(buf, "enablers: ");
	return p ? atoll(p + 10) : -1;
}

/* A process that joins the cgroup at @dir, runs @work and reports on @back. */
static pid_t spawn_in(const char *dir, int (*work)(int cmd, int back), int cmd[2], int back[2])
{
	pid_t pid = rue_fork_helper(cmd, back);

	if (pid == 0)
		_exit(join_cgroup(dir) ? 100 : work(cmd[0], back[1]));
	return pid;
}

static int send_c(int fd, char c)
{
	return write(fd, &c, 1) == 1 ? 0 : -1;
}

static int recv_c(int fd)
{
	char c;

	return read(fd, &c, 1) == 1 ? c : -1;
}

/* Registers CG_EVENTS events with 480-byte field lists, each at one bit, and unregisters it. */
static int events_work(int cmd, int back)
{
	static char args[1024];
	volatile __u32 word = 0;
	int fd = open(DATA_FILE, O_RDWR);

	if (fd < 0)
		return 2;
	send_c(back, 'B');		/* the baseline: the data file is open */
	if (recv_c(cmd) != 'G')
		return 3;
	for (int i = 0; i < CG_EVENTS; i++) {
		int len = snprintf(args, sizeof(args), "__rue_cg_%d ", i);

		for (int f = 0; f < CG_FIELDS; f++)
			len += snprintf(args + len, sizeof(args) - len, "%su32 f%03d_pad_pad_pa",
					f ? ";" : "", f);
		if (rue_reg_word(fd, args, &word, 0) || rue_unreg(fd, &word, 0))
			return 4;
	}
	send_c(back, 'D');		/* the events are held by the open file */
	recv_c(cmd);			/* EOF: done */
	close(fd);
	return 0;
}

FIXTURE(charge) {};
FIXTURE_SETUP(charge) {}
FIXTURE_TEARDOWN(charge) {}

TEST_F_TIMEOUT(charge, events_are_charged_to_the_registering_cgroup, 900)
{
	char dir[128];
	int cmd[2], back[2], status;
	long long before, after;
	pid_t pid;
	int ready = memcg_ready();

	if (!ready)
		SKIP(return, "no cgroup v2 memory controller (CONFIG_MEMCG)");
	ASSERT_EQ(1, ready);
	ASSERT_EQ(0, make_cgroup("rue_charge_events", dir, sizeof(dir)));
	pid = spawn_in(dir, events_work, cmd, back);
	ASSERT_NE(-1, pid);
	ASSERT_EQ('B', recv_c(back[0]));
	before = slab_bytes(dir);
	ASSERT_EQ(0, send_c(cmd[1], 'G'));
	ASSERT_EQ('D', recv_c(back[0]));
	after = slab_bytes(dir);
	ASSERT_LE(0, before);
	ksft_print_msg("%d events with %d-field lists: %lld bytes of slab charged, %lld per event\n",
		       CG_EVENTS, CG_FIELDS, after - before, (after - before) / CG_EVENTS);
	EXPECT_LT(CG_MIN_PER_EVENT, (after - before) / CG_EVENTS);
	close(cmd[1]);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(back[0]);
	/* The events go once the file is closed; the cgroup once it is empty. */
	for (int i = 0; i < CG_EVENTS; i += 500) {
		char path[128];

		snprintf(path, sizeof(path), RUE_TRACEFS "events/user_events/__rue_cg_%d", i);
		EXPECT_TRUE(gone_within(path, 20000));
	}
	rmdir(dir);
}

/* The process whose fork copies are charged (rue_forking_holder()). */
static int copies_work(int cmd, int back)
{
	return rue_forking_holder("__rue_cg_copy u32 x", CG_ENABLERS, CG_CHILDREN, cmd, back);
}

TEST_F_TIMEOUT(charge, fork_copies_are_charged_to_the_forkers_cgroup, 900)
{
	long long before, after, base, want;
	char dir[128];
	int cmd[2], back[2], status;
	pid_t pid;
	int ready = memcg_ready();

	if (!ready)
		SKIP(return, "no cgroup v2 memory controller (CONFIG_MEMCG)");
	ASSERT_EQ(1, ready);
	ASSERT_EQ(0, make_cgroup("rue_charge_copies", dir, sizeof(dir)));
	base = stats_enablers();
	ASSERT_LE(0, base);
	pid = spawn_in(dir, copies_work, cmd, back);
	ASSERT_NE(-1, pid);
	ASSERT_EQ('R', recv_c(back[0]));
	before = slab_bytes(dir);
	ASSERT_EQ(0, send_c(cmd[1], 'F'));
	ASSERT_EQ('K', recv_c(back[0]));
	/* Every child's copy made: the system counts each copied enabler. */
	want = base + (long long)CG_ENABLERS * (CG_CHILDREN + 1);
	EXPECT_TRUE(rue_wait_until(stats_enablers() >= want, 300000, 10000))
		TH_LOG("enablers: %lld, want %lld", stats_enablers(), want);
	after = slab_bytes(dir);
	ksft_print_msg("%d children of a process with %d enablers: %lld bytes of slab charged, %lld per copied enabler\n",
		       CG_CHILDREN, CG_ENABLERS, after - before,
		       (after - before) / ((long long)CG_ENABLERS * CG_CHILDREN));
	EXPECT_LT(CG_MIN_PER_COPY, (after - before) / ((long long)CG_ENABLERS * CG_CHILDREN));
	close(cmd[1]);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(back[0]);
	EXPECT_TRUE(gone_within(RUE_TRACEFS "events/user_events/__rue_cg_copy", 120000));
	rmdir(dir);
}

TEST_HARNESS_MAIN
