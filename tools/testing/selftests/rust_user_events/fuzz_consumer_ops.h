// SPDX-License-Identifier: GPL-2.0
/*
 * fuzz_test: the consumers' operations: tracefs (enable, filters, triggers,
 * reads, sysctl), perf events and BPF programs.
 * Part of fuzz_test.c, which includes it once after its shared state; not a
 * header of its own: it uses that file's types, state and helpers.
 */
#ifndef FUZZ_CONSUMER_OPS_H
#define FUZZ_CONSUMER_OPS_H

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

#endif /* FUZZ_CONSUMER_OPS_H */
