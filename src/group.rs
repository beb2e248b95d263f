// SPDX-License-Identifier: GPL-2.0

//! The user_events group (upstream's `init_group`): the table of events that every
//! `user_events_data` file registers into and `user_events_status` lists, and the one owner of
//! each event's life.
//!
//! # An event's life
//!
//! Everything between the model ([`crate::event`]) and its users happens here, in this order:
//!
//! 1. **Creation** ([`Group::find_or_create`]): an existing event that matches is taken, or a
//!    new one is parsed ([`UserEvent::new`]) and counted against `kernel.user_events_max`.
//! 2. **Registration** ([`register`]): a module reference, the C objects with this module's
//!    probes ([`CALLBACKS`]), `register_trace_event`,
//!    `trace_add_event_call`, the `dynamic_events` link, the persistent reference; then the
//!    table entry.
//! 3. **Use**: files, enablers and consumers take and drop references (an [`ARef`], or
//!    [`UserEvent::get`] and [`UserEvent::put_locked`] under `event_mutex`).
//! 4. **Destruction**: the last put queues the delayed destroy ([`destroy`], the event's
//!    [`WorkItem`]), or
//!    `DIAG_IOCSDEL`/`dynamic_events` deletes an unused event ([`unlink_and_free`]):
//!    `trace_remove_event_call`, the `dynamic_events` unlink, the table entry, the memory and
//!    the module reference, in that order.
//!
//! # Locking
//!
//! [`Group::reg_mutex`] serialises registrations, deletions and unregistrations, as upstream.
//! The table lives under `event_mutex` ([`crate::event_mutex`], which has the module's complete
//! lock order), held by every writer of the table, including the delayed destroy. The status
//! file reads under it too (upstream reads under `reg_mutex` only, quirk Q17).

use crate::{
    compat, deferred,
    event::{UserEvent, REG_MULTI_FORMAT, REG_PERSIST},
    event_mutex::{EventLocked, Held},
    ftrace_record,
    logic::{grammar, jhash, matching, status},
    perf_sample, probes,
    trace_call::{self, Callbacks, DynLink},
};
use core::{
    fmt,
    ptr::NonNull,
    sync::atomic::{AtomicU32, Ordering},
};
use kernel::{
    new_mutex,
    prelude::*,
    sync::{aref::ARef, Arc, Mutex},
    time::{msecs_to_jiffies, Jiffies},
    types::ForeignOwnable,
    workqueue::WorkItem, //
};

/// Default and initial value of `kernel.user_events_max`.
pub(crate) const DEFAULT_MAX_USER_EVENTS: u32 = 32768;

/// `kernel.user_events_max`: creating an event past this many fails with `EMFILE`.
pub(crate) static MAX_USER_EVENTS: AtomicU32 = AtomicU32::new(DEFAULT_MAX_USER_EVENTS);

/// Buckets of the event table, one per [`jhash::bucket_of`]: upstream's
/// `DECLARE_HASHTABLE(register_table, 8)`.
const BUCKETS: usize = 1 << u8::BITS;

/// Length of the longest consumer suffix of a status line, `" # Used by ftrace perf other"`.
const STATUS_SUFFIX_MAX: usize = 28;

/// Everything under `event_mutex`.
pub(crate) struct GroupState {
    /// Registered events by the bucket of their name's key: each bucket's newest event, which
    /// links to the next older ([`UserEvent::table_next`]), as upstream's hash table of
    /// `hlist`s. A lookup visits one bucket, the status file lists bucket by bucket, newest
    /// first. An event is registered and not freed while it is in a bucket. Entering one
    /// allocates nothing.
    buckets: [Option<NonNull<UserEvent>>; BUCKETS],
    /// Number of events in the table.
    count: usize,
    /// Bytes of the status file's event lines without their consumer suffix: its size estimate.
    name_bytes: usize,
    /// Next multi-format id; consumed even by failed creations (quirk Q8, kept).
    multi_id: u64,
    /// Where new events are linked for `dynamic_events`, while the `u:` type is registered.
    dyn_link: Option<DynLink>,
}

// SAFETY: The pointers name events, which are `Send + Sync`, and kernel-global `dynamic_events`
// objects; they are only dereferenced under `event_mutex`, while the event is in the table and
// therefore not freed.
unsafe impl Send for GroupState {}

/// The events of bucket `b`, newest first.
fn bucket_events(held: &Held, b: u8) -> impl Iterator<Item = (NonNull<UserEvent>, &UserEvent)> {
    let mut next = STATE.get_ref(held).buckets[usize::from(b)];
    core::iter::from_fn(move || {
        let ptr = next?;
        // SAFETY: An event in the table is registered and not freed before it leaves the
        // table, which takes `&mut Held`; `held` stays borrowed while the reference lives.
        let ev = unsafe { ptr.as_ref() };
        next = *ev.table_next.get_ref(held);
        Some((ptr, ev))
    })
}

/// The events registered as `name`, whose key is `key` ([`jhash::key`]), newest first. The
/// keys are compared first: the names of a bucket's other events are rarely read.
fn named<'a>(
    held: &'a Held,
    key: u32,
    name: &'a str,
) -> impl Iterator<Item = (NonNull<UserEvent>, &'a UserEvent)> {
    bucket_events(held, jhash::bucket_of(key))
        .filter(move |(_, ev)| ev.name_key == key && ev.reg_name() == name)
}

/// Every event, bucket by bucket and newest first in each: upstream's `hash_for_each`.
fn in_hash_order(held: &Held) -> impl Iterator<Item = &UserEvent> {
    (0..=u8::MAX).flat_map(move |b| bucket_events(held, b).map(|(_, ev)| ev))
}

/// Takes `ptr` out of its bucket's chain. Returns whether it was in it.
fn unchain(ptr: NonNull<UserEvent>, held: &mut Held) -> bool {
    // SAFETY: The caller's event, registered and not freed.
    let ev = unsafe { ptr.as_ref() };
    let b = jhash::bucket_of(ev.name_key);
    let next = *ev.table_next.get_ref(held);
    let head = &mut STATE.get(held).buckets[usize::from(b)];
    if *head == Some(ptr) {
        *head = next;
        return true;
    }
    let Some((prev, _)) =
        bucket_events(held, b).find(|(_, ev)| *ev.table_next.get_ref(held) == Some(ptr))
    else {
        return false;
    };
    // SAFETY: `prev` is in the table, so registered and not freed.
    *unsafe { prev.as_ref() }.table_next.get(held) = next;
    true
}

/// The group's state; a global because the tracing core's callbacks reach it without context.
pub(crate) static STATE: EventLocked<GroupState> = EventLocked::new(GroupState {
    buckets: [None; BUCKETS],
    count: 0,
    name_bytes: 0,
    multi_id: 0,
    dyn_link: None,
});

/// Links the events created from now on into `dynamic_events` (`Some`), or stops (`None`).
/// Called by [`crate::dyn_events`] when it (un)registers the `u:` type.
pub(crate) fn set_dyn_link(link: Option<DynLink>) {
    STATE.get(&mut Held::lock()).dyn_link = link;
}

/// The group. There is one, created at module load; it owns the table ([`STATE`], a static
/// because the tracing core's callbacks reach it without context), which is empty when its last
/// reference goes at module exit, after every file, the `u:` type and the deferred work.
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

    /// An upper bound of the size of `user_events_status`'s text, for sizing its buffer once.
    pub(crate) fn status_size(&self) -> usize {
        let mut held = Held::lock();
        let state = STATE.get(&mut held);
        // The tail is "\nActive: N\nBusy: N\n" with N < 2^32.
        state.name_bytes + state.count * STATUS_SUFFIX_MAX + 32
    }

    /// Writes the text of `user_events_status`, in upstream's hash-table order (Q11).
    ///
    /// `event_mutex` is held only while [`Listing::take`] copies each event's name and status;
    /// the text is written after it is released.
    pub(crate) fn show_status(&self, out: &mut impl fmt::Write) -> Result {
        let listing = Listing::take()?;
        let events = listing
            .events()
            .map(|(name, bits)| (name, probes_status(bits)));
        // The writer cannot fail: a seq_file counts its own overflow.
        let _ = status::write_status(out, events);
        Ok(())
    }

    /// Finds the event `name_args` describes, or creates it (upstream `user_event_parse_cmd`).
    ///
    /// Returns it with one reference for the caller. The caller holds `reg_mutex`.
    pub(crate) fn find_or_create(
        &self,
        name_args: &str,
        reg_flags: u16,
    ) -> Result<ARef<UserEvent>> {
        let cmd = grammar::parse_command(name_args).map_err(|_| EINVAL)?;
        if reg_flags & REG_PERSIST != 0 && !trace_call::perfmon_capable() {
            return Err(EPERM);
        }
        let multi = reg_flags & REG_MULTI_FORMAT != 0;
        // Hashed once for the lookup and the insertion.
        let key = jhash::key(cmd.name.as_bytes());
        let mut held = Held::lock();
        if let Some(found) = find(&held, key, cmd.name, cmd.args, multi)? {
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
        let event = UserEvent::new(cmd.name, cmd.args, reg_flags, multi_id, key)?;
        let state = STATE.get(&mut held);
        if state.count >= MAX_USER_EVENTS.load(Ordering::Relaxed) as usize {
            return Err(EMFILE);
        }
        let ptr = register(event, &mut held)?;
        // SAFETY: Just registered, not freed before it leaves the table.
        let ev = unsafe { ptr.as_ref() };
        let state = STATE.get(&mut held);
        let older = state.buckets[usize::from(jhash::bucket_of(key))].replace(ptr);
        state.name_bytes += ev.tp_name().len() + 1;
        state.count += 1;
        *ev.table_next.get(&mut held) = older;
        // SAFETY: `register` returned the event with its creator's reference, given to the
        // caller here.
        Ok(unsafe { ARef::from_raw(ptr) })
    }

    /// `DIAG_IOCSDEL`: deletes every event registered as `name` (upstream `delete_user_event`).
    pub(crate) fn delete(&self, name: &str) -> Result {
        let key = jhash::key(name.as_bytes());
        let mut held = Held::lock();
        let mut found = false;
        loop {
            // Newest first, as upstream's hash bucket (`hash_add` puts new entries at its head):
            // with several same-named events, the first one met decides `EBUSY` vs `EPERM`.
            let Some((ptr, ev)) = named(&held, key, name).next() else {
                break;
            };
            found = true;
            if !ev.is_last_ref() {
                return Err(EBUSY);
            }
            if ev.is_persist() && !trace_call::perfmon_capable() {
                return Err(EPERM);
            }
            unlink_and_free(ptr, &mut held)?;
        }
        if found {
            Ok(())
        } else {
            Err(ENOENT)
        }
    }
}

/// Looks for an event matching `name`/`args` (upstream `find_user_event`), `key` the name's,
/// and takes a reference.
fn find(
    held: &Held,
    key: u32,
    name: &str,
    args: &str,
    multi: bool,
) -> Result<Option<ARef<UserEvent>>> {
    for (_, ev) in named(held, key, name) {
        if ev.is_multi() != multi {
            continue;
        }
        if matching::fields_match(ev.field_tuples(), args, true) {
            return Ok(Some(ev.into()));
        }
        if !multi {
            return Err(compat::eaddrinuse());
        }
    }
    Ok(None)
}

/// What this module plugs into every event's C objects.
const CALLBACKS: Callbacks = Callbacks {
    probe: ftrace_record::ftrace_probe as *mut c_void,
    perf_probe: perf_sample::perf_probe as *mut c_void,
};

/// Registers a new event with the tracing core and links it into `dynamic_events`.
///
/// Returns the event as a raw pointer owned by the tracing core from now on, with one
/// reference (two for persistent events) and one module reference. The caller enters it into
/// the table.
fn register(event: Pin<KBox<UserEvent>>, held: &mut Held) -> Result<NonNull<UserEvent>> {
    if !deferred::module_get() {
        return Err(ENODEV);
    }
    // SAFETY: The event is never moved out of its allocation: it is freed in place (below, or
    // by `unlink_and_free`).
    let ptr = NonNull::from(KBox::leak(unsafe { Pin::into_inner_unchecked(event) }));
    // SAFETY: `ptr` is a fresh, exclusively owned allocation that will not move.
    if let Err(e) = unsafe { add_to_core(ptr, held) } {
        // SAFETY: Registration failed before the core kept any pointer into `ptr`.
        drop(unsafe { KBox::from_raw(ptr.as_ptr()) });
        // SAFETY: Taken above.
        unsafe { deferred::module_put() };
        return Err(e);
    }
    Ok(ptr)
}

/// The tracing-core half of [`register`].
///
/// # Safety
///
/// `this` must be a leaked, pinned `KBox<UserEvent>` not yet known to the core.
unsafe fn add_to_core(this: NonNull<UserEvent>, held: &mut Held) -> Result {
    // SAFETY: Guaranteed by the caller.
    unsafe { UserEvent::init_c_objects(this, &CALLBACKS)? };
    // SAFETY: Initialised above and exclusively owned.
    let ev = unsafe { this.as_ref() };
    // SAFETY: Initialised above and unknown to the core; `event_mutex` is held (`held`); the
    // event stays live until `unlink_and_free` removed it.
    unsafe { ev.core().add(STATE.get(held).dyn_link)? };
    if ev.is_persist() {
        ev.get();
    }
    Ok(())
}

/// Unregisters `ptr` from the tracing core, removes it from `dynamic_events` and the table,
/// and frees it (upstream `destroy_user_event`). The caller holds the last reference.
///
/// Fails with `EBUSY` if the core still uses the event; the event then stays registered.
pub(crate) fn unlink_and_free(ptr: NonNull<UserEvent>, held: &mut Held) -> Result {
    // SAFETY: `ptr` is in the table, hence registered and not freed.
    let ev = unsafe { ptr.as_ref() };
    if ev.core_busy() {
        return Err(EBUSY);
    }
    // SAFETY: `event_mutex` is held (`held`); the event is registered (`add_to_core`).
    unsafe { ev.core().remove()? };
    let name_bytes = ev.tp_name().len() + 1;
    if unchain(ptr, held) {
        let state = STATE.get(held);
        state.count -= 1;
        state.name_bytes -= name_bytes;
    }
    // SAFETY: The core dropped every pointer into the event (the call is removed, its fields
    // freed, no probe is attached), it left every table, and the caller held the last
    // reference: nothing uses it any more.
    drop(unsafe { KBox::from_raw(ptr.as_ptr()) });
    // SAFETY: Taken in `register`.
    unsafe { deferred::module_put() };
    Ok(())
}

/// Why a delayed destroy tries again.
#[derive(Clone, Copy)]
enum DestroyRetry {
    /// The tracing core holds references of its own ([`UserEvent::core_busy`]): short-lived
    /// (a trigger's is dropped once its removal is synchronised).
    CoreBusy,
    /// Removing the event from the core failed (an allocation).
    Failed,
}

impl DestroyRetry {
    /// Jiffies until the next try.
    fn delay(self) -> Jiffies {
        msecs_to_jiffies(match self {
            Self::CoreBusy => 100,
            Self::Failed => 1000,
        })
    }
}

/// An event's delayed destroy, queued by its last put ([`UserEvent::queue_destroy`]) with the
/// reference the put left.
impl WorkItem for UserEvent {
    type Pointer = ARef<UserEvent>;

    fn run(this: ARef<UserEvent>) {
        destroy(this);
    }
}

/// The delayed destroy (upstream `delayed_destroy_user_event`): unless a registration took the
/// event since its last put, removes and frees it, or tries again later.
fn destroy(this: ARef<UserEvent>) {
    let mut held = Held::lock();
    let Some(ptr) = UserEvent::put_for_destroy(this, &mut held) else {
        return;
    };
    // SAFETY: Its count reached zero with `event_mutex` held, so nothing frees it but this
    // destroy; it is registered and in the table until `unlink_and_free` succeeds.
    let ev = unsafe { ptr.as_ref() };
    let retry = if ev.core_busy() {
        DestroyRetry::CoreBusy
    } else if unlink_and_free(ptr, &mut held).is_err() {
        pr_warn!("user_events: Unable to delete event\n");
        // Upstream sets the count back to one and leaves the event in the table with a
        // reference nobody holds: it stays, and pins the module, until someone deletes it. The
        // failures here are transient (a credential allocation), so try again later instead.
        DestroyRetry::Failed
    } else {
        return;
    };
    // A destroy that could not run now keeps its reference and tries again later; the pending
    // retry pins the module (the event does).
    // SAFETY: Still registered and in the table: `unlink_and_free` failed before freeing, and
    // `event_mutex` was held since the count reached zero.
    let this = unsafe { UserEvent::revive(ptr, &mut held) };
    UserEvent::queue_destroy(this, retry.delay(), &mut held);
}

/// Every event's tracepoint name and status bits, in hash-table order: for each, the bits, the
/// name and a NUL.
///
/// The names are copied rather than the events referenced: a reference taken here could be an
/// event's last but one while its delayed destroy runs, which then leaves it to this listing's
/// put, and so destroys it later and out of order (the tracing core removes the newest events
/// fastest; see `Scope::teardown`). A reader polling the file while many events go would
/// reorder their destroys and slow them down.
struct Listing(KVVec<u8>);

impl Listing {
    /// Takes the list. Allocates outside `event_mutex`, for the size seen before.
    fn take() -> Result<Self> {
        let size = |state: &GroupState| state.name_bytes + state.count;
        let mut want = size(STATE.get_ref(&Held::lock()));
        loop {
            let mut text = KVVec::with_capacity(want + 1024, GFP_KERNEL)?;
            let held = Held::lock();
            let state = STATE.get_ref(&held);
            if size(state) > text.capacity() {
                want = size(state);
                continue;
            }
            for ev in in_hash_order(&held) {
                // PANIC: `name_bytes` counts each name and one more byte, `count` the bits;
                // that much capacity was reserved above, so nothing is allocated.
                text.push(ev.status(), GFP_KERNEL).expect("reserved");
                text.extend_from_slice(ev.tp_name().as_bytes(), GFP_KERNEL)
                    .expect("reserved");
                text.push(0, GFP_KERNEL).expect("reserved");
            }
            return Ok(Self(text));
        }
    }

    /// The events' names and status bits.
    fn events(&self) -> impl Iterator<Item = (&str, u8)> {
        let mut rest = &self.0[..];
        core::iter::from_fn(move || {
            let (&bits, tail) = rest.split_first()?;
            let len = tail.iter().position(|&b| b == 0).unwrap_or(tail.len());
            let name = core::str::from_utf8(&tail[..len]).unwrap_or("");
            rest = tail.get(len + 1..).unwrap_or(&[]);
            Some((name, bits))
        })
    }
}

/// Converts the internal status bits into the status file's view.
fn probes_status(bits: u8) -> status::Consumers {
    status::Consumers {
        ftrace: bits & probes::STATUS_FTRACE != 0,
        perf: bits & probes::STATUS_PERF != 0,
        other: bits & probes::STATUS_OTHER != 0,
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
