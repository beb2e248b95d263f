/* SPDX-License-Identifier: GPL-2.0 */
/*
 * C shim of rust_user_events: one-line wrappers for static inlines and macros
 * that bindgen cannot see, and the C side of the load-time layout check.
 * No logic lives here.
 */
#ifndef RUE_SHIM_H
#define RUE_SHIM_H

#include <linux/dcache.h>
#include <linux/types.h>

/* One `offsetof`/`sizeof` fact as C computes it; see src/layout.rs. */
struct rue_layout_entry {
	const char *what;
	unsigned long value;
};

/* The facts the Rust side re-derives with `offset_of!`/`size_of`. */
extern const struct rue_layout_entry rue_layout_c[];
/* Number of entries in rue_layout_c. */
extern const unsigned int rue_layout_c_len;

/* lookup_noperm_positive_unlocked() of @name under @dir (QSTR is a macro). */
struct dentry *rue_lookup_positive(struct dentry *dir, const char *name);

#endif /* RUE_SHIM_H */
