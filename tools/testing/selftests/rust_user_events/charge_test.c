// SPDX-License-Identifier: GPL-2.0
/*
 * What a program's use of user_events allocates is charged to its memory cgroup, as upstream
 * charges it (GFP_KERNEL_ACCOUNT, and __GFP_ACCOUNT in the fork path):
 *   - events: registering CG_EVENTS events with 480-byte field lists charges the registering
 *     cgroup for each event's strings, fields and print format;
 *   - fork copies: a process with CG_ENABLERS enablers forking CG_CHILDREN children is charged
 *     for the copies, wherever they are made (the forker, the child, a worker);
 *   - and when the forker leaves (exits, or moves to another cgroup) before its child's copy
 *     is made, the child in a cgroup of its own: the copy is charged to the cgroup of the fork,
 *     not to the child's, the one it moved to, or none.
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
#include <poll.h>
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
	return rue_forking_holder("__rue_cg_copy u32 x", CG_ENABLERS, CG_CHILDREN, CG_CHILDREN,
				  cmd, back);
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
 * The forker leaves (exits, or moves to another cgroup) before the copy into its child is made:
 * the copy must still be charged to the cgroup it forked in, as upstream's copies, made inside
 * copy_process(), are. A forker makes its child's copy before its fork() returns, so it leaves
 * first only where that copy has to wait: for the copy into the forker itself, from its own
 * parent, which that parent is still making. So a process with many enablers (the top, in a
 * cgroup of its own) forks the forker (into the forker's cgroup), which forks its child at once
 * (into a cgroup of its own: charging the child's cgroup shows as well), and the forker's
 * copy waits, killably, for the top's copy into it. Meanwhile the test kills the forker (its
 * child's copy then goes to a worker) or moves it to another cgroup (it makes the copy itself
 * after the move). Inconclusive (a skip, which fails make check) unless the forker had left
 * well before the top's copy, and so the child's, was made.
 */
#define LV_MAX_ENABLERS 400000
#define LV_COPY_MS 1000		/* the top's copy into the forker lasts longer than this */
#define LV_MARGIN_MS 50		/* the forker left this long before that copy was made */

/* What the leaving variants' processes share (set before the top is spawned). */
static struct {
	int exit;		/* leave by exiting, else by moving */
	int forker_cg;		/* the forker's cgroup, an O_DIRECTORY fd */
	int children_cg;	/* its child's cgroup, likewise */
	int go[2];		/* the test tells the child to finish its copy */
	int done[2];		/* the child says its copy is done */
	int hold[2];		/* the forker and its child live until the test closes its end */
	struct lv_shared {
		volatile int n;			/* the top's enablers */
		volatile pid_t forker;		/* once it runs */
		volatile pid_t child;		/* the forker's child, once it runs */
		volatile long long copied;	/* when the top's fork() returned */
	} *sh;
} lv;

/* clone3() into the cgroup @cg: the child's pid, 0 in the child, -1. */
static pid_t clone_into(int cg)
{
	struct clone_args args = {
		.flags = CLONE_INTO_CGROUP,
		.exit_signal = SIGCHLD,
		.cgroup = (__u64)cg,
	};

	return syscall(SYS_clone3, &args, sizeof(args));
}

/*
 * The forker's child: finishes its own copy when told (its UNREG runs it, or waits for it),
 * says so and lives on until the test lets it go.
 */
static void leaving_child(int data)
{
	static volatile __u32 nothing;
	char c;

	lv.sh->child = getpid();
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

/* The forker: says who it is, forks its child at once and lives until the test lets it go. */
static void leaving_forker(int data)
{
	pid_t pid;
	char c;

	lv.sh->forker = getpid();
	pid = clone_into(lv.children_cg);
	if (pid < 0)
		_exit(2);
	if (pid == 0)
		leaving_child(data);
	while (read(lv.hold[0], &c, 1) > 0)
		;
	_exit(0);
}

/*
 * The top: registers bits until that took twice LV_COPY_MS on the reference machine (a copy
 * costs about half of what a REG does), at most LV_MAX_ENABLERS, and says 'R'; on 'F' forks the
 * forker into its cgroup, notes when its fork() returned (the copy into the forker made), says
 * 'K' and lives until EOF on @cmd.
 */
static int leaving_top(int cmd, int back)
{
	volatile __u32 *words = mmap(NULL, (LV_MAX_ENABLERS + 31) / 32 * sizeof(__u32),
				     PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	long long end = rue_now_ms() + 2 * rue_bound_ms(LV_COPY_MS);
	int fd = open(DATA_FILE, O_RDWR), n = 0, status;
	pid_t pid;
	char c = 0;

	/* The ends only the test uses: the forker and its child see EOF once the test closes. */
	close(lv.go[1]);
	close(lv.done[0]);
	close(lv.hold[1]);
	if (fd < 0 || words == MAP_FAILED)
		return 2;
	while (n < LV_MAX_ENABLERS && rue_now_ms() < end)
		for (int i = 0; i < 1000; i++, n++)
			if (rue_reg_word(fd, "__rue_cg_leave u32 x", &words[n / 32], n % 32))
				return 3;
	lv.sh->n = n;
	if (write(back, "R", 1) != 1 || read(cmd, &c, 1) != 1 || c != 'F')
		return 4;
	pid = clone_into(lv.forker_cg);
	if (pid < 0)
		return 5;
	if (pid == 0)
		leaving_forker(fd);
	lv.sh->copied = rue_now_ms();
	if (write(back, "K", 1) != 1)
		return 6;
	while (read(cmd, &c, 1) > 0)
		;		/* EOF: done */
	return waitpid(pid, &status, 0) == pid ? 0 : 7;
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
	char top[128], forker[128], children[128], moved[128], procs[160], pid_text[32];
	long long pre, post, scopes, left_at, ahead, per_forker, per_child, per_moved;
	int cmd[2], back[2], status, got, pidfd;
	char state = 0;
	pid_t pid, fpid;

	ASSERT_EQ(0, make_cgroup("rue_charge_top", top, sizeof(top)));
	ASSERT_EQ(0, make_cgroup("rue_charge_forker", forker, sizeof(forker)));
	ASSERT_EQ(0, make_cgroup("rue_charge_children", children, sizeof(children)));
	ASSERT_EQ(0, make_cgroup("rue_charge_moved", moved, sizeof(moved)));
	lv.sh = mmap(NULL, sizeof(*lv.sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		     -1, 0);
	ASSERT_NE(MAP_FAILED, lv.sh);
	lv.exit = variant->exit;
	lv.forker_cg = open(forker, O_RDONLY | O_DIRECTORY);
	ASSERT_LE(0, lv.forker_cg);
	lv.children_cg = open(children, O_RDONLY | O_DIRECTORY);
	ASSERT_LE(0, lv.children_cg);
	ASSERT_EQ(0, pipe(lv.go));
	ASSERT_EQ(0, pipe(lv.done));
	ASSERT_EQ(0, pipe(lv.hold));
	scopes = rue_stat("scopes");
	ASSERT_LE(0, scopes);
	pid = spawn_in(top, leaving_top, cmd, back);
	ASSERT_NE(-1, pid);
	close(lv.go[0]);
	close(lv.done[1]);
	close(lv.hold[0]);
	ASSERT_EQ('R', recv_c(back[0]));
	/* The forker's cgroup is empty: all it gains comes from the forker and its child. */
	pre = slab_bytes(forker);
	ASSERT_LE(0, pre);
	ASSERT_EQ(0, send_c(cmd[1], 'F'));
	ASSERT_TRUE(rue_wait_until(lv.sh->forker && lv.sh->child, 10000, 100));
	fpid = lv.sh->forker;
	/* The forker's copy into its child waits for the top's copy into it. */
	got = rue_wait_until((state = rue_proc_state(fpid)) == 'D', 10000, 100);
	if (variant->exit) {
		pidfd = syscall(SYS_pidfd_open, fpid, 0);
		ASSERT_LE(0, pidfd);
		ASSERT_EQ(0, kill(fpid, SIGKILL));
		ASSERT_EQ(1, poll(&(struct pollfd){ .fd = pidfd, .events = POLLIN }, 1,
				  rue_bound_ms(60000)));
		close(pidfd);
	} else {
		snprintf(pid_text, sizeof(pid_text), "%d", fpid);
		snprintf(procs, sizeof(procs), "%s/cgroup.procs", moved);
		ASSERT_EQ(0, rue_write_text(procs, 0, pid_text));
	}
	left_at = rue_now_ms();
	ASSERT_EQ('K', recv_c(back[0]));
	/* How long before the copy into the forker was made (and the child's could begin). */
	ahead = lv.sh->copied - left_at;
	ksft_print_msg("%s: the forker (state %c) left %lld ms before the copy of %d enablers into it was made\n",
		       variant->exit ? "exit" : "move", state ? state : '?', ahead, lv.sh->n);

	/* The child's copy made (its UNREG runs it or waits for it). */
	ASSERT_EQ(0, send_c(lv.go[1], 'U'));
	ASSERT_EQ('C', recv_c(lv.done[0]));
	post = slab_bytes(forker);
	per_forker = (post - pre) / lv.sh->n;
	per_child = slab_bytes(children) / lv.sh->n;
	per_moved = slab_bytes(moved) / lv.sh->n;
	ksft_print_msg("%s: per copied enabler, the forker's cgroup was charged %lld bytes, its "
		       "child's %lld, the one it moved to %lld\n",
		       variant->exit ? "exit" : "move", per_forker, per_child, per_moved);
	if (!got || ahead < rue_bound_ms(LV_MARGIN_MS))
		SKIP(goto out, "inconclusive: the forker was not waiting, or left too late");
	EXPECT_LT(CG_MIN_PER_COPY, per_forker);
	EXPECT_GT(CG_MIN_PER_COPY, per_child);
	EXPECT_GT(CG_MIN_PER_COPY, per_moved);
out:
	close(lv.hold[1]);
	close(lv.go[1]);
	close(lv.done[0]);
	close(cmd[1]);
	EXPECT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(back[0]);
	close(lv.forker_cg);
	close(lv.children_cg);
	EXPECT_TRUE(gone_within(RUE_TRACEFS "events/user_events/__rue_cg_leave", 120000));
	EXPECT_TRUE(scopes_back_to(scopes)) TH_LOG("scopes: %lld, at the start %lld",
						  rue_stat("scopes"), scopes);
	/* The child, reparented where the forker exited, exits with the hold pipe closed. */
	rue_wait_until(!rmdir(children) || errno != EBUSY, 10000, 10000);
	rmdir(top);
	rmdir(forker);
	rmdir(moved);
}

TEST_HARNESS_MAIN
