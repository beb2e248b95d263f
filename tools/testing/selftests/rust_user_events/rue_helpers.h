/* SPDX-License-Identifier: GPL-2.0 */
/*
 * File and user_events helpers shared by the rust_user_events guest tests.
 * Each returns 0 (or a length, or an index) on success and -errno on failure,
 * so tests can assert the errno.
 */
#ifndef RUE_HELPERS_H
#define RUE_HELPERS_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <linux/user_events.h>

#define RUE_TRACEFS "/sys/kernel/tracing/"

/* The page size: 4 KiB, or 16 KiB on Debian's arm64-16k kernel. */
#define RUE_PAGE_SIZE ((size_t)sysconf(_SC_PAGESIZE))

/* Writes @text to @path, opened with @flags. */
static inline int rue_write_text(const char *path, int flags, const char *text)
{
	int fd = open(path, O_WRONLY | flags);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, text, strlen(text));
	n = n == (ssize_t)strlen(text) ? 0 : (n < 0 ? -errno : -EIO);
	close(fd);
	return n;
}

/* Writes @text to @path, truncating it (resets trace, sets enable and filter files). */
static inline int write_file(const char *path, const char *text)
{
	return rue_write_text(path, O_TRUNC, text);
}

/* Appends @line to dynamic_events. */
static inline int dyn_write(const char *line)
{
	return rue_write_text(RUE_TRACEFS "dynamic_events", O_APPEND, line);
}

/* Reads a whole (small) file into @buf, NUL-terminated; returns its length. */
static inline int read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY);
	ssize_t n, total = 0;

	if (fd < 0)
		return -errno;
	while ((n = read(fd, buf + total, len - 1 - total)) > 0)
		total += n;
	buf[total] = '\0';
	close(fd);
	return total;
}

/* The counter @name ("enablers", "scopes", ...) of user_events_stats, or -1. */
static inline long long rue_stat(const char *name)
{
	char buf[4096], key[64], *at;

	if (read_file(RUE_TRACEFS "user_events_stats", buf + 1, sizeof(buf) - 1) <= 0)
		return -1;
	buf[0] = '\n';		/* every line, the first too, begins after a newline */
	snprintf(key, sizeof(key), "\n%s: ", name);
	at = strstr(buf, key);
	return at ? atoll(at + strlen(key)) : -1;
}

/* True if user_events_status has the whole line @line (no newline). */
static inline int status_has_line(const char *line)
{
	char buf[8192], want[256];

	snprintf(want, sizeof(want), "\n%s\n", line);
	if (read_file(RUE_TRACEFS "user_events_status", buf + 1, sizeof(buf) - 1) < 0)
		return 0;
	buf[0] = '\n';
	return strstr(buf, want) != NULL;
}

static inline int exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

/* CLOCK_MONOTONIC in nanoseconds. */
static inline long long rue_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* CLOCK_MONOTONIC in milliseconds. */
static inline long long rue_now_ms(void)
{
	return rue_now_ns() / 1000000;
}

/*
 * Time bounds follow the machine. Every bound in these tests is written for the machine they
 * were written on (the debug test kernel under QEMU TCG on a 2-core host) and is scaled by how
 * much slower this run is: rue_measure_slowness() times RUE_CALIB_WRITES one-byte write()s to
 * /dev/null (work the module under test cannot slow), takes the fastest of RUE_CALIB_ROUNDS
 * rounds (another task's noise only slows a round down) and divides by RUE_CALIB_REF_NS, the
 * same measured there; never below 1, so a faster kernel (Debian's) keeps the bounds as
 * written (0 if /dev/null cannot be opened or written: no measurement).
 *
 * The test VM measures once per run, before the first test and with the module idle
 * (rue_calibrate, run by tools/vm/init), prints it and hands it to every test in RUE_SLOWNESS;
 * rue_slowness() takes that value, and measures itself only when run outside the VM's harness.
 * Above RUE_SLOWNESS_CAP the run's bounds are not trusted: init then reports a skip that no
 * kernel expects (the run fails rather than loosen its bounds) and hands on the cap.
 */
#define RUE_CALIB_WRITES 2000
#define RUE_CALIB_ROUNDS 5
#define RUE_CALIB_REF_NS 2700000LL	/* the test kernel, 2026-11-27: rounds of 2.67-3.9 ms */
/*
 * The cap: twice the slowest the architecture's kernels measure on the project's machine, with
 * room. arm64 guests run under TCG on an x86-64 host, where a system call costs 3 to 4.5 times
 * the test kernel's (Debian's arm64 kernels measured 3.09 to 4.45 on 2026-11-28; x86-64 ones
 * 1.00, the test kernel 1.18 to 1.28).
 */
#if defined(__aarch64__) || defined(__arm__)
#define RUE_SLOWNESS_CAP 12.0
#else
#define RUE_SLOWNESS_CAP 4.0
#endif

static inline double rue_measure_slowness(void)
{
	long long best = -1;
	char byte = 0;
	int fd;

	fd = open("/dev/null", O_WRONLY);
	for (int r = 0; fd >= 0 && r < RUE_CALIB_ROUNDS; r++) {
		long long start = rue_now_ns(), took;

		for (int i = 0; i < RUE_CALIB_WRITES; i++) {
			if (write(fd, &byte, 1) != 1) {
				close(fd);
				return 0;
			}
		}
		took = rue_now_ns() - start;
		if (best < 0 || took < best)
			best = took;
	}
	if (fd < 0)
		return 0;
	close(fd);
	return best > RUE_CALIB_REF_NS ? (double)best / RUE_CALIB_REF_NS : 1.0;
}

static inline double rue_slowness(void)
{
	static double slowness;
	const char *given = getenv("RUE_SLOWNESS");
	char *end;

	if (slowness)
		return slowness;
	if (given) {
		slowness = strtod(given, &end);
		if (end != given && *end == '\0' && slowness >= 1.0)
			return slowness;
	}
	slowness = rue_measure_slowness();
	if (slowness < 1.0)
		slowness = 1.0;		/* /dev/null did not open: the bounds as written */
	return slowness;
}

/* A time bound of @ms milliseconds on the reference machine, for this run (see above). */
static inline long long rue_bound_ms(long long ms)
{
	return (long long)(ms * rue_slowness());
}

/* Auto-deletion is asynchronous, as upstream: waits up to rue_bound_ms(@ms) for @path to go. */
static inline int gone_within(const char *path, int ms)
{
	long long end = rue_now_ms() + rue_bound_ms(ms);

	for (;;) {
		if (!exists(path))
			return 1;
		if (rue_now_ms() > end)
			return !exists(path);
		usleep(1000);
	}
}

/*
 * Registers @name_args with its enable bit at @check/@bit; the write index or -errno.
 * @check may be volatile: the kernel (or another process) changes it under the test.
 */
static inline int rue_reg(int data, const char *name_args, volatile __u32 *check, int bit)
{
	struct user_reg reg = {
		.size = sizeof(reg),
		.enable_bit = bit,
		.enable_size = sizeof(*check),
		.enable_addr = (__u64)(uintptr_t)check,
		.name_args = (__u64)(uintptr_t)name_args,
	};

	if (ioctl(data, DIAG_IOCSREG, &reg) < 0)
		return -errno;
	return reg.write_index;
}

/* rue_reg() for a test that never writes the event: 0 instead of the write index, or -errno. */
static inline int rue_reg_word(int data, const char *name_args, volatile __u32 *check, int bit)
{
	int ret = rue_reg(data, name_args, check, bit);

	return ret < 0 ? ret : 0;
}

/* Unregisters the enable bit at @check/@bit; 0 or -errno. */
static inline int rue_unreg(int data, volatile __u32 *check, int bit)
{
	struct user_unreg unreg = {
		.size = sizeof(unreg),
		.disable_bit = bit,
		.disable_addr = (__u64)(uintptr_t)check,
	};

	return ioctl(data, DIAG_IOCSUNREG, &unreg) < 0 ? -errno : 0;
}

/* Writes [index][payload]; returns the bytes written or -errno. */
static inline ssize_t rue_emit(int data, int index, const void *payload, size_t len)
{
	struct iovec io[2] = {
		{ .iov_base = &index, .iov_len = sizeof(index) },
		{ .iov_base = (void *)payload, .iov_len = len },
	};
	ssize_t n = writev(data, io, 2);

	return n < 0 ? -errno : n;
}

/*
 * "" for upstream's file and system names; with RUE_BENCH_PREFIX set (make
 * bench's shared mode), that prefix, which a module built to load beside the
 * kernel's own user_events puts before its names (src/names.rs).
 */
static inline const char *rue_prefix(void)
{
	const char *prefix = getenv("RUE_BENCH_PREFIX");

	return prefix ? prefix : "";
}

/* Enables ("1") or disables ("0") the user event @event in ftrace; 0, -errno or -EIO. */
static inline int rue_set_enable(const char *event, const char *val)
{
	char path[256];
	int fd, ok;

	snprintf(path, sizeof(path), RUE_TRACEFS "events/%suser_events/%s/enable", rue_prefix(),
		 event);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -errno;
	ok = write(fd, val, 1) == 1;
	close(fd);
	return ok ? 0 : -EIO;
}

/*
 * A bounded wait: evaluates @cond every @step_us microseconds until it holds (1) or more than
 * @ms milliseconds (of this run: see rue_bound_ms()) have passed (0, after one last evaluation
 * at the deadline).
 */
#define rue_wait_until_ms(cond, ms, step_us)					\
	({									\
		long long __rue_end = rue_now_ms() + (ms);			\
		int __rue_ok;							\
									\
		for (;;) {							\
			__rue_ok = !!(cond);					\
			if (__rue_ok || rue_now_ms() > __rue_end)		\
				break;						\
			usleep(step_us);					\
		}								\
		__rue_ok;							\
	})

/* rue_wait_until_ms() for a bound of @ms milliseconds on the reference machine. */
#define rue_wait_until(cond, ms, step_us) rue_wait_until_ms(cond, rue_bound_ms(ms), step_us)

/* Sends @fd over the unix socket @sock (SCM_RIGHTS, one byte); 0 or -errno. */
static inline int rue_send_fd(int sock, int fd, int msg_flags)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = {};
	char byte = 'x';
	struct iovec io = { &byte, 1 };
	struct msghdr msg = { .msg_iov = &io, .msg_iovlen = 1, .msg_control = cbuf,
			      .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);

	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	return sendmsg(sock, &msg, msg_flags) == 1 ? 0 : -errno;
}

/* Receives an fd sent by rue_send_fd() on @sock; the fd or -1. */
static inline int rue_recv_fd(int sock, int msg_flags)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = {};
	char byte;
	struct iovec io = { &byte, 1 };
	struct msghdr msg = { .msg_iov = &io, .msg_iovlen = 1, .msg_control = cbuf,
			      .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c;
	int fd;

	if (recvmsg(sock, &msg, msg_flags) != 1)
		return -1;
	c = CMSG_FIRSTHDR(&msg);
	if (!c || c->cmsg_type != SCM_RIGHTS)
		return -1;
	memcpy(&fd, CMSG_DATA(c), sizeof(int));
	return fd;
}

/*
 * Forks a helper process that dies with the test, joined by two pipes: the parent sends
 * commands on cmd[1] and reads answers on back[0]; the child reads cmd[0] and answers on
 * back[1]. Each side's other ends are closed. Returns fork()'s value, -1 on failure.
 */
static inline pid_t rue_fork_helper(int cmd[2], int back[2])
{
	pid_t pid;

	if (pipe(cmd) || pipe(back))
		return -1;
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(cmd[1]);
		close(back[0]);
	} else if (pid > 0) {
		close(cmd[0]);
		close(back[1]);
	}
	return pid;
}

/*
 * A process with @n enablers of @name_args that forks on command, for the tests of fork copies:
 * registers @n bits of its own memory and sends 'R' on @back; on 'F' from @cmd forks @children
 * children (each inherits every enabler and waits until this process is gone), one after the
 * other, and sends 'K' once @k_after of them are forked (each fork() returns once this process
 * made the child's copy); returns at EOF on @cmd, and its children die with it. 0, or which step
 * failed (2 to 5).
 */
static inline int rue_forking_holder(const char *name_args, int n, int children, int k_after,
				     int cmd, int back)
{
	volatile __u32 *words = mmap(NULL, (n + 31) / 32 * sizeof(__u32), PROT_READ | PROT_WRITE,
				     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int fd = open(RUE_TRACEFS "user_events_data", O_RDWR), hold[2];
	char c = 0;

	if (fd < 0 || words == MAP_FAILED || pipe(hold))
		return 2;
	for (int i = 0; i < n; i++)
		if (rue_reg_word(fd, name_args, &words[i / 32], i % 32))
			return 3;
	if (write(back, "R", 1) != 1 || read(cmd, &c, 1) != 1 || c != 'F')
		return 4;
	for (int i = 0; i < children; i++) {
		pid_t pid = fork();

		if (pid < 0)
			return 5;
		if (pid == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			close(hold[1]);
			while (read(hold[0], &c, 1) > 0)
				;
			_exit(0);
		}
		if (i + 1 == k_after && write(back, "K", 1) != 1)
			return 5;
	}
	while (read(cmd, &c, 1) > 0)
		;		/* EOF: done */
	return 0;
}

/* /proc/@pid/stat's state letter ('D' for a killable wait as for an uninterruptible one), or 0. */
static inline char rue_proc_state(pid_t pid)
{
	char path[64], buf[512], *end;
	int fd, n;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	end = strrchr(buf, ')');
	return end && end[1] == ' ' ? end[2] : 0;
}

#endif /* RUE_HELPERS_H */
