// SPDX-License-Identifier: GPL-2.0
/*
 * C shim of rust_user_events (see include/rue_shim.h).
 */
#include <linux/capability.h>
#include <linux/compat.h>
#include <linux/cred.h>
#include <linux/fs.h>
#include <linux/futex.h>
#include <linux/highmem.h>
#include <linux/memcontrol.h>
#include <linux/mm.h>
#include <linux/mount.h>
#include <linux/namei.h>
#include <linux/percpu.h>
#include <linux/perf_event.h>
#include <linux/ring_buffer.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/seq_file.h>
#include <linux/stddef.h>
#include <linux/trace_events.h>
#include <linux/tracepoint.h>
#include <linux/uaccess.h>
#include <linux/uio.h>
#include <linux/unaligned.h>
#include <linux/user_namespace.h>
#include <linux/userfaultfd_k.h>
#include <linux/utsname.h>
#include <linux/workqueue.h>
#include <asm/futex.h>

#include "trace.h"		/* kernel/trace/trace.h (private): struct trace_array */
#include "rue_shim.h"

#define RUE_OFFSET(type, field) { #type "." #field, offsetof(struct type, field) }
#define RUE_SIZE(type) { "sizeof " #type, sizeof(struct type) }

/* Keep in the same order as `rust_layout()` in src/layout.rs. */
const struct rue_layout_entry rue_layout_c[] = {
	RUE_SIZE(file),
	RUE_OFFSET(file, private_data),
	RUE_OFFSET(inode, i_private),
	RUE_OFFSET(dentry, d_inode),
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
	RUE_OFFSET(tracepoint, key),
	RUE_OFFSET(tracepoint, funcs),
	RUE_OFFSET(trace_event_call, perf_events),
	RUE_OFFSET(trace_event_call, prog_array),
	RUE_OFFSET(task_struct, mm),
	RUE_OFFSET(task_struct, pagefault_disabled),
	RUE_OFFSET(task_struct, perf_recursion),
	RUE_OFFSET(task_struct, pid),
	RUE_OFFSET(task_struct, migration_disabled),
#if defined(CONFIG_X86_64) || defined(CONFIG_ARM64)
	RUE_OFFSET(task_struct, thread_info.flags),
#endif
#ifdef CONFIG_ARM64
	RUE_OFFSET(task_struct, thread_info.preempt_count),
	RUE_OFFSET(task_struct, thread_info.cpu),
#endif
	RUE_OFFSET(trace_event_file, event_call),
	RUE_OFFSET(trace_event_file, tr),
	RUE_OFFSET(trace_event_file, flags),
	RUE_OFFSET(trace_array, array_buffer),
	RUE_OFFSET(trace_array, trace_flags),
	RUE_OFFSET(trace_array, buffer_disabled),
	RUE_OFFSET(array_buffer, buffer),
	RUE_OFFSET(static_key, enabled),
	RUE_OFFSET(srcu_struct, srcu_ctrp),
	RUE_OFFSET(iov_iter, iter_type),
	RUE_OFFSET(iov_iter, iov_offset),
	RUE_OFFSET(iov_iter, ubuf),
	RUE_OFFSET(iov_iter, __iov),
	RUE_OFFSET(iov_iter, nr_segs),
	RUE_OFFSET(trace_event_call, event),
	RUE_OFFSET(trace_event, type),
	RUE_SIZE(ring_buffer_event),
	RUE_OFFSET(ring_buffer_event, array),
#ifdef CONFIG_X86_64
	RUE_OFFSET(pt_regs, ip),
	RUE_OFFSET(pt_regs, csx),
	RUE_OFFSET(pt_regs, flags),
	RUE_OFFSET(pt_regs, sp),
#endif
};
const unsigned int rue_layout_c_len = ARRAY_SIZE(rue_layout_c);

struct dentry *rue_lookup_positive(struct dentry *dir, const char *name)
{
	return lookup_noperm_positive_unlocked(&QSTR(name), dir);
}

bool rue_trace_trigger_soft_disabled(struct trace_event_file *file)
{
	return trace_trigger_soft_disabled(file);
}

/*
 * The cookie is a per-CPU pointer. GCC gives those their own address space
 * (__seg_gs) and warns on a direct cast to or from a plain pointer, so the
 * casts go through an integer, as the kernel's own per-CPU accessors do.
 */
/* The write path's fallback when the kernel changed static_key_count() (mirrors/list). */
bool rue_static_key_enabled(struct static_key *key)
{
	return static_key_enabled(key);
}

void *rue_tracepoint_read_lock(void)
{
	return (void *)(unsigned long)srcu_read_lock_fast_notrace(&tracepoint_srcu);
}

void rue_tracepoint_read_unlock(void *cookie)
{
	srcu_read_unlock_fast_notrace(&tracepoint_srcu,
				      (struct srcu_ctr __percpu *)(unsigned long)cookie);
}

/*
 * The write section's entry and exit (tracepoint.rs); on x86-64 and arm64
 * the module does both inline, these serve the kernels it does not (and a
 * build whose mirrors changed).
 */
void *rue_tracepoint_write_lock(unsigned int *cpu)
{
	preempt_disable_notrace();
	pagefault_disable();
	*cpu = smp_processor_id();
	return rue_tracepoint_read_lock();
}

void rue_tracepoint_write_unlock(void *cookie)
{
	rue_tracepoint_read_unlock(cookie);
	pagefault_enable();
	preempt_enable_notrace();
}

void rue_tracepoint_synchronize_unregister(void)
{
	tracepoint_synchronize_unregister();
}

unsigned int rue_smp_processor_id(void)
{
	return smp_processor_id();
}

unsigned int rue_nr_cpu_ids(void)
{
	return nr_cpu_ids;
}

int rue_copy_struct_from_user(void *dst, size_t ksize, const void __user *src, size_t usize)
{
	return copy_struct_from_user(dst, ksize, src, usize);
}

bool rue_access_ok(const void __user *ptr, size_t size)
{
	return access_ok(ptr, size);
}

#ifdef CONFIG_COMPAT
void __user *rue_compat_ptr(u32 uptr)
{
	return compat_ptr(uptr);
}
#endif

bool rue_perfmon_capable(void)
{
	return perfmon_capable();
}

const struct cred *rue_override_fsuid_root(void)
{
	struct cred *cred = prepare_creds();
	const struct cred *old;

	if (!cred)
		return NULL;
	cred->fsuid = GLOBAL_ROOT_UID;
	old = override_creds(cred);
	return old;
}

void rue_revert_creds(const struct cred *old)
{
	put_cred(revert_creds(old));
}

const struct cred *rue_override_creds(const struct cred *cred)
{
	return override_creds(cred);
}

kgid_t rue_make_kgid(gid_t gid)
{
	return make_kgid(&init_user_ns, gid);
}

bool rue_gid_valid(kgid_t gid)
{
	return gid_valid(gid);
}

const char *rue_kernel_version(void)
{
	return init_uts_ns.name.version;
}

void rue_inode_lock(struct inode *inode)
{
	inode_lock(inode);
}

void rue_inode_unlock(struct inode *inode)
{
	inode_unlock(inode);
}

void rue_page_change_bit(struct page *page, unsigned long offset, unsigned int bit, bool set)
{
	unsigned long *word = kmap_local_page(page) + offset;

	if (set)
		set_bit(bit, word);
	else
		clear_bit(bit, word);
	kunmap_local(word);
}

int rue_user_read_long_remote(struct mm_struct *mm, unsigned long addr, unsigned long *val)
{
	struct page *page;
	unsigned long *word;

	if (get_user_pages_remote(mm, addr, 1, FOLL_NOFAULT, &page, NULL) != 1)
		return -EFAULT;
	word = kmap_local_page(page) + offset_in_page(addr);
	*val = READ_ONCE(*word);
	kunmap_local(word);
	put_page(page);
	return 0;
}

bool rue_fatal_signal_pending(void)
{
	return fatal_signal_pending(current);
}

bool rue_userfaultfd_armed(struct mm_struct *mm, unsigned long addr)
{
	struct vm_area_struct *vma = vma_lookup(mm, addr);

	return vma && userfaultfd_armed(vma);
}

int rue_user_change_bit(u32 __user *uaddr, u32 mask, bool set)
{
	int old, ret;

	pagefault_disable();
	ret = arch_futex_atomic_op_inuser(set ? FUTEX_OP_OR : FUTEX_OP_ANDN, mask, &old, uaddr);
	pagefault_enable();
	return ret;
}

int rue_get_user_u32(u32 *val, const u32 __user *addr)
{
	return get_user(*val, addr);
}

size_t rue_copy_from_user_nofault(void *dst, const void __user *src, size_t len)
{
	if (len > RUE_COPY_WORDS_MAX)
		return copy_from_user_inatomic_nontemporal(dst, src, len);
	if (can_do_masked_user_access())
		src = masked_user_read_access_begin(src);
	else if (!user_read_access_begin(src, len))
		return len;
	if (len >= 8) {
		size_t off;
		u64 word;

		/* Words from the start, then the last one, which may overlap the one before. */
		for (off = 0; off + 8 < len; off += 8) {
			unsafe_get_user(word, (const u64 __user *)(src + off), fault);
			put_unaligned(word, (u64 *)(dst + off));
		}
		unsafe_get_user(word, (const u64 __user *)(src + len - 8), fault);
		put_unaligned(word, (u64 *)(dst + len - 8));
	} else if (len >= 4) {
		u32 first, last;

		unsafe_get_user(first, (const u32 __user *)src, fault);
		unsafe_get_user(last, (const u32 __user *)(src + len - 4), fault);
		put_unaligned(first, (u32 *)dst);
		put_unaligned(last, (u32 *)(dst + len - 4));
	} else {
		for (size_t i = 0; i < len; i++) {
			u8 byte;

			unsafe_get_user(byte, (const u8 __user *)(src + i), fault);
			((u8 *)dst)[i] = byte;
		}
	}
	user_read_access_end();
	return 0;
fault:
	user_read_access_end();
	return len;
}

#ifdef CONFIG_ARM64
void rue_perf_set_caller_regs(struct pt_regs *regs, unsigned long pc, unsigned long fp,
			      unsigned long sp)
{
	regs->pc = pc;
	regs->regs[29] = fp;
	regs->sp = sp;
	regs->pstate = PSR_MODE_EL1h;
}
#endif

size_t rue_iov_iter_count(const struct iov_iter *iter)
{
	return iov_iter_count(iter);
}

enum print_line_t rue_trace_handle_return(struct trace_seq *s)
{
	return trace_handle_return(s);
}

void rue_list_del_init(struct list_head *entry)
{
	list_del_init(entry);
}

void rue_lockdep_assert_held(struct mutex *lock)
{
	lockdep_assert_held(lock);
}

struct workqueue_struct *rue_alloc_workqueue(const char *name)
{
	return alloc_ordered_workqueue("%s", 0, name);
}

struct workqueue_struct *rue_alloc_unbound_workqueue(const char *name)
{
	return alloc_workqueue("%s", WQ_UNBOUND, 0, name);
}

struct workqueue_struct *rue_alloc_percpu_workqueue(const char *name)
{
	return alloc_workqueue("%s", WQ_PERCPU, 0, name);
}

struct mem_cgroup *rue_memcg_get(struct mm_struct *mm)
{
	return get_mem_cgroup_from_mm(mm);
}

void rue_memcg_put(struct mem_cgroup *memcg)
{
	mem_cgroup_put(memcg);
}

struct mem_cgroup *rue_charge_to(struct mem_cgroup *memcg)
{
	return set_active_memcg(memcg);
}

bool rue_trace_event_dyn_busy(struct trace_event_call *call)
{
	return atomic_read(&call->refcnt) != 0;
}

/* The Rust implementations (src/probes.rs, src/trace_text.rs); their enums are plain integers there. */
int rue_rust_user_event_reg(struct trace_event_call *call, unsigned int type, void *data);
unsigned int rue_rust_print_trace(struct trace_iterator *iter, int flags,
				  struct trace_event *event);

int rue_user_event_reg(struct trace_event_call *call, enum trace_reg type, void *data)
{
	return rue_rust_user_event_reg(call, type, data);
}

enum print_line_t rue_print_trace(struct trace_iterator *iter, int flags,
				  struct trace_event *event)
{
	return rue_rust_print_trace(iter, flags, event);
}

void *rue_per_cpu_ptr(void *ptr, unsigned int cpu)
{
	/* Through an integer, as for the tracepoint cookie above. */
	return per_cpu_ptr((void __percpu *)(unsigned long)ptr, cpu);
}

void rue_trace_event_discard(struct trace_event_buffer *fbuffer,
			     struct ring_buffer_event **buffered, int *buffered_cnt)
{
	struct ring_buffer_event * __percpu *pcpu_buffered =
		(struct ring_buffer_event * __percpu *)(unsigned long)buffered;
	int __percpu *pcpu_cnt = (int __percpu *)(unsigned long)buffered_cnt;

	if (this_cpu_read(*pcpu_buffered) == fbuffer->event) {
		/* Simply release the temp buffer and enable preemption */
		this_cpu_dec(*pcpu_cnt);
		preempt_enable_notrace();
		return;
	}
	/* ring_buffer_discard_commit() enables preemption */
	ring_buffer_discard_commit(fbuffer->buffer, fbuffer->event);
}

unsigned int rue_tracing_gen_ctx_dec(void)
{
	unsigned int flags, pc, ctx;
	unsigned short migration = 0;
	unsigned long irqflags;

	local_save_flags(irqflags);
	flags = irqs_disabled_flags(irqflags) ? TRACE_FLAG_IRQS_OFF : 0;
	pc = preempt_count();
	if (pc & NMI_MASK)
		flags |= TRACE_FLAG_NMI;
	if (pc & HARDIRQ_MASK)
		flags |= TRACE_FLAG_HARDIRQ;
	if (in_serving_softirq())
		flags |= TRACE_FLAG_SOFTIRQ;
	if (softirq_count() >> (SOFTIRQ_SHIFT + 1))
		flags |= TRACE_FLAG_BH_OFF;
	if (tif_need_resched())
		flags |= TRACE_FLAG_NEED_RESCHED;
	if (test_preempt_need_resched())
		flags |= TRACE_FLAG_PREEMPT_RESCHED;
	if (IS_ENABLED(CONFIG_ARCH_HAS_PREEMPT_LAZY) && tif_test_bit(TIF_NEED_RESCHED_LAZY))
		flags |= TRACE_FLAG_NEED_RESCHED_LAZY;
#ifdef CONFIG_SMP
	migration = current->migration_disabled;
#endif
	ctx = (flags << 16) | min_t(unsigned int, pc & 0xff, 0xf) |
	      min_t(unsigned int, migration, 0xf) << 4;
	/* The tracepoint's own preempt_disable() not counted. */
	if (IS_ENABLED(CONFIG_PREEMPTION))
		ctx--;
	return ctx;
}
