// SPDX-License-Identifier: GPL-2.0

//! One user event (upstream `struct user_event`): the `trace_event_call` the tracing core sees,
//! the tracepoint its probes attach to, the parsed fields, and its reference count.
//!
//! This is the event *model*: it knows nothing of the table, the consumers or the enablers. Its
//! life (creation, registration with the tracing core, the `dynamic_events` link and
//! destruction) is run by one owner, [`crate::group`], which hands the callbacks in
//! ([`Callbacks`]).
//!
//! # Lifetime
//!
//! An event is a `KBox` turned into a raw pointer once its C objects are initialised, because
//! the tracing core keeps pointers into it. It is freed only by the group's delayed destroy or a
//! deletion, under `event_mutex`, once its reference count says nobody uses it (upstream's
//! `user_event_put` and `delayed_destroy_user_event`). References are held by: each open file
//! that registered it, each enabler, each attached ftrace/perf probe, the creator until it has
//! taken its own, a `user_events_status` listing while it is written, and, for
//! `USER_EVENT_REG_PERSIST`, the event itself. Every live event also holds a reference on this
//! module, so `rmmod` is refused while any event exists.

use crate::{
    bindings, deferred,
    event_mutex::Held,
    kbuf::KBuf,
    logic::{
        grammar::{self, FieldSpec, Validator},
        print_fmt,
    },
};
use core::{mem::offset_of, ops::Range, ptr::NonNull};
use kernel::{
    prelude::*,
    sync::{atomic::Relaxed, Refcount},
    types::Opaque, //
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

/// `USER_EVENT_REG_PERSIST`.
pub(crate) const REG_PERSIST: u16 = 1 << 0;
/// `USER_EVENT_REG_MULTI_FORMAT`.
pub(crate) const REG_MULTI_FORMAT: u16 = 1 << 1;

/// One user event.
///
/// # Invariants
///
/// Once [`UserEvent::init_c_objects`] ran, the C objects point into this allocation, which does
/// not move until it is freed; the group registers them with the tracing core.
pub(crate) struct UserEvent {
    call: Opaque<bindings::trace_event_call>,
    class: Opaque<bindings::trace_event_class>,
    tracepoint: Opaque<bindings::tracepoint>,
    /// The empty `fields_array` terminator the core walks when the field list is empty.
    fields_end: Opaque<bindings::trace_event_fields>,
    funcs: Opaque<bindings::trace_event_functions>,
    /// The delayed destroy; a `delayed_work` so a destroy the core still blocks can be retried.
    put_work: Opaque<bindings::delayed_work>,
    /// The entry in `dynamic_events` (upstream `devent`).
    devent: Opaque<bindings::dyn_event>,
    /// NUL-terminated strings: registered name, tracepoint name, print fmt, field types and names.
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
}

// SAFETY: The C objects are only touched through the tracing core's own locking or under
// `event_mutex`; the Rust fields are immutable after registration or atomic.
unsafe impl Send for UserEvent {}
// SAFETY: As above.
unsafe impl Sync for UserEvent {}

/// Appends `s` and a NUL to `strings`, returning the range of `s`.
fn push_str(strings: &mut KVec<u8>, s: &[u8]) -> Result<Range<usize>> {
    let start = strings.len();
    strings.extend_from_slice(s, GFP_KERNEL)?;
    let end = strings.len();
    strings.push(0, GFP_KERNEL)?;
    Ok(start..end)
}

/// What the owner of the event's life plugs into its C objects.
pub(crate) struct Callbacks {
    /// The ftrace probe (`class->probe`).
    pub(crate) probe: *mut c_void,
    /// The perf probe (`class->perf_probe`).
    pub(crate) perf_probe: *mut c_void,
    /// The delayed destroy, run by the work [`UserEvent::queue_destroy`] queues.
    pub(crate) destroy: unsafe extern "C" fn(*mut bindings::work_struct),
}

impl UserEvent {
    /// The entry in `dynamic_events`.
    pub(crate) fn devent(&self) -> *mut bindings::dyn_event {
        self.devent.get()
    }

    /// The event a `dyn_event` of ours belongs to.
    ///
    /// # Safety
    ///
    /// `devent` must be the `dyn_event` of an initialised [`UserEvent`].
    pub(crate) unsafe fn from_devent(devent: *mut bindings::dyn_event) -> NonNull<Self> {
        // SAFETY: `devent` is the `devent` field of a live `UserEvent` (container_of).
        unsafe { NonNull::new_unchecked(devent.byte_sub(offset_of!(Self, devent)).cast::<Self>()) }
    }

    /// The event whose delayed destroy `work` is.
    ///
    /// # Safety
    ///
    /// `work` must be the work of the `put_work` of an initialised [`UserEvent`].
    pub(crate) unsafe fn from_destroy_work(work: *mut bindings::work_struct) -> NonNull<Self> {
        // SAFETY: `work` is the `work` member, at offset 0, of the `put_work` field of a live
        // `UserEvent` (container_of).
        unsafe { NonNull::new_unchecked(work.byte_sub(offset_of!(Self, put_work)).cast::<Self>()) }
    }

    /// Parses a new event `name args`; `multi_id` names a multi-format version.
    ///
    /// Fails with `EINVAL` for any grammar error (spec §2), `ENOMEM` on allocation failure.
    pub(crate) fn new(
        name: &str,
        args: &str,
        reg_flags: u16,
        multi_id: Option<u64>,
    ) -> Result<KBox<Self>> {
        let mut strings = KVec::new();
        let reg_name = push_str(&mut strings, name.as_bytes())?;
        let tp_name = match multi_id {
            None => push_str(&mut strings, name.as_bytes())?,
            Some(id) => {
                let mut buf = KBuf::new();
                grammar::tp_name_multi(&mut buf, name, id).map_err(|_| ENOMEM)?;
                push_str(&mut strings, &buf.into_vec())?
            }
        };
        let mut fields = KVec::new();
        let mut validators = KVec::new();
        let mut min_size = 0;
        for field in grammar::fields(args) {
            let field = field.map_err(|_| EINVAL)?;
            let ty = push_str(&mut strings, field.ty.as_bytes())?;
            let fname = push_str(&mut strings, field.name.as_bytes())?;
            if let Some(v) = field.validator() {
                validators.push(v, GFP_KERNEL)?;
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
                GFP_KERNEL,
            )?;
        }
        let mut this = Self {
            call: Opaque::zeroed(),
            class: Opaque::zeroed(),
            tracepoint: Opaque::zeroed(),
            fields_end: Opaque::zeroed(),
            funcs: Opaque::zeroed(),
            put_work: Opaque::zeroed(),
            devent: Opaque::zeroed(),
            strings,
            reg_name,
            tp_name,
            print_fmt: 0..0,
            fields,
            validators,
            min_size,
            reg_flags,
            refcnt: Refcount::new(1),
            status: core::sync::atomic::AtomicU8::new(0),
        };
        let print_fmt = KBuf::c_string(|buf| print_fmt::write_print_fmt(buf, this.field_names()))?;
        let len = print_fmt.len() - 1;
        let start = this.strings.len();
        this.strings.extend_from_slice(&print_fmt, GFP_KERNEL)?;
        this.print_fmt = start..start + len;
        Ok(KBox::new(this, GFP_KERNEL)?)
    }

    fn str_at(&self, range: &Range<usize>) -> &str {
        // The strings were copied from `&str`s, so every stored range is valid UTF-8.
        self.strings
            .get(range.clone())
            .and_then(|b| core::str::from_utf8(b).ok())
            .unwrap_or("")
    }

    fn c_str_at(&self, range: &Range<usize>) -> *const c_char {
        // Every stored range is followed by a NUL in `strings`.
        self.strings[range.start..].as_ptr().cast()
    }

    /// The registered name (`reg_name`).
    pub(crate) fn reg_name(&self) -> &str {
        self.str_at(&self.reg_name)
    }

    /// The tracepoint name: the registered name, or `name.<hexid>` for multi-format events.
    pub(crate) fn tp_name(&self) -> &str {
        self.str_at(&self.tp_name)
    }

    /// True for a `USER_EVENT_REG_MULTI_FORMAT` event.
    pub(crate) fn is_multi(&self) -> bool {
        self.reg_flags & REG_MULTI_FORMAT != 0
    }

    /// True for a `USER_EVENT_REG_PERSIST` event.
    pub(crate) fn is_persist(&self) -> bool {
        self.reg_flags & REG_PERSIST != 0
    }

    fn field_names(&self) -> impl Iterator<Item = (&str, &str)> + Clone {
        self.fields
            .iter()
            .map(|f| (self.str_at(&f.ty), self.str_at(&f.name)))
    }

    /// The fields in declaration order.
    pub(crate) fn fields(&self) -> impl Iterator<Item = FieldSpec<'_>> + Clone {
        self.fields.iter().map(|f| FieldSpec {
            ty: self.str_at(&f.ty),
            name: self.str_at(&f.name),
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
    pub(crate) fn tracepoint(&self) -> *mut bindings::tracepoint {
        self.tracepoint.get()
    }

    /// The event a `trace_event_call` of ours belongs to.
    ///
    /// # Safety
    ///
    /// `call` must be the `call` of a registered [`UserEvent`].
    pub(crate) unsafe fn from_call<'a>(call: *mut bindings::trace_event_call) -> &'a Self {
        // SAFETY: Per the safety requirements `call` is the first field's address inside a live
        // `UserEvent`; `data` was set to the event itself at registration.
        unsafe { &*(*call).data.cast::<Self>() }
    }

    /// The `trace_event_call`.
    pub(crate) fn call(&self) -> *mut bindings::trace_event_call {
        self.call.get()
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
    /// yet known to the tracing core.
    ///
    /// # Safety
    ///
    /// `this` must be a leaked, never-moved `KBox<UserEvent>` not yet known to the core.
    pub(crate) unsafe fn init_c_objects(this: NonNull<Self>, callbacks: &Callbacks) -> Result {
        // SAFETY: Exclusively owned per the safety requirements.
        let ev = unsafe { this.as_ref() };
        let call = ev.call.get();
        let class = ev.class.get();
        let tp = ev.tracepoint.get();
        // SAFETY: All objects are zeroed, owned by `ev`, and not yet shared with the core; the
        // strings they point to live in `ev.strings`, which never changes after `new`.
        unsafe {
            (*tp).name = ev.c_str_at(&ev.tp_name);
            (*ev.funcs.get()).trace = Some(bindings::rue_print_trace);
            (*class).system = if ev.is_multi() {
                c"user_events_multi".as_char_ptr()
            } else {
                c"user_events".as_char_ptr()
            };
            (*class).probe = callbacks.probe;
            (*class).perf_probe = callbacks.perf_probe;
            (*class).reg = Some(bindings::rue_user_event_reg);
            (*class).fields_array = ev.fields_end.get();
            bindings::INIT_LIST_HEAD(&raw mut (*class).fields);
            (*call).class = class;
            (*call).__bindgen_anon_1.tp = tp;
            (*call).event.funcs = ev.funcs.get();
            (*call).print_fmt = ev.c_str_at(&ev.print_fmt).cast_mut();
            (*call).data = this.as_ptr().cast();
            // Upstream's dyn_event_add() sets DYNAMIC: perf and triggers then count references
            // in `call->refcnt` instead of pinning a module.
            (*call).flags =
                (bindings::TRACE_EVENT_FL_TRACEPOINT | bindings::TRACE_EVENT_FL_DYNAMIC) as c_int;
            bindings::rue_init_delayed_work(ev.put_work.get(), Some(callbacks.destroy));
            bindings::INIT_LIST_HEAD(&raw mut (*ev.devent.get()).list);
        }
        for f in ev.fields.iter() {
            // SAFETY: `call` is initialised and not yet visible; the strings outlive the call;
            // the core copies nothing but keeps these pointers, freed with the call.
            let ret = unsafe {
                bindings::trace_define_field(
                    call,
                    ev.c_str_at(&f.ty),
                    ev.c_str_at(&f.name),
                    f.offset as c_int,
                    f.size as c_int,
                    c_int::from(f.is_signed),
                    bindings::FILTER_OTHER as c_int,
                )
            };
            kernel::error::to_result(ret)?;
        }
        Ok(())
    }

    /// Takes a reference.
    pub(crate) fn get(&self) {
        self.refcnt.inc();
    }

    /// Gives an event whose count reached zero, and whose destroy failed, one reference again.
    pub(crate) fn revive(&self) {
        self.refcnt.set(1);
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

    /// Drops the reference a queued destroy held: true if it was the last, and the destroy is
    /// to go ahead (a registration may have taken the event meanwhile).
    pub(crate) fn put_for_destroy(&self, _held: &mut Held) -> bool {
        self.refcnt.dec_and_test()
    }

    /// The last reference went away: destroy asynchronously, as upstream, so a registration
    /// that races in can still take the event.
    fn last_put(&self, _held: &mut Held) {
        if self.is_persist() {
            pr_alert!("BUG: Auto-delete engaged on persistent event\n");
            return;
        }
        self.refcnt.set(1);
        self.queue_destroy(0);
    }

    /// Queues the delayed destroy ([`Callbacks::destroy`]) in `delay` jiffies; it holds the
    /// reference the count was set to.
    pub(crate) fn queue_destroy(&self, delay: c_ulong) {
        // SAFETY: `put_work` was initialised by `init_c_objects` and the event lives until the
        // work destroys it; the event pins the module until then.
        if !unsafe { deferred::queue_raw_delayed(self.put_work.get(), delay) } {
            pr_warn!("user_events: Unable to queue delayed destroy\n");
        }
    }

    /// True while the tracing core holds references of its own on the event's call
    /// (`trace_event_dyn_busy`): an `enable_event` trigger being freed, a perf event being set
    /// up or torn down. kprobe, uprobe and synthetic events refuse deletion then, and so does
    /// this module: freeing the call would leave the core a dangling pointer.
    pub(crate) fn core_busy(&self) -> bool {
        // SAFETY: `call` is initialised for a registered event; the read is atomic.
        unsafe { bindings::rue_trace_event_dyn_busy(self.call.get()) }
    }
}
