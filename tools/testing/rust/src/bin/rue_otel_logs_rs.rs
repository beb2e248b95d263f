// SPDX-License-Identifier: GPL-2.0

//! OpenTelemetry's user_events logs exporter (crates.io `opentelemetry-user-events-logs`, with
//! `opentelemetry`/`opentelemetry_sdk`) against the module: its `Processor` registers the
//! tracepoints `rue_otel_L1K1` to `rue_otel_L5K1` (one per level, keyword 1) through
//! `eventheader_dynamic`; a logger provider built on it sees a level enabled once ftrace or perf
//! listens, and the Common Schema "Log" event it writes decodes (`tracepoint_decode`) to the
//! record's severity, body, attributes, event id and name and the resource's service name and
//! instance id.
//!
//! `rue_otel_logs_rs register-and-exit` is the child of the last test.

use opentelemetry::{
    logs::{AnyValue, LogRecord, Logger, LoggerProvider, Severity},
    KeyValue,
};
use opentelemetry_sdk::{
    logs::{LogProcessor, SdkLoggerProvider},
    Resource,
};
use opentelemetry_user_events_logs::Processor;
use rue_guest_tests::{
    child_main,
    decode::Format,
    ensure, run, run_child,
    tracefs::{expect_status, ftrace_enable, wait_event_gone, wait_until},
    tracer::{Tracer, Via},
    Test,
};
use std::time::{Duration, SystemTime};

const PROVIDER: &str = "rue_otel";
/// Every OpenTelemetry severity the exporter maps to an EventHeader level, one per level.
const LEVELS: [(Severity, u8); 5] = [
    (Severity::Fatal, 1),
    (Severity::Error, 2),
    (Severity::Warn, 3),
    (Severity::Info, 4),
    (Severity::Debug, 5),
];
/// 2023-11-14T22:13:20Z.
const TIMESTAMP_SECS: u64 = 1_700_000_000;

fn tracepoint(provider: &str, level: u8) -> String {
    format!("{provider}_L{level}K1")
}

fn logger_provider(name: &str) -> Result<SdkLoggerProvider, String> {
    let processor = Processor::builder(name)
        .build()
        .map_err(|e| format!("Processor: {e}"))?;
    let resource = Resource::builder_empty()
        .with_service_name("rue-role")
        .with_attribute(KeyValue::new("service.instance.id", "rue-instance"))
        .build();
    Ok(SdkLoggerProvider::builder()
        .with_resource(resource)
        .with_log_processor(processor)
        .build())
}

/// Emits the log record every test writes, at `severity`.
fn emit(provider: &SdkLoggerProvider, severity: Severity) {
    let logger = provider.logger("rue");
    let mut record = logger.create_log_record();
    record.set_event_name("rue-event");
    record.set_timestamp(SystemTime::UNIX_EPOCH + Duration::from_secs(TIMESTAMP_SECS));
    record.set_severity_number(severity);
    record.set_severity_text(severity.name());
    record.set_body(AnyValue::from("hello from OpenTelemetry"));
    record.add_attribute("event_id", 20i64);
    record.add_attribute("user_name", "otel user");
    record.add_attribute("count", 7i64);
    record.add_attribute("ratio", 1.5f64);
    record.add_attribute("flag", true);
    logger.emit(record);
}

fn enabled(provider: &SdkLoggerProvider, severity: Severity) -> bool {
    provider
        .logger("rue")
        .event_enabled(severity, "rue", Some("rue-event"))
}

fn processor_registers_a_tracepoint_per_level() -> Result<(), String> {
    let provider = logger_provider(PROVIDER)?;
    for (severity, level) in LEVELS {
        let name = tracepoint(PROVIDER, level);
        expect_status(&name, Some(&name))?;
        ensure(
            Format::of(&name)?.is_eventheader(),
            format!("{name} is not an EventHeader event"),
        )?;
        ensure(
            !enabled(&provider, severity),
            format!("{severity:?} enabled with nobody listening"),
        )?;
    }
    Ok(())
}

fn records_a_log(via: Via, severity: Severity, level: u8) -> Result<(), String> {
    let provider = logger_provider(PROVIDER)?;
    let name = tracepoint(PROVIDER, level);
    let format = Format::of(&name)?;
    let mut tracer = Tracer::attach(via, &name, 0)?;
    wait_until(&format!("{severity:?} enabled"), 5000, || {
        enabled(&provider, severity)
    })?;
    for (other, l) in LEVELS {
        ensure(
            l == level || !enabled(&provider, other),
            format!("{other:?} enabled too"),
        )?;
    }
    expect_status(
        &name,
        Some(&format!("{name} # Used by {}", via.status_word())),
    )?;
    emit(&provider, severity);
    let event = format.eventheader(&tracer.one_record()?)?;
    let header = (
        event.provider.as_str(),
        event.name.as_str(),
        event.level,
        event.keyword,
    );
    ensure(
        header == (PROVIDER, "Log", level, 1),
        format!("provider, name, level, keyword: {header:?}"),
    )?;
    let severity_number = (severity as i32).to_string();
    let want = [
        ("__csver__", "1024"),
        ("PartA.time", "2023-11-14T22:13:20Z"),
        ("PartA.ext_cloud_role", "rue-role"),
        ("PartA.ext_cloud_roleInstance", "rue-instance"),
        ("PartC.user_name", "otel user"),
        ("PartC.count", "7"),
        ("PartC.ratio", "1.5"),
        ("PartC.flag", "true"),
        ("PartB._typeName", "Log"),
        ("PartB.body", "hello from OpenTelemetry"),
        ("PartB.severityNumber", severity_number.as_str()),
        ("PartB.severityText", severity.name()),
        ("PartB.eventId", "20"),
        ("PartB.name", "rue-event"),
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
    wait_until(&format!("{severity:?} disabled"), 5000, || {
        !enabled(&provider, severity)
    })?;
    expect_status(&name, Some(&name))
}

fn processor_shutdown_unregisters() -> Result<(), String> {
    let processor = Processor::builder(PROVIDER)
        .build()
        .map_err(|e| format!("Processor: {e}"))?;
    let name = tracepoint(PROVIDER, 3);
    let tracer = Tracer::attach(Via::Ftrace, &name, 0)?;
    wait_until("Warn enabled", 5000, || {
        processor.event_enabled(Severity::Warn, "rue", None)
    })?;
    processor.shutdown().map_err(|e| format!("shutdown: {e}"))?;
    // Upstream clears the bit at UNREG even while a tracer stays attached.
    ensure(
        !processor.event_enabled(Severity::Warn, "rue", None),
        "Warn still enabled after shutdown",
    )?;
    expect_status(&name, Some(&format!("{name} # Used by ftrace")))?;
    tracer.detach()?;
    // This process's data file (never closed) still references it.
    expect_status(&name, Some(&name))
}

const CHILD_PROVIDER: &str = "rue_otel_child";

/// The child: builds its logger provider (another provider name: this process's data file
/// keeps `rue_otel`'s tracepoints referenced), is enabled at Error through ftrace, logs, and
/// exits without shutting the provider down.
fn child() -> Result<(), String> {
    let provider = logger_provider(CHILD_PROVIDER)?;
    let name = tracepoint(CHILD_PROVIDER, 2);
    ftrace_enable(&name, true)?;
    wait_until("Error enabled", 5000, || {
        enabled(&provider, Severity::Error)
    })?;
    emit(&provider, Severity::Error);
    ftrace_enable(&name, false)?;
    println!("registered, enabled and logged");
    std::mem::forget(provider);
    Ok(())
}

fn events_deleted_after_the_registering_process_exits() -> Result<(), String> {
    run_child("registered, enabled and logged")?;
    for (_, level) in LEVELS {
        wait_event_gone(&tracepoint(CHILD_PROVIDER, level))?;
    }
    Ok(())
}

fn main() {
    child_main(child);
    run(&[
        Test {
            name: "processor_registers_a_tracepoint_per_level",
            run: processor_registers_a_tracepoint_per_level,
        },
        Test {
            name: "ftrace_records_an_error_log",
            run: || records_a_log(Via::Ftrace, Severity::Error, 2),
        },
        Test {
            name: "perf_records_an_info_log",
            run: || records_a_log(Via::Perf, Severity::Info, 4),
        },
        Test {
            name: "processor_shutdown_unregisters",
            run: processor_shutdown_unregisters,
        },
        Test {
            name: "events_deleted_after_the_registering_process_exits",
            run: events_deleted_after_the_registering_process_exits,
        },
    ]);
}
