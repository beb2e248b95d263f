// SPDX-License-Identifier: GPL-2.0
/*
 * dynamic_events: u: lines create persistent user events, every user event is
 * listed with upstream's exact line, the deletion forms, O_TRUNC, permission,
 * coexistence with kprobe events, rmmod refused while an event exists, and
 * deletion held off while the tracing core still references an event (an
 * enable_event trigger being freed).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/user_events.h>

#include "kselftest_harness.h"
#include "rue_helpers.h"

#define TRACEFS "/sys/kernel/tracing/"
#define DYN_FILE TRACEFS "dynamic_events"
#define DATA_FILE TRACEFS "user_events_data"

TEST(create_show_and_delete_with_fields)
{
	char buf[8192];

	ASSERT_EQ(0, dyn_write("u:__rue_d1 u32 count; char[20] msg; struct foo s 20"));
	EXPECT_TRUE(exists(TRACEFS "events/user_events/__rue_d1/enable"));
	ASSERT_LT(0, read_file(DYN_FILE, buf, sizeof(buf)));
	EXPECT_NE(NULL, strstr(buf, "u:__rue_d1 u32 count; char[20] msg; struct foo s 20\n"))
		TH_LOG("dynamic_events:\n%s", buf);
	/* Deletion needs the exact field list. */
	EXPECT_EQ(-ENOENT, dyn_write("!u:__rue_d1 u32 count"));
	EXPECT_EQ(0, dyn_write("!u:__rue_d1 u32 count; char[20] msg; struct foo s 20"));
	EXPECT_FALSE(exists(TRACEFS "events/user_events/__rue_d1"));
}

TEST(delete_forms)
{
	ASSERT_EQ(0, dyn_write("u:__rue_d2"));
	EXPECT_EQ(0, dyn_write("-:__rue_d2"));
	EXPECT_FALSE(exists(TRACEFS "events/user_events/__rue_d2"));

	ASSERT_EQ(0, dyn_write("u:__rue_d3"));
	EXPECT_EQ(0, dyn_write("-:user_events/__rue_d3"));
	EXPECT_FALSE(exists(TRACEFS "events/user_events/__rue_d3"));

	/* Either system name is accepted for any user event (Q10). */
	ASSERT_EQ(0, dyn_write("u:__rue_d4"));
	EXPECT_EQ(0, dyn_write("!u:user_events_multi/__rue_d4"));
	EXPECT_FALSE(exists(TRACEFS "events/user_events/__rue_d4"));

	EXPECT_EQ(-ENOENT, dyn_write("-:__rue_never_created"));
}

TEST(ioctl_events_are_listed_and_busy)
{
	__u32 check = 0;
	char buf[8192];
	struct user_reg reg = {
		.size = sizeof(reg),
		.enable_size = 4,
		.enable_addr = (__u64)(uintptr_t)&check,
		.name_args = (__u64)(uintptr_t)"__rue_d5 u32 a;u32 b",
	};
	struct user_unreg unreg = {
		.size = sizeof(unreg),
		.disable_addr = (__u64)(uintptr_t)&check,
	};
	int fd = open(DATA_FILE, O_RDWR), tfd;

	ASSERT_NE(-1, fd);
	ASSERT_EQ(0, ioctl(fd, DIAG_IOCSREG, &reg));
	ASSERT_LT(0, read_file(DYN_FILE, buf, sizeof(buf)));
	EXPECT_NE(NULL, strstr(buf, "u:__rue_d5 u32 a; u32 b\n")) TH_LOG("%s", buf);
	/* A non-persistent event is busy: no delete, and O_TRUNC fails. */
	EXPECT_EQ(-EBUSY, dyn_write("!u:__rue_d5 u32 a; u32 b"));
	tfd = open(DYN_FILE, O_WRONLY | O_TRUNC);
	EXPECT_EQ(-1, tfd);
	EXPECT_EQ(EBUSY, errno);
	if (tfd >= 0)
		close(tfd);
	EXPECT_EQ(0, ioctl(fd, DIAG_IOCSUNREG, &unreg));
	close(fd);
}

TEST(truncate_frees_unused_user_events)
{
	int fd;

	ASSERT_EQ(0, dyn_write("u:__rue_d6 u64 x"));
	ASSERT_TRUE(exists(TRACEFS "events/user_events/__rue_d6"));
	/* Wait out auto-deletes of the previous test's event, then truncate. */
	rue_wait_until((fd = open(DYN_FILE, O_WRONLY | O_TRUNC)) >= 0 || errno != EBUSY, 2000,
		       1000);
	ASSERT_LE(0, fd) TH_LOG("O_TRUNC: %s", strerror(errno));
	close(fd);
	EXPECT_FALSE(exists(TRACEFS "events/user_events/__rue_d6"));
}

TEST(create_without_perfmon_is_eperm)
{
	pid_t pid = fork();
	int status;

	ASSERT_NE(-1, pid);
	if (pid == 0) {
		int fd = open(DYN_FILE, O_RDWR | O_APPEND);
		const char *line = "u:__rue_d7 u32 a";

		if (fd < 0 || setresuid(65534, 65534, 65534))
			_exit(2);
		_exit(write(fd, line, strlen(line)) == -1 && errno == EPERM ? 0 : 1);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_FALSE(exists(TRACEFS "events/user_events/__rue_d7"));
}

TEST(kprobe_events_still_work_alongside)
{
	char buf[8192];

	ASSERT_EQ(0, dyn_write("p:rue_kp vfs_read"));
	ASSERT_EQ(0, dyn_write("u:__rue_d8 u8 x"));
	ASSERT_LT(0, read_file(DYN_FILE, buf, sizeof(buf)));
	EXPECT_NE(NULL, strstr(buf, "p:kprobes/rue_kp vfs_read\n")) TH_LOG("%s", buf);
	EXPECT_NE(NULL, strstr(buf, "u:__rue_d8 u8 x\n"));
	EXPECT_EQ(0, dyn_write("-:kprobes/rue_kp"));
	EXPECT_EQ(0, dyn_write("-:__rue_d8 u8 x"));
}

TEST(unload_is_refused_while_a_user_event_exists)
{
	ASSERT_EQ(0, dyn_write("u:__rue_d9"));
	EXPECT_EQ(-1, syscall(SYS_delete_module, "rust_user_events", O_NONBLOCK));
	EXPECT_EQ(EWOULDBLOCK, errno);
	EXPECT_EQ(0, dyn_write("-:__rue_d9"));
}

/* Field lists (the command grammar) given to both paths; each must get the same verdict. */
static const char *const grammar_cases[] = {
	"", "u64 a", "s64 a", "u32 a", "s32 a", "int a", "unsigned int a", "u16 a", "short a",
	"unsigned short a", "u8 a", "s8 a", "char a", "unsigned char a", "char[20] a",
	"unsigned char[20] a", "char[0x14] a", "char[010] a", "char[1024] a", "__data_loc char[] a",
	"__data_loc unsigned char[] a", "__rel_loc char[] a", "__rel_loc unsigned char[] a",
	"struct custom a 20", "u32 a; u32 b", "u32 a;u32 b", "u32 a;", "u32 a;;u32 b",
	/* rejected */
	"long a", "unsigned long a", "bool a", "__u32 a", "u32[4] a", "char [4] a", "unsigned a",
	"char[] a", "struct custom a", "char a 20", "char[aa] a", "char[9999] a", "char[0] a",
	"char[1025] a", "char[0x0000000000001] a", "u32", "u32  a", "u32 a b", "struct  x a 20",
	"struct x a 0", "struct x a 2147483648",
};

/* DIAG_IOCSDEL of @name; returns 0 or -errno. */
static int del_by_name(const char *name)
{
	int fd = open(DATA_FILE, O_RDWR), ret;

	if (fd < 0)
		return -errno;
	ret = ioctl(fd, DIAG_IOCSDEL, name) ? -errno : 0;
	close(fd);
	return ret;
}

/* The first this many grammar_cases are valid. */
#define GRAMMAR_ACCEPTED 28

/* REG through the ioctl; returns 0 or -errno (the event is unregistered and closed again). */
static int ioctl_verdict(const char *name_args)
{
	__u32 check = 0;
	struct user_reg reg = {
		.size = sizeof(reg),
		.enable_size = 4,
		.enable_addr = (__u64)(uintptr_t)&check,
		.name_args = (__u64)(uintptr_t)name_args,
	};
	struct user_unreg unreg = {
		.size = sizeof(unreg),
		.disable_addr = (__u64)(uintptr_t)&check,
	};
	int fd = open(DATA_FILE, O_RDWR), ret;

	if (fd < 0)
		return -errno;
	ret = ioctl(fd, DIAG_IOCSREG, &reg) ? -errno : 0;
	if (!ret)
		ioctl(fd, DIAG_IOCSUNREG, &unreg);
	close(fd);
	return ret;
}

TEST(every_grammar_case_gets_the_same_verdict_from_both_paths)
{
	for (unsigned int i = 0; i < sizeof(grammar_cases) / sizeof(grammar_cases[0]); i++) {
		char name_args[256], line[300], dir[128];
		int by_ioctl, by_dyn;

		/* One event name per case, so earlier cases cannot match or clash. */
		snprintf(name_args, sizeof(name_args), "__rue_g%u %s", i, grammar_cases[i]);
		snprintf(line, sizeof(line), "u:%s", name_args);
		snprintf(dir, sizeof(dir), TRACEFS "events/user_events/__rue_g%u", i);
		by_ioctl = ioctl_verdict(name_args);
		EXPECT_TRUE(gone_within(dir, 1000)) TH_LOG("case '%s' lingers", grammar_cases[i]);
		by_dyn = dyn_write(line);
		EXPECT_EQ(i < GRAMMAR_ACCEPTED, by_ioctl == 0)
			TH_LOG("case '%s': ioctl %d", grammar_cases[i], by_ioctl);
		if (i >= GRAMMAR_ACCEPTED)
			EXPECT_EQ(-EINVAL, by_ioctl) TH_LOG("case '%s'", grammar_cases[i]);
		EXPECT_EQ(!by_ioctl, !by_dyn)
			TH_LOG("case '%s': ioctl %d, dynamic_events %d", grammar_cases[i], by_ioctl, by_dyn);
		if (!by_dyn) {
			/* Persistent: DIAG_IOCSDEL by name removes it (some lists never match). */
			snprintf(line, sizeof(line), "__rue_g%u", i);
			EXPECT_EQ(0, del_by_name(line)) TH_LOG("case '%s'", grammar_cases[i]);
		}
		EXPECT_TRUE(gone_within(dir, 1000)) TH_LOG("case '%s' not deleted", grammar_cases[i]);
	}
}

static void *create_delete_loop(void *arg)
{
	char line[64];
	long id = (long)arg;
	long failures = 0;

	for (int i = 0; i < 200; i++) {
		snprintf(line, sizeof(line), "u:__rue_c%ld u32 a", id);
		if (dyn_write(line))
			failures++;
		snprintf(line, sizeof(line), "-:__rue_c%ld u32 a", id);
		if (dyn_write(line))
			failures++;
	}
	return (void *)failures;
}

#define RACE_ROUNDS 200
#define RACE_LINE "__rue_race u32 a"
/* The threads go on past RACE_ROUNDS until both races were seen, up to this (scaled) bound. */
#define RACE_LIMIT_MS 60000

/* Results of one thread racing on the event: races lost as expected, and unexpected ones. */
struct race_result {
	long lost;
	long unexpected;
	int last_errno;
};

/*
 * The races the test is about, over all threads: a delete that found the event gone (ENOENT:
 * the other creator deleted it, or the REG thread's last close did, between this thread's create
 * and delete) or registered (EBUSY: the REG thread held it).
 */
static long race_enoent, race_ebusy;
static long long race_end;

/* True while a thread is to go on: RACE_ROUNDS, then until both races were seen or time is up. */
static int race_more(int round)
{
	if (round < RACE_ROUNDS)
		return 1;
	if (__atomic_load_n(&race_enoent, __ATOMIC_RELAXED) &&
	    __atomic_load_n(&race_ebusy, __ATOMIC_RELAXED))
		return 0;
	return rue_now_ms() < race_end;
}

static void race_note(struct race_result *r, int ret, int ok1, int ok2)
{
	if (ret == 0)
		return;
	if (ret == ok1 || ret == ok2) {
		r->lost++;
		if (ret == -ENOENT)
			__atomic_fetch_add(&race_enoent, 1, __ATOMIC_RELAXED);
		else if (ret == -EBUSY)
			__atomic_fetch_add(&race_ebusy, 1, __ATOMIC_RELAXED);
		return;
	}
	r->unexpected++;
	r->last_errno = ret;
}

/* Creates and deletes the shared event through dynamic_events. */
static void *race_dyn(void *arg)
{
	struct race_result *r = arg;

	for (int i = 0; race_more(i); i++) {
		race_note(r, dyn_write("u:" RACE_LINE), 0, 0);
		/* Deleted by the other thread already, or registered by the REG thread. */
		race_note(r, dyn_write("-:" RACE_LINE), -ENOENT, -EBUSY);
	}
	return NULL;
}

/* Registers and unregisters the same event through user_events_data, a new file each round. */
static void *race_reg(void *arg)
{
	struct race_result *r = arg;
	__u32 word = 0;

	for (int i = 0; race_more(i); i++) {
		int fd = open(DATA_FILE, O_RDWR), ret;

		if (fd < 0) {
			race_note(r, -errno, 0, 0);
			continue;
		}
		ret = rue_reg(fd, RACE_LINE, &word, 0);
		race_note(r, ret < 0 ? ret : 0, 0, 0);
		race_note(r, rue_unreg(fd, &word, 0), 0, 0);
		close(fd);
	}
	return NULL;
}

/* Reads the files that list the event while it comes and goes. */
static void *race_read(void *arg)
{
	struct race_result *r = arg;
	char buf[8192];

	for (int i = 0; race_more(i); i++) {
		int ret = read_file(DYN_FILE, buf, sizeof(buf));

		race_note(r, ret < 0 ? ret : 0, 0, 0);
		ret = read_file(TRACEFS "user_events_status", buf, sizeof(buf));
		race_note(r, ret < 0 ? ret : 0, 0, 0);
	}
	return NULL;
}

/*
 * Two threads create and delete one event through dynamic_events while a third
 * registers and unregisters it through user_events_data and a fourth lists it:
 * every call gets success or the errno its lost race explains, and afterwards the
 * event can be deleted and is gone. The races must have happened: a delete that
 * found the event deleted under it, and one that found it registered. Each thread
 * makes RACE_ROUNDS rounds, and more until both were seen (bounded); the time
 * beyond the default timeout is for that.
 */
FIXTURE(race) {};
FIXTURE_SETUP(race) {}
FIXTURE_TEARDOWN(race) {}

TEST_F_TIMEOUT(race, concurrent_create_delete_and_reg_of_one_event, 300)
{
	void *(*fn[4])(void *) = { race_dyn, race_dyn, race_reg, race_read };
	struct race_result results[4] = { 0 };
	long long start = rue_now_ms();
	pthread_t t[4];
	int ret;

	race_end = start + rue_bound_ms(RACE_LIMIT_MS);
	for (int i = 0; i < 4; i++)
		ASSERT_EQ(0, pthread_create(&t[i], NULL, fn[i], &results[i]));
	for (int i = 0; i < 4; i++) {
		ASSERT_EQ(0, pthread_join(t[i], NULL));
		EXPECT_EQ(0, results[i].unexpected)
			TH_LOG("thread %d: last unexpected result %d", i, results[i].last_errno);
		TH_LOG("thread %d: %ld calls lost a race (ENOENT or EBUSY)", i, results[i].lost);
	}
	TH_LOG("in %lld ms, deletes found the event gone %ld times and registered %ld times",
	       rue_now_ms() - start, race_enoent, race_ebusy);
	EXPECT_LT(0, race_enoent) TH_LOG("no delete found the event deleted under it: no race");
	EXPECT_LT(0, race_ebusy) TH_LOG("no delete found the event registered: no race with REG");
	/* The REG thread's last event may still be on its way out (auto-delete is asynchronous). */
	ret = dyn_write("-:" RACE_LINE);
	EXPECT_TRUE(ret == 0 || ret == -ENOENT || ret == -EBUSY) TH_LOG("delete: %d", ret);
	EXPECT_TRUE(gone_within(TRACEFS "events/user_events/__rue_race", 5000));
	EXPECT_FALSE(status_has_line("__rue_race"));
}

TEST(concurrent_create_and_delete)
{
	pthread_t t[2];
	void *failures[2];

	for (long i = 0; i < 2; i++)
		ASSERT_EQ(0, pthread_create(&t[i], NULL, create_delete_loop, (void *)i));
	for (int i = 0; i < 2; i++) {
		ASSERT_EQ(0, pthread_join(t[i], &failures[i]));
		EXPECT_EQ(NULL, failures[i]);
	}
	EXPECT_FALSE(exists(TRACEFS "events/user_events/__rue_c0"));
	EXPECT_FALSE(exists(TRACEFS "events/user_events/__rue_c1"));
}

#define TRIG_ROUNDS 20
#define TRIG_A TRACEFS "events/user_events/__rue_trig_a/trigger"

/* Writes @text to the trigger file of __rue_trig_a (appending when @append). */
static int trigger_write(const char *text, int append)
{
	return rue_write_text(TRIG_A, O_WRONLY | (append ? O_APPEND : O_TRUNC), text);
}

/*
 * Removing an enable_event trigger drops the last enable of its target, but
 * the core drops its own reference on the target's call later, from a kthread
 * (found by fuzz_test: freeing the event then was a use-after-free in
 * enable_trigger_private_data_free). A delete in that window must wait: "-:"
 * says EBUSY until the core let go, and an auto-deleted event is destroyed
 * once it did. The VM log check catches any use-after-free.
 */
TEST(deletion_waits_for_the_cores_own_references)
{
	__u32 check = 0;

	ASSERT_EQ(0, dyn_write("u:__rue_trig_a u32 a"));
	for (int round = 0; round < TRIG_ROUNDS; round++) {
		int ret, fd;

		/* A persistent target, deleted through dynamic_events. */
		ASSERT_EQ(0, dyn_write("u:__rue_trig_b u32 b"));
		ASSERT_EQ(0, trigger_write("enable_event:user_events:__rue_trig_b", 0));
		ASSERT_EQ(0, trigger_write("!enable_event:user_events:__rue_trig_b", 1));
		rue_wait_until((ret = dyn_write("-:__rue_trig_b u32 b")) != -EBUSY, 10000, 1000);
		ASSERT_EQ(0, ret) TH_LOG("round %d: delete: %s", round, strerror(-ret));

		/* A registered target, deleted automatically when its fd closes. */
		fd = open(DATA_FILE, O_RDWR);
		ASSERT_LE(0, fd);
		ASSERT_LE(0, rue_reg(fd, "__rue_trig_c u32 c", &check, 0));
		ASSERT_EQ(0, trigger_write("enable_event:user_events:__rue_trig_c", 0));
		ASSERT_EQ(0, trigger_write("!enable_event:user_events:__rue_trig_c", 1));
		ASSERT_EQ(0, rue_unreg(fd, &check, 0));
		close(fd);
		ASSERT_TRUE(gone_within(TRACEFS "events/user_events/__rue_trig_c", 5000))
			TH_LOG("round %d: the auto-deleted event stayed", round);
	}
	EXPECT_EQ(0, dyn_write("-:__rue_trig_a u32 a"));
}

TEST_HARNESS_MAIN
