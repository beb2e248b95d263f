// SPDX-License-Identifier: GPL-2.0
/*
 * write_bench: what one user_events write costs, next to a plain system call
 * and to trace_marker. A run of a case is a warm-up of N/4 calls and N timed
 * calls (default 20000); the cases run in RUNS passes (default 5), each pass
 * one run of every case, so a burst of load on the host spoils one run of
 * several cases rather than every run of one. Prints "case NAME MEDIAN
 * RUN,RUN,..." in ns per call (bench.h). make bench (tools/bench.sh) runs it
 * in both of its kernels; Documentation/performance.md has the results.
 *
 *   null                  write() of 16 bytes to /dev/null: the syscall floor
 *   marker_S_on, _off     write() of S bytes to trace_marker, tracing_on 1 or 0
 *   ftrace_S_on, _off     writev() of [index][S bytes] to an event with one field
 *                         (char[16]; longer payloads are recorded verbatim, as
 *                         EventHeader's are) enabled in ftrace, tracing_on 1
 *                         or 0; S is 16, 256 or 4096
 *   eventpipe             .NET EventPipe's shape (case_eventpipe()): 8 iovecs,
 *                         two __rel_loc u8[] fields, 95 bytes; in ftrace
 *   perf_read             16 bytes sampled by a perf event of this task whose
 *                         ring is read (drained every 16 writes: none is lost)
 *   perf_overwrite        the same, ring mapped read-only (overwrite mode)
 *   bpf                   a BPF program (it counts into a map) attached with
 *                         PERF_EVENT_IOC_SET_BPF to a perf event with no ring
 *   disabled_check        an instrumented client while nobody listens: a
 *                         relaxed load of its enable word and a branch, no
 *                         system call (100 N per run)
 *   disabled_ebadf        a client that skips that check: writev() gets EBADF
 *   unregistered          writev() with an index never registered: ENOENT
 *   writersW_null, _marker, _ftrace
 *                         W processes (1 or 2), each on its own CPU with its
 *                         own descriptor, each making N 16-byte calls at the
 *                         same time; ns per call of one process (as with one
 *                         writer if they scale perfectly)
 *
 * Every case but writers2 runs pinned to CPU 0. The first run of a case that
 * should leave a record in ftrace or perf checks that it does (tracing_on 1
 * needs sub-buffers that hold a 4 KiB record: tools/testing/bench/guest.sh
 * sets 8 KiB).
 *
 * With -P (make bench's shared mode: the kernel's own user_events and the
 * module built beside it, rue_-prefixed), every run of a case is made on both,
 * one right after the other (the module first in even passes, upstream first
 * in odd ones), and each side's lines follow a line "side module" or "side
 * upstream": the two measurements of a pair are a few milliseconds apart, so a
 * host whose speed drifts moves both alike.
 *
 * With -W, the timed calls of every run are insnprof's counting window
 * (insnprof.h): give one case and -r 1 to profile one kind of call exactly.
 *
 * Usage: write_bench [-P] [-W] [-n N] [-r RUNS] [CASE...]
 *   CASE selects the cases whose names start with it; default every case.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <linux/bpf.h>
#include <linux/perf_event.h>

#include "bench.h"
#include "../selftests/rust_user_events/rue_bpf.h"
#include "insnprof.h"

#define EVENT "__rue_wb"
#define EVENT_EP "__rue_wb_ep"
#define EVENT_OFF "__rue_wb_off"
#define EN_BIT 31
#define RING_PAGES 16
#define MAX_PAYLOAD 4096

static long n = 20000;
static int runs = 5;

#define MAX_CASES 40

static int null_fd, marker_fd;
static char payload[MAX_PAYLOAD];

/* An implementation of the ABI, with this program's descriptor and events on it. */
struct provider {
	const char *name;		/* module or upstream, with -P */
	const char *prefix;		/* RUE_BENCH_PREFIX while measuring it, or NULL */
	int data_fd;
	int idx_main, idx_ep, idx_off;
	/* Enable words: bit 31, as .NET and the kernel's samples use. */
	__u32 word_main, word_ep, word_off;
	/* BPF program runs and the writes they ran for, over every run. */
	unsigned long long bpf_runs, bpf_writes;
	double v[MAX_CASES][MAX_RUNS];	/* ns per call, by case and run */
};

static struct provider providers[2];
static int nproviders = 1;
/* The provider measured now. */
static struct provider *P = &providers[0];

/* A perf event's ring, read by this process. */
struct ring {
	struct perf_event_mmap_page *page;
	__u64 consumed;			/* bytes of records read */
};

/* One kind of call, repeated: writev() (or write() with @iovcnt 0) expecting @want. */
struct loop {
	int fd;
	int idx;			/* the write index iov[0] points to */
	struct iovec iov[8];
	int iovcnt;
	ssize_t want;			/* bytes written, or -errno */
	struct ring *ring;		/* drained every 16 calls, or NULL */
};

/* A case: @run makes one run and returns ns per call; @first: check it works. */
struct bench_case {
	char name[32];
	double (*run)(const struct bench_case *c, int first);
	size_t size;			/* payload bytes */
	int on;				/* tracing_on; writers: how many */
	const char *kind;		/* writers: null, marker or ftrace */
};

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		die("sched_setaffinity");
}

static void ring_drain(struct ring *r)
{
	__u64 head = __atomic_load_n(&r->page->data_head, __ATOMIC_ACQUIRE);

	r->consumed += head - r->page->data_tail;
	__atomic_store_n(&r->page->data_tail, head, __ATOMIC_RELEASE);
}

static ssize_t call(const struct loop *l)
{
	if (!l->iovcnt)
		return write(l->fd, l->iov[0].iov_base, l->iov[0].iov_len);
	return writev(l->fd, l->iov, l->iovcnt);
}

/* ns per call of @count calls. */
static double time_loop(const struct loop *l, long count)
{
	double t0 = now_ns();

	for (long i = 0; i < count; i++) {
		ssize_t r = call(l);

		if (r < 0 ? -errno != l->want : r != l->want) {
			fprintf(stderr, "write_bench: got %zd (errno %d), want %zd\n", r, errno, l->want);
			exit(1);
		}
		if (l->ring && (i & 15) == 15)
			ring_drain(l->ring);
	}
	return (now_ns() - t0) / count;
}

/* Calls one run makes: the warm-up and the timed ones. */
static long calls_per_run(void)
{
	return n / 4 + n;
}

static int window;			/* -W: the timed calls are insnprof's window */

/* One run: a warm-up, then N timed calls. */
static double measure(const struct loop *l)
{
	double ns;

	time_loop(l, n / 4);
	if (window)
		insnprof_start();
	ns = time_loop(l, n);
	if (window)
		insnprof_stop();
	return ns;
}

/* Sets @l up for writev() of [@idx][@size bytes] to P->data_fd. */
static void event_loop(struct loop *l, int idx, size_t size)
{
	*l = (struct loop){ .fd = P->data_fd, .idx = idx, .iovcnt = 2, .want = 4 + size };
	l->iov[0] = (struct iovec){ &l->idx, sizeof(l->idx) };
	l->iov[1] = (struct iovec){ payload, size };
}

/* The "@field: N" of every CPU's ftrace ring buffer statistics, summed. */
static long ftrace_stat(const char *field)
{
	char path[64], buf[1024], *p;
	long total = 0;

	for (int cpu = 0;; cpu++) {
		snprintf(path, sizeof(path), TRACEFS "per_cpu/cpu%d/stats", cpu);
		if (read_file(path, buf, sizeof(buf)) < 0)
			return total;
		p = strstr(buf, field);
		if (p)
			total += atol(p + strlen(field));
	}
}

/*
 * One call of @l into an emptied ring buffer must leave one record there
 * that holds at least the payload of @size bytes.
 */
static void check_recorded(const char *name, const struct loop *l, size_t size)
{
	if (write_file(TRACEFS "trace", ""))
		die("clear trace");
	if (call(l) != l->want || ftrace_stat("entries: ") != 1 ||
	    ftrace_stat("bytes: ") < (long)size) {
		fprintf(stderr, "write_bench: %s: the call left no record of %zu bytes in ftrace\n",
			name, size);
		exit(1);
	}
}

static void tracing_on(int on)
{
	if (write_file(TRACEFS "tracing_on", on ? "1" : "0"))
		die("tracing_on");
}

static double case_null(const struct bench_case *c, int first)
{
	struct loop l = { .fd = null_fd, .want = c->size };

	(void)first;
	l.iov[0] = (struct iovec){ payload, c->size };
	return measure(&l);
}

static double case_marker(const struct bench_case *c, int first)
{
	/* trace_marker refuses a write while the ring buffer is off. */
	struct loop l = { .fd = marker_fd, .want = c->on ? (ssize_t)c->size : -EBADF };
	double ns;

	l.iov[0] = (struct iovec){ payload, c->size };
	tracing_on(c->on);
	if (first && c->on)
		check_recorded(c->name, &l, c->size);
	ns = measure(&l);
	tracing_on(1);
	return ns;
}

static double case_ftrace(const struct bench_case *c, int first)
{
	struct loop l;
	double ns;

	event_loop(&l, P->idx_main, c->size);
	set_enable(EVENT, "1");
	tracing_on(c->on);
	if (first && c->on)
		check_recorded(c->name, &l, c->size);
	ns = measure(&l);
	tracing_on(1);
	set_enable(EVENT, "0");
	return ns;
}

/*
 * .NET's EventPipe (ep-session.c) writes [index][u8 version][u16 event_id]
 * [u32 extension loc][u32 payload loc][extension...][payload...]; here the
 * extension is a label with a metadata id and then an activity id (two
 * iovecs), the payload 64 bytes: 8 iovecs. A __rel_loc counts its offset from
 * the end of its own field: (size << 16) | offset.
 */
static double case_eventpipe(const struct bench_case *c, int first)
{
	static __u8 version = 1;
	static __u16 event_id = 42;
	static __u8 ext_meta[5] = { 1, 0x10, 0, 0, 0 };
	static __u8 ext_activity[17] = { 2 };
	static __u32 ext_loc, payload_loc;
	const __u32 ext_len = sizeof(ext_meta) + sizeof(ext_activity), payload_len = 64;
	struct loop l = { .fd = P->data_fd, .idx = P->idx_ep, .iovcnt = 8 };
	double ns;

	/* Fields: version @0, event_id @1, extension loc @3, payload loc @7, data @11. */
	ext_loc = ext_len << 16 | 4;
	payload_loc = payload_len << 16 | ext_len;
	l.iov[0] = (struct iovec){ &l.idx, sizeof(l.idx) };
	l.iov[1] = (struct iovec){ &version, sizeof(version) };
	l.iov[2] = (struct iovec){ &event_id, sizeof(event_id) };
	l.iov[3] = (struct iovec){ &ext_loc, sizeof(ext_loc) };
	l.iov[4] = (struct iovec){ &payload_loc, sizeof(payload_loc) };
	l.iov[5] = (struct iovec){ ext_meta, sizeof(ext_meta) };
	l.iov[6] = (struct iovec){ ext_activity, sizeof(ext_activity) };
	l.iov[7] = (struct iovec){ payload, payload_len };
	l.want = 4 + 1 + 2 + 4 + 4 + ext_len + payload_len;
	set_enable(EVENT_EP, "1");
	if (first)
		check_recorded(c->name, &l, l.want - 4);
	ns = measure(&l);
	set_enable(EVENT_EP, "0");
	return ns;
}

/* A sampling perf event on EVENT for this task, every write a sample. */
static int perf_open_self(void)
{
	struct perf_event_attr pe = {
		.type = PERF_TYPE_TRACEPOINT,
		.size = sizeof(pe),
		.config = event_id(EVENT),
		.sample_period = 1,
		.sample_type = PERF_SAMPLE_RAW,
	};
	int fd = syscall(__NR_perf_event_open, &pe, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);

	if (fd < 0)
		die("perf_event_open");
	return fd;
}

/* Every write must leave one sample: the ring read must hold them all. */
static double case_perf_read(const struct bench_case *c, int first)
{
	size_t len = (RING_PAGES + 1) * sysconf(_SC_PAGESIZE);
	struct ring ring = { 0 };
	struct perf_event_header hdr;
	struct loop l;
	double ns;
	int fd;

	(void)first;
	event_loop(&l, P->idx_main, c->size);
	l.ring = &ring;
	fd = perf_open_self();
	ring.page = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (ring.page == MAP_FAILED)
		die("perf mmap");
	/* The size of one sample, from the first. */
	if (call(&l) != l.want)
		die("perf_read: first write");
	memcpy(&hdr, (const char *)ring.page + ring.page->data_offset, sizeof(hdr));
	if (__atomic_load_n(&ring.page->data_head, __ATOMIC_ACQUIRE) != hdr.size ||
	    hdr.type != PERF_RECORD_SAMPLE)
		fail("write_bench: perf_read: the first write left no sample");
	ns = measure(&l);
	ring_drain(&ring);
	if (ring.consumed != (__u64)(1 + calls_per_run()) * hdr.size) {
		fprintf(stderr, "write_bench: perf_read: %llu bytes of records, want %ld samples of %u\n",
			(unsigned long long)ring.consumed, 1 + calls_per_run(), hdr.size);
		exit(1);
	}
	munmap(ring.page, len);
	close(fd);
	return ns;
}

static double case_perf_overwrite(const struct bench_case *c, int first)
{
	size_t len = (RING_PAGES + 1) * sysconf(_SC_PAGESIZE);
	struct perf_event_mmap_page *page;
	struct loop l;
	double ns;
	int fd;

	event_loop(&l, P->idx_main, c->size);
	fd = perf_open_self();
	/* Read-only: the kernel overwrites the oldest samples, the ring never fills. */
	page = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	if (page == MAP_FAILED)
		die("perf mmap");
	if (first && (call(&l) != l.want || !__atomic_load_n(&page->data_head, __ATOMIC_ACQUIRE)))
		fail("write_bench: perf_overwrite: the first write left no sample");
	ns = measure(&l);
	munmap(page, len);
	close(fd);
	return ns;
}

/* A BPF_PROG_TYPE_TRACEPOINT program adding 1 to the u64 at key 0 of @map_fd; returns 0. */
static int load_counter(int map_fd)
{
	struct bpf_insn insns[] = {
		INSN(BPF_ST | BPF_MEM | BPF_W, BPF_REG_10, 0, -4, 0),
		INSN(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_2, BPF_REG_10, 0, 0),
		INSN(BPF_ALU64 | BPF_ADD | BPF_K, BPF_REG_2, 0, 0, -4),
		INSN(BPF_LD | BPF_DW | BPF_IMM, BPF_REG_1, BPF_PSEUDO_MAP_FD, 0, map_fd),
		INSN(0, 0, 0, 0, 0),
		INSN(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_map_lookup_elem),
		INSN(BPF_JMP | BPF_JEQ | BPF_K, BPF_REG_0, 0, 2, 0),
		INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_1, 0, 0, 1),
		INSN(BPF_STX | BPF_ATOMIC | BPF_DW, BPF_REG_0, BPF_REG_1, 0, BPF_ADD),
		INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0),
		INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
	};
	int fd = rue_bpf_load(insns, sizeof(insns) / sizeof(insns[0]));

	if (fd < 0)
		die("BPF_PROG_LOAD");
	return fd;
}

/*
 * Counts the program's runs (main() prints them as "info bpf_runs RUNS
 * WRITES"): upstream attaches such a program but never runs it
 * (Documentation/deviations.md), so there this case costs a perf sample with
 * nowhere to go.
 */
static double case_bpf(const struct bench_case *c, int first)
{
	__u64 count;
	int map_fd, prog_fd, fd;
	struct loop l;
	double ns;

	(void)first;
	event_loop(&l, P->idx_main, c->size);
	map_fd = rue_bpf_array_map(1);
	if (map_fd < 0)
		die("BPF_MAP_CREATE");
	prog_fd = load_counter(map_fd);
	fd = perf_open_self();
	if (ioctl(fd, PERF_EVENT_IOC_SET_BPF, prog_fd) || ioctl(fd, PERF_EVENT_IOC_ENABLE, 0))
		die("PERF_EVENT_IOC_SET_BPF");
	ns = measure(&l);
	count = rue_bpf_map_get(map_fd, 0);
	if (count == ~0ULL)
		die("BPF_MAP_LOOKUP_ELEM");
	P->bpf_runs += count;
	P->bpf_writes += calls_per_run();
	close(fd);
	close(prog_fd);
	close(map_fd);
	return ns;
}

/* The enable-bit check alone, 100 N times: nobody listens, so no call is made. */
static double case_disabled_check(const struct bench_case *c, int first)
{
	long count = 100 * n, made = 0;
	struct loop l;
	double t0, ns;

	(void)first;
	event_loop(&l, P->idx_off, c->size);
	for (int timed = 0; timed < 2; timed++) {
		t0 = now_ns();
		for (long i = 0; i < count; i++)
			if (__atomic_load_n(&P->word_off, __ATOMIC_RELAXED) & (1u << EN_BIT))
				made += call(&l) > 0;
		ns = (now_ns() - t0) / count;
	}
	if (made)
		fail("write_bench: disabled_check: the event was enabled");
	return ns;
}

static double case_errno(const struct bench_case *c, int first)
{
	struct loop l;

	(void)first;
	event_loop(&l, c->on == EBADF ? P->idx_off : 1000, c->size);
	l.want = -c->on;
	return measure(&l);
}

/* One writer of case_writers(): sets up its own descriptor, waits for @go, runs. */
static double writer(const struct bench_case *c, int cpu, int *ready, int *go)
{
	__u32 word = 0;
	struct loop l = { .want = c->size };
	int idx;

	pin(cpu);
	l.iov[0] = (struct iovec){ payload, c->size };
	if (!strcmp(c->kind, "null")) {
		l.fd = open("/dev/null", O_WRONLY);
	} else if (!strcmp(c->kind, "marker")) {
		l.fd = open(TRACEFS "trace_marker", O_WRONLY);
	} else {
		int fd = open(provider_file("user_events_data"), O_RDWR);

		idx = rue_reg(fd, EVENT " char[16] f", &word, EN_BIT);
		if (idx < 0)
			fail("write_bench: writers: REG");
		event_loop(&l, idx, c->size);
		l.fd = fd;
	}
	if (l.fd < 0)
		die("writers: open");
	__atomic_add_fetch(ready, 1, __ATOMIC_SEQ_CST);
	while (!__atomic_load_n(go, __ATOMIC_ACQUIRE))
		sched_yield();
	return measure(&l);
}

/*
 * c->on processes, one per CPU, start together; the run's value is their
 * mean ns per call.
 */
static double case_writers(const struct bench_case *c, int first)
{
	struct shared {
		int ready, go;
		double ns[2];
	} *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int w = c->on;
	double ns = 0;

	(void)first;
	if (sh == MAP_FAILED)
		die("mmap");
	if (!strcmp(c->kind, "ftrace"))
		set_enable(EVENT, "1");
	for (int i = 0; i < w; i++) {
		pid_t pid = fork();

		if (pid < 0)
			die("fork");
		if (pid == 0) {
			sh->ns[i] = writer(c, i, &sh->ready, &sh->go);
			_exit(0);
		}
	}
	while (__atomic_load_n(&sh->ready, __ATOMIC_ACQUIRE) < w)
		sched_yield();
	__atomic_store_n(&sh->go, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < w; i++) {
		int status;

		if (wait(&status) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
			fail("write_bench: a writer failed");
		ns += sh->ns[i] / w;
	}
	if (!strcmp(c->kind, "ftrace"))
		set_enable(EVENT, "0");
	munmap(sh, sizeof(*sh));
	return ns;
}

static struct bench_case cases[MAX_CASES];
static int ncases;

static void add(double (*run)(const struct bench_case *, int), size_t size, int on,
		const char *kind, const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void add(double (*run)(const struct bench_case *, int), size_t size, int on,
		const char *kind, const char *fmt, ...)
{
	struct bench_case *c = &cases[ncases++];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->name, sizeof(c->name), fmt, ap);
	va_end(ap);
	c->run = run;
	c->size = size;
	c->on = on;
	c->kind = kind;
}

static void add_cases(void)
{
	static const size_t sizes[] = { 16, 256, 4096 };
	static const char *const kinds[] = { "null", "marker", "ftrace" };

	add(case_null, 16, 1, NULL, "null");
	for (int on = 1; on >= 0; on--)
		for (int s = 0; s < 3; s++)
			add(case_marker, sizes[s], on, NULL, "marker_%zu_%s", sizes[s], on ? "on" : "off");
	for (int on = 1; on >= 0; on--)
		for (int s = 0; s < 3; s++)
			add(case_ftrace, sizes[s], on, NULL, "ftrace_%zu_%s", sizes[s], on ? "on" : "off");
	add(case_eventpipe, 0, 1, NULL, "eventpipe");
	add(case_perf_read, 16, 1, NULL, "perf_read");
	add(case_perf_overwrite, 16, 1, NULL, "perf_overwrite");
	add(case_bpf, 16, 1, NULL, "bpf");
	add(case_disabled_check, 16, 1, NULL, "disabled_check");
	add(case_errno, 16, EBADF, NULL, "disabled_ebadf");
	add(case_errno, 16, ENOENT, NULL, "unregistered");
	for (int k = 0; k < 3; k++)
		for (int w = 1; w <= 2; w++)
			add(case_writers, 16, w, kinds[k], "writers%d_%s", w, kinds[k]);
}

static int wanted(const char *name, char **selected, int nselected)
{
	if (!nselected)
		return 1;
	for (int i = 0; i < nselected; i++)
		if (!strncmp(name, selected[i], strlen(selected[i])))
			return 1;
	return 0;
}

/* Makes @p the provider measured: the helpers find its files and events. */
static void use_provider(struct provider *p)
{
	P = p;
	if (p->prefix)
		setenv("RUE_BENCH_PREFIX", p->prefix, 1);
	else
		unsetenv("RUE_BENCH_PREFIX");
}

/* Opens @p's data file and registers this program's events there. */
static void set_up(struct provider *p)
{
	use_provider(p);
	p->data_fd = open(provider_file("user_events_data"), O_RDWR);
	if (p->data_fd < 0)
		die("write_bench: open user_events_data");
	p->idx_main = rue_reg(p->data_fd, EVENT " char[16] f", &p->word_main, EN_BIT);
	p->idx_ep = rue_reg(p->data_fd, EVENT_EP " u8 version; u16 event_id; "
			    "__rel_loc u8[] extension; __rel_loc u8[] payload", &p->word_ep, EN_BIT);
	p->idx_off = rue_reg(p->data_fd, EVENT_OFF " char[16] f", &p->word_off, EN_BIT);
	if (p->idx_main < 0 || p->idx_ep < 0 || p->idx_off < 0) {
		errno = -(p->idx_main < 0 ? p->idx_main : p->idx_ep < 0 ? p->idx_ep : p->idx_off);
		die("write_bench: DIAG_IOCSREG");
	}
}

int main(int argc, char **argv)
{
	int opt;

	providers[0].prefix = getenv("RUE_BENCH_PREFIX");
	while ((opt = getopt(argc, argv, "PWn:r:")) != -1) {
		switch (opt) {
		case 'P':
			nproviders = 2;
			providers[0] = (struct provider){ .name = "module", .prefix = "rue_" };
			providers[1] = (struct provider){ .name = "upstream" };
			break;
		case 'W':
			window = 1;
			insnprof_init();
			break;
		case 'n':
			n = atol(optarg);
			break;
		case 'r':
			runs = atoi(optarg);
			break;
		default:
			fprintf(stderr, "usage: write_bench [-P] [-W] [-n N] [-r RUNS] [CASE...]\n");
			return 2;
		}
	}
	if (n < 4 || runs < 1 || runs > MAX_RUNS)
		fail("write_bench: bad -n or -r");
	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = 'a' + i % 26;

	pin(0);
	null_fd = open("/dev/null", O_WRONLY);
	marker_fd = open(TRACEFS "trace_marker", O_WRONLY);
	if (null_fd < 0 || marker_fd < 0)
		die("write_bench: open");
	for (int k = 0; k < nproviders; k++)
		set_up(&providers[k]);
	tracing_on(1);

	add_cases();
	for (int r = 0; r < runs; r++)
		for (int i = 0; i < ncases; i++) {
			if (!wanted(cases[i].name, argv + optind, argc - optind))
				continue;
			for (int k = 0; k < nproviders; k++) {
				struct provider *p = &providers[(k + r) % nproviders];

				use_provider(p);
				p->v[i][r] = cases[i].run(&cases[i], r == 0);
			}
		}
	for (int k = 0; k < nproviders; k++) {
		struct provider *p = &providers[k];

		if (p->name)
			printf("side %s\n", p->name);
		for (int i = 0; i < ncases; i++)
			if (wanted(cases[i].name, argv + optind, argc - optind))
				report(cases[i].name, p->v[i], runs);
		if (p->bpf_writes)
			printf("info bpf_runs %llu %llu\n", p->bpf_runs, p->bpf_writes);
	}
	/* The records are not needed: empty the buffer for whatever runs next. */
	write_file(TRACEFS "trace", "");
	return 0;
}
