// SPDX-License-Identifier: GPL-2.0

//! The C objects the tracing core knows a user event by, and the core's calls on them: its
//! `trace_event_call` with the class, tracepoint, field-list terminator and output functions it
//! points to, and its `dyn_event` entry in `dynamic_events` ([`CoreEvent`]).
//!
//! The event (`crate::event::UserEvent`) embeds one [`CoreEvent`] and owns the strings it
//! points to; the group (`crate::group`) registers and removes it under `event_mutex`.

use crate::bindings;
use core::ptr::NonNull;
use kernel::{prelude::*, types::Opaque};

/// A user event's `trace_event_call`, as the core hands it to the module's callbacks.
pub(crate) type Call = bindings::trace_event_call;
/// A user event's tracepoint.
pub(crate) type Tracepoint = bindings::tracepoint;
/// A user event's entry in `dynamic_events`.
pub(crate) type DynEvent = bindings::dyn_event;

/// What the module plugs into every event's class.
pub(crate) struct Callbacks {
    /// The ftrace probe (`class->probe`).
    pub(crate) probe: *mut c_void,
    /// The perf probe (`class->perf_probe`).
    pub(crate) perf_probe: *mut c_void,
}

/// `dyn_event_list` and the operations each linked event names.
#[derive(Clone, Copy)]
pub(crate) struct DynLink {
    /// `dyn_event_list`, resolved at load.
    pub(crate) list: NonNull<bindings::list_head>,
    /// The `u:` operations ([`crate::dyn_events`]).
    pub(crate) ops: NonNull<bindings::dyn_event_operations>,
}

// SAFETY: The pointers name kernel-global `dynamic_events` objects, only dereferenced under
// `event_mutex`.
unsafe impl Send for DynLink {}
// SAFETY: As above.
unsafe impl Sync for DynLink {}

/// One field of an event, as [`CoreEvent::define_field`] gives it to the core.
pub(crate) struct Field<'a> {
    /// Its C type, as the `format` file shows it.
    pub(crate) ty: &'a CStr,
    /// Its name.
    pub(crate) name: &'a CStr,
    /// Its offset in the record, header included.
    pub(crate) offset: usize,
    /// Its size.
    pub(crate) size: usize,
    /// Whether it is signed.
    pub(crate) is_signed: bool,
}

/// An event's C objects.
///
/// # Invariants
///
/// Zeroed until [`CoreEvent::init`]; from then on they point into each other and to strings and
/// data their owner keeps for as long as they live, they do not move (the owner is pinned in its
/// allocation), and the class's field list holds the fields [`CoreEvent::define_field`] defined.
pub(crate) struct CoreEvent {
    call: Opaque<Call>,
    class: Opaque<bindings::trace_event_class>,
    tracepoint: Opaque<Tracepoint>,
    /// The empty `fields_array` terminator the core walks when the field list is empty.
    fields_end: Opaque<bindings::trace_event_fields>,
    funcs: Opaque<bindings::trace_event_functions>,
    /// The entry in `dynamic_events` (upstream `devent`).
    devent: Opaque<DynEvent>,
}

impl CoreEvent {
    /// Objects not yet initialised.
    pub(crate) fn zeroed() -> Self {
        // INVARIANT: Zeroed.
        Self {
            call: Opaque::zeroed(),
            class: Opaque::zeroed(),
            tracepoint: Opaque::zeroed(),
            fields_end: Opaque::zeroed(),
            funcs: Opaque::zeroed(),
            devent: Opaque::zeroed(),
        }
    }

    /// The `trace_event_call`.
    #[inline(always)]
    pub(crate) fn call(&self) -> *mut Call {
        self.call.get()
    }

    /// The tracepoint probes attach to.
    #[inline(always)]
    pub(crate) fn tracepoint(&self) -> *mut Tracepoint {
        self.tracepoint.get()
    }

    /// The objects a `dyn_event` of ours belongs to.
    ///
    /// # Safety
    ///
    /// `devent` is the `devent` of a [`CoreEvent`].
    pub(crate) unsafe fn from_devent(devent: *mut DynEvent) -> NonNull<Self> {
        // SAFETY: `devent` is the `devent` field of a live `CoreEvent` (container_of).
        unsafe {
            NonNull::new_unchecked(
                devent
                    .byte_sub(core::mem::offset_of!(Self, devent))
                    .cast::<Self>(),
            )
        }
    }

    /// The owner [`CoreEvent::init`] gave a call of ours (`call->data`).
    ///
    /// # Safety
    ///
    /// `call` is the `call` of an initialised [`CoreEvent`].
    #[inline(always)]
    pub(crate) unsafe fn owner(call: *mut Call) -> *mut c_void {
        // SAFETY: `call` is initialised (the caller's guarantee); `data` is never changed.
        unsafe { (*call).data }
    }

    /// Initialises the objects: the tracepoint `tp_name`, the class in `system` with
    /// `callbacks`, the `print_fmt`, `owner` as the call's data; the event is not yet known to
    /// the tracing core.
    ///
    /// # Safety
    ///
    /// The objects are zeroed, not known to the core and do not move from now on; `owner` and
    /// the strings outlive them.
    pub(crate) unsafe fn init(
        &self,
        owner: *mut c_void,
        tp_name: &CStr,
        system: &'static CStr,
        print_fmt: &CStr,
        callbacks: &Callbacks,
    ) {
        let call = self.call.get();
        let class = self.class.get();
        let tp = self.tracepoint.get();
        // SAFETY: All objects are zeroed and not yet shared with the core (the caller's
        // guarantee); the strings and `owner` outlive them.
        // INVARIANT: They point into each other and to what the owner keeps.
        unsafe {
            (*tp).name = tp_name.as_char_ptr();
            (*self.funcs.get()).trace = Some(bindings::rue_print_trace);
            (*class).system = system.as_char_ptr();
            (*class).probe = callbacks.probe;
            (*class).perf_probe = callbacks.perf_probe;
            (*class).reg = Some(bindings::rue_user_event_reg);
            (*class).fields_array = self.fields_end.get();
            bindings::INIT_LIST_HEAD(&raw mut (*class).fields);
            (*call).class = class;
            (*call).__bindgen_anon_1.tp = tp;
            (*call).event.funcs = self.funcs.get();
            (*call).print_fmt = print_fmt.as_char_ptr().cast_mut();
            (*call).data = owner;
            // Upstream's dyn_event_add() sets DYNAMIC: perf and triggers then count references
            // in `call->refcnt` instead of pinning a module.
            (*call).flags =
                (bindings::TRACE_EVENT_FL_TRACEPOINT | bindings::TRACE_EVENT_FL_DYNAMIC) as c_int;
            bindings::INIT_LIST_HEAD(&raw mut (*self.devent.get()).list);
        }
    }

    /// Defines a field (`trace_define_field`), kept until the core removes the event, or
    /// [`CoreEvent::free_fields`].
    ///
    /// # Safety
    ///
    /// Initialised, not yet known to the core; the field's strings outlive the objects.
    pub(crate) unsafe fn define_field(&self, field: &Field<'_>) -> Result {
        // SAFETY: `call` is initialised and not yet visible; the strings outlive the call; the
        // core copies nothing but keeps these pointers, freed with the call.
        kernel::error::to_result(unsafe {
            bindings::trace_define_field(
                self.call.get(),
                field.ty.as_char_ptr(),
                field.name.as_char_ptr(),
                // CAST: A record is at most a page.
                field.offset as c_int,
                // CAST: As above.
                field.size as c_int,
                c_int::from(field.is_signed),
                bindings::FILTER_OTHER as c_int,
            )
        })
    }

    /// Frees the fields [`CoreEvent::define_field`] defined, for an event whose registration
    /// failed before the tracing core knew it: the core frees them only when it removes an event
    /// (`trace_destroy_fields`, which a module cannot call).
    ///
    /// # Safety
    ///
    /// Initialised, and not known to the core.
    pub(crate) unsafe fn free_fields(&self) {
        // SAFETY: The class is initialised; its field list is the event's own.
        let head = unsafe { &raw mut (*self.class.get()).fields };
        loop {
            // SAFETY: `head` is an initialised list, changed by nobody else.
            let link = unsafe { (*head).next };
            if link == head {
                return;
            }
            // SAFETY: Every entry but the head is the `link` of a field `trace_define_field`
            // allocated (from the core's field cache: `kfree` frees any slab object).
            unsafe {
                let field = kernel::container_of!(link, bindings::ftrace_event_field, link);
                bindings::rue_list_del_init(link);
                bindings::kfree(field.cast());
            }
        }
    }

    /// Registers the event with the tracing core (its output functions, then the call, with
    /// the fsuid of root, as upstream's `user_event_set_call_visible`), and links it into
    /// `dynamic_events` with `link`. On failure the core knows nothing of it, and the fields are
    /// freed.
    ///
    /// # Safety
    ///
    /// Initialised and not known to the core; `event_mutex` is held; the objects stay live
    /// until [`CoreEvent::remove`] succeeded.
    pub(crate) unsafe fn add(&self, link: Option<DynLink>) -> Result {
        let call = self.call.get();
        // SAFETY: `call.event` is initialised with our print callbacks.
        if unsafe { bindings::register_trace_event(&raw mut (*call).event) } == 0 {
            // SAFETY: Initialised, unknown to the core.
            unsafe { self.free_fields() };
            return Err(ENODEV);
        }
        // SAFETY: `event_mutex` is held, as `trace_add_event_call` requires; the call is fully
        // initialised. The fsuid override lets a registrant that may open user_events_data but
        // not create tracefs entries still create them, as upstream.
        let ret = with_root_fsuid(|| unsafe { bindings::trace_add_event_call(call) });
        if ret != 0 {
            // SAFETY: Registered just above and not yet added; then unknown to the core.
            unsafe {
                bindings::unregister_trace_event(&raw mut (*call).event);
                self.free_fields();
            }
            return Err(Error::from_errno(ret));
        }
        if let Some(link) = link {
            let devent = self.devent.get();
            // SAFETY: `event_mutex` is held, which protects `dyn_event_list`; `devent` was
            // initialised (self-linked) and stays live until `remove` unlinks it.
            unsafe {
                (*devent).ops = link.ops.as_ptr();
                bindings::list_add_tail(&raw mut (*devent).list, link.list.as_ptr());
            }
        }
        Ok(())
    }

    /// Removes the event from the tracing core (`trace_remove_event_call`, with the fsuid of
    /// root) and from `dynamic_events`. On failure it stays registered.
    ///
    /// # Safety
    ///
    /// Added by [`CoreEvent::add`]; `event_mutex` is held.
    pub(crate) unsafe fn remove(&self) -> Result {
        let call = self.call.get();
        // SAFETY: `event_mutex` is held; `call` is registered.
        let ret = with_root_fsuid(|| unsafe { bindings::trace_remove_event_call(call) });
        kernel::error::to_result(ret)?;
        // SAFETY: `event_mutex` is held; the `dyn_event` was initialised, and `list_del_init`
        // of a self-linked node (never linked) is a no-op.
        unsafe { bindings::rue_list_del_init(&raw mut (*self.devent.get()).list) };
        Ok(())
    }

    /// True while the tracing core holds references of its own on the call
    /// (`trace_event_dyn_busy`): an `enable_event` trigger being freed, a perf event being set
    /// up or torn down.
    pub(crate) fn core_busy(&self) -> bool {
        // SAFETY: The call is zeroed or initialised; the read is atomic.
        unsafe { bindings::rue_trace_event_dyn_busy(self.call.get()) }
    }
}

/// Runs `f` with current's fsuid overridden to root (`user_event_set_call_visible`).
fn with_root_fsuid(f: impl FnOnce() -> c_int) -> c_int {
    // SAFETY: No preconditions; returns NULL on allocation failure.
    let old = unsafe { bindings::rue_override_fsuid_root() };
    if old.is_null() {
        return ENOMEM.to_errno();
    }
    let ret = f();
    // SAFETY: `old` is what `rue_override_fsuid_root` returned on this task.
    unsafe { bindings::rue_revert_creds(old) };
    ret
}

/// `perfmon_capable()`.
pub(crate) fn perfmon_capable() -> bool {
    // SAFETY: No preconditions.
    unsafe { bindings::rue_perfmon_capable() }
}
