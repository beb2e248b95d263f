// SPDX-License-Identifier: GPL-2.0
/*
 * fuzz_test: a seeded syscall fuzzer for the user_events ABI. It checks the
 * kernel, not the ABI: every call may fail with any errno, and the VM's log
 * checker fails the run on any kernel report (WARNING, BUG, lockdep, KASAN,
 * kCFI, kmemleak). The fuzzer itself must never crash or hang.
 *
 * Usage: fuzz_test [-s SEED] [-t SECONDS] [-p PROCS] [-j THREADS] [-w STUCK] [-f PCT]
 *                  [-x OP[,OP...]] [-v]
 *   -s SEED     master seed (default: from the clock); printed first as
 *               "# fuzz_test: seed N", so a failing run is repeated with -s N
 *   -t SECONDS  how long the workers issue operations (default 60)
 *   -p PROCS    worker processes (default 4, at most 32)
 *   -j THREADS  threads per worker, its main thread included (default 3, at most 8)
 *   -w STUCK    an operation running longer than this many seconds fails the
 *               test as "worker N stuck in OP" (default 60)
 *   -f PCT      arm the kernel's fault injection (/proc/thread-self/fail-nth)
 *               before PCT % of the REG, UNREG, DEL, open and dynamic_events
 *               operations (default 0: off)
 *   -x OPS      leave these operations out (names as in the summary, e.g.
 *               -x TRIGGER,SYSCTL), to steer around a known bug or bisect one
 *   -v          log every operation to stderr
 * Environment: FUZZ_SEED and FUZZ_SECONDS are used when -s or -t is not given.
 * Not the kselftest harness: it forks every test and imposes its own timeout,
 * so the TAP output is written by hand: a plan of six results (seven with -f),
 * one per check listed at the end of this comment, declared before the run.
 *
 * Each worker seeds its PRNG (splitmix64) from the master seed and its index,
 * each thread from the worker's seed and its own index: a worker's sequence of
 * operations is reproducible as far as the kernel's answers are (which depend
 * on timing across processes), not bit for bit, and only with the same
 * version of this file (the op table feeds the choices).
 *
 * Meant for a test VM of its own: DYN_TRUNC (O_TRUNC of dynamic_events) frees
 * every idle dynamic event of any kind, SYSCTL changes kernel.user_events_max
 * for everyone while it runs, and the trace instance "fuzz" is made and removed.
 *
 * Operations (names as in the summary), on a pool of event names fz_0..fz_15
 * with three field lists each (drawn from the seed) so that they collide and
 * race, plus random names fzr_*:
 *   REG         grammar-aware and mutated field lists, random names, every flag,
 *               odd struct sizes and placements, enable sizes 4/8/other, bits
 *               0..63 and beyond, enable addresses private, shared, file-backed,
 *               remapped, read-only, unmapped, kernel, misaligned; bad name_args
 *   REG_RAW     random bytes;  UNREG, DEL: known and random words and names
 *   WRITE, WRITEV  write/pwrite/writev/pwritev2: valid records, short, huge
 *               (8 KiB, 1 MiB), faulting buffers and iovecs, up to IOV_MAX
 *               iovecs, bad and negative indexes
 *   OPEN, CLOSE, DUP  of user_events_data (dup2 over fds other threads use)
 *   FORK        the child runs a few operations and exits;  VFORK + _exit;
 *   VFORK_EXEC  execve of /proc/self/exe "--child" (a few operations);
 *   THREAD      short-lived threads;  SCM: a data fd over SCM_RIGHTS to a child
 *   DYN_CREATE, DYN_DELETE, DYN_TRUNC  dynamic_events u:, -:, !u:, O_TRUNC
 *   READ        status, stats, dynamic_events, format/hist/..., trace, trace_pipe
 *   FTRACE      enable, filter, set_event, system enable (top level and the
 *               instance "fuzz");  TRIGGER: enable_event, stacktrace, hist
 *   PERF_OPEN, PERF_CLOSE, PERF_IOCTL, PERF_READ  tracepoint perf events,
 *               per task or CPU, with or without a ring
 *   BPF         tracepoint programs by PERF_EVENT_IOC_SET_BPF or a BPF link
 *   MMAP        remap/mprotect/madvise/ftruncate pages holding enable words
 *   SYSCTL      kernel.user_events_max;  MISC: other ioctls, read, lseek,
 *               mmap, poll, splice and sendfile on the data file
 *
 * At the end the workers are reaped, every fz* event is disabled and deleted,
 * the instance is removed and kernel.user_events_max is restored. Counts per
 * operation and errno are printed as "#" lines, then one result per check, each
 * after the "#" lines that show why it passed or failed:
 *   1 every worker opened both its shared user_events_data fds;
 *   2 every worker exited normally, none got stuck, every orphan was reaped;
 *   3 every operation of weight > 0 (after -x) was called, once the run was
 *     long enough for it to be due MIN_DUE times (a rare one in a short run is
 *     listed, not required);
 *   4 REG, UNREG, WRITE, WRITEV and OPEN each succeeded at least once;
 *   5 no user event is left after the cleanup;
 *   6 the module's reference count is back to 0 after it;
 *   7 (-f only) an armed fault was injected into a module call (fail-nth read
 *     back 0 after it) and made it fail, at least once.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <linux/bpf.h>
#include <linux/falloc.h>
#include <linux/perf_event.h>
#include <linux/user_events.h>

#include "rue_bpf.h"
#include "rue_helpers.h"

#define TRACEFS RUE_TRACEFS
#define DATA_FILE TRACEFS "user_events_data"
#define INSTANCE "fuzz"
#define INSTANCE_DIR TRACEFS "instances/" INSTANCE "/"
#define SYSCTL_MAX "/proc/sys/kernel/user_events_max"
#define FAIL_NTH "/proc/thread-self/fail-nth"
#define FAILSLAB "/sys/kernel/debug/failslab/"
#define MODULE_DIR "/sys/module/rust_user_events/"

/* The page size: 4 KiB, or 16 KiB on arm64-16k (mprotect'd guards, page-crossing copies). */
#define PG ((uint32_t)RUE_PAGE_SIZE)
#define NNAMES 16
#define NVARIANTS 3
#define MAXF 8
#define MAX_WORKERS 32
#define MAX_THREADS 16		/* watchdog slots per worker: main threads + short-lived */
#define MAX_MAIN_THREADS 8
#define MAX_SHORT_THREADS 4
#define MAX_CHILDREN 8		/* concurrent children per worker */
#define NOWN 4			/* data fds a thread owns */
#define NSHARED 2		/* data fds all threads of a worker share */
#define MAXREGS 48
#define NPERF 4
#define MAXMULTI 16
#define PAYMAX (24 * 1024)
#define BIGLEN (1024 * 1024 + 16 * 1024)
#define NERR 134		/* errno buckets; the last one is "other" */
#define KADDR 0xffffffff81000000ULL
/*
 * Calls an operation must have been due (its share of the threads' turns) before check 3
 * requires it: missed by chance with probability below e^-MIN_DUE (2e-9).
 */
#define MIN_DUE 20

/* Operations: name, weight (per mille of the random choice). */
#define OPS(X)                                                                  \
	X(REG, 150) X(REG_RAW, 15) X(UNREG, 70) X(DEL, 30) X(WRITE, 90)         \
	X(WRITEV, 90) X(OPEN, 25) X(CLOSE, 12) X(DUP, 20) X(FORK, 22)           \
	X(VFORK, 6) X(VFORK_EXEC, 6) X(THREAD, 8) X(SCM, 14) X(DYN_CREATE, 30)  \
	X(DYN_DELETE, 25) X(DYN_TRUNC, 2) X(READ, 35) X(FTRACE, 48) X(TRIGGER, 8) \
	X(PERF_OPEN, 30) X(PERF_CLOSE, 20) X(PERF_IOCTL, 15) X(PERF_READ, 15)   \
	X(BPF, 25) X(MMAP, 15) X(SYSCTL, 2) X(MISC, 15)                         \
	X(REAP, 0) X(JOIN, 0) X(SETUP, 0) X(IDLE, 0)

#define OP_ENUM(n, w) OP_##n,
enum op { OPS(OP_ENUM) NOPS };
#define OP_NAME(n, w) #n,
static const char *const op_names[] = { OPS(OP_NAME) };
#define OP_WEIGHT(n, w) w,
static int op_weights[] = { OPS(OP_WEIGHT) };
static unsigned long long g_excluded;	/* bit per op left out with -x */

/* ---------------------------------------------------------------- shared state */

struct tslot {
	int active;
	int op;
	uint64_t start_ms;
	uint64_t nops;
};

struct wslot {
	int pid;
	int data_fds;		/* shared user_events_data fds it opened */
	int data_errno;		/* why one did not open (0: it did not get that far) */
	struct tslot t[MAX_THREADS];
};

/* One MAP_SHARED page set, made by the master before the workers fork. */
struct shared {
	uint64_t calls[NOPS];
	uint64_t ok[NOPS];
	uint64_t err[NOPS][NERR];
	uint64_t fault_armed;
	/*
	 * Per op, with -f: calls armed, those after which fail-nth read back 0 (the armed fault
	 * point was reached and failed during the call), those of these that failed, with ENOMEM.
	 */
	uint64_t fault_armed_op[NOPS];
	uint64_t fault_injected[NOPS];
	uint64_t fault_failed[NOPS];
	uint64_t fault_enomem[NOPS];
	/*
	 * The id fz_N had when an enable_event/disable_event trigger on it was last set
	 * (0: never): a trigger left at the end whose target's id changed since was set on
	 * an event deleted and re-created under it.
	 */
	int trigger_target_id[NNAMES];
	int stop;
	struct wslot w[MAX_WORKERS];
};

static struct shared *S;	/* NULL in an exec'd child: it counts nothing */

static uint64_t g_seed;
static int g_seconds = 60, g_procs = 4, g_threads = 3, g_stuck_s = 60, g_fault_pct, g_verbose;
static uint64_t g_deadline_ms;

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void count(int op, long ret)
{
	int e;

	if (!S)
		return;
	__atomic_fetch_add(&S->calls[op], 1, __ATOMIC_RELAXED);
	if (ret >= 0) {
		__atomic_fetch_add(&S->ok[op], 1, __ATOMIC_RELAXED);
		return;
	}
	e = -ret;
	if (e <= 0 || e >= NERR)
		e = NERR - 1;
	__atomic_fetch_add(&S->err[op][e], 1, __ATOMIC_RELAXED);
}

/* ---------------------------------------------------------------- PRNG */

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint64_t mix(uint64_t a, uint64_t b)
{
	uint64_t s = a ^ (b * 0xd1342543de82ef95ULL);

	return splitmix(&s);
}

/* ---------------------------------------------------------------- layouts */

enum fkind { F_PLAIN, F_DLOC, F_RLOC };

/* The payload layout of a field list, when it is known to be valid. */
struct layout {
	int known;
	int n;
	uint8_t kind[MAXF];
	uint16_t size[MAXF];
};

struct variant {
	char text[256];
	struct layout lay;
};

static struct variant pool[NNAMES][NVARIANTS];

/* ---------------------------------------------------------------- worker state */

struct perf_h {
	int fd;			/* -1 once closed (the ring may stay mapped) */
	void *ring;
	size_t len;
	int link;
};

struct reg_ent {
	int slot;		/* data fd slot it was registered on */
	int idx;
	uint64_t addr;
	int bit;
	struct layout lay;
};

struct tctx {
	uint64_t rng;
	int tid;		/* watchdog slot, -1 in children */
	struct tslot *ts;	/* NULL in children */
	int depth;		/* 0: worker thread, 1: forked child, 2: grandchild or exec'd */
	int force_fd;		/* an fd received over SCM_RIGHTS, or -1 */
	int nth_fd;		/* /proc/thread-self/fail-nth, or -1 */
	int fds[NOWN];
	struct reg_ent regs[MAXREGS];
	int nregs;
	struct perf_h perf[NPERF];
	int nperf;
	char multi[MAXMULTI][64];
	int nmulti;
	unsigned char *io;	/* 3 pages: RW, RW, PROT_NONE */
	unsigned char *pay;	/* PAYMAX bytes */
	struct iovec *iov;	/* IOV_MAX + 2 */
};

/* The worker process (one per process, so a global). */
static struct {
	int idx;
	uint64_t seed;
	int shared_fds[NSHARED];
	unsigned char *priv, *shared, *ro, *vol, *filesh, *filepriv, *guard, *big;
	int file_fd;
	int prog[2];
	int map_fd;
	int kid_lock;
	pid_t kids[MAX_CHILDREN];
	int nkids;
	int short_threads;
	struct wslot *ws;
} W;

static char g_exe_argv_seed[32];

static uint64_t rnd64(struct tctx *t)
{
	return splitmix(&t->rng);
}

static unsigned int rnd(struct tctx *t, unsigned int n)
{
	return n ? (unsigned int)(rnd64(t) % n) : 0;
}

static int chance(struct tctx *t, unsigned int pct)
{
	return rnd(t, 100) < pct;
}

static void fill_random(struct tctx *t, void *p, size_t n)
{
	unsigned char *c = p;

	for (size_t i = 0; i < n; i++) {
		if ((i & 7) == 0) {
			uint64_t v = rnd64(t);
			size_t k = n - i < 8 ? n - i : 8;

			memcpy(c + i, &v, k);
			i += k - 1;
		}
	}
}

#include "fuzz_gen.h"
#include "fuzz_abi_ops.h"
#include "fuzz_consumer_ops.h"
#include "fuzz_proc_ops.h"

/* ---------------------------------------------------------------- worker */

static void *map_or_die(void *addr, size_t len, int prot, int flags, int fd)
{
	void *p = mmap(addr, len, prot, flags, fd, 0);

	if (p == MAP_FAILED) {
		dprintf(2, "# fuzz_test: worker %d: mmap: %s\n", W.idx, strerror(errno));
		_exit(3);
	}
	return p;
}

/* The worker's memory: enable words of every kind, the guard page, the big buffer. */
static void worker_memory(void)
{
	const int anon = MAP_PRIVATE | MAP_ANONYMOUS;
	char path[64];

	W.priv = map_or_die(NULL, PG, PROT_READ | PROT_WRITE, anon, -1);
	W.shared = map_or_die(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1);
	W.ro = map_or_die(NULL, PG, PROT_READ, anon, -1);
	W.guard = map_or_die(NULL, PG, PROT_NONE, anon, -1);
	/* 16 reserved pages; only the first 4 are ever remapped, always with MAP_FIXED */
	W.vol = map_or_die(NULL, 16 * PG, PROT_NONE, anon, -1);
	map_or_die(W.vol, 4 * PG, PROT_READ | PROT_WRITE, anon | MAP_FIXED, -1);
	W.big = map_or_die(NULL, BIGLEN, PROT_READ | PROT_WRITE, anon, -1);
	snprintf(path, sizeof(path), "/tmp/fuzz_test.%d.%d", getpid(), W.idx);
	W.file_fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (W.file_fd < 0 || ftruncate(W.file_fd, 2 * PG)) {
		dprintf(2, "# fuzz_test: worker %d: %s: %s\n", W.idx, path, strerror(errno));
		_exit(3);
	}
	unlink(path);
	W.filesh = map_or_die(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, W.file_fd);
	W.filepriv = map_or_die(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE, W.file_fd);
	for (int i = 0; i < NSHARED; i++) {
		W.shared_fds[i] = open(DATA_FILE, O_RDWR);
		if (!W.ws)
			continue;		/* an exec'd child: it counts nothing */
		if (W.shared_fds[i] >= 0)
			W.ws->data_fds++;
		else if (!W.ws->data_errno)
			W.ws->data_errno = errno;
	}
}

struct main_thread {
	pthread_t th;
	struct tctx *t;
};

static void *main_thread_fn(void *arg)
{
	struct tctx *t = arg;

	run_loop(t, 0);
	return NULL;
}

static void set_slot(struct tctx *t, int op)
{
	if (t->ts) {
		__atomic_store_n(&t->ts->start_ms, now_ms(), __ATOMIC_RELAXED);
		__atomic_store_n(&t->ts->op, op, __ATOMIC_RELEASE);
	}
}

static void worker_main(int idx)
{
	struct main_thread th[MAX_MAIN_THREADS];
	struct tctx *t0;

	setpgid(0, 0);			/* its descendants can be killed as one group */
	signal(SIGALRM, SIG_DFL);	/* the master's handler is not for workers */
	alarm(g_seconds + 3 * g_stuck_s + 120);
	W.idx = idx;
	W.seed = mix(g_seed, idx + 1);
	W.ws = &S->w[idx];
	for (int i = 0; i < MAX_THREADS; i++)
		W.ws->t[i].op = OP_IDLE;
	for (int i = 0; i < g_threads; i++)
		__atomic_store_n(&W.ws->t[i].active, 1, __ATOMIC_RELEASE);
	t0 = ctx_new(mix(W.seed, 0), 0);
	set_slot(t0, OP_SETUP);
	worker_memory();
	load_progs();
	for (int i = 1; i < g_threads; i++) {
		th[i].t = ctx_new(mix(W.seed, i), i);
		if (pthread_create(&th[i].th, NULL, main_thread_fn, th[i].t)) {
			dprintf(2, "# fuzz_test: worker %d: pthread_create failed\n", idx);
			_exit(3);
		}
	}
	set_slot(t0, OP_IDLE);
	run_loop(t0, 0);
	set_slot(t0, OP_JOIN);
	for (int i = 1; i < g_threads; i++) {
		pthread_join(th[i].th, NULL);
		th[i].t->ts->op = OP_IDLE;
	}
	while (__atomic_load_n(&W.short_threads, __ATOMIC_RELAXED) > 0)
		usleep(10000);
	set_slot(t0, OP_REAP);
	reap_kids(1);
	set_slot(t0, OP_IDLE);
	_exit(0);
}

/* "--child MASTERSEED SEED FD MASK": the image a vfork'd child execs; a few ops, then exit. */
static int exec_child(int argc, char **argv)
{
	struct tctx *t;
	int fd;

	alarm(20);
	if (argc < 6)
		_exit(2);
	g_excluded = strtoull(argv[5], NULL, 16);
	init_op_total();
	g_seed = strtoull(argv[2], NULL, 10);
	fd = atoi(argv[4]);
	W.idx = -1;
	g_deadline_ms = now_ms() + 15000;
	{
		struct tctx boot = { .rng = mix(g_seed, 0x706f6f6c) };

		for (int k = 0; k < NNAMES; k++)
			for (int v = 0; v < NVARIANTS; v++)
				gen_args(&boot, pool[k][v].text, sizeof(pool[k][v].text), &pool[k][v].lay, 0);
	}
	worker_memory();
	W.prog[0] = W.prog[1] = W.map_fd = -1;
	t = ctx_new(strtoull(argv[3], NULL, 10), -1);
	t->depth = 2;
	if (fd >= 0 && fcntl(fd, F_GETFD) >= 0)
		W.shared_fds[1] = fd;		/* the inherited file */
	t->force_fd = W.shared_fds[1];
	for (int n = 1 + rnd(t, 8); n > 0; n--)
		run_op(t, pick_op(t));
	_exit(0);
}

/* ---------------------------------------------------------------- master */

/* The checks, one TAP result each, in this order; the last one only with -f. */
enum check { CK_DATA_FDS, CK_WORKERS, CK_CALLED, CK_CORE, CK_EVENTS, CK_REFS, CK_FAULTS, NCHECKS };

static const char *const check_names[NCHECKS] = {
	[CK_DATA_FDS] = "every worker opened its shared user_events_data fds",
	[CK_WORKERS] = "every worker exited normally, none stuck",
	[CK_CALLED] = "every weighted operation was called",
	[CK_CORE] = "the core operations succeeded",
	[CK_EVENTS] = "no user event left after the cleanup",
	[CK_REFS] = "no module reference left after the cleanup",
	[CK_FAULTS] = "injected faults made module calls fail",
};

static int g_nchecks;		/* the plan: NCHECKS with -f, else one fewer */

/* What the master's alarm prints: every result failed (none is printed before the alarm goes). */
static char g_alarm_msg[1024];
static int g_alarm_len;

static void on_master_alarm(int sig)
{
	(void)sig;
	if (write(1, g_alarm_msg, g_alarm_len) < 0) {
		/* nothing more to do */
	}
	_exit(1);
}

/* Prints the plan, @why and every result failed; returns the exit status. */
static int fail_all(const char *why)
{
	printf("1..%d\n# %s\n", g_nchecks, why);
	for (int ck = 0; ck < g_nchecks; ck++)
		printf("not ok %d fuzz_test: %s\n", ck + 1, check_names[ck]);
	return 1;
}

/* Prints check @ck's result, skipped for @skip if given; returns 1 if it failed. */
static int result(int ck, int ok, const char *skip)
{
	printf("%sok %d fuzz_test: %s%s%s\n", ok ? "" : "not ", ck + 1, check_names[ck],
	       skip ? " # SKIP " : "", skip ?: "");
	return !ok;
}

#include "fuzz_cleanup.h"

static void print_stats(void)
{
	uint64_t total[NERR] = { 0 }, calls = 0;

	printf("# %-11s %8s %8s  errnos\n", "op", "calls", "ok");
	for (int op = 0; op < NOPS; op++) {
		char line[512];
		size_t len = 0;
		int shown = 0;

		if (!S->calls[op])
			continue;
		calls += S->calls[op];
		for (int pass = 0; pass < 8; pass++) {
			int best = -1;

			for (int e = 1; e < NERR; e++) {
				if (!S->err[op][e] || (best >= 0 && S->err[op][e] <= S->err[op][best]))
					continue;
				best = e;
			}
			if (best < 0)
				break;
			len += snprintf(line + len, sizeof(line) - len, " %s %llu",
					best == NERR - 1 ? "other" : strerrorname_np(best) ?: "?",
					(unsigned long long)S->err[op][best]);
			total[best] += S->err[op][best];
			S->err[op][best] = 0;	/* shown; the totals keep it */
			shown++;
		}
		for (int e = 1; e < NERR; e++)
			total[e] += S->err[op][e];
		line[len] = '\0';
		printf("# %-11s %8llu %8llu %s%s\n", op_names[op], (unsigned long long)S->calls[op],
		       (unsigned long long)S->ok[op], line, shown == 8 ? " ..." : "");
	}
	printf("# errnos over all ops:");
	for (int e = 1; e < NERR; e++)
		if (total[e])
			printf(" %s %llu", e == NERR - 1 ? "other" : strerrorname_np(e) ?: "?",
			       (unsigned long long)total[e]);
	printf("\n# %llu operations", (unsigned long long)calls);
	if (g_fault_pct)
		printf(", fault injection armed %llu times", (unsigned long long)S->fault_armed);
	printf("\n");
}

/* Check 1: every worker opened both its shared data fds (worker_memory()). */
static int check_data_fds(void)
{
	int ok = 1;

	for (int i = 0; i < g_procs; i++) {
		const struct wslot *w = &S->w[i];

		if (w->data_fds == NSHARED)
			continue;
		ok = 0;
		printf("# worker %d opened %d of its %d shared fds on %s: %s\n", i, w->data_fds,
		       NSHARED, DATA_FILE,
		       w->data_errno ? strerror(w->data_errno) : "it did not get that far");
	}
	if (ok)
		printf("# %d workers opened %d shared fds on %s\n", g_procs, g_procs * NSHARED,
		       DATA_FILE);
	return ok;
}

/*
 * Check 3: every operation of weight > 0 was called. Each turn of a worker's main or
 * short-lived thread picks an operation with probability weight / op_total (children's picks
 * only add calls), so an operation was due turns * weight / op_total times; one that was due
 * MIN_DUE times is required, one due fewer times is listed if it was never called.
 */
static int check_called(void)
{
	uint64_t turns = 0, fewest = UINT64_MAX;
	int ok = 1, least = -1;

	for (int i = 0; i < g_procs; i++)
		for (int j = 0; j < MAX_THREADS; j++)
			turns += S->w[i].t[j].nops;
	/* an SCM that hands the fd back to its own thread runs one more op in the turn */
	turns = turns > S->calls[OP_SCM] ? turns - S->calls[OP_SCM] : 0;
	for (int op = 0; op < NOPS; op++) {
		double due = (double)turns * op_weights[op] / op_total;

		if (!op_weights[op])
			continue;
		if (S->calls[op] < fewest) {
			fewest = S->calls[op];
			least = op;
		}
		if (S->calls[op])
			continue;
		if (due < MIN_DUE) {
			printf("# %s never called, but only %.1f calls were due: not required\n",
			       op_names[op], due);
			continue;
		}
		ok = 0;
		printf("# %s (weight %d of %d) never called, %.0f calls were due\n", op_names[op],
		       op_weights[op], op_total, due);
	}
	printf("# %llu turns of the workers' threads", (unsigned long long)turns);
	if (least >= 0)
		printf("; fewest calls: %s %llu (weight %d of %d, %.0f due)", op_names[least],
		       (unsigned long long)fewest, op_weights[least], op_total,
		       (double)turns * op_weights[least] / op_total);
	printf("\n");
	return ok;
}

/*
 * Check 4: what every healthy run succeeds in, at least once: REG, UNREG, WRITE and WRITEV
 * (records to registered indexes) and OPEN of user_events_data. Each is required when it is
 * in this run's mix, and REG too for the three that need a registration.
 */
static int check_core(void)
{
	static const int core[] = { OP_REG, OP_UNREG, OP_WRITE, OP_WRITEV, OP_OPEN };
	int ok = 1, any = 0;

	printf("# core operations, succeeded of calls:");
	for (int i = 0; i < (int)(sizeof(core) / sizeof(core[0])); i++) {
		int op = core[i];

		if (!op_weights[op] || (op != OP_REG && op != OP_OPEN && !op_weights[OP_REG]))
			continue;
		printf("%s %s %llu of %llu%s", any ? "," : "", op_names[op],
		       (unsigned long long)S->ok[op], (unsigned long long)S->calls[op],
		       S->ok[op] ? "" : " (none)");
		any = 1;
		ok &= S->ok[op] > 0;
	}
	printf("%s\n", any ? "" : " none required (left out with -x)");
	return ok;
}

/*
 * Check 7 (-f): the faults armed reached module calls and made them fail. After each armed
 * call fail-nth is read back (disarm_fault()): 0 says the armed fault point was reached and
 * failed during that very call, which is then evidence if the call failed too. Every
 * allocation of a REG, UNREG or DEL ioctl after the fd lookup is the module's or made for it.
 */
static int check_faults(void)
{
	uint64_t armed = 0, injected = 0, failed = 0, enomem = 0;

	printf("# calls armed/injected/failed:");
	for (int op = 0; op < NOPS; op++) {
		if (!S->fault_armed_op[op])
			continue;
		printf(" %s %llu/%llu/%llu", op_names[op],
		       (unsigned long long)S->fault_armed_op[op],
		       (unsigned long long)S->fault_injected[op],
		       (unsigned long long)S->fault_failed[op]);
		armed += S->fault_armed_op[op];
		injected += S->fault_injected[op];
		failed += S->fault_failed[op];
		enomem += S->fault_enomem[op];
	}
	printf("%s\n", armed ? "" : " none");
	printf("# -f %d: %llu calls armed, injected into %llu (fail-nth read back 0)", g_fault_pct,
	       (unsigned long long)armed, (unsigned long long)injected);
	printf(", %llu of these failed (ENOMEM %llu)\n", (unsigned long long)failed,
	       (unsigned long long)enomem);
	return failed > 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: fuzz_test [-s SEED] [-t SECONDS] [-p PROCS] [-j THREADS] [-w STUCK] [-f PCT] "
			"[-x OP[,OP...]] [-v]\n");
	exit(2);
}

/* The op a stuck worker is in: its longest-running thread's. */
static int stuck_op(int w, int *tid, uint64_t *ms)
{
	uint64_t now = now_ms(), worst = 0;
	int op = OP_IDLE;

	*tid = -1;
	for (int i = 0; i < MAX_THREADS; i++) {
		struct tslot *s = &S->w[w].t[i];
		int o = __atomic_load_n(&s->op, __ATOMIC_ACQUIRE);
		uint64_t start = __atomic_load_n(&s->start_ms, __ATOMIC_RELAXED);

		if (!__atomic_load_n(&s->active, __ATOMIC_ACQUIRE) || o == OP_IDLE)
			continue;
		/* An op that started after @now was read has run for no time. */
		if (start <= now && now - start >= worst) {
			worst = now - start;
			op = o;
			*tid = i;
		}
	}
	*ms = worst;
	return op;
}

int main(int argc, char **argv)
{
	char saved_max[32] = "", saved_gfp[8] = "", saved_verbose[8] = "", why[1024] = "";
	pid_t pids[MAX_WORKERS];
	int status[MAX_WORKERS], done[MAX_WORKERS] = { 0 }, flagged[MAX_WORKERS] = { 0 };
	int opt, alive, failed = 0, workers_failed = 0, seed_set = 0, secs_set = 0;
	int events_left, refs;
	uint64_t killed_at = 0, reaped_ms;
	const char *env;

	if (argc >= 2 && !strcmp(argv[1], "--child"))
		return exec_child(argc, argv);
	while ((opt = getopt(argc, argv, "s:t:p:j:w:f:x:v")) != -1) {
		switch (opt) {
		case 's': g_seed = strtoull(optarg, NULL, 0); seed_set = 1; break;
		case 't': g_seconds = atoi(optarg); secs_set = 1; break;
		case 'p': g_procs = atoi(optarg); break;
		case 'j': g_threads = atoi(optarg); break;
		case 'w': g_stuck_s = atoi(optarg); break;
		case 'f': g_fault_pct = atoi(optarg); break;
		case 'x':
			if (exclude_ops(optarg))
				usage();
			break;
		case 'v': g_verbose++; break;
		default: usage();
		}
	}
	if (!seed_set && (env = getenv("FUZZ_SEED")) && *env) {
		g_seed = strtoull(env, NULL, 0);
		seed_set = 1;
	}
	if (!secs_set && (env = getenv("FUZZ_SECONDS")) && *env)
		g_seconds = atoi(env);
	if (!seed_set) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		g_seed = (uint64_t)ts.tv_sec * 1000003ULL ^ (uint64_t)ts.tv_nsec ^ (uint64_t)getpid() << 32;
		g_seed %= 1000000000000ULL;
	}
	if (g_seconds < 1 || g_procs < 1 || g_procs > MAX_WORKERS || g_threads < 1 ||
	    g_threads > MAX_MAIN_THREADS || g_stuck_s < 5 || g_fault_pct < 0 || g_fault_pct > 100)
		usage();
	init_op_total();
	if (!op_total)
		usage();
	/* The stuck bound (-w) is for the reference machine: scaled to this run (rue_helpers.h). */
	g_stuck_s = rue_bound_ms(g_stuck_s * 1000LL) / 1000;
	setvbuf(stdout, NULL, _IONBF, 0);
	g_nchecks = g_fault_pct ? NCHECKS : NCHECKS - 1;
	printf("# fuzz_test: seed %llu\n", (unsigned long long)g_seed);
	printf("TAP version 13\n");
	printf("# reproduce: fuzz_test -s %llu -t %d -p %d -j %d%s%.0d", (unsigned long long)g_seed,
	       g_seconds, g_procs, g_threads, g_fault_pct ? " -f " : "", g_fault_pct);
	for (int op = 0, first = 1; op < NOPS; op++) {
		if (g_excluded & 1ULL << op) {
			printf("%s%s", first ? " -x " : ",", op_names[op]);
			first = 0;
		}
	}
	printf("\n");
	/*
	 * A whole-program skip is one skipped result under a plan of one, as before the checks
	 * were split (the plan is declared once it is known which it is).
	 */
	if (!exists(DATA_FILE)) {
		printf("1..1\n");
		printf("ok 1 fuzz_test # SKIP user_events is not installed (no %s)\n", DATA_FILE);
		return 0;
	}
	if (geteuid() != 0)
		return fail_all("must be run as root");
	snprintf(g_exe_argv_seed, sizeof(g_exe_argv_seed), "%llu", (unsigned long long)g_seed);
	S = mmap(NULL, sizeof(*S), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (S == MAP_FAILED) {
		snprintf(why, sizeof(why), "mmap: %s", strerror(errno));
		return fail_all(why);
	}
	{
		/* the pool's field lists, from the seed: the same in every process */
		struct tctx boot = { .rng = mix(g_seed, 0x706f6f6c) };

		for (int k = 0; k < NNAMES; k++)
			for (int v = 0; v < NVARIANTS; v++)
				gen_args(&boot, pool[k][v].text, sizeof(pool[k][v].text), &pool[k][v].lay, 0);
		for (int k = 0; k < 3; k++)
			printf("# pool fz_%d: \"%s\" | \"%s\" | \"%s\"\n", k, pool[k][0].text, pool[k][1].text,
			       pool[k][2].text);
	}
	if (g_fault_pct) {
		if (read_file(FAILSLAB "ignore-gfp-wait", saved_gfp, sizeof(saved_gfp)) <= 0 ||
		    read_file(FAILSLAB "verbose", saved_verbose, sizeof(saved_verbose)) <= 0)
			saved_gfp[0] = saved_verbose[0] = '\0';
		if (!exists(FAIL_NTH) || !saved_gfp[0] || write_file(FAILSLAB "ignore-gfp-wait", "N") ||
		    write_file(FAILSLAB "verbose", "0")) {
			/* A run without the faults asked for is not this run: skip, never pass. */
			printf("1..1\n");
			printf("ok 1 fuzz_test # SKIP -f: no fault injection in this kernel\n");
			return 0;
		}
	}
	printf("1..%d\n", g_nchecks);
	g_alarm_len = snprintf(g_alarm_msg, sizeof(g_alarm_msg),
			       "# fuzz_test: the master itself is stuck (cleanup?)\n");
	for (int ck = 0; ck < g_nchecks; ck++) {
		size_t room = sizeof(g_alarm_msg) - g_alarm_len;

		g_alarm_len += snprintf(g_alarm_msg + g_alarm_len, room,
					"not ok %d fuzz_test: %s\n", ck + 1, check_names[ck]);
	}
	signal(SIGPIPE, SIG_IGN);
	signal(SIGALRM, on_master_alarm);
	alarm(g_seconds + 2 * g_stuck_s + 300);
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	if (read_file(SYSCTL_MAX, saved_max, sizeof(saved_max)) <= 0)
		saved_max[0] = '\0';
	if (mkdir(TRACEFS "instances/" INSTANCE, 0755) && errno != EEXIST)
		printf("# no trace instance: %s\n", strerror(errno));

	g_deadline_ms = now_ms() + (uint64_t)g_seconds * 1000;
	for (int i = 0; i < g_procs; i++) {
		pids[i] = fork();
		if (pids[i] == 0)
			worker_main(i);
		if (pids[i] < 0) {
			printf("# fork of worker %d: %s\n", i, strerror(errno));
			workers_failed = 1;
			done[i] = 1;
			status[i] = 0;
			continue;
		}
		S->w[i].pid = pids[i];
	}
	alive = 0;
	for (int i = 0; i < g_procs; i++)
		alive += !done[i];

	/* The watchdog: reap workers (and orphans: the master is their subreaper). */
	while (alive > 0) {
		uint64_t now = now_ms();
		int st;
		pid_t pid;

		while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
			for (int i = 0; i < g_procs; i++) {
				if (pids[i] == pid && !done[i]) {
					done[i] = 1;
					status[i] = st;
					alive--;
				}
			}
		}
		for (int i = 0; i < g_procs; i++) {
			int tid, op;
			uint64_t ms;

			if (done[i] || flagged[i])
				continue;
			op = stuck_op(i, &tid, &ms);
			if (ms > (uint64_t)g_stuck_s * 1000 ||
			    now > g_deadline_ms + (uint64_t)(2 * g_stuck_s + 60) * 1000) {
				printf("# worker %d stuck in %s (thread %d, for %llu s)\n", i, op_names[op], tid,
				       (unsigned long long)(ms / 1000));
				flagged[i] = 1;
				workers_failed = 1;
				S->stop = 1;
				kill(-pids[i], SIGKILL);
				kill(pids[i], SIGKILL);
				killed_at = now;
			}
		}
		if (killed_at && now > killed_at + 30000) {
			printf("# %d worker(s) cannot be reaped (blocked in the kernel?)\n", alive);
			break;
		}
		usleep(100000);
	}
	for (int i = 0; i < g_procs; i++) {
		if (!done[i] || flagged[i])
			continue;
		if (WIFEXITED(status[i]) && WEXITSTATUS(status[i]) == 0)
			continue;
		workers_failed = 1;
		if (WIFSIGNALED(status[i])) {
			int tid, op = stuck_op(i, &tid, &(uint64_t){ 0 });

			printf("# worker %d killed by signal %d (%s) in %s\n", i, WTERMSIG(status[i]),
			       strsignal(WTERMSIG(status[i])), op_names[op]);
		} else {
			printf("# worker %d exited with status %d\n", i, WEXITSTATUS(status[i]));
		}
	}
	/*
	 * Orphans of the workers (children whose parent thread died) share their
	 * group and are reparented here (the master is a subreaper): all must be
	 * gone before the cleanup, or one could enable an event behind it.
	 */
	for (int waits = 0;;) {
		pid_t pid;

		for (int k = 0; k < g_procs; k++)
			if (pids[k] > 0)
				kill(-pids[k], SIGKILL);
		pid = waitpid(-1, NULL, WNOHANG);
		if (pid < 0 && errno == ECHILD)
			break;
		if (pid > 0)
			continue;
		if (++waits == 600) {
			printf("# orphans of the workers cannot be reaped (blocked in the kernel?)\n");
			workers_failed = 1;
			break;
		}
		usleep(50000);
	}

	reaped_ms = now_ms();
	if (saved_max[0])
		write_file(SYSCTL_MAX, saved_max);
	if (g_fault_pct) {
		write_file(FAILSLAB "ignore-gfp-wait", saved_gfp);
		write_file(FAILSLAB "verbose", saved_verbose);
	}
	events_left = cleanup(why, sizeof(why)) != 0;
	refs = module_refs();
	report_leftovers(refs);
	print_stats();
	printf("# workers reaped %.1f s after the deadline, cleanup took %.1f s\n",
	       ((double)reaped_ms - (double)g_deadline_ms) / 1000, (double)(now_ms() - reaped_ms) / 1000);

	/* The results, each after what shows why; nothing left that could hang. */
	alarm(0);
	printf("# fuzz_test seed %llu: %d workers x %d threads, %d s\n", (unsigned long long)g_seed,
	       g_procs, g_threads, g_seconds);
	failed |= result(CK_DATA_FDS, check_data_fds(), NULL);
	if (workers_failed)
		printf("# a worker failed: the \"#\" lines after the pool's say how\n");
	else
		printf("# every worker exited with status 0, none stuck, every orphan reaped\n");
	failed |= result(CK_WORKERS, !workers_failed, NULL);
	failed |= result(CK_CALLED, check_called(), NULL);
	failed |= result(CK_CORE, check_core(), NULL);
	if (events_left)
		printf("# cleanup: %s\n", why);
	else
		printf("# cleanup: dynamic_events lists no user event\n");
	failed |= result(CK_EVENTS, !events_left, NULL);
	if (refs == -ENOENT) {
		result(CK_REFS, 1, "rust_user_events is not loaded (another kernel's user_events)");
	} else {
		if (refs < 0)
			printf("# cannot read %srefcnt\n", MODULE_DIR);
		else
			printf("# rust_user_events refcnt %d after the cleanup\n", refs);
		failed |= result(CK_REFS, refs == 0, NULL);
	}
	if (g_fault_pct)
		failed |= result(CK_FAULTS, check_faults(), NULL);
	return failed;
}
