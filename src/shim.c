// SPDX-License-Identifier: GPL-2.0
/*
 * C shim of rust_user_events (see include/rue_shim.h).
 */
#include <linux/fs.h>
#include <linux/mount.h>
#include <linux/namei.h>
#include <linux/seq_file.h>
#include <linux/stddef.h>
#include <linux/tracepoint.h>
#include <linux/uio.h>

#include "rue_shim.h"

#define RUE_OFFSET(type, field) { #type "." #field, offsetof(struct type, field) }
#define RUE_SIZE(type) { "sizeof " #type, sizeof(struct type) }

/* Keep in the same order as `rust_layout()` in src/layout.rs. */
const struct rue_layout_entry rue_layout_c[] = {
	RUE_SIZE(file),
	RUE_OFFSET(file, private_data),
	RUE_OFFSET(inode, i_private),
	RUE_OFFSET(kiocb, ki_filp),
	RUE_OFFSET(seq_file, private),
	RUE_OFFSET(vfsmount, mnt_root),
	RUE_OFFSET(vfsmount, mnt_sb),
	RUE_OFFSET(super_block, s_type),
	RUE_OFFSET(file_system_type, name),
	RUE_SIZE(iov_iter),
	RUE_SIZE(list_head),
	RUE_SIZE(mutex),
	RUE_SIZE(tracepoint),
	RUE_OFFSET(tracepoint, funcs),
};
const unsigned int rue_layout_c_len = ARRAY_SIZE(rue_layout_c);

struct dentry *rue_lookup_positive(struct dentry *dir, const char *name)
{
	return lookup_noperm_positive_unlocked(&QSTR(name), dir);
}
