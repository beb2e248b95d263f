// SPDX-License-Identifier: GPL-2.0
/*
 * Enablers across the process lifecycle: an fd inherited by a child or passed
 * over a unix socket registers into the registering process's memory; threads
 * register; exit of the registrant lets the event auto-delete; exec drops the
 * enablers; and a stress run of processes forking, registering, enabling and
 * exiting concurrently (the VM then checks lockdep, KASAN and kmemleak).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/user_events.h>

#include "kselftest_harness.h"
#include "rue_helpers.h"

#define TRACEFS "/sys/kernel/tracing/"
#define DATA_FILE TRACEFS "user_events_data"
#define STRESS_SECONDS 30

/* Polls @word (another process writes it) up to 1 s (scaled: rue_bound_ms()) for @want. */
static int wait_word(volatile __u32 *word, __u32 want)
{
	return rue_wait_until(*word == want, 1000, 1000);
}

/* A page both processes see, for handshakes: page[1] = child registered. */
static volatile __u32 *shared_page(void)
{
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

TEST(inherited_fd_registers_into_the_child)
{
	volatile __u32 *page = shared_page();
	int fd = open(DATA_FILE, O_RDWR), status;
	pid_t pid;

	ASSERT_NE(NULL, page);
	ASSERT_NE(-1, fd);
	pid = fork();
	ASSERT_NE(-1, pid);
	if (pid == 0) {
		/* A private word: only a write into the child's memory reaches it. */
		volatile __u32 word = 0;

		/* The child registers its word with the parent's fd. */
		if (rue_reg_word(fd, "__rue_lc1 u32 a", &word, 0))
			_exit(2);
		page[1] = 1;
		/* Enabled by the parent: the kernel sets the bit in the child. */
		_exit(wait_word(&word, 1) ? 0 : 1);
	}
	ASSERT_TRUE(wait_word(&page[1], 1));
	ASSERT_EQ(0, rue_set_enable("__rue_lc1", "1"));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
	ASSERT_EQ(0, rue_set_enable("__rue_lc1", "0"));
	close(fd);
	/* The registrant exited and the fd is closed: the event auto-deletes. */
	EXPECT_TRUE(gone_within(TRACEFS "events/user_events/__rue_lc1", 1000));
}

#define FORK_ROUNDS 300

/*
 * Forks FORK_ROUNDS children that each run @child(@fd, @word) at once and exit
 * with its result; returns how many exited non-zero, or -1 if fork() failed.
 */
static int children_failing(int fd, volatile __u32 *word, int (*child)(int, volatile __u32 *))
{
	int failed = 0, status;

	for (int i = 0; i < FORK_ROUNDS; i++) {
		pid_t pid = fork();

		if (pid < 0)
			return -1;
		if (pid == 0)
			_exit(child(fd, word));
		if (waitpid(pid, &status, 0) != pid)
			return -1;
		failed += WEXITSTATUS(status) != 0;
	}
	return failed;
}

static int child_unregisters(int fd, volatile __u32 *word)
{
	return rue_unreg(fd, word, 0) ? 1 : 0;
}

static int child_reregisters(int fd, volatile __u32 *word)
{
	return rue_reg_word(fd, "__rue_lc_fr u32 a", word, 0) == -EADDRINUSE ? 0 : 1;
}

/*
 * Upstream copies the enablers inside fork(), so a child sees them from its
 * first instruction. Here the copy is queued work; a child that unregisters or
 * registers at once must still find its inherited enabler (it did not, in a few
 * percent of forks, before REG/UNREG waited for a pending copy).
 */
TEST(child_unregisters_inherited_enabler_at_once)
{
	static volatile __u32 word;
	int fd = open(DATA_FILE, O_RDWR), failed;

	ASSERT_NE(-1, fd);
	ASSERT_EQ(0, rue_reg_word(fd, "__rue_lc_fu u32 a", &word, 0));
	failed = children_failing(fd, &word, child_unregisters);
	EXPECT_EQ(0, failed) TH_LOG("%d of %d children found no inherited enabler", failed, FORK_ROUNDS);
	EXPECT_EQ(0, rue_unreg(fd, &word, 0));
	close(fd);
}

TEST(child_reregistering_inherited_enabler_at_once_gets_eaddrinuse)
{
	static volatile __u32 word;
	int fd = open(DATA_FILE, O_RDWR), failed;

	ASSERT_NE(-1, fd);
	ASSERT_EQ(0, rue_reg_word(fd, "__rue_lc_fr u32 a", &word, 0));
	failed = children_failing(fd, &word, child_reregisters);
	EXPECT_EQ(0, failed) TH_LOG("%d of %d children could register over their inherited enabler",
				    failed, FORK_ROUNDS);
	EXPECT_EQ(0, rue_unreg(fd, &word, 0));
	close(fd);
}

TEST(fd_passed_over_unix_socket_registers_into_the_receiver)
{
	volatile __u32 *page = shared_page();
	int sv[2], status;
	pid_t pid;

	ASSERT_NE(NULL, page);
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	pid = fork();
	ASSERT_NE(-1, pid);
	if (pid == 0) {
		/* Like dotnet-trace's target: it never opens user_events_data itself. */
		int fd = rue_recv_fd(sv[1], 0);
		volatile __u32 word = 0;

		if (fd < 0 || rue_reg_word(fd, "__rue_lc2 u32 a", &word, 31))
			_exit(2);
		page[1] = 1;
		_exit(wait_word(&word, 1u << 31) ? 0 : 1);
	}
	{
		int fd = open(DATA_FILE, O_RDWR);

		ASSERT_NE(-1, fd);
		ASSERT_EQ(0, rue_send_fd(sv[0], fd, 0));
		close(fd);
	}
	ASSERT_TRUE(wait_word(&page[1], 1));
	ASSERT_EQ(0, rue_set_enable("__rue_lc2", "1"));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
	ASSERT_EQ(0, rue_set_enable("__rue_lc2", "0"));
	close(sv[0]);
	close(sv[1]);
	EXPECT_TRUE(gone_within(TRACEFS "events/user_events/__rue_lc2", 1000));
}

struct thread_arg {
	int fd;
	volatile __u32 word;
	volatile int step;	/* 1: registered, 2: main enabled, 3: done */
	int reg_ret, unreg_ret;
	__u32 seen;
};

/* Registers from a new thread, waits for the main thread to enable, unregisters. */
static void *thread_registers(void *p)
{
	struct thread_arg *arg = p;

	arg->reg_ret = rue_reg_word(arg->fd, "__rue_lc3 u32 a", &arg->word, 4);
	arg->step = 1;
	while (arg->step != 2)
		usleep(1000);
	arg->seen = arg->word;
	arg->unreg_ret = rue_unreg(arg->fd, &arg->word, 4);
	return NULL;
}

TEST(registration_from_a_thread_is_scoped_to_that_thread)
{
	struct thread_arg arg = { .fd = open(DATA_FILE, O_RDWR) };
	pthread_t t;

	ASSERT_NE(-1, arg.fd);
	ASSERT_EQ(0, pthread_create(&t, NULL, thread_registers, &arg));
	while (arg.step != 1)
		usleep(1000);
	ASSERT_EQ(0, arg.reg_ret);
	ASSERT_EQ(0, rue_set_enable("__rue_lc3", "1"));
	EXPECT_EQ(1u << 4, arg.word);
	/* The thread was created before any registration: its scope is its own (upstream). */
	EXPECT_EQ(-ENOENT, rue_unreg(arg.fd, &arg.word, 4));
	arg.step = 2;
	ASSERT_EQ(0, pthread_join(t, NULL));
	EXPECT_EQ(1u << 4, arg.seen);
	EXPECT_EQ(0, arg.unreg_ret);
	EXPECT_EQ(0, arg.word);
	ASSERT_EQ(0, rue_set_enable("__rue_lc3", "0"));
	close(arg.fd);
}

static void *thread_unregisters(void *p)
{
	struct thread_arg *arg = p;

	arg->unreg_ret = rue_unreg(arg->fd, &arg->word, 6);
	return NULL;
}

TEST(thread_created_after_registration_shares_the_scope)
{
	struct thread_arg arg = { .fd = open(DATA_FILE, O_RDWR) };
	pthread_t t;

	ASSERT_NE(-1, arg.fd);
	ASSERT_EQ(0, rue_reg_word(arg.fd, "__rue_lc8 u32 a", &arg.word, 6));
	ASSERT_EQ(0, pthread_create(&t, NULL, thread_unregisters, &arg));
	ASSERT_EQ(0, pthread_join(t, NULL));
	EXPECT_EQ(0, arg.unreg_ret);
	EXPECT_EQ(-ENOENT, rue_unreg(arg.fd, &arg.word, 6));
	close(arg.fd);
}

TEST(exec_drops_the_enablers)
{
	volatile __u32 *page = shared_page();
	int fd = open(DATA_FILE, O_RDWR), status;
	pid_t pid;

	ASSERT_NE(NULL, page);
	ASSERT_NE(-1, fd);
	pid = fork();
	ASSERT_NE(-1, pid);
	if (pid == 0) {
		int own = open(DATA_FILE, O_RDWR | O_CLOEXEC);

		if (own < 0 || rue_reg_word(own, "__rue_lc4 u32 a", &page[0], 0))
			_exit(2);
		page[1] = 1;
		/* Exec only once the parent has seen the event (page[2]). */
		if (!wait_word(&page[2], 1))
			_exit(4);
		execl("/bin/sleep", "sleep", "2", NULL);
		_exit(3);
	}
	/* The child registered: the event exists before its exec. */
	ASSERT_TRUE(wait_word(&page[1], 1));
	EXPECT_TRUE(exists(TRACEFS "events/user_events/__rue_lc4/enable"));
	page[2] = 1;
	/* After the exec the enabler and its file are gone: the event auto-deletes while the
	 * exec'd program still runs (sleep 2). */
	EXPECT_TRUE(gone_within(TRACEFS "events/user_events/__rue_lc4", 1500));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
	close(fd);
}

TEST(vfork_and_exec_leave_the_parents_enabler)
{
	volatile __u32 word = 0;
	int fd = open(DATA_FILE, O_RDWR), status;
	pid_t pid;

	ASSERT_NE(-1, fd);
	ASSERT_EQ(0, rue_reg_word(fd, "__rue_lc7 u32 a", &word, 2));
	/* The child shares the memory, then execs into a new address space. */
	pid = vfork();
	if (pid == 0) {
		execl("/bin/true", "true", NULL);
		_exit(3);
	}
	ASSERT_LT(0, pid);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
	ASSERT_EQ(0, rue_set_enable("__rue_lc7", "1"));
	EXPECT_EQ(1u << 2, word);
	ASSERT_EQ(0, rue_set_enable("__rue_lc7", "0"));
	EXPECT_EQ(0, word);
	EXPECT_EQ(0, rue_unreg(fd, &word, 2));
	close(fd);
}

/* Unmapped or read-only after registration: the kernel gives up quietly, UNREG says EFAULT. */
static void hostile_word(struct __test_metadata *_metadata, const char *event, int unmap)
{
	char name[64], path[128];
	int fd = open(DATA_FILE, O_RDWR);
	__u32 *word = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	ASSERT_NE(-1, fd);
	ASSERT_NE(MAP_FAILED, word);
	snprintf(name, sizeof(name), "%s u32 a", event);
	ASSERT_EQ(0, rue_reg_word(fd, name, word, 0));
	if (unmap) {
		ASSERT_EQ(0, munmap(word, 4096));
	} else {
		ASSERT_EQ(0, mprotect(word, 4096, PROT_READ));
	}
	/* Each status change queues a bounded fault-in that fails; nothing warns or hangs. */
	for (int i = 0; i < 5; i++) {
		ASSERT_EQ(0, rue_set_enable(event, "1"));
		ASSERT_EQ(0, rue_set_enable(event, "0"));
	}
	EXPECT_EQ(-EFAULT, rue_unreg(fd, word, 0));
	close(fd);
	if (!unmap)
		munmap(word, 4096);
	snprintf(path, sizeof(path), TRACEFS "events/user_events/%s", event);
	EXPECT_TRUE(gone_within(path, 1000));
}

TEST(unmapped_enable_word_is_given_up_quietly)
{
	hostile_word(_metadata, "__rue_lc5", 1);
}

TEST(read_only_enable_word_is_given_up_quietly)
{
	hostile_word(_metadata, "__rue_lc6", 0);
}

/* One stress worker: fork/register/enable/write/exit until the deadline. */
static int stress_worker(int id, time_t deadline)
{
	char name[64], enable[64];
	int loops = 0, status;

	snprintf(name, sizeof(name), "__rue_st%d u32 a", id % 4);
	snprintf(enable, sizeof(enable), "__rue_st%d", id % 4);
	while (time(NULL) < deadline) {
		pid_t pid = fork();

		if (pid < 0)
			return -1;
		if (pid == 0) {
			__u32 word = 0;
			int fd = open(DATA_FILE, O_RDWR);
			struct { __s32 idx; __u32 a; } rec = { 0, 1 };

			if (fd < 0 || rue_reg_word(fd, name, &word, id % 32))
				_exit(1);
			rue_set_enable(enable, (loops & 1) ? "1" : "0");
			if (fork() == 0)	/* a grandchild inherits the enabler and exits */
				_exit(0);
			(void)!write(fd, &rec, sizeof(rec));
			wait(NULL);
			_exit(0);	/* exit with the enabler still registered */
		}
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
			return -1;
		loops++;
	}
	return loops;
}

/* 30 s of work; allow for a slow (TCG) machine. */
FIXTURE(stress) {};
FIXTURE_SETUP(stress) {}
FIXTURE_TEARDOWN(stress) {}

TEST_F_TIMEOUT(stress, fork_register_enable_exit, 300)
{
	time_t deadline = time(NULL) + STRESS_SECONDS;
	pid_t workers[4];
	int status;

	for (int i = 0; i < 4; i++) {
		workers[i] = fork();
		ASSERT_NE(-1, workers[i]);
		if (workers[i] == 0)
			_exit(stress_worker(i, deadline) > 0 ? 0 : 1);
	}
	for (int i = 0; i < 4; i++) {
		ASSERT_EQ(workers[i], waitpid(workers[i], &status, 0));
		EXPECT_EQ(0, WEXITSTATUS(status));
	}
	for (int i = 0; i < 4; i++) {
		char ev[64], path[128];

		snprintf(ev, sizeof(ev), "__rue_st%d", i);
		rue_set_enable(ev, "0");
		snprintf(path, sizeof(path), TRACEFS "events/user_events/%s", ev);
		EXPECT_TRUE(gone_within(path, 2000)) TH_LOG("%s lingers", ev);
	}
}

TEST_HARNESS_MAIN
