// SPDX-License-Identifier: GPL-2.0
/*
 * The tracefs files of rust_user_events: presence, modes, and the errnos of
 * the file operations that exist before any event is registered, as upstream's
 * (kernel/trace/trace_events_user.c: user_events_data has no read, mmap or
 * llseek).
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include <linux/user_events.h>

#include "kselftest_harness.h"

#define DATA_FILE "/sys/kernel/tracing/user_events_data"
#define STATUS_FILE "/sys/kernel/tracing/user_events_status"

static void expect_mode(struct __test_metadata *_metadata, const char *path, mode_t want)
{
	struct stat st;

	ASSERT_EQ(0, stat(path, &st));
	ASSERT_TRUE(S_ISREG(st.st_mode));
	ASSERT_EQ(want, st.st_mode & 07777);
}

TEST(data_file_is_regular_with_mode_0640)
{
	expect_mode(_metadata, DATA_FILE, 0640);
}

TEST(status_file_is_regular_with_mode_0440)
{
	expect_mode(_metadata, STATUS_FILE, 0440);
}

TEST(status_of_empty_group_is_upstream_text)
{
	char buf[256] = {};
	int fd = open(STATUS_FILE, O_RDONLY);
	ssize_t n;

	ASSERT_NE(-1, fd);
	n = read(fd, buf, sizeof(buf) - 1);
	ASSERT_EQ(strlen("\nActive: 0\nBusy: 0\n"), n);
	ASSERT_STREQ("\nActive: 0\nBusy: 0\n", buf);
	ASSERT_EQ(0, close(fd));
}

TEST(open_and_close_data_file)
{
	int fd = open(DATA_FILE, O_RDWR);

	ASSERT_NE(-1, fd);
	ASSERT_EQ(0, close(fd));
	fd = open(DATA_FILE, O_RDONLY);
	ASSERT_NE(-1, fd);
	ASSERT_EQ(0, close(fd));
}

TEST(unknown_ioctl_gives_enotty)
{
	const unsigned long cmds[] = { 0, _IO('*', 9), _IOWR('*', 3, char *), 0xc0042a00 };
	int fd = open(DATA_FILE, O_RDONLY);
	unsigned int i;

	ASSERT_NE(-1, fd);
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		errno = 0;
		EXPECT_EQ(-1, ioctl(fd, cmds[i], NULL));
		EXPECT_EQ(ENOTTY, errno);
	}
	close(fd);
}

TEST(read_gives_einval_and_lseek_espipe)
{
	char c;
	int fd = open(DATA_FILE, O_RDWR);

	ASSERT_NE(-1, fd);
	EXPECT_EQ(-1, read(fd, &c, 1));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, lseek(fd, 0, SEEK_SET));
	EXPECT_EQ(ESPIPE, errno);
	close(fd);
}

TEST(write_errnos_before_any_registration)
{
	int idx = 0, neg = -1;
	short half = 0;
	int fd = open(DATA_FILE, O_RDWR);

	ASSERT_NE(-1, fd);
	EXPECT_EQ(-1, write(fd, &half, sizeof(half)));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(-1, write(fd, &neg, sizeof(neg)));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, write(fd, &idx, sizeof(idx)));
	EXPECT_EQ(ENOENT, errno);
	close(fd);
}

TEST(pwrite_at_nonzero_offset_gives_efault)
{
	int idx = 0;
	int fd = open(DATA_FILE, O_RDWR);

	ASSERT_NE(-1, fd);
	EXPECT_EQ(-1, pwrite(fd, &idx, sizeof(idx), 1));
	EXPECT_EQ(EFAULT, errno);
	close(fd);
}

TEST(writev_is_one_write)
{
	int neg = -1;
	struct iovec io[2] = {
		{ .iov_base = &neg, .iov_len = 2 },
		{ .iov_base = (char *)&neg + 2, .iov_len = 2 },
	};
	int fd = open(DATA_FILE, O_RDWR);

	ASSERT_NE(-1, fd);
	EXPECT_EQ(-1, writev(fd, io, 2));
	EXPECT_EQ(EINVAL, errno);
	close(fd);
}

TEST_HARNESS_MAIN
