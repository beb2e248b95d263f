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
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
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

/* REG of a new event with every allocation failing in turn. */
TEST_F(fault, reg_fails_with_enomem_at_every_allocation_and_leaves_nothing)
{
	__u32 word = 0;
	char name[64];
	int n, injected = 0, ok = 0;

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

TEST_HARNESS_MAIN
