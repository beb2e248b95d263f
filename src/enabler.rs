// SPDX-License-Identifier: GPL-2.0

//! Enablers (upstream `struct user_event_enabler`) and the scopes that own them (upstream
//! `struct user_event_mm`).
//!
//! # Ownership
//!
//! A [`Scope`] is one lineage of tasks sharing an address space (see [`crate::scope`] for who
//! joins it). It owns its enablers: `Scope::enablers`, keyed by the registered address and bit,
//! holds the owning reference of each, and `Scope::order` lists them oldest registration first
//! (the order a teardown needs). An index of the enablers by the event they follow
//! ([`FOLLOWERS`], a tree of one list per event) lets a status change visit the enablers of
//! that event only. Every enabler is one separately allocated, memory-accounted object plus one
//! node in its scope's tree; the two lists run through links in the enabler itself, and an
//! event's entry in the index is allocated once, by its first enabler. REG allocates nothing
//! larger, whatever other processes have. An UNREG keeps the nodes it removed in the scope
//! ([`TreeNodes`], one of each at most) for the scope's next REG. An enabler holds one
//! reference on its event from insertion until it is released; it holds its scope (and so the
//! scope's `mm_struct`, by an `mmgrab` reference in `ARef<Mm>`).
//!
//! The index by event ([`FOLLOWERS`]) is kept here, not in the event: the event model
//! ([`crate::event`]) sits below this layer and knows nothing of enablers.
//!
//! An enabler leaves its scope and its event's list at UNREG, or when its scope is torn down
//! (the last task exited or exec'd), or when a fork copy into its scope fails. An UNREG
//! releases it (drops its event reference) unless a fork copy of its scope is still pending:
//! such a copy must still see it (below). A teardown releases it at once: a scope is torn down
//! when no copy reads it, or, after a failed copy into it, while nothing can read it yet (its
//! own REG, UNREG and the copies out of it wait until it is marked copied).
//!
//! # Fork: the snapshot
//!
//! Upstream copies the parent's enablers inside `copy_process()`; a module cannot, so the fork
//! probe takes a snapshot and work copies it later. Each scope numbers its changes: an enabler
//! gets `born` when it is inserted and `died` when it is removed, both from the scope's `seq`,
//! under the scope's spinlock. The fork probe reads `seq` (the snapshot) and counts a pending
//! copy under the same spinlock. The copy takes exactly the enablers with
//! `born <= snapshot < died`: those that existed at the fork, not later REGs, and not missing
//! later UNREGs, because an enabler removed while a copy is pending waits in the scope's
//! graveyard (holding its event reference) until the last pending copy ran.
//!
//! The forking task makes the copy before its `fork()` returns to user space (task work, as
//! upstream makes it inside `fork()`), or a worker of the unbound scopes queue for a `vfork`
//! parent (it waits for its child first), a forker with a fatal signal pending, or a task that
//! cannot take task work; teardowns run on that queue, side by side. What a copy allocates is
//! charged to the memory cgroup of the fork. The orders they need are kept here: a copy starts
//! only once its source is copied (a grandchild's copy runs the copy into its parent first, or
//! waits for it, [`Scope::complete_copy`]); a teardown that would overtake a copy (of the
//! scope, or into it) is left to the last such copy, and a child gone before its copy started
//! cancels it. The child's first REG or UNREG runs its own copy if nobody has started it, and
//! otherwise waits for that copy only.
//!
//! # Bit writes and fault-ins
//!
//! A bit is written under `event_mutex`: the page is pinned without faulting (`FOLL_NOFAULT`)
//! and the word changed with an atomic `set_bit`/`clear_bit`. UNREG, which writes into the
//! calling task's own memory, first tries one atomic access through the task's own mapping with
//! page faults disabled ([`write_own_bit`]), which fails wherever the pin would. If the page is
//! absent or still shared copy-on-write, REG and UNREG fault it in themselves outside
//! `event_mutex` and `reg_mutex`, by pinning it ([`pin_word`]: while pinned, a fork cannot
//! share it again), and retry, at most [`MAX_ATTEMPTS`] times (a REG from its `EADDRINUSE`
//! check, [`create`]; an UNREG's clear, [`clear_faulting`]). A status change or a fork copy
//! instead queues the enabler on its scope's fault list (at most once: the list tracks
//! membership), and the list is drained by one of two:
//!
//! - the task that changed the status, before it returns to user space (`task_work`,
//!   [`Scope::fault_in_on_return`]), when the scope's address space is its own: a program that
//!   enables its own event sees the bit as soon as its write to `enable` returns, where
//!   upstream's worker often has not run yet;
//! - otherwise the scope's fault work, on the per-CPU fault workqueue (as upstream's system
//!   workqueue), apart from the copies and teardowns.
//!
//! A scope has one fault work item, so a fault-in that blocks (a page of the process's own FUSE
//! file, say) holds one worker, or the process's own task, and that process's own bits only.
//! REG and UNREG fault in as upstream does, killably (first `fixup_user_fault` with `unlocked`,
//! [`prefault`]; between attempts `pin_user_pages_fast`, [`pin_word`]), but never with
//! `reg_mutex` held, so a fault that blocks holds no lock other programs need; the drains never
//! wait for a userfaultfd's handler. Every fault-in drops the target's mmap lock while it waits
//! for file I/O ([`Wait`]).
//!
//! # Locking
//!
//! The trees, the order lists and [`FOLLOWERS`] are under `event_mutex` ([`EventLocked`]); the
//! fork state and the fault list under the scope's spinlock. The order is in
//! [`crate::event_mutex`].

use crate::{
    compat,
    deferred::{self, CallbackHead},
    event::UserEvent,
    event_mutex::{EventLocked, Held},
    logic::enable,
    task::{self, TaskStruct},
    user_word::{self, PinnedWord},
    wait::KillableWait,
};
use core::{
    ptr::{null_mut, NonNull},
    sync::atomic::{
        AtomicBool, AtomicPtr, AtomicU32, AtomicU64,
        Ordering::{Acquire, Relaxed, Release},
    },
};
use kernel::{
    c_str,
    ffi::c_ulong,
    list::{AtomicTracker, List, ListArc, ListLinks, TryNewListArc},
    mm::{Mm, MmWithUser},
    new_spinlock, new_work,
    prelude::*,
    rbtree::{RBTree, RBTreeNodeReservation},
    sync::aref::ARef,
    sync::{Arc, ArcBorrow, SpinLock, UniqueArc},
    workqueue::{Work, WorkItem},
};

/// Upstream gives up faulting in after about ten attempts (`user_event_mm_fault_in`).
const MAX_ATTEMPTS: u32 = 10;

/// Enablers a teardown removes per hold of `event_mutex`.
const TEARDOWN_BATCH: usize = 256;

/// Enablers a fork copy takes per batch: `event_mutex` is taken once per batch (to insert the
/// copies of one and find the next), not per enabler. A batch lives on the copying task's stack
/// (some 50 bytes an enabler).
const COPY_BATCH: usize = 16;

/// An enabler's key in its scope: the address and bit as registered (the `EADDRINUSE` and UNREG
/// match; upstream compares the original address and bit, not the size).
type WordKey = (u64, u8);

/// A scope's enablers by [`WordKey`] (live), or by `(died, 0)` (its graveyard).
type EnablerTree = EventLocked<RBTree<WordKey, Arc<Enabler>>>;

// The lists an enabler is linked into, through links of its own (no allocation):

/// Its scope's fault list, while a fault-in of its word is pending.
const FAULT: u64 = 0;
/// Its event's enablers, in [`FOLLOWERS`].
const FOLLOW: u64 = 1;
/// Its scope's enablers in registration order (`Scope::order`).
const ORDER: u64 = 2;

// The list a forked child's scope is linked into while its copy is pending:

/// Its parent's pending copies, oldest snapshot first (`ForkState::pending`).
const PENDING: u64 = 0;

/// The enablers of one event.
type Followers = List<Enabler, FOLLOW>;

/// Every enabler by the event it follows (see the module docs): one list for each event that
/// has enablers, keyed by the event's address. `None` until the first enabler: a `static` needs
/// a constant initial value. Empty again once the last enabler is gone, so it owns no memory at
/// module exit (every enabler holds an event, and every event the module).
static FOLLOWERS: EventLocked<Option<RBTree<usize, Followers>>> = EventLocked::new(None);

/// Enablers in every scope (`enablers` in `user_events_stats`).
pub(crate) static ENABLERS: AtomicU64 = AtomicU64::new(0);

/// Scopes that exist, system-wide (`user_events_stats`): counted when made, until freed.
pub(crate) static SCOPES: AtomicU64 = AtomicU64::new(0);

/// Fork copies that failed (`fork_copy_failed` in `user_events_stats`).
pub(crate) static FORK_COPY_FAILED: AtomicU64 = AtomicU64::new(0);

/// Why `died` is this while an enabler is in its scope.
const ALIVE: u64 = u64::MAX;

/// What the fork probe, fork copies, unregistrations and fault-ins share, under the scope's
/// spinlock.
struct ForkState {
    /// Numbers insertions and removals (`born`, `died`).
    seq: u64,
    /// The children whose fork copies of this scope are queued and not yet run, in the order
    /// of their forks, so oldest snapshot first: the graveyard keeps only what the first one
    /// still needs.
    pending: List<Scope, PENDING>,
    /// A forked child's parent, the snapshot of it and the charge of the copy, until the copy
    /// runs.
    copy_from: Option<CopyFrom>,
    /// Enablers waiting for a fault-in.
    faults: List<Enabler>,
    /// The scope's last task left while fork copies of the scope were pending or its own copy
    /// was running: the copy that finishes last queues the teardown again
    /// ([`ForkState::take_teardown`]).
    teardown_deferred: bool,
}

/// A forked child's new scope, until the fork probe lists it in its parent's pending copies
/// ([`Scope::set_copy_from`]).
pub(crate) struct ForkedChild(ListArc<Scope, PENDING>);

impl ForkedChild {
    /// The child's scope.
    pub(crate) fn scope(&self) -> Arc<Scope> {
        self.0.clone_arc()
    }
}

/// What a forked child's copy needs, from the fork probe until the copy runs.
struct CopyFrom {
    /// The forker's scope.
    parent: Arc<Scope>,
    /// The parent's change number at the fork: the copy takes what existed then.
    snapshot: u64,
    /// The memory cgroup the forker was in at the fork, which the copy charges.
    charge: task::Memcg,
}

impl ForkState {
    /// True, once, when a deferred teardown may now be queued again: the scope's own copy ran
    /// (`copied`) and no copy of it is pending.
    fn take_teardown(&mut self, copied: bool) -> bool {
        let run = self.teardown_deferred && copied && self.pending.is_empty();
        if run {
            self.teardown_deferred = false;
        }
        run
    }
}

/// The enablers of one lineage of tasks in one address space (upstream `struct user_event_mm`).
#[pin_data(PinnedDrop)]
pub(crate) struct Scope {
    /// The address space the enable words live in.
    mm: ARef<Mm>,
    /// Tasks in the scope; changed under the task map's lock ([`crate::scope`]).
    pub(crate) tasks: AtomicU32,
    /// The enablers, owned here.
    enablers: EnablerTree,
    /// The same enablers, oldest registration first: those copied at fork, then the scope's own.
    order: EventLocked<List<Enabler, ORDER>>,
    /// Enablers removed while a fork copy was pending, keyed by `(died, 0)`, until no pending
    /// copy's snapshot is older than their removal.
    graveyard: EnablerTree,
    /// The tree nodes of the last enabler UNREG removed, for the next REG.
    spare: EventLocked<TreeNodes>,
    #[pin]
    fork: SpinLock<ForkState>,
    /// False while a forked child's copy has not run; set under `fork` (with the deferred
    /// teardown it may release), then `copy_done` is woken.
    copied: AtomicBool,
    /// Woken when a forked child's copy ran.
    #[pin]
    copy_done: KillableWait,
    #[pin]
    copy_work: Work<Scope, 1>,
    #[pin]
    teardown_work: Work<Scope, 2>,
    #[pin]
    fault_work: Work<Scope, 3>,
    /// The task whose return to user space runs the scope's fault-ins, while `own_work` is
    /// queued on it ([`Scope::fault_in_on_return`]); null otherwise.
    own_task: AtomicPtr<TaskStruct>,
    own_work: deferred::OnReturn,
    /// A forked child's copy, queued on the forking task ([`Scope::copy_after_fork`]).
    copy_on_return: deferred::OnReturn,
    /// A forked child's snapshot of its parent, while in the parent's `pending` list.
    snapshot: AtomicU64,
    #[pin]
    pending_links: ListLinks<PENDING>,
}

#[pinned_drop]
impl PinnedDrop for Scope {
    fn drop(self: Pin<&mut Self>) {
        SCOPES.fetch_sub(1, Relaxed);
    }
}

// A forked child enters its parent's pending list once, with the `ListArc` made with the scope
// ([`Scope::new_forked`]).
kernel::list::impl_list_arc_safe! {
    impl ListArcSafe<0> for Scope { untracked; }
}
kernel::list::impl_list_item! {
    impl ListItem<0> for Scope { using ListLinks { self.pending_links }; }
}

kernel::impl_has_work! {
    impl HasWork<Self, 1> for Scope { self.copy_work }
    impl HasWork<Self, 2> for Scope { self.teardown_work }
    impl HasWork<Self, 3> for Scope { self.fault_work }
}

impl Scope {
    /// A scope for the address space `mm`, of a task's first REG.
    pub(crate) fn new(mm: ARef<Mm>, flags: kernel::alloc::Flags) -> Result<Arc<Self>> {
        Ok(Self::new_unique(mm, false, flags)?.into())
    }

    /// A forked child's scope for the address space `mm`, which waits for its copy. Allocated
    /// with `flags` (the fork probe cannot sleep).
    pub(crate) fn new_forked(mm: ARef<Mm>, flags: kernel::alloc::Flags) -> Result<ForkedChild> {
        Ok(ForkedChild(Self::new_unique(mm, true, flags)?.into()))
    }

    fn new_unique(
        mm: ARef<Mm>,
        forked: bool,
        flags: kernel::alloc::Flags,
    ) -> Result<Pin<UniqueArc<Self>>> {
        let scope = UniqueArc::pin_init(
            pin_init!(Self {
                mm,
                tasks: AtomicU32::new(0),
                enablers: EventLocked::new(RBTree::new()),
                order: EventLocked::new(List::new()),
                graveyard: EventLocked::new(RBTree::new()),
                spare: EventLocked::new(TreeNodes::EMPTY),
                fork <- new_spinlock!(ForkState {
                    seq: 0,
                    pending: List::new(),
                    copy_from: None,
                    faults: List::new(),
                    teardown_deferred: false,
                }),
                copied: AtomicBool::new(!forked),
                copy_done <- KillableWait::new(
                    c_str!("Scope::copy_done"),
                    kernel::static_lock_class!()
                ),
                copy_work <- new_work!("Scope::copy_work"),
                teardown_work <- new_work!("Scope::teardown_work"),
                fault_work <- new_work!("Scope::fault_work"),
                own_task: AtomicPtr::new(null_mut()),
                own_work: deferred::OnReturn::new(),
                copy_on_return: deferred::OnReturn::new(),
                snapshot: AtomicU64::new(0),
                pending_links <- ListLinks::new(),
            }),
            flags,
        )?;
        SCOPES.fetch_add(1, Relaxed);
        Ok(scope)
    }

    /// The fork probe, for a forked child: takes the snapshot of `parent` to copy, counting a
    /// pending copy in the parent (and listing the child there), and the memory cgroup the copy
    /// charges, the forker's now. The copy must then be queued ([`Scope::copy_after_fork`]).
    pub(crate) fn set_copy_from(child: ForkedChild, parent: Arc<Scope>) {
        let charge = task::Memcg::of(&parent.mm);
        let scope = child.0.clone_arc();
        let snapshot = {
            let mut fork = parent.fork.lock();
            scope.snapshot.store(fork.seq, Relaxed);
            fork.pending.push_back(child.0);
            fork.seq
        };
        scope.fork.lock().copy_from = Some(CopyFrom {
            parent,
            snapshot,
            charge,
        });
    }

    /// True if the scope has an enabler at `addr`/`bit` (the `EADDRINUSE` check).
    pub(crate) fn has(&self, held: &mut Held, addr: u64, bit: u8) -> bool {
        self.enablers.get(held).get(&(addr, bit)).is_some()
    }

    /// REG's first step: `EADDRINUSE` if the scope has an enabler at `addr`/`bit`, else the
    /// tree nodes the last UNREG left, for [`create`].
    pub(crate) fn reserve(&self, held: &mut Held, addr: u64, bit: u8) -> Result<TreeNodes> {
        if self.has(held, addr, bit) {
            return Err(compat::eaddrinuse());
        }
        Ok(core::mem::replace(self.spare.get(held), TreeNodes::EMPTY))
    }

    /// Makes sure a forked child's copy of its parent's enablers ran (REG and UNREG in the
    /// child, the forker's task work, the copy's work item): a copy nobody has started runs
    /// here, in the caller, after the copies it depends on (into the scope's ancestors,
    /// themselves forked a moment ago), which also run here unless one runs elsewhere, which is
    /// then waited for.
    ///
    /// A child that registers or unregisters at once must first see what it inherited. A copy
    /// starts only once its source is copied, so a running copy never waits, and a wait is
    /// bounded by the work of this scope's own lineage: no process waits behind another
    /// process's copies. The wait is killable, not interruptible, so REG and UNREG never return
    /// an errno upstream does not (an interruptible wait would give `EINTR` to a program with a
    /// signal handler); a fatal signal ends it with `EINTR`, which the dying task never returns.
    /// A copy this task runs itself is work, not a wait, and runs to its end. Called without
    /// `reg_mutex` or `event_mutex` held: a copy takes `event_mutex`.
    pub(crate) fn complete_copy(self: &Arc<Self>) -> Result {
        // Nearly always true (every scope but a child forked a moment ago): no lock then.
        while !self.copied.load(Acquire) {
            let next = self.first_to_copy();
            // `None` if its copy runs elsewhere (or has just finished).
            let from = next.fork.lock().copy_from.take();
            match from {
                Some(from) => run_copy(&next, from),
                None => next.copy_done.wait_until(|| next.copied.load(Acquire))?,
            }
        }
        Ok(())
    }

    /// Of this scope and its ancestors not yet copied, the one whose copy goes first: the one
    /// whose source is copied, or whose own copy is running.
    fn first_to_copy(self: &Arc<Self>) -> Arc<Scope> {
        let mut scope = self.clone();
        loop {
            let parent = match &scope.fork.lock().copy_from {
                Some(from) if !from.parent.copied.load(Acquire) => Some(from.parent.clone()),
                _ => None,
            };
            match parent {
                Some(parent) => scope = parent,
                None => return scope,
            }
        }
    }

    /// True once the scope's last task left and no fork copy of it is pending: nothing will
    /// read its enablers again (neither can change back).
    fn unused(&self) -> bool {
        self.tasks.load(Relaxed) == 0 && self.fork.lock().pending.is_empty()
    }

    /// The fork probe's last step: the forking task (the caller) makes the copy of the parent's
    /// enablers into this child before it returns to user space (`task_work`), as upstream's copy
    /// runs inside `fork()`: its CPU time is the forker's, in the forker's cpu cgroup, and a
    /// process that keeps forking pays for its copies itself, in its own time, rather than
    /// keeping the system's workers busy. A tracer's stops (the fork event, the system call's
    /// exit) and signal stops come after the task's pending task work has run
    /// (`ptrace_notify`, `get_signal`). On the scopes queue instead where the forker waits for
    /// the child first (`vfork` without `CLONE_VM`: the child's words would miss every status
    /// change until it exits or execs), or cannot take the work (the module unloading, or a
    /// preemptible kernel without RCU Tasks). Either way the child's first REG or UNREG runs the
    /// copy itself if nobody has started it.
    pub(crate) fn copy_after_fork(self: Arc<Self>, vfork: bool) {
        if vfork {
            self.queue_copy();
            return;
        }
        let scope = Arc::into_raw(self.clone());
        // SAFETY: `copy_on_return` is queued only here, by the fork probe, once per forked
        // child, and is never queued again. `copy_on_return` takes the reference just leaked
        // and calls `deferred::returned` last.
        if unsafe { self.copy_on_return.queue(copy_on_return) } {
            return;
        }
        // SAFETY: The reference leaked above, not queued.
        drop(unsafe { Arc::from_raw(scope) });
        self.queue_copy();
    }

    /// Queues the copy of the parent's enablers into this forked child, on the unbound scopes
    /// queue; the child's first REG or UNREG runs it itself if no worker has started it yet.
    fn queue_copy(self: Arc<Self>) {
        // A new scope's work cannot be queued already; without the queue (module exit, after
        // the probes are gone) there is no child to copy for.
        if let Some(queue) = deferred::scopes() {
            let _ = queue.enqueue::<Arc<Scope>, 1>(self);
        }
    }

    /// Queues the teardown of a scope whose last task left, on the unbound scopes queue:
    /// unrelated processes' teardowns run side by side.
    pub(crate) fn queue_teardown(self: Arc<Self>) {
        // Queued once by the last task out, and again by the copy that ends its deferral.
        if let Some(queue) = deferred::scopes() {
            let _ = queue.enqueue::<Arc<Scope>, 2>(self);
        }
    }

    /// The next change number (`born` or `died`), and whether a fork copy is pending.
    fn next_seq(&self) -> (u64, bool) {
        let mut fork = self.fork.lock();
        fork.seq += 1;
        (fork.seq, !fork.pending.is_empty())
    }

    /// Removes every enabler and releases it, in batches so that `event_mutex` is not held for
    /// long (upstream `user_event_mm_destroy`). Linear in the scope's own enablers, and
    /// allocates nothing.
    ///
    /// The enablers are released newest registration first, as upstream walks its enabler list
    /// (a stack). Each release may be its event's last reference, and the tracing core finds an
    /// event to remove by walking its instances' event lists from the newest event: removing
    /// the oldest of N events first walks past the N - 1 newer ones each time (quadratic; 4 s
    /// for 10,000 events). The scope's registration order list gives that order; each enabler
    /// leaves it and its event's list in constant time. The tree by address is freed whole at
    /// the end, outside `event_mutex`: nothing looks an enabler up by address in a scope that
    /// has no task and no pending fork copy (see [`WorkItem<2>`](#impl-WorkItem<2>-for-Scope)),
    /// nor, after a failed copy into it, in a scope not yet marked copied (its REG, UNREG and
    /// the copies out of it wait for that).
    fn teardown(&self) {
        let mut held = Held::lock();
        let mut batch = 0;
        while let Some(e) = self.order.get(&mut held).pop_back() {
            drop(unfollow(&mut held, &e));
            e.died.store(0, Relaxed);
            e.release(&mut held);
            drop(e);
            held = relax(held, &mut batch);
        }
        release_graveyard(self, &mut held, u64::MAX);
        let enablers = core::mem::take(self.enablers.get(&mut held));
        drop(held);
        // The tree's nodes and, with their last references, the enablers.
        drop(enablers);
        // Drop the fault list's references outside the spinlock.
        loop {
            let next = self.fork.lock().faults.pop_front();
            let Some(e) = next else {
                break;
            };
            drop(e);
        }
    }

    /// Has the calling task run the scope's fault-ins before it returns to user space, if the
    /// scope's address space is its own: a status change that some enable words of the task's
    /// own process need faulted in first (a page still shared copy-on-write after a fork, say)
    /// then reaches them before the write to `enable` (or the `perf_event_open`, the BPF
    /// attachment) returns, where a worker would finish moments later. False if the fault-ins
    /// must go to the worker instead: another task's address space, already queued on another
    /// task, or a task or module on its way out.
    fn fault_in_on_return(self: &Arc<Self>) -> bool {
        if !is_current(&self.mm) {
            return false;
        }
        let me = task::current();
        if let Err(queued) = self
            .own_task
            .compare_exchange(null_mut(), me, Acquire, Relaxed)
        {
            // Queued on this task already: its run drains the list this enabler is on.
            return queued == me;
        }
        let scope = Arc::into_raw(self.clone());
        // SAFETY: `own_work` is not queued: `own_task` was null, and is set to null only by
        // `faults_on_return`, after `task_work_run` dequeued it. `faults_on_return` takes the
        // reference just leaked and calls `deferred::returned` last.
        if unsafe { self.own_work.queue(faults_on_return) } {
            return true;
        }
        // SAFETY: The reference leaked above, not queued.
        drop(unsafe { Arc::from_raw(scope) });
        self.own_task.store(null_mut(), Release);
        false
    }

    /// Keeps `node`, an unused node for an event's entry in [`FOLLOWERS`], for the scope's next
    /// REG, unless the scope has one already.
    fn keep_spare(&self, held: &mut Held, node: Option<FollowersNode>) {
        let spare = self.spare.get(held);
        if spare.event.is_none() {
            spare.event = node;
        }
    }
}

/// Counts one step of a teardown; every [`TEARDOWN_BATCH`] steps, lets others take
/// `event_mutex` (releases and retakes it).
fn relax(held: Held, batch: &mut usize) -> Held {
    *batch += 1;
    if *batch < TEARDOWN_BATCH {
        return held;
    }
    *batch = 0;
    drop(held);
    Held::lock()
}

/// Releases the enablers a scope kept for fork copies whose snapshots are all older than
/// `oldest` (an enabler removed at `died <= oldest` existed at no pending snapshot): every one
/// for `u64::MAX`. Linear in what it releases.
fn release_graveyard(scope: &Scope, held: &mut Held, oldest: u64) {
    if oldest == u64::MAX {
        let graveyard = core::mem::take(scope.graveyard.get(held));
        for e in graveyard.values() {
            e.release(held);
        }
        return;
    }
    loop {
        let first = scope.graveyard.get(held).cursor_lower_bound_mut(&(0, 0));
        let Some(first) = first.filter(|c| c.current().0 .0 <= oldest) else {
            return;
        };
        let (_, node) = first.remove_current();
        let (_, e) = node.to_key_value();
        e.release(held);
    }
}

/// A fork copy (upstream `user_event_mm_dup`) that the forking task does not make itself (a
/// `vfork` parent, a forker with a fatal signal pending, a task that cannot take task work:
/// [`Scope::copy_after_fork`]), on the unbound scopes queue. Nothing to do if the child's
/// first REG or UNREG ran it (or a copy into a descendant of the child, which needs it first),
/// or its teardown cancelled it, first.
impl WorkItem<1> for Scope {
    type Pointer = Arc<Scope>;

    fn run(child: Arc<Scope>) {
        // A worker has no signal to end the wait for a copy that runs elsewhere.
        let _ = child.complete_copy();
    }
}

/// A forked child's copy, in the forking task before it returns from the fork
/// ([`Scope::copy_after_fork`]). If the child's first REG or UNREG (or a copy into a descendant
/// of the child) has started it, this waits for it; nothing to do if it ran, or the child's
/// teardown cancelled it.
///
/// # Safety
///
/// `head` is the `copy_on_return` of a scope, queued by [`Scope::copy_after_fork`], which leaked
/// a reference on the scope for it.
unsafe extern "C" fn copy_on_return(head: *mut CallbackHead) {
    // SAFETY: `head` is the `copy_on_return` field of a scope (`OnReturn` is transparent), which
    // the reference `copy_after_fork` leaked keeps alive; that reference is taken back here.
    let child = unsafe {
        Arc::from_raw(kernel::container_of!(
            head.cast::<deferred::OnReturn>(),
            Scope,
            copy_on_return
        ))
    };
    // The copy needs its source copied first: the copy into the forker itself, which runs here
    // too unless another task runs it. A fatal signal ends the wait for that one, or finds the
    // forker already on its way out: a worker then makes this copy. A copy the forker has
    // started runs to its end, as upstream's inside `fork()`.
    if task::fatal_signal_pending() || child.complete_copy().is_err() {
        child.clone().queue_copy();
    }
    drop(child);
    // SAFETY: The last step of a function `OnReturn::queue` queued.
    unsafe { deferred::returned() };
}

/// Copies into `child` what its parent had at the fork (taken from the child's `copy_from`),
/// charging what it allocates to the memory cgroup the forker was in at the fork, as upstream's
/// copy in `copy_process()` charges it, wherever and whenever this runs.
fn run_copy(child: &Arc<Scope>, from: CopyFrom) {
    let CopyFrom {
        parent,
        snapshot,
        charge,
    } = from;
    let copied = {
        let _charge = task::ChargeTo::new(&charge);
        copy(&parent, child, snapshot)
    };
    drop(charge);
    if copied.is_err() {
        // As upstream, a child whose copy fails has no enablers; counted.
        FORK_COPY_FAILED.fetch_add(1, Relaxed);
        child.teardown();
    }
    fork_finished(&parent, child);
    set_copied(child);
}

/// Marks a forked child's copy as done (run or cancelled) and wakes its waiters; queues the
/// child's teardown again if its last task left meanwhile and no copy of it is pending.
fn set_copied(child: &Arc<Scope>) {
    let teardown = {
        let mut fork = child.fork.lock();
        child.copied.store(true, Release);
        fork.take_teardown(true)
    };
    child.copy_done.wake_all();
    if teardown {
        child.clone().queue_teardown();
    }
}

/// The fork copy of `parent` into `child` ran or was cancelled. Releases what the parent's
/// graveyard kept for it alone: the enablers removed before the oldest snapshot still pending
/// (all of them after the last pending copy). Queues the parent's teardown again if its last
/// task left meanwhile.
fn fork_finished(parent: &Arc<Scope>, child: &Scope) {
    let mut held = Held::lock();
    let (done, oldest, teardown) = {
        let mut fork = parent.fork.lock();
        // SAFETY: A scope is only ever in its own parent's pending list, entered once at its
        // fork ([`Scope::set_copy_from`]).
        let done = unsafe { fork.pending.remove(child) };
        let oldest = fork
            .pending
            .cursor_front()
            .peek_next()
            .map_or(u64::MAX, |first| first.snapshot.load(Relaxed));
        let copied = parent.copied.load(Acquire);
        (done, oldest, fork.take_teardown(copied))
    };
    release_graveyard(parent, &mut held, oldest);
    drop(held);
    drop(done);
    if teardown {
        parent.clone().queue_teardown();
    }
}

/// The teardown of a scope whose last task exited or exec'd, on the unbound scopes queue.
///
/// Teardowns are not ordered with fork copies, so a teardown that would overtake one waits for
/// it without holding a worker: while copies of the scope are pending (they read its enablers),
/// or while its own copy runs (it inserts enablers), it only marks itself deferred, and the last
/// of those copies queues it again ([`ForkState::take_teardown`]). A forked child gone before
/// its copy started needs no copy: the teardown cancels it.
impl WorkItem<2> for Scope {
    type Pointer = Arc<Scope>;

    fn run(scope: Arc<Scope>) {
        let cancelled = {
            let mut fork = scope.fork.lock();
            let copied = scope.copied.load(Acquire);
            if !fork.pending.is_empty() || (!copied && fork.copy_from.is_none()) {
                fork.teardown_deferred = true;
                return;
            }
            fork.copy_from.take()
        };
        if let Some(CopyFrom { parent, .. }) = cancelled {
            fork_finished(&parent, &scope);
            // No task is left to wait; the copy's work item, if it waits or runs later, finds
            // the scope copied and nothing to copy.
            set_copied(&scope);
        }
        scope.teardown();
    }
}

/// A scope's fault-ins, one at a time (upstream `user_event_enabler_fault`).
impl WorkItem<3> for Scope {
    type Pointer = Arc<Scope>;

    fn run(scope: Arc<Scope>) {
        drain_faults(&scope);
    }
}

/// The scope's fault-ins, in the task that changed an event's status, before it returns to user
/// space ([`Scope::fault_in_on_return`]).
///
/// # Safety
///
/// `head` is the `own_work` of a scope, queued by [`Scope::fault_in_on_return`], which leaked a
/// reference on the scope for it.
unsafe extern "C" fn faults_on_return(head: *mut CallbackHead) {
    // SAFETY: `head` is the `own_work` field of a scope (`OnReturn` is transparent), which the
    // reference `fault_in_on_return` leaked keeps alive; that reference is taken back here.
    let scope = unsafe {
        Arc::from_raw(kernel::container_of!(
            head.cast::<deferred::OnReturn>(),
            Scope,
            own_work
        ))
    };
    // Dequeued by `task_work_run`: a fault queued from now on queues `own_work` again.
    scope.own_task.store(null_mut(), Release);
    drain_faults(&scope);
    drop(scope);
    // SAFETY: The last step of a function `OnReturn::queue` queued.
    unsafe { deferred::returned() };
}

/// Runs the scope's pending fault-ins: faults each word in (never waiting for a userfaultfd
/// handler; the mmap lock dropped for file I/O) and writes its event's current state into it.
fn drain_faults(scope: &Scope) {
    loop {
        let Some(e) = scope.fork.lock().faults.pop_front() else {
            return;
        };
        let e = e.into_arc();
        if !e.is_alive() {
            continue;
        }
        let faulted = fault_in(&scope.mm, e.addr, Wait::Never);
        let held = Held::lock();
        if faulted.is_err() || !e.is_alive() {
            continue;
        }
        // A requeue goes on the fault list this loop drains, or a later one: the work stays
        // queued or running, `own_work` is queued again.
        write_or_queue(e.as_arc_borrow(), false);
        drop(held);
    }
}

/// One enabler.
///
/// # Invariants
///
/// From its insertion into its scope until [`Enabler::release`], the enabler holds one
/// reference on `event`; `released` says it was dropped. `died` is [`ALIVE`] exactly while the
/// enabler is in its scope's order list and its event's list in [`FOLLOWERS`]; it is in its
/// scope's tree as long, and, during a teardown, until the tree is freed.
///
/// The reference is dropped by [`Enabler::release`], not by `Drop`: the last `Arc` of an
/// enabler may go under `event_mutex` (a tree node removed) or on a fault worker without it, and
/// dropping an event reference needs to know which (`put_locked` or `put`). Every path that
/// takes an enabler out of its scope releases it, under `event_mutex`.
#[pin_data]
pub(crate) struct Enabler {
    scope: Arc<Scope>,
    event: NonNull<UserEvent>,
    /// The address as registered (the key of UNREG and `EADDRINUSE`).
    addr: u64,
    bit: u8,
    /// The scope's `seq` at insertion; 0 for an enabler copied at fork.
    born: AtomicU64,
    /// The scope's `seq` at removal; [`ALIVE`] before.
    died: AtomicU64,
    released: AtomicBool,
    /// Fault-in attempts since the last status change.
    attempts: AtomicU32,
    #[pin]
    fault_links: ListLinks<FAULT>,
    #[pin]
    fault_track: AtomicTracker<FAULT>,
    #[pin]
    follow_links: ListLinks<FOLLOW>,
    #[pin]
    order_links: ListLinks<ORDER>,
}

// SAFETY: `event` is a counted reference to a `Send + Sync` event; the rest is atomic or
// immutable.
unsafe impl Send for Enabler {}
// SAFETY: As above.
unsafe impl Sync for Enabler {}

// An enabler is in each list at most once: the fault list tracks it (a status change and a
// fault-in may both queue it), and the other two are entered once, with the `ListArc`s made when
// the enabler is (`ListArc::pair_from_pin_unique`).
kernel::list::impl_list_arc_safe! {
    impl ListArcSafe<0> for Enabler { tracked_by fault_track: AtomicTracker<FAULT>; }
    impl ListArcSafe<1> for Enabler { untracked; }
    impl ListArcSafe<2> for Enabler { untracked; }
}
kernel::list::impl_list_item! {
    impl ListItem<0> for Enabler { using ListLinks { self.fault_links }; }
    impl ListItem<1> for Enabler { using ListLinks { self.follow_links }; }
    impl ListItem<2> for Enabler { using ListLinks { self.order_links }; }
}

/// A node for an event's entry in [`FOLLOWERS`], unused.
type FollowersNode = RBTreeNodeReservation<usize, Followers>;

/// Tree nodes, unused: what an UNREG removed, kept in its scope (one of each at most) for the
/// next REG, which then allocates one object, the enabler, as upstream's does. A program that
/// registers and unregisters in a loop reuses them. `event` is needed only by an event's first
/// enabler: a REG that did not use it keeps it for the next.
pub(crate) struct TreeNodes {
    word: Option<RBTreeNodeReservation<WordKey, Arc<Enabler>>>,
    event: Option<FollowersNode>,
}

impl TreeNodes {
    /// No nodes.
    pub(crate) const EMPTY: Self = Self {
        word: None,
        event: None,
    };
}

/// A new enabler, its references for the two lists it enters, and the tree nodes it may need,
/// allocated before `event_mutex` is taken (REG and fork copies), or taken from `nodes`.
struct NewEnabler {
    follow: ListArc<Enabler, FOLLOW>,
    order: ListArc<Enabler, ORDER>,
    word: RBTreeNodeReservation<WordKey, Arc<Enabler>>,
    /// For its event's entry in [`FOLLOWERS`], if it is the event's first enabler.
    event: FollowersNode,
}

impl NewEnabler {
    /// Allocates an enabler of `scope` for `event` (no event reference yet), with the tree
    /// nodes in `nodes` or new ones.
    fn new(
        scope: &Arc<Scope>,
        event: NonNull<UserEvent>,
        addr: u64,
        bit: u8,
        nodes: TreeNodes,
    ) -> Result<Self> {
        let word = match nodes.word {
            Some(node) => node,
            None => RBTreeNodeReservation::new(GFP_KERNEL_ACCOUNT)?,
        };
        let event_node = match nodes.event {
            Some(node) => node,
            None => RBTreeNodeReservation::new(GFP_KERNEL_ACCOUNT)?,
        };
        let (follow, order) = Enabler::new(scope, event, addr, bit)?;
        Ok(Self {
            follow,
            order,
            word,
            event: event_node,
        })
    }

    /// Inserts the enabler into its scope and its event's list, taking the event reference.
    /// Returns it, and the node for the event's entry if the event had one already.
    fn insert(self, held: &mut Held, born: u64) -> (Arc<Enabler>, Option<FollowersNode>) {
        let e = self.follow.clone_arc();
        e.born.store(born, Relaxed);
        e.event().get();
        ENABLERS.fetch_add(1, Relaxed);
        let followers = FOLLOWERS.get(held).get_or_insert_with(RBTree::new);
        let key = e.event.as_ptr() as usize;
        let unused = match followers.get_mut(&key) {
            Some(list) => {
                list.push_back(self.follow);
                Some(self.event)
            }
            None => {
                let mut list = List::new();
                list.push_back(self.follow);
                followers.insert(self.event.into_node(key, list));
                None
            }
        };
        e.scope.order.get(held).push_back(self.order);
        e.scope
            .enablers
            .get(held)
            .insert(self.word.into_node((e.addr, e.bit), e.clone()));
        (e, unused)
    }
}

impl Enabler {
    /// A new enabler, in no tree or list yet (no event reference yet), and its references for
    /// its event's list and its scope's order list.
    fn new(
        scope: &Arc<Scope>,
        event: NonNull<UserEvent>,
        addr: u64,
        bit: u8,
    ) -> Result<(ListArc<Self, FOLLOW>, ListArc<Self, ORDER>)> {
        let e = UniqueArc::pin_init(
            pin_init!(Self {
                scope: scope.clone(),
                event,
                addr,
                bit,
                born: AtomicU64::new(0),
                died: AtomicU64::new(ALIVE),
                released: AtomicBool::new(false),
                attempts: AtomicU32::new(0),
                fault_links <- ListLinks::new(),
                fault_track <- AtomicTracker::new(),
                follow_links <- ListLinks::new(),
                order_links <- ListLinks::new(),
            }),
            GFP_KERNEL_ACCOUNT,
        )?;
        Ok(ListArc::pair_from_pin_unique(e))
    }

    /// The event. Only called while the enabler holds its reference (alive, or in the
    /// graveyard, under `event_mutex`).
    fn event(&self) -> &UserEvent {
        // SAFETY: Callers only use this while the enabler holds its event reference (type
        // invariants): its event is registered.
        unsafe { self.event.as_ref() }
    }

    fn is_alive(&self) -> bool {
        self.died.load(Relaxed) == ALIVE
    }

    /// Drops the event reference, once.
    fn release(&self, held: &mut Held) {
        if !self.released.swap(true, Relaxed) {
            self.event().put_locked(held);
        }
    }
}

/// Writes the event's current state into the enabler's word, or, if the page must be faulted
/// in first, queues that (the status change, fork copy and fault-in paths). `new_status`
/// restarts the fault-in attempts; otherwise this is one more attempt, and the fault-in is
/// given up after [`MAX_ATTEMPTS`].
///
/// Called under `event_mutex`, which orders it against status changes and removals.
fn write_or_queue(e: ArcBorrow<'_, Enabler>, new_status: bool) {
    let set = e.event().status() != 0;
    if write_bit(&e.scope.mm, e.addr, e.bit, set) != Err(EFAULT) {
        return;
    }
    if new_status {
        e.attempts.store(0, Relaxed);
    } else if e.attempts.fetch_add(1, Relaxed) + 1 >= MAX_ATTEMPTS {
        return;
    }
    queue_fault(e);
}

/// Queues a fault-in of the enabler's word; nothing if one is queued already.
fn queue_fault(e: ArcBorrow<'_, Enabler>) {
    let Some(item) = ListArc::<Enabler, FAULT>::try_from_arc_borrow(e) else {
        return;
    };
    e.scope.fork.lock().faults.push_back(item);
    if e.scope.fault_in_on_return() {
        return;
    }
    // Already queued or running is fine: the work drains the list.
    if let Some(queue) = deferred::faults() {
        let _ = queue.enqueue::<Arc<Scope>, 3>(e.scope.clone());
    }
}

/// Takes `e`, which left its scope, out of its event's list in [`FOLLOWERS`]. The event's entry
/// goes with its last enabler: its node is returned, for reuse.
fn unfollow(held: &mut Held, e: &Enabler) -> Option<FollowersNode> {
    ENABLERS.fetch_sub(1, Relaxed);
    let followers = FOLLOWERS.get(held).as_mut()?;
    let key = e.event.as_ptr() as usize;
    let list = followers.get_mut(&key)?;
    // SAFETY: An enabler is only ever in its own event's list, the one `key` finds.
    drop(unsafe { list.remove(e) });
    if !list.is_empty() {
        return None;
    }
    Some(followers.remove_node(&key)?.into_reservation())
}

/// True if `mm` is the calling task's address space.
fn is_current(mm: &Mm) -> bool {
    core::ptr::eq(task::current_mm(), mm.as_raw())
}

/// Runs `f` on `mm` with its mmap lock held for reading (what `pin_user_pages_remote` and
/// `fixup_user_fault` require), and with a user of it: the calling task, if `mm` is its own,
/// else an `mmget` reference. `ENOENT` if the address space is gone.
///
/// An `mmget` reference is dropped with `mmput_async`, after the lock: callers may hold
/// `event_mutex`, and the address space's teardown must not run under it.
fn with_mmap_read<R>(mm: &Mm, f: impl FnOnce(&MmWithUser) -> R) -> Result<R> {
    // A task's REG and UNREG write into its own address space, which it holds while it runs:
    // borrowed then, without `mmget`.
    if is_current(mm) {
        // SAFETY: `mm` is the calling task's address space, which has a user (this task) until
        // the task exits or execs, neither of which can happen during this call.
        let own = unsafe { MmWithUser::from_raw(mm.as_raw()) };
        let _lock = own.mmap_read_lock();
        return Ok(f(own));
    }
    let user = MmWithUser::into_mmput_async(mm.mmget_not_zero().ok_or(ENOENT)?);
    let _lock = user.mmap_read_lock();
    Ok(f(&user))
}

/// Sets or clears `bit` of the enable word at `addr` in `mm`, without faulting.
///
/// Called under `event_mutex`. Returns `ENOENT` if the address space is gone and `EFAULT` if the
/// page is not present, not writable or still shared copy-on-write: the caller then faults it in
/// outside `event_mutex` ([`fault_in`], or [`pin_word`] for REG and UNREG) and tries again.
fn write_bit(mm: &Mm, addr: u64, bit: u8, set: bool) -> Result {
    let (word, bit) = enable::word_and_bit(addr, bit);
    // SAFETY: `with_mmap_read` holds the address space's mmap lock for reading.
    let pinned = with_mmap_read(mm, |user| unsafe { PinnedWord::pin(user, word) })?;
    pinned.ok_or(EFAULT)?.change_bit(bit, set);
    Ok(())
}

/// Reads the child's word of each copy in `batch`, without faulting or unsharing a page still
/// shared copy-on-write: whether its bit is set, `EFAULT` if the page is not present, `ENOENT` if
/// the address space is gone. One mmap lock for the batch, and one read for bits of one word
/// that follow one another (the live tree, which a copy walks first, holds a word's bits in
/// order; the graveyard, ordered by removal, may read a word again).
fn read_words(mm: &Mm, batch: &mut [Option<Copying>]) {
    let read = with_mmap_read(mm, |user| {
        let mut last: Option<(u64, Result<c_ulong>)> = None;
        for c in batch.iter_mut().flatten() {
            let (word, bit) = enable::word_and_bit(c.src.addr, c.src.bit);
            let value = match last {
                Some((at, value)) if at == word => value,
                // SAFETY: `with_mmap_read` holds the address space's mmap lock for reading.
                _ => unsafe { user_word::read_long(user, word) },
            };
            last = Some((word, value));
            c.word = value.map(|v| (v >> bit) & 1 != 0);
        }
    });
    if let Err(e) = read {
        for c in batch.iter_mut().flatten() {
            c.word = Err(e);
        }
    }
}

/// Sets or clears `bit` of the enable word at `addr` through the calling task's own mapping,
/// when `mm` is its address space: one atomic access of the `u32` holding the bit, as the futex
/// code changes a user word, where [`write_bit`] takes the mmap lock and pins the page.
///
/// Page faults are disabled, so it never sleeps (callers hold `event_mutex`) and fails with
/// `EFAULT` where [`write_bit`] would: a page that is not present, or not writable (still shared
/// copy-on-write). It also fails for another task's address space. The caller then takes
/// [`write_bit`]'s path.
fn write_own_bit(mm: &Mm, addr: u64, bit: u8, set: bool) -> Result {
    if !is_current(mm) {
        return Err(EFAULT);
    }
    let (word, mask) = enable::u32_and_mask(addr, bit);
    user_word::change_own_bit(word as usize, mask, set)
}

/// How a fault-in may wait. Either way the fault drops the address space's mmap lock while it
/// waits for file I/O (`fixup_user_fault` with `unlocked`: `FAULT_FLAG_ALLOW_RETRY |
/// FAULT_FLAG_KILLABLE`), so that the process's own `mmap` and `munmap` go on meanwhile.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Wait {
    /// In the task that registers or unregisters, in its own address space: as upstream's, the
    /// fault may also wait for a userfaultfd handler, and a fatal signal ends it.
    Killable,
    /// In a fault drain (a worker, which no signal reaches, or the toggling task on its way
    /// out): in a VMA registered with a userfaultfd, the fault is taken without `unlocked`, so
    /// it still breaks copy-on-write or swaps in, but fails where it would wait for the
    /// handler, which may never answer.
    Never,
}

/// Faults the enable word at `addr` of `mm` in for writing (upstream `user_event_mm_fault_in`).
///
/// Must not be called with `event_mutex` held.
fn fault_in(mm: &Mm, addr: u64, wait: Wait) -> Result {
    let (word, _) = enable::word_and_bit(addr, 0);
    with_mmap_read(mm, |user| {
        // SAFETY: `with_mmap_read` holds the address space's mmap lock for reading.
        let may_wait =
            wait == Wait::Killable || !unsafe { user_word::userfaultfd_armed(user, word) };
        // SAFETY: `with_mmap_read` holds the address space's mmap lock for reading. With
        // `may_wait`, the fault may drop and retake that lock, and returns with it held, as the
        // guard expects; nothing here holds a VMA across it.
        unsafe { user_word::fault_in_writable(user, word, may_wait) }
    })?
}

/// REG and UNREG, before they take `reg_mutex`: faults the caller's enable word at `addr` in,
/// unless it is writable already (nearly always: one atomic no-op on it, page faults
/// disabled). A fault that blocks (a userfaultfd nobody serves, a file whose FUSE daemon does
/// not answer) then holds no lock that other programs' REG, UNREG, DEL or close need, and a
/// fatal signal ends it ([`Wait::Killable`]). Best effort: the REG or UNREG then writes the
/// word as before and reports what it finds, in upstream's order.
pub(crate) fn prefault(scope: &Scope, addr: u64) {
    if !is_current(&scope.mm) {
        return;
    }
    let (word, _) = enable::u32_and_mask(addr, 0);
    // An OR of nothing changes no bit of the caller's own word.
    if user_word::change_own_bit(word as usize, 0, true).is_ok() {
        return;
    }
    let _ = fault_in(&scope.mm, addr, Wait::Killable);
}

/// How many times REG and UNREG write an enable word, faulting it in between (upstream's
/// registration and UNREG loops).
pub(crate) const WORD_ATTEMPTS: u32 = MAX_ATTEMPTS;

/// Makes the calling task's enable word at `addr` writable for REG's or UNREG's next attempt,
/// as upstream's loops fault it in: killably, waiting for a userfaultfd handler or a slow file
/// if it must. Called with neither `reg_mutex` nor `event_mutex` held, so a fault that blocks
/// holds no lock other programs need. `EFAULT` if the word cannot be written.
///
/// The word's page is faulted in by pinning it, and the caller keeps the pin across its next
/// attempt, which writes through the mapping as any attempt does: a fault-in alone could be
/// undone before the attempt by another thread's fork, which shares the page copy-on-write
/// again, every time in a process that forks often, and the REG or UNREG would fail with
/// `EFAULT`; a pinned page is copied for a forked child instead, and the task's mapping of it
/// stays writable. What the pin cannot keep (an `munmap` or `MADV_DONTNEED` of the word) still
/// fails the attempt, which pins again. `None` (the word only faulted in) when the scope's
/// address space is not the task's own.
pub(crate) fn pin_word(scope: &Scope, addr: u64) -> Result<Option<PinnedWord>> {
    if is_current(&scope.mm) {
        let (word, _) = enable::word_and_bit(addr, 0);
        // SAFETY: The scope's address space is the calling task's own, so the task has one; a
        // REG or UNREG calls this in its system call, holding no mmap lock and no lock a fault
        // may wait behind.
        return unsafe { PinnedWord::pin_own(word) }.map(Some);
    }
    fault_in(&scope.mm, addr, Wait::Killable).map_err(|_| EFAULT)?;
    Ok(None)
}

/// Creates the enabler for a registration and writes the event's current state into it
/// (upstream `user_event_enabler_create`), in one `event_mutex` section. The caller holds
/// `reg_mutex`, a reference on `event`, and has checked `EADDRINUSE` ([`Scope::reserve`], which
/// gave it `nodes`).
///
/// Takes a reference on `event` when it succeeds. `EFAULT` when the word cannot be written now:
/// nothing was created, and the caller pins the word with `reg_mutex` released ([`pin_word`])
/// and registers again, keeping the pin, up to [`WORD_ATTEMPTS`] times; after the last, the
/// REG fails with `EFAULT` (upstream returns `ENOMEM`, quirk Q1; see
/// Documentation/deviations.md).
pub(crate) fn create(
    scope: &Arc<Scope>,
    event: &UserEvent,
    addr: u64,
    bit: u8,
    nodes: TreeNodes,
) -> Result {
    let new = NewEnabler::new(scope, NonNull::from(event), addr, bit, nodes)?;
    let mut held = Held::lock();
    let set = event.status() != 0;
    write_bit(&scope.mm, addr, bit, set).map_err(|e| if e == ENOENT { EFAULT } else { e })?;
    let (born, _) = scope.next_seq();
    let (_, unused) = new.insert(&mut held, born);
    scope.keep_spare(&mut held, unused);
    Ok(())
}

/// `DIAG_IOCSUNREG`: removes the scope's enabler at `addr`/`bit` and clears the bit in its
/// memory, even while the event is enabled. `ENOENT` if there was none (the bit is then left
/// alone). `EFAULT` when the enabler was removed but its word cannot be written now: the caller
/// releases `reg_mutex` and finishes with [`clear_faulting`].
///
/// The clear is tried in the same `event_mutex` section as the removal, and, as a task
/// unregisters its own words, first through its own mapping ([`write_own_bit`]).
pub(crate) fn unregister(scope: &Scope, addr: u64, bit: u8) -> Result {
    let mut held = Held::lock();
    remove(&mut held, scope, addr, bit)?;
    clear_own(scope, addr, bit)
}

/// UNREG's clear after [`unregister`] found the word not writable: faults it in (with
/// `reg_mutex` released: killably, holding no lock) and clears the bit, up to
/// [`WORD_ATTEMPTS`] times in all. A REG of the same word and bit in the meantime owns the bit
/// again, and is left alone.
pub(crate) fn clear_faulting(scope: &Scope, addr: u64, bit: u8) -> Result {
    let mut result = Err(EFAULT);
    for _ in 1..WORD_ATTEMPTS {
        // Kept across the attempt, and unpinned after `event_mutex` is released (declared
        // first, dropped last).
        let _pinned = pin_word(scope, addr)?;
        let mut held = Held::lock();
        if scope.has(&mut held, addr, bit) {
            return Ok(());
        }
        result = clear_own(scope, addr, bit);
        if result != Err(EFAULT) {
            break;
        }
    }
    result
}

/// Clears `bit` of the word at `addr`, through the task's own mapping when it is the scope's.
/// Called under `event_mutex`, as every enable bit is written.
fn clear_own(scope: &Scope, addr: u64, bit: u8) -> Result {
    write_own_bit(&scope.mm, addr, bit, false).or_else(|_| write_bit(&scope.mm, addr, bit, false))
}

/// Removes the scope's enabler at `addr`/`bit` from its scope and the index by event (UNREG);
/// `ENOENT` if there is none.
fn remove(held: &mut Held, scope: &Scope, addr: u64, bit: u8) -> Result {
    let key = (addr, bit);
    let enablers = scope.enablers.get(held);
    let e = enablers.get(&key).cloned().ok_or(ENOENT)?;
    // PANIC: Found just above under the same lock.
    let word = enablers
        .remove_node(&key)
        .expect("found")
        .into_reservation();
    // SAFETY: An enabler is only ever in its own scope's order list.
    drop(unsafe { scope.order.get(held).remove(&e) });
    let event = unfollow(held, &e);
    let (died, pending) = scope.next_seq();
    e.died.store(died, Relaxed);
    let spare = scope.spare.get(held);
    if spare.event.is_none() {
        spare.event = event;
    }
    if pending {
        // A pending fork copy must still see it: keep it, and its event reference, until the
        // copy ran, in the node it had (no allocation).
        scope
            .graveyard
            .get(held)
            .insert(word.into_node((died, 0), e));
        return Ok(());
    }
    if spare.word.is_none() {
        spare.word = Some(word);
    }
    e.release(held);
    Ok(())
}

/// Rewrites every enabler of `event` after its consumers changed (`user_event_enabler_update`).
/// Visits the event's own enablers only.
pub(crate) fn update_for(held: &mut Held, event: &UserEvent) {
    let key = core::ptr::from_ref(event) as usize;
    let Some(list) = FOLLOWERS
        .get(held)
        .as_mut()
        .and_then(|followers| followers.get_mut(&key))
    else {
        return;
    };
    let mut cursor = list.cursor_front();
    while let Some(next) = cursor.peek_next() {
        write_or_queue(next.arc(), true);
        cursor.move_next();
    }
}

/// The next enabler to copy from `parent` into a child forked at `snapshot`: the first at or
/// after `from` in `slot` (the live tree or the graveyard) that existed at the fork.
fn next_to_copy(
    held: &mut Held,
    slot: &EnablerTree,
    from: WordKey,
    snapshot: u64,
) -> Option<(WordKey, Arc<Enabler>)> {
    let mut cursor = slot.get(held).cursor_lower_bound_mut(&from)?;
    loop {
        let (key, e) = cursor.current();
        if e.born.load(Relaxed) <= snapshot && e.died.load(Relaxed) > snapshot {
            return Some((*key, e.clone()));
        }
        cursor = cursor.move_next()?;
    }
}

/// The key right after `key`.
fn after(key: WordKey) -> WordKey {
    match key.1.checked_add(1) {
        Some(bit) => (key.0, bit),
        None => (key.0.wrapping_add(1), 0),
    }
}

/// An enabler of the parent being copied into a child: the parent's, its copy (allocated), and
/// whether the child's word had the bit set when read, before `event_mutex` was taken
/// ([`read_words`]; `ENOENT` until then).
struct Copying {
    src: Arc<Enabler>,
    new: NewEnabler,
    word: Result<bool>,
}

/// Where a copy's walk of the parent's enablers is: in the live tree, then in the graveyard
/// (keyed by `died`: only those removed after the snapshot), at or after a key.
struct Walk<'a> {
    slots: [(&'a EnablerTree, WordKey); 2],
    slot: usize,
    from: WordKey,
}

impl<'a> Walk<'a> {
    fn new(parent: &'a Scope, snapshot: u64) -> Self {
        Self {
            slots: [
                (&parent.enablers, (0, 0)),
                (&parent.graveyard, (snapshot.saturating_add(1), 0)),
            ],
            slot: 0,
            from: (0, 0),
        }
    }

    /// Fills `found` with the next enablers to copy; returns how many (fewer than
    /// [`COPY_BATCH`] only at the end of the walk).
    fn next_batch(
        &mut self,
        held: &mut Held,
        snapshot: u64,
        found: &mut [Option<Arc<Enabler>>; COPY_BATCH],
    ) -> usize {
        let mut n = 0;
        while n < COPY_BATCH && self.slot < self.slots.len() {
            match next_to_copy(held, self.slots[self.slot].0, self.from, snapshot) {
                Some((key, e)) => {
                    found[n] = Some(e);
                    n += 1;
                    self.from = after(key);
                }
                None => {
                    self.slot += 1;
                    if let Some(&(_, start)) = self.slots.get(self.slot) {
                        self.from = start;
                    }
                }
            }
        }
        n
    }
}

/// Copies into `child` the enablers `parent` had at `snapshot` (see the module docs).
///
/// In batches of [`COPY_BATCH`]: a batch's enablers are found under `event_mutex`, their copies
/// allocated and the child's words read without it, and the copies inserted under it again, in
/// the same hold that finds the next batch. So `event_mutex` is taken once per batch and once
/// more, held for tree operations only, and never across an allocation or a wait for the
/// child's mmap lock (a child that holds its own mmap lock for long holds up its own copy, no
/// other program's REG). The parent may register and unregister meanwhile: what it adds is
/// newer than the snapshot, and what it removes waits in its graveyard, which this walks second.
/// An enabler removed after this walk passed it shows up in both; the child's tree keeps the
/// first copy.
fn copy(parent: &Scope, child: &Arc<Scope>, snapshot: u64) -> Result {
    // A node for an event's entry that one copy did not need, for the next.
    let mut spare = None;
    let mut walk = Walk::new(parent, snapshot);
    let mut batch: [Option<Copying>; COPY_BATCH] = [const { None }; COPY_BATCH];
    loop {
        let mut found: [Option<Arc<Enabler>>; COPY_BATCH] = [const { None }; COPY_BATCH];
        // A child whose last task left, and which no copy reads, needs no more: what it has is
        // torn down.
        let unused = child.unused();
        let n = {
            let mut held = Held::lock();
            for entry in batch.iter_mut() {
                let Some(c) = entry else {
                    break;
                };
                // The child has one already (its own REG ran first): this copy stays in the
                // batch, freed once `event_mutex` is released.
                if child.has(&mut held, c.src.addr, c.src.bit) {
                    continue;
                }
                if let Some(node) = entry.take().and_then(|c| insert_copy(&mut held, c)) {
                    spare = Some(node);
                }
            }
            if unused {
                0
            } else {
                walk.next_batch(&mut held, snapshot, &mut found)
            }
        };
        // What the child had already, without `event_mutex`.
        batch = [const { None }; COPY_BATCH];
        if n == 0 {
            return Ok(());
        }
        for (src, entry) in found.into_iter().flatten().zip(batch.iter_mut()) {
            let nodes = TreeNodes {
                word: None,
                event: spare.take(),
            };
            let new = NewEnabler::new(child, src.event, src.addr, src.bit, nodes)?;
            *entry = Some(Copying {
                src,
                new,
                word: Err(ENOENT),
            });
        }
        // The child's mmap lock, without `event_mutex`.
        read_words(&child.mm, &mut batch);
    }
}

/// Inserts a copy into the child, and writes the event's current state into the child's word
/// if the word did not hold it when read. Returns the node for an event's entry in
/// [`FOLLOWERS`] that the copy did not use.
fn insert_copy(held: &mut Held, c: Copying) -> Option<FollowersNode> {
    // `c.src` holds its event reference: it is alive, or in the graveyard until this copy ran.
    let (e, unused) = c.new.insert(held, 0);
    // The child's word holds what the parent's did at the fork, nearly always the event's state
    // still: then it is left alone, its page shared copy-on-write, as upstream's copy leaves it.
    // Else (a status change since the fork) it is written: the fault path breaks the sharing.
    // The word was read before `event_mutex` was taken, but nothing else writes this bit of the
    // child's word in between: status changes rewrite an enabler only once it is inserted, under
    // `event_mutex`, which orders them with this.
    let set = e.event().status() != 0;
    if c.word != Ok(set) {
        write_or_queue(e.as_arc_borrow(), true);
    }
    unused
}
