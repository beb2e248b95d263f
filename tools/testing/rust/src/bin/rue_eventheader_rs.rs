// SPDX-License-Identifier: GPL-2.0

//! Microsoft's `eventheader_dynamic` crate (crates.io, microsoft/LinuxTracepoints-Rust), the
//! layer under OpenTelemetry's user_events exporters, against the module:
//! `Provider::register_set` registers the EventHeader tracepoint `RueEh_L3K2aGrue` (provider
//! `RueEh`, level 3, keyword 0x2a, group `rue`), and an `EventBuilder` event with header
//! fields, activity ids, scalars, a string, a struct and an array is recorded by ftrace and
//! perf and decoded by `tracepoint_decode` to what was written.
//!
//! `rue_eventheader_rs register-and-exit` is the child of the last test.

use eventheader::{FieldFormat, Level, Opcode};
use eventheader_dynamic::{EventBuilder, EventSet, Provider};
use rue_guest_tests::{
    child_main,
    decode::Format,
    ensure, run, run_child,
    tracefs::{event_exists, expect_status, ftrace_enable, wait_event_gone, wait_until},
    tracer::{Tracer, Via},
    Test,
};

const PROVIDER: &str = "RueEh";
const GROUP: &str = "rue";
const KEYWORD: u64 = 0x2a;
const TRACEPOINT: &str = "RueEh_L3K2aGrue";
const ACTIVITY: [u8; 16] = *b"rue-activity-id!";
const RELATED: [u8; 16] = *b"rue-related-id!!";
const EBADF: i32 = 9;

fn provider(name: &str) -> Provider {
    let mut options = Provider::new_options();
    options.group_name(GROUP);
    Provider::new(name, &options)
}

fn register(provider: &mut Provider) -> Result<std::sync::Arc<EventSet>, String> {
    let set = provider.register_set(Level::Warning, KEYWORD);
    ensure(
        set.errno() == 0,
        format!("register_set: errno {}", set.errno()),
    )?;
    Ok(set)
}

/// The event every test writes.
fn build() -> EventBuilder {
    let mut eb = EventBuilder::new();
    eb.reset("RueHello", 0x1234)
        .id_version(7, 2)
        .opcode(Opcode::ActivityStart)
        .add_value("count", 42u32, FieldFormat::Default, 0)
        .add_str(
            "msg",
            "hello from eventheader_dynamic",
            FieldFormat::Default,
            0,
        )
        .add_value("delta", -5i64, FieldFormat::SignedInt, 0)
        .add_value("ratio", 0.5f64, FieldFormat::Float, 0)
        .add_struct("point", 2, 0)
        .add_value("x", 1i32, FieldFormat::SignedInt, 0)
        .add_value("y", -2i32, FieldFormat::SignedInt, 0)
        .add_value_sequence("bytes", &[1u16, 2, 300], FieldFormat::UnsignedInt, 0)
        .add_value("flag", true, FieldFormat::Boolean, 0);
    eb
}

fn register_set_creates_the_eventheader_tracepoint() -> Result<(), String> {
    let mut p = provider(PROVIDER);
    let set = register(&mut p)?;
    ensure(
        event_exists(TRACEPOINT),
        format!("no events/user_events/{TRACEPOINT}"),
    )?;
    let format = Format::of(TRACEPOINT)?;
    ensure(
        format.is_eventheader(),
        "the decoder does not take it for EventHeader",
    )?;
    let fields = format.user_fields();
    let want = [
        ("eventheader_flags", 8, 1),
        ("version", 9, 1),
        ("id", 10, 2),
        ("tag", 12, 2),
        ("opcode", 14, 1),
        ("level", 15, 1),
    ];
    ensure(
        fields.iter().map(|(n, o, s)| (n.as_str(), *o, *s)).eq(want),
        format!("user fields {fields:?}, want {want:?}"),
    )?;
    expect_status(TRACEPOINT, Some(TRACEPOINT))?;
    ensure(!set.enabled(), "enabled with nobody listening")?;
    let err = build().write(&set, None, None);
    ensure(
        err == EBADF,
        format!("write with nobody listening: {err}, want EBADF"),
    )
}

fn records_the_event(via: Via) -> Result<(), String> {
    let mut p = provider(PROVIDER);
    let set = register(&mut p)?;
    let format = Format::of(TRACEPOINT)?;
    let mut tracer = Tracer::attach(via, TRACEPOINT, 0)?;
    wait_until("EventSet enabled", 5000, || set.enabled())?;
    expect_status(
        TRACEPOINT,
        Some(&format!("{TRACEPOINT} # Used by {}", via.status_word())),
    )?;
    let err = build().write(&set, Some(&ACTIVITY), Some(&RELATED));
    ensure(err == 0, format!("write: errno {err}"))?;
    let event = format.eventheader(&tracer.one_record()?)?;
    let header = (
        event.provider.as_str(),
        event.name.as_str(),
        event.level,
        event.keyword,
    );
    ensure(
        header == (PROVIDER, "RueHello", 3, KEYWORD),
        format!("provider, name, level, keyword: {header:?}"),
    )?;
    let ids = (event.opcode, event.id, event.version, event.tag);
    ensure(
        ids == (1, 7, 2, 0x1234),
        format!("opcode, id, version, tag: {ids:?}"),
    )?;
    ensure(
        event.activity_id == Some(ACTIVITY),
        format!("activity id {:?}", event.activity_id),
    )?;
    ensure(
        event.related_id == Some(RELATED),
        format!("related id {:?}", event.related_id),
    )?;
    let want = [
        ("count", "42"),
        ("msg", "hello from eventheader_dynamic"),
        ("delta", "-5"),
        ("ratio", "0.5"),
        ("point.x", "1"),
        ("point.y", "-2"),
        ("bytes", "[1,2,300]"),
        ("flag", "true"),
    ];
    ensure(
        event
            .fields
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .eq(want),
        format!("fields {:?}, want {want:?}", event.fields),
    )?;
    tracer.detach()?;
    wait_until("EventSet disabled", 5000, || !set.enabled())?;
    expect_status(TRACEPOINT, Some(TRACEPOINT))
}

fn provider_unregister_clears_enabled() -> Result<(), String> {
    let mut p = provider(PROVIDER);
    let set = register(&mut p)?;
    let tracer = Tracer::attach(Via::Ftrace, TRACEPOINT, 0)?;
    wait_until("EventSet enabled", 5000, || set.enabled())?;
    p.unregister();
    // Upstream clears the bit at UNREG even while a tracer stays attached.
    ensure(!set.enabled(), "still enabled after Provider::unregister")?;
    expect_status(TRACEPOINT, Some(&format!("{TRACEPOINT} # Used by ftrace")))?;
    tracer.detach()?;
    // This process's data file (the crate keeps it open for good) still references it.
    expect_status(TRACEPOINT, Some(TRACEPOINT))
}

/// The child's provider: another name, since this process's data file keeps the first one's
/// tracepoint referenced until this process exits.
const CHILD_PROVIDER: &str = "RueEhChild";
const CHILD_TRACEPOINT: &str = "RueEhChild_L3K2aGrue";

/// The child: registers, is enabled through ftrace, writes, and exits with everything open.
fn child() -> Result<(), String> {
    let mut p = provider(CHILD_PROVIDER);
    let set = register(&mut p)?;
    ftrace_enable(CHILD_TRACEPOINT, true)?;
    wait_until("enabled", 5000, || set.enabled())?;
    let err = build().write(&set, None, None);
    ensure(err == 0, format!("write: errno {err}"))?;
    ftrace_enable(CHILD_TRACEPOINT, false)?;
    println!("registered, enabled and written");
    std::mem::forget(p);
    Ok(())
}

fn event_deleted_after_the_registering_process_exits() -> Result<(), String> {
    run_child("registered, enabled and written")?;
    wait_event_gone(CHILD_TRACEPOINT)
}

fn main() {
    child_main(child);
    run(&[
        Test {
            name: "register_set_creates_the_eventheader_tracepoint",
            run: register_set_creates_the_eventheader_tracepoint,
        },
        Test {
            name: "ftrace_records_the_event",
            run: || records_the_event(Via::Ftrace),
        },
        Test {
            name: "perf_records_the_event",
            run: || records_the_event(Via::Perf),
        },
        Test {
            name: "provider_unregister_clears_enabled",
            run: provider_unregister_clears_enabled,
        },
        Test {
            name: "event_deleted_after_the_registering_process_exits",
            run: event_deleted_after_the_registering_process_exits,
        },
    ]);
}
