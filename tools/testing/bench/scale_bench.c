// SPDX-License-Identifier: GPL-2.0
/*
 * scale_bench: what REG and UNREG cost while N events or N enablers exist
 * (flat in N is the goal), and what an enable toggle costs when it fans out
 * to enablers in many processes. Prints "case NAME MEDIAN RUN,RUN,..." in ns
 * (bench.h), the median over RUNS runs (default 5); make bench
 * (tools/bench.sh) runs it in both of its kernels. Unlike enabler_bench it
 * needs nothing upstream lacks.
 *
 * events N: a holder process registers N events (__rue_sbN_<i> u32 a, one
 * enabler each); another process, on its own file descriptor, then measures:
 *   eventsN_reg      REG of one of the N events, the one created halfway
 *                    through (the mean of 40, per run)
 *   eventsN_unreg    its UNREG (the mean of 40, per run)
 *   eventsN_reg_new  a REG that creates a new event (the mean of 20, once)
 *   eventsN_create   the holder's REGs that created the N (their mean, once);
 *                    for N below CREATE_RUNS_BELOW the median over RUNS
 *                    holders, the first one the holder above: ten REGs of a
 *                    fresh process are too few for one mean (a new slab page
 *                    or a timer tick among them moves it by several per cent)
 *   eventsN_exit     the holder's exit until every event it held is deleted
 *                    (counted in user_events_status), once
 * enablers N: a holder registers one event (__rue_sbeN u32 a) at N bits:
 *   enablersN_reg, enablersN_unreg      another process's REG and UNREG
 *   enablersN_reg_own, enablersN_unreg_own
 *                    the holder's own REG and UNREG of one more bit, while
 *                    its N exist (the mean of 40, per run)
 *   enablersN_fork   the holder's fork(), until it returns in the holder
 *   enablersN_fork_reg
 *                    the same fork, until the child's first REG (of one more
 *                    bit) returned: that REG needs the child's copy of the N,
 *                    wherever it is made (the child reaped after each)
 *   enablersN_exit   the holder's exit until the event is deleted, once
 * fanout PxE: P processes each register one event (__rue_sf) at E bits:
 *   fanoutPxE        an ftrace enable and disable of the event, which
 *                    rewrites P*E bits twice, per run (checked once before:
 *                    every bit is set when the enable returns, clear when
 *                    the disable returns)
 * A value measured once is reported as a single run.
 *
 * Usage: scale_bench [-r RUNS] events N... | enablers N... | fanout PxE...
 */
#define _GNU_SOURCE
#include <sys/mman.h>
#include <sys/wait.h>

#include "bench.h"

#define PAIRS 40
#define NEW 20
#define CREATE_RUNS_BELOW 1000
#define EXIT_TIMEOUT_S 600
/*
 * After a forked child is reaped: 0.3 s, some 20 times the module's teardown of
 * 100,000 copies (14 ms in instructions, performance.md).
 */
#define FORK_SETTLE_US 300000

static int runs = 5;

/*
 * How many user events named @name exist, or with @name as prefix if it ends
 * in '_' (user_events_status lists one a line, "NAME" or "NAME # Used by ...",
 * up to an empty line). Events of other programs, or those still being
 * deleted from an earlier case, do not count.
 */
static long events_named(const char *name)
{
	static char buf[1 << 20];
	size_t len = strlen(name);
	int prefix = len && name[len - 1] == '_';
	long count = 0;

	if (read_file(provider_file("user_events_status"), buf, sizeof(buf)) < 0)
		die("user_events_status");
	for (char *line = buf, *end; *line && *line != '\n'; line = end + 1) {
		end = strchr(line, '\n');
		if (!end)
			break;
		if (!strncmp(line, name, len) &&
		    (prefix || line[len] == '\n' || line[len] == ' '))
			count++;
	}
	return count;
}

/*
 * Waits until @count user events named @name exist (events_named()); fails
 * after EXIT_TIMEOUT_S. The poll backs off from 1 to 64 ms: reading
 * user_events_status lists every event, which must not slow down the
 * deletions it waits for.
 */
static void wait_events(const char *name, long count)
{
	double limit = now_ns() + EXIT_TIMEOUT_S * 1e9;
	useconds_t pause = 1000;
	long now;

	while ((now = events_named(name)) != count) {
		if (now_ns() > limit) {
			fprintf(stderr, "scale_bench: %ld events %s* exist after %d s, want %ld\n",
				now, name, EXIT_TIMEOUT_S, count);
			exit(1);
		}
		usleep(pause);
		if (pause < 64000)
			pause *= 2;
	}
}

/* Enable words for @n bits, one page at least, faulted in. */
static __u32 *words(long n)
{
	size_t len = ((n + 31) / 32) * 4 + 4096;
	__u32 *w = mmap(NULL, len, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

	if (w == MAP_FAILED)
		die("mmap");
	return w;
}

static int open_data(void)
{
	int fd = open(provider_file("user_events_data"), O_RDWR);

	if (fd < 0)
		die("user_events_data");
	return fd;
}

static void must_reg(int fd, const char *name_args, __u32 *word, int bit)
{
	int r = rue_reg(fd, name_args, word, bit);

	if (r < 0) {
		errno = -r;
		fprintf(stderr, "scale_bench: REG %s: %s\n", name_args, strerror(errno));
		exit(1);
	}
}

static void must_unreg(int fd, __u32 *word, int bit)
{
	int r = rue_unreg(fd, word, bit);

	if (r < 0) {
		errno = -r;
		die("scale_bench: UNREG");
	}
}

/*
 * @PAIRS REG/UNREG pairs of @name_args at @word bit 0..: their mean REG and
 * UNREG ns in @reg and @unreg.
 */
static void reg_pairs(int fd, const char *name_args, __u32 *word, double *reg, double *unreg)
{
	double r = 0, u = 0, t0;

	for (int i = 0; i < PAIRS; i++) {
		t0 = now_ns();
		must_reg(fd, name_args, word, i % 32);
		r += now_ns() - t0;
		t0 = now_ns();
		must_unreg(fd, word, i % 32);
		u += now_ns() - t0;
	}
	*reg = r / PAIRS;
	*unreg = u / PAIRS;
}

/* A holder process: what it reports through @out, what it is told through @cmd. */
struct holder {
	pid_t pid;
	int out, cmd;
};

static void send_double(int fd, double v)
{
	if (write(fd, &v, sizeof(v)) != sizeof(v))
		die("pipe");
}

static double recv_double(int fd)
{
	double v;

	if (read(fd, &v, sizeof(v)) != sizeof(v))
		fail("scale_bench: a holder died");
	return v;
}

static void send_cmd(struct holder *h, char c)
{
	if (write(h->cmd, &c, 1) != 1)
		die("pipe");
}

static char recv_cmd(int fd)
{
	char c;

	if (read(fd, &c, 1) != 1)
		_exit(1);
	return c;
}

/*
 * Forks a holder that runs @fn(@n, @arg, out, cmd); its reports come back
 * through h->out, commands go through h->cmd.
 */
static void start_holder(struct holder *h, void (*fn)(long, const char *, int, int),
			 long n, const char *arg)
{
	int to_main[2], to_holder[2];

	if (pipe(to_main) || pipe(to_holder))
		die("pipe");
	h->pid = fork();
	if (h->pid < 0)
		die("fork");
	if (h->pid == 0) {
		close(to_main[0]);
		close(to_holder[1]);
		fn(n, arg, to_main[1], to_holder[0]);
		_exit(0);
	}
	close(to_main[1]);
	close(to_holder[0]);
	h->out = to_main[0];
	h->cmd = to_holder[1];
}

/* Tells the holder to exit and reaps it; ns until then and until no event @name is left. */
static double stop_holder(struct holder *h, const char *name)
{
	double t0 = now_ns();
	int status;

	send_cmd(h, 'x');
	if (waitpid(h->pid, &status, 0) != h->pid || !WIFEXITED(status) || WEXITSTATUS(status))
		fail("scale_bench: a holder failed");
	wait_events(name, 0);
	close(h->out);
	close(h->cmd);
	return now_ns() - t0;
}

/* Holds @n events named @prefix<i>, one enabler each; reports their mean creation. */
static void hold_events(long n, const char *prefix, int out, int cmd)
{
	__u32 *w = words(n);
	int fd = open_data();
	char name[128];
	double t0 = now_ns();

	for (long i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "%s%ld u32 a", prefix, i);
		must_reg(fd, name, &w[i / 32], i % 32);
	}
	send_double(out, (now_ns() - t0) / n);
	recv_cmd(cmd);
}

static void report1(const char *name, double v)
{
	report(name, &v, 1);
}

static void events(long n)
{
	double reg[MAX_RUNS], unreg[MAX_RUNS], create[MAX_RUNS], reg_new = 0, t0;
	int create_runs = n < CREATE_RUNS_BELOW ? runs : 1;
	char prefix[64], name[128];
	__u32 *w = words(32 + NEW);
	struct holder h, more;
	int fd;

	snprintf(prefix, sizeof(prefix), "__rue_sb%ld_", n);
	start_holder(&h, hold_events, n, prefix);
	create[0] = recv_double(h.out);
	fd = open_data();
	/*
	 * The event registered halfway: a table searched in creation order
	 * meets it after N/2 others, a hash table at once.
	 */
	snprintf(name, sizeof(name), "%s%ld u32 a", prefix, n / 2);
	for (int r = 0; r < runs; r++)
		reg_pairs(fd, name, &w[0], &reg[r], &unreg[r]);
	for (int i = 0; i < NEW; i++) {
		snprintf(name, sizeof(name), "__rue_sbn%ld_%d u32 a", n, i);
		t0 = now_ns();
		must_reg(fd, name, &w[1], i);
		reg_new += now_ns() - t0;
	}
	/*
	 * An enabler holds its event until UNREG or its process's exit, not
	 * the descriptor's close: unregistered, the new events go before the
	 * holder's exit is timed.
	 */
	for (int i = 0; i < NEW; i++)
		must_unreg(fd, &w[1], i);
	close(fd);
	snprintf(name, sizeof(name), "__rue_sbn%ld_", n);
	wait_events(name, 0);
	/* More holders, one after the other, each with its own names. */
	for (int r = 1; r < create_runs; r++) {
		snprintf(name, sizeof(name), "__rue_sbc%ld_%d_", n, r);
		start_holder(&more, hold_events, n, name);
		create[r] = recv_double(more.out);
		stop_holder(&more, name);
	}

	snprintf(name, sizeof(name), "events%ld_create", n);
	report(name, create, create_runs);
	snprintf(name, sizeof(name), "events%ld_reg", n);
	report(name, reg, runs);
	snprintf(name, sizeof(name), "events%ld_unreg", n);
	report(name, unreg, runs);
	snprintf(name, sizeof(name), "events%ld_reg_new", n);
	report1(name, reg_new / NEW);
	snprintf(name, sizeof(name), "events%ld_exit", n);
	report1(name, stop_holder(&h, prefix));
}

/*
 * A fork of a holder of enablers: reports the ns until fork() returned in the
 * forker, and until the child's first REG (one more bit of the holder's event,
 * at @word) returned, which needs the child's copy of the enablers: upstream
 * makes it inside fork(), the module before fork() returns or, for a REG that
 * comes first, in that REG. The child is reaped, and 0.3 s given to what its
 * exit left to workers, before this returns.
 */
static void fork_once(int fd, const char *name_args, __u32 *word, int out)
{
	int ready[2], status;
	double t0, forked, done;
	pid_t pid;

	if (pipe(ready))
		die("pipe");
	t0 = now_ns();
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		must_reg(fd, name_args, word, 0);
		done = now_ns();
		if (write(ready[1], &done, sizeof(done)) != sizeof(done))
			_exit(1);
		_exit(0);
	}
	forked = now_ns();
	close(ready[1]);
	if (read(ready[0], &done, sizeof(done)) != sizeof(done))
		fail("scale_bench: a forked child died");
	close(ready[0]);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		fail("scale_bench: a forked child failed");
	/* Time for what the child's exit left to workers, so that the next fork does not meet it. */
	usleep(FORK_SETTLE_US);
	send_double(out, forked - t0);
	send_double(out, done - t0);
}

/*
 * Holds @n enablers of the event @name_args; reports their mean REG. On 'o'
 * times runs of its own REG/UNREG pairs of one more word and reports them; on
 * 'f' forks once (fork_once).
 */
static void hold_enablers(long n, const char *name_args, int out, int cmd)
{
	__u32 *w = words(n + 32);
	int fd = open_data();
	double t0 = now_ns(), reg, unreg;

	for (long i = 0; i < n; i++)
		must_reg(fd, name_args, &w[i / 32], i % 32);
	send_double(out, (now_ns() - t0) / n);
	for (;;) {
		char c = recv_cmd(cmd);

		if (c == 'o') {
			reg_pairs(fd, name_args, &w[(n + 31) / 32], &reg, &unreg);
			send_double(out, reg);
			send_double(out, unreg);
		} else if (c == 'f') {
			fork_once(fd, name_args, &w[(n + 31) / 32], out);
		} else {
			return;
		}
	}
}

static void enablers(long n)
{
	double reg[MAX_RUNS], unreg[MAX_RUNS], reg_own[MAX_RUNS], unreg_own[MAX_RUNS];
	double fork_ret[MAX_RUNS], fork_reg[MAX_RUNS];
	char name_args[64], name[128];
	__u32 *w = words(32);
	struct holder h;
	int fd;

	snprintf(name_args, sizeof(name_args), "__rue_sbe%ld u32 a", n);
	start_holder(&h, hold_enablers, n, name_args);
	recv_double(h.out);
	fd = open_data();
	for (int r = 0; r < runs; r++) {
		reg_pairs(fd, name_args, w, &reg[r], &unreg[r]);
		send_cmd(&h, 'o');
		reg_own[r] = recv_double(h.out);
		unreg_own[r] = recv_double(h.out);
	}
	/* After the REGs: a child's exit leaves work behind (the module's teardown of its copies). */
	for (int r = 0; r < runs; r++) {
		send_cmd(&h, 'f');
		fork_ret[r] = recv_double(h.out);
		fork_reg[r] = recv_double(h.out);
	}
	close(fd);

	snprintf(name, sizeof(name), "enablers%ld_reg", n);
	report(name, reg, runs);
	snprintf(name, sizeof(name), "enablers%ld_unreg", n);
	report(name, unreg, runs);
	snprintf(name, sizeof(name), "enablers%ld_reg_own", n);
	report(name, reg_own, runs);
	snprintf(name, sizeof(name), "enablers%ld_unreg_own", n);
	report(name, unreg_own, runs);
	snprintf(name, sizeof(name), "enablers%ld_fork", n);
	report(name, fork_ret, runs);
	snprintf(name, sizeof(name), "enablers%ld_fork_reg", n);
	report(name, fork_reg, runs);
	snprintf(name, sizeof(name), "enablers%ld_exit", n);
	/* name_args without its field: the event's name. */
	*strchr(name_args, ' ') = '\0';
	report1(name, stop_holder(&h, name_args));
}

#define FAN_EVENT "__rue_sf"

/*
 * One of the fan-out processes: registers FAN_EVENT at @e bits and answers
 * 's' (are all set?) and 'c' (are all clear?) with 1 or 0.
 */
static void hold_fan(long e, const char *unused, int out, int cmd)
{
	__u32 *w = words(e);
	int fd = open_data();
	char c;

	(void)unused;
	for (long i = 0; i < e; i++)
		must_reg(fd, FAN_EVENT " u32 a", &w[i / 32], i % 32);
	send_double(out, 0);
	while ((c = recv_cmd(cmd)) == 's' || c == 'c') {
		int all = 1;

		for (long i = 0; i < e; i++)
			all &= !!(__atomic_load_n(&w[i / 32], __ATOMIC_RELAXED) & (1u << (i % 32))) ==
				(c == 's');
		send_double(out, all);
	}
}

/* Asks every holder @q ('s' or 'c'); fails unless all answer yes. */
static void fan_check(struct holder *hs, long p, char q)
{
	for (long i = 0; i < p; i++)
		send_cmd(&hs[i], q);
	for (long i = 0; i < p; i++)
		if (recv_double(hs[i].out) != 1)
			fail(q == 's' ? "scale_bench: fanout: a bit was not set by the enable" :
			     "scale_bench: fanout: a bit was not cleared by the disable");
}

static void fanout(long p, long e)
{
	struct holder *hs = calloc(p, sizeof(*hs));
	double toggle[MAX_RUNS], t0;
	char name[64];

	if (!hs)
		die("calloc");
	for (long i = 0; i < p; i++)
		start_holder(&hs[i], hold_fan, e, NULL);
	for (long i = 0; i < p; i++)
		recv_double(hs[i].out);
	set_enable(FAN_EVENT, "1");
	fan_check(hs, p, 's');
	set_enable(FAN_EVENT, "0");
	fan_check(hs, p, 'c');
	for (int r = 0; r < runs; r++) {
		t0 = now_ns();
		set_enable(FAN_EVENT, "1");
		set_enable(FAN_EVENT, "0");
		toggle[r] = now_ns() - t0;
	}
	snprintf(name, sizeof(name), "fanout%ldx%ld", p, e);
	report(name, toggle, runs);
	for (long i = 0; i < p - 1; i++)
		send_cmd(&hs[i], 'x');
	for (long i = 0; i < p - 1; i++)
		waitpid(hs[i].pid, NULL, 0);
	stop_holder(&hs[p - 1], FAN_EVENT);
	free(hs);
}

int main(int argc, char **argv)
{
	int opt;

	while ((opt = getopt(argc, argv, "r:")) != -1) {
		if (opt != 'r')
			goto usage;
		runs = atoi(optarg);
	}
	if (runs < 1 || runs > MAX_RUNS || optind + 2 > argc)
		goto usage;
	for (int i = optind + 1; i < argc; i++) {
		long a = atol(argv[i]), b = 0;
		char *x = strchr(argv[i], 'x');

		if (!strcmp(argv[optind], "events") && a > 0) {
			events(a);
		} else if (!strcmp(argv[optind], "enablers") && a > 0) {
			enablers(a);
		} else if (!strcmp(argv[optind], "fanout") && x && (b = atol(x + 1)) > 0 && a > 0) {
			fanout(a, b);
		} else {
			goto usage;
		}
	}
	return 0;
usage:
	fprintf(stderr, "usage: scale_bench [-r RUNS] events N... | enablers N... | fanout PxE...\n");
	return 2;
}
