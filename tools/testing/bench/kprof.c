// SPDX-License-Identifier: GPL-2.0
/*
 * kprof: where a command spends its kernel time, for a guest without perf(1).
 * Samples the command (not the processes it forks: perf maps no ring of an
 * inherited per-task event) on the cpu-clock software
 * event, kernel side only with kernel call chains, and prints the functions
 * that the samples were in ("self") and those on their call chains
 * ("total"), named from /proc/kallsyms (module functions included).
 *
 * Usage: kprof [-a] [-p PERIOD_NS] [-t TOP] [-c NAME] [-f NAME] -- COMMAND [ARG...]
 *   -a       sample every CPU (every task) while COMMAND runs
 *   -c NAME  also count the callers of the functions whose names contain NAME
 *   -f NAME  count only the samples with such a function on their call chain
 *
 * Used by hand to find where the time of a case goes, in the module's and
 * upstream's bench kernels side by side (Documentation/performance.md, "Where
 * the time goes"). make bench builds it into its guest image
 * (build/bench/guest/bin) without running it; in a guest it needs
 * /proc/sys/kernel/perf_event_paranoid at -1 and kptr_restrict at 0, e.g.
 *
 *   kprof -t 30 -- write_bench -n 200000 -r 1 ftrace_16_on
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/perf_event.h>

#define DATA_PAGES 256
#define MAX_DEPTH 64
#define MAX_CPUS 64

struct sym {
	uint64_t addr;
	char name[160];
	unsigned long self, total;
	unsigned long seen;	/* sample number that last counted it in total */
};

static struct sym *syms;
static size_t nsyms;
/* -c: the callers of the functions whose names contain it, counted here. */
static const char *callee;
/* -f: only the samples with a function whose name contains it on their call chain. */
static const char *filter;
static struct caller { uint64_t addr; unsigned long n; } callers[256];
static unsigned long samples, unknown;

static int by_addr(const void *a, const void *b)
{
	const struct sym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static void load_kallsyms(void)
{
	FILE *f = fopen("/proc/kallsyms", "r");
	size_t cap = 0;
	char line[512];

	if (!f) {
		perror("/proc/kallsyms");
		exit(1);
	}
	while (fgets(line, sizeof(line), f)) {
		unsigned long long addr;
		char type, name[160];

		if (sscanf(line, "%llx %c %159s", &addr, &type, name) != 3)
			continue;
		if (type != 't' && type != 'T')
			continue;
		if (nsyms == cap) {
			cap = cap ? 2 * cap : 65536;
			syms = realloc(syms, cap * sizeof(*syms));
			if (!syms)
				exit(1);
		}
		memset(&syms[nsyms], 0, sizeof(*syms));
		syms[nsyms].addr = addr;
		snprintf(syms[nsyms].name, sizeof(syms[nsyms].name), "%s", name);
		nsyms++;
	}
	fclose(f);
	qsort(syms, nsyms, sizeof(*syms), by_addr);
}

static struct sym *lookup(uint64_t ip)
{
	size_t lo = 0, hi = nsyms;

	if (!nsyms || ip < syms[0].addr)
		return NULL;
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;

		if (syms[mid].addr <= ip)
			lo = mid;
		else
			hi = mid;
	}
	return &syms[lo];
}

static void sample(const uint64_t *ips, uint64_t nr, uint64_t ip)
{
	struct sym *s = lookup(ip);

	if (filter) {
		uint64_t i;

		for (i = 0; i < nr && i < MAX_DEPTH; i++) {
			struct sym *f = ips[i] < (uint64_t)PERF_CONTEXT_MAX ? lookup(ips[i]) : NULL;

			if (f && strstr(f->name, filter))
				break;
		}
		if (i == nr || i == MAX_DEPTH)
			return;
	}
	samples++;
	if (!s) {
		unknown++;
		return;
	}
	s->self++;
	for (uint64_t i = 0; callee && i + 1 < nr && i < MAX_DEPTH; i++) {
		struct sym *f = lookup(ips[i]), *c;

		if (ips[i] >= (uint64_t)PERF_CONTEXT_MAX || !f || !strstr(f->name, callee))
			continue;
		c = lookup(ips[i + 1]);
		for (int j = 0; c && j < 256; j++) {
			if (!callers[j].n || callers[j].addr == c->addr) {
				callers[j].addr = c->addr;
				callers[j].n++;
				break;
			}
		}
		break;
	}
	for (uint64_t i = 0; i < nr && i < MAX_DEPTH; i++) {
		if (ips[i] >= (uint64_t)PERF_CONTEXT_MAX)
			continue;
		s = lookup(ips[i]);
		if (s && s->seen != samples) {
			s->seen = samples;
			s->total++;
		}
	}
}

/* Reads the records the kernel has written since the last call. */
static void drain(struct perf_event_mmap_page *page, size_t size)
{
	unsigned char *data = (unsigned char *)page + page->data_offset;
	uint64_t head = __atomic_load_n(&page->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = page->data_tail;
	unsigned char rec[8 + 8 * (MAX_DEPTH + 130)];

	while (tail < head) {
		struct perf_event_header h;

		for (size_t i = 0; i < sizeof(h); i++)
			((unsigned char *)&h)[i] = data[(tail + i) % size];
		if (h.size < sizeof(h))
			break;
		if (h.type == PERF_RECORD_SAMPLE && h.size <= sizeof(rec)) {
			for (size_t i = 0; i < h.size; i++)
				rec[i] = data[(tail + i) % size];
			const uint64_t *p = (const uint64_t *)(rec + sizeof(h));
			uint64_t nr = p[1];

			if ((nr + 2) * 8 + sizeof(h) <= h.size)
				sample(p + 2, nr, p[0]);
		}
		tail += h.size;
	}
	__atomic_store_n(&page->data_tail, tail, __ATOMIC_RELEASE);
}

static int by_self(const void *a, const void *b)
{
	const struct sym *x = a, *y = b;

	return (y->self > x->self) - (y->self < x->self);
}

static int by_total(const void *a, const void *b)
{
	const struct sym *x = a, *y = b;

	return (y->total > x->total) - (y->total < x->total);
}

static void report(const char *what, int (*cmp)(const void *, const void *), int top)
{
	qsort(syms, nsyms, sizeof(*syms), cmp);
	printf("kprof %s: %lu samples (%lu outside known functions)\n", what, samples, unknown);
	for (int i = 0; i < top && i < (int)nsyms; i++) {
		unsigned long v = cmp == by_self ? syms[i].self : syms[i].total;

		if (!v)
			break;
		printf("kprof %-5s %6.2f%% %7lu %s\n", what, 100.0 * v / (samples ? samples : 1),
		       v, syms[i].name);
	}
}

int main(int argc, char **argv)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.sample_period = 20000,
		.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_CALLCHAIN,
		.disabled = 1,
		.enable_on_exec = 1,
		.exclude_user = 1,
		.exclude_hv = 1,
		.exclude_callchain_user = 1,
		.wakeup_events = 64,
	};
	int top = 40, go[2], opt, status, all = 0, ncpus = 1;
	int fds[MAX_CPUS];
	struct perf_event_mmap_page *pages[MAX_CPUS];
	long pagesz = sysconf(_SC_PAGESIZE);
	size_t size = DATA_PAGES * pagesz;

	while ((opt = getopt(argc, argv, "ac:f:p:t:")) != -1) {
		if (opt == 'a')
			all = 1;
		else if (opt == 'c')
			callee = optarg;
		else if (opt == 'f')
			filter = optarg;
		else if (opt == 'p')
			attr.sample_period = strtoull(optarg, NULL, 0);
		else if (opt == 't')
			top = atoi(optarg);
		else
			goto usage;
	}
	if (optind >= argc)
		goto usage;
	load_kallsyms();
	if (pipe(go))
		return 1;
	pid_t child = fork();

	if (child == 0) {
		char c;

		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(127);
		execvp(argv[optind], argv + optind);
		_exit(127);
	}
	close(go[0]);
	if (all) {
		/* Every CPU, every task, from now until the command exits. */
		ncpus = sysconf(_SC_NPROCESSORS_ONLN);
		if (ncpus > MAX_CPUS)
			ncpus = MAX_CPUS;
		attr.disabled = 0;
		attr.enable_on_exec = 0;
	}
	for (int cpu = 0; cpu < ncpus; cpu++) {
		fds[cpu] = all ? syscall(SYS_perf_event_open, &attr, -1, cpu, -1, 0)
			       : syscall(SYS_perf_event_open, &attr, child, -1, -1, 0);
		if (fds[cpu] < 0) {
			perror("perf_event_open");
			return 1;
		}
		pages[cpu] = mmap(NULL, size + pagesz, PROT_READ | PROT_WRITE, MAP_SHARED,
				  fds[cpu], 0);
		if (pages[cpu] == MAP_FAILED) {
			perror("mmap");
			return 1;
		}
	}
	if (write(go[1], "g", 1) != 1)
		return 1;
	for (;;) {
		struct pollfd p = { .fd = fds[0], .events = POLLIN };

		poll(&p, 1, 100);
		for (int cpu = 0; cpu < ncpus; cpu++)
			drain(pages[cpu], size);
		pid_t w = waitpid(child, &status, WNOHANG);

		if (w == child)
			break;
	}
	for (int cpu = 0; cpu < ncpus; cpu++)
		drain(pages[cpu], size);
	report("self", by_self, top);
	report("total", by_total, top);
	for (int j = 0; callee && j < 256 && callers[j].n; j++)
		printf("kprof caller %7lu %s\n", callers[j].n, lookup(callers[j].addr)->name);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
usage:
	fprintf(stderr, "usage: kprof [-a] [-p PERIOD_NS] [-t TOP] [-c NAME] [-f NAME] -- COMMAND [ARG...]\n");
	return 2;
}
