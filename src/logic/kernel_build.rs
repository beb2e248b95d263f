// SPDX-License-Identifier: GPL-2.0

//! Whether the running kernel is the build the module was checked against.
//!
//! The build records the `uname -v` string (`UTS_VERSION`) of the kernel whose tree it compared
//! its mirrors and layouts with (`tools/identity.sh`): the whole string where the tree has it,
//! or, for a tree prepared from a Debian source package, the upload (`Debian 7.3.4-1~bpo13+1 `),
//! which Debian writes into every kernel's version. The release itself is the module loader's
//! `vermagic` check; this one catches another build of the same release.

/// How the recorded version is compared with the running kernel's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Recorded<'a> {
    /// The whole `uname -v` string.
    Exact(&'a [u8]),
    /// A part every build of that source carries (a Debian upload, with its blanks).
    Contains(&'a [u8]),
}

/// `running` is the running kernel's `uname -v`, up to its NUL.
pub(crate) fn same_build(recorded: Recorded<'_>, running: &[u8]) -> bool {
    match recorded {
        Recorded::Exact(version) => version == running,
        Recorded::Contains(part) => {
            !part.is_empty() && running.windows(part.len()).any(|window| window == part)
        }
    }
}
