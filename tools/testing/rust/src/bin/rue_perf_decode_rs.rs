// SPDX-License-Identifier: GPL-2.0

//! Decodes the user events in a `perf.data` file with Microsoft's `tracepoint_perf` and
//! `tracepoint_decode` (the Rust port of their `perf-decode`), one line per sample: the
//! tracepoint, then for an EventHeader event its `provider:event` name and its fields and
//! metadata as JSON, for any other event its format file's fields (4-byte `__rel_loc` ones
//! misplaced by `tracepoint_decode` 0.5.0: see `decode.rs`).
//!
//! Usage: `rue_perf_decode_rs PERF_DATA`. Exits non-zero if the file cannot be read or a
//! sample cannot be decoded.

use tracepoint_decode::{
    EventHeaderEnumeratorContext, EventHeaderEnumeratorState, PerfConvertOptions,
    PerfEventHeaderType,
};
use tracepoint_perf::{PerfDataFileEventOrder, PerfDataFileReader};

fn decode(path: &str) -> Result<usize, String> {
    let mut reader = PerfDataFileReader::new();
    reader
        .open_file(path, PerfDataFileEventOrder::Time)
        .map_err(|e| format!("{path}: {e}"))?;
    let mut ctx = EventHeaderEnumeratorContext::new();
    let mut samples = 0;
    while reader
        .move_next_event()
        .map_err(|e| format!("{path}: {e}"))?
    {
        let event = reader.current_event();
        if event.header.ty != PerfEventHeaderType::Sample {
            continue;
        }
        let info = reader
            .get_sample_event_info(&event)
            .map_err(|e| format!("sample: {e}"))?;
        samples += 1;
        let mut line = format!("{} ", info.name());
        if let Ok(mut e) = ctx.enumerate(&info) {
            let eh = e.event_info();
            line += &format!("{} {{", eh.identity_display());
            e.move_next();
            let mut first = true;
            while e.state() >= EventHeaderEnumeratorState::BeforeFirstItem {
                e.write_json_item_and_move_next_sibling(
                    &mut line,
                    !first,
                    PerfConvertOptions::Default,
                )
                .map_err(|_| "formatting".to_string())?;
                first = false;
            }
            if e.state() == EventHeaderEnumeratorState::Error {
                return Err(format!("{}: {}", info.name(), e.last_error()));
            }
            line += &format!(", \"meta\": {{ {} }} }}", eh.json_meta_display(Some(&info)));
        } else if let Some(format) = info.format() {
            for field in format.fields().iter().skip(format.common_field_count()) {
                line += &format!(
                    " {}={}",
                    field.name(),
                    field.get_field_value(&info).display()
                );
            }
        } else {
            return Err(format!("{}: no format", info.name()));
        }
        println!("{line}");
    }
    Ok(samples)
}

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: rue_perf_decode_rs PERF_DATA");
        std::process::exit(2);
    };
    match decode(&path) {
        Ok(n) => eprintln!("rue_perf_decode: {n} samples"),
        Err(e) => {
            eprintln!("rue_perf_decode: {e}");
            std::process::exit(1);
        }
    }
}
