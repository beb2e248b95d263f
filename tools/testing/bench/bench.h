/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the user_events benchmarks (write_bench, scale_bench):
 * time, tracefs files, registration, and the "case NAME NS RUNS" lines that
 * tools/bench.sh collects. Every result is in nanoseconds.
 */
#ifndef RUE_BENCH_H
#define RUE_BENCH_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>
#include <linux/user_events.h>

#define TRACEFS "/sys/kernel/tracing/"
#define EVENTS_DIR TRACEFS "events/user_events/"
#define MAX_RUNS 64

static inline double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static inline void die(const char *what)
{
	fprintf(stderr, "%s: %s\n", what, strerror(errno));
	exit(1);
}

static inline void fail(const char *what)
{
	fprintf(stderr, "%s\n", what);
	exit(1);
}

/* Writes @text to the tracefs file @path; 0 or -errno. */
static inline int write_text(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_TRUNC);
	ssize_t n = fd >= 0 ? write(fd, text, strlen(text)) : -1;
	int err = n == (ssize_t)strlen(text) ? 0 : -errno;

	if (fd >= 0)
		close(fd);
	return err;
}

/* Reads a small file into @buf, NUL-terminated; its length or -1. */
static inline int read_text(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY);
	ssize_t n, total = 0;

	if (fd < 0)
		return -1;
	while ((n = read(fd, buf + total, len - 1 - total)) > 0)
		total += n;
	buf[total] = '\0';
	close(fd);
	return total;
}

/* Enables ("1") or disables ("0") the user event @name in ftrace. */
static inline void set_enable(const char *name, const char *val)
{
	char path[256];

	snprintf(path, sizeof(path), EVENTS_DIR "%s/enable", name);
	if (write_text(path, val))
		die(path);
}

/* The perf id of the user event @name. */
static inline int event_id(const char *name)
{
	char path[256], buf[32];

	snprintf(path, sizeof(path), EVENTS_DIR "%s/id", name);
	if (read_text(path, buf, sizeof(buf)) <= 0)
		die(path);
	return atoi(buf);
}

/* Registers @name_args with its enable bit at @word/@bit; the write index or -errno. */
static inline int reg_event(int fd, const char *name_args, __u32 *word, int bit)
{
	struct user_reg reg = {
		.size = sizeof(reg),
		.enable_bit = bit,
		.enable_size = sizeof(*word),
		.enable_addr = (__u64)(uintptr_t)word,
		.name_args = (__u64)(uintptr_t)name_args,
	};

	if (ioctl(fd, DIAG_IOCSREG, &reg) < 0)
		return -errno;
	return reg.write_index;
}

static inline int unreg_event(int fd, __u32 *word, int bit)
{
	struct user_unreg unreg = {
		.size = sizeof(unreg),
		.disable_bit = bit,
		.disable_addr = (__u64)(uintptr_t)word,
	};

	return ioctl(fd, DIAG_IOCSUNREG, &unreg) < 0 ? -errno : 0;
}

static inline int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/*
 * Prints "case NAME MEDIAN RUN,RUN,..." (ns) for the @runs values in @v
 * (reordered) and flushes, so a crash later loses nothing.
 */
static inline void report(const char *name, double *v, int runs)
{
	double sorted[MAX_RUNS];

	memcpy(sorted, v, runs * sizeof(*v));
	qsort(sorted, runs, sizeof(*sorted), cmp_double);
	printf("case %s %.1f ", name, runs % 2 ? sorted[runs / 2] :
	       (sorted[runs / 2 - 1] + sorted[runs / 2]) / 2);
	for (int i = 0; i < runs; i++)
		printf("%s%.1f", i ? "," : "", v[i]);
	printf("\n");
	fflush(stdout);
}

#endif /* RUE_BENCH_H */
