// SPDX-License-Identifier: GPL-2.0

//! rust_user_events: the Linux `user_events` tracing ABI as a loadable module.
//!
//! Layers (Documentation/design.md), top to bottom:
//!
//! * tracefs files: [`data_file`], [`status_file`] and [`stats_file`] glue over the safe
//!   [`file_info`], [`group`] and [`write`];
//! * pure logic in [`logic`], `core` only, unit-tested on the host;
//! * the kernel interface: module-local [`bindings`], the C shim (`src/shim.c`), the
//!   [`symbols`] layer for what 7.3 does not export, [`identity`] and [`layout`] checks,
//!   [`tracefs`] files.
//!
//! Load order: the kernel build ([`identity`]), layout check, symbols, tracefs pin, refusal if
//! `user_events_data` already exists, then the three files. Any failure unwinds what was done
//! and fails `insmod`.

use kernel::prelude::*;

mod bindings;
mod compat;
mod data_file;
mod deferred;
mod dyn_events;
mod dyn_ops;
mod enabler;
mod event;
mod event_mutex;
mod file_info;
mod ftrace_record;
mod group;
mod identity;
mod kbuf;
mod ksym;
mod layout;
mod lifecycle;
mod logic;
mod mirrors;
mod names;
mod percpu;
mod perf_sample;
mod probes;
mod scope;
mod seq;
mod stats_file;
mod status_file;
mod symbols;
mod sysctl;
mod task;
mod trace_call;
mod trace_text;
mod tracefs;
mod tracepoint;
mod uaccess;
mod user_word;
mod wait;
mod write;

use logic::abi;

module! {
    type: RustUserEvents,
    name: "rust_user_events",
    authors: ["rust-user-events developers"],
    description: "Linux user_events tracing ABI as a loadable module",
    license: "GPL",
    params: {
        group: i64 {
            default: -1,
            description: "gid whose members may read and write user_events_data and read user_events_status (-1: root only, as upstream)",
        },
    },
}

/// The group the `group` parameter names, with the credentials that give it the files; `None`
/// when unset. An invalid value fails the load with `EINVAL`.
fn file_group() -> Result<Option<(tracefs::FileGroup, tracefs::KernelCred)>> {
    let value: i64 = compat::param_value(module_parameters::group.value());
    let Ok(gid) = abi::group_param(value) else {
        pr_err!("group={value}: not a gid (0 to 4294967294, or -1 for root only)\n");
        return Err(EINVAL);
    };
    let Some(gid) = gid else {
        return Ok(None);
    };
    let Ok(group) = tracefs::FileGroup::new(gid) else {
        pr_err!("group={gid}: not a gid of the initial user namespace\n");
        return Err(EINVAL);
    };
    Ok(Some((group, tracefs::KernelCred::new()?)))
}

/// Module state: everything the module owns, in one place. Fields drop in declaration order,
/// the reverse of `init`'s:
///
/// 1. the ways in: the `u:` operations (`dynamic_events`), then `user_events_data`, so nothing
///    new can start;
/// 2. the read-only files and the sysctl;
/// 3. the fork/exec/exit probes, then the task map they fill (scopes);
/// 4. the workqueues, drained: fork copies, scope teardowns, fault-ins, delayed destroys;
/// 5. the write path's scratch spaces;
/// 6. the group, and with its last reference the event table;
/// 7. the tracefs pin and the resolved symbols.
///
/// No event can exist at this point: each one pins the module. The statics that remain are
/// listed, each with the reason it is one, in Documentation/design.md ("Module state").
struct RustUserEvents {
    _dyn: dyn_ops::DynEventType,
    _data: tracefs::RootFile,
    _stats: tracefs::RootFile,
    _status: tracefs::RootFile,
    _sysctl: sysctl::Sysctl,
    _probes: lifecycle::ProcessProbes,
    _wq: deferred::Workqueues,
    _scratch: write::ScratchSpace,
    _group: group::GroupHandle,
    _tracefs: tracefs::TracefsPin,
    _symbols: symbols::Symbols,
}

impl kernel::Module for RustUserEvents {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let file_group = file_group()?;
        identity::check()?;
        layout::check()?;
        let symbols = symbols::Symbols::resolve()?;
        event_mutex::init(symbols.event_mutex);
        ftrace_record::enable_discard(symbols.discard);
        ftrace_record::enable_direct(symbols.direct);
        let tracefs = tracefs::TracefsPin::new(&symbols.tracefs)?;
        for name in [names::DATA, names::STATUS] {
            match tracefs.ensure_absent(name) {
                // The module loader reserves EEXIST for "a module of this name is loaded" and
                // turns an init's EEXIST into EBUSY; say EBUSY ourselves.
                Err(e) if e == EEXIST => {
                    pr_err!("tracefs already has '{name}': this kernel provides user_events\n");
                    return Err(EBUSY);
                }
                result => result?,
            }
        }
        let scratch = write::ScratchSpace::new()?;
        let wq = deferred::Workqueues::new()?;
        let probes = lifecycle::ProcessProbes::new()?;
        let sysctl = sysctl::Sysctl::new()?;
        let group_arc = group::Group::new()?;
        let group = group::GroupHandle::new(group_arc.clone());
        // The read-only files first, the ways to create events last: `user_events_data` is the
        // last step that can fail, and the `u:` operations, which cannot, follow it. So no event
        // or registration exists when a failed init unwinds.
        // SAFETY: `FOPS` is a promoted constant ('static). `group` is stored in the module next
        // to the file and dropped after it; open files pin the module, so they cannot outlive
        // `group` either.
        let status = unsafe {
            tracefs.create_file(
                names::STATUS,
                abi::STATUS_FILE_MODE,
                &status_file::FOPS,
                group.as_foreign(),
            )?
        };
        if let Some((gid, cred)) = &file_group {
            status.set_group(*gid, abi::STATUS_FILE_MODE, cred)?;
        }
        // SAFETY: `FOPS` is a promoted constant ('static); the file has no private data.
        let stats = unsafe {
            tracefs.create_file(
                names::STATS,
                abi::STATS_FILE_MODE,
                &stats_file::FOPS,
                core::ptr::null_mut(),
            )?
        };
        if let Some((gid, cred)) = &file_group {
            stats.set_group(*gid, abi::STATS_FILE_MODE, cred)?;
        }
        // SAFETY: As for `status`.
        let data = unsafe {
            tracefs.create_file(
                names::DATA,
                abi::DATA_FILE_MODE,
                &data_file::FOPS,
                group.as_foreign(),
            )?
        };
        if let Some((gid, cred)) = &file_group {
            // This cannot fail the load any more: the file is open to root already, and an
            // event registered through it would outlive a failed init. The same change of the
            // status file, as the same credentials, succeeded; only a security module judging
            // the two files differently could refuse this one, and the file stays root's.
            if let Err(e) = data.set_group(*gid, abi::DATA_FILE_GROUP_MODE, cred) {
                pr_err!("could not give user_events_data to the group ({e:?}); it stays root's\n");
            }
        }
        // Cannot fail.
        let dyn_type = dyn_ops::DynEventType::new(&symbols, group_arc);
        if !mirrors::ALL_OFF_BY.is_empty() {
            pr_notice!(
                "built with every gate off ({}): the exported paths only\n",
                mirrors::ALL_OFF_BY
            );
        }
        if !mirrors::CHANGED.is_empty() {
            pr_notice!(
                "built with the exported paths for kernel bodies that changed since they were \
                 audited: {}\n",
                mirrors::CHANGED
            );
        }
        pr_info!("user_events ready\n");
        Ok(Self {
            _dyn: dyn_type,
            _data: data,
            _stats: stats,
            _status: status,
            _sysctl: sysctl,
            _probes: probes,
            _wq: wq,
            _scratch: scratch,
            _group: group,
            _tracefs: tracefs,
            _symbols: symbols,
        })
    }
}
