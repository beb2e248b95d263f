// SPDX-License-Identifier: GPL-2.0
/*
 * Allocation failures: every allocation of a registration, a dynamic_events
 * create and an open of user_events_data is made to fail in turn, with the
 * kernel's fault injection (/proc/thread-self/fail-nth: the Nth fault point of
 * this task fails). Each call must succeed or fail with ENOMEM, and whatever
 * succeeded must work and go away cleanly; the VM's kmemleak scan and kernel-log
 * check then find any leak or report the failure paths left behind.
 *
 * Needs CONFIG_FAULT_INJECTION, CONFIG_FAILSLAB and CONFIG_FAULT_INJECTION_DEBUG_FS
 * (the test kernel has them; Debian's kernel does not, and the tests skip there).
 * With CONFIG_FAULT_INJECTION_STACKTRACE_FILTER, two more restrict the failures
 * to allocations with module code on the stack: a failed delayed destroy (in a
 * work item) and the module's init (inside insmod, sparing the loader's own).
 * The module is loaded when this starts and when it ends.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/user_events.h>

#include "kselftest_harness.h"
#include "rue_helpers.h"

#define FAILSLAB "/sys/kernel/debug/failslab/"
#define FAIL_NTH "/proc/thread-self/fail-nth"
/* More fault points than any of the calls below has: the loops end before. */
#define MAX_NTH 400

/* This thread's fail-nth, open all along: reading and writing it allocate nothing. */
static int nth_fd = -1;

/* Arms fail-nth: the @n-th fault point of this thread from now on fails. */
static int arm(int n)
{
	char text[16];
	int len = snprintf(text, sizeof(text), "%d", n);

	return pwrite(nth_fd, text, len, 0) == len ? 0 : -errno;
}

/* Disarms fail-nth; true if the armed failure was injected (the count ran out). */
static int disarm_and_check_injected(void)
{
	char buf[16] = { 0 };
	int left = pread(nth_fd, buf, sizeof(buf) - 1, 0) > 0 ? atoi(buf) : -1;

	pwrite(nth_fd, "0", 1, 0);
	return left == 0;
}

FIXTURE(fault) {
	int unused;
};

FIXTURE_SETUP(fault)
{
	if (!exists(FAIL_NTH) || !exists(FAILSLAB "ignore-gfp-wait"))
		SKIP(return, "the kernel has no fault injection (CONFIG_FAULT_INJECTION, FAILSLAB, _DEBUG_FS)");
	/* Sleeping allocations fail too (the default spares them), and quietly. */
	ASSERT_EQ(0, write_file(FAILSLAB "ignore-gfp-wait", "N"));
	ASSERT_EQ(0, write_file(FAILSLAB "verbose", "0"));
	nth_fd = open(FAIL_NTH, O_RDWR);
	ASSERT_NE(-1, nth_fd);
}

FIXTURE_TEARDOWN(fault)
{
	if (nth_fd >= 0) {
		pwrite(nth_fd, "0", 1, 0);
		close(nth_fd);
		nth_fd = -1;
	}
}

#define FIELDS_SLAB "/sys/kernel/slab/ftrace_event_field/"

/*
 * Objects in use in the tracing core's cache of event fields (trace_define_field()), or -1 if
 * the cache is shared with others (merged) or not shown: only then its count is this test's
 * own. The cache is shrunk first, so that no free object waits in a per-CPU cache, where it
 * counts as in use.
 */
static long field_objects(void)
{
	char buf[64];

	if (read_file(FIELDS_SLAB "aliases", buf, sizeof(buf)) <= 0 || atoi(buf) != 0)
		return -1;
	if (write_file(FIELDS_SLAB "shrink", "1") ||
	    read_file(FIELDS_SLAB "objects", buf, sizeof(buf)) <= 0)
		return -1;
	return atol(buf);
}

/*
 * REG of a new event with every allocation failing in turn. The fields a REG defined before a
 * later step failed are freed again: kmemleak does not see those (a stale pointer on a kernel
 * stack is enough to hide them), the core's field cache's own count does.
 */
TEST_F(fault, reg_fails_with_enomem_at_every_allocation_and_leaves_nothing)
{
	__u32 word = 0;
	char name[64];
	int n, injected = 0, ok = 0;
	long fields = field_objects();

	for (n = 1; n <= MAX_NTH; n++) {
		int fd = open(RUE_TRACEFS "user_events_data", O_RDWR), ret, done;

		ASSERT_NE(-1, fd);
		snprintf(name, sizeof(name), "__rue_fi%d u32 a; char[8] b; __rel_loc char[] c", n);
		ASSERT_EQ(0, arm(n));
		ret = rue_reg(fd, name, &word, 0);
		done = !disarm_and_check_injected();
		if (ret >= 0) {
			char payload[16] = { 0 };

			ok++;
			/* Registered with nobody attached: the write path answers EBADF. */
			EXPECT_EQ(-EBADF, rue_emit(fd, ret, payload, sizeof(payload)));
			EXPECT_EQ(0, rue_unreg(fd, &word, 0));
		} else {
			injected++;
			EXPECT_EQ(-ENOMEM, ret) TH_LOG("allocation %d: REG returned %d", n, ret);
		}
		close(fd);
		if (done)
			break;
	}
	TH_LOG("REG: %d runs failed an allocation, %d succeeded", injected, ok);
	EXPECT_LT(n, MAX_NTH);
	EXPECT_LT(0, injected);
	/*
	 * Counted on every kernel this runs on (the test kernel's cache is its own): a kernel
	 * where it cannot be counted fails rather than pass unchecked.
	 */
	ASSERT_LE(0, fields)
		TH_LOG("%s merged with other caches or not shown: fields left cannot be counted",
		       FIELDS_SLAB);
	/* The events that registered go asynchronously, and their fields with them. */
	EXPECT_TRUE(rue_wait_until(field_objects() == fields, 10000, 1000))
		TH_LOG("event fields: %ld before, %ld after", fields, field_objects());
}

/* A u: line in dynamic_events with every allocation failing in turn. */
TEST_F(fault, dynamic_events_create_fails_with_enomem_at_every_allocation)
{
	char line[64], del[64];
	int n, injected = 0;

	for (n = 1; n <= MAX_NTH; n++) {
		int ret, done;

		snprintf(line, sizeof(line), "u:__rue_fd%d u32 a; u64 b", n);
		ASSERT_EQ(0, arm(n));
		ret = dyn_write(line);
		done = !disarm_and_check_injected();
		if (ret == 0) {
			snprintf(del, sizeof(del), "-:__rue_fd%d u32 a; u64 b", n);
			EXPECT_EQ(0, dyn_write(del)) TH_LOG("allocation %d: delete", n);
		} else {
			injected++;
			EXPECT_EQ(-ENOMEM, ret) TH_LOG("allocation %d: create returned %d", n, ret);
		}
		if (done)
			break;
	}
	TH_LOG("u: create: %d runs failed an allocation", injected);
	EXPECT_LT(n, MAX_NTH);
	EXPECT_LT(0, injected);
}

/* Opening user_events_data with every allocation failing in turn. */
TEST_F(fault, open_fails_with_enomem_at_every_allocation)
{
	int n, injected = 0;

	for (n = 1; n <= MAX_NTH; n++) {
		int fd, err, done;

		ASSERT_EQ(0, arm(n));
		fd = open(RUE_TRACEFS "user_events_data", O_RDWR);
		err = errno;
		done = !disarm_and_check_injected();
		if (fd >= 0) {
			close(fd);
		} else {
			injected++;
			EXPECT_EQ(ENOMEM, err) TH_LOG("allocation %d: open failed with %d", n, err);
		}
		if (done)
			break;
	}
	TH_LOG("open: %d runs failed an allocation", injected);
	EXPECT_LT(n, MAX_NTH);
	EXPECT_LT(0, injected);
}

/*
 * Faults restricted to allocations made with module code on the stack
 * (CONFIG_FAULT_INJECTION_STACKTRACE_FILTER): from the end of the kernel
 * image to the end of the module area, x86-64's MODULES_END. arm64's module
 * area lies below the kernel image: there the range is the loaded module's
 * own (its address and size in /proc/modules).
 */
#define MODULES_END 0xffffffffff000000ULL

#ifndef __x86_64__
static int in_modules_only(void)
{
	char line[256], text[32];
	unsigned long long start = 0, size = 0;
	FILE *f = fopen("/proc/modules", "r");

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "rust_user_events ", 17) &&
		    sscanf(line, "%*s %llu %*s %*s %*s %llx", &size, &start) == 2)
			break;
	fclose(f);
	if (!start || !size)
		return -ENOENT;
	snprintf(text, sizeof(text), "%llu", start);
	if (write_file(FAILSLAB "require-start", text))
		return -EIO;
	snprintf(text, sizeof(text), "%llu", start + size);
	return write_file(FAILSLAB "require-end", text) ? -EIO : 0;
}
#else
static int in_modules_only(void)
{
	char line[256], text[32];
	unsigned long long end = 0;
	FILE *f = fopen("/proc/kallsyms", "r");

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, " _end\n") && sscanf(line, "%llx", &end) == 1)
			break;
	fclose(f);
	if (!end)
		return -ENOENT;
	snprintf(text, sizeof(text), "%llu", end);
	if (write_file(FAILSLAB "require-start", text))
		return -EIO;
	snprintf(text, sizeof(text), "%llu", MODULES_END);
	return write_file(FAILSLAB "require-end", text) ? -EIO : 0;
}
#endif

static void anywhere(void)
{
	write_file(FAILSLAB "require-start", "0");
	write_file(FAILSLAB "require-end", "18446744073709551615");
}

static int module_loaded(void)
{
	char buf[1 << 16];

	return read_file("/proc/modules", buf, sizeof(buf)) > 0 && strstr(buf, "rust_user_events ");
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * The destroy that follows an event's last reference runs in a work item.
 * If it fails (here: its credential allocation), the event must neither be
 * freed under the core nor leak: upstream sets the count back to one and the
 * event stays forever; this module tries again, and the event goes.
 */
TEST_F(fault, failed_destroy_is_retried)
{
	int fd = open(RUE_TRACEFS "user_events_data", O_RDWR);
	char times[16] = "";
	__u32 word = 0;
	double start;

	if (!exists(FAILSLAB "require-start"))
		SKIP(return, "no CONFIG_FAULT_INJECTION_STACKTRACE_FILTER");
	ASSERT_NE(-1, fd);
	ASSERT_LE(0, rue_reg(fd, "__rue_fdestroy u32 a", &word, 0));
	ASSERT_EQ(0, rue_unreg(fd, &word, 0));
	/* The next allocation with module code on the stack, in any task, fails. */
	ASSERT_EQ(0, in_modules_only());
	ASSERT_EQ(0, write_file(FAILSLAB "task-filter", "N"));
	ASSERT_EQ(0, write_file(FAILSLAB "interval", "1"));
	ASSERT_EQ(0, write_file(FAILSLAB "times", "1"));
	ASSERT_EQ(0, write_file(FAILSLAB "probability", "100"));
	close(fd);	/* the last reference: the destroy is queued */
	start = now_s();
	while (exists(RUE_TRACEFS "events/user_events/__rue_fdestroy") &&
	       now_s() < start + rue_bound_ms(20000) / 1000)
		usleep(10000);
	write_file(FAILSLAB "probability", "0");
	anywhere();
	read_file(FAILSLAB "times", times, sizeof(times));
	write_file(FAILSLAB "times", "1");
	EXPECT_EQ(0, atoi(times)) TH_LOG("the failure was not injected");
	EXPECT_FALSE(exists(RUE_TRACEFS "events/user_events/__rue_fdestroy"))
		TH_LOG("the event stayed after its failed destroy");
	TH_LOG("the event went %.2f s after its last reference", now_s() - start);
}

/*
 * fork() of a process with enablers, with each allocation the module makes in
 * the parent for it failing in turn (the fork probe's, then the copy's, which
 * the parent makes before its fork() returns): the fork succeeds, the child is
 * left out (counted as scope_join_failed, or as fork_copy_failed when the copy
 * failed) or gets the copy, never half of it, and either way registers on its
 * own afterwards.
 */
TEST_F(fault, fork_fails_to_join_a_scope_at_every_allocation)
{
	int fd = open(RUE_TRACEFS "user_events_data", O_RDWR);
	int n, injected = 0, left_out = 0;
	static __u32 word;
	long after;

	if (!exists(FAILSLAB "require-start"))
		SKIP(return, "no CONFIG_FAULT_INJECTION_STACKTRACE_FILTER");
	ASSERT_NE(-1, fd);
	ASSERT_LE(0, rue_reg(fd, "__rue_ffork u32 a", &word, 0));
	ASSERT_EQ(0, in_modules_only());
	for (n = 1; n <= MAX_NTH; n++) {
		long before = rue_stat("scope_join_failed");
		long copy_before = rue_stat("fork_copy_failed");
		int status, done;
		pid_t pid;

		ASSERT_EQ(0, arm(n));
		pid = fork();
		if (pid == 0) {
			/* Inherited (0) unless the join failed (ENOENT); a new REG works either way. */
			int inherited = rue_unreg(fd, &word, 0);

			_exit((inherited == 0 || inherited == -ENOENT) &&
			      rue_reg(fd, "__rue_ffork u32 a", &word, 1) >= 0 && !rue_unreg(fd, &word, 1) ?
			      (inherited ? 2 : 0) : 1);
		}
		/* Only the parent: the fail-nth file open is this thread's. */
		done = !disarm_and_check_injected();
		ASSERT_LT(0, pid);
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		ASSERT_TRUE(WIFEXITED(status));
		if (done) {
			EXPECT_EQ(0, WEXITSTATUS(status)) TH_LOG("allocation %d: no failure", n);
			break;
		}
		injected++;
		/* Not every allocation under the probe is the join's: some have a fallback. */
		after = rue_stat("scope_join_failed") - before +
			rue_stat("fork_copy_failed") - copy_before;
		if (WEXITSTATUS(status) == 2 && after == 1)
			left_out++;
		else
			EXPECT_TRUE(WEXITSTATUS(status) == 0 && after == 0)
				TH_LOG("allocation %d: child %d, scope_join_failed and fork_copy_failed grew by %ld",
				       n, WEXITSTATUS(status), after);
	}
	anywhere();
	TH_LOG("fork: %d forks failed an allocation, %d children were left out", injected, left_out);
	EXPECT_LT(0, left_out);
	EXPECT_EQ(0, rue_unreg(fd, &word, 0));
	close(fd);
}

/*
 * insmod with @params and every allocation of the module's init failing in
 * turn (the loader's own are spared): each load fails with ENOMEM and leaves
 * no file and no module behind, until one succeeds.
 */
static void init_fails_at_every_allocation(struct __test_metadata *_metadata,
					   const char *params)
{
	const char *path = getenv("RUE_MODULE") ?: "/rue/rust_user_events.ko";
	int n, injected = 0, ret = -1;

	/* The events of the tests before go asynchronously, and each pins the module. */
	rue_wait_until(!syscall(SYS_delete_module, "rust_user_events", O_NONBLOCK), 30000, 10000);
	ASSERT_FALSE(module_loaded()) TH_LOG("rmmod: %s", strerror(errno));
	ASSERT_EQ(0, in_modules_only());
	for (n = 1; n <= MAX_NTH; n++) {
		int fd = open(path, O_RDONLY | O_CLOEXEC), done;

		ASSERT_NE(-1, fd);
		ASSERT_EQ(0, arm(n));
		ret = syscall(SYS_finit_module, fd, params, 0) ? -errno : 0;
		done = !disarm_and_check_injected();
		close(fd);
		if (ret == 0)
			break;
		injected++;
		EXPECT_EQ(-ENOMEM, ret) TH_LOG("allocation %d: insmod returned %d", n, ret);
		EXPECT_FALSE(exists(RUE_TRACEFS "user_events_data")) TH_LOG("allocation %d", n);
		EXPECT_FALSE(exists(RUE_TRACEFS "user_events_status")) TH_LOG("allocation %d", n);
		EXPECT_FALSE(module_loaded()) TH_LOG("allocation %d", n);
		if (done)
			break;
	}
	anywhere();
	TH_LOG("insmod %s: %d loads failed an allocation of the init", params, injected);
	ASSERT_EQ(0, ret) TH_LOG("the last load");
	EXPECT_TRUE(exists(RUE_TRACEFS "user_events_data"));
	EXPECT_LT(0, injected);
}

/* finit_module(2) of the module with no parameters; 0 or -errno. */
static int load_without_parameters(void)
{
	const char *path = getenv("RUE_MODULE") ?: "/rue/rust_user_events.ko";
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int ret;

	if (fd < 0)
		return -errno;
	ret = syscall(SYS_finit_module, fd, "", 0) ? -errno : 0;
	close(fd);
	return ret;
}

TEST_F(fault, module_init_fails_with_enomem_at_every_allocation)
{
	if (!exists(FAILSLAB "require-start"))
		SKIP(return, "no CONFIG_FAULT_INJECTION_STACKTRACE_FILTER");
	init_fails_at_every_allocation(_metadata, "");
}

/*
 * The same with group=: the kernel credentials the files are given their
 * group with are one more allocation; the load that succeeds gave the group
 * to every file. The module is loaded again without parameters afterwards.
 */
TEST_F(fault, module_init_with_group_fails_with_enomem_at_every_allocation)
{
	struct stat st;

	if (!exists(FAILSLAB "require-start"))
		SKIP(return, "no CONFIG_FAULT_INJECTION_STACKTRACE_FILTER");
	init_fails_at_every_allocation(_metadata, "group=4242");
	ASSERT_EQ(0, stat(RUE_TRACEFS "user_events_data", &st));
	EXPECT_EQ(4242u, st.st_gid);
	EXPECT_EQ(0660u, st.st_mode & 07777);
	ASSERT_EQ(0, stat(RUE_TRACEFS "user_events_status", &st));
	EXPECT_EQ(4242u, st.st_gid);
	ASSERT_EQ(0, syscall(SYS_delete_module, "rust_user_events", O_NONBLOCK));
	ASSERT_EQ(0, load_without_parameters());
}

TEST_HARNESS_MAIN
