// SPDX-License-Identifier: GPL-2.0
/*
 * fuzz_test: memory, processes and threads (fork, vfork, exec, SCM_RIGHTS,
 * short-lived threads), and the dispatch of one operation.
 * Part of fuzz_test.c, which includes it once after its shared state; not a
 * header of its own: it uses that file's types, state and helpers.
 */
#ifndef FUZZ_PROC_OPS_H
#define FUZZ_PROC_OPS_H

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

#endif /* FUZZ_PROC_OPS_H */
