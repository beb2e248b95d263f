/* SPDX-License-Identifier: GPL-2.0 */
/*
 * perf helpers shared by the rust_user_events guest tests: a sampling perf
 * event on a user event, and its mmap ring read back record by record.
 */
#ifndef RUE_PERF_H
#define RUE_PERF_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/perf_event.h>

#include "rue_helpers.h"

#define EVENTS_DIR RUE_TRACEFS "events/user_events/"
/* Data pages of a ring: room for a few 8 KiB samples. */
#define RING_PAGES 16
/* The largest payload a perf record holds: 8192 bytes less the 8-byte trace_entry. */
#define MAX_PAYLOAD 8184

/* A perf event on a user event, and its mmap ring (page is NULL without one). */
struct perf_handle {
	int fd;
	struct perf_event_mmap_page *page;
	size_t map_len;
};

static inline int event_id(const char *name)
{
	char path[256], buf[32];

	snprintf(path, sizeof(path), EVENTS_DIR "%s/id", name);
	if (read_file(path, buf, sizeof(buf)) <= 0)
		return -1;
	return atoi(buf);
}

/* Opens a sampling perf event on @name for @pid/@cpu; maps a ring if @ring. */
static inline int perf_open(struct perf_handle *h, const char *name, pid_t pid, int cpu, int ring)
{
	struct perf_event_attr pe = {
		.type = PERF_TYPE_TRACEPOINT,
		.size = sizeof(pe),
		.sample_period = 1,
		.sample_type = PERF_SAMPLE_RAW,
		.wakeup_events = 1,
	};
	int id = event_id(name);

	if (id < 0)
		return -ENOENT;
	pe.config = id;
	h->page = NULL;
	h->map_len = 0;
	h->fd = syscall(__NR_perf_event_open, &pe, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
	if (h->fd < 0)
		return -errno;
	if (ring) {
		h->map_len = (RING_PAGES + 1) * sysconf(_SC_PAGESIZE);
		h->page = mmap(NULL, h->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, h->fd, 0);
		if (h->page == MAP_FAILED) {
			close(h->fd);
			return -errno;
		}
	}
	return 0;
}

static inline void perf_close(struct perf_handle *h)
{
	if (h->page)
		munmap(h->page, h->map_len);
	close(h->fd);
}

/*
 * Consumes the next record of @h's ring and copies its raw data into @raw.
 * Returns the raw size, 0 if the ring is empty, -1 (the record consumed all
 * the same) if it is not a PERF_RECORD_SAMPLE or does not fit.
 */
static inline int next_sample(struct perf_handle *h, void *raw, size_t len)
{
	const unsigned char *data = (const unsigned char *)h->page + h->page->data_offset;
	__u64 size = h->page->data_size;
	__u64 head = __atomic_load_n(&h->page->data_head, __ATOMIC_ACQUIRE);
	__u64 tail = h->page->data_tail;
	struct perf_event_header hdr;
	unsigned char rec[MAX_PAYLOAD + 64];
	__u32 raw_size;

	if (tail == head)
		return 0;
	for (size_t i = 0; i < sizeof(hdr); i++)
		((unsigned char *)&hdr)[i] = data[(tail + i) % size];
	for (size_t i = 0; i < hdr.size && i < sizeof(rec); i++)
		rec[i] = data[(tail + i) % size];
	__atomic_store_n(&h->page->data_tail, tail + hdr.size, __ATOMIC_RELEASE);
	if (hdr.type != PERF_RECORD_SAMPLE || hdr.size > sizeof(rec))
		return -1;
	memcpy(&raw_size, rec + sizeof(hdr), sizeof(raw_size));
	if (raw_size > len || sizeof(hdr) + sizeof(raw_size) + raw_size > hdr.size)
		return -1;
	memcpy(raw, rec + sizeof(hdr) + sizeof(raw_size), raw_size);
	return raw_size;
}

static inline int ring_empty(struct perf_handle *h)
{
	return __atomic_load_n(&h->page->data_head, __ATOMIC_ACQUIRE) == h->page->data_tail;
}

#endif /* RUE_PERF_H */
