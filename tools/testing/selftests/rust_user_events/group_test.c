// SPDX-License-Identifier: GPL-2.0
/*
 * The `group` module parameter: with group=GID, user_events_data is 0660 and
 * user_events_status 0440, both of group GID, so that group's members register
 * and write events without root; without it the files keep upstream's
 * root-only modes; a value that is no gid fails the load.
 *
 * Each test reloads /rue/rust_user_events.ko (RUE_MODULE names another .ko)
 * and its teardown loads it again without parameters, whatever happened, and
 * puts back the tracefs mount's mode and gid. Children drop to unprivileged
 * uids with no capabilities; the tracefs root is remounted mode=0711 for them,
 * as Documentation/install.md tells administrators (tracefs's default 0700
 * keeps everyone but root out of every file under it).
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/capability.h>

#include "kselftest_harness.h"
#include "rue_helpers.h"

#define TRACING "/sys/kernel/tracing"
#define DATA_FILE TRACING "/user_events_data"
#define STATUS_FILE TRACING "/user_events_status"
#define STATS_FILE TRACING "/user_events_stats"
#define MODULE_NAME "rust_user_events"

#define GROUP 4242u		/* the group given to the module */
#define MEMBER_UID 4243		/* a member of GROUP (supplementary) */
#define MEMBER_GID 4244
#define OTHER_UID 4245		/* not a member */
#define OTHER_GID 4246
#define OTHER_GROUP 4250u	/* a tracefs gid= mount option */

/* A regular file with permission bits @perm, as stat(2) shows it. */
#define REG_MODE(perm) ((mode_t)(S_IFREG | (perm)))

#define EVENT "__rue_grp"
#define KEPT_EVENT "__rue_grp_keep"
#define PAYLOAD 0x4242abcdu

static const char *module_path(void)
{
	const char *path = getenv("RUE_MODULE");

	return path ? path : "/rue/rust_user_events.ko";
}

static int module_loaded(void)
{
	return exists(DATA_FILE);
}

/* finit_module(2) of the module with @params; 0 or -errno. */
static int load(const char *params)
{
	int fd = open(module_path(), O_RDONLY | O_CLOEXEC);
	int ret;

	if (fd < 0)
		return -errno;
	ret = syscall(SYS_finit_module, fd, params, 0) ? -errno : 0;
	close(fd);
	return ret;
}

/*
 * delete_module(2), retried for up to 10 s while events of earlier programs
 * are still being deleted (asynchronously, as upstream) and pin the module.
 */
static int unload(void)
{
	struct timespec ms = { 0, 10 * 1000 * 1000 };
	int ret = 0;

	for (int i = 0; i < 1000; i++) {
		ret = syscall(SYS_delete_module, MODULE_NAME, O_NONBLOCK) ? -errno : 0;
		if (ret != -EWOULDBLOCK && ret != -EBUSY)
			break;
		nanosleep(&ms, NULL);
	}
	return ret == -ENOENT ? 0 : ret;
}

/* Unloads the module and loads it again with @params; the load's 0 or -errno. */
static int reload(const char *params)
{
	int ret = unload();

	return ret ? ret : load(params);
}

/* Remounts tracefs with @opts; 0 or -errno. */
static int remount(const char *opts)
{
	return mount(NULL, TRACING, NULL, MS_REMOUNT, opts) ? -errno : 0;
}

/* DIAG_IOCSREG of @name_args with @flags, enable bit 31 of @enabled; index or -errno. */
static int reg_flags(int fd, const char *name_args, __u32 *enabled, __u16 flags)
{
	struct user_reg reg = {
		.size = sizeof(reg),
		.enable_bit = 31,
		.enable_size = sizeof(*enabled),
		.flags = flags,
		.enable_addr = (__u64)(uintptr_t)enabled,
		.name_args = (__u64)(uintptr_t)name_args,
	};

	if (ioctl(fd, DIAG_IOCSREG, &reg) == -1)
		return -errno;
	return reg.write_index;
}

static int del(int fd, const char *name)
{
	return ioctl(fd, DIAG_IOCSDEL, name) == -1 ? -errno : 0;
}

/* open(2) of @path; closes it again; 0 or -errno. */
static int try_open(const char *path, int flags)
{
	int fd = open(path, flags);

	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

/*
 * Becomes @uid/@gid with the supplementary groups @groups, and checks that no
 * capability is left (setuid from root to another uid clears them).
 */
static int drop_privileges(uid_t uid, gid_t gid, const gid_t *groups, size_t ngroups)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct caps[2];

	if (setgroups(ngroups, groups) || setgid(gid) || setuid(uid))
		return -errno;
	if (syscall(SYS_capget, &hdr, caps))
		return -errno;
	if (caps[0].effective || caps[1].effective || caps[0].permitted || caps[1].permitted)
		return -EPERM;
	return getuid() == uid && geteuid() == uid ? 0 : -EPERM;
}

/* Waits up to 5 s for bit 31 of @word to be @set. */
static int bit_within(volatile __u32 *word, int set)
{
	struct timespec ms = { 0, 1000 * 1000 };

	for (int i = 0; i < 5000; i++) {
		if (!!(*word & (1u << 31)) == set)
			return 1;
		nanosleep(&ms, NULL);
	}
	return 0;
}

/* One byte over a pipe, for the parent and the child to take turns. */
static int send_byte(int fd, char c)
{
	return write(fd, &c, 1) == 1 ? 0 : -1;
}

static int expect_byte(int fd, char c)
{
	char got;

	return read(fd, &got, 1) == 1 && got == c ? 0 : -1;
}

#define CHILD_CHECK(cond, ...)                                  \
	do {                                                    \
		if (!(cond)) {                                  \
			fprintf(stderr, "# child: " __VA_ARGS__);      \
			fprintf(stderr, "\n");                  \
			_exit(1);                               \
		}                                               \
	} while (0)

/*
 * A member of the group, with no capability: opens both files, registers
 * EVENT, is refused PERSIST and the deletion of a persistent event (EPERM,
 * upstream's answer without CAP_PERFMON), sees its enable bit follow the
 * parent's enable, writes one event, unregisters. Talks to the parent over
 * @in/@out: 'R' registered, 'E' enabled, 'W' written, 'D' disabled.
 */
static void member(int in, int out)
{
	const gid_t groups[] = { GROUP };
	static volatile __u32 enabled, persist_enabled;
	__u32 payload = PAYLOAD;
	char status[4096];
	int ret, fd, idx;

	ret = drop_privileges(MEMBER_UID, MEMBER_GID, groups, 1);
	CHILD_CHECK(!ret, "drop privileges: %s", strerror(-ret));
	fd = open(DATA_FILE, O_RDWR);
	CHILD_CHECK(fd >= 0, "open user_events_data O_RDWR: %s", strerror(errno));
	ret = read_file(STATUS_FILE, status, sizeof(status));
	CHILD_CHECK(ret >= 0, "read user_events_status: %s", strerror(-ret));
	ret = read_file(STATS_FILE, status, sizeof(status));
	CHILD_CHECK(ret >= 0, "read user_events_stats: %s", strerror(-ret));
	idx = reg_flags(fd, EVENT " u32 x", (__u32 *)&enabled, 0);
	CHILD_CHECK(idx >= 0, "REG: %s", strerror(-idx));
	ret = reg_flags(fd, EVENT "_p u32 x", (__u32 *)&persist_enabled, USER_EVENT_REG_PERSIST);
	CHILD_CHECK(ret == -EPERM, "REG with PERSIST: %d, not -EPERM", ret);
	ret = del(fd, KEPT_EVENT);
	CHILD_CHECK(ret == -EPERM, "DEL of a persistent event: %d, not -EPERM", ret);
	CHILD_CHECK(!(enabled & (1u << 31)), "bit set before any enable");
	CHILD_CHECK(!send_byte(out, 'R') && !expect_byte(in, 'E'), "handshake R/E");
	CHILD_CHECK(bit_within(&enabled, 1), "enable bit not set within 5 s");
	ret = rue_emit(fd, idx, &payload, sizeof(payload));
	CHILD_CHECK(ret == 4 + sizeof(payload), "write: %d", ret);
	CHILD_CHECK(!send_byte(out, 'W') && !expect_byte(in, 'D'), "handshake W/D");
	CHILD_CHECK(bit_within(&enabled, 0), "enable bit not cleared within 5 s");
	ret = rue_unreg(fd, (__u32 *)&enabled, 31);
	CHILD_CHECK(!ret, "UNREG: %s", strerror(-ret));
	close(fd);
	_exit(0);
}

/* Not a member, no capability: both files refuse it with EACCES. */
static void outsider(void)
{
	int ret = drop_privileges(OTHER_UID, OTHER_GID, NULL, 0);

	CHILD_CHECK(!ret, "drop privileges: %s", strerror(-ret));
	ret = try_open(DATA_FILE, O_RDWR);
	CHILD_CHECK(ret == -EACCES, "open user_events_data O_RDWR: %d, not -EACCES", ret);
	ret = try_open(DATA_FILE, O_WRONLY);
	CHILD_CHECK(ret == -EACCES, "open user_events_data O_WRONLY: %d, not -EACCES", ret);
	ret = try_open(STATUS_FILE, O_RDONLY);
	CHILD_CHECK(ret == -EACCES, "open user_events_status: %d, not -EACCES", ret);
	_exit(0);
}

/* A child's exit status: 0 when it passed. */
static int reap(pid_t pid)
{
	int status;

	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* A member opens user_events_data for writing and reads user_events_status. */
static int run_member_open(void)
{
	const gid_t groups[] = { GROUP };
	pid_t pid = fork();
	int ret;

	if (pid == 0) {
		ret = drop_privileges(MEMBER_UID, MEMBER_GID, groups, 1);
		CHILD_CHECK(!ret, "drop privileges: %s", strerror(-ret));
		ret = try_open(DATA_FILE, O_RDWR);
		CHILD_CHECK(!ret, "open user_events_data O_RDWR: %s", strerror(-ret));
		ret = try_open(STATUS_FILE, O_RDONLY);
		CHILD_CHECK(!ret, "open user_events_status: %s", strerror(-ret));
		_exit(0);
	}
	return pid < 0 ? -1 : reap(pid);
}

static int run_outsider(void)
{
	pid_t pid = fork();

	if (pid == 0)
		outsider();
	return pid < 0 ? -1 : reap(pid);
}

/* The file's type and permission bits, owner and group. */
struct owner {
	mode_t mode;
	uid_t uid;
	gid_t gid;
};

static struct owner owner_of(const char *path)
{
	struct stat st;
	struct owner o = { 0, -1, -1 };

	if (!stat(path, &st))
		o = (struct owner){ st.st_mode, st.st_uid, st.st_gid };
	return o;
}

FIXTURE(group) {
	struct owner root;	/* the tracefs root as the test found it */
};

FIXTURE_SETUP(group)
{
	/* A child that failed early must not kill the test through its pipe. */
	signal(SIGPIPE, SIG_IGN);
	ASSERT_TRUE(module_loaded());
	self->root = owner_of(TRACING);
	ASSERT_NE((uid_t)-1, self->root.uid);
}

FIXTURE_TEARDOWN(group)
{
	struct owner now = owner_of(TRACING);
	char opts[64];
	int fd;

	/* The persistent event a failed test may have left would keep the module in. */
	fd = open(DATA_FILE, O_RDWR);
	if (fd >= 0) {
		del(fd, KEPT_EVENT);
		close(fd);
	}
	if (now.mode != self->root.mode || now.gid != self->root.gid) {
		snprintf(opts, sizeof(opts), "mode=%o,gid=%u", self->root.mode & 07777,
			 self->root.gid);
		EXPECT_EQ(0, remount(opts));
	}
	EXPECT_EQ(0, unload());
	EXPECT_EQ(0, load(""));
	EXPECT_TRUE(module_loaded());
}

TEST_F(group, default_load_keeps_root_only_modes)
{
	struct owner data, status, stats;

	ASSERT_EQ(0, reload(""));
	data = owner_of(DATA_FILE);
	status = owner_of(STATUS_FILE);
	stats = owner_of(STATS_FILE);
	EXPECT_EQ(REG_MODE(0640), data.mode);	/* TRACE_MODE_WRITE */
	EXPECT_EQ(REG_MODE(0440), status.mode);	/* TRACE_MODE_READ */
	EXPECT_EQ(REG_MODE(0440), stats.mode);
	/* Owned as the rest of tracefs: by its mount's uid= and gid=. */
	EXPECT_EQ(self->root.uid, data.uid);
	EXPECT_EQ(self->root.gid, data.gid);
	EXPECT_EQ(self->root.gid, status.gid);
	EXPECT_EQ(self->root.gid, stats.gid);
	/* Even a traversable tracefs root lets nobody else in. */
	ASSERT_EQ(0, remount("mode=0711"));
	EXPECT_EQ(0, run_outsider());
}

TEST_F(group, value_that_is_no_gid_fails_the_load)
{
	static const char * const bad[] = {
		"group=4294967295",	/* (gid_t)-1 */
		"group=4294967296",
		"group=-2",
		"group=staff",		/* names are resolved in user space */
	};

	ASSERT_EQ(0, unload());
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		EXPECT_EQ(-EINVAL, load(bad[i])) TH_LOG("%s", bad[i]);
		EXPECT_FALSE(module_loaded()) TH_LOG("%s", bad[i]);
	}
	EXPECT_EQ(0, load("group=-1"));	/* -1 is the default: root only */
	EXPECT_EQ(REG_MODE(0640), owner_of(DATA_FILE).mode);
	EXPECT_EQ(self->root.gid, owner_of(DATA_FILE).gid);
}

TEST_F(group, group_gets_data_read_write_and_status_read)
{
	struct owner data, status, stats;

	ASSERT_EQ(0, reload("group=4242"));
	data = owner_of(DATA_FILE);
	status = owner_of(STATUS_FILE);
	stats = owner_of(STATS_FILE);
	EXPECT_EQ(REG_MODE(0660), data.mode);
	EXPECT_EQ(REG_MODE(0440), status.mode);
	EXPECT_EQ(REG_MODE(0440), stats.mode);
	EXPECT_EQ(self->root.uid, data.uid);
	EXPECT_EQ(GROUP, data.gid);
	EXPECT_EQ(GROUP, status.gid);
	EXPECT_EQ(GROUP, stats.gid);
	/* Lookups re-apply the mount's gid= to files nobody chgrp'd; not to these. */
	EXPECT_EQ(GROUP, owner_of(DATA_FILE).gid);
}

TEST_F(group, member_registers_writes_and_unregisters_without_root)
{
	__u32 kept_enabled = 0;
	int to_child[2], to_parent[2];
	char trace[8192], line[64];
	pid_t pid;
	int fd;

	ASSERT_EQ(0, reload("group=4242"));
	ASSERT_EQ(0, remount("mode=0711"));

	/* A persistent event, made by root and left without registrations. */
	fd = open(DATA_FILE, O_RDWR);
	ASSERT_LE(0, fd);
	ASSERT_LE(0, reg_flags(fd, KEPT_EVENT " u32 x", &kept_enabled, USER_EVENT_REG_PERSIST));
	ASSERT_EQ(0, rue_unreg(fd, &kept_enabled, 31));
	ASSERT_EQ(0, close(fd));

	ASSERT_EQ(0, pipe(to_child));
	ASSERT_EQ(0, pipe(to_parent));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		close(to_child[1]);
		close(to_parent[0]);
		member(to_child[0], to_parent[1]);
	}
	close(to_child[0]);
	close(to_parent[1]);

	EXPECT_EQ(0, expect_byte(to_parent[0], 'R'));
	EXPECT_EQ(0, write_file(TRACING "/trace", ""));
	EXPECT_EQ(0, write_file(TRACING "/events/user_events/" EVENT "/enable", "1"));
	EXPECT_EQ(0, send_byte(to_child[1], 'E'));
	EXPECT_EQ(0, expect_byte(to_parent[0], 'W'));
	/* Read while the event exists: the trace prints a deleted event's records as unknown. */
	EXPECT_LT(0, read_file(TRACING "/trace", trace, sizeof(trace)));
	snprintf(line, sizeof(line), EVENT ": x=0x%x (%u)\n", PAYLOAD, PAYLOAD);
	EXPECT_NE(NULL, strstr(trace, line)) TH_LOG("no '%s' in trace:\n%s", line, trace);
	EXPECT_EQ(0, write_file(TRACING "/events/user_events/" EVENT "/enable", "0"));
	EXPECT_EQ(0, send_byte(to_child[1], 'D'));
	close(to_child[1]);
	EXPECT_EQ(0, reap(pid));
	close(to_parent[0]);

	/* The persistent event is still there, for root to delete. */
	fd = open(DATA_FILE, O_RDWR);
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, del(fd, KEPT_EVENT));
	close(fd);

	EXPECT_EQ(0, run_outsider());
}

/*
 * The group is set as chgrp sets it, so tracefs keeps it over a remount
 * without gid= (mode=, uid=); a remount with gid= hands every tracefs file to
 * that group, these too, as it does with files chgrp'd by hand.
 */
TEST_F(group, group_survives_a_remount_without_gid)
{
	ASSERT_EQ(0, reload("group=4242"));
	ASSERT_EQ(0, remount("mode=0711"));
	EXPECT_EQ(GROUP, owner_of(DATA_FILE).gid);
	EXPECT_EQ(GROUP, owner_of(STATUS_FILE).gid);
	ASSERT_EQ(0, remount("mode=0711,uid=0"));
	EXPECT_EQ(GROUP, owner_of(DATA_FILE).gid);
	EXPECT_EQ(REG_MODE(0660), owner_of(DATA_FILE).mode);
	EXPECT_EQ(GROUP, owner_of(STATUS_FILE).gid);
	EXPECT_EQ(0, run_member_open());
	EXPECT_EQ(0, run_outsider());

	ASSERT_EQ(0, remount("mode=0711,gid=4250"));
	EXPECT_EQ(OTHER_GROUP, owner_of(DATA_FILE).gid);
	EXPECT_EQ(OTHER_GROUP, owner_of(STATUS_FILE).gid);
	EXPECT_EQ(REG_MODE(0660), owner_of(DATA_FILE).mode);
}

TEST_HARNESS_MAIN
