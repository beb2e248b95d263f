// SPDX-License-Identifier: GPL-2.0
/*
 * The program perf_tool_test.sh runs under `perf record`: registers
 * rue_perf_tool and, only if a tracer already enabled it, writes N events
 * with count = i, value = i * 1000 + 7 and tag = "rue". Exits 2 if the
 * event is not enabled, so the test also checks that attaching perf set the
 * enable bit before the program started.
 * Usage: perf_tool_writer N
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <linux/user_events.h>

#define FORMAT "rue_perf_tool u32 count; u64 value; char[8] tag"

struct record {
	__s32 index;
	__u32 count;
	__u64 value;
	char tag[8];
} __attribute__((packed));

int main(int argc, char **argv)
{
	__u32 enabled = 0;
	struct user_reg reg = {
		.size = sizeof(reg),
		.enable_bit = 0,
		.enable_size = sizeof(enabled),
		.enable_addr = (__u64)(uintptr_t)&enabled,
		.name_args = (__u64)(uintptr_t)FORMAT,
	};
	struct record rec = { .tag = "rue" };
	int n = argc > 1 ? atoi(argv[1]) : 1;
	int fd = open("/sys/kernel/tracing/user_events_data", O_RDWR);

	if (fd < 0 || ioctl(fd, DIAG_IOCSREG, &reg) < 0) {
		perror("perf_tool_writer: register");
		return 1;
	}
	if (!enabled) {
		fprintf(stderr, "perf_tool_writer: event not enabled\n");
		return 2;
	}
	rec.index = reg.write_index;
	for (int i = 0; i < n; i++) {
		rec.count = i;
		rec.value = (__u64)i * 1000 + 7;
		if (write(fd, &rec, sizeof(rec)) != sizeof(rec)) {
			perror("perf_tool_writer: write");
			return 1;
		}
	}
	close(fd);
	return 0;
}
