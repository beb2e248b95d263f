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
#include <sys/mman.h>

static void (*insnprof_start)(void), (*insnprof_stop)(void);

static inline void insnprof_init(void)
{
	unsigned char *p = mmap((void *)0x5a5a00000000ull, 0x2000,
				PROT_READ | PROT_WRITE | PROT_EXEC,
				MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);

	if (p == MAP_FAILED)
		abort();
	p[0] = 0xc3;		/* ret */
	p[0x1000] = 0xc3;
	insnprof_start = (void (*)(void))p;
	insnprof_stop = (void (*)(void))(p + 0x1000);
}

#endif /* RUE_INSNPROF_H */
