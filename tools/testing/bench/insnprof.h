/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The counting window of insnprof (insnprof.c) for a guest program:
 * insnprof_init() maps the two marker pages, insnprof_start() drops the counts
 * so far, insnprof_stop() writes the counts out. Without the plugin they are
 * two calls to a return.
 */
#ifndef RUE_INSNPROF_H
#define RUE_INSNPROF_H

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static void (*insnprof_start)(void), (*insnprof_stop)(void);

static inline void insnprof_init(void)
{
	unsigned char *p = mmap((void *)0x5a5a00000000ull, 0x2000,
				PROT_READ | PROT_WRITE | PROT_EXEC,
				MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);

	if (p == MAP_FAILED)
		abort();
#ifdef __aarch64__
	static const unsigned char ret[] = { 0xc0, 0x03, 0x5f, 0xd6 };	/* ret */

	memcpy(p, ret, sizeof(ret));
	memcpy(p + 0x1000, ret, sizeof(ret));
	__builtin___clear_cache((char *)p, (char *)p + 0x2000);
#else
	p[0] = 0xc3;		/* ret */
	p[0x1000] = 0xc3;
#endif
	insnprof_start = (void (*)(void))p;
	insnprof_stop = (void (*)(void))(p + 0x1000);
}

#endif /* RUE_INSNPROF_H */
