// SPDX-License-Identifier: GPL-2.0

//! One user event (upstream `struct user_event`): the `trace_event_call` the tracing core sees,
//! the tracepoint its probes attach to, the parsed fields, and its reference count.
//!
//! This is the event *model*: it knows nothing of the consumers or the enablers, and of the
//! group's table only the two fields the table keeps in each event (`table_next`, `name_key`).
//! Its life (creation, registration with the tracing core, the `dynamic_events` link and
//! destruction) is run by one owner, [`crate::group`], which hands the callbacks in
//! ([`Callbacks`]). The C objects themselves are [`CoreEvent`]'s (`crate::trace_call`).
//!
//! # Lifetime
//!
//! An event is a pinned `KBox` turned into a raw pointer once its C objects are initialised,
//! because the tracing core keeps pointers into it. It is freed only by the group's delayed
//! destroy or a deletion, under `event_mutex`, once its reference count says nobody uses it
//! (upstream's `user_event_put` and `delayed_destroy_user_event`). The count is the kernel
//! crate's [`AlwaysRefCounted`]: a reference held in Rust is an [`ARef<UserEvent>`]. References
//! are held by: the creator ([`crate::group::Group::find_or_create`] returns an `ARef`), each
//! open file that registered it (a raw pointer from [`ARef::into_raw`] in its index table), each
//! enabler (taken with [`UserEvent::get`], released with [`UserEvent::put_locked`]: see its
//! type), each attached ftrace/perf probe, a queued delayed destroy (its work item's `ARef`),
//! and, for `USER_EVENT_REG_PERSIST`, the event itself. Every live event
//! also holds a reference on this module, so `rmmod` is refused while any event exists.
//!
//! An `ARef<UserEvent>` must not be dropped with `event_mutex` held: the last put takes it.
//! Under the lock a reference goes with [`UserEvent::put_locked`].

use crate::{
    deferred,
    event_mutex::{EventLocked, Held},
    kbuf::{self, KBuf, StackBuf},
    logic::{
        grammar::{self, FieldSpec, Validator},
        print_fmt,
    },
    names,
    trace_call::{Call, Callbacks, CoreEvent, DynEvent, Field, Tracepoint},
};
use core::{mem::offset_of, ops::Range, ptr::NonNull};
use kernel::{
    new_delayed_work,
    prelude::*,
    sync::{
        aref::{ARef, AlwaysRefCounted},
        atomic::Relaxed,
        Refcount,
    },
    time::Jiffies,
    workqueue::DelayedWork, //
};

/// A parsed field; its strings live in [`UserEvent::strings`].
struct FieldRec {
    ty: Range<usize>,
    name: Range<usize>,
    size: u32,
    offset: u32,
    is_signed: bool,
    is_struct: bool,
}

pub(crate) use crate::logic::abi::{REG_MULTI_FORMAT, REG_PERSIST};

/// One user event.
///
/// # Invariants
///
/// Once [`UserEvent::init_c_objects`] ran, the C objects (`core`) point into this allocation,
/// which does not move until it is freed; the group registers them with the tracing core. While
/// `put_work` is queued, it owns one reference (an [`ARef`] given to the workqueue).
#[pin_data]
pub(crate) struct UserEvent {
    /// The C objects the tracing core knows the event by.
    core: CoreEvent,
    /// The delayed destroy, run by the group ([`crate::group`] implements its `WorkItem`); a
    /// delayed work so that a destroy the core still blocks can be retried later.
    #[pin]
    put_work: DelayedWork<UserEvent>,
    /// NUL-terminated strings: registered name, tracepoint name, print fmt, field types and names.
    ///
    /// Written only by [`UserEvent::new`], from `&str`s: every range of it that the event keeps
    /// (`reg_name`, `tp_name`, `print_fmt` and the fields') is UTF-8, which
    /// [`UserEvent::str_at`] relies on.
    strings: KVec<u8>,
    reg_name: Range<usize>,
    tp_name: Range<usize>,
    print_fmt: Range<usize>,
    fields: KVec<FieldRec>,
    validators: KVec<Validator>,
    /// Payload bytes every write must carry.
    pub(crate) min_size: u32,
    /// `USER_EVENT_REG_*` flags of the registration that created it.
    pub(crate) reg_flags: u16,
    refcnt: Refcount,
    /// `EVENT_STATUS_*` consumers, written under `event_mutex`.
    status: core::sync::atomic::AtomicU8,
    /// The next older event in the event's bucket of the group's table (upstream's `node` in
    /// `register_table`): the table's chains run through its events, so entering one allocates
    /// nothing. Written by [`crate::group`] only.
    pub(crate) table_next: EventLocked<Option<NonNull<UserEvent>>>,
    /// The registered name's key in that table (`jhash` of the name), given by the group, which
    /// compares it before the name.
    pub(crate) name_key: u32,
}

// SAFETY: The C objects are only touched through the tracing core's own locking or under
// `event_mutex`; the Rust fields are immutable after registration, atomic, or `EventLocked`.
unsafe impl Send for UserEvent {}
// SAFETY: As above.
unsafe impl Sync for UserEvent {}

kernel::impl_has_delayed_work! {
    impl HasDelayedWork<Self> for UserEvent { self.put_work }
}

// SAFETY: `get` and `put` are the event's reference count: an event is freed only once its count
// dropped to zero (or, persistent, to its own reference) and its owner destroyed it under
// `event_mutex`, so a reference taken by `inc_ref` keeps it alive until the matching `dec_ref`.
unsafe impl AlwaysRefCounted for UserEvent {
    #[inline]
    fn inc_ref(&self) {
        self.get();
    }

    #[inline]
    unsafe fn dec_ref(obj: NonNull<Self>) {
        // SAFETY: The caller owns a reference, which keeps the event alive until this put.
        unsafe { obj.as_ref() }.put();
    }
}

/// Bytes of a print format besides what grows with the fields: the quotes, the separator and
/// a few conversions (`"a=%u", REC->a` is 17 bytes for a one-letter field).
const PRINT_FMT_BASE: usize = 64;

/// The longest print format written on the stack ([`UserEvent::new`]).
const PRINT_FMT_STACK: usize = 256;

/// Appends `s` and a NUL to `strings`, returning the range of `s`.
fn push_str(strings: &mut KVec<u8>, s: &[u8]) -> Result<Range<usize>> {
    let start = strings.len();
    kbuf::extend(strings, s)?;
    let end = strings.len();
    strings.push(0, GFP_KERNEL_ACCOUNT)?;
    Ok(start..end)
}

/// The `(type, name)` of each field in `fields`, whose strings are in `strings`.
fn names<'a>(
    strings: &'a [u8],
    fields: &'a [FieldRec],
) -> impl Iterator<Item = (&'a str, &'a str)> + Clone + 'a {
    fields
        .iter()
        .map(move |f| (str_in(strings, &f.ty), str_in(strings, &f.name)))
}

/// The string at `range` of `strings`.
fn str_in<'a>(strings: &'a [u8], range: &Range<usize>) -> &'a str {
    // The strings were copied from `&str`s, so every stored range is valid UTF-8; checked all
    // the same, as this is safe code, quickly for ASCII.
    strings
        .get(range.clone())
        .and_then(grammar::utf8)
        .unwrap_or("")
}

impl UserEvent {
    /// The event a `dyn_event` of ours belongs to.
    ///
    /// # Safety
    ///
    /// `devent` must be the `dyn_event` of an initialised [`UserEvent`].
    pub(crate) unsafe fn from_devent(devent: *mut DynEvent) -> NonNull<Self> {
        // SAFETY: `devent` is the `devent` of a `CoreEvent`, the `core` field of a live
        // `UserEvent` (container_of).
        unsafe {
            let core = CoreEvent::from_devent(devent);
            NonNull::new_unchecked(
                core.as_ptr()
                    .byte_sub(offset_of!(Self, core))
                    .cast::<Self>(),
            )
        }
    }

    /// Parses a new event `name args`; `multi_id` names a multi-format version, `name_key` is
    /// the name's key in the group's table.
    ///
    /// Fails with `EINVAL` for any grammar error (`src/logic/grammar.rs`), `ENOMEM` on allocation
    /// failure.
    /// Everything is allocated with `GFP_KERNEL_ACCOUNT`: charged to the memory cgroup of the
    /// task that creates the event, as upstream's `user_event_parse` charges it.
    pub(crate) fn new(
        name: &str,
        args: &str,
        reg_flags: u16,
        multi_id: Option<u64>,
        name_key: u32,
    ) -> Result<Pin<KBox<Self>>> {
        // Room for the strings below, so that this rarely grows: the two names, the field types
        // and names (pieces of `args`) and their NULs, and a print format of about twice the
        // field names with a few bytes of format per field.
        let mut strings = KVec::with_capacity(
            2 * name.len() + 3 * args.len() + PRINT_FMT_BASE,
            GFP_KERNEL_ACCOUNT,
        )?;
        let reg_name = push_str(&mut strings, name.as_bytes())?;
        let tp_name = match multi_id {
            None => push_str(&mut strings, name.as_bytes())?,
            Some(id) => {
                let mut buf = KBuf::new();
                grammar::tp_name_multi(&mut buf, name, id).map_err(|_| ENOMEM)?;
                push_str(&mut strings, &buf.into_vec())?
            }
        };
        // Sized once, so that a many-field event does not reallocate its field list at 1, 2,
        // 4, ... fields; empty pieces (`"u32 a;;;"`) get no room.
        let mut fields = KVec::with_capacity(grammar::max_fields(args), GFP_KERNEL_ACCOUNT)?;
        let mut validators = KVec::new();
        let mut min_size = 0;
        for field in grammar::fields(args) {
            let field = field.map_err(|_| EINVAL)?;
            let ty = push_str(&mut strings, field.ty.as_bytes())?;
            let fname = push_str(&mut strings, field.name.as_bytes())?;
            if let Some(v) = field.validator() {
                validators.push(v, GFP_KERNEL_ACCOUNT)?;
            }
            min_size = field.end() - grammar::TRACE_ENTRY_SIZE;
            fields.push(
                FieldRec {
                    ty,
                    name: fname,
                    size: field.size,
                    offset: field.offset,
                    is_signed: field.is_signed,
                    is_struct: field.is_struct,
                },
                GFP_KERNEL_ACCOUNT,
            )?;
        }
        // The print format reads the field names in `strings`, so it is written elsewhere first:
        // on the stack when short, as nearly all are, else into an allocation.
        let start = strings.len();
        let mut short = StackBuf::<PRINT_FMT_STACK>::new();
        if print_fmt::write_print_fmt(&mut short, names(&strings, &fields)).is_ok() {
            kbuf::extend(&mut strings, short.as_bytes())?;
            strings.push(0, GFP_KERNEL_ACCOUNT)?;
        } else {
            let long = KBuf::c_string(2 * args.len() + PRINT_FMT_BASE, |buf| {
                print_fmt::write_print_fmt(buf, names(&strings, &fields))
            })?;
            kbuf::extend(&mut strings, &long)?;
        }
        let print_fmt = start..strings.len() - 1;
        KBox::pin_init(
            pin_init!(Self {
                core: CoreEvent::zeroed(),
                put_work <- new_delayed_work!("UserEvent::put_work"),
                strings,
                reg_name,
                tp_name,
                print_fmt,
                fields,
                validators,
                min_size,
                reg_flags,
                refcnt: Refcount::new(1),
                status: core::sync::atomic::AtomicU8::new(0),
                table_next: EventLocked::new(None),
                name_key,
            }),
            GFP_KERNEL_ACCOUNT,
        )
    }

    /// The string at `range` of the event's `strings`, not validated as UTF-8 again: names are
    /// compared on every lookup.
    ///
    /// # Safety
    ///
    /// `range` is one of the ranges the event keeps (`reg_name`, `tp_name`, a field's).
    unsafe fn str_at(&self, range: &Range<usize>) -> &str {
        self.strings
            .get(range.clone())
            // SAFETY: `range` is one the event keeps (the caller's guarantee), and those are
            // UTF-8 (`strings`).
            .map(|b| unsafe { core::str::from_utf8_unchecked(b) })
            .unwrap_or("")
    }

    /// The C string at `range`, one the event keeps: each is followed by a NUL in `strings`,
    /// and holds none.
    fn c_str_at(&self, range: &Range<usize>) -> &CStr {
        self.strings
            .get(range.start..=range.end)
            .and_then(|b| CStr::from_bytes_with_nul(b).ok())
            .unwrap_or(c"")
    }

    /// The registered name (`reg_name`).
    pub(crate) fn reg_name(&self) -> &str {
        // SAFETY: A range the event keeps.
        unsafe { self.str_at(&self.reg_name) }
    }

    /// The tracepoint name: the registered name, or `name.<hexid>` for multi-format events.
    pub(crate) fn tp_name(&self) -> &str {
        // SAFETY: A range the event keeps.
        unsafe { self.str_at(&self.tp_name) }
    }

    /// True for a `USER_EVENT_REG_MULTI_FORMAT` event.
    pub(crate) fn is_multi(&self) -> bool {
        self.reg_flags & REG_MULTI_FORMAT != 0
    }

    /// True for a `USER_EVENT_REG_PERSIST` event.
    pub(crate) fn is_persist(&self) -> bool {
        self.reg_flags & REG_PERSIST != 0
    }

    /// The fields in declaration order.
    pub(crate) fn fields(&self) -> impl Iterator<Item = FieldSpec<'_>> + Clone {
        self.fields.iter().map(|f| FieldSpec {
            // SAFETY: A field's ranges are ranges the event keeps.
            ty: unsafe { self.str_at(&f.ty) },
            // SAFETY: As above.
            name: unsafe { self.str_at(&f.name) },
            size: f.size,
            offset: f.offset,
            is_signed: f.is_signed,
            is_struct: f.is_struct,
        })
    }

    /// The fields as `(type, name, size, is_struct)`, for matching and `dynamic_events`.
    pub(crate) fn field_tuples(&self) -> impl Iterator<Item = (&str, &str, u32, bool)> {
        self.fields().map(|f| (f.ty, f.name, f.size, f.is_struct))
    }

    /// The `__data_loc`/`__rel_loc` validators, in declaration order.
    pub(crate) fn validators(&self) -> &[Validator] {
        &self.validators
    }

    /// The tracepoint probes attach to.
    #[inline(always)]
    pub(crate) fn tracepoint(&self) -> *mut Tracepoint {
        self.core.tracepoint()
    }

    /// The event a `trace_event_call` of ours belongs to.
    ///
    /// # Safety
    ///
    /// `call` must be the `call` of a registered [`UserEvent`].
    pub(crate) unsafe fn from_call<'a>(call: *mut Call) -> &'a Self {
        // SAFETY: Per the safety requirements `call` is the call of a live `UserEvent`, whose
        // owner was set to the event itself at registration.
        unsafe { &*CoreEvent::owner(call).cast::<Self>() }
    }

    /// The `trace_event_call`.
    #[inline(always)]
    pub(crate) fn call(&self) -> *mut Call {
        self.core.call()
    }

    /// Consumers currently attached.
    pub(crate) fn status(&self) -> u8 {
        self.status.load(core::sync::atomic::Ordering::Relaxed)
    }

    /// Records the consumers attached (under `event_mutex`, from the `reg` callback).
    pub(crate) fn set_status(&self, _held: &mut Held, status: u8) {
        self.status
            .store(status, core::sync::atomic::Ordering::Relaxed);
    }

    /// Initialises the C objects with `callbacks` and defines the fields; the event is not
    /// yet known to the tracing core. If a field cannot be defined, those defined before it are
    /// freed again.
    ///
    /// # Safety
    ///
    /// `this` must be a leaked, pinned `KBox<UserEvent>` not yet known to the core.
    pub(crate) unsafe fn init_c_objects(this: NonNull<Self>, callbacks: &Callbacks) -> Result {
        // SAFETY: Exclusively owned per the safety requirements.
        let ev = unsafe { this.as_ref() };
        let system = if ev.is_multi() {
            names::SYSTEM_MULTI
        } else {
            names::SYSTEM
        };
        // SAFETY: The objects are zeroed, owned by `ev`, not yet shared with the core, and do
        // not move; the strings they point to live in `ev.strings`, which never changes after
        // `new`, and `this` outlives them.
        unsafe {
            ev.core.init(
                this.as_ptr().cast(),
                ev.c_str_at(&ev.tp_name),
                system,
                ev.c_str_at(&ev.print_fmt),
                callbacks,
            )
        };
        for f in ev.fields.iter() {
            let field = Field {
                ty: ev.c_str_at(&f.ty),
                name: ev.c_str_at(&f.name),
                offset: f.offset as usize,
                size: f.size as usize,
                is_signed: f.is_signed,
            };
            // SAFETY: Initialised above and not yet visible; the strings outlive the objects.
            if let Err(e) = unsafe { ev.core.define_field(&field) } {
                // SAFETY: Still unknown to the core.
                unsafe { ev.core.free_fields() };
                return Err(e);
            }
        }
        Ok(())
    }

    /// The C objects, for the group to register and remove.
    pub(crate) fn core(&self) -> &CoreEvent {
        &self.core
    }

    /// Takes a reference.
    pub(crate) fn get(&self) {
        self.refcnt.inc();
    }

    /// Gives an event whose count reached zero, and whose destroy could not run, the one
    /// reference the retry of its destroy holds.
    ///
    /// # Safety
    ///
    /// `this` is a registered event whose count reached zero in
    /// [`UserEvent::put_for_destroy`], with `event_mutex` held since.
    pub(crate) unsafe fn revive(this: NonNull<Self>, _held: &mut Held) -> ARef<Self> {
        // SAFETY: Not freed: only its destroy, which is the caller, frees it.
        unsafe { this.as_ref() }.refcnt.set(1);
        // SAFETY: The count is the one reference set above, owned by the returned `ARef`.
        unsafe { ARef::from_raw(this) }
    }

    /// The reference count (`refcount_read`).
    pub(crate) fn refs(&self) -> i32 {
        self.refcnt.as_atomic().load(Relaxed)
    }

    /// True when only the event's own references remain (`user_event_last_ref`).
    pub(crate) fn is_last_ref(&self) -> bool {
        self.refs() == if self.is_persist() { 1 } else { 0 }
    }

    /// Drops a reference with `event_mutex` held (upstream `user_event_put(user, true)`).
    pub(crate) fn put_locked(&self, held: &mut Held) {
        if self.refcnt.dec_and_test() {
            self.last_put(held);
        }
    }

    /// Drops a reference without holding `event_mutex` (`user_event_put(user, false)`).
    pub(crate) fn put(&self) {
        let count = self.refcnt.as_atomic();
        let mut old = count.load(Relaxed);
        // Like refcount_dec_and_mutex_lock(): only the final decrement takes the lock.
        while old > 1 {
            match count.cmpxchg(old, old - 1, kernel::sync::atomic::Full) {
                Ok(_) => return,
                Err(now) => old = now,
            }
        }
        let mut held = Held::lock();
        self.put_locked(&mut held);
    }

    /// Drops the reference a queued destroy held: the event if it was the last, and the
    /// destroy is to go ahead; `None` if a registration took the event meanwhile.
    ///
    /// The event is not freed while `event_mutex` stays held: only its destroy frees it.
    pub(crate) fn put_for_destroy(this: ARef<Self>, _held: &mut Held) -> Option<NonNull<Self>> {
        let ptr = ARef::into_raw(this);
        // SAFETY: The reference given up here kept the event alive, and `event_mutex` (held)
        // keeps it so: the event is freed only under it.
        unsafe { ptr.as_ref() }.refcnt.dec_and_test().then_some(ptr)
    }

    /// The last reference went away: destroy asynchronously, as upstream, so a registration
    /// that races in can still take the event.
    fn last_put(&self, held: &mut Held) {
        if self.is_persist() {
            pr_alert!("BUG: Auto-delete engaged on persistent event\n");
            return;
        }
        self.refcnt.set(1);
        // SAFETY: The count is the one reference set above, which the destroy now owns.
        let work = unsafe { ARef::from_raw(NonNull::from(self)) };
        Self::queue_destroy(work, 0, held);
    }

    /// Queues the delayed destroy in `delay` jiffies (the group's `WorkItem`), which owns
    /// `this`, one reference.
    pub(crate) fn queue_destroy(this: ARef<Self>, delay: Jiffies, _held: &mut Held) {
        // The event pins the module until its destroy ran, so the workqueue outlives the work;
        // `None` only at exit, once every event is gone.
        let queued = match deferred::lifecycle() {
            Some(queue) => queue.enqueue_delayed(this, delay),
            None => Err(this),
        };
        if let Err(this) = queued {
            // Not reached: a pending destroy holds a reference, so the count cannot reach zero
            // again while it is queued, and the queue lives while any event does. Dropping
            // `this` would put it again under `event_mutex`; it is kept instead, so the event
            // stays for good (`DIAG_IOCSDEL` says `EBUSY`) and pins the module, as upstream's
            // does when it cannot queue.
            let _ = ARef::into_raw(this);
            pr_warn!("user_events: Unable to queue delayed destroy\n");
        }
    }

    /// True while the tracing core holds references of its own on the event's call
    /// ([`CoreEvent::core_busy`]). kprobe, uprobe and synthetic events refuse deletion then, and
    /// so does this module: freeing the call would leave the core a dangling pointer.
    pub(crate) fn core_busy(&self) -> bool {
        self.core.core_busy()
    }
}
