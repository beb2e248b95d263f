// SPDX-License-Identifier: GPL-2.0
/*
 * write_bench: cost of one user_events write, in ns (CLOCK_MONOTONIC, best of
 * 5 runs of N writes). Measures the syscall floor (an unregistered index,
 * ENOENT), a registered but disabled event (EBADF: what a client pays if it
 * skips the enable-bit check), and an event with a 16-byte payload enabled in
 * ftrace, then sampled by perf into an mmap ring. Prints one line per case.
 * Usage: write_bench [N]
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <linux/user_events.h>

#define TRACEFS "/sys/kernel/tracing/"

static __u32 check;

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int set_enable(const char *val)
{
	int fd = open(TRACEFS "events/user_events/__rue_bench/enable", O_WRONLY);
	int ok = fd >= 0 && write(fd, val, 1) == 1;

	if (fd >= 0)
		close(fd);
	return ok ? 0 : -1;
}

/* Best of 5 runs of n writev() calls of index @idx; expects @want_errno (0: success). */
static double bench(int fd, int idx, int want_errno, long n)
{
	char payload[16] = "0123456789abcde";
	struct iovec io[2] = { { &idx, sizeof(idx) }, { payload, sizeof(payload) } };
	double best = 1e30;

	for (int run = 0; run < 5; run++) {
		double t0 = now_ns();

		for (long i = 0; i < n; i++) {
			ssize_t r = writev(fd, io, 2);

			if ((want_errno && (r != -1 || errno != want_errno)) || (!want_errno && r < 0)) {
				fprintf(stderr, "write_bench: unexpected result %zd errno %d\n", r, errno);
				exit(1);
			}
		}
		double per = (now_ns() - t0) / n;
		if (per < best)
			best = per;
	}
	return best;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 20000;
	struct user_reg reg = {
		.size = sizeof(reg),
		.enable_bit = 31,
		.enable_size = 4,
		.enable_addr = (__u64)(uintptr_t)&check,
		.name_args = (__u64)(uintptr_t)"__rue_bench u32 a; char[12] b",
	};
	int fd = open(TRACEFS "user_events_data", O_RDWR);

	if (fd < 0 || ioctl(fd, DIAG_IOCSREG, &reg)) {
		perror("write_bench: register");
		return 1;
	}
	printf("write_bench: unregistered index (ENOENT): %.0f ns/write\n", bench(fd, 7, ENOENT, n));
	printf("write_bench: registered, disabled (EBADF): %.0f ns/write\n",
	       bench(fd, reg.write_index, EBADF, n));
	if (set_enable("1")) {
		perror("write_bench: enable");
		return 1;
	}
	printf("write_bench: enabled in ftrace, 16-byte payload: %.0f ns/write\n",
	       bench(fd, reg.write_index, 0, n));
	set_enable("0");

	/*
	 * perf on this task, sampling every write into a 64 KiB ring mapped read-only:
	 * overwrite mode, so the ring never fills and every sample is written.
	 */
	struct perf_event_attr pe = {
		.type = PERF_TYPE_TRACEPOINT,
		.size = sizeof(pe),
		.sample_period = 1,
		.sample_type = PERF_SAMPLE_RAW,
	};
	char id[32] = "";
	int id_fd = open(TRACEFS "events/user_events/__rue_bench/id", O_RDONLY);

	if (id_fd < 0 || read(id_fd, id, sizeof(id) - 1) <= 0) {
		perror("write_bench: id");
		return 1;
	}
	close(id_fd);
	pe.config = atoi(id);
	int perf_fd = syscall(__NR_perf_event_open, &pe, 0, -1, -1, 0);

	if (perf_fd < 0 || mmap(NULL, 17 * sysconf(_SC_PAGESIZE), PROT_READ,
				MAP_SHARED, perf_fd, 0) == MAP_FAILED) {
		perror("write_bench: perf");
		return 1;
	}
	printf("write_bench: sampled by perf, 16-byte payload: %.0f ns/write\n",
	       bench(fd, reg.write_index, 0, n));
	close(perf_fd);
	return 0;
}
