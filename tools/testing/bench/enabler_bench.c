// SPDX-License-Identifier: GPL-2.0
/*
 * enabler_bench: what REG, UNREG, fork, exit and an enable toggle cost while
 * one process holds N enablers of one event (CLOCK_MONOTONIC, microseconds).
 *
 * For each N given (default 10 1000 100000), process A registers the event N
 * times (distinct word/bit pairs); then, with A holding them:
 *   reg_own     A's own registrations, mean over the N
 *   reg_other   another process's REG of its own word (mean of 200)
 *   unreg_other that process's UNREG (mean of 200)
 *   toggle      ftrace enable then disable of the event (rewrites N bits twice)
 *   fork        A forks a child whose first UNREG of an inherited word waits
 *               for its copy of the N enablers; fork to the child's reaping
 *   child_exit  then until the child's copies are gone ("enablers:" in
 *               user_events_stats is back to A's N)
 *   exit        A exits; until its N enablers are gone
 * Prints one line per N. Needs the module's user_events_stats "enablers:"
 * line. Usage: enabler_bench [N...]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/user_events.h>

#include "bench.h"

#define NAME "__rue_enabler_bench"
#define NAME_ARGS NAME " u32 x"
#define OTHER_ROUNDS 200

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* The "enablers:" count of user_events_stats; -1 if unreadable. */
static long enablers_now(void)
{
	char buf[512], *p;
	int fd = open(TRACEFS "user_events_stats", O_RDONLY);
	ssize_t len = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;

	if (fd >= 0)
		close(fd);
	if (len <= 0)
		return -1;
	buf[len] = 0;
	p = strstr(buf, "enablers: ");
	return p ? atol(p + 10) : -1;
}

/*
 * Waits (busy) until user_events_stats counts @n enablers; microseconds taken,
 * or -1 without the count (an older module: then "exit" includes the child's).
 */
static double until_enablers(long n)
{
	double t0 = now_us();

	if (n < 0)
		return -1;
	while (enablers_now() != n)
		;
	return now_us() - t0;
}

/*
 * Process A: registers n enablers and reports the mean; on 'f' forks a child
 * whose first UNREG waits for its copy, reports fork-to-UNREG; on 'x' exits.
 */
static void holder(long n, int out, int cmd)
{
	long words = (n + 31) / 32;
	__u32 *w = mmap(NULL, words * 4 + 4096, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	int fd = open(TRACEFS "user_events_data", O_RDWR);
	double t0, res;
	pid_t child;
	char c;

	if (w == MAP_FAILED || fd < 0)
		die("holder: setup");
	t0 = now_us();
	for (long i = 0; i < n; i++)
		if (rue_reg_word(fd, NAME_ARGS, &w[i / 32], i % 32))
			die("holder: REG");
	res = (now_us() - t0) / n;
	if (write(out, &res, sizeof(res)) != sizeof(res) || read(cmd, &c, 1) != 1)
		die("holder: report");
	t0 = now_us();
	child = fork();
	if (child == 0)
		_exit(rue_unreg(fd, &w[0], 0) ? 1 : 0);
	if (child < 0 || waitpid(child, NULL, 0) != child)
		die("holder: fork");
	res = now_us() - t0;
	if (write(out, &res, sizeof(res)) != sizeof(res) || read(cmd, &c, 1) != 1)
		die("holder: report");
	_exit(0);
}

static void run(long n)
{
	int to_main[2], to_holder[2];
	double reg_own, fork_us, t0, reg_other = 0, unreg_other = 0, toggle, child_exit, exit_us;
	__u32 word = 0;
	long base = enablers_now();
	int fd, status;
	pid_t a;

	if (pipe(to_main) || pipe(to_holder))
		die("setup");
	a = fork();
	if (a == 0)
		holder(n, to_main[1], to_holder[0]);
	if (read(to_main[0], &reg_own, sizeof(reg_own)) != sizeof(reg_own))
		die("read holder");
	fd = open(TRACEFS "user_events_data", O_RDWR);
	if (fd < 0)
		die("open");
	for (int i = 0; i < OTHER_ROUNDS; i++) {
		t0 = now_us();
		if (rue_reg_word(fd, NAME_ARGS, &word, 0))
			die("REG other");
		reg_other += now_us() - t0;
		t0 = now_us();
		if (rue_unreg(fd, &word, 0))
			die("UNREG other");
		unreg_other += now_us() - t0;
	}
	close(fd);
	t0 = now_us();
	set_enable(NAME, "1");
	set_enable(NAME, "0");
	toggle = now_us() - t0;
	/* Fork, then the child's exit: until its copies are gone. */
	if (write(to_holder[1], "f", 1) != 1 ||
	    read(to_main[0], &fork_us, sizeof(fork_us)) != sizeof(fork_us))
		die("fork step");
	child_exit = until_enablers(base < 0 ? -1 : base + n);
	/* A's exit: until its enablers are gone. */
	t0 = now_us();
	if (write(to_holder[1], "x", 1) != 1 || waitpid(a, &status, 0) != a)
		die("exit holder");
	until_enablers(base);
	fd = open(TRACEFS "user_events_data", O_RDWR);
	while (ioctl(fd, DIAG_IOCSDEL, NAME) && errno == EBUSY)
		;
	exit_us = now_us() - t0;
	close(fd);
	printf("enabler_bench: enablers=%ld reg_own=%.0f reg_other=%.0f unreg_other=%.0f toggle=%.0f fork=%.0f child_exit=%.0f exit=%.0f us\n",
	       n, reg_own, reg_other / OTHER_ROUNDS, unreg_other / OTHER_ROUNDS, toggle, fork_us,
	       child_exit, exit_us);
	fflush(stdout);
	close(to_main[0]);
	close(to_main[1]);
	close(to_holder[0]);
	close(to_holder[1]);
}

int main(int argc, char **argv)
{
	long def[] = { 10, 1000, 100000 };

	if (argc > 1)
		for (int i = 1; i < argc; i++)
			run(atol(argv[i]));
	else
		for (int i = 0; i < 3; i++)
			run(def[i]);
	return 0;
}
