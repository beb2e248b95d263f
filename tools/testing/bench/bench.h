/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the user_events benchmarks (write_bench, scale_bench,
 * enabler_bench): time, failing loudly, and the "case NAME NS RUNS" lines that
 * tools/bench.sh collects. Every result is in nanoseconds. Files and
 * registration are the guest tests' helpers (rue_helpers.h).
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

#include "../selftests/rust_user_events/rue_helpers.h"

#define TRACEFS "/sys/kernel/tracing/"
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

/* The provider's file @name (user_events_data, user_events_status), as a path. */
static inline const char *provider_file(const char *name)
{
	static char path[2][128];
	static int next;
	char *p = path[next++ % 2];

	snprintf(p, sizeof(path[0]), TRACEFS "%s%s", rue_prefix(), name);
	return p;
}

/* Enables ("1") or disables ("0") the user event @name in ftrace. */
static inline void set_enable(const char *name, const char *val)
{
	if (rue_set_enable(name, val))
		die(name);
}

/* The perf id of the user event @name. */
static inline int event_id(const char *name)
{
	char path[256], buf[32];

	snprintf(path, sizeof(path), TRACEFS "events/%suser_events/%s/id", rue_prefix(), name);
	if (read_file(path, buf, sizeof(buf)) <= 0)
		die(path);
	return atoi(buf);
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
