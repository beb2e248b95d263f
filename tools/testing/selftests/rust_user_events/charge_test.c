// SPDX-License-Identifier: GPL-2.0
/*
 * What a program's use of user_events allocates is charged to its memory cgroup, as upstream
 * charges it (GFP_KERNEL_ACCOUNT, and __GFP_ACCOUNT in the fork path):
 *   - events: registering CG_EVENTS events with 480-byte field lists charges the registering
 *     cgroup for each event's strings, fields and print format;
 *   - fork copies: a process with CG_ENABLERS enablers forking CG_CHILDREN children is charged
 *     for the copies, although they are made in a worker or in the child;
 *   - and when the forker leaves right after its forks (exits, or moves to another cgroup),
 *     its children in a cgroup of their own: the copies still pending are charged to the
 *     cgroup of the fork, not to the children's, the one it moved to, or none.
 * Each runs in a cgroup of its own (cgroup v2) and reads its "slab" bytes (memory.stat) before
 * and after. Needs the memory controller (the test kernel and Debian's have it); skips without.
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
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/sched.h>
#include <linux/user_events.h>

#include "kselftest_harness.h"
#include "rue_helpers.h"

#define CGROOT "/sys/fs/cgroup"
#define DATA_FILE RUE_TRACEFS "user_events_data"

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
	return rue_stat("enablers");
}

/*
 * Waits until no scope is left beyond the @base the test began with: every teardown of the
 * test's processes finished, their memory freed. The tests after this one unload the module,
 * whose exit would otherwise wait for those teardowns (hundreds of thousands of enablers:
 * minutes on the debug kernel, past their own timeouts).
 */
static int scopes_back_to(long long base)
{
	return rue_wait_until(rue_stat("scopes") <= base, 300000, 10000);
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

/* Every test needs the memory controller: without it they skip (the one reason to). */
static void need_memcg(struct __test_metadata *_metadata)
{
	int ready = memcg_ready();

	if (!ready)
		SKIP(return, "no cgroup v2 memory controller (CONFIG_MEMCG)");
	ASSERT_EQ(1, ready);
}

FIXTURE(charge) {};
FIXTURE_SETUP(charge)
{
	need_memcg(_metadata);
}
FIXTURE_TEARDOWN(charge) {}

TEST_F_TIMEOUT(charge, events_are_charged_to_the_registering_cgroup, 900)
{
	char dir[128];
	int cmd[2], back[2], status;
	long long before, after;
	pid_t pid;

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
	/*
	 * The events go once the file is closed (the last one last: destroys run in order); the
	 * cgroup once it is empty. Waited for, so that the tests after this one find the module
	 * as idle as it was: an event pins the module.
	 */
	for (int k = 0; k <= 4; k++) {
		char path[128];

		snprintf(path, sizeof(path), RUE_TRACEFS "events/user_events/__rue_cg_%d",
			 k < 4 ? k * CG_EVENTS / 4 : CG_EVENTS - 1);
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
	long long before, after, base, want, scopes;
	char dir[128];
	int cmd[2], back[2], status;
	pid_t pid;

	ASSERT_EQ(0, make_cgroup("rue_charge_copies", dir, sizeof(dir)));
	base = stats_enablers();
	ASSERT_LE(0, base);
	scopes = rue_stat("scopes");
	ASSERT_LE(0, scopes);
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
	EXPECT_TRUE(scopes_back_to(scopes)) TH_LOG("scopes: %lld, at the start %lld",
						  rue_stat("scopes"), scopes);
	rmdir(dir);
}

/*
 * The forker leaves (exits, or moves to another cgroup) right after its forks, while their
 * copies are still pending: they must still be charged to the cgroup it forked in, as
 * upstream's copies, made inside copy_process(), are. The children are placed in a cgroup of
 * their own (clone3 with CLONE_INTO_CGROUP), so charging the child's cgroup shows as well.
 */
#define LV_CHILDREN 8
#define LV_ENABLERS 10000

/* What the forker of the leaving variants needs besides its pipes (set before it is spawned). */
static struct {
	int exit;		/* leave by exiting, else by moving */
	int children_cg;	/* the children's cgroup, an O_DIRECTORY fd */
	const char *move_to;	/* the cgroup the forker moves to */
	int go[2];		/* the test tells each child to finish its copy: one byte each */
	int done[2];		/* each child says its copy is done: one byte each */
	int hold[2];		/* the children live until the test closes its end */
} lv;

/* A child of the leaving forker: finishes its own copy when told (its UNREG runs it if no
 * worker has), says so and lives on until the test lets it go. */
static void leaving_child(int data)
{
	static volatile __u32 nothing;
	char c;

	close(lv.go[1]);
	close(lv.done[0]);
	close(lv.hold[1]);
	if (read(lv.go[0], &c, 1) != 1)
		_exit(2);
	/* An UNREG of nothing: it first makes sure the copy into this child ran. */
	if (rue_unreg(data, &nothing, 0) != -ENOENT)
		_exit(3);
	if (write(lv.done[1], "C", 1) != 1)
		_exit(4);
	while (read(lv.hold[0], &c, 1) > 0)
		;
	_exit(0);
}

/*
 * The forker: registers LV_ENABLERS bits, says 'R'; on 'F' forks LV_CHILDREN children into
 * lv.children_cg, says 'K' and leaves: exits, or moves to lv.move_to and says 'M', then lives
 * until EOF on @cmd.
 */
static int leaving_forker(int cmd, int back)
{
	volatile __u32 *words = mmap(NULL, (LV_ENABLERS + 31) / 32 * sizeof(__u32),
				     PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int fd = open(DATA_FILE, O_RDWR);
	char c = 0;

	if (fd < 0 || words == MAP_FAILED)
		return 2;
	for (int i = 0; i < LV_ENABLERS; i++)
		if (rue_reg_word(fd, "__rue_cg_leave u32 x", &words[i / 32], i % 32))
			return 3;
	if (write(back, "R", 1) != 1 || read(cmd, &c, 1) != 1 || c != 'F')
		return 4;
	for (int i = 0; i < LV_CHILDREN; i++) {
		struct clone_args args = {
			.flags = CLONE_INTO_CGROUP,
			.exit_signal = SIGCHLD,
			.cgroup = (__u64)lv.children_cg,
		};
		long pid = syscall(SYS_clone3, &args, sizeof(args));

		if (pid < 0)
			return 5;
		if (pid == 0)
			leaving_child(fd);
	}
	if (write(back, "K", 1) != 1)
		return 6;
	if (lv.exit)
		return 0;
	if (join_cgroup(lv.move_to) || write(back, "M", 1) != 1)
		return 7;
	while (read(cmd, &c, 1) > 0)
		;		/* EOF: done */
	return 0;
}

FIXTURE(leave) {};
FIXTURE_VARIANT(leave) {
	int exit;
};
FIXTURE_VARIANT_ADD(leave, exit) { .exit = 1 };
FIXTURE_VARIANT_ADD(leave, move) { .exit = 0 };
FIXTURE_SETUP(leave)
{
	need_memcg(_metadata);
}
FIXTURE_TEARDOWN(leave) {}

TEST_F_TIMEOUT(leave, fork_copies_are_charged_to_the_cgroup_of_the_fork, 900)
{
	char forker[128], children[128], moved[128];
	long long pre, post, base, scopes, at_leave, pending, copies, mine, want;
	int cmd[2], back[2], status;
	pid_t pid;

	ASSERT_EQ(0, make_cgroup("rue_charge_forker", forker, sizeof(forker)));
	ASSERT_EQ(0, make_cgroup("rue_charge_children", children, sizeof(children)));
	ASSERT_EQ(0, make_cgroup("rue_charge_moved", moved, sizeof(moved)));
	lv.exit = variant->exit;
	lv.move_to = moved;
	lv.children_cg = open(children, O_RDONLY | O_DIRECTORY);
	ASSERT_LE(0, lv.children_cg);
	ASSERT_EQ(0, pipe(lv.go));
	ASSERT_EQ(0, pipe(lv.done));
	ASSERT_EQ(0, pipe(lv.hold));
	base = stats_enablers();
	ASSERT_LE(0, base);
	scopes = rue_stat("scopes");
	ASSERT_LE(0, scopes);
	/*
	 * Where the forker exits, its own enablers are freed and their charge given back: the
	 * copies are what the cgroup gains from before the forker's start. Where it moves, its
	 * own stay charged here: the copies are what it gains after its registrations.
	 */
	pre = slab_bytes(forker);
	ASSERT_LE(0, pre);
	pid = spawn_in(forker, leaving_forker, cmd, back);
	ASSERT_NE(-1, pid);
	close(lv.go[0]);
	close(lv.done[1]);
	close(lv.hold[0]);
	ASSERT_EQ('R', recv_c(back[0]));
	if (!variant->exit)
		pre = slab_bytes(forker);
	ASSERT_EQ(0, send_c(cmd[1], 'F'));
	ASSERT_EQ('K', recv_c(back[0]));
	if (variant->exit) {
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
	} else {
		ASSERT_EQ('M', recv_c(back[0]));
	}
	/* The forker has left: how many of its copies had not finished. */
	at_leave = stats_enablers();
	pending = LV_CHILDREN - (at_leave - base - LV_ENABLERS) / LV_ENABLERS;
	ksft_print_msg("%s: %lld of %d copies unfinished when the forker left\n",
		       variant->exit ? "exit" : "move", pending, LV_CHILDREN);

	/* Every copy made (each child's UNREG runs its own if no worker started it). */
	for (int i = 0; i < LV_CHILDREN; i++)
		ASSERT_EQ(0, send_c(lv.go[1], 'U'));
	for (int i = 0; i < LV_CHILDREN; i++)
		ASSERT_EQ('C', recv_c(lv.done[0]));
	copies = (long long)LV_ENABLERS * LV_CHILDREN;
	/* The forker's own enablers gone when it exited (their charge given back): the copies'. */
	want = base + copies + (variant->exit ? 0 : LV_ENABLERS);
	EXPECT_TRUE(rue_wait_until(stats_enablers() == want, 300000, 10000))
		TH_LOG("enablers: %lld, want %lld", stats_enablers(), want);
	post = slab_bytes(forker);
	mine = slab_bytes(children);
	ksft_print_msg("%s: per copied enabler, the forker's cgroup was charged %lld bytes, the "
		       "children's %lld, the one it moved to %lld\n",
		       variant->exit ? "exit" : "move", (post - pre) / copies, mine / copies,
		       slab_bytes(moved) / copies);
	/*
	 * Inconclusive unless most copies were unfinished when the forker left: never a pass
	 * then (a skip fails make check; a faster machine would need more enablers).
	 */
	if (pending < LV_CHILDREN / 2)
		SKIP(goto out, "inconclusive: only %lld of %d copies unfinished when the forker left",
		     pending, LV_CHILDREN);
	EXPECT_LT(CG_MIN_PER_COPY, (post - pre) / copies);
	EXPECT_GT(CG_MIN_PER_COPY, slab_bytes(children) / copies);
	EXPECT_GT(CG_MIN_PER_COPY, slab_bytes(moved) / copies);
out:
	close(lv.hold[1]);
	close(lv.go[1]);
	close(lv.done[0]);
	close(cmd[1]);
	if (!variant->exit)
		waitpid(pid, &status, 0);
	close(back[0]);
	close(lv.children_cg);
	EXPECT_TRUE(gone_within(RUE_TRACEFS "events/user_events/__rue_cg_leave", 120000));
	EXPECT_TRUE(scopes_back_to(scopes)) TH_LOG("scopes: %lld, at the start %lld",
						  rue_stat("scopes"), scopes);
	rmdir(forker);
	rmdir(children);
	rmdir(moved);
}

TEST_HARNESS_MAIN
