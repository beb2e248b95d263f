// SPDX-License-Identifier: GPL-2.0
/*
 * fuzz_test: the ABI's operations: REG, UNREG, DEL, writes, data fds and
 * dynamic_events, with the helpers they share (enable addresses, fault
 * injection).
 * Part of fuzz_test.c, which includes it once after its shared state; not a
 * header of its own: it uses that file's types, state and helpers.
 */
#ifndef FUZZ_ABI_OPS_H
#define FUZZ_ABI_OPS_H

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

/*
 * Disarms what maybe_arm_fault() armed before a call of @op that returned @ret, and counts
 * what it did. fail-nth read back 0 says that the armed fault point was reached and failed
 * during the call (a positive value: the call had fewer fault points and nothing failed); the
 * read and the write allocate nothing, so they count no fault point themselves.
 */
static void disarm_fault(struct tctx *t, int armed, int op, long ret)
{
	char buf[16] = { 0 };
	int injected;

	if (!armed)
		return;
	injected = pread(t->nth_fd, buf, sizeof(buf) - 1, 0) > 0 && atoi(buf) == 0;
	if (pwrite(t->nth_fd, "0", 1, 0) != 1) {
		/* nothing to do: the next arm overwrites it */
	}
	if (!S)
		return;
	__atomic_fetch_add(&S->fault_armed_op[op], 1, __ATOMIC_RELAXED);
	if (!injected)
		return;
	__atomic_fetch_add(&S->fault_injected[op], 1, __ATOMIC_RELAXED);
	if (ret < 0)
		__atomic_fetch_add(&S->fault_failed[op], 1, __ATOMIC_RELAXED);
	if (ret == -ENOMEM)
		__atomic_fetch_add(&S->fault_enomem[op], 1, __ATOMIC_RELAXED);
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
	disarm_fault(t, armed, OP_REG, ret);
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
	disarm_fault(t, armed, OP_UNREG, ret);
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
	disarm_fault(t, armed, OP_DEL, ret);
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
	disarm_fault(t, armed, OP_OPEN, ret);
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
	disarm_fault(t, armed, OP_DYN_CREATE, ret);
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
	disarm_fault(t, armed, OP_DYN_DELETE, ret);
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

#endif /* FUZZ_ABI_OPS_H */
