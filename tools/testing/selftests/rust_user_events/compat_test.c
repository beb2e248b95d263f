// SPDX-License-Identifier: GPL-2.0
/*
 * 32-bit programs on the 64-bit kernel: the module's compat_ioctl (upstream
 * has none, so a 32-bit program's DIAG_IOCSREG gets ENOTTY there), and
 * write()/writev() through the kernel's compat syscalls.
 *
 * tools/testing/build-guest.sh builds this file twice: compat_test, an i386
 * program (gcc -m32; for arm64's kernels a 32-bit Arm one), and compat_test_64,
 * the same checks as a native 64-bit program. Both must pass: a 32-bit program gets the same results as a 64-bit
 * one (REG with every flag, 4- and 8-byte enable words, enable bits following
 * ftrace, trace records of write and writev, UNREG, DEL, and the errno matrix),
 * and the other word size's ioctl numbers are ENOTTY for each, as upstream
 * answers a 64-bit program that sends the 32-bit numbers. Events are named
 * __rue_c*, so nothing clashes with other tests.
 */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/user_events.h>

#include "kselftest_harness.h"
#include "rue_helpers.h"

#define DATA_FILE RUE_TRACEFS "user_events_data"
#define EVENTS RUE_TRACEFS "events/user_events/"

/* The ioctl numbers a program of the other word size computes. */
#define OTHER_PTR_SIZE (sizeof(void *) == 4 ? 8 : 4)
#define OTHER_IOCSREG _IOC(_IOC_READ | _IOC_WRITE, DIAG_IOC_MAGIC, 0, OTHER_PTR_SIZE)
#define OTHER_IOCSDEL _IOC(_IOC_WRITE, DIAG_IOC_MAGIC, 1, OTHER_PTR_SIZE)
#define OTHER_IOCSUNREG _IOC(_IOC_WRITE, DIAG_IOC_MAGIC, 2, OTHER_PTR_SIZE)

/* An address no user program can have: access_ok() refuses it (a __u64 in both builds). */
#define KERNEL_ADDR 0xfffffffffffff000ULL

/* An unmapped address (hidden from the compiler, which would warn about its use). */
static void *volatile bad = (void *)8;

/* Any address as the __u64 the UAPI carries. */
static __u64 u64_of(const void *p)
{
	return (__u64)(uintptr_t)p;
}

/* DIAG_IOCSREG with every field given; 0 or -errno, the write index in *@index. */
static int reg(int fd, __u64 name_args, __u64 addr, int size, int bit, int flags, __u32 *index)
{
	struct user_reg r = {
		.size = sizeof(r),
		.enable_bit = bit,
		.enable_size = size,
		.flags = flags,
		.enable_addr = addr,
		.name_args = name_args,
	};

	if (ioctl(fd, DIAG_IOCSREG, &r))
		return -errno;
	if (index)
		*index = r.write_index;
	return 0;
}

static int reg_event(int fd, const char *name_args, void *addr, int size, int bit, __u32 *index)
{
	return reg(fd, u64_of(name_args), u64_of(addr), size, bit, 0, index);
}

static int unreg(int fd, void *addr, int bit)
{
	struct user_unreg u = {
		.size = sizeof(u),
		.disable_bit = bit,
		.disable_addr = u64_of(addr),
	};

	return ioctl(fd, DIAG_IOCSUNREG, &u) ? -errno : 0;
}

static int del_event(int fd, const char *name)
{
	return ioctl(fd, DIAG_IOCSDEL, name) ? -errno : 0;
}

static int enable(const char *event, int on)
{
	char path[256];

	snprintf(path, sizeof(path), EVENTS "%s/enable", event);
	return write_file(path, on ? "1" : "0");
}

FIXTURE(c) {
	int fd;
	/* w32[1] is a 4-byte word in the upper half of a long. */
	__u32 w32[2] __attribute__((aligned(8)));
	__u64 w64 __attribute__((aligned(8)));
};

FIXTURE_SETUP(c)
{
	self->fd = open(DATA_FILE, O_RDWR);
	ASSERT_NE(-1, self->fd);
	self->w32[0] = 0;
	self->w32[1] = 0;
	self->w64 = 0;
}

FIXTURE_TEARDOWN(c)
{
	close(self->fd);
}

TEST(word_size_and_ioctl_numbers)
{
#if defined(__i386__) || defined(__arm__)
	ASSERT_EQ(4, sizeof(void *));
	ASSERT_EQ(0xC0042A00, DIAG_IOCSREG);
	ASSERT_EQ(0x40042A01, DIAG_IOCSDEL);
	ASSERT_EQ(0x40042A02, DIAG_IOCSUNREG);
#elif defined(__x86_64__) || defined(__aarch64__)
	ASSERT_EQ(8, sizeof(void *));
	ASSERT_EQ(0xC0082A00, DIAG_IOCSREG);
	ASSERT_EQ(0x40082A01, DIAG_IOCSDEL);
	ASSERT_EQ(0x40082A02, DIAG_IOCSUNREG);
#else
#error "compat_test is built for i386, x86_64, 32-bit Arm and arm64"
#endif
	TH_LOG("a %zu-bit program", sizeof(void *) * 8);
}

/*
 * The other word size's numbers, with arguments that would succeed under the
 * right ones: ENOTTY, and nothing registered. For the 64-bit build this is
 * upstream's answer, unchanged by the module's compat_ioctl.
 */
TEST_F(c, other_word_size_numbers_give_enotty)
{
	const char *name = "__rue_cn u32 a";
	struct user_reg r = {
		.size = sizeof(r),
		.enable_size = 4,
		.enable_addr = u64_of(&self->w32[0]),
		.name_args = u64_of(name),
	};
	struct user_unreg u = {
		.size = sizeof(u),
		.disable_addr = u64_of(&self->w32[0]),
	};

	ASSERT_NE(OTHER_IOCSREG, DIAG_IOCSREG);
	EXPECT_EQ(-1, ioctl(self->fd, OTHER_IOCSREG, &r));
	EXPECT_EQ(ENOTTY, errno);
	EXPECT_FALSE(exists(EVENTS "__rue_cn"));
	ASSERT_EQ(0, reg_event(self->fd, name, &self->w32[0], 4, 0, NULL));
	EXPECT_EQ(-1, ioctl(self->fd, OTHER_IOCSUNREG, &u));
	EXPECT_EQ(ENOTTY, errno);
	/* Still registered: the right UNREG finds it. */
	EXPECT_EQ(0, unreg(self->fd, &self->w32[0], 0));
	EXPECT_EQ(-1, ioctl(self->fd, OTHER_IOCSDEL, "__rue_cn"));
	EXPECT_EQ(ENOTTY, errno);
	/* Not deleted: this file still holds it. */
	EXPECT_EQ(-EBUSY, del_event(self->fd, "__rue_cn"));
}

TEST_F(c, reg_with_each_flag)
{
	int fd = open(DATA_FILE, O_RDWR);
	char multi[256];
	__u32 idx = 99;
	glob_t g;

	ASSERT_NE(-1, fd);
	ASSERT_EQ(0, reg(fd, u64_of("__rue_cf0 u32 a"), u64_of(&self->w32[0]), 4, 0, 0, &idx));
	EXPECT_EQ(0, idx);
	ASSERT_EQ(0, reg(fd, u64_of("__rue_cf1 u32 a"), u64_of(&self->w32[0]), 4, 1,
			 USER_EVENT_REG_PERSIST, &idx));
	EXPECT_EQ(1, idx);
	ASSERT_EQ(0, reg(fd, u64_of("__rue_cf2 u32 a"), u64_of(&self->w32[0]), 4, 2,
			 USER_EVENT_REG_MULTI_FORMAT, &idx));
	EXPECT_EQ(2, idx);
	/* The same name again: its index again. */
	ASSERT_EQ(0, reg(fd, u64_of("__rue_cf0 u32 a"), u64_of(&self->w32[0]), 4, 3, 0, &idx));
	EXPECT_EQ(0, idx);
	EXPECT_TRUE(status_has_line("__rue_cf0"));
	EXPECT_TRUE(exists(EVENTS "__rue_cf0/enable"));
	EXPECT_TRUE(exists(EVENTS "__rue_cf1/enable"));
	ASSERT_EQ(0, glob(RUE_TRACEFS "events/user_events_multi/__rue_cf2.*", 0, NULL, &g));
	ASSERT_EQ(1, g.gl_pathc);
	snprintf(multi, sizeof(multi), "%s", g.gl_pathv[0]);
	globfree(&g);
	for (int bit = 0; bit < 4; bit++)
		EXPECT_EQ(0, unreg(fd, &self->w32[0], bit));
	close(fd);
	/* Without PERSIST, the last close deletes the event. */
	EXPECT_TRUE(gone_within(EVENTS "__rue_cf0", 5000));
	EXPECT_TRUE(gone_within(multi, 5000));
	EXPECT_TRUE(exists(EVENTS "__rue_cf1/enable"));
	EXPECT_EQ(0, del_event(self->fd, "__rue_cf1"));
	EXPECT_FALSE(exists(EVENTS "__rue_cf1"));
}

/* Each enable size and its edge bits: set and cleared with the event, neighbours kept. */
TEST_F(c, enable_bits_follow_ftrace)
{
	static const struct {
		const char *event;
		int size, bit, word;	/* word: 0, 1 (w32[]) or 2 (w64) */
	} cases[] = {
		{ "__rue_cb0", 4, 0, 0 },
		{ "__rue_cb1", 4, 31, 0 },
		{ "__rue_cb2", 4, 5, 1 },	/* the upper half of the long below */
		{ "__rue_cb3", 4, 31, 1 },
		{ "__rue_cb4", 8, 0, 2 },
		{ "__rue_cb5", 8, 31, 2 },
		{ "__rue_cb6", 8, 32, 2 },
		{ "__rue_cb7", 8, 63, 2 },
	};
	char name[64];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int word = cases[i].word, bit = cases[i].bit;
		void *addr = word == 2 ? (void *)&self->w64 : (void *)&self->w32[word];
		__u64 set = 1ULL << bit;
		/* Every other bit of the word is set; only this one may change. */
		__u64 others = word == 2 ? ~set : 0xffffffffULL & ~set;
		/* The neighbouring 4-byte word (in the same long) stays as it is. */
		__u32 other32 = 0xa5a5a5a5;

		self->w64 = word == 2 ? others : 0;
		if (word != 2) {
			self->w32[word] = (__u32)others;
			self->w32[!word] = other32;
		}
		snprintf(name, sizeof(name), "%s u32 a", cases[i].event);
		ASSERT_EQ(0, reg_event(self->fd, name, addr, cases[i].size, bit, NULL))
			TH_LOG("%s", name);
		EXPECT_EQ(others, word == 2 ? self->w64 : self->w32[word]) TH_LOG("%s", name);
		ASSERT_EQ(0, enable(cases[i].event, 1));
		EXPECT_EQ(others | set, word == 2 ? self->w64 : self->w32[word]) TH_LOG("%s", name);
		if (word != 2)
			EXPECT_EQ(other32, self->w32[!word]) TH_LOG("%s", name);
		ASSERT_EQ(0, enable(cases[i].event, 0));
		EXPECT_EQ(others, word == 2 ? self->w64 : self->w32[word]) TH_LOG("%s", name);
		if (word != 2)
			EXPECT_EQ(other32, self->w32[!word]) TH_LOG("%s", name);
		EXPECT_EQ(0, unreg(self->fd, addr, bit));
	}
}

/* A forked child's copy of the word follows the event too (fork through the compat syscalls). */
TEST_F(c, forked_child_word_follows_the_event)
{
	int go[2], ack[2], status;
	char reply = 0;
	pid_t pid;

	ASSERT_EQ(0, reg_event(self->fd, "__rue_ck u32 a", &self->w32[1], 4, 7, NULL));
	ASSERT_EQ(0, pipe(go));
	ASSERT_EQ(0, pipe(ack));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		char c;

		/* After each step, up to 10 s (scaled) for the child's word to show it. */
		if (read(go[0], &c, 1) != 1)
			_exit(2);
		rue_wait_until(self->w32[1] == 1 << 7, 10000, 1000);
		c = self->w32[1] == 1 << 7 ? 'y' : 'n';
		if (write(ack[1], &c, 1) != 1 || read(go[0], &c, 1) != 1)
			_exit(2);
		rue_wait_until(self->w32[1] == 0, 10000, 1000);
		_exit(self->w32[1] == 0 ? 0 : 3);
	}
	/*
	 * fork() left the parent's page of the word copy-on-write shared, and a
	 * status change reaches such a page through the scope's asynchronous
	 * fault-in (design.md, "Bit writes"), as upstream's does. So
	 * that the parent's word is set before enable() returns, as checked below,
	 * the parent writes its page first and owns it again.
	 */
	__atomic_store_n(&self->w32[0], __atomic_load_n(&self->w32[0], __ATOMIC_RELAXED),
			 __ATOMIC_RELAXED);
	EXPECT_EQ(0, enable("__rue_ck", 1));
	EXPECT_EQ(1 << 7, self->w32[1]);
	EXPECT_EQ(1, write(go[1], "e", 1));
	EXPECT_EQ(1, read(ack[0], &reply, 1));
	EXPECT_EQ('y', reply) TH_LOG("the child's word did not get the bit");
	EXPECT_EQ(0, enable("__rue_ck", 0));
	EXPECT_EQ(0, self->w32[1]);
	EXPECT_EQ(1, write(go[1], "d", 1));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status)) TH_LOG("the child's word kept the bit");
	EXPECT_EQ(0, unreg(self->fd, &self->w32[1], 7));
}

/* The record write() and writev() make, as ftrace shows it. */
struct rec {
	__s32 idx;
	__u32 a;
	__u64 b;
	char c[8];
	__u32 s_loc;	/* __rel_loc: size << 16 | offset from the end of this word */
	char s[6];
} __attribute__((packed));

TEST_F(c, write_and_writev_record_the_payload)
{
	struct rec r = {
		.a = 42,
		.b = 0x123456789ULL,
		.c = "compat1",
		.s_loc = 6 << 16,
		.s = "hello",
	};
	__u32 a2 = 0xc001;
	__u64 b2 = 0xfedcba9876ULL;
	struct iovec io[6] = {
		{ &r.idx, sizeof(r.idx) },
		{ &a2, sizeof(a2) },
		{ &b2, sizeof(b2) },
		{ "compat2", 8 },
		{ &r.s_loc, sizeof(r.s_loc) },
		{ "world", 6 },
	};
	static char buf[1 << 16];
	__u32 idx = 99;

	ASSERT_EQ(0, reg_event(self->fd, "__rue_cw u32 a; u64 b; char[8] c; __rel_loc char[] s",
			       &self->w32[0], 4, 0, &idx));
	r.idx = idx;
	ASSERT_EQ(0, write_file(RUE_TRACEFS "trace", ""));
	ASSERT_EQ(0, enable("__rue_cw", 1));
	EXPECT_EQ(sizeof(r), write(self->fd, &r, sizeof(r)));
	EXPECT_EQ(sizeof(r), writev(self->fd, io, 6));
	/* A bad iovec array, a bad buffer, an unknown index. */
	EXPECT_EQ(-1, writev(self->fd, (struct iovec *)bad, 2));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(-1, write(self->fd, bad, sizeof(r)));
	EXPECT_EQ(EFAULT, errno);
	r.idx = idx + 1;
	EXPECT_EQ(-1, write(self->fd, &r, sizeof(r)));
	EXPECT_EQ(ENOENT, errno);
	ASSERT_EQ(0, enable("__rue_cw", 0));
	ASSERT_LT(0, read_file(RUE_TRACEFS "trace", buf, sizeof(buf)));
	EXPECT_TRUE(strstr(buf, "__rue_cw: a=0x2a (42) b=0x123456789 (4886718345) c=compat1 s=hello\n") != NULL)
		TH_LOG("trace:\n%s", buf);
	EXPECT_TRUE(strstr(buf,
			   "__rue_cw: a=0xc001 (49153) b=0xfedcba9876 (1094624909430) c=compat2 s=world\n") != NULL)
		TH_LOG("trace:\n%s", buf);
	EXPECT_EQ(0, unreg(self->fd, &self->w32[0], 0));
}

TEST_F(c, unreg_and_del)
{
	struct user_unreg u = { .size = 15 };
	int fd = open(DATA_FILE, O_RDWR);

	ASSERT_NE(-1, fd);
	ASSERT_EQ(0, reg(fd, u64_of("__rue_cd u32 a"), u64_of(&self->w32[1]), 4, 9,
			 USER_EVENT_REG_PERSIST, NULL));
	/* UNREG: size below the struct, reserved bytes, unreadable, no such enabler. */
	EXPECT_EQ(-1, ioctl(fd, DIAG_IOCSUNREG, &u));
	EXPECT_EQ(EINVAL, errno);
	u.size = sizeof(u);
	u.__reserved = 1;
	EXPECT_EQ(-1, ioctl(fd, DIAG_IOCSUNREG, &u));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, ioctl(fd, DIAG_IOCSUNREG, bad));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(-ENOENT, unreg(fd, &self->w32[1], 8));
	EXPECT_EQ(-ENOENT, unreg(fd, &self->w32[0], 9));
	/* An UNREG while enabled clears the bit. */
	ASSERT_EQ(0, enable("__rue_cd", 1));
	EXPECT_EQ(1 << 9, self->w32[1]);
	EXPECT_EQ(0, unreg(fd, &self->w32[1], 9));
	EXPECT_EQ(0, self->w32[1]);
	EXPECT_EQ(-ENOENT, unreg(fd, &self->w32[1], 9));
	ASSERT_EQ(0, enable("__rue_cd", 0));
	/* DEL: busy while a file holds it, then deleted; unknown, NULL and bad names. */
	EXPECT_EQ(-EBUSY, del_event(self->fd, "__rue_cd"));
	close(fd);
	EXPECT_EQ(0, del_event(self->fd, "__rue_cd"));
	EXPECT_FALSE(exists(EVENTS "__rue_cd"));
	EXPECT_EQ(-ENOENT, del_event(self->fd, "__rue_cd"));
	EXPECT_EQ(-EFAULT, del_event(self->fd, NULL));
	EXPECT_EQ(-EFAULT, del_event(self->fd, bad));
}

TEST_F(c, reg_errno_matrix)
{
	struct user_reg r = {};
	static char big[4096 + 64];
	char long_name[600];
	const char *n = "__rue_ce u32 a";
	void *w = &self->w32[0];
	int fd = open(DATA_FILE, O_RDWR);
	char *page = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *gone = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	ASSERT_TRUE(page != MAP_FAILED);
	ASSERT_TRUE(gone != MAP_FAILED);
	ASSERT_EQ(0, munmap(gone, 4096));
	/* The struct: too big, too small, a non-zero tail, unreadable. */
	r.size = 4097;
	EXPECT_EQ(-1, ioctl(self->fd, DIAG_IOCSREG, &r));
	EXPECT_EQ(E2BIG, errno);
	r.size = 27;
	EXPECT_EQ(-1, ioctl(self->fd, DIAG_IOCSREG, &r));
	EXPECT_EQ(EINVAL, errno);
	*(__u32 *)big = 32;
	big[30] = 1;
	EXPECT_EQ(-1, ioctl(self->fd, DIAG_IOCSREG, big));
	EXPECT_EQ(E2BIG, errno);
	EXPECT_EQ(-1, ioctl(self->fd, DIAG_IOCSREG, bad));
	EXPECT_EQ(EFAULT, errno);
	/* Flags, enable size, alignment, bit. */
	EXPECT_EQ(-EINVAL, reg(self->fd, u64_of(n), u64_of(w), 4, 0, 4, NULL));
	EXPECT_EQ(-EINVAL, reg(self->fd, u64_of(n), u64_of(w), 4, 0, 0x8000, NULL));
	EXPECT_EQ(-EINVAL, reg_event(self->fd, n, w, 0, 0, NULL));
	EXPECT_EQ(-EINVAL, reg_event(self->fd, n, w, 2, 0, NULL));
	EXPECT_EQ(-EINVAL, reg_event(self->fd, n, w, 16, 0, NULL));
	EXPECT_EQ(-EINVAL, reg_event(self->fd, n, (char *)w + 2, 4, 0, NULL));
	EXPECT_EQ(-EINVAL, reg_event(self->fd, n, &self->w32[1], 8, 0, NULL));
	EXPECT_EQ(-EINVAL, reg_event(self->fd, n, w, 4, 32, NULL));
	EXPECT_EQ(-EINVAL, reg_event(self->fd, n, &self->w64, 8, 64, NULL));
	/* Addresses: not a user address (refused before the event is made). */
	EXPECT_EQ(-EFAULT, reg(self->fd, u64_of(n), KERNEL_ADDR, 4, 0, 0, NULL));
	EXPECT_EQ(-EFAULT, reg(self->fd, u64_of(n), KERNEL_ADDR, 8, 0, 0, NULL));
	/*
	 * Unmapped, read-only: found when the bit is first written, after the
	 * event is made, which the file then holds until it is closed (as
	 * upstream): another file and name.
	 */
	ASSERT_NE(-1, fd);
	EXPECT_EQ(-EFAULT, reg_event(fd, "__rue_cx u32 a", gone, 4, 0, NULL));
	EXPECT_EQ(-EFAULT, reg_event(fd, "__rue_cx u32 a", gone, 8, 0, NULL));
	EXPECT_EQ(-EFAULT, reg_event(fd, "__rue_cx u32 a", page, 4, 0, NULL));
	EXPECT_EQ(-EFAULT, reg_event(fd, "__rue_cx u32 a", page, 8, 0, NULL));
	close(fd);
	/* Names: NULL, unreadable, too long, bad flag, bad type, trailing space, bad sizes. */
	EXPECT_EQ(-EFAULT, reg_event(self->fd, NULL, w, 4, 0, NULL));
	EXPECT_EQ(-EFAULT, reg_event(self->fd, bad, w, 4, 0, NULL));
	EXPECT_EQ(-EFAULT, reg(self->fd, KERNEL_ADDR, u64_of(w), 4, 0, 0, NULL));
	memset(long_name, 'a', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	EXPECT_EQ(-EINVAL, reg_event(self->fd, long_name, w, 4, 0, NULL));
	EXPECT_EQ(-EINVAL, reg_event(self->fd, "__rue_ce:flag u32 a", w, 4, 0, NULL));
	EXPECT_EQ(-EINVAL, reg_event(self->fd, "__rue_ce long a", w, 4, 0, NULL));
	EXPECT_EQ(-EINVAL, reg_event(self->fd, "__rue_ce u32 a ", w, 4, 0, NULL));
	EXPECT_EQ(-EINVAL, reg_event(self->fd, "__rue_ce char[1025] a", w, 4, 0, NULL));
	EXPECT_EQ(-EINVAL, reg_event(self->fd, "__rue_ce struct x a 2147483648", w, 4, 0, NULL));
	EXPECT_FALSE(exists(EVENTS "__rue_ce"));
	/* The same word and bit twice, even for another event. */
	ASSERT_EQ(0, reg_event(self->fd, n, w, 4, 0, NULL));
	EXPECT_EQ(-EADDRINUSE, reg_event(self->fd, n, w, 4, 0, NULL));
	EXPECT_EQ(-EADDRINUSE, reg_event(self->fd, "__rue_ce2 u64 b", w, 4, 0, NULL));
	/* A different field list for the same name. */
	EXPECT_EQ(-EADDRINUSE, reg_event(self->fd, "__rue_ce u64 a", w, 4, 1, NULL));
	EXPECT_EQ(0, unreg(self->fd, w, 0));
	munmap(page, 4096);
}

#if defined(__i386__) || defined(__arm__)
/*
 * The UAPI's addresses are __u64 for every program: a 32-bit program's upper
 * half is not dropped (no address there is mapped in a 32-bit process), so
 * the REG fails rather than landing on the truncated address.
 */
TEST_F(c, upper_half_of_an_address_is_kept)
{
	const char *n = "__rue_cu u32 a";
	__u64 high = 1ULL << 32;

	EXPECT_EQ(-EFAULT, reg(self->fd, u64_of(n), high | u64_of(&self->w32[0]), 4, 0, 0, NULL));
	EXPECT_EQ(-EFAULT, reg(self->fd, high | u64_of(n), u64_of(&self->w32[0]), 4, 0, 0, NULL));
	/* Nothing was registered at the truncated address. */
	EXPECT_EQ(-ENOENT, unreg(self->fd, &self->w32[0], 0));
	ASSERT_EQ(0, reg_event(self->fd, n, &self->w32[0], 4, 0, NULL));
	EXPECT_EQ(0, unreg(self->fd, &self->w32[0], 0));
}
#endif

TEST_HARNESS_MAIN
