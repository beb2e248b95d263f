// SPDX-License-Identifier: GPL-2.0
/*
 * Loading and unloading rust_user_events: refusal to load twice, refusal to
 * unload while a file is open, and repeated load/unload cycles (the test VM
 * checks kmemleak afterwards). The module must be loaded when this starts and
 * is loaded again when it ends. RUE_MODULE names the .ko (default below).
 *
 * RUE_TWIN names a copy of the module renamed rust_user_twin00
 * (tools/testing/build-guest.sh): to the kernel it is a second, different
 * provider of user_events, which must be refused (EBUSY) because the tracefs
 * files already exist. RUE_WRONG_SYMBOL names a build renamed rust_user_wsym00
 * that resolves a wrong kernel symbol (make check builds it for the test
 * kernel): its load must be refused (ENOEXEC), the message naming the symbol.
 * RUE_WRONG_TYPE names a build renamed rust_user_wtyp00 that expects a per-CPU
 * symbol of another type and size than the kernel's BTF says (make check builds
 * it for Debian's amd64 and arm64 kernels): refused too, naming both types.
 * RUE_MIRROR names a build against a kernel tree with one mirrored body changed
 * (tools/testing/mirror-test.sh), which must load with that mirror's fallback.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/bpf.h>

#include "kselftest_harness.h"
#include "rue_bpf.h"
#include "rue_perf.h"

#define DATA_FILE "/sys/kernel/tracing/user_events_data"
#define STATUS_FILE "/sys/kernel/tracing/user_events_status"
#define MODULE_NAME "rust_user_events"
#define LOAD_CYCLES 50

static const char *module_path(void)
{
	const char *path = getenv("RUE_MODULE");

	return path ? path : "/rue/rust_user_events.ko";
}

static const char *twin_path(void)
{
	const char *path = getenv("RUE_TWIN");

	return path ? path : "/rue/rust_user_twin00.ko";
}

/* Is a module called @name in /proc/modules? */
static int module_listed(const char *name)
{
	char line[256];
	size_t len = strlen(name);
	FILE *f = fopen("/proc/modules", "r");
	int found = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, name, len) && line[len] == ' ')
			found = 1;
	fclose(f);
	return found;
}

/* finit_module(2) of @path; returns 0 or -errno. */
static int load(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int ret;

	if (fd < 0)
		return -errno;
	ret = syscall(SYS_finit_module, fd, "", 0);
	ret = ret ? -errno : 0;
	close(fd);
	return ret;
}

/* delete_module(2) without waiting; returns 0 or -errno. */
static int unload(void)
{
	return syscall(SYS_delete_module, MODULE_NAME, O_NONBLOCK) ? -errno : 0;
}

TEST(second_load_is_refused_with_eexist)
{
	ASSERT_TRUE(exists(DATA_FILE));
	EXPECT_EQ(-EEXIST, load(module_path()));
	EXPECT_TRUE(exists(DATA_FILE));
}

/* The loader reserves EEXIST for a module of the same name, hence EBUSY. */
TEST(another_provider_is_refused_with_ebusy)
{
	int fd;

	ASSERT_TRUE(exists(DATA_FILE));
	EXPECT_EQ(-EBUSY, load(twin_path()));
	EXPECT_EQ(0, module_listed("rust_user_twin00"));
	EXPECT_EQ(1, module_listed(MODULE_NAME));
	fd = open(DATA_FILE, O_RDWR);
	ASSERT_NE(-1, fd);
	close(fd);
	EXPECT_TRUE(exists(STATUS_FILE));
}

/* The kernel log's records that contain @needle, into @log (@size bytes); -errno or 0. */
static int kernel_log(const char *needle, char *log, size_t size)
{
	int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK);
	size_t n = 0;

	if (fd < 0)
		return -errno;
	if (lseek(fd, 0, SEEK_SET) < 0) {
		int ret = -errno;

		close(fd);
		return ret;
	}
	log[0] = 0;
	for (;;) {
		char rec[2048];
		ssize_t len = read(fd, rec, sizeof(rec) - 1);

		if (len < 0 && errno == EPIPE)
			continue;
		if (len <= 0)
			break;
		rec[len] = 0;
		if (strstr(rec, needle) && n + len < size) {
			memcpy(log + n, rec, len + 1);
			n += len;
		}
	}
	close(fd);
	return 0;
}

/* A kernel symbol that is not what the module expects refuses the load, and says which. */
TEST(a_wrong_symbol_refuses_the_load)
{
	const char *path = getenv("RUE_WRONG_SYMBOL");
	char log[1 << 16];

	path = path ? path : "/rue/rust_user_wsym00.ko";
	if (!exists(path))
		SKIP(return, "no build with a wrong symbol here (make check builds one for the test kernel)");
	EXPECT_EQ(-ENOEXEC, load(path));
	EXPECT_EQ(0, module_listed("rust_user_wsym00"));
	EXPECT_TRUE(exists(DATA_FILE));
	/* The kernel log's last lines name the symbol and what kallsyms has there. */
	ASSERT_EQ(0, kernel_log("rust_user_wsym00", log, sizeof(log)));
	EXPECT_NE(NULL, strstr(log, "\"tracefs_mount_count\": kallsyms has \"tracefs_registered+0x0/"))
		TH_LOG("kernel log of the load:\n%s", log);
}

/*
 * A per-CPU symbol of another type than the module expects refuses the load: the kernel's BTF
 * says what it is. kallsyms alone may not tell: trace_taskinfo_save, a bool, is followed by
 * alignment padding, so its distance to the next symbol has room for the int expected here.
 */
TEST(a_symbol_of_another_type_refuses_the_load)
{
	const char *path = getenv("RUE_WRONG_TYPE");
	char log[1 << 16];

	path = path ? path : "/rue/rust_user_wtyp00.ko";
	if (!exists(path))
		SKIP(return, "no build expecting another type here (make check builds one for Debian's amd64 and arm64 kernels)");
	EXPECT_EQ(-ENOEXEC, load(path));
	EXPECT_EQ(0, module_listed("rust_user_wtyp00"));
	EXPECT_TRUE(exists(DATA_FILE));
	ASSERT_EQ(0, kernel_log("rust_user_wtyp00", log, sizeof(log)));
	EXPECT_NE(NULL, strstr(log, "\"trace_taskinfo_save\": the kernel's BTF has the integer type _Bool (1 bytes), not the integer type int (4 bytes)"))
		TH_LOG("kernel log of the load:\n%s", log);
}

/*
 * A build against a kernel tree whose __preempt_count_dec_and_test() changed (make check's
 * tools/testing/mirror-test.sh checks the build: the write section in C calls) loads, says which
 * body changed, and records: EBADF with nobody attached, the record in ftrace once enabled.
 */
TEST(a_changed_mirror_is_built_with_its_fallback)
{
	const char *path = getenv("RUE_MIRROR");
	static char buf[1 << 16];
	volatile __u32 word = 0;
	__u32 value = 0x5eed;
	int data, index;

	path = path ? path : "/rue/mirror/rust_user_events.ko";
	if (!exists(path))
		SKIP(return, "no build against a changed mirror here (make check builds one for the test kernel)");
	ASSERT_EQ(0, unload());
	ASSERT_EQ(0, load(path));
	ASSERT_EQ(0, kernel_log("kernel bodies that changed", buf, sizeof(buf)));
	EXPECT_NE(NULL, strstr(buf, "since they were audited: x86_preempt_count_dec_and_test\n"))
		TH_LOG("kernel log of the load:\n%s", buf);
	data = open(DATA_FILE, O_RDWR);
	ASSERT_NE(-1, data);
	index = rue_reg(data, "__rue_mirror u32 v", &word, 0);
	ASSERT_LE(0, index) TH_LOG("%s", strerror(-index));
	EXPECT_EQ(-EBADF, rue_emit(data, index, &value, sizeof(value)));
	ASSERT_EQ(0, write_file(RUE_TRACEFS "trace", ""));
	ASSERT_EQ(0, rue_set_enable("__rue_mirror", "1"));
	EXPECT_EQ(1, word);
	EXPECT_EQ(8, rue_emit(data, index, &value, sizeof(value)));
	ASSERT_EQ(0, rue_set_enable("__rue_mirror", "0"));
	ASSERT_LT(0, read_file(RUE_TRACEFS "trace", buf, sizeof(buf)));
	EXPECT_NE(NULL, strstr(buf, "__rue_mirror: v=0x5eed (24301)\n")) TH_LOG("trace:\n%s", buf);
	EXPECT_EQ(0, rue_unreg(data, &word, 0));
	ASSERT_EQ(0, close(data));
	/* The event goes once unused; until then it pins the module. */
	EXPECT_TRUE(rue_wait_until(unload() == 0, 10000, 1000));
	ASSERT_EQ(0, load(module_path()));
}

TEST(unload_is_refused_while_data_file_is_open)
{
	int fd = open(DATA_FILE, O_RDWR);

	ASSERT_NE(-1, fd);
	EXPECT_EQ(-EWOULDBLOCK, unload());
	EXPECT_TRUE(exists(DATA_FILE));
	ASSERT_EQ(0, close(fd));
}

TEST(unload_is_refused_while_status_file_is_open)
{
	int fd = open(STATUS_FILE, O_RDONLY);

	ASSERT_NE(-1, fd);
	EXPECT_EQ(-EWOULDBLOCK, unload());
	EXPECT_TRUE(exists(STATUS_FILE));
	ASSERT_EQ(0, close(fd));
}

TEST(unload_removes_files_and_reload_restores_them)
{
	ASSERT_EQ(0, unload());
	EXPECT_FALSE(exists(DATA_FILE));
	EXPECT_FALSE(exists(STATUS_FILE));
	ASSERT_EQ(0, load(module_path()));
	EXPECT_TRUE(exists(DATA_FILE));
	EXPECT_TRUE(exists(STATUS_FILE));
}

/* kprobe and synthetic events through dynamic_events: create, then delete. */
static int other_dyn_types_work(void)
{
	if (dyn_write("p:rue_kp vfs_read") || dyn_write("s:rue_synth u64 v"))
		return 0;
	if (!exists("/sys/kernel/tracing/events/kprobes/rue_kp") ||
	    !exists("/sys/kernel/tracing/events/synthetic/rue_synth"))
		return 0;
	return !dyn_write("-:kprobes/rue_kp") && !dyn_write("-:synthetic/rue_synth");
}

TEST(dynamic_events_stay_usable_across_load_and_unload)
{
	for (int i = 0; i < 3; i++) {
		ASSERT_EQ(0, dyn_write("u:__rue_m1 u32 a")) TH_LOG("cycle %d", i);
		ASSERT_TRUE(other_dyn_types_work());
		/* A user event pins the module. */
		EXPECT_EQ(-EWOULDBLOCK, unload());
		/* Deleting needs the exact field list. */
		ASSERT_EQ(0, dyn_write("-:__rue_m1 u32 a"));
		ASSERT_EQ(0, unload()) TH_LOG("cycle %d", i);
		/* Without the module, u: lines are nobody's, the rest still works. */
		EXPECT_EQ(-EINVAL, dyn_write("u:__rue_m1 u32 a"));
		ASSERT_TRUE(other_dyn_types_work());
		ASSERT_EQ(0, load(module_path()));
	}
}

/* Each cycle waits for RCU and tracepoint grace periods: allow minutes under TCG. */
FIXTURE(cycles) {};
FIXTURE_SETUP(cycles) {}
FIXTURE_TEARDOWN(cycles) {}

TEST_F_TIMEOUT(cycles, load_unload_cycles, 600)
{
	int i;

	for (i = 0; i < LOAD_CYCLES; i++) {
		int fd;

		ASSERT_EQ(0, unload()) TH_LOG("cycle %d", i);
		ASSERT_FALSE(exists(DATA_FILE));
		ASSERT_EQ(0, load(module_path())) TH_LOG("cycle %d", i);
		fd = open(DATA_FILE, O_RDWR);
		ASSERT_NE(-1, fd) TH_LOG("cycle %d", i);
		close(fd);
	}
}

/*
 * Unload under load. Worker processes keep registering, writing, forking
 * (children REG, UNREG and exit: fork copies), dropping their enable page
 * (fault-ins) and opening the files, while another toggles the events in
 * ftrace and perf events with a BPF program are attached. Every rmmod then is
 * refused and leaves everything working. Then perf and BPF are detached and
 * the workers killed, with fork copies, fault-ins, teardowns and destroys
 * pending: rmmod is refused until the last event is gone and then succeeds,
 * leaving no file, no u: type and no event; the VM checks the kernel log and
 * kmemleak afterwards. Opens never race a successful rmmod here: that window is
 * documented (Documentation/design.md, "Loading").
 */
#define UL_WORKERS 3
#define UL_CYCLES 4

/* "return 0": a tracepoint program that only has to be attached. */
static int load_bpf_nop(void)
{
	static const struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	union bpf_attr attr = {
		.prog_type = BPF_PROG_TYPE_TRACEPOINT,
		.insn_cnt = 2,
		.insns = (__u64)(uintptr_t)insns,
		.license = (__u64)(uintptr_t)"GPL",
	};

	return sys_bpf(BPF_PROG_LOAD, &attr);
}

/* A worker: runs until killed, in its own process group with its children. */
static void __attribute__((noreturn)) ul_worker(int k)
{
	char name[64], payload[8] = "load";
	long page = sysconf(_SC_PAGESIZE);
	__u32 *word = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int data = open(DATA_FILE, O_RDWR);
	int index;

	snprintf(name, sizeof(name), "__rue_ul_%d u32 a", k);
	if (word == MAP_FAILED || data < 0 || (index = rue_reg(data, name, word, 0)) < 0)
		_exit(1);
	for (unsigned int i = 0;; i++) {
		int fd;

		rue_emit(data, index, payload, sizeof(payload));
		if (i % 16 == 0) {
			pid_t child = fork();

			if (child == 0) {
				/* The copy of the parent's enabler, then one of its own. */
				rue_reg(data, name, word, 1);
				rue_unreg(data, word, 1);
				_exit(0);
			}
			if (child > 0)
				waitpid(child, NULL, 0);
		}
		if (i % 8 == 4)
			madvise(word, page, MADV_DONTNEED);	/* the next bit write faults it in */
		fd = open(i % 2 ? STATUS_FILE : DATA_FILE, O_RDONLY);
		if (fd >= 0)
			close(fd);
	}
}

/* Toggles every worker's event in ftrace until killed. */
static void __attribute__((noreturn)) ul_toggler(void)
{
	char path[128];

	for (unsigned int i = 0;; i++) {
		snprintf(path, sizeof(path), EVENTS_DIR "__rue_ul_%u/enable", i % UL_WORKERS);
		write_file(path, i % 2 ? "0" : "1");
	}
}

static pid_t ul_spawn(int k)
{
	pid_t pid = fork();

	if (pid == 0) {
		setpgid(0, 0);
		if (k < 0)
			ul_toggler();
		ul_worker(k);
	}
	if (pid > 0)
		setpgid(pid, pid);
	return pid;
}

static int ul_events_exist(void)
{
	char path[128];

	for (int k = 0; k < UL_WORKERS; k++) {
		snprintf(path, sizeof(path), EVENTS_DIR "__rue_ul_%d", k);
		if (!exists(path))
			return 0;
	}
	return 1;
}

static double ul_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

TEST_F_TIMEOUT(cycles, unload_under_load, 900)
{
	for (int cycle = 0; cycle < UL_CYCLES; cycle++) {
		struct perf_handle perf[UL_WORKERS];
		pid_t pids[UL_WORKERS + 1];
		int bpf = load_bpf_nop(), refused = 0;
		double until;
		int ret;

		ASSERT_LE(0, bpf) TH_LOG("BPF_PROG_LOAD: %s", strerror(errno));
		for (int k = 0; k < UL_WORKERS; k++)
			ASSERT_LT(0, pids[k] = ul_spawn(k));
		ASSERT_LT(0, pids[UL_WORKERS] = ul_spawn(-1));
		for (until = ul_now() + rue_bound_ms(60000) / 1000; !ul_events_exist() && ul_now() < until;)
			usleep(10000);
		ASSERT_TRUE(ul_events_exist()) TH_LOG("cycle %d: the workers' events", cycle);
		for (int k = 0; k < UL_WORKERS; k++) {
			char name[32];

			snprintf(name, sizeof(name), "__rue_ul_%d", k);
			ASSERT_EQ(0, perf_open(&perf[k], name, -1, k % 2, 1)) TH_LOG("cycle %d", cycle);
			ASSERT_EQ(0, ioctl(perf[k].fd, PERF_EVENT_IOC_SET_BPF, bpf));
			ASSERT_EQ(0, ioctl(perf[k].fd, PERF_EVENT_IOC_ENABLE, 0));
		}

		/* Loaded: every attempt is refused, and everything still works. */
		for (int i = 0; i < 20; i++) {
			ASSERT_EQ(-EWOULDBLOCK, unload()) TH_LOG("cycle %d attempt %d", cycle, i);
			usleep(20000);
		}
		ASSERT_TRUE(exists(DATA_FILE));
		ASSERT_TRUE(exists(STATUS_FILE));
		ASSERT_TRUE(ul_events_exist());

		/* Detach, kill with work pending; rmmod succeeds once the last event went. */
		for (int k = 0; k < UL_WORKERS; k++)
			perf_close(&perf[k]);
		close(bpf);
		for (int k = 0; k <= UL_WORKERS; k++)
			kill(-pids[k], SIGKILL);
		for (int k = 0; k <= UL_WORKERS; k++)
			waitpid(pids[k], NULL, 0);
		/*
		 * The toggler may have left an event enabled, which holds it; or it is
		 * gone (ENOENT), or went while the write opened its file (ENODEV).
		 */
		for (int k = 0; k < UL_WORKERS; k++) {
			char path[128];
			int err;

			snprintf(path, sizeof(path), EVENTS_DIR "__rue_ul_%d/enable", k);
			err = write_file(path, "0");
			ASSERT_TRUE(err == 0 || err == -ENOENT || err == -ENODEV)
				TH_LOG("%s: %s", path, strerror(-err));
		}
		for (until = ul_now() + rue_bound_ms(60000) / 1000; (ret = unload()) == -EWOULDBLOCK && ul_now() < until; refused++)
			usleep(5000);
		if (ret) {
			static char buf[8192];

			if (read_file(STATUS_FILE, buf, sizeof(buf)) > 0)
				TH_LOG("user_events_status:\n%s", buf);
			if (read_file("/sys/kernel/tracing/user_events_stats", buf, sizeof(buf)) > 0)
				TH_LOG("user_events_stats:\n%s", buf);
		}
		ASSERT_EQ(0, ret) TH_LOG("cycle %d: rmmod after the load: %s", cycle, strerror(-ret));
		TH_LOG("cycle %d: rmmod refused %d times while the last events went", cycle, refused);
		EXPECT_FALSE(exists(DATA_FILE));
		EXPECT_FALSE(exists(STATUS_FILE));
		EXPECT_FALSE(exists(EVENTS_DIR "__rue_ul_0"));
		EXPECT_EQ(0, module_listed(MODULE_NAME));
		EXPECT_EQ(-EINVAL, dyn_write("u:__rue_ul_0 u32 a"));
		ASSERT_EQ(0, load(module_path())) TH_LOG("cycle %d", cycle);
		ASSERT_TRUE(exists(DATA_FILE));
	}
}

TEST_HARNESS_MAIN
