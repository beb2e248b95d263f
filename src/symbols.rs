// SPDX-License-Identifier: GPL-2.0

//! The symbol layer: every piece of kernel data this module uses that 7.3 does not export.
//!
//! Only data is resolved (see [`crate::ksym`]). Where upstream calls a non-exported function,
//! the module does the same work with exported functions plus this data:
//!
//! | upstream call        | done here with                                                 |
//! |----------------------|----------------------------------------------------------------|
//! | `tracefs_remove`     | `simple_recursive_removal` + `simple_release_fs` on [`Tracefs`] |
//! | `dyn_event_register` | `list_add_tail` on `dyn_event_ops_list` under its mutex        |
//! | `dyn_event_add`      | `list_add_tail` on `dyn_event_list` under `event_mutex`        |
//! | `__trace_event_discard_commit` (static inline, on `trace_buffered_event`) | `rue_trace_event_discard` on [`Discard`] |
//! | `tracing_gen_ctx_irq_test` (via `trace_event_buffer_reserve`) | its body: `tracepoint::trace_ctx` on x86-64 and arm64, else `rue_tracing_gen_ctx_dec` in src/shim.c |
//! | `trace_event_buffer_commit`'s checks and `__buffer_unlock_commit` | reads of [`Direct`], `ring_buffer_unlock_commit` |
//!
//! Each symbol is checked for plausibility after resolution, so a wrong lookup fails `insmod`
//! with a message naming the symbol instead of corrupting memory later: kallsyms must place an
//! object of the expected size, and of that name, at the address ([`logic::ksym_text`]), and
//! what the object holds must fit its type (a list head that links back, a mount of tracefs, a
//! per-CPU flag that is 0 or 1, ...). Where kallsyms cannot tell, independent sources do: the
//! kernel's BTF for the per-CPU variables' types ([`logic::btf`]), lockdep's names for the
//! mutexes, the jump table for the static keys, function starts for the list of dynamic event
//! types. Documentation/design.md lists each check.

use crate::{
    bindings, ksym,
    logic::{btf, btf::Shape, ksym_text},
};
use core::{mem::offset_of, ptr::NonNull};
use kernel::{prelude::*, sync::Mutex};

/// tracefs's private mount bookkeeping (`fs/tracefs/inode.c`).
pub(crate) struct Tracefs {
    /// `trace_fs_type`, the filesystem type passed to `simple_pin_fs`.
    pub(crate) fs_type: NonNull<bindings::file_system_type>,
    /// `tracefs_mount`, the internal mount every tracefs file creation pins.
    pub(crate) mount: NonNull<*mut bindings::vfsmount>,
    /// `tracefs_mount_count`, the pin count of `tracefs_mount`.
    pub(crate) mount_count: NonNull<c_int>,
}

/// The per-CPU variables `__trace_event_discard_commit` (kernel/trace/trace.h) reads: a record
/// that `trace_event_buffer_reserve` put in `trace_buffered_event` (a filtered or soft-disabled
/// file) is discarded by releasing that buffer, any other by `ring_buffer_discard_commit`.
#[derive(Clone, Copy)]
pub(crate) struct Discard {
    /// `trace_buffered_event`: per CPU, the page-aligned scratch event, or null.
    pub(crate) buffered: NonNull<*mut bindings::ring_buffer_event>,
    /// `trace_buffered_event_cnt`: per CPU, the users of `trace_buffered_event`.
    pub(crate) buffered_cnt: NonNull<c_int>,
}

/// What committing a record with the ring buffer's own calls needs, where
/// `trace_event_buffer_commit()` would do no more (`crate::probes`, "the direct path"): the two
/// switches that make the tracing core's commit do more, and the per-CPU flag its
/// `__buffer_unlock_commit()` sets so that the writer's command name is saved for the output.
#[derive(Clone, Copy)]
pub(crate) struct Direct {
    /// `tracepoint_printk_key`: records are also printed to the console.
    pub(crate) printk_key: NonNull<bindings::static_key>,
    /// `trace_event_exports_enabled`: records are also sent to registered exports.
    pub(crate) exports_key: NonNull<bindings::static_key>,
    /// `trace_taskinfo_save`: per CPU, "save the current task's comm and tgid".
    pub(crate) taskinfo_save: NonNull<bool>,
}

/// The name `tracefs_mount_count` is resolved by. `make check` builds a variant that resolves
/// the bool next to it instead (`RUE_WRONG_SYMBOL=1`), which the checks must refuse.
#[cfg(not(rue_wrong_symbol))]
const MOUNT_COUNT: &CStr = c"tracefs_mount_count";
#[cfg(rue_wrong_symbol)]
const MOUNT_COUNT: &CStr = c"tracefs_registered";

/// All resolved symbols.
pub(crate) struct Symbols {
    /// `event_mutex`: the tracing core's lock around event (un)registration.
    pub(crate) event_mutex: NonNull<bindings::mutex>,
    /// `dyn_event_list`: every dynamic event, as listed by `dynamic_events`.
    pub(crate) dyn_event_list: NonNull<bindings::list_head>,
    /// `dyn_event_ops_list`: the registered `dyn_event_operations`.
    pub(crate) dyn_event_ops_list: NonNull<bindings::list_head>,
    /// `dyn_event_ops_mutex`: protects `dyn_event_ops_list`.
    pub(crate) dyn_event_ops_mutex: NonNull<bindings::mutex>,
    /// tracefs's mount bookkeeping.
    pub(crate) tracefs: Tracefs,
    /// What discarding a reserved ftrace record needs.
    pub(crate) discard: Discard,
    /// What committing an ftrace record directly needs.
    pub(crate) direct: Direct,
}

// SAFETY: The pointers name kernel-global objects that live as long as the kernel; the
// structure itself holds no thread-affine state.
unsafe impl Send for Symbols {}
// SAFETY: As above; shared access only reads the pointers.
unsafe impl Sync for Symbols {}

impl Symbols {
    /// Resolves and checks every symbol; any failure fails module load.
    pub(crate) fn resolve() -> Result<Self> {
        let symbols = Self {
            event_mutex: ksym::resolve_data(c"event_mutex")?,
            dyn_event_list: ksym::resolve_data(c"dyn_event_list")?,
            dyn_event_ops_list: ksym::resolve_data(c"dyn_event_ops_list")?,
            dyn_event_ops_mutex: ksym::resolve_data(c"dyn_event_ops_mutex")?,
            tracefs: Tracefs {
                fs_type: ksym::resolve_data(c"trace_fs_type")?,
                mount: ksym::resolve_data(c"tracefs_mount")?,
                mount_count: ksym::resolve_data(MOUNT_COUNT)?,
            },
            discard: Discard {
                buffered: ksym::resolve_data(c"trace_buffered_event")?,
                buffered_cnt: ksym::resolve_data(c"trace_buffered_event_cnt")?,
            },
            direct: Direct {
                // Both are `static_key_false`, whose first (only) member is the key.
                printk_key: ksym::resolve_data(c"tracepoint_printk_key")?,
                exports_key: ksym::resolve_data(c"trace_event_exports_enabled")?,
                taskinfo_save: ksym::resolve_data(c"trace_taskinfo_save")?,
            },
        };
        symbols.check()?;
        Ok(symbols)
    }

    /// Plausibility checks that only read the resolved objects.
    fn check(&self) -> Result {
        // Both are logged before either fails the load.
        let sizes = self.check_sizes();
        let types = self.check_btf();
        sizes?;
        types?;
        self.check_lock_names()?;
        self.check_dyn_ops()?;
        self.check_static_keys()?;
        self.check_tracefs_mount()?;
        self.check_per_cpu()?;
        // SAFETY: `fs_type` is the address of `trace_fs_type`, a static `file_system_type` whose
        // `name` points to a string literal for the kernel's lifetime.
        let name = unsafe { (*self.tracefs.fs_type.as_ptr()).name };
        // SAFETY: `name` is null or a NUL-terminated string literal (see above).
        if name.is_null() || unsafe { CStr::from_char_ptr(name) } != c"tracefs" {
            pr_err!("trace_fs_type does not name tracefs\n");
            return Err(ENOEXEC);
        }
        let checks = [
            ("dyn_event_list", self.dyn_event_list, self.event_mutex),
            (
                "dyn_event_ops_list",
                self.dyn_event_ops_list,
                self.dyn_event_ops_mutex,
            ),
        ];
        // A CPU's buffered event is a page of its own (`alloc_pages_node`) or none.
        let page = kernel::page::PAGE_SIZE;
        // SAFETY: No preconditions.
        let cpus = unsafe { bindings::rue_nr_cpu_ids() };
        for cpu in 0..cpus {
            // SAFETY: `buffered` is the address of a per-CPU pointer variable and `cpu` is below
            // `nr_cpu_ids`; an unpossible CPU's copy is still mapped, and read once.
            let event = unsafe {
                bindings::rue_per_cpu_ptr(self.discard.buffered.as_ptr().cast(), cpu)
                    .cast::<*mut bindings::ring_buffer_event>()
                    .read_volatile()
            };
            if event as usize % page != 0 {
                pr_err!("trace_buffered_event is not a per-CPU page pointer\n");
                return Err(ENOEXEC);
            }
        }
        for (what, key) in [
            ("tracepoint_printk_key", self.direct.printk_key),
            ("trace_event_exports_enabled", self.direct.exports_key),
        ] {
            // SAFETY: `key` is the address of a static `static_key`; its count is read once.
            let enabled = unsafe { (*key.as_ptr()).enabled.counter };
            // A static key's count is never below -1, its value while it is being turned on.
            if enabled < -1 {
                pr_err!("{what} is not a static key\n");
                return Err(ENOEXEC);
            }
        }
        for (what, list, lock) in checks {
            let consistent = {
                // SAFETY: `lock` is a resolved symbol mutex; module init may sleep.
                let _guard = unsafe { kernel_mutex(lock) }.lock();
                // SAFETY: `list` is the address of a static, initialised `list_head`, and its
                // writers hold `lock`, which is held here, so `next` is a live node or the head.
                unsafe {
                    let head = list.as_ptr();
                    let next = (*head).next;
                    !next.is_null() && (*next).prev == head
                }
            };
            if !consistent {
                pr_err!("{what} is not a list head\n");
                return Err(ENOEXEC);
            }
        }
        Ok(())
    }
}

impl Symbols {
    /// Every symbol is an object of its type's size, by kallsyms. Every disagreement is
    /// logged before the load fails.
    fn check_sizes(&self) -> Result {
        let mut text = KVec::from_elem(0u8, SYMBOL_TEXT, GFP_KERNEL)?;
        let mut ok = true;
        let d = &self.discard;
        let x = &self.direct;
        let t = &self.tracefs;
        for (name, (addr, size)) in [
            (c"event_mutex", sized(self.event_mutex)),
            (c"dyn_event_list", sized(self.dyn_event_list)),
            (c"dyn_event_ops_list", sized(self.dyn_event_ops_list)),
            (c"dyn_event_ops_mutex", sized(self.dyn_event_ops_mutex)),
            (c"trace_fs_type", sized(t.fs_type)),
            (c"tracefs_mount", sized(t.mount)),
            (c"tracefs_mount_count", sized(t.mount_count)),
            (c"trace_buffered_event", sized(d.buffered)),
            (c"trace_buffered_event_cnt", sized(d.buffered_cnt)),
            (c"tracepoint_printk_key", sized(x.printk_key)),
            (c"trace_event_exports_enabled", sized(x.exports_key)),
            (c"trace_taskinfo_save", sized(x.taskinfo_save)),
        ] {
            let said = kallsyms_at(addr, &mut text);
            // CAST: An object size.
            let fits = ksym_text::parse(said)
                .is_some_and(|at| ksym_text::fits(&at, name.to_bytes(), size as u64));
            if !fits {
                let said = core::str::from_utf8(said).unwrap_or("?");
                pr_err!("{name:?}: kallsyms has {said:?} there, not an object of {size} bytes\n");
                ok = false;
            }
        }
        if ok {
            Ok(())
        } else {
            Err(ENOEXEC)
        }
    }

    /// `tracefs_mount` is pinned (a positive count) exactly while it is not null. That it is a
    /// mount of tracefs is checked once the module holds a pin of its own
    /// ([`crate::tracefs::TracefsPin`]), as only a pin keeps it from going.
    fn check_tracefs_mount(&self) -> Result {
        let t = &self.tracefs;
        // SAFETY: Both are static objects of their types (sizes checked); read once each.
        let (mount, count) = unsafe {
            (
                t.mount.as_ptr().read_volatile(),
                t.mount_count.as_ptr().read_volatile(),
            )
        };
        let plausible = if mount.is_null() {
            count == 0
        } else {
            count > 0
        };
        if !plausible {
            pr_err!("tracefs_mount and tracefs_mount_count are not tracefs's pinned mount\n");
            return Err(ENOEXEC);
        }
        Ok(())
    }

    /// The per-CPU objects hold values of their types on every CPU: a flag that is 0 or 1, a
    /// small count of users.
    fn check_per_cpu(&self) -> Result {
        // SAFETY: No preconditions.
        let cpus = unsafe { bindings::rue_nr_cpu_ids() };
        for cpu in 0..cpus {
            // SAFETY: Both are the addresses of per-CPU variables (sizes checked) and `cpu` is
            // below `nr_cpu_ids`; an unpossible CPU's copy is still mapped; read once each, as
            // bytes and an `int`.
            let (save, users) = unsafe {
                (
                    bindings::rue_per_cpu_ptr(self.direct.taskinfo_save.as_ptr().cast(), cpu)
                        .cast::<u8>()
                        .read_volatile(),
                    bindings::rue_per_cpu_ptr(self.discard.buffered_cnt.as_ptr().cast(), cpu)
                        .cast::<c_int>()
                        .read_volatile(),
                )
            };
            if save > 1 {
                pr_err!("trace_taskinfo_save is not a per-CPU bool\n");
                return Err(ENOEXEC);
            }
            // Raised once per CPU while buffered events are being turned off, and by writers
            // nesting on the CPU (at most one per context level).
            if !(0..=MAX_BUFFERED_USERS).contains(&users) {
                pr_err!("trace_buffered_event_cnt is not a per-CPU count\n");
                return Err(ENOEXEC);
            }
        }
        Ok(())
    }
}

impl Symbols {
    /// On a kernel with lockdep, each mutex is named by its definition (`DEFINE_MUTEX(name)`
    /// names its `lockdep_map`), which kallsyms does not read: a lock of another name fails.
    #[cfg(CONFIG_DEBUG_LOCK_ALLOC)]
    fn check_lock_names(&self) -> Result {
        for (name, lock) in [
            (c"event_mutex", self.event_mutex),
            (c"dyn_event_ops_mutex", self.dyn_event_ops_mutex),
        ] {
            // SAFETY: `lock` is the address of an object at least a `struct mutex` in size
            // (`check_sizes`); its name pointer is read once.
            let at = unsafe { (*lock.as_ptr()).dep_map.name };
            let want = name.to_bytes_with_nul();
            let mut have = [0u8; 32];
            let have = have.get_mut(..want.len()).ok_or(ENOEXEC)?;
            // SAFETY: `have` is writable for `want.len()` bytes; the source is read without
            // faulting, whatever it points to.
            let ret = unsafe {
                bindings::copy_from_kernel_nofault(have.as_mut_ptr().cast(), at.cast(), have.len())
            };
            if ret != 0 || have != want {
                pr_err!("{name:?}: its lockdep map does not name it\n");
                return Err(ENOEXEC);
            }
        }
        Ok(())
    }

    /// A kernel without lockdep names no lock.
    #[cfg(not(CONFIG_DEBUG_LOCK_ALLOC))]
    fn check_lock_names(&self) -> Result {
        Ok(())
    }

    /// `dyn_event_ops_list` links the tracing core's dynamic event types (kprobes, at least,
    /// which register at boot): each node is a `dyn_event_operations` whose five functions are
    /// function starts, by kallsyms, all the kernel's own or all one module's (another
    /// provider of user_events, loaded before this one, which its files then refuse with
    /// `EBUSY`). A list of anything else fails. Nodes are read with
    /// `copy_from_kernel_nofault()`, so a wrong list cannot fault the load.
    fn check_dyn_ops(&self) -> Result {
        const WORDS: usize = size_of::<bindings::dyn_event_operations>() / size_of::<usize>();
        let word = |field: usize| field / size_of::<usize>();
        let functions = [
            word(offset_of!(bindings::dyn_event_operations, create)),
            word(offset_of!(bindings::dyn_event_operations, show)),
            word(offset_of!(bindings::dyn_event_operations, is_busy)),
            word(offset_of!(bindings::dyn_event_operations, free)),
            word(offset_of!(bindings::dyn_event_operations, match_)),
        ];
        let next = word(offset_of!(bindings::dyn_event_operations, list));
        let mut text = KVec::from_elem(0u8, SYMBOL_TEXT, GFP_KERNEL)?;
        // SAFETY: `dyn_event_ops_mutex` is a resolved symbol mutex; module init may sleep.
        let _guard = unsafe { kernel_mutex(self.dyn_event_ops_mutex) }.lock();
        // CAST: An address, compared with the nodes' links.
        let head = self.dyn_event_ops_list.as_ptr() as usize;
        let unreadable = || {
            pr_err!("dyn_event_ops_list links an address that cannot be read\n");
            ENOEXEC
        };
        let mut node = read_words::<1>(head).ok_or_else(unreadable)?[0];
        let (mut types, mut kernel_types) = (0, 0);
        while node != head {
            if types == MAX_DYN_OPS {
                pr_err!("dyn_event_ops_list does not end\n");
                return Err(ENOEXEC);
            }
            // `list` is the first member: the node is the operations.
            let ops = read_words::<WORDS>(node).ok_or_else(unreadable)?;
            let mut in_kernel = [false; 5];
            for (at, kernel) in functions.into_iter().zip(&mut in_kernel) {
                match function_start(ops[at], &mut text) {
                    Some(own) => *kernel = own,
                    None => {
                        pr_err!(
                            "dyn_event_ops_list links something other than dynamic event types\n"
                        );
                        return Err(ENOEXEC);
                    }
                }
            }
            if in_kernel.iter().all(|&own| own) {
                kernel_types += 1;
            } else if in_kernel.iter().any(|&own| own) {
                pr_err!("dyn_event_ops_list links operations both of the kernel and of a module\n");
                return Err(ENOEXEC);
            }
            node = ops[next];
            types += 1;
        }
        if kernel_types == 0 && cfg!(CONFIG_KPROBE_EVENTS) {
            pr_err!("dyn_event_ops_list has no kprobe event type\n");
            return Err(ENOEXEC);
        }
        Ok(())
    }
}

impl Symbols {
    /// With jump labels, each static key is a `DEFINE_STATIC_KEY_FALSE` of the kernel's code:
    /// its type is false, and its first jump entry (in vmlinux's `__jump_table`, which kallsyms
    /// does not describe) points back to it. Entries are read with
    /// `copy_from_kernel_nofault()`, so a wrong key cannot fault the load.
    #[cfg(all(CONFIG_JUMP_LABEL, CONFIG_HAVE_ARCH_JUMP_LABEL_RELATIVE))]
    fn check_static_keys(&self) -> Result {
        // `struct static_key`: `enabled`, then `type`, `entries` and `next` in one word whose
        // low two bits are the type (`JUMP_TYPE_TRUE`, `JUMP_TYPE_LINKED`).
        const TYPE_TRUE: usize = 1;
        const TYPE_LINKED: usize = 2;
        for (name, key) in [
            (c"tracepoint_printk_key", self.direct.printk_key),
            (c"trace_event_exports_enabled", self.direct.exports_key),
        ] {
            // CAST: The key's address.
            let key = key.as_ptr() as usize;
            let Some([_, entries]) = read_words::<2>(key) else {
                pr_err!("{name:?} cannot be read\n");
                return Err(ENOEXEC);
            };
            if entries & TYPE_TRUE != 0 {
                pr_err!("{name:?} is not a static key that starts false\n");
                return Err(ENOEXEC);
            }
            // A key a module also branches on keeps its entries in a list: not followed.
            if entries & TYPE_LINKED != 0 {
                continue;
            }
            let entry = entries & !3;
            // `struct jump_entry`, relative: `code` and `target` (two `s32`s), then `key`: the
            // key's distance from this word, its low two bits flags.
            let points_back = entry != 0
                && read_words::<2>(entry).is_some_and(|[_, offset]| {
                    // CAST: A signed distance, as `jump_entry_key()` reads it.
                    let distance = (offset as isize) & !3;
                    (entry + size_of::<usize>()).wrapping_add_signed(distance) == key
                });
            if !points_back {
                pr_err!("{name:?}: its jump entries do not point back to it\n");
                return Err(ENOEXEC);
            }
        }
        Ok(())
    }

    /// Without jump labels a key is a count (checked above).
    #[cfg(not(all(CONFIG_JUMP_LABEL, CONFIG_HAVE_ARCH_JUMP_LABEL_RELATIVE)))]
    fn check_static_keys(&self) -> Result {
        Ok(())
    }
}

/// More dynamic event types than the kernel has (kprobe, uprobe, synthetic, eprobe, fprobe).
const MAX_DYN_OPS: usize = 32;

/// `N` words at `addr`, read without faulting; `None` where they cannot be read.
fn read_words<const N: usize>(addr: usize) -> Option<[usize; N]> {
    let mut words = [0usize; N];
    // CAST: A kernel address, as `copy_from_kernel_nofault()` takes it.
    let src = addr as *const c_void;
    // SAFETY: `words` is writable for its size; the source is read without faulting, whatever
    // `addr` is.
    let ret = unsafe {
        bindings::copy_from_kernel_nofault(words.as_mut_ptr().cast(), src, size_of::<[usize; N]>())
    };
    (ret == 0).then_some(words)
}

/// What kallsyms says of `addr` (`sprint_symbol()`'s text), written into `text`; nothing if
/// `text` is shorter than `SYMBOL_TEXT`.
fn kallsyms_at(addr: c_ulong, text: &mut [u8]) -> &[u8] {
    if text.len() < SYMBOL_TEXT {
        return &[];
    }
    // SAFETY: `text` holds at least `SYMBOL_TEXT` bytes, more than `KSYM_SYMBOL_LEN`;
    // `sprint_symbol()` only looks the address up.
    let len = unsafe { bindings::sprint_symbol(text.as_mut_ptr().cast(), addr) };
    // CAST: The length of what was written, at most the buffer's.
    &text[..(len.max(0) as usize).min(SYMBOL_TEXT)]
}

/// Whether kallsyms places the start of a symbol at `addr`: `Some(true)` for the kernel's own,
/// `Some(false)` for a module's, `None` for anything else.
fn function_start(addr: usize, text: &mut [u8]) -> Option<bool> {
    // CAST: A kernel address, as `sprint_symbol()` takes it.
    let at = ksym_text::parse(kallsyms_at(addr as c_ulong, text))?;
    (at.offset == 0).then_some(at.module.is_none())
}

/// What the kernel's BTF must say each per-CPU symbol is: its type, and its size in bytes.
/// `make check` builds a variant that expects `trace_taskinfo_save` to be an `int`
/// (`RUE_WRONG_SYMBOL=type`), as a kernel that changed the variable's type would look to this
/// build, which the check must refuse.
fn per_cpu_types(s: &Symbols) -> [(&'static CStr, c_ulong, Shape<'static>, usize); 3] {
    let int = Shape::Int {
        name: b"int",
        size: 4,
    };
    #[cfg(not(rue_wrong_type))]
    let save = (
        Shape::Int {
            name: b"_Bool",
            size: 1,
        },
        sized(s.direct.taskinfo_save).1,
    );
    #[cfg(rue_wrong_type)]
    let save = (int, size_of::<c_int>());
    [
        (
            c"trace_buffered_event",
            sized(s.discard.buffered).0,
            Shape::PointerTo(b"ring_buffer_event"),
            sized(s.discard.buffered).1,
        ),
        (
            c"trace_buffered_event_cnt",
            sized(s.discard.buffered_cnt).0,
            int,
            sized(s.discard.buffered_cnt).1,
        ),
        (
            c"trace_taskinfo_save",
            sized(s.direct.taskinfo_save).0,
            save.0,
            save.1,
        ),
    ]
}

impl Symbols {
    /// The per-CPU symbols are what the kernel's BTF says they are: of the expected type and
    /// size, and placed among each other as `.data..percpu`'s BTF places them. BTF comes from
    /// the kernel's debug information, not from kallsyms, through which they were resolved
    /// (Documentation/design.md, "The symbol layer, and why it is IBT-safe"). Every
    /// disagreement is logged before the load fails.
    fn check_btf(&self) -> Result {
        let Some(blob) = vmlinux_btf()? else {
            return Ok(());
        };
        let btf = btf::Btf::new(blob).map_err(|e| {
            pr_err!("the kernel's BTF cannot be read ({e:?})\n");
            ENOEXEC
        })?;
        let mut ok = true;
        let mut section = None;
        for (name, addr, want, size) in per_cpu_types(self) {
            let var = match btf.per_cpu_variable(name.to_bytes()) {
                Ok(var) => var,
                Err(e) => {
                    pr_err!("{name:?}: not a per-CPU variable by the kernel's BTF ({e:?})\n");
                    ok = false;
                    continue;
                }
            };
            // CAST: Sizes of kernel objects, far below 4 GiB.
            if var.shape != want || var.size as usize != size {
                let text = |b| core::str::from_utf8(b).unwrap_or("?");
                pr_err!(
                    "{name:?}: the kernel's BTF has {} {} ({} bytes), not {} {} ({size} bytes)\n",
                    var.shape.kind_text(),
                    text(var.shape.name()),
                    var.size,
                    want.kind_text(),
                    text(want.name())
                );
                ok = false;
            }
            // Where kallsyms and BTF both say `.data..percpu` starts.
            // CAST: A section offset, as an address difference.
            let base = addr.wrapping_sub(var.offset as c_ulong);
            if *section.get_or_insert(base) != base {
                pr_err!("{name:?}: kallsyms places it elsewhere among the per-CPU variables than the kernel's BTF\n");
                ok = false;
            }
        }
        if ok {
            Ok(())
        } else {
            Err(ENOEXEC)
        }
    }
}

/// The kernel's BTF, the blob `/sys/kernel/btf/vmlinux` serves.
#[cfg(CONFIG_DEBUG_INFO_BTF)]
fn vmlinux_btf() -> Result<Option<&'static [u8]>> {
    let start = ksym::resolve_data::<u8>(c"__start_BTF")?;
    let stop = ksym::resolve_data::<u8>(c"__stop_BTF")?;
    let len = (stop.as_ptr() as usize).wrapping_sub(start.as_ptr() as usize);
    if len == 0 || len > MAX_BTF {
        pr_err!("__start_BTF and __stop_BTF do not bound the kernel's BTF\n");
        return Err(ENOEXEC);
    }
    // SAFETY: `__start_BTF`..`__stop_BTF` is vmlinux's `.BTF` section: read-only data that the
    // kernel keeps for its lifetime and never writes after boot (`/sys/kernel/btf/vmlinux`
    // serves it).
    Ok(Some(unsafe {
        core::slice::from_raw_parts(start.as_ptr().cast_const(), len)
    }))
}

/// A kernel without BTF: the per-CPU symbols have kallsyms's checks only.
#[cfg(not(CONFIG_DEBUG_INFO_BTF))]
fn vmlinux_btf() -> Result<Option<&'static [u8]>> {
    Ok(None)
}

/// Far more than any kernel's BTF (Debian's amd64 kernel has 6 MiB).
#[cfg(CONFIG_DEBUG_INFO_BTF)]
const MAX_BTF: usize = 256 << 20;

/// Room for `sprint_symbol()`'s text (`KSYM_SYMBOL_LEN`, a macro bindgen cannot evaluate: the
/// longest name, two numbers, a module name and build id).
const SYMBOL_TEXT: usize = 1024;

/// Far more users of a CPU's buffered event than the tracing core ever counts.
const MAX_BUFFERED_USERS: c_int = 64;

/// A resolved symbol's address, and the size of its type.
fn sized<T>(addr: NonNull<T>) -> (c_ulong, usize) {
    // CAST: A kernel address, as `sprint_symbol()` takes it.
    (addr.as_ptr() as c_ulong, size_of::<T>())
}

/// A mutex of the tracing core's (`event_mutex`, `dyn_event_ops_mutex`), as the kernel crate's
/// [`Mutex`]: locked with [`Mutex::lock`], whose guard unlocks it.
///
/// # Safety
///
/// `mutex` must be one of the [`Symbols`] mutexes: an initialised static kernel `struct mutex`
/// that lives as long as the kernel.
pub(crate) unsafe fn kernel_mutex(mutex: NonNull<bindings::mutex>) -> &'static Mutex<()> {
    // SAFETY: An initialised `struct mutex` for the kernel's lifetime (the caller's guarantee).
    unsafe { Mutex::from_raw(mutex.as_ptr()) }
}
