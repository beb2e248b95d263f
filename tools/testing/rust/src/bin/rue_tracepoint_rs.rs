// SPDX-License-Identifier: GPL-2.0

//! Microsoft's `tracepoint` crate (crates.io, microsoft/LinuxTracepoints-Rust) against the
//! module: `TracepointState` registers the event OpenTelemetry's user_events metrics exporter
//! defines (`otlp_metrics u32 protocol;char[8] version;__rel_loc u8[] buffer;`, trailing ';'
//! and no spaces as the exporter sends it) and writes its five iovecs as the exporter does;
//! ftrace and perf each record it, and the fields decode to what was written.
//!
//! `rue_tracepoint_rs register-and-exit` is the child of the last test: it registers and exits
//! without unregistering, and the kernel deletes the event.

use rue_guest_tests::{
    child_main,
    decode::Format,
    ensure, run, run_child,
    tracefs::{event_exists, expect_status, ftrace_enable, wait_event_gone, wait_until},
    tracer::{Tracer, Via},
    Test,
};
use std::{ffi::CStr, pin::Pin};
use tracepoint::{EventDataDescriptor, TracepointState};

const NAME: &str = "otlp_metrics";
/// The metrics exporter's definition, byte for byte (`opentelemetry-user-events-metrics`).
const DEFINITION: &CStr = c"otlp_metrics u32 protocol;char[8] version;__rel_loc u8[] buffer;";
const VERSION: &[u8; 8] = b"v0.19.00";
const EBADF: i32 = 9;

/// A registered `otlp_metrics`, unregistered when dropped (`TracepointState`'s `Drop`).
fn register() -> Result<Pin<Box<TracepointState>>, String> {
    let state = Box::pin(TracepointState::new(0));
    // SAFETY: the state is pinned in its box and unregisters itself when the box is dropped.
    let err = unsafe { state.as_ref().register(DEFINITION) };
    ensure(err == 0, format!("TracepointState::register: errno {err}"))?;
    Ok(state)
}

/// Writes one metrics payload as the exporter's `write()` does: data[0] for the index, then
/// protocol 0, the version, the `__rel_loc` of the buffer (its data right after it), the buffer.
fn write_metrics(state: &TracepointState, buffer: &[u8]) -> i32 {
    let protocol = 0u32;
    let loc = (buffer.len() as u32) << 16;
    state.write(&mut [
        EventDataDescriptor::zero(),
        EventDataDescriptor::from_value(&protocol),
        EventDataDescriptor::from_bytes(VERSION),
        EventDataDescriptor::from_value(&loc),
        EventDataDescriptor::from_bytes(buffer),
    ])
}

fn registers_with_the_exporters_definition() -> Result<(), String> {
    let state = register()?;
    ensure(
        event_exists(NAME),
        format!("no events/user_events/{NAME} after REG"),
    )?;
    let format = Format::of(NAME)?;
    let fields = format.user_fields();
    let want = [("protocol", 8, 4), ("version", 12, 8), ("buffer", 20, 4)];
    ensure(
        fields.iter().map(|(n, o, s)| (n.as_str(), *o, *s)).eq(want),
        format!("user fields {fields:?}, want {want:?}"),
    )?;
    expect_status(NAME, Some(NAME))?;
    ensure(!state.enabled(), "enabled with nobody listening")?;
    let err = write_metrics(&state, b"x");
    ensure(
        err == EBADF,
        format!("write with nobody listening: {err}, want EBADF"),
    )
}

fn records_fields(via: Via) -> Result<(), String> {
    let state = register()?;
    let format = Format::of(NAME)?;
    let mut tracer = Tracer::attach(via, NAME, 0)?;
    wait_until("TracepointState enabled", 5000, || state.enabled())?;
    expect_status(
        NAME,
        Some(&format!("{NAME} # Used by {}", via.status_word())),
    )?;
    let buffer: Vec<u8> = (0..200u32).map(|i| (i * 7) as u8).collect();
    let err = write_metrics(&state, &buffer);
    ensure(err == 0, format!("write: errno {err}"))?;
    let record = tracer.one_record()?;
    ensure(format.uint(&record, "protocol")? == 0, "protocol is not 0")?;
    let version = format.bytes(&record, "version")?;
    ensure(version == VERSION, format!("version {version:?}"))?;
    let got = format.bytes(&record, "buffer")?;
    ensure(got == buffer, format!("buffer {got:?}, want {buffer:?}"))?;
    let pid = format.uint(&record, "common_pid")?;
    ensure(
        pid == std::process::id() as u64,
        format!("common_pid {pid}, want this process"),
    )?;
    tracer.detach()?;
    wait_until("TracepointState disabled", 5000, || !state.enabled())?;
    expect_status(NAME, Some(NAME))
}

fn unregister_clears_the_enable_word() -> Result<(), String> {
    let state = register()?;
    let tracer = Tracer::attach(Via::Ftrace, NAME, 0)?;
    wait_until("TracepointState enabled", 5000, || state.enabled())?;
    let err = state.unregister();
    ensure(err == 0, format!("unregister: errno {err}"))?;
    // Upstream clears the bit at UNREG even while a tracer stays attached.
    ensure(!state.enabled(), "still enabled after unregister")?;
    ensure(
        write_metrics(&state, b"x") == EBADF,
        "write after unregister is not EBADF",
    )?;
    expect_status(NAME, Some(&format!("{NAME} # Used by ftrace")))?;
    tracer.detach()?;
    // This process's data file (the crate keeps it open for good) still references it.
    expect_status(NAME, Some(NAME))
}

fn event_deleted_after_the_registering_process_exits() -> Result<(), String> {
    run_child("registered and enabled")?;
    wait_event_gone(CHILD_NAME)
}

/// The child's event: another name, since this process's data file (which the crate never
/// closes) keeps `otlp_metrics` referenced until this process exits.
const CHILD_NAME: &str = "otlp_metrics_child";
const CHILD_DEFINITION: &CStr =
    c"otlp_metrics_child u32 protocol;char[8] version;__rel_loc u8[] buffer;";

/// The child: registers, is enabled through ftrace, and exits with the registration, the
/// enabler and the data file still open, leaving the cleanup to the kernel.
fn child() -> Result<(), String> {
    let state = Box::pin(TracepointState::new(0));
    // SAFETY: the state is pinned and leaked below, so it is never moved or freed while
    // registered.
    let err = unsafe { state.as_ref().register(CHILD_DEFINITION) };
    ensure(err == 0, format!("register: errno {err}"))?;
    ftrace_enable(CHILD_NAME, true)?;
    wait_until("enabled", 5000, || state.enabled())?;
    ftrace_enable(CHILD_NAME, false)?;
    println!("registered and enabled");
    std::mem::forget(state);
    Ok(())
}

fn main() {
    child_main(child);
    run(&[
        Test {
            name: "registers_with_the_exporters_definition",
            run: registers_with_the_exporters_definition,
        },
        Test {
            name: "ftrace_records_the_written_fields",
            run: || records_fields(Via::Ftrace),
        },
        Test {
            name: "perf_records_the_written_fields",
            run: || records_fields(Via::Perf),
        },
        Test {
            name: "unregister_clears_the_enable_word",
            run: unregister_clears_the_enable_word,
        },
        Test {
            name: "event_deleted_after_the_registering_process_exits",
            run: event_deleted_after_the_registering_process_exits,
        },
    ]);
}
