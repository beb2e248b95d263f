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
 * so the TAP output (one test, "ok 1 fuzz_test ...") is written by hand.
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
 * the instance is removed and kernel.user_events_max is restored. The test
 * passes if every worker exited normally, none got stuck, and no fz* event is
 * left. Counts per operation and errno are printed as "#" lines.
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
	struct tslot t[MAX_THREADS];
};

/* One MAP_SHARED page set, made by the master before the workers fork. */
struct shared {
	uint64_t calls[NOPS];
	uint64_t ok[NOPS];
	uint64_t err[NOPS][NERR];
	uint64_t fault_armed;
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

/* ---------------------------------------------------------------- grammar */

static const struct { const char *type; int size; } scalars[] = {
	{ "u8", 1 }, { "s8", 1 }, { "u16", 2 }, { "s16", 2 }, { "u32", 4 }, { "s32", 4 },
	{ "u64", 8 }, { "s64", 8 }, { "char", 1 }, { "unsigned char", 1 }, { "int", 4 },
	{ "unsigned int", 4 }, { "short", 2 }, { "unsigned short", 2 },
};

static const char *const loc_types[] = {
	"__data_loc char[]", "__rel_loc char[]", "__data_loc unsigned char[]", "__rel_loc unsigned char[]",
};

static const char *const bad_types[] = {
	"long", "unsigned long", "bool", "__u32", "pid_t", "u32[4]", "char [4]", "unsigned",
	"char[]", "char[0]", "char[1025]", "char[aa]", "char[0x0000000000001]", "__data_loc",
	"__rel_loc u32", "__data_loc cpumask_t", "struct", "u128", "char[-1]", "char[+8]",
	"__data_loc char", "char[20]xyz", "unsigned char[010]", "struct  foo",
};

static const char *const field_names[MAXF] = { "a", "b", "c", "d", "e", "f", "g", "h" };

#define APPEND(...)                                                         \
	do {                                                                \
		int _n = snprintf(out + len, room > len ? room - len : 0, __VA_ARGS__); \
		if (_n > 0)                                                 \
			len = len + _n < room ? len + _n : room;            \
	} while (0)

/* One valid field, described into @lay; returns the text length. */
static size_t gen_field(struct tctx *t, char *out, size_t room, int i, struct layout *lay)
{
	size_t len = 0;
	unsigned int k = rnd(t, 100), n;

	if (k < 55) {
		n = rnd(t, sizeof(scalars) / sizeof(scalars[0]));
		APPEND("%s %s", scalars[n].type, field_names[i]);
		lay->kind[i] = F_PLAIN;
		lay->size[i] = scalars[n].size;
	} else if (k < 72) {
		const char *u = chance(t, 30) ? "unsigned " : "";

		n = 1 + rnd(t, chance(t, 90) ? 32 : 1024);
		if (chance(t, 10))
			APPEND("%schar[0x%x] %s", u, n, field_names[i]);
		else if (chance(t, 10) && n < 0777)
			APPEND("%schar[0%o] %s", u, n, field_names[i]);
		else
			APPEND("%schar[%u] %s", u, n, field_names[i]);
		lay->kind[i] = F_PLAIN;
		lay->size[i] = n;
	} else if (k < 90) {
		n = rnd(t, 4);
		APPEND("%s %s", loc_types[n], field_names[i]);
		lay->kind[i] = strstr(loc_types[n], "__rel_loc") ? F_RLOC : F_DLOC;
		lay->size[i] = 4;
	} else {
		n = 1 + rnd(t, 48);
		APPEND("struct %s %s %u", chance(t, 50) ? "foo" : "bar_t", field_names[i], n);
		lay->kind[i] = F_PLAIN;
		lay->size[i] = n;
	}
	return len;
}

/*
 * A field list into @out (NUL-terminated) and its layout into @lay; with
 * @mutate, sometimes broken in one of the ways the grammar cares about.
 */
static void gen_args(struct tctx *t, char *out, size_t room, struct layout *lay, int mutate)
{
	size_t len = 0;
	int n = rnd(t, 100) < 12 ? 0 : 1 + rnd(t, chance(t, 80) ? 3 : MAXF);

	memset(lay, 0, sizeof(*lay));
	lay->known = 1;
	lay->n = n;
	out[0] = '\0';
	for (int i = 0; i < n; i++) {
		if (i) {
			unsigned int s = rnd(t, 100);

			APPEND("%s", s < 70 ? "; " : s < 90 ? ";" : ";  ");
		}
		len += gen_field(t, out + len, room - len, i, lay);
	}
	if (!mutate || !chance(t, 25))
		return;
	switch (rnd(t, 11)) {
	case 0:
		APPEND(";");			/* valid, and matches */
		return;
	case 1:
		APPEND(";;");			/* parses, never matches itself */
		return;
	case 2:
		APPEND(" ");			/* trailing space */
		break;
	case 3: {				/* a double space or a tab in a field */
		char *sp = strchr(out, ' ');

		if (sp && len + 1 < room) {
			if (chance(t, 50)) {
				memmove(sp + 1, sp, len - (sp - out) + 1);
				len++;
			} else {
				*sp = '\t';
			}
		}
		break;
	}
	case 4:
		if (len)
			out[rnd(t, len)] = (char)(1 + rnd(t, 255));
		break;
	case 5:
		if (len) {
			len = rnd(t, len);
			out[len] = '\0';
		}
		break;
	case 6:
		APPEND("%s%s %s", n ? "; " : "", bad_types[rnd(t, sizeof(bad_types) / sizeof(bad_types[0]))],
		       field_names[n < MAXF ? n : 0]);
		break;
	case 7:
		APPEND("%su32 %s 4", n ? "; " : "", field_names[n < MAXF ? n : 0]);
		break;
	case 8:
		APPEND("%sstruct foo %s", n ? "; " : "", field_names[n < MAXF ? n : 0]);
		break;
	case 9:
		APPEND("%sstruct foo %s 0", n ? "; " : "", field_names[n < MAXF ? n : 0]);
		break;
	default:
		APPEND("%su32 %s", n ? "; " : "", n ? "a" : "a; u32 a");	/* duplicate names */
		break;
	}
	lay->known = 0;
}

static void pool_name(char *buf, size_t len, int k)
{
	snprintf(buf, len, "fz_%d", k);
}

/* A random name: "fzr_" and bytes that are neither NUL, space, newline, '/' nor ':'. */
static void random_name(struct tctx *t, char *buf, size_t room, size_t n)
{
	static const char set[] = "abcdefghijklmnopqrstuvwxyz0123456789_.-*%?[\\\t\xc3\xa9\xff";
	size_t i = 0;

	if (room < 6)
		return;
	memcpy(buf, "fzr_", 4);
	for (i = 4; i < 4 + n && i + 1 < room; i++)
		buf[i] = chance(t, 90) ? set[rnd(t, 37)] : set[rnd(t, sizeof(set) - 1)];
	buf[i] = '\0';
}

/*
 * The name_args of a REG, NUL-terminated in @out; @lay gets the layout when it
 * is known. Mostly pool names with their field lists, so that events collide.
 */
static void gen_reg_text(struct tctx *t, char *out, size_t room, struct layout *lay, int *pool_idx)
{
	char name[600], args[300];
	size_t len = 0;
	unsigned int r = rnd(t, 100);
	int k = rnd(t, NNAMES);

	*pool_idx = -1;
	memset(lay, 0, sizeof(*lay));
	if (chance(t, 70)) {
		const struct variant *v = &pool[k][rnd(t, NVARIANTS)];

		snprintf(args, sizeof(args), "%s", v->text);
		*lay = v->lay;
	} else {
		gen_args(t, args, sizeof(args), lay, 1);
	}
	if (r < 80) {
		pool_name(name, sizeof(name), k);
		*pool_idx = k;
	} else if (r < 88) {
		random_name(t, name, sizeof(name), 1 + rnd(t, 12));
	} else if (r < 91) {
		snprintf(name, sizeof(name), "fz_%d:%s", k, chance(t, 50) ? "" : "persist");
	} else if (r < 93) {
		snprintf(name, sizeof(name), "u:fz_%d", k);
	} else if (r < 95) {
		random_name(t, name, sizeof(name), 200 + rnd(t, 400));
	} else if (r < 96) {
		name[0] = '\0';
	} else {
		/* fzr_ then random bytes: spaces split it anywhere. */
		size_t n = 1 + rnd(t, 40), i;

		memcpy(name, "fzr_", 4);
		for (i = 4; i < 4 + n; i++) {
			char c = (char)(1 + rnd(t, 255));

			name[i] = (c == '\n' || c == '/') ? 'x' : c;
		}
		name[i] = '\0';
		lay->known = 0;
	}
	if (args[0])
		APPEND("%s%s%s", name, chance(t, 90) ? " " : chance(t, 50) ? "  " : "\t", args);
	else
		APPEND("%s", name);
	if (len + 1 >= room)
		lay->known = 0;
}

/* ---------------------------------------------------------------- small helpers */

static long err(long ret)
{
	return ret < 0 ? -errno : ret;
}

static int slot_fd(struct tctx *t, int slot)
{
	if (slot == -2)
		return t->force_fd;
	if (slot < 0)
		return -1;
	if (slot < NOWN)
		return t->fds[slot];
	return W.shared_fds[slot - NOWN];
}

/* A data fd to use, mostly a live one; @slot gets its slot or -1. */
static int pick_fd(struct tctx *t, int *slot)
{
	unsigned int r = rnd(t, 100);

	*slot = -1;
	if (t->force_fd >= 0 && r < 70) {
		*slot = -2;
		return t->force_fd;
	}
	if (r < 50) {
		*slot = rnd(t, NOWN);
		if (t->fds[*slot] >= 0)
			return t->fds[*slot];
	}
	if (r < 97) {
		*slot = NOWN + rnd(t, NSHARED);
		return W.shared_fds[*slot - NOWN];
	}
	return r < 99 ? -1 : 4093;
}

static int write_str(const char *path, int flags, const char *s, size_t len)
{
	int fd = open(path, O_WRONLY | flags);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, s, len);
	n = n < 0 ? -errno : 0;
	close(fd);
	return n;
}

/* Reads up to @max bytes of @path in chunks (no allocation); bytes or -errno. */
static long read_path(const char *path, int flags, size_t max)
{
	char buf[4096];
	long total = 0;
	ssize_t n;
	int fd = open(path, O_RDONLY | flags);

	if (fd < 0)
		return -errno;
	while ((size_t)total < max && (n = read(fd, buf, sizeof(buf))) > 0)
		total += n;
	if (total == 0 && n < 0)
		total = -errno;
	close(fd);
	return total;
}

/* Reads a whole file into a heap buffer (master and threads only). */
static char *slurp(const char *path, size_t max)
{
	size_t cap = 65536, len = 0;
	char *buf = malloc(cap + 1), *nb;
	ssize_t n;
	int fd = open(path, O_RDONLY);

	if (!buf || fd < 0) {
		free(buf);
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	while ((n = read(fd, buf + len, cap - len)) > 0) {
		len += n;
		if (len == cap) {
			if (cap >= max)
				break;
			nb = realloc(buf, cap * 2 + 1);
			if (!nb)
				break;
			buf = nb;
			cap *= 2;
		}
	}
	close(fd);
	buf[len] = '\0';
	return buf;
}

static void lock_kids(void)
{
	while (__atomic_exchange_n(&W.kid_lock, 1, __ATOMIC_ACQUIRE))
		sched_yield();
}

static void unlock_kids(void)
{
	__atomic_store_n(&W.kid_lock, 0, __ATOMIC_RELEASE);
}

/* Reaps finished children; with @all, waits for every one (killing stragglers). */
static void reap_kids(int all)
{
	uint64_t until = now_ms() + 35000;
	int killed = 0;

	for (;;) {
		int left;

		lock_kids();
		for (int i = 0; i < W.nkids;) {
			int st;

			if (waitpid(W.kids[i], &st, killed ? 0 : WNOHANG) != 0) {
				W.kids[i] = W.kids[--W.nkids];
				continue;
			}
			i++;
		}
		left = W.nkids;
		unlock_kids();
		if (!all || !left)
			return;
		if (!killed && now_ms() > until) {
			lock_kids();
			for (int i = 0; i < W.nkids; i++)
				kill(W.kids[i], SIGKILL);
			unlock_kids();
			killed = 1;
		}
		usleep(10000);
	}
}

/* Room for one more child, or 0 (after trying to reap). */
static int kid_room(void)
{
	int n;

	lock_kids();
	n = W.nkids;
	unlock_kids();
	if (n >= MAX_CHILDREN) {
		reap_kids(0);
		lock_kids();
		n = W.nkids;
		unlock_kids();
	}
	return n < MAX_CHILDREN;
}

static void add_kid(pid_t pid)
{
	lock_kids();
	if (W.nkids < MAX_CHILDREN) {
		W.kids[W.nkids++] = pid;
		pid = 0;
	}
	unlock_kids();
	if (pid > 0)
		waitpid(pid, NULL, 0);	/* over the cap (a race): wait for it now */
}

/* ---------------------------------------------------------------- enable addresses */

/* An enable address of one of many kinds; never one of the fuzzer's own data. */
static uint64_t pick_addr(struct tctx *t, int size)
{
	unsigned int r = rnd(t, 100);
	int align = size == 4 || size == 8 ? size : 8;
	uint64_t word = chance(t, 80) ? rnd(t, 32) : rnd(t, PG / 8);
	uint64_t off = word * 8 + (align == 4 && chance(t, 50) ? 4 : 0);

	if (r < 36)
		return (uintptr_t)W.priv + off;
	if (r < 52)
		return (uintptr_t)W.shared + off;
	if (r < 62)
		return (uintptr_t)W.vol + rnd(t, 4) * PG + off;
	if (r < 67)
		return (uintptr_t)W.filesh + rnd(t, 2) * PG + off;
	if (r < 71)
		return (uintptr_t)W.filepriv + rnd(t, 2) * PG + off;
	if (r < 76)
		return (uintptr_t)W.ro + off;
	if (r < 81)
		return (uintptr_t)W.priv + off + 1 + rnd(t, 3);	/* misaligned */
	if (r < 84)
		return (uintptr_t)W.guard + off;
	if (r < 87)
		return 0x2000 + off;			/* below any mapping */
	if (r < 90)
		return KADDR + off;
	if (r < 92)
		return 0x7ffffffff000ULL + (off & 0xff8);	/* the never-mapped top page */
	if (r < 94)
		return 0x8000000000000000ULL;		/* non-canonical */
	if (r < 96)
		return ((uintptr_t)&pick_addr) & ~7ULL;	/* read-only text */
	if (r < 97)
		return 0;
	return rnd64(t) & ~(uint64_t)(align - 1);
}

/* ---------------------------------------------------------------- fault injection */

static int maybe_arm_fault(struct tctx *t)
{
	char text[16];
	int len;

	if (!g_fault_pct || t->nth_fd < 0 || !chance(t, g_fault_pct))
		return 0;
	len = snprintf(text, sizeof(text), "%u", 1 + rnd(t, 24));
	if (pwrite(t->nth_fd, text, len, 0) != len)
		return 0;
	if (S)
		__atomic_fetch_add(&S->fault_armed, 1, __ATOMIC_RELAXED);
	return 1;
}

static void disarm_fault(struct tctx *t, int armed)
{
	if (armed && pwrite(t->nth_fd, "0", 1, 0) != 1) {
		/* nothing to do: the next arm overwrites it */
	}
}

/* ---------------------------------------------------------------- REG / UNREG / DEL */

static void remember_reg(struct tctx *t, int slot, int idx, uint64_t addr, int bit, const struct layout *lay)
{
	struct reg_ent *e;

	if (t->nregs < MAXREGS)
		e = &t->regs[t->nregs++];
	else
		e = &t->regs[rnd(t, MAXREGS)];	/* forget one: its enabler stays until exit */
	e->slot = slot;
	e->idx = idx;
	e->addr = addr;
	e->bit = bit;
	e->lay = *lay;
}

static long op_reg(struct tctx *t)
{
	unsigned char *guardp = t->io + 2 * PG;
	char *name = (char *)t->io + PG;
	struct user_reg *reg;
	struct layout lay;
	uint64_t name_ptr = (uintptr_t)name, addr, arg;
	uint32_t size = sizeof(*reg);
	unsigned int r;
	int slot, fd = pick_fd(t, &slot), esize, bit, pidx, armed;
	uint16_t flags;
	long ret;

	/* a third of them valid in every respect but the event they name */
	int clean = chance(t, 35);

	gen_reg_text(t, name, PG - 1, &lay, &pidx);
	if (clean && pidx < 0) {
		const struct variant *v = &pool[pidx = rnd(t, NNAMES)][rnd(t, NVARIANTS)];

		snprintf(name, PG - 1, "fz_%d%s%s", pidx, v->text[0] ? " " : "", v->text);
		lay = v->lay;
	}
	r = clean ? 99 : rnd(t, 100);
	if (r < 2) {
		name_ptr = 0;
	} else if (r < 3) {
		name_ptr = 0x3000;
	} else if (r < 4) {
		name_ptr = KADDR;
	} else if (r < 6) {
		size_t l = 1 + rnd(t, 64);	/* runs into the guard page without a NUL */

		memset(guardp - l, 'x', l);
		name_ptr = (uintptr_t)(guardp - l);
	} else if (r < 7 && !clean) {
		size_t l = 500 + rnd(t, 30);	/* around MAX_EVENT_DESC */

		memset(name, 'a', l);
		memcpy(name, "fzr_", 4);
		name[l] = '\0';
	}

	r = clean ? rnd(t, 90) : rnd(t, 100);
	esize = r < 55 ? 4 : r < 92 ? 8 : (int)(unsigned char[]){ 0, 1, 2, 3, 5, 16, 255 }[rnd(t, 7)];
	bit = clean || chance(t, 94) ? (int)rnd(t, esize == 4 ? 32 : 64) :
			      (int)(unsigned char[]){ 32, 63, 64, 127, 255 }[rnd(t, 5)];
	addr = pick_addr(t, esize);
	if (clean)
		addr = (uintptr_t)(chance(t, 60) ? W.priv : W.shared) + rnd(t, 32) * 8 +
		       (esize == 4 && chance(t, 50) ? 4 : 0);
	r = clean ? rnd(t, 95) : rnd(t, 100);
	flags = r < 62 ? 0 : r < 76 ? USER_EVENT_REG_PERSIST : r < 90 ? USER_EVENT_REG_MULTI_FORMAT :
		r < 95 ? USER_EVENT_REG_PERSIST | USER_EVENT_REG_MULTI_FORMAT :
			 (uint16_t[]){ 4, 8, 0x8000, 0xffff, 7 }[rnd(t, 5)];

	r = clean ? 0 : rnd(t, 100);
	reg = (struct user_reg *)t->io;
	memset(t->io, 0, PG);
	if (r < 80) {
		size = sizeof(*reg);
	} else if (r < 84) {
		size = (uint32_t[]){ 0, 4, 8, 27 }[rnd(t, 4)];
	} else if (r < 89) {
		size = sizeof(*reg) + 1 + rnd(t, 100);	/* zero tail */
	} else if (r < 92) {
		size = sizeof(*reg) + 1 + rnd(t, 100);	/* non-zero tail */
		t->io[size - 1] = 1 + rnd(t, 255);
	} else if (r < 94) {
		size = PG;
	} else if (r < 96) {
		size = (uint32_t[]){ PG + 1, 0x10000, 0xffffffff }[rnd(t, 3)];
	} else {
		/* placed against the guard page: whole, or running into it */
		size = sizeof(*reg);
		reg = (struct user_reg *)(guardp - sizeof(*reg) + (chance(t, 50) ? 0 : 1 + rnd(t, 27)));
	}
	arg = (uintptr_t)reg;
	if ((unsigned char *)reg + sizeof(*reg) <= guardp) {
		reg->size = size;
		reg->enable_bit = bit;
		reg->enable_size = esize;
		reg->flags = flags;
		reg->enable_addr = addr;
		reg->name_args = name_ptr;
	} else {
		/* only the fields that fit before the guard page */
		struct user_reg tmp = { .size = size, .enable_bit = bit, .enable_size = esize, .flags = flags,
					.enable_addr = addr, .name_args = name_ptr };

		memcpy(reg, &tmp, guardp - (unsigned char *)reg);
	}
	if (!clean && chance(t, 1))
		arg = chance(t, 50) ? 0 : KADDR;

	armed = maybe_arm_fault(t);
	ret = err(ioctl(fd, DIAG_IOCSREG, (void *)(uintptr_t)arg));
	disarm_fault(t, armed);
	if (ret == 0 && slot != -1 && arg == (uintptr_t)t->io)
		remember_reg(t, slot, reg->write_index, addr, bit, &lay);
	if (g_verbose > 1 && ret == 0)
		dprintf(2, "REG %s\n", name);
	(void)pidx;
	return ret;
}

/* A REG of random bytes, with sometimes a valid name and size. */
static long op_reg_raw(struct tctx *t)
{
	unsigned char *buf = t->io;
	struct user_reg *reg = (struct user_reg *)buf;
	int slot, fd = pick_fd(t, &slot);

	fill_random(t, buf, 64 + rnd(t, 64));
	if (chance(t, 60))
		reg->size = sizeof(*reg) + (chance(t, 20) ? rnd(t, 32) : 0);
	if (chance(t, 50)) {
		snprintf((char *)t->io + PG, 64, "fz_%u u32 a", rnd(t, NNAMES));
		reg->name_args = (uintptr_t)(t->io + PG);
	}
	if (chance(t, 30)) {
		reg->enable_size = chance(t, 50) ? 4 : 8;
		reg->enable_bit &= 31;
	}
	return err(ioctl(fd, DIAG_IOCSREG, buf));
}

static long op_unreg(struct tctx *t)
{
	unsigned char *guardp = t->io + 2 * PG;
	struct user_unreg *u = (struct user_unreg *)t->io;
	int slot, fd = pick_fd(t, &slot), ei = -1, armed;
	unsigned int r;
	long ret;

	memset(t->io, 0, PG);
	u->size = sizeof(*u);
	if (t->nregs && chance(t, 75)) {
		ei = rnd(t, t->nregs);
		u->disable_addr = t->regs[ei].addr;
		u->disable_bit = t->regs[ei].bit;
		if (chance(t, 5)) {
			u->disable_bit ^= 1;
			ei = -1;
		}
	} else {
		int esize = chance(t, 50) ? 4 : 8;

		u->disable_addr = pick_addr(t, esize);
		u->disable_bit = rnd(t, chance(t, 95) ? 64 : 256);
	}
	r = rnd(t, 100);
	if (r < 3) {
		u->__reserved = 1 + rnd(t, 255);
	} else if (r < 6) {
		u->__reserved2 = 1 + rnd(t, 0xffff);
	} else if (r < 9) {
		u->size = (uint32_t[]){ 0, 8, 15 }[rnd(t, 3)];
	} else if (r < 12) {
		u->size = sizeof(*u) + 1 + rnd(t, 64);
		if (chance(t, 50))
			t->io[u->size - 1] = 1;
	} else if (r < 14) {
		u->size = (uint32_t[]){ PG, PG + 1, 0xffffffff }[rnd(t, 3)];
	} else if (r < 16) {
		struct user_unreg tmp = *u;

		u = (struct user_unreg *)(guardp - sizeof(*u) + rnd(t, 8));
		memcpy(u, &tmp, guardp - (unsigned char *)u);
	}
	if (r < 16)
		ei = -1;
	armed = maybe_arm_fault(t);
	ret = err(ioctl(fd, DIAG_IOCSUNREG, u));
	disarm_fault(t, armed);
	if (ret == 0 && ei >= 0)
		t->regs[ei] = t->regs[--t->nregs];
	return ret;
}

static long op_del(struct tctx *t)
{
	char *name = (char *)t->io + PG;
	unsigned char *guardp = t->io + 2 * PG;
	unsigned int r = rnd(t, 100);
	int slot, fd = pick_fd(t, &slot), k = rnd(t, NNAMES), armed;
	void *arg = name;
	long ret;

	if (r < 70)
		pool_name(name, 64, k);
	else if (r < 78)
		random_name(t, name, 64, 1 + rnd(t, 6));
	else if (r < 83)
		snprintf(name, 300, "fz_%d %s", k, pool[k][0].text);
	else if (r < 86)
		snprintf(name, 64, "fz_%d.%x", k, rnd(t, 16));
	else if (r < 88)
		name[0] = '\0';
	else if (r < 90) {
		memset(name, 'z', 520);
		name[520] = '\0';
	} else if (r < 92)
		arg = NULL;
	else if (r < 94)
		arg = (void *)0x3000;
	else if (r < 96) {
		memset(guardp - 8, 'f', 8);
		arg = guardp - 8;
	} else
		snprintf(name, 64, "u:fz_%d", k);
	armed = maybe_arm_fault(t);
	ret = err(ioctl(fd, DIAG_IOCSDEL, arg));
	disarm_fault(t, armed);
	return ret;
}

/* ---------------------------------------------------------------- writes */

/*
 * A payload for @lay at @p: valid when the layout is known (static fields,
 * then the strings __data_loc/__rel_loc fields point at), sometimes broken.
 */
static size_t build_payload(struct tctx *t, const struct layout *lay, unsigned char *p, size_t room)
{
	size_t off = 0, locs[MAXF];
	int kinds[MAXF], nloc = 0;

	if (!lay || !lay->known) {
		size_t n = rnd(t, 80);

		fill_random(t, p, n);
		return n;
	}
	for (int i = 0; i < lay->n; i++) {
		if (lay->kind[i] != F_PLAIN) {
			locs[nloc] = off;
			kinds[nloc++] = lay->kind[i];
			memset(p + off, 0, 4);
			off += 4;
		} else {
			fill_random(t, p + off, lay->size[i]);
			off += lay->size[i];
		}
	}
	for (int j = 0; j < nloc; j++) {
		size_t l = chance(t, 4) ? 200 + rnd(t, 3000) : rnd(t, 24);
		uint32_t val;

		if (off + l + 64 > room)
			l = 0;
		for (size_t i = 0; i < l; i++)
			p[off + i] = 'a' + rnd(t, 26);
		p[off + l] = '\0';
		if (kinds[j] == F_DLOC)
			val = (uint32_t)(l + 1) << 16 | (uint32_t)(8 + off);
		else
			val = (uint32_t)(l + 1) << 16 | (uint32_t)(off - (locs[j] + 4));
		memcpy(p + locs[j], &val, 4);
		off += l + 1;
	}
	if (chance(t, 15)) {
		switch (rnd(t, 5)) {
		case 0:
			if (nloc) {
				uint32_t v = rnd64(t);

				memcpy(p + locs[rnd(t, nloc)], &v, 4);
			}
			break;
		case 1:
			if (nloc && off)
				p[off - 1] = 'x';		/* no NUL */
			break;
		case 2:
			off = rnd(t, off + 1);			/* short */
			break;
		case 3: {
			size_t extra = rnd(t, 64);		/* trailing bytes */

			fill_random(t, p + off, extra);
			off += extra;
			break;
		}
		default:
			if (nloc) {
				uint32_t v = (uint32_t)(8 + off);	/* size 0 */

				memcpy(p + locs[rnd(t, nloc)], &v, 4);
			}
			break;
		}
	}
	return off;
}

/* Chooses fd, index and payload; the record [index][payload] lands in t->pay. */
static int prepare_write(struct tctx *t, int *fd, size_t *len)
{
	const struct layout *lay = NULL;
	int idx, slot;
	unsigned int r = rnd(t, 100);

	if (t->nregs && r < 82) {
		struct reg_ent *e = &t->regs[rnd(t, t->nregs)];

		*fd = slot_fd(t, e->slot);
		if (*fd < 0)
			*fd = pick_fd(t, &slot);
		idx = e->idx;
		lay = &e->lay;
	} else {
		*fd = pick_fd(t, &slot);
		idx = rnd(t, 8);
	}
	r = rnd(t, 100);
	if (r < 3)
		idx = -1 - (int)rnd(t, 4);
	else if (r < 4)
		idx = INT_MIN;
	else if (r < 7)
		idx += 1 + rnd(t, 100);
	memcpy(t->pay, &idx, 4);
	*len = 4 + build_payload(t, lay, t->pay + 4, PAYMAX - 4);
	return idx;
}

static long op_write(struct tctx *t)
{
	unsigned int r = rnd(t, 100);
	size_t len;
	int fd, idx = prepare_write(t, &fd, &len);
	unsigned char *guardp = t->io + 2 * PG;

	if (r < 60)
		return err(write(fd, t->pay, len));
	if (r < 64)
		return err(write(fd, t->pay, rnd(t, 4)));		/* no whole index */
	if (r < 67)
		return err(pwrite(fd, t->pay, len, 1 + rnd(t, PG)));
	if (r < 71) {
		static const uint64_t bad[] = { 0, 0x3000, KADDR, 0x8000000000000000ULL };

		return err(write(fd, (void *)(uintptr_t)bad[rnd(t, 4)], 4 + rnd(t, 64)));
	}
	if (r < 75) {
		size_t in = len < PG ? len : PG;			/* runs into the guard page */
		unsigned char *p = guardp - in + (chance(t, 30) ? 0 : rnd(t, in + 1));

		memcpy(p, t->pay, guardp - p);
		return err(write(fd, p, in));
	}
	if (r < 86) {
		static const size_t sizes[] = { 8184, 8185, 8188, 8192, 9000, 16384, 65536 };

		len = sizes[rnd(t, 7)] + 4;
		memcpy(W.big, &idx, 4);
		return err(write(fd, W.big, len));
	}
	if (r < 90) {
		memcpy(W.big, &idx, 4);
		return err(write(fd, W.big, 1024 * 1024 + rnd(t, 16)));
	}
	if (r < 95) {
		/* from memory the fuzzer may have remapped, truncated or protected */
		unsigned int w = rnd(t, 3);
		unsigned char *src = w == 0 ? W.ro : w == 1 ? W.filesh : W.vol;

		return err(write(fd, src + rnd(t, 64), 4 + rnd(t, 128)));
	}
	return err(write(fd, t->pay, 0));
}

static long op_writev(struct tctx *t)
{
	static const uint64_t bad[] = { 0, 0x3000, KADDR, 0x8000000000000000ULL };
	struct iovec *iov = t->iov;
	unsigned int r = rnd(t, 100);
	size_t len, pos = 0;
	int fd, n = 0, idx = prepare_write(t, &fd, &len);

	if (r < 50 || (r >= 80 && r < 85)) {
		/* 1..5 pieces cut at random points, the index too */
		int pieces = 1 + rnd(t, 5);

		for (int i = 0; i < pieces && pos < len; i++) {
			size_t l = i == pieces - 1 ? len - pos : rnd(t, len - pos + 1);

			if (r >= 80 && chance(t, 50))
				iov[n++] = (struct iovec){ NULL, 0 };	/* empty ones in between */
			iov[n++] = (struct iovec){ t->pay + pos, l };
			pos += l;
		}
		if (pos < len)
			iov[n++] = (struct iovec){ t->pay + pos, len - pos };
		return err(writev(fd, iov, n));
	}
	if (r < 65) {
		/* many small pieces, up to IOV_MAX */
		int want = 1 + rnd(t, IOV_MAX);

		for (n = 0; n < want; n++) {
			size_t l = pos < len ? 1 + rnd(t, 3) : 0;

			if (pos + l > len)
				l = len - pos;
			iov[n] = (struct iovec){ t->pay + pos, l };
			pos += l;
		}
		if (pos < len)
			iov[n - 1].iov_len += len - pos;	/* the pieces are consecutive */
		return err(writev(fd, iov, n));
	}
	if (r < 70) {
		for (n = 0; n <= IOV_MAX; n++)
			iov[n] = (struct iovec){ t->pay, n ? 0 : len };
		return err(writev(fd, iov, IOV_MAX + 1));		/* EINVAL */
	}
	if (r < 80) {
		/* one faulting piece */
		int at = rnd(t, 3);

		iov[0] = (struct iovec){ t->pay, at == 0 ? 2 : 4 };
		iov[1] = (struct iovec){ t->pay + iov[0].iov_len, len - iov[0].iov_len };
		iov[2] = (struct iovec){ t->pay, 8 };
		iov[at] = (struct iovec){ (void *)(uintptr_t)(chance(t, 30) ? (uintptr_t)(t->io + 2 * PG) : bad[rnd(t, 4)]),
					  1 + rnd(t, 64) };
		return err(writev(fd, iov, 3));
	}
	if (r < 90) {
		static const size_t sizes[] = { 8184, 8185, 9000, 65536, 1024 * 1024 };

		iov[0] = (struct iovec){ &idx, 4 };
		iov[1] = (struct iovec){ W.big + 8, sizes[rnd(t, 5)] };
		return err(writev(fd, iov, 2));
	}
	if (r < 96) {
		static const int fl[] = { 0, RWF_NOWAIT, RWF_HIPRI, RWF_DSYNC, RWF_APPEND, 0x40000000 };

		iov[0] = (struct iovec){ t->pay, len };
		return err(pwritev2(fd, iov, 1, chance(t, 70) ? -1 : rnd(t, 3), fl[rnd(t, 6)]));
	}
	iov[0] = (struct iovec){ t->pay, len };
	return err(writev(fd, iov, chance(t, 50) ? 0 : -1));
}

/* ---------------------------------------------------------------- fds */

static long op_open(struct tctx *t)
{
	int slot = rnd(t, NOWN), flags = O_RDWR, armed;
	unsigned int r = rnd(t, 100);
	long ret;

	if (r < 5)
		flags = O_RDONLY;
	else if (r < 8)
		flags = O_WRONLY;
	if (chance(t, 50))
		flags |= O_CLOEXEC;
	if (chance(t, 5))
		flags |= O_NONBLOCK;
	if (t->fds[slot] >= 0)
		close(t->fds[slot]);
	armed = maybe_arm_fault(t);
	ret = err(open(DATA_FILE, flags));
	disarm_fault(t, armed);
	t->fds[slot] = ret >= 0 ? ret : -1;
	return ret;
}

static long op_close(struct tctx *t)
{
	int slot = rnd(t, NOWN);
	long ret;

	if (t->fds[slot] < 0)
		return op_open(t);
	ret = err(close(t->fds[slot]));
	t->fds[slot] = -1;
	return ret;
}

static long op_dup(struct tctx *t)
{
	int a = rnd(t, NOWN), b = rnd(t, NOWN), src;
	unsigned int r = rnd(t, 100);
	long ret;

	src = t->fds[a] >= 0 ? t->fds[a] : W.shared_fds[rnd(t, NSHARED)];
	if (src < 0)
		return -EBADF;
	if (r < 40) {
		if (t->fds[b] >= 0 && t->fds[b] != src)
			close(t->fds[b]);
		ret = err(chance(t, 50) ? dup(src) : fcntl(src, F_DUPFD_CLOEXEC, 0));
		t->fds[b] = ret >= 0 ? ret : -1;
		return ret;
	}
	if (r < 80) {
		if (t->fds[b] < 0 || t->fds[b] == src)
			return -EBADF;
		return err(chance(t, 50) ? dup2(src, t->fds[b]) : dup3(src, t->fds[b], O_CLOEXEC));
	}
	/*
	 * Over a shared fd number: other threads keep using the number, which
	 * now names another user_events_data file; the old one is released.
	 */
	if (t->fds[a] < 0)
		return -EBADF;
	return err(dup2(t->fds[a], W.shared_fds[rnd(t, NSHARED)]));
}

/* ---------------------------------------------------------------- dynamic_events */

static long op_dyn_create(struct tctx *t)
{
	char line[5000], args[300];
	struct layout lay;
	unsigned int r = rnd(t, 100);
	int k = rnd(t, NNAMES), armed, n;
	const char *fields;
	long ret;

	if (chance(t, 70)) {
		fields = pool[k][rnd(t, NVARIANTS)].text;
	} else {
		gen_args(t, args, sizeof(args), &lay, 1);
		fields = args;
	}
	if (r < 70)
		n = snprintf(line, sizeof(line), "u:fz_%d%s%s", k, fields[0] ? " " : "", fields);
	else if (r < 76)
		n = snprintf(line, sizeof(line), "u:   fz_%d %s", k, fields);
	else if (r < 80)
		n = snprintf(line, sizeof(line), "u:fz_%d:flag %s", k, fields);
	else if (r < 84)
		n = snprintf(line, sizeof(line), "u:fz_%d %s # comment", k, fields);
	else if (r < 88)
		n = snprintf(line, sizeof(line), "u:fz_%d %s\nu:fz_%d %s\n", k, fields, (k + 1) % NNAMES,
			     pool[(k + 1) % NNAMES][0].text);
	else if (r < 91)
		n = snprintf(line, sizeof(line), "u:");
	else if (r < 93) {
		memcpy(line, "u:fzr_", 6);
		memset(line + 6, 'q', 4200);			/* longer than a line may be */
		n = 4206;
	} else if (r < 96) {
		n = 2 + 4 + rnd(t, 60);
		memcpy(line, "u:fzr_", 6);
		for (int i = 6; i < n; i++) {
			char c = (char)(1 + rnd(t, 255));

			line[i] = c == '/' || c == '\n' ? ' ' : c;
		}
	} else {
		n = snprintf(line, sizeof(line), "%s fz_%d u32 a", chance(t, 50) ? "p:" : "U:", k);
	}
	if (n < 0 || n >= (int)sizeof(line))
		n = strlen(line);
	armed = maybe_arm_fault(t);
	ret = write_str(TRACEFS "dynamic_events", O_APPEND, line, n);
	disarm_fault(t, armed);
	return ret;
}

static long op_dyn_delete(struct tctx *t)
{
	char line[400];
	unsigned int r = rnd(t, 100);
	int k = rnd(t, NNAMES), armed;
	const char *fields = pool[k][rnd(t, NVARIANTS)].text;
	long ret;

	if (r < 25)
		snprintf(line, sizeof(line), "-:fz_%d", k);
	else if (r < 35)
		snprintf(line, sizeof(line), "-:user_events/fz_%d", k);
	else if (r < 40)
		snprintf(line, sizeof(line), "-:user_events_multi/fz_%d", k);
	else if (r < 65)
		snprintf(line, sizeof(line), "!u:fz_%d%s%s", k, fields[0] ? " " : "", fields);
	else if (r < 72)
		snprintf(line, sizeof(line), "!u:user_events/fz_%d%s%s", k, fields[0] ? " " : "", fields);
	else if (r < 78)
		snprintf(line, sizeof(line), "!u:fz_%d u32 a", k);
	else if (r < 82)
		snprintf(line, sizeof(line), "-:u:fz_%d", k);
	else if (r < 86)
		snprintf(line, sizeof(line), "-:fz_%d.%x", k, rnd(t, 16));
	else if (r < 90)
		snprintf(line, sizeof(line), "!x:fz_%d", k);
	else if (r < 94)
		snprintf(line, sizeof(line), "-:%s", chance(t, 50) ? "" : "/");
	else
		snprintf(line, sizeof(line), "-:nosys/fz_%d", k);
	armed = maybe_arm_fault(t);
	ret = write_str(TRACEFS "dynamic_events", O_APPEND, line, strlen(line));
	disarm_fault(t, armed);
	return ret;
}

static long op_dyn_trunc(struct tctx *t)
{
	int fd = open(TRACEFS "dynamic_events", O_WRONLY | O_TRUNC);

	(void)t;
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

/* ---------------------------------------------------------------- tracefs */

/* Refreshes this thread's list of user_events_multi tracepoints named fz*. */
static void refresh_multi(struct tctx *t)
{
	DIR *d = opendir(TRACEFS "events/user_events_multi");
	struct dirent *de;

	t->nmulti = 0;
	if (!d)
		return;
	while ((de = readdir(d)) && t->nmulti < MAXMULTI) {
		if (strncmp(de->d_name, "fz", 2) || strlen(de->d_name) >= sizeof(t->multi[0]))
			continue;
		strcpy(t->multi[t->nmulti++], de->d_name);
	}
	closedir(d);
}

/* An event directory "events/<system>/<name>" (relative), mostly a pool name. */
static void pick_event_dir(struct tctx *t, char *buf, size_t len)
{
	unsigned int r = rnd(t, 100);

	if (t->depth == 0 && chance(t, 5))
		refresh_multi(t);
	if (r < 12 && t->nmulti)
		snprintf(buf, len, "events/user_events_multi/%s", t->multi[rnd(t, t->nmulti)]);
	else if (r < 96)
		snprintf(buf, len, "events/user_events/fz_%u", rnd(t, NNAMES));
	else
		snprintf(buf, len, "events/user_events/fzr_%c", 'a' + rnd(t, 26));
}

static const char *const filters[] = {
	"a > 3", "a == 1 || b != 2", "a ~ \"fz*\"", "common_pid > 0", "b < 5 && c > 1", "a & 1",
	"((a", "0", "a > 0x10", "a == \"x\"", "nofield == 1", "c ~ \"*a*\"",
};

static const char *const triggers[] = {
	"stacktrace", "hist:keys=common_pid", "hist:keys=a", "enable_event:user_events:fz_%d",
	"disable_event:user_events:fz_%d", "hist:keys=common_pid.execname:vals=hitcount",
};
#define NTRIGGERS (sizeof(triggers) / sizeof(triggers[0]))

static long op_ftrace(struct tctx *t)
{
	char dir[160], path[300], text[200];
	const char *base = chance(t, 70) ? TRACEFS : INSTANCE_DIR;
	unsigned int r = rnd(t, 100);

	pick_event_dir(t, dir, sizeof(dir));
	if (r < 38) {
		snprintf(path, sizeof(path), "%s%s/enable", base, dir);
		return write_str(path, O_TRUNC, "1", 1);
	}
	if (r < 68) {
		snprintf(path, sizeof(path), "%s%s/enable", base, dir);
		return write_str(path, O_TRUNC, "0", 1);
	}
	if (r < 78) {
		const char *f = filters[rnd(t, sizeof(filters) / sizeof(filters[0]))];

		snprintf(path, sizeof(path), "%s%s/filter", base, dir);
		return write_str(path, O_TRUNC, f, strlen(f));
	}
	if (r < 88) {
		snprintf(path, sizeof(path), "%s%s/filter", base, dir);
		return write_str(path, O_TRUNC, "0", 1);
	}
	if (r < 95) {
		snprintf(path, sizeof(path), "%sset_event", base);
		snprintf(text, sizeof(text), "%suser_events:fz_%u\n", chance(t, 50) ? "!" : "", rnd(t, NNAMES));
		return write_str(path, O_APPEND, text, strlen(text));
	}
	if (r < 97) {
		snprintf(path, sizeof(path), "%sevents/user_events/enable", base);
		return write_str(path, O_TRUNC, chance(t, 40) ? "1" : "0", 1);
	}
	snprintf(path, sizeof(path), "%s%s/enable", base, dir);
	return write_str(path, O_TRUNC, chance(t, 50) ? "2" : "x", 1);
}

/* The id of user_events/fz_@n (its tracefs "id"), or 0. */
static int fz_id(unsigned int n)
{
	char path[160], buf[32];

	snprintf(path, sizeof(path), TRACEFS "events/user_events/fz_%u/id", n);
	return read_file(path, buf, sizeof(buf)) > 0 ? atoi(buf) : 0;
}

/* enable_event/disable_event, stacktrace and hist triggers, set or removed. */
static long op_trigger(struct tctx *t)
{
	char dir[160], path[300], text[200];
	const char *base = chance(t, 70) ? TRACEFS : INSTANCE_DIR;
	int remove = chance(t, 45);
	const char *trigger = triggers[rnd(t, NTRIGGERS)];
	unsigned int target = rnd(t, NNAMES);
	long ret;

	pick_event_dir(t, dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s%s/trigger", base, dir);
	text[0] = '!';
	snprintf(text + remove, sizeof(text) - remove, trigger, (int)target);
	ret = write_str(path, O_APPEND, text, strlen(text));
	if (ret >= 0 && !remove && strstr(trigger, "_event:") && S)
		__atomic_store_n(&S->trigger_target_id[target], fz_id(target), __ATOMIC_RELAXED);
	return ret;
}

/*
 * For a trigger line left at the end, "enable_event:user_events:fz_N:...": whether its target
 * was deleted and re-created while the trigger held it (its id changed since the trigger was
 * last set on it), or the cleanup's removal did not reach the file that lists the trigger.
 */
static void explain_trigger_target(const char *line)
{
	const char *at = strstr(line, "_event:user_events:fz_");
	unsigned int n;
	int then, now;

	if (!at || sscanf(at, "_event:user_events:fz_%u", &n) != 1 || n >= NNAMES || !S)
		return;
	then = __atomic_load_n(&S->trigger_target_id[n], __ATOMIC_RELAXED);
	now = fz_id(n);
	printf("# target fz_%u: id %d when a trigger was last set on it, %d now: %s\n", n, then,
	       now, then != now ? "deleted and re-created under a live trigger"
				: "the removal did not reach the file that lists the trigger");
}

static long op_read(struct tctx *t)
{
	static const char *const roots[] = {
		"user_events_status", "dynamic_events", "user_events_stats", "available_events",
	};
	static const char *const files[] = { "format", "id", "filter", "trigger", "hist", "enable" };
	char dir[160], path[300];
	unsigned int r = rnd(t, 100);

	if (r < 45) {
		snprintf(path, sizeof(path), TRACEFS "%s", roots[rnd(t, r < 40 ? 3 : 4)]);
		return read_path(path, 0, 1 << 20);
	}
	if (r < 80) {
		pick_event_dir(t, dir, sizeof(dir));
		snprintf(path, sizeof(path), "%s%s/%s", chance(t, 80) ? TRACEFS : INSTANCE_DIR, dir,
			 files[rnd(t, 6)]);
		return read_path(path, 0, 64 * 1024);
	}
	if (r < 90)
		return read_path(chance(t, 70) ? TRACEFS "trace" : INSTANCE_DIR "trace", 0, 16 * 1024);
	return read_path(chance(t, 70) ? TRACEFS "trace_pipe" : INSTANCE_DIR "trace_pipe", O_NONBLOCK, 16 * 1024);
}

/*
 * A window with another kernel.user_events_max (EMFILE for everyone's new
 * events), during a few REGs of this thread, then the default again.
 */
static long op_sysctl(struct tctx *t)
{
	static const char *const vals[] = { "0", "1", "16", "100000", "4294967295", "-1", "abc" };
	const char *v = vals[rnd(t, 7)];
	long ret = write_str(SYSCTL_MAX, O_TRUNC, v, strlen(v));

	for (int n = rnd(t, 4); n > 0; n--)
		count(OP_REG, op_reg(t));
	write_str(SYSCTL_MAX, O_TRUNC, "32768", 5);
	return ret;
}

/* ---------------------------------------------------------------- perf and BPF */

static int event_id_of(const char *dir)
{
	char path[300], buf[32];

	snprintf(path, sizeof(path), TRACEFS "%s/id", dir);
	if (read_file(path, buf, sizeof(buf)) <= 0)
		return -1;
	return atoi(buf);
}

static void perf_drop(struct perf_h *h)
{
	if (h->link >= 0)
		close(h->link);
	if (h->ring)
		munmap(h->ring, h->len);
	if (h->fd >= 0)
		close(h->fd);
}

static long op_perf_open(struct tctx *t)
{
	struct perf_event_attr pe;
	struct perf_h *h;
	char dir[160];
	unsigned int r = rnd(t, 100);
	int id, pid = 0, cpu = -1;
	unsigned long flags = chance(t, 80) ? PERF_FLAG_FD_CLOEXEC : 0;
	long fd;

	if (t->nperf == NPERF) {
		int i = rnd(t, NPERF);

		perf_drop(&t->perf[i]);
		t->perf[i] = t->perf[--t->nperf];
	}
	pick_event_dir(t, dir, sizeof(dir));
	id = event_id_of(dir);
	if (id < 0 && !chance(t, 5))
		return -ENOENT;
	memset(&pe, 0, sizeof(pe));
	pe.type = PERF_TYPE_TRACEPOINT;
	pe.size = sizeof(pe);
	pe.config = id < 0 ? 0xffffffffULL : (uint64_t)id;
	pe.sample_period = 1;
	pe.sample_type = PERF_SAMPLE_RAW;
	if (chance(t, 30))
		pe.sample_type |= PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_IP;
	if (chance(t, 5))
		pe.sample_type |= PERF_SAMPLE_CALLCHAIN;
	pe.wakeup_events = 1;
	pe.disabled = chance(t, 20);
	pe.inherit = chance(t, 20);
	pe.exclude_kernel = chance(t, 5);
	if (r < 50) {
		pid = 0;
		cpu = chance(t, 80) ? -1 : (int)rnd(t, 2);
	} else if (r < 85) {
		pid = -1;
		cpu = rnd(t, 2);
	} else if (r < 95) {
		pid = getpid();
	} else {
		pid = -1;				/* EINVAL */
	}
	fd = err(syscall(__NR_perf_event_open, &pe, pid, cpu, -1, flags));
	if (fd < 0)
		return fd;
	h = &t->perf[t->nperf++];
	h->fd = fd;
	h->ring = NULL;
	h->len = 0;
	h->link = -1;
	if (chance(t, 70)) {
		h->len = (1 + (1u << rnd(t, 4))) * PG;
		h->ring = mmap(NULL, h->len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (h->ring == MAP_FAILED) {
			h->ring = NULL;
			h->len = 0;
		}
	}
	return fd;
}

static long op_perf_close(struct tctx *t)
{
	struct perf_h *h;
	int i;

	if (!t->nperf)
		return op_perf_open(t);
	i = rnd(t, t->nperf);
	h = &t->perf[i];
	if (h->fd >= 0 && h->ring && chance(t, 30)) {
		/* the mapping keeps the event alive until it goes too */
		close(h->fd);
		h->fd = -1;
		return 0;
	}
	perf_drop(h);
	t->perf[i] = t->perf[--t->nperf];
	return 0;
}

static struct perf_h *pick_perf(struct tctx *t)
{
	for (int tries = 0; tries < 4 && t->nperf; tries++) {
		struct perf_h *h = &t->perf[rnd(t, t->nperf)];

		if (h->fd >= 0)
			return h;
	}
	return NULL;
}

static long op_perf_ioctl(struct tctx *t)
{
	struct perf_h *h = pick_perf(t), *o;
	uint64_t v;

	if (!h)
		return op_perf_open(t);
	switch (rnd(t, 9)) {
	case 0:
		return err(ioctl(h->fd, PERF_EVENT_IOC_ENABLE, 0));
	case 1:
		return err(ioctl(h->fd, PERF_EVENT_IOC_DISABLE, 0));
	case 2:
		return err(ioctl(h->fd, PERF_EVENT_IOC_RESET, 0));
	case 3:
		return err(ioctl(h->fd, PERF_EVENT_IOC_REFRESH, 1 + rnd(t, 3)));
	case 4:
		v = 1 + rnd(t, 4);
		return err(ioctl(h->fd, PERF_EVENT_IOC_PERIOD, &v));
	case 5:
		return err(ioctl(h->fd, PERF_EVENT_IOC_SET_FILTER,
				 filters[rnd(t, sizeof(filters) / sizeof(filters[0]))]));
	case 6:
		return err(ioctl(h->fd, PERF_EVENT_IOC_ID, &v));
	case 7:
		return err(ioctl(h->fd, PERF_EVENT_IOC_PAUSE_OUTPUT, rnd(t, 2)));
	default:
		o = pick_perf(t);
		return err(ioctl(h->fd, PERF_EVENT_IOC_SET_OUTPUT, o && chance(t, 70) ? o->fd : -1));
	}
}

static long op_perf_read(struct tctx *t)
{
	struct perf_h *h;
	uint64_t count;

	if (!t->nperf)
		return op_perf_open(t);
	h = &t->perf[rnd(t, t->nperf)];
	if (h->ring) {
		struct perf_event_mmap_page *pg = h->ring;
		uint64_t head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE);

		__atomic_store_n(&pg->data_tail, head, __ATOMIC_RELEASE);	/* consume all */
	}
	if (h->fd < 0)
		return 0;
	return err(read(h->fd, &count, sizeof(count)));
}

static int load_prog(const struct bpf_insn *insns, unsigned int n)
{
	union bpf_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.prog_type = BPF_PROG_TYPE_TRACEPOINT;
	attr.insn_cnt = n;
	attr.insns = (uintptr_t)insns;
	attr.license = (uintptr_t)"GPL";
	return sys_bpf(BPF_PROG_LOAD, &attr);
}

/* Program 0 returns 0; program 1 counts into an array map and returns 1. */
static void load_progs(void)
{
	union bpf_attr attr;
	struct bpf_insn ret0[] = {
		INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0),
		INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
	};

	memset(&attr, 0, sizeof(attr));
	attr.map_type = BPF_MAP_TYPE_ARRAY;
	attr.key_size = 4;
	attr.value_size = 8;
	attr.max_entries = 1;
	W.map_fd = sys_bpf(BPF_MAP_CREATE, &attr);
	W.prog[0] = load_prog(ret0, 2);
	if (W.map_fd >= 0) {
		struct bpf_insn count[] = {
			INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_6, 0, 0, 1),
			INSN(BPF_ST | BPF_MEM | BPF_W, BPF_REG_10, 0, -4, 0),
			INSN(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_2, BPF_REG_10, 0, 0),
			INSN(BPF_ALU64 | BPF_ADD | BPF_K, BPF_REG_2, 0, 0, -4),
			INSN(BPF_LD | BPF_DW | BPF_IMM, BPF_REG_1, BPF_PSEUDO_MAP_FD, 0, W.map_fd),
			INSN(0, 0, 0, 0, 0),
			INSN(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_map_lookup_elem),
			INSN(BPF_JMP | BPF_JEQ | BPF_K, BPF_REG_0, 0, 1, 0),
			INSN(BPF_STX | BPF_ATOMIC | BPF_DW, BPF_REG_0, BPF_REG_6, 0, BPF_ADD),
			INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 1),
			INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
		};

		W.prog[1] = load_prog(count, sizeof(count) / sizeof(count[0]));
	} else {
		W.prog[1] = -1;
	}
}

static long op_bpf(struct tctx *t)
{
	struct perf_h *h = pick_perf(t);
	union bpf_attr attr;
	unsigned int r = rnd(t, 100);
	int prog = W.prog[rnd(t, 2)];
	long ret;

	if (!h)
		return op_perf_open(t);
	if (r < 45)
		return err(ioctl(h->fd, PERF_EVENT_IOC_SET_BPF, prog));
	if (r < 75) {
		if (h->link >= 0) {
			close(h->link);
			h->link = -1;
		}
		memset(&attr, 0, sizeof(attr));
		attr.link_create.prog_fd = prog;
		attr.link_create.target_fd = h->fd;
		attr.link_create.attach_type = BPF_PERF_EVENT;
		ret = err(sys_bpf(BPF_LINK_CREATE, &attr));
		if (ret >= 0)
			h->link = ret;
		return ret;
	}
	if (r < 92) {
		if (h->link < 0)
			return -ENOENT;
		ret = err(close(h->link));		/* detaches */
		h->link = -1;
		return ret;
	}
	/* attach a program loaded just for this and closed at once: the event holds it */
	{
		struct bpf_insn ret1[] = {
			INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 1),
			INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
		};
		int p = load_prog(ret1, 2);

		if (p < 0)
			return -errno;
		ret = err(ioctl(h->fd, PERF_EVENT_IOC_SET_BPF, p));
		close(p);
		return ret;
	}
}

/* The rest of the data file's surface: other ioctls, read, lseek, mmap, poll, splice. */
static long op_misc(struct tctx *t)
{
	static const unsigned long cmds[] = {
		0xC0042A00, 0x40042A01, 0x40042A02,	/* the 32-bit numbers */
		_IO('*', 3), _IOWR('*', 0, int), _IOW('*', 1, long long), 0, 0x5401 /* TCGETS */,
		0x541B /* FIONREAD */, 0x5421 /* FIONBIO */,
	};
	int slot, fd = pick_fd(t, &slot), p[2];
	char buf[64];
	long ret;

	switch (rnd(t, 9)) {
	case 0:
		return err(ioctl(fd, chance(t, 70) ? cmds[rnd(t, 10)] : (unsigned long)rnd64(t),
				 chance(t, 50) ? (void *)t->io : (void *)(uintptr_t)rnd64(t)));
	case 1:
		return err(read(fd, buf, sizeof(buf)));
	case 2:
		return err(lseek(fd, rnd(t, 100), rnd(t, 3)));
	case 3: {
		void *m = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

		if (m == MAP_FAILED)
			return -errno;
		munmap(m, PG);
		return 0;
	}
	case 4: {
		struct pollfd pfd = { .fd = fd, .events = POLLIN | POLLOUT };

		return err(poll(&pfd, 1, 0));
	}
	case 5:
		return err(fcntl(fd, F_SETFL, chance(t, 50) ? O_NONBLOCK : 0));
	case 6: {
		/* a record through a pipe: write_iter from kernel pages (ITER_BVEC) */
		size_t len;
		int wfd;

		prepare_write(t, &wfd, &len);
		if (pipe2(p, O_CLOEXEC | O_NONBLOCK))
			return -errno;
		ret = write(p[1], t->pay, len < 4096 ? len : 4096);
		ret = ret < 0 ? -errno : err(splice(p[0], NULL, wfd, NULL, ret, 0));
		close(p[0]);
		close(p[1]);
		return ret;
	}
	case 7: {
		size_t len;
		int wfd;

		prepare_write(t, &wfd, &len);
		if (pwrite(W.file_fd, t->pay, len, 0) < 0)
			return -errno;
		return err(sendfile(wfd, W.file_fd, &(off_t){ 0 }, len));
	}
	default:
		return err(pwrite(fd, t->pay, 4 + rnd(t, 16), 0));
	}
}

/* ---------------------------------------------------------------- memory */

static long op_mmap(struct tctx *t)
{
	unsigned char *p = W.vol + rnd(t, 4) * PG;
	void *m;

	switch (rnd(t, 12)) {
	case 0:
		m = mmap(p, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		return m == MAP_FAILED ? -errno : 0;
	case 1:
		m = mmap(p, PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		return m == MAP_FAILED ? -errno : 0;
	case 2:
		m = mmap(p, PG, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		return m == MAP_FAILED ? -errno : 0;
	case 3:
		return err(mprotect(p, PG, PROT_READ));
	case 4:
		return err(mprotect(p, PG, PROT_READ | PROT_WRITE));
	case 5:
		return err(madvise(p, PG, MADV_DONTNEED));
	case 6:
		return err(madvise(p, PG, chance(t, 50) ? MADV_DONTFORK : MADV_DOFORK));
	case 7:
		return err(madvise(p, PG, chance(t, 50) ? MADV_WIPEONFORK : MADV_KEEPONFORK));
	case 8:
		return err(madvise(chance(t, 50) ? W.priv : W.shared, PG, chance(t, 50) ? MADV_FREE : MADV_COLD));
	case 9:
		return err(ftruncate(W.file_fd, chance(t, 50) ? 0 : rnd(t, 3) * PG));
	case 10:
		return err(fallocate(W.file_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, rnd(t, 2) * PG, PG));
	default:
		return err(ftruncate(W.file_fd, 2 * PG));
	}
}

/* ---------------------------------------------------------------- processes and threads */

static int run_op(struct tctx *t, int op);

static int op_total;

static void init_op_total(void)
{
	op_total = 0;
	for (int op = 0; op < NOPS; op++) {
		if (g_excluded & 1ULL << op)
			op_weights[op] = 0;
		op_total += op_weights[op];
	}
}

/* -x REG,TRIGGER,...: 0, or -1 for an unknown name. */
static int exclude_ops(const char *list)
{
	char buf[512], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", list);
	for (char *n = strtok_r(buf, ",", &save); n; n = strtok_r(NULL, ",", &save)) {
		int op;

		for (op = 0; op < NOPS && strcasecmp(n, op_names[op]); op++)
			;
		if (op == NOPS)
			return -1;
		g_excluded |= 1ULL << op;
	}
	return 0;
}

static int pick_op(struct tctx *t)
{
	int r, op;

	for (int tries = 0; tries < 1000; tries++) {
		r = rnd(t, op_total);
		for (op = 0; r >= op_weights[op]; op++)
			r -= op_weights[op];
		if (t->depth == 0)
			return op;
		/* in children: no threads, no vfork, no sockets, no global knobs */
		if (op == OP_THREAD || op == OP_VFORK || op == OP_VFORK_EXEC || op == OP_SCM || op == OP_SYSCTL ||
		    op == OP_DYN_TRUNC || (op == OP_FORK && t->depth >= 2))
			continue;
		return op;
	}
	return OP_IDLE;		/* every allowed op excluded: nothing to do */
}

/* First thing in a forked child: forget what belongs to the parent. */
static void child_enter(struct tctx *t, uint64_t seed)
{
	alarm(30);
	t->rng = seed;
	t->ts = NULL;			/* the parent thread's watchdog slot */
	t->tid = -1;
	t->depth++;
	t->nth_fd = -1;			/* names the parent's thread */
	t->nperf = 0;			/* the rings are not mapped in a child (VM_DONTCOPY) */
	if (t->depth == 1) {
		W.kid_lock = 0;
		W.nkids = 0;
	}
}

/* The body of a forked child: a few operations, then _exit. Never returns. */
static void child_run(struct tctx *t, int nops)
{
	for (int i = 0; i < nops; i++)
		run_op(t, pick_op(t));
	if (chance(t, 40)) {
		/* unregisters what it knows of, once each (the rest goes with exit) */
		for (int i = 0; i < t->nregs; i++) {
			struct user_unreg u = { .size = sizeof(u), .disable_bit = t->regs[i].bit,
						.disable_addr = t->regs[i].addr };

			count(OP_UNREG, err(ioctl(W.shared_fds[0], DIAG_IOCSUNREG, &u)));
		}
	}
	_exit(0);
}

static long op_fork(struct tctx *t)
{
	uint64_t seed = rnd64(t);
	int nops = 1 + rnd(t, 6);
	pid_t pid;

	if (t->depth == 0 && !kid_room())
		return -EAGAIN;
	pid = fork();
	if (pid == 0) {
		child_enter(t, seed);
		child_run(t, nops);
	}
	if (pid < 0)
		return -errno;
	if (t->depth == 0)
		add_kid(pid);
	else
		waitpid(pid, NULL, 0);		/* a child waits for its own (it has an alarm) */
	return pid;
}

static long op_vfork(struct tctx *t, int exec)
{
	char s_child[32], s_fd[16], s_mask[24];
	char *argv[] = { "fuzz_test", "--child", g_exe_argv_seed, s_child, s_fd, s_mask, NULL };
	char *envp[] = { NULL };
	int fd = -1;
	pid_t pid;

	if (exec && !kid_room())
		return -EAGAIN;
	/* an inherited data fd (without FD_CLOEXEC) for the new image to use */
	for (int i = 0; i < NOWN + NSHARED; i++) {
		int c = slot_fd(t, (i + rnd(t, NOWN + NSHARED)) % (NOWN + NSHARED));

		if (c >= 0 && fcntl(c, F_GETFD) == 0) {
			fd = c;
			break;
		}
	}
	snprintf(s_child, sizeof(s_child), "%llu", (unsigned long long)rnd64(t));
	snprintf(s_fd, sizeof(s_fd), "%d", fd);
	snprintf(s_mask, sizeof(s_mask), "%llx", g_excluded);
	pid = vfork();
	if (pid == 0) {
		if (exec)
			execve("/proc/self/exe", argv, envp);
		_exit(0);
	}
	if (pid < 0)
		return -errno;
	if (exec)
		add_kid(pid);
	else
		waitpid(pid, NULL, 0);
	return pid;
}

static long op_scm(struct tctx *t)
{
	int sv[2], slot, fd = pick_fd(t, &slot), got;
	unsigned int r = rnd(t, 100);
	struct timeval tv = { 5, 0 };
	long ret;
	pid_t pid;

	if (fd < 0)
		return -EBADF;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		return -errno;
	if (r < 55) {
		/* to a child that registers and writes with it */
		uint64_t seed = rnd64(t);

		if (!kid_room()) {
			ret = -EAGAIN;
			goto out;
		}
		pid = fork();
		if (pid == 0) {
			child_enter(t, seed);
			close(sv[0]);
			setsockopt(sv[1], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
			t->force_fd = rue_recv_fd(sv[1], MSG_CMSG_CLOEXEC);
			t->nregs = 0;
			for (int i = 0; i < 2; i++)
				run_op(t, OP_REG);
			child_run(t, 1 + rnd(t, 5));
		}
		if (pid < 0) {
			ret = -errno;
			goto out;
		}
		add_kid(pid);
		ret = rue_send_fd(sv[0], fd, MSG_NOSIGNAL);
	} else if (r < 85) {
		/* to ourselves: a second fd number on the same file, used and closed */
		ret = rue_send_fd(sv[0], fd, MSG_NOSIGNAL);
		got = ret ? -1 : rue_recv_fd(sv[1], MSG_CMSG_CLOEXEC);
		if (got >= 0) {
			int old = t->force_fd;

			t->force_fd = got;
			run_op(t, chance(t, 50) ? OP_REG : OP_WRITE);
			t->force_fd = old;
			close(got);
		}
	} else {
		/* in flight when both ends close */
		ret = rue_send_fd(sv[chance(t, 50)], fd, MSG_NOSIGNAL);
	}
out:
	close(sv[0]);
	close(sv[1]);
	return ret;
}

static struct tctx *ctx_new(uint64_t seed, int tid)
{
	struct tctx *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->rng = seed;
	t->tid = tid;
	t->ts = tid >= 0 && W.ws ? &W.ws->t[tid] : NULL;
	t->force_fd = -1;
	t->nth_fd = -1;			/* opened by the thread itself: it names the thread */
	for (int i = 0; i < NOWN; i++)
		t->fds[i] = -1;
	t->io = mmap(NULL, 3 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	t->pay = malloc(PAYMAX);
	t->iov = malloc((IOV_MAX + 2) * sizeof(struct iovec));
	if (t->io == MAP_FAILED || !t->pay || !t->iov || mprotect(t->io + 2 * PG, PG, PROT_NONE)) {
		dprintf(2, "# fuzz_test: out of memory for a thread context\n");
		_exit(3);
	}
	return t;
}

static void ctx_free(struct tctx *t, int close_fds)
{
	if (close_fds)
		for (int i = 0; i < NOWN; i++)
			if (t->fds[i] >= 0)
				close(t->fds[i]);
	for (int i = 0; i < t->nperf; i++)
		perf_drop(&t->perf[i]);
	if (t->nth_fd >= 0)
		close(t->nth_fd);
	munmap(t->io, 3 * PG);
	free(t->pay);
	free(t->iov);
	free(t);
}

static void run_loop(struct tctx *t, int limit)
{
	if (g_fault_pct && t->depth == 0 && t->nth_fd < 0)
		t->nth_fd = open(FAIL_NTH, O_RDWR | O_CLOEXEC);
	for (int n = 0; !limit || n < limit; n++) {
		if (now_ms() >= g_deadline_ms || (S && __atomic_load_n(&S->stop, __ATOMIC_RELAXED)))
			break;
		run_op(t, pick_op(t));
		if (W.nkids && chance(t, 20))
			reap_kids(0);
	}
}

static void *short_thread(void *arg)
{
	struct tctx *t = arg;

	run_loop(t, 3 + rnd(t, 20));
	if (t->ts) {
		t->ts->op = OP_IDLE;
		__atomic_store_n(&t->ts->active, 0, __ATOMIC_RELEASE);
	}
	/* usually closes its fds; sometimes leaves them (and its enablers) behind */
	ctx_free(t, chance(t, 85));
	__atomic_fetch_sub(&W.short_threads, 1, __ATOMIC_RELAXED);
	return NULL;
}

static long op_thread(struct tctx *t)
{
	pthread_attr_t attr;
	pthread_t th;
	struct tctx *c;
	int tid = -1, ret;

	if (__atomic_load_n(&W.short_threads, __ATOMIC_RELAXED) >= MAX_SHORT_THREADS || !W.ws)
		return -EAGAIN;
	for (int i = g_threads; i < MAX_THREADS; i++) {
		int zero = 0;

		if (__atomic_compare_exchange_n(&W.ws->t[i].active, &zero, 1, 0, __ATOMIC_ACQ_REL,
						__ATOMIC_RELAXED)) {
			tid = i;
			break;
		}
	}
	if (tid < 0)
		return -EAGAIN;
	W.ws->t[tid].op = OP_IDLE;
	c = ctx_new(rnd64(t), tid);
	__atomic_fetch_add(&W.short_threads, 1, __ATOMIC_RELAXED);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	ret = pthread_create(&th, &attr, short_thread, c);
	pthread_attr_destroy(&attr);
	if (ret) {
		__atomic_fetch_sub(&W.short_threads, 1, __ATOMIC_RELAXED);
		__atomic_store_n(&W.ws->t[tid].active, 0, __ATOMIC_RELEASE);
		ctx_free(c, 1);
		return -ret;
	}
	return 0;
}

/* ---------------------------------------------------------------- dispatch */

static int run_op(struct tctx *t, int op)
{
	long ret;

	if (t->ts) {
		__atomic_store_n(&t->ts->start_ms, now_ms(), __ATOMIC_RELAXED);
		__atomic_store_n(&t->ts->op, op, __ATOMIC_RELEASE);
	}
	if (g_verbose) {
		char line[64];
		int n = snprintf(line, sizeof(line), "w%d.t%d.d%d %s\n", W.idx, t->tid, t->depth, op_names[op]);

		if (write(2, line, n) < 0) {
			/* stderr gone: nothing to do */
		}
	}
	switch (op) {
	case OP_REG: ret = op_reg(t); break;
	case OP_REG_RAW: ret = op_reg_raw(t); break;
	case OP_UNREG: ret = op_unreg(t); break;
	case OP_DEL: ret = op_del(t); break;
	case OP_WRITE: ret = op_write(t); break;
	case OP_WRITEV: ret = op_writev(t); break;
	case OP_OPEN: ret = op_open(t); break;
	case OP_CLOSE: ret = op_close(t); break;
	case OP_DUP: ret = op_dup(t); break;
	case OP_FORK: ret = op_fork(t); break;
	case OP_VFORK: ret = op_vfork(t, 0); break;
	case OP_VFORK_EXEC: ret = op_vfork(t, 1); break;
	case OP_THREAD: ret = op_thread(t); break;
	case OP_SCM: ret = op_scm(t); break;
	case OP_DYN_CREATE: ret = op_dyn_create(t); break;
	case OP_DYN_DELETE: ret = op_dyn_delete(t); break;
	case OP_DYN_TRUNC: ret = op_dyn_trunc(t); break;
	case OP_READ: ret = op_read(t); break;
	case OP_FTRACE: ret = op_ftrace(t); break;
	case OP_TRIGGER: ret = op_trigger(t); break;
	case OP_PERF_OPEN: ret = op_perf_open(t); break;
	case OP_PERF_CLOSE: ret = op_perf_close(t); break;
	case OP_PERF_IOCTL: ret = op_perf_ioctl(t); break;
	case OP_PERF_READ: ret = op_perf_read(t); break;
	case OP_BPF: ret = op_bpf(t); break;
	case OP_MMAP: ret = op_mmap(t); break;
	case OP_SYSCTL: ret = op_sysctl(t); break;
	case OP_MISC: ret = op_misc(t); break;
	default: ret = 0; break;
	}
	count(op, ret);
	if (t->ts) {
		__atomic_store_n(&t->ts->op, OP_IDLE, __ATOMIC_RELEASE);
		t->ts->nops++;
	}
	return ret < 0 ? -1 : 0;
}

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
	for (int i = 0; i < NSHARED; i++)
		W.shared_fds[i] = open(DATA_FILE, O_RDWR);
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

static void on_master_alarm(int sig)
{
	static const char msg[] = "# fuzz_test: the master itself is stuck (cleanup?)\nnot ok 1 fuzz_test\n";

	(void)sig;
	if (write(1, msg, sizeof(msg) - 1) < 0) {
		/* nothing more to do */
	}
	_exit(1);
}

/*
 * Removes every trigger @path lists: "!" + the listed command, cut after the
 * target event for enable_event/disable_event; a hist trigger is removed by
 * the spec it was set with, so each known one is tried.
 */
static int clear_triggers(const char *path)
{
	char buf[4096], text[300];
	int ret = 0;

	if (read_file(path, buf, sizeof(buf)) <= 0)
		return 0;
	for (char *l = strtok(buf, "\n"); l; l = strtok(NULL, "\n")) {
		if (l[0] == '#' || l[0] == '\0')
			continue;
		if (!strncmp(l, "hist:", 5)) {
			for (size_t i = 0; i < NTRIGGERS; i++) {
				if (strncmp(triggers[i], "hist:", 5))
					continue;
				text[0] = '!';
				snprintf(text + 1, sizeof(text) - 1, "%s", triggers[i]);
				write_str(path, O_APPEND, text, strlen(text));
			}
			continue;
		}
		/* "enable_event:system:event:unlimited", "stacktrace:unlimited" */
		char *cut = l;

		for (int colons = strncmp(l, "stacktrace", 10) ? 3 : 1; cut && colons; colons--)
			cut = strchr(cut + 1, ':');
		if (cut)
			*cut = '\0';
		snprintf(text, sizeof(text), "!%s", l);
		int r = write_str(path, O_APPEND, text, strlen(text));

		if (r < 0)
			ret = r;
	}
	return ret;
}

/* Disables, unfilters and untriggers the event @system/@name under @base. */
static void quiesce_event(const char *base, const char *system, const char *name)
{
	char path[600];

	snprintf(path, sizeof(path), "%sevents/%s/%s/enable", base, system, name);
	write_str(path, O_TRUNC, "0", 1);
	snprintf(path, sizeof(path), "%sevents/%s/%s/filter", base, system, name);
	write_str(path, O_TRUNC, "0", 1);
	snprintf(path, sizeof(path), "%sevents/%s/%s/trigger", base, system, name);
	clear_triggers(path);
}

/*
 * Disables, unfilters and untriggers every fz* event under @base. Events the workers left are
 * deleted meanwhile, asynchronously, and a directory read may skip an entry when an earlier one
 * goes: the cleanup quiesces what is left busy again by name.
 */
static void quiesce(const char *base)
{
	static const char *const systems[] = { "user_events", "user_events_multi" };
	char path[600];

	for (int s = 0; s < 2; s++) {
		DIR *d;
		struct dirent *de;

		snprintf(path, sizeof(path), "%sevents/%s/enable", base, systems[s]);
		write_str(path, O_TRUNC, "0", 1);
		snprintf(path, sizeof(path), "%sevents/%s", base, systems[s]);
		d = opendir(path);
		if (!d)
			continue;
		while ((de = readdir(d))) {
			if (strncmp(de->d_name, "fz", 2))
				continue;
			quiesce_event(base, systems[s], de->d_name);
		}
		closedir(d);
	}
}

/* Names (registered names) of the user events dynamic_events lists; count or -1. */
static int leftover_events(char names[][520], int max)
{
	char *buf = slurp(TRACEFS "dynamic_events", 8 << 20);
	int n = 0;

	if (!buf)
		return -1;
	for (char *l = buf, *next; l && *l; l = next) {
		next = strchr(l, '\n');
		if (next)
			*next++ = '\0';
		/*
		 * Every user event: the fuzzer runs alone, and its random-byte REGs
		 * make persistent events of any name (a leftover pins the module).
		 */
		if (strncmp(l, "u:", 2))
			continue;
		l += 2;
		l[strcspn(l, " ")] = '\0';
		if (n < max)
			snprintf(names[n], 520, "%s", l);
		n++;
	}
	free(buf);
	return n;
}

/*
 * Prints the triggers user_events/@name still lists after the cleanup's directory pass, with
 * what its targets' ids say; true if it lists any.
 */
static int busy_with_triggers(const char *name)
{
	char path[600], buf[4096];
	int any = 0;

	snprintf(path, sizeof(path), TRACEFS "events/user_events/%.520s/trigger", name);
	if (read_file(path, buf, sizeof(buf)) <= 0)
		return 0;
	for (char *l = strtok(buf, "\n"); l; l = strtok(NULL, "\n")) {
		if (l[0] == '#')
			continue;
		printf("# cleanup: %s kept a trigger past the directory pass: %.200s\n", name, l);
		explain_trigger_target(l);
		any = 1;
	}
	return any;
}

/* Deletes every user event; 0 when none is left. */
static int cleanup(char *why, size_t whylen)
{
	static char names[256][520];
	uint64_t until;
	int fd, n = -1, read_errno = 0, shown = 0;

	quiesce(TRACEFS);
	quiesce(INSTANCE_DIR);
	for (int i = 0; i < 50 && rmdir(TRACEFS "instances/" INSTANCE) && errno == EBUSY; i++)
		usleep(20000);
	fd = open(DATA_FILE, O_RDWR);
	/* Bounded: non-persistent events go when their last reference does (asynchronously). */
	until = now_ms() + 60000;
	while (now_ms() < until) {
		n = leftover_events(names, 256);
		if (n < 0) {
			read_errno = errno;
			usleep(20000);
			continue;
		}
		if (n == 0)
			break;
		for (int i = 0; i < n && i < 256; i++) {
			if (!ioctl(fd, DIAG_IOCSDEL, names[i]) || errno == ENOENT)
				continue;
			if (errno != EBUSY)
				break;
			/* Busy: perhaps one the directory reads skipped. */
			if (shown < 8 && busy_with_triggers(names[i]))
				shown++;
			quiesce_event(TRACEFS, "user_events", names[i]);
		}
		usleep(20000);
	}
	if (fd >= 0)
		close(fd);
	if (n > 0) {
		size_t len = snprintf(why, whylen, "%d events of the fuzzer left in dynamic_events:", n);

		for (int i = 0; i < n && i < 8 && len < whylen; i++)
			len += snprintf(why + len, whylen - len, " %s", names[i]);
		return -1;
	}
	if (n < 0) {
		snprintf(why, whylen, "cannot read dynamic_events: %s", strerror(read_errno));
		return -1;
	}
	return 0;
}

/* Prints the ftrace state of every fz* event under @base that is enabled or has triggers. */
static void dump_ftrace_state(const char *base)
{
	static const char *const systems[] = { "user_events", "user_events_multi" };
	char path[600], buf[4096];
	int ret;

	for (int s = 0; s < 2; s++) {
		DIR *d;
		struct dirent *de;

		snprintf(path, sizeof(path), "%sevents/%s", base, systems[s]);
		d = opendir(path);
		if (!d)
			continue;
		while ((de = readdir(d))) {
			if (de->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%sevents/%s/%s/enable", base, systems[s], de->d_name);
			/* "1", or "0*"/"1*" in soft mode (an enable_event trigger's target). */
			if (read_file(path, buf, sizeof(buf)) > 0 && (buf[0] != '0' || strchr(buf, '*')))
				printf("# %s: %.20s\n", path, buf);
			snprintf(path, sizeof(path), "%sevents/%s/%s/trigger", base, systems[s], de->d_name);
			if (read_file(path, buf, sizeof(buf)) <= 0)
				continue;
			for (char *l = strtok(buf, "\n"); l; l = strtok(NULL, "\n"))
				if (l[0] != '#') {
					printf("# %s: %.200s\n", path, l);
					explain_trigger_target(l);
				}
			/* What a removal of what is left does now (the cleanup's did not). */
			ret = clear_triggers(path);
			if (read_file(path, buf, sizeof(buf)) > 0 && buf[0] != '#')
				printf("# %s: still there after another removal (%s)\n", path,
				       strerror(-ret));
		}
		closedir(d);
	}
	snprintf(path, sizeof(path), "%sset_event", base);
	if (read_file(path, buf, sizeof(buf)) > 0)
		for (char *l = strtok(buf, "\n"); l; l = strtok(NULL, "\n"))
			printf("# %s: %.200s\n", path, l);
}

/*
 * What else holds the module: any user event left (of anyone) and the
 * module's reference count, once the asynchronous puts had a moment.
 */
static void report_leftovers(void)
{
	char buf[64];
	char *dyn;
	int refs = -1;

	for (int i = 0; i < 100; i++) {
		if (read_file("/sys/module/rust_user_events/refcnt", buf, sizeof(buf)) <= 0)
			break;
		refs = atoi(buf);
		if (refs == 0)
			break;
		usleep(100000);
	}
	if (refs > 0) {
		printf("# rust_user_events refcnt is %d after the cleanup\n", refs);
		printf("# instance %s\n", access(INSTANCE_DIR, F_OK) ? "removed" : "still there");
		dump_ftrace_state(TRACEFS);
		dump_ftrace_state(INSTANCE_DIR);
	}
	dyn = slurp(TRACEFS "dynamic_events", 1 << 20);
	if (dyn) {
		int shown = 0;

		for (char *l = strtok(dyn, "\n"); l && shown < 20; l = strtok(NULL, "\n")) {
			if (!strncmp(l, "u:", 2)) {
				printf("# left in dynamic_events: %.200s\n", l);
				shown++;
			}
		}
		free(dyn);
	}
	if (refs > 0) {
		char *st = slurp(TRACEFS "user_events_status", 1 << 20);

		if (st) {
			for (char *l = strtok(st, "\n"); l; l = strtok(NULL, "\n"))
				printf("# user_events_status: %.200s\n", l);
			free(st);
		}
	}
}

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
	int opt, alive, failed = 0, seed_set = 0, secs_set = 0;
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
	printf("# fuzz_test: seed %llu\n", (unsigned long long)g_seed);
	printf("TAP version 13\n1..1\n");
	printf("# reproduce: fuzz_test -s %llu -t %d -p %d -j %d%s%.0d", (unsigned long long)g_seed,
	       g_seconds, g_procs, g_threads, g_fault_pct ? " -f " : "", g_fault_pct);
	for (int op = 0, first = 1; op < NOPS; op++) {
		if (g_excluded & 1ULL << op) {
			printf("%s%s", first ? " -x " : ",", op_names[op]);
			first = 0;
		}
	}
	printf("\n");
	if (!exists(DATA_FILE)) {
		printf("ok 1 fuzz_test # SKIP user_events is not installed (no %s)\n", DATA_FILE);
		return 0;
	}
	if (geteuid() != 0) {
		printf("not ok 1 fuzz_test # must be run as root\n");
		return 1;
	}
	snprintf(g_exe_argv_seed, sizeof(g_exe_argv_seed), "%llu", (unsigned long long)g_seed);
	S = mmap(NULL, sizeof(*S), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (S == MAP_FAILED) {
		printf("not ok 1 fuzz_test # mmap: %s\n", strerror(errno));
		return 1;
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
	signal(SIGPIPE, SIG_IGN);
	signal(SIGALRM, on_master_alarm);
	alarm(g_seconds + 2 * g_stuck_s + 300);
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	if (read_file(SYSCTL_MAX, saved_max, sizeof(saved_max)) <= 0)
		saved_max[0] = '\0';
	if (g_fault_pct) {
		if (read_file(FAILSLAB "ignore-gfp-wait", saved_gfp, sizeof(saved_gfp)) <= 0 ||
		    read_file(FAILSLAB "verbose", saved_verbose, sizeof(saved_verbose)) <= 0)
			saved_gfp[0] = saved_verbose[0] = '\0';
		if (!exists(FAIL_NTH) || !saved_gfp[0] || write_file(FAILSLAB "ignore-gfp-wait", "N") ||
		    write_file(FAILSLAB "verbose", "0")) {
			/* A run without the faults asked for is not this run: skip, never pass. */
			printf("ok 1 fuzz_test # SKIP -f: no fault injection in this kernel\n");
			return 0;
		}
	}
	if (mkdir(TRACEFS "instances/" INSTANCE, 0755) && errno != EEXIST)
		printf("# no trace instance: %s\n", strerror(errno));

	g_deadline_ms = now_ms() + (uint64_t)g_seconds * 1000;
	for (int i = 0; i < g_procs; i++) {
		pids[i] = fork();
		if (pids[i] == 0)
			worker_main(i);
		if (pids[i] < 0) {
			printf("# fork of worker %d: %s\n", i, strerror(errno));
			failed = 1;
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
				failed = 1;
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
		failed = 1;
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
			failed = 1;
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
	if (cleanup(why, sizeof(why))) {
		printf("# cleanup: %s\n", why);
		failed = 1;
	}
	report_leftovers();
	print_stats();
	printf("# workers reaped %.1f s after the deadline, cleanup took %.1f s\n",
	       ((double)reaped_ms - (double)g_deadline_ms) / 1000, (double)(now_ms() - reaped_ms) / 1000);
	printf("%sok 1 fuzz_test seed %llu: %d workers x %d threads, %d s\n", failed ? "not " : "",
	       (unsigned long long)g_seed, g_procs, g_threads, g_seconds);
	return failed;
}
