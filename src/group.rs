// SPDX-License-Identifier: GPL-2.0

//! The user_events group: the one set of events that every `user_events_data` file registers
//! into and `user_events_status` lists (upstream's `init_group`).

use crate::logic::status;
use core::fmt;
use kernel::{prelude::*, sync::Arc, types::ForeignOwnable};

/// The group.
pub(crate) struct Group {}

impl Group {
    /// Creates the (empty) group.
    pub(crate) fn new() -> Result<Arc<Self>> {
        Ok(Arc::new(Self {}, GFP_KERNEL)?)
    }

    /// Writes the text of `user_events_status`.
    pub(crate) fn show_status(&self, out: &mut impl fmt::Write) -> fmt::Result {
        status::write_status(out, core::iter::empty())
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
