// SPDX-License-Identifier: GPL-2.0

//! `make demo`'s real client: a program instrumented with OpenTelemetry's user_events logs
//! exporter (`opentelemetry-user-events-logs`), as an application would be.
//!
//! Usage: `rue_otel_demo_rs [COUNT [WAIT_SECONDS]]`. It builds a logger provider whose
//! exporter registers `rue_otel_demo_L1K1` to `rue_otel_demo_L5K1`, waits up to WAIT_SECONDS
//! (default 0) for a tracer of the Info level (`rue_otel_demo_L4K1`), then logs COUNT (default
//! 5) Info records, counting those a tracer was listening to, and shuts the provider down.

use opentelemetry::{
    logs::{AnyValue, LogRecord, Logger, LoggerProvider, Severity},
    KeyValue,
};
use opentelemetry_sdk::{logs::SdkLoggerProvider, Resource};
use opentelemetry_user_events_logs::Processor;
use std::{
    thread,
    time::{Duration, Instant},
};

fn main() {
    let mut args = std::env::args().skip(1).map(|a| a.parse::<u64>());
    let (count, wait) = match (args.next().unwrap_or(Ok(5)), args.next().unwrap_or(Ok(0))) {
        (Ok(c), Ok(w)) => (c, w),
        _ => {
            eprintln!("usage: rue_otel_demo_rs [COUNT [WAIT_SECONDS]]");
            std::process::exit(2);
        }
    };
    let processor = Processor::builder("rue_otel_demo")
        .build()
        .unwrap_or_else(|e| {
            eprintln!("rue_otel_demo: {e}");
            std::process::exit(1);
        });
    let resource = Resource::builder_empty()
        .with_service_name("rue-demo")
        .with_attribute(KeyValue::new("service.instance.id", "vm"))
        .build();
    let provider = SdkLoggerProvider::builder()
        .with_resource(resource)
        .with_log_processor(processor)
        .build();
    let logger = provider.logger("rue_otel_demo");
    let listening = || logger.event_enabled(Severity::Info, "rue_otel_demo", None);
    if wait > 0 {
        println!("rue_otel_demo: waiting up to {wait} s for a tracer of rue_otel_demo_L4K1");
        let deadline = Instant::now() + Duration::from_secs(wait);
        while !listening() && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(10));
        }
    }
    let (mut logged, mut skipped) = (0, 0);
    for i in 0..count {
        // The exporter itself writes only while its level is enabled; counted here to tell.
        if listening() {
            logged += 1;
        } else {
            skipped += 1;
        }
        let mut record = logger.create_log_record();
        record.set_event_name("demo-event");
        record.set_severity_number(Severity::Info);
        record.set_severity_text("INFO");
        record.set_body(AnyValue::from("hello from OpenTelemetry"));
        record.add_attribute("count", i as i64);
        logger.emit(record);
    }
    println!("rue_otel_demo: logged {logged} records, skipped {skipped}");
    let _ = provider.shutdown();
}
