// SPDX-License-Identifier: GPL-2.0
/*
 * Loading and unloading rust_user_events: refusal to load twice, refusal to
 * unload while a file is open, and repeated load/unload cycles (the test VM
 * checks kmemleak afterwards). The module must be loaded when this starts and
 * is loaded again when it ends. RUE_MODULE names the .ko (default below).
 *
 * RUE_TWIN names a copy of the module renamed rust_user_twin00
 * (tools/testing/build-guest.sh): to the kernel it is a second, different
 * provider of user_events, which must be refused (EBUSY) because the tracefs
 * files already exist.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "rue_helpers.h"

#define DATA_FILE "/sys/kernel/tracing/user_events_data"
#define STATUS_FILE "/sys/kernel/tracing/user_events_status"
#define MODULE_NAME "rust_user_events"
#define LOAD_CYCLES 50

static const char *module_path(void)
{
	const char *path = getenv("RUE_MODULE");

	return path ? path : "/rue/rust_user_events.ko";
}

static const char *twin_path(void)
{
	const char *path = getenv("RUE_TWIN");

	return path ? path : "/rue/rust_user_twin00.ko";
}

/* Is a module called @name in /proc/modules? */
static int module_listed(const char *name)
{
	char line[256];
	size_t len = strlen(name);
	FILE *f = fopen("/proc/modules", "r");
	int found = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, name, len) && line[len] == ' ')
			found = 1;
	fclose(f);
	return found;
}

/* finit_module(2) of @path; returns 0 or -errno. */
static int load(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int ret;

	if (fd < 0)
		return -errno;
	ret = syscall(SYS_finit_module, fd, "", 0);
	ret = ret ? -errno : 0;
	close(fd);
	return ret;
}

/* delete_module(2) without waiting; returns 0 or -errno. */
static int unload(void)
{
	return syscall(SYS_delete_module, MODULE_NAME, O_NONBLOCK) ? -errno : 0;
}

TEST(second_load_is_refused_with_eexist)
{
	ASSERT_TRUE(exists(DATA_FILE));
	EXPECT_EQ(-EEXIST, load(module_path()));
	EXPECT_TRUE(exists(DATA_FILE));
}

/* The loader reserves EEXIST for a module of the same name, hence EBUSY. */
TEST(another_provider_is_refused_with_ebusy)
{
	int fd;

	ASSERT_TRUE(exists(DATA_FILE));
	EXPECT_EQ(-EBUSY, load(twin_path()));
	EXPECT_EQ(0, module_listed("rust_user_twin00"));
	EXPECT_EQ(1, module_listed(MODULE_NAME));
	fd = open(DATA_FILE, O_RDWR);
	ASSERT_NE(-1, fd);
	close(fd);
	EXPECT_TRUE(exists(STATUS_FILE));
}

TEST(unload_is_refused_while_data_file_is_open)
{
	int fd = open(DATA_FILE, O_RDWR);

	ASSERT_NE(-1, fd);
	EXPECT_EQ(-EWOULDBLOCK, unload());
	EXPECT_TRUE(exists(DATA_FILE));
	ASSERT_EQ(0, close(fd));
}

TEST(unload_is_refused_while_status_file_is_open)
{
	int fd = open(STATUS_FILE, O_RDONLY);

	ASSERT_NE(-1, fd);
	EXPECT_EQ(-EWOULDBLOCK, unload());
	EXPECT_TRUE(exists(STATUS_FILE));
	ASSERT_EQ(0, close(fd));
}

TEST(unload_removes_files_and_reload_restores_them)
{
	ASSERT_EQ(0, unload());
	EXPECT_FALSE(exists(DATA_FILE));
	EXPECT_FALSE(exists(STATUS_FILE));
	ASSERT_EQ(0, load(module_path()));
	EXPECT_TRUE(exists(DATA_FILE));
	EXPECT_TRUE(exists(STATUS_FILE));
}

/* kprobe and synthetic events through dynamic_events: create, then delete. */
static int other_dyn_types_work(void)
{
	if (dyn_write("p:rue_kp vfs_read") || dyn_write("s:rue_synth u64 v"))
		return 0;
	if (!exists("/sys/kernel/tracing/events/kprobes/rue_kp") ||
	    !exists("/sys/kernel/tracing/events/synthetic/rue_synth"))
		return 0;
	return !dyn_write("-:kprobes/rue_kp") && !dyn_write("-:synthetic/rue_synth");
}

TEST(dynamic_events_stay_usable_across_load_and_unload)
{
	for (int i = 0; i < 3; i++) {
		ASSERT_EQ(0, dyn_write("u:__rue_m1 u32 a")) TH_LOG("cycle %d", i);
		ASSERT_TRUE(other_dyn_types_work());
		/* A user event pins the module. */
		EXPECT_EQ(-EWOULDBLOCK, unload());
		/* Deleting needs the exact field list. */
		ASSERT_EQ(0, dyn_write("-:__rue_m1 u32 a"));
		ASSERT_EQ(0, unload()) TH_LOG("cycle %d", i);
		/* Without the module, u: lines are nobody's, the rest still works. */
		EXPECT_EQ(-EINVAL, dyn_write("u:__rue_m1 u32 a"));
		ASSERT_TRUE(other_dyn_types_work());
		ASSERT_EQ(0, load(module_path()));
	}
}

/* Each cycle waits for RCU and tracepoint grace periods: allow minutes under TCG. */
FIXTURE(cycles) {};
FIXTURE_SETUP(cycles) {}
FIXTURE_TEARDOWN(cycles) {}

TEST_F_TIMEOUT(cycles, load_unload_cycles, 600)
{
	int i;

	for (i = 0; i < LOAD_CYCLES; i++) {
		int fd;

		ASSERT_EQ(0, unload()) TH_LOG("cycle %d", i);
		ASSERT_FALSE(exists(DATA_FILE));
		ASSERT_EQ(0, load(module_path())) TH_LOG("cycle %d", i);
		fd = open(DATA_FILE, O_RDWR);
		ASSERT_NE(-1, fd) TH_LOG("cycle %d", i);
		close(fd);
	}
}

TEST_HARNESS_MAIN
