// SPDX-License-Identifier: GPL-2.0

//! The user_events group (upstream's `init_group`): the table of events that every
//! `user_events_data` file registers into and `user_events_status` lists.
//!
//! # Locking
//!
//! * [`Group::reg_mutex`] serialises registrations, deletions and unregistrations, as upstream.
//! * The event table lives under `event_mutex` ([`crate::event_mutex`]), which
//!   every writer of the table holds, including the delayed destroy. The status file reads
//!   under it too (upstream reads under `reg_mutex` only, quirk Q17).
//! * Order: `reg_mutex` → `event_mutex`.

use crate::{
    event::{UserEvent, REG_MULTI_FORMAT, REG_PERSIST},
    event_mutex::{EventLocked, Held},
    logic::{grammar, jhash, matching, status},
};
use core::{
    fmt,
    ptr::NonNull,
    sync::atomic::{AtomicU32, Ordering},
};
use kernel::{
    new_mutex,
    prelude::*,
    sync::{Arc, Mutex},
    types::ForeignOwnable, //
};

/// Default and initial value of `kernel.user_events_max`.
pub(crate) const DEFAULT_MAX_USER_EVENTS: u32 = 32768;

/// `kernel.user_events_max`: creating an event past this many fails with `EMFILE`.
pub(crate) static MAX_USER_EVENTS: AtomicU32 = AtomicU32::new(DEFAULT_MAX_USER_EVENTS);

/// A registered event in the table.
#[derive(Clone, Copy)]
pub(crate) struct EventPtr {
    ptr: NonNull<UserEvent>,
    bucket: u8,
}

// SAFETY: Events are `Send + Sync`; the pointer is only dereferenced under the rules of
// `UserEvent`'s lifetime (it is in the table, so it is registered).
unsafe impl Send for EventPtr {}

impl EventPtr {
    /// The event; valid while it is in the table.
    pub(crate) fn get(&self) -> &UserEvent {
        // SAFETY: An event in the table is registered and not freed before it is removed from
        // the table under `event_mutex`.
        unsafe { self.ptr.as_ref() }
    }
}

/// Everything under `event_mutex`.
pub(crate) struct GroupState {
    /// Events in creation order.
    events: KVec<EventPtr>,
    /// Next multi-format id; consumed even by failed creations (quirk Q8, kept).
    multi_id: u64,
}

/// The group's state; a global because the tracing core's callbacks reach it without context.
pub(crate) static STATE: EventLocked<GroupState> = EventLocked::new(GroupState {
    events: KVec::new(),
    multi_id: 0,
});

/// The group.
#[pin_data]
pub(crate) struct Group {
    /// Serialises registrations, deletions and unregistrations (upstream `reg_mutex`).
    #[pin]
    pub(crate) reg_mutex: Mutex<()>,
}

impl Group {
    /// Creates the group.
    pub(crate) fn new() -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Self {
                reg_mutex <- new_mutex!(()),
            }),
            GFP_KERNEL,
        )
    }

    /// Writes the text of `user_events_status`, in upstream's hash-table order (Q11).
    pub(crate) fn show_status(&self, out: &mut impl fmt::Write) -> fmt::Result {
        let mut held = Held::lock();
        let state = STATE.get(&mut held);
        let events = (0..=255u8).flat_map(|b| {
            state
                .events
                .iter()
                .rev()
                .filter(move |e| e.bucket == b)
                .map(|e| {
                    let ev = e.get();
                    (ev.tp_name(), probes_status(ev.status()))
                })
        });
        status::write_status(out, events)
    }

    /// Finds the event `name_args` describes, or creates it (upstream `user_event_parse_cmd`).
    ///
    /// Returns it with one reference for the caller. The caller holds `reg_mutex`.
    pub(crate) fn find_or_create(
        &self,
        name_args: &str,
        reg_flags: u16,
    ) -> Result<NonNull<UserEvent>> {
        let cmd = grammar::parse_command(name_args).map_err(|_| EINVAL)?;
        if reg_flags & REG_PERSIST != 0 && !perfmon_capable() {
            return Err(EPERM);
        }
        let multi = reg_flags & REG_MULTI_FORMAT != 0;
        let mut held = Held::lock();
        if let Some(found) = find(&mut held, cmd.name, cmd.args, multi)? {
            return Ok(found);
        }
        let multi_id = if multi {
            let state = STATE.get(&mut held);
            let id = state.multi_id;
            state.multi_id = id.wrapping_add(1);
            Some(id)
        } else {
            None
        };
        // Parsing allocates; upstream does it before taking event_mutex, but nothing here can
        // sleep on user memory, so holding it keeps find-then-insert atomic.
        let event = UserEvent::new(cmd.name, cmd.args, reg_flags, multi_id)?;
        let count = STATE.get(&mut held).events.len();
        if count >= MAX_USER_EVENTS.load(Ordering::Relaxed) as usize {
            return Err(EMFILE);
        }
        STATE.get(&mut held).events.reserve(1, GFP_KERNEL)?;
        let bucket = jhash::bucket(cmd.name.as_bytes());
        let ptr = UserEvent::register(event, &mut held)?;
        // PANIC: Capacity was reserved above, so this push cannot fail.
        STATE
            .get(&mut held)
            .events
            .push(EventPtr { ptr, bucket }, GFP_KERNEL)
            .expect("reserved");
        Ok(ptr)
    }

    /// `DIAG_IOCSDEL`: deletes every event registered as `name` (upstream `delete_user_event`).
    pub(crate) fn delete(&self, name: &str) -> Result {
        let mut held = Held::lock();
        let mut found = false;
        loop {
            // Newest first, as upstream's hash bucket (`hash_add` puts new entries at its head):
            // with several same-named events, the first one met decides `EBUSY` vs `EPERM`.
            let next = STATE
                .get(&mut held)
                .events
                .iter()
                .rev()
                .copied()
                .find(|e| e.get().reg_name() == name);
            let Some(e) = next else { break };
            found = true;
            let ev = e.get();
            if !ev.is_last_ref() {
                return Err(EBUSY);
            }
            if ev.is_persist() && !perfmon_capable() {
                return Err(EPERM);
            }
            unlink_and_free(e.ptr, &mut held)?;
        }
        if found {
            Ok(())
        } else {
            Err(ENOENT)
        }
    }
}

/// Looks for an event matching `name`/`args` (upstream `find_user_event`): +1 reference.
fn find(
    held: &mut Held,
    name: &str,
    args: &str,
    multi: bool,
) -> Result<Option<NonNull<UserEvent>>> {
    for e in STATE.get(held).events.iter() {
        let ev = e.get();
        if ev.is_multi() != multi || ev.reg_name() != name {
            continue;
        }
        if matching::fields_match(ev.field_tuples(), args, true) {
            ev.get();
            return Ok(Some(e.ptr));
        }
        if !multi {
            return Err(EADDRINUSE);
        }
    }
    Ok(None)
}

/// Unregisters `ptr` from the tracing core, removes it from the table and `dynamic_events`,
/// and frees it (upstream `destroy_user_event`). The caller holds the last reference.
pub(crate) fn unlink_and_free(ptr: NonNull<UserEvent>, held: &mut Held) -> Result {
    // SAFETY: `ptr` is in the table, hence registered.
    unsafe { UserEvent::unregister(ptr, held)? };
    // SAFETY: `ptr` is registered, its `dyn_event` initialised.
    unsafe { crate::dyn_events::remove(ptr.as_ref().devent(), held) };
    let events = &mut STATE.get(held).events;
    if let Some(i) = events.iter().position(|e| e.ptr == ptr) {
        events.remove(i)?;
    }
    // SAFETY: Unregistered and unlinked; the caller held the last reference.
    unsafe { UserEvent::free(ptr) };
    Ok(())
}

/// The delayed destroy of an event whose last reference went away.
pub(crate) fn destroy_event(ptr: NonNull<UserEvent>, held: &mut Held) {
    // SAFETY: Still registered and in the table: the count just dropped to zero.
    let ev = unsafe { ptr.as_ref() };
    if ev.core_busy() {
        ev.retry_destroy();
        return;
    }
    if unlink_and_free(ptr, held).is_err() {
        pr_warn!("user_events: Unable to delete event\n");
        // The count is zero here: set it to one, as upstream's `refcount_set(&user->refcnt, 1)`
        // (raising it from zero would be a refcount "addition on 0" report). The event stays in
        // the table for a later delete.
        // SAFETY: Still registered and in the table: `unlink_and_free` failed before freeing.
        unsafe { ptr.as_ref() }.revive();
    }
}

/// Frees the table's own allocations when dropped at module exit, when no event is left.
pub(crate) struct StateOwner;

impl Drop for StateOwner {
    fn drop(&mut self) {
        let mut held = Held::lock();
        let state = STATE.get(&mut held);
        state.events = KVec::new();
    }
}

/// `perfmon_capable()`.
pub(crate) fn perfmon_capable() -> bool {
    // SAFETY: No preconditions.
    unsafe { crate::bindings::rue_perfmon_capable() }
}

/// Converts the internal status bits into the status file's view.
fn probes_status(bits: u8) -> status::Consumers {
    status::Consumers {
        ftrace: bits & crate::probes::STATUS_FTRACE != 0,
        perf: bits & crate::probes::STATUS_PERF != 0,
        other: bits & crate::probes::STATUS_OTHER != 0,
    }
}

/// The module's reference to the group, lent to tracefs inodes as `i_private`.
///
/// # Invariants
///
/// `ptr` came from `Arc::<Group>::into_foreign` and is released only in `drop`.
pub(crate) struct GroupHandle {
    ptr: *mut c_void,
}

// SAFETY: `Arc<Group>` is `Send + Sync`; the handle only owns one such reference.
unsafe impl Send for GroupHandle {}
// SAFETY: As above.
unsafe impl Sync for GroupHandle {}

impl GroupHandle {
    /// Takes ownership of `group`.
    pub(crate) fn new(group: Arc<Group>) -> Self {
        // INVARIANT: `ptr` comes from `into_foreign`.
        Self {
            ptr: group.into_foreign(),
        }
    }

    /// The pointer to store in `i_private`; valid while `self` lives.
    pub(crate) fn as_foreign(&self) -> *mut c_void {
        self.ptr
    }

    /// Clones the group reference stored in an inode's `i_private` by [`Self::as_foreign`].
    ///
    /// # Safety
    ///
    /// `ptr` must come from [`Self::as_foreign`] of a handle that is still alive.
    pub(crate) unsafe fn clone_from_foreign(ptr: *mut c_void) -> Arc<Group> {
        // SAFETY: Guaranteed by the caller: `ptr` is a live `Arc<Group>` foreign pointer.
        let group = unsafe { <Arc<Group> as ForeignOwnable>::borrow(ptr) };
        group.into()
    }
}

impl Drop for GroupHandle {
    fn drop(&mut self) {
        // SAFETY: By the type invariants `ptr` came from `into_foreign` and is released once.
        drop(unsafe { <Arc<Group> as ForeignOwnable>::from_foreign(self.ptr) });
    }
}
