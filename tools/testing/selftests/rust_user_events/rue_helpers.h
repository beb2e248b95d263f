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
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include <linux/user_events.h>

#define RUE_TRACEFS "/sys/kernel/tracing/"

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

/* Auto-deletion is asynchronous, as upstream: waits up to @ms for @path to go. */
static inline int gone_within(const char *path, int ms)
{
	for (int i = 0; i < ms; i++) {
		if (!exists(path))
			return 1;
		usleep(1000);
	}
	return 0;
}

/* Registers @name_args with its enable bit at @check/@bit; the write index or -errno. */
static inline int rue_reg(int data, const char *name_args, __u32 *check, int bit)
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

/* Unregisters the enable bit at @check/@bit; 0 or -errno. */
static inline int rue_unreg(int data, __u32 *check, int bit)
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

#endif /* RUE_HELPERS_H */
