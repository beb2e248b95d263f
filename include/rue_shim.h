/* SPDX-License-Identifier: GPL-2.0 */
/*
 * C shim of rust_user_events: one-line wrappers for static inlines and macros
 * that bindgen cannot see, and the C side of the load-time layout check.
 * No logic lives here but rue_tracing_gen_ctx_dec(), the body of a function
 * the kernel does not export, written with the same inlines (src/tracepoint.rs
 * has it inline on x86-64 and arm64), and
 * rue_copy_from_user_nofault(), a user copy in one user access section, which
 * only C can open (unsafe_get_user() and its exception table entries).
 */
#ifndef RUE_SHIM_H
#define RUE_SHIM_H

#include <linux/cred.h>
#include <linux/dcache.h>
#include <linux/sched.h>
#include <linux/stat.h>
#include <linux/stddef.h>
#include <linux/types.h>
#include <linux/trace_events.h>
#include <uapi/linux/user_events.h>

struct inode;
struct iov_iter;
struct mm_struct;
struct page;
struct task_struct;
struct ring_buffer_event;
struct trace_event_buffer;
struct trace_event_file;
struct tracepoint;
struct tracepoint_func;
struct work_struct;
struct workqueue_struct;
struct mutex;
struct list_head;
struct trace_seq;
struct trace_event_call;
struct hlist_head;
struct pt_regs;
struct trace_entry;

/*
 * Where the fields of a task that src/task.rs reads are, as C lays them out:
 * the kernel crate's task_struct can disagree (Documentation/design.md, "Layout
 * checks"). Enumerators, so that bindgen hands Rust the values clang computes;
 * the load-time layout check compares them with the compiler's own offsetof.
 */
enum {
	RUE_TASK_MM = offsetof(struct task_struct, mm),
	RUE_TASK_PAGEFAULT_DISABLED = offsetof(struct task_struct, pagefault_disabled),
	RUE_TASK_PERF_RECURSION = offsetof(struct task_struct, perf_recursion),
	RUE_TASK_PID = offsetof(struct task_struct, pid),
	RUE_TASK_MIGRATION_DISABLED = offsetof(struct task_struct, migration_disabled),
#if defined(CONFIG_X86_64) || defined(CONFIG_ARM64)
	RUE_TASK_TI_FLAGS = offsetof(struct task_struct, thread_info.flags),
#endif
#ifdef CONFIG_ARM64
	RUE_TASK_TI_PREEMPT_COUNT = offsetof(struct task_struct, thread_info.preempt_count),
	RUE_TASK_TI_CPU = offsetof(struct task_struct, thread_info.cpu),
#endif
};

/*
 * The sizes of those fields, which src/task.rs asserts its reads' types
 * against at build time: an offset that stays while the type changes (an
 * unsigned short grown to an int) must not be read as before.
 */
enum {
	RUE_TASK_MM_SIZE = sizeof_field(struct task_struct, mm),
	RUE_TASK_PAGEFAULT_DISABLED_SIZE = sizeof_field(struct task_struct, pagefault_disabled),
	RUE_TASK_PERF_RECURSION_SIZE = sizeof_field(struct task_struct, perf_recursion[0]),
	RUE_TASK_PID_SIZE = sizeof_field(struct task_struct, pid),
	RUE_TASK_MIGRATION_DISABLED_SIZE = sizeof_field(struct task_struct, migration_disabled),
#if defined(CONFIG_X86_64) || defined(CONFIG_ARM64)
	RUE_TASK_TI_FLAGS_SIZE = sizeof_field(struct task_struct, thread_info.flags),
#endif
#ifdef CONFIG_ARM64
	RUE_TASK_TI_PREEMPT_COUNT_SIZE = sizeof_field(struct task_struct, thread_info.preempt_count),
	RUE_TASK_TI_CPU_SIZE = sizeof_field(struct task_struct, thread_info.cpu),
#endif
};

/*
 * The fields of the preemption count (include/linux/preempt.h) that
 * tracing_gen_ctx_irq_test() reads, which src/tracepoint.rs checks
 * src/logic/trace_ctx.rs against at build time.
 */
enum {
	RUE_PREEMPT_MASK = PREEMPT_MASK,
	RUE_SOFTIRQ_MASK = SOFTIRQ_MASK,
	RUE_HARDIRQ_MASK = HARDIRQ_MASK,
	RUE_NMI_MASK = NMI_MASK,
};

/*
 * The ABI's values as the kernel's headers compute them, which src/layout.rs
 * asserts the module's own (src/logic/abi.rs) against at build time: the
 * ioctl numbers (function-like macros, which bindgen does not evaluate), as a
 * 64-bit and as a 32-bit program computes them (the UAPI's _IOWR/_IOW with a
 * pointer's size, 4 bytes in a 32-bit program: __u32 stands for the pointer
 * there), the registration flags, the layout of struct user_reg and struct
 * user_unreg, the size of a record's header and the mode bits an inode's
 * mode keeps (S_IALLUGO, src/tracefs.rs).
 */
enum {
	RUE_DIAG_IOCSREG = DIAG_IOCSREG,
	RUE_DIAG_IOCSDEL = DIAG_IOCSDEL,
	RUE_DIAG_IOCSUNREG = DIAG_IOCSUNREG,
	RUE_DIAG_IOCSREG_COMPAT = _IOWR(DIAG_IOC_MAGIC, 0, __u32),
	RUE_DIAG_IOCSDEL_COMPAT = _IOW(DIAG_IOC_MAGIC, 1, __u32),
	RUE_DIAG_IOCSUNREG_COMPAT = _IOW(DIAG_IOC_MAGIC, 2, __u32),
	RUE_USER_EVENT_REG_PERSIST = USER_EVENT_REG_PERSIST,
	RUE_USER_EVENT_REG_MULTI_FORMAT = USER_EVENT_REG_MULTI_FORMAT,
	RUE_USER_EVENT_REG_MAX = USER_EVENT_REG_MAX,
	RUE_USER_REG_SIZE = sizeof(struct user_reg),
	RUE_USER_REG_SIZE_OFF = offsetof(struct user_reg, size),
	RUE_USER_REG_ENABLE_BIT = offsetof(struct user_reg, enable_bit),
	RUE_USER_REG_ENABLE_SIZE = offsetof(struct user_reg, enable_size),
	RUE_USER_REG_FLAGS = offsetof(struct user_reg, flags),
	RUE_USER_REG_ENABLE_ADDR = offsetof(struct user_reg, enable_addr),
	RUE_USER_REG_NAME_ARGS = offsetof(struct user_reg, name_args),
	RUE_USER_REG_WRITE_INDEX = offsetof(struct user_reg, write_index),
	RUE_USER_UNREG_SIZE = sizeof(struct user_unreg),
	RUE_USER_UNREG_SIZE_OFF = offsetof(struct user_unreg, size),
	RUE_USER_UNREG_DISABLE_BIT = offsetof(struct user_unreg, disable_bit),
	RUE_USER_UNREG_RESERVED = offsetof(struct user_unreg, __reserved),
	RUE_USER_UNREG_RESERVED2 = offsetof(struct user_unreg, __reserved2),
	RUE_USER_UNREG_DISABLE_ADDR = offsetof(struct user_unreg, disable_addr),
	RUE_TRACE_ENTRY_SIZE = sizeof(struct trace_entry),
	RUE_S_IALLUGO = S_IALLUGO,
};

/* One `offsetof`/`sizeof` fact as C computes it; see src/layout.rs. */
struct rue_layout_entry {
	const char *what;
	unsigned long value;
};

/* The facts the Rust side re-derives with `offset_of!`/`size_of`. */
extern const struct rue_layout_entry rue_layout_c[];
/* Number of entries in rue_layout_c. */
extern const unsigned int rue_layout_c_len;

/*
 * The running kernel's `uname -v` (init_uts_ns.name.version, NUL-terminated):
 * set at build time, never written (src/identity.rs).
 */
const char *rue_kernel_version(void);

/* lookup_noperm_positive_unlocked() of @name under @dir (QSTR is a macro). */
struct dentry *rue_lookup_positive(struct dentry *dir, const char *name);

/* trace_trigger_soft_disabled(): the ftrace file is soft-disabled or triggered. */
bool rue_trace_trigger_soft_disabled(struct trace_event_file *file);
bool rue_static_key_enabled(struct static_key *key);
/* The tracing core's read side for tracepoint probes: guard(srcu_fast_notrace). */
void *rue_tracepoint_read_lock(void);
void rue_tracepoint_read_unlock(void *cookie);
/*
 * The write path's section, one call each way: preempt_disable_notrace(),
 * pagefault_disable(), this CPU's number in *cpu and the read side above; the
 * read side, pagefault_enable() and preempt_enable_notrace().
 */
void *rue_tracepoint_write_lock(unsigned int *cpu);
void rue_tracepoint_write_unlock(void *cookie);
/* tracepoint_synchronize_unregister(). */
void rue_tracepoint_synchronize_unregister(void);

/* smp_processor_id(): call with preemption disabled. nr_cpu_ids. */
unsigned int rue_smp_processor_id(void);
unsigned int rue_nr_cpu_ids(void);

/*
 * get_user() of a u32: 0, or -EFAULT. On arm64 the write index is read with it in
 * place (x86-64 calls __get_user_4 itself).
 */
int rue_get_user_u32(u32 *val, const u32 __user *addr);

/* copy_struct_from_user(), access_ok(), perfmon_capable(). */
int rue_copy_struct_from_user(void *dst, size_t ksize, const void __user *src, size_t usize);
bool rue_access_ok(const void __user *ptr, size_t size);
bool rue_perfmon_capable(void);
#ifdef CONFIG_COMPAT
/* compat_ptr(): a 32-bit program's pointer (a compat_ioctl argument) as a user pointer. */
void __user *rue_compat_ptr(u32 uptr);
#endif

/* Override current's creds with a copy whose fsuid is root; NULL on ENOMEM. */
const struct cred *rue_override_fsuid_root(void);
/*
 * Undo rue_override_fsuid_root() or rue_override_creds() given what it
 * returned, putting the overriding credentials.
 */
void rue_revert_creds(const struct cred *old);
/* override_creds(@cred), taking over the caller's reference (rue_revert_creds() puts it). */
const struct cred *rue_override_creds(const struct cred *cred);

/* make_kgid(&init_user_ns, @gid) and gid_valid(@gid). */
kgid_t rue_make_kgid(gid_t gid);
bool rue_gid_valid(kgid_t gid);
/* inode_lock(), inode_unlock(). */
void rue_inode_lock(struct inode *inode);
void rue_inode_unlock(struct inode *inode);

/* set_bit()/clear_bit() of @bit in the long at @offset of a pinned @page (kmap_local). */
void rue_page_change_bit(struct page *page, unsigned long offset, unsigned int bit, bool set);
/*
 * Reads the aligned long at user address @addr of @mm, whose mmap lock the caller holds for
 * reading, into @val, through a page reference (get_user_pages_remote, FOLL_NOFAULT: no fault,
 * and no unsharing of a page still shared copy-on-write, as a pin would need): 0, or -EFAULT if
 * the page is not present.
 */
int rue_user_read_long_remote(struct mm_struct *mm, unsigned long addr, unsigned long *val);
/* fatal_signal_pending(current): the calling task is on its way out (SIGKILL). */
bool rue_fatal_signal_pending(void);
/*
 * True if user address @addr of @mm is in a VMA registered with a userfaultfd
 * (userfaultfd_armed), whose faults may wait for its handler; the caller holds @mm's mmap lock
 * for reading. False where there is no VMA.
 */
bool rue_userfaultfd_armed(struct mm_struct *mm, unsigned long addr);
/*
 * Sets (futex FUTEX_OP_OR) or clears (FUTEX_OP_ANDN) @mask in the user u32 at
 * @uaddr with the futex code's atomic user access (arch_futex_atomic_op_inuser),
 * page faults disabled: -EFAULT where the page is not present and writable.
 */
int rue_user_change_bit(u32 __user *uaddr, u32 mask, bool set);

/*
 * Copies @len bytes from user address @src to @dst, in a section the caller
 * runs with page faults disabled (or in which it may sleep); returns 0, or
 * not 0 if not every byte could be read (then @dst holds some of them). Up to
 * RUE_COPY_WORDS_MAX bytes are read a word at a time in one user access
 * section (the last word overlapping the one before, as memcpy() copies short
 * lengths); a longer copy is the non-temporal one copy_from_iter_nocache()
 * makes of each segment.
 */
#define RUE_COPY_WORDS_MAX 64
size_t rue_copy_from_user_nofault(void *dst, const void __user *src, size_t len);

/*
 * arm64's perf_arch_fetch_caller_regs() with the values it reads passed in:
 * they must be the frame of the sample's caller, alive while perf unwinds
 * from it, which the shim's own frame is not once it has returned.
 */
void rue_perf_set_caller_regs(struct pt_regs *regs, unsigned long pc, unsigned long fp,
			      unsigned long sp);

/* iov_iter_count(); trace_handle_return(). */
size_t rue_iov_iter_count(const struct iov_iter *iter);
enum print_line_t rue_trace_handle_return(struct trace_seq *s);

/* list_del_init(). */
void rue_list_del_init(struct list_head *entry);

/* lockdep_assert_held(): warns (lockdep) if @lock is not held. */
void rue_lockdep_assert_held(struct mutex *lock);

/*
 * alloc_ordered_workqueue() and alloc_workqueue(WQ_UNBOUND or WQ_PERCPU): macros around the
 * variadic alloc_workqueue_noprof() (alloc_hooks), which the kernel crate of
 * 7.3 does not wrap (it has Queue::from_raw, no owned queue).
 */
struct workqueue_struct *rue_alloc_workqueue(const char *name);
struct workqueue_struct *rue_alloc_unbound_workqueue(const char *name);
struct workqueue_struct *rue_alloc_percpu_workqueue(const char *name);

/*
 * Charging the calling task's accounted allocations to another memory cgroup:
 * set_active_memcg() and mem_cgroup_put() are static inlines, and without
 * CONFIG_MEMCG get_mem_cgroup_from_mm() is one too. rue_memcg_get() takes a
 * reference on @mm's cgroup (that of its owner task now; NULL without
 * CONFIG_MEMCG), rue_memcg_put() drops one (NULL is nothing);
 * rue_charge_to() makes @memcg the task's active cgroup and returns the one
 * before, which the task gives back to it the same way.
 */
struct mem_cgroup;
struct mem_cgroup *rue_memcg_get(struct mm_struct *mm);
void rue_memcg_put(struct mem_cgroup *memcg);
struct mem_cgroup *rue_charge_to(struct mem_cgroup *memcg);

/*
 * trace_event_dyn_busy() (not exported): true while the tracing core holds
 * references on a dynamic event's call (call->refcnt).
 */
bool rue_trace_event_dyn_busy(struct trace_event_call *call);

/*
 * class->reg and event->funcs->trace, with their exact C prototypes. kCFI checks
 * an indirect call against the callee's C type, and a C enum's type differs from
 * the integer Rust sees for it (enum trace_reg, enum print_line_t), so the
 * tracing core calls these, which call the Rust implementations directly.
 */
int rue_user_event_reg(struct trace_event_call *call, enum trace_reg type, void *data);
enum print_line_t rue_print_trace(struct trace_iterator *iter, int flags,
				  struct trace_event *event);

/* per_cpu_ptr(@ptr, @cpu) for a per-CPU variable's address. */
void *rue_per_cpu_ptr(void *ptr, unsigned int cpu);
/*
 * __trace_event_discard_commit() (kernel/trace/trace.h) for a record reserved
 * with trace_event_buffer_reserve() and not committed: @buffered and
 * @buffered_cnt are the per-CPU trace_buffered_event and
 * trace_buffered_event_cnt. Enables preemption as the commit would.
 */
void rue_trace_event_discard(struct trace_event_buffer *fbuffer,
			     struct ring_buffer_event **buffered, int *buffered_cnt);
/*
 * The context that trace_event_buffer_reserve() writes into the header of a
 * record of an event hit now: tracing_gen_ctx_dec(). That calls
 * tracing_gen_ctx_irq_test(), which is not exported, so its body
 * (kernel/trace/trace.c) is repeated with the same inlines. Call it where the
 * core computes it: in the tracepoint's section (preemption disabled once),
 * before the ring buffer reserve. x86-64 and arm64 compute it inline instead
 * (src/tracepoint.rs), but for PREEMPT_RT.
 */
unsigned int rue_tracing_gen_ctx_dec(void);

#endif /* RUE_SHIM_H */
