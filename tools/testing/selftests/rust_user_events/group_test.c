// SPDX-License-Identifier: GPL-2.0
/*
 * The `group` module parameter: with group=GID, user_events_data is 0660 and
 * user_events_status 0440, both of group GID, so that group's members register
 * and write events without root; without it the files keep upstream's
 * root-only modes; a value that is no gid fails the load.
 *
 * Containers: a client given only user_events_data, bind-mounted into mount and PID
 * namespaces of its own with no tracefs, or only a descriptor passed in, registers and
 * writes while a tracer outside records it; a bind mount of the file over a reload of the
 * module refuses every open (EIO) until the new file is bound.
 *
 * Each test reloads /rue/rust_user_events.ko (RUE_MODULE names another .ko)
 * and its teardown loads it again without parameters, whatever happened, and
 * puts back the tracefs mount's mode and gid. Children drop to unprivileged
 * uids with no capabilities; the tracefs root is remounted mode=0711 for them,
 * as Documentation/install.md tells administrators (tracefs's default 0700
 * keeps everyone but root out of every file under it).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/capability.h>
#include <linux/magic.h>

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

/* A child's exit status: 0 when it passed. */
static int reap(pid_t pid)
{
	int status;

	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/*
 * Registers EVENT on @fd, sees its enable bit follow the tracer's enable, writes one event and
 * unregisters. Talks to the tracer over @in/@out: 'R' registered, 'E' enabled, 'W' written,
 * 'D' disabled. Exits 0 when every step gave what it should.
 */
static void client(int fd, int in, int out)
{
	static volatile __u32 enabled;
	__u32 payload = PAYLOAD;
	int ret, idx;

	idx = reg_flags(fd, EVENT " u32 x", (__u32 *)&enabled, 0);
	CHILD_CHECK(idx >= 0, "REG: %s", strerror(-idx));
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

/*
 * A member of the group, with no capability: opens both files, reads the status and the
 * statistics, is refused PERSIST and the deletion of a persistent event (EPERM, upstream's
 * answer without CAP_PERFMON), then is a client().
 */
static void member(int in, int out, int sock)
{
	const gid_t groups[] = { GROUP };
	static volatile __u32 persist_enabled;
	char status[4096];
	int ret, fd;

	(void)sock;
	ret = drop_privileges(MEMBER_UID, MEMBER_GID, groups, 1);
	CHILD_CHECK(!ret, "drop privileges: %s", strerror(-ret));
	fd = open(DATA_FILE, O_RDWR);
	CHILD_CHECK(fd >= 0, "open user_events_data O_RDWR: %s", strerror(errno));
	ret = read_file(STATUS_FILE, status, sizeof(status));
	CHILD_CHECK(ret >= 0, "read user_events_status: %s", strerror(-ret));
	ret = read_file(STATS_FILE, status, sizeof(status));
	CHILD_CHECK(ret >= 0, "read user_events_stats: %s", strerror(-ret));
	ret = reg_flags(fd, EVENT "_p u32 x", (__u32 *)&persist_enabled, USER_EVENT_REG_PERSIST);
	CHILD_CHECK(ret == -EPERM, "REG with PERSIST: %d, not -EPERM", ret);
	ret = del(fd, KEPT_EVENT);
	CHILD_CHECK(ret == -EPERM, "DEL of a persistent event: %d, not -EPERM", ret);
	client(fd, in, out);
}

/*
 * Where a container is given the one file: where clients look first (libtracepoint, the
 * eventheader and tracepoint crates, .NET's provider), so they need no tracefs.
 */
#define CONTAINER_DATA DATA_FILE

/*
 * Makes the calling process (root) a container-like one, as a container runtime does: mount
 * and PID namespaces of its own and a root directory of its own (an empty tmpfs) holding
 * nothing of the host but, with @bind, user_events_data bind-mounted at CONTAINER_DATA in a
 * plain directory. Returns in the container's first process (PID 1 of its namespace), with no
 * tracefs anywhere; the process that called it waits for that one and exits with its status.
 * Exits on failure.
 */
static void enter_container(int bind)
{
	struct statfs fs;
	pid_t pid;
	int fd;

	CHILD_CHECK(!unshare(CLONE_NEWNS | CLONE_NEWPID), "unshare: %s", strerror(errno));
	pid = fork();
	CHILD_CHECK(pid >= 0, "fork: %s", strerror(errno));
	if (pid > 0)
		_exit(reap(pid));
	CHILD_CHECK(!mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL),
		    "mount --make-rprivate /: %s", strerror(errno));
	CHILD_CHECK(!mount("rue_container", "/tmp", "tmpfs", 0, "mode=0755"),
		    "mount tmpfs: %s", strerror(errno));
	CHILD_CHECK(!mkdir("/tmp/sys", 0755) && !mkdir("/tmp/sys/kernel", 0755) &&
		    !mkdir("/tmp" TRACING, 0755), "mkdir: %s", strerror(errno));
	if (bind) {
		fd = open("/tmp" CONTAINER_DATA, O_CREAT | O_WRONLY, 0644);
		CHILD_CHECK(fd >= 0, "create the mount point: %s", strerror(errno));
		close(fd);
		CHILD_CHECK(!mount(DATA_FILE, "/tmp" CONTAINER_DATA, NULL, MS_BIND, NULL),
			    "bind mount: %s", strerror(errno));
	}
	CHILD_CHECK(!chroot("/tmp") && !chdir("/"), "chroot: %s", strerror(errno));
	CHILD_CHECK(getpid() == 1, "pid %d in the container, not 1", getpid());
	CHILD_CHECK(!statfs(TRACING, &fs) && fs.f_type == TMPFS_MAGIC,
		    TRACING " in the container is no plain directory");
	CHILD_CHECK(!exists(TRACING "/trace") && !exists(STATUS_FILE),
		    "tracefs is visible in the container");
}

/*
 * A container given only user_events_data: a member of the group, no capability, opens it
 * where it is bind-mounted and is a client().
 */
static void container_member(int in, int out, int sock)
{
	const gid_t groups[] = { GROUP };
	int ret, fd;

	(void)sock;
	enter_container(1);
	ret = drop_privileges(MEMBER_UID, MEMBER_GID, groups, 1);
	CHILD_CHECK(!ret, "drop privileges: %s", strerror(-ret));
	fd = open(CONTAINER_DATA, O_RDWR);
	CHILD_CHECK(fd >= 0, "open user_events_data O_RDWR: %s", strerror(errno));
	client(fd, in, out);
}

/*
 * A container given no file, not a member of any group, no capability: the descriptor it
 * receives on @sock is all it has, and it is a client() with it.
 */
static void container_with_a_descriptor(int in, int out, int sock)
{
	int ret, fd;

	enter_container(0);
	ret = drop_privileges(OTHER_UID, OTHER_GID, NULL, 0);
	CHILD_CHECK(!ret, "drop privileges: %s", strerror(-ret));
	fd = rue_recv_fd(sock, 0);
	CHILD_CHECK(fd >= 0, "no descriptor received");
	client(fd, in, out);
}

/*
 * With user_events_data bind-mounted at @bound in a mount namespace of its own, as a
 * container has it, over a reload of the module (an upgrade): the mount still names the
 * unloaded module's file, so every open through it fails with EIO (the kernel's bad inode,
 * never the unloaded module's code); the file bound again is the new module's and works.
 * Reports 'B' once bound and opened, and waits for 'U', the reload done.
 */
static void bound_over_a_reload(int in, int out, int sock)
{
	static volatile __u32 enabled;
	const char *bound = "/tmp/user_events_data";
	int ret, fd;

	(void)sock;
	CHILD_CHECK(!unshare(CLONE_NEWNS), "unshare: %s", strerror(errno));
	CHILD_CHECK(!mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL),
		    "mount --make-rprivate /: %s", strerror(errno));
	CHILD_CHECK(!mount("rue_container", "/tmp", "tmpfs", 0, "mode=0755"),
		    "mount tmpfs: %s", strerror(errno));
	fd = open(bound, O_CREAT | O_WRONLY, 0644);
	CHILD_CHECK(fd >= 0 && !close(fd), "create the mount point: %s", strerror(errno));
	CHILD_CHECK(!mount(DATA_FILE, bound, NULL, MS_BIND, NULL), "bind: %s", strerror(errno));
	ret = try_open(bound, O_RDWR);
	CHILD_CHECK(!ret, "open before the reload: %s", strerror(-ret));
	CHILD_CHECK(!send_byte(out, 'B') && !expect_byte(in, 'U'), "handshake B/U");

	ret = try_open(bound, O_RDWR);
	CHILD_CHECK(ret == -EIO, "open O_RDWR after the reload: %d, not -EIO", ret);
	ret = try_open(bound, O_RDONLY);
	CHILD_CHECK(ret == -EIO, "open O_RDONLY after the reload: %d, not -EIO", ret);

	CHILD_CHECK(!umount2(bound, 0), "umount: %s", strerror(errno));
	CHILD_CHECK(!mount(DATA_FILE, bound, NULL, MS_BIND, NULL), "bind again: %s",
		    strerror(errno));
	fd = open(bound, O_RDWR);
	CHILD_CHECK(fd >= 0, "open when bound again: %s", strerror(errno));
	ret = reg_flags(fd, EVENT " u32 x", (__u32 *)&enabled, 0);
	CHILD_CHECK(ret >= 0, "REG when bound again: %s", strerror(-ret));
	ret = rue_unreg(fd, (__u32 *)&enabled, 31);
	CHILD_CHECK(!ret, "UNREG: %s", strerror(-ret));
	close(fd);
	_exit(0);
}

/* A child process that runs @fn, and the parent's ends of the two pipes it talks over. */
struct child {
	pid_t pid;
	int to;		/* the parent's commands */
	int from;	/* the child's answers */
};

/* Forks a child that runs @fn(in, out, @sock); pid -1 on failure. */
static struct child start(void (*fn)(int in, int out, int sock), int sock)
{
	struct child c = { -1, -1, -1 };
	int down[2], up[2];

	if (pipe(down))
		return c;
	if (pipe(up)) {
		close(down[0]);
		close(down[1]);
		return c;
	}
	c.pid = fork();
	if (c.pid == 0) {
		close(down[1]);
		close(up[0]);
		fn(down[0], up[1], sock);
		_exit(1);
	}
	close(down[0]);
	close(up[1]);
	c.to = down[1];
	c.from = up[0];
	return c;
}

/* Closes the parent's pipes to @c and reaps it; its exit status (0: it passed). */
static int finish(struct child *c)
{
	close(c->to);
	close(c->from);
	return reap(c->pid);
}

/*
 * The tracer's side of a client(): enables EVENT once it is registered, finds the client's
 * one event in the trace and disables EVENT again; then reaps the client, which must pass.
 */
static void trace_client(struct __test_metadata *_metadata, struct child *c)
{
	char trace[8192], line[64];

	EXPECT_EQ(0, expect_byte(c->from, 'R'));
	EXPECT_EQ(0, write_file(TRACING "/trace", ""));
	EXPECT_EQ(0, write_file(TRACING "/events/user_events/" EVENT "/enable", "1"));
	EXPECT_EQ(0, send_byte(c->to, 'E'));
	EXPECT_EQ(0, expect_byte(c->from, 'W'));
	/* Read while the event exists: the trace prints a deleted event's records as unknown. */
	EXPECT_LT(0, read_file(TRACING "/trace", trace, sizeof(trace)));
	snprintf(line, sizeof(line), EVENT ": x=0x%x (%u)\n", PAYLOAD, PAYLOAD);
	EXPECT_NE(NULL, strstr(trace, line)) TH_LOG("no '%s' in trace:\n%s", line, trace);
	EXPECT_EQ(0, write_file(TRACING "/events/user_events/" EVENT "/enable", "0"));
	EXPECT_EQ(0, send_byte(c->to, 'D'));
	EXPECT_EQ(0, finish(c));
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
	struct child c;
	int fd;

	ASSERT_EQ(0, reload("group=4242"));
	ASSERT_EQ(0, remount("mode=0711"));

	/* A persistent event, made by root and left without registrations. */
	fd = open(DATA_FILE, O_RDWR);
	ASSERT_LE(0, fd);
	ASSERT_LE(0, reg_flags(fd, KEPT_EVENT " u32 x", &kept_enabled, USER_EVENT_REG_PERSIST));
	ASSERT_EQ(0, rue_unreg(fd, &kept_enabled, 31));
	ASSERT_EQ(0, close(fd));

	c = start(member, -1);
	ASSERT_LE(0, c.pid);
	trace_client(_metadata, &c);

	/* The persistent event is still there, for root to delete. */
	fd = open(DATA_FILE, O_RDWR);
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, del(fd, KEPT_EVENT));
	close(fd);

	EXPECT_EQ(0, run_outsider());
}

/*
 * A container given only user_events_data (PID and mount namespaces of its own, its own
 * root, no tracefs), running as a member of the group with no capability, registers and
 * writes, and a tracer outside it records the event. The tracefs root stays as it was
 * (0700 unless the administrator opened it): a bind mount of the file is never reached
 * through it.
 */
TEST_F(group, container_given_only_the_data_file_is_traced_from_outside)
{
	struct child c;

	ASSERT_EQ(0, reload("group=4242"));
	c = start(container_member, -1);
	ASSERT_LE(0, c.pid);
	trace_client(_metadata, &c);
}

/*
 * A container with no file at all and no group, given an open user_events_data over a unix
 * socket: the descriptor carries the access (checked when it was opened, as upstream), so it
 * registers and writes, and a tracer outside records the event.
 */
TEST_F(group, descriptor_passed_into_a_container_registers_and_writes)
{
	struct child c;
	int sock[2], fd;

	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sock));
	c = start(container_with_a_descriptor, sock[1]);
	ASSERT_LE(0, c.pid);
	close(sock[1]);
	fd = open(DATA_FILE, O_RDWR);
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, rue_send_fd(sock[0], fd, 0));
	close(fd);
	close(sock[0]);
	trace_client(_metadata, &c);
}

/* A bind mount of user_events_data over a reload: see bound_over_a_reload(). */
TEST_F(group, bind_mount_of_the_file_refuses_opens_after_a_reload)
{
	struct child c = start(bound_over_a_reload, -1);

	ASSERT_LE(0, c.pid);
	EXPECT_EQ(0, expect_byte(c.from, 'B'));
	EXPECT_EQ(0, reload(""));
	EXPECT_EQ(0, send_byte(c.to, 'U'));
	EXPECT_EQ(0, finish(&c));
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
