// SPDX-License-Identifier: GPL-2.0
/*
 * An instrumented program: registers the user event
 *
 *	rue_example u32 count; char[16] msg
 *
 * through /sys/kernel/tracing/user_events_data, then tries to emit it COUNT
 * times. The kernel sets bit 31 of the 4-byte word `enabled` while any tracer
 * (ftrace, perf, ...) has the event enabled; each iteration checks that bit
 * with one relaxed load and calls writev() only when it is set, so an event
 * nobody listens to costs one load and one branch.
 *
 * Usage: rue_example [COUNT [WAIT]]
 *	COUNT	iterations (default 5)
 *	WAIT	seconds to wait, after registering, for a tracer to enable the
 *		event before looping (default 0: do not wait). The event exists
 *		only while a program has it registered (it is deleted when the
 *		last user goes away), so this is how a script gets to enable it:
 *		start the program, then `echo 1 >
 *		/sys/kernel/tracing/events/user_events/rue_example/enable`.
 *
 * Prints how many events it wrote and how many it skipped because nobody
 * listened. Exits 0 on success, 1 on a system-call failure, 2 on bad usage.
 *
 * Build (static, as the test VM has no libc):
 *	gcc -static -O2 -Wall -Wextra -isystem $KDIR/usr/include \
 *		-o rue_example samples/example.c
 *
 * Like the kernel's samples/user_events/example.c, with the enable word and
 * bit that .NET and the kernel selftests use (4 bytes, bit 31).
 */

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <linux/user_events.h>

#define DATA_FILE "/sys/kernel/tracing/user_events_data"
#define EVENT "rue_example"
#define COMMAND EVENT " u32 count; char[16] msg"
#define ENABLE_BIT 31

/*
 * The enable word. The kernel sets and clears ENABLE_BIT in it with atomic
 * bit operations from another context, so it is read with atomic loads only.
 */
static uint32_t enabled;

/* The payload, laid out as the fields of COMMAND: 4 + 16 bytes, no padding. */
struct payload {
	uint32_t count;
	char msg[16];
};

_Static_assert(sizeof(struct payload) == 20, "payload must match the event's fields");

/* The symbolic name of an errno value, e.g. "ENOENT". */
static const char *errno_name(int err)
{
	switch (err) {
	case EPERM: return "EPERM";
	case ENOENT: return "ENOENT";
	case EINTR: return "EINTR";
	case EBADF: return "EBADF";
	case ENOMEM: return "ENOMEM";
	case EACCES: return "EACCES";
	case EFAULT: return "EFAULT";
	case EBUSY: return "EBUSY";
	case EEXIST: return "EEXIST";
	case ENODEV: return "ENODEV";
	case EINVAL: return "EINVAL";
	case EMFILE: return "EMFILE";
	case ENOTTY: return "ENOTTY";
	case ENOSPC: return "ENOSPC";
	case E2BIG: return "E2BIG";
	case EROFS: return "EROFS";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case EADDRINUSE: return "EADDRINUSE";
	default: return "errno";
	}
}

/* Reports a failed call with errno's name, number and text, plus a hint. */
static void fail(const char *what, int err, const char *hint)
{
	fprintf(stderr, "rue_example: %s: %s (%d, %s)\n", what, errno_name(err), err,
		strerror(err));
	if (hint)
		fprintf(stderr, "rue_example: %s\n", hint);
}

/* True while some tracer has the event enabled: one relaxed load. */
static inline int event_enabled(void)
{
	return __atomic_load_n(&enabled, __ATOMIC_RELAXED) & (UINT32_C(1) << ENABLE_BIT);
}

/* Parses a non-negative decimal argument; exits with usage on anything else. */
static unsigned long parse_arg(const char *arg, const char *what, unsigned long max)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(arg, &end, 10);
	if (errno || end == arg || *end || arg[0] == '-' || v > max) {
		fprintf(stderr, "rue_example: bad %s '%s' (0..%lu)\n"
			"usage: rue_example [COUNT [WAIT_SECONDS]]\n", what, arg, max);
		exit(2);
	}
	return v;
}

/* Waits up to `seconds` for a tracer to enable the event; returns whether one did. */
static int wait_for_tracer(unsigned long seconds)
{
	const struct timespec tick = { .tv_sec = 0, .tv_nsec = 10 * 1000 * 1000 };
	unsigned long ticks;

	for (ticks = 0; ticks < seconds * 100; ticks++) {
		if (event_enabled())
			return 1;
		nanosleep(&tick, NULL);
	}
	return event_enabled();
}

int main(int argc, char **argv)
{
	unsigned long count = 5, wait = 0, i, written = 0, skipped = 0;
	struct payload payload = { .count = 0, .msg = "hello" };
	struct user_unreg unreg = { 0 };
	struct user_reg reg = { 0 };
	struct iovec iov[2];
	int fd, write_index, status = 0;

	if (argc > 3) {
		fprintf(stderr, "usage: rue_example [COUNT [WAIT_SECONDS]]\n");
		return 2;
	}
	if (argc > 1)
		count = parse_arg(argv[1], "COUNT", 1000000000UL);
	if (argc > 2)
		wait = parse_arg(argv[2], "WAIT_SECONDS", 3600);

	fd = open(DATA_FILE, O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		int err = errno;

		fail("open " DATA_FILE, err,
		     err == ENOENT ? "user_events is not available: load rust_user_events.ko "
				     "(or boot a kernel with CONFIG_USER_EVENTS=y) and mount tracefs "
				     "on /sys/kernel/tracing" :
		     err == EACCES ? "writing user_events_data needs root or the file's group" :
		     NULL);
		return 1;
	}

	/* Register: the kernel keeps bit 31 of `enabled` in step with the event's state. */
	reg.size = sizeof(reg);
	reg.enable_bit = ENABLE_BIT;
	reg.enable_size = sizeof(enabled);
	reg.enable_addr = (uintptr_t)&enabled;
	reg.name_args = (uintptr_t)COMMAND;
	if (ioctl(fd, DIAG_IOCSREG, &reg) == -1) {
		int err = errno;

		fail("ioctl DIAG_IOCSREG \"" COMMAND "\"", err,
		     err == EADDRINUSE ? "an event named " EVENT " with other fields exists" :
		     err == ENOTTY ? "user_events_data does not implement registration" :
		     NULL);
		close(fd);
		return 1;
	}
	write_index = (int)reg.write_index;
	printf("rue_example: registered \"%s\" (write index %d, enable bit %d)\n",
	       COMMAND, write_index, ENABLE_BIT);

	if (wait) {
		printf("rue_example: waiting up to %lu s for a tracer to enable user_events/%s\n",
		       wait, EVENT);
		fflush(stdout);
		if (!wait_for_tracer(wait))
			printf("rue_example: nobody enabled the event within %lu s\n", wait);
	}

	/* Every write starts with the 4-byte write index; the payload follows. */
	iov[0].iov_base = &write_index;
	iov[0].iov_len = sizeof(write_index);
	iov[1].iov_base = &payload;
	iov[1].iov_len = sizeof(payload);

	for (i = 0; i < count; i++) {
		ssize_t n;

		if (!event_enabled()) {
			skipped++;
			continue;
		}
		payload.count = (uint32_t)i;
		n = writev(fd, iov, 2);
		if (n < 0) {
			fail("writev", errno, NULL);
			status = 1;
			break;
		}
		if ((size_t)n != sizeof(write_index) + sizeof(payload)) {
			fprintf(stderr, "rue_example: writev wrote %zd of %zu bytes\n", n,
				sizeof(write_index) + sizeof(payload));
			status = 1;
			break;
		}
		written++;
	}
	printf("rue_example: wrote %lu events, skipped %lu while nobody listened\n", written,
	       skipped);

	/* Stop the kernel from updating `enabled`, then drop the event's file reference. */
	unreg.size = sizeof(unreg);
	unreg.disable_bit = ENABLE_BIT;
	unreg.disable_addr = (uintptr_t)&enabled;
	if (ioctl(fd, DIAG_IOCSUNREG, &unreg) == -1) {
		fail("ioctl DIAG_IOCSUNREG", errno, NULL);
		status = 1;
	}
	if (close(fd) == -1) {
		fail("close", errno, NULL);
		status = 1;
	}
	return status;
}
