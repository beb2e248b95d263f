// SPDX-License-Identifier: GPL-2.0

//! tracefs seen by a tracer: a user event's directory, `id` and `format`, its line in
//! `user_events_status`, and its ftrace `enable` file.

use std::{
    fs::{self, OpenOptions},
    io::{Read, Write},
    path::Path,
    sync::OnceLock,
    thread,
    time::{Duration, Instant},
};

/// Where the test VM mounts tracefs.
pub const TRACEFS: &str = "/sys/kernel/tracing";

/// The directory of user event `name` (system `user_events`).
pub fn event_dir(name: &str) -> String {
    format!("{TRACEFS}/events/user_events/{name}")
}

/// True while user event `name` exists.
pub fn event_exists(name: &str) -> bool {
    Path::new(&event_dir(name)).exists()
}

/// Reads a whole tracefs file.
pub fn read(path: &str) -> Result<String, String> {
    fs::read_to_string(path).map_err(|e| format!("read {path}: {e}"))
}

/// Reads a tracefs file that answers only a read at offset 0 (`events/header_page`: the core
/// returns 0 for any later offset, so `read_to_string`'s small first read would cut it short).
pub fn read_once(path: &str) -> Result<String, String> {
    let mut buf = vec![0u8; 64 * 1024];
    let n = fs::File::open(path)
        .and_then(|mut f| f.read(&mut buf))
        .map_err(|e| format!("read {path}: {e}"))?;
    buf.truncate(n);
    String::from_utf8(buf).map_err(|e| format!("{path}: {e}"))
}

/// Writes `text` to a tracefs file.
pub fn write(path: &str, text: &str) -> Result<(), String> {
    fs::write(path, text).map_err(|e| format!("write {text:?} to {path}: {e}"))
}

/// The trace event id of user event `name`: perf's `config` and the records' `common_type`.
pub fn event_id(name: &str) -> Result<u16, String> {
    let path = format!("{}/id", event_dir(name));
    let text = read(&path)?;
    text.trim()
        .parse()
        .map_err(|e| format!("{path}: {text:?}: {e}"))
}

/// The `format` file of user event `name`.
pub fn event_format(name: &str) -> Result<String, String> {
    read(&format!("{}/format", event_dir(name)))
}

/// Turns ftrace recording of user event `name` on or off through its `enable` file.
pub fn ftrace_enable(name: &str, on: bool) -> Result<(), String> {
    write(
        &format!("{}/enable", event_dir(name)),
        if on { "1" } else { "0" },
    )
}

/// Empties the top-level trace buffer.
pub fn clear_trace() -> Result<(), String> {
    write(&format!("{TRACEFS}/trace"), "")
}

/// The line of `user_events_status` for event `name` (`name` or `name # Used by ...`), if any.
pub fn status_line(name: &str) -> Result<Option<String>, String> {
    let text = read(&format!("{TRACEFS}/user_events_status"))?;
    Ok(text
        .lines()
        .find(|l| l.split(' ').next() == Some(name))
        .map(str::to_owned))
}

/// Checks that `user_events_status` lists `name` exactly as `want` (`None`: not at all).
pub fn expect_status(name: &str, want: Option<&str>) -> Result<(), String> {
    let got = status_line(name)?;
    if got.as_deref() == want {
        Ok(())
    } else {
        Err(format!(
            "user_events_status line of {name}: {got:?}, want {want:?}"
        ))
    }
}

/// How much slower than the reference machine this run is, as the C tests take it
/// (`rue_slowness()` in `selftests/rust_user_events/rue_helpers.h`, whose constants these are):
/// in the test VM, the one calibration of the run that `RUE_SLOWNESS` carries; elsewhere the
/// fastest of five rounds of 2,000 one-byte `write()`s to `/dev/null`, over the same on the
/// machine the bounds were written on, measured once per process. Never below 1.
pub fn slowness() -> f64 {
    static SLOWNESS: OnceLock<f64> = OnceLock::new();
    *SLOWNESS.get_or_init(|| {
        let given = std::env::var("RUE_SLOWNESS").ok();
        if let Some(s) = given
            .and_then(|s| s.parse::<f64>().ok())
            .filter(|s| *s >= 1.0)
        {
            return s;
        }
        const WRITES: usize = 2000;
        const ROUNDS: usize = 5;
        const REF_NS: u128 = 2_700_000;
        let Ok(mut null) = OpenOptions::new().write(true).open("/dev/null") else {
            return 1.0;
        };
        let best = (0..ROUNDS)
            .map(|_| {
                let start = Instant::now();
                for _ in 0..WRITES {
                    let _ = null.write(&[0]);
                }
                start.elapsed().as_nanos()
            })
            .min()
            .unwrap_or(0);
        if best > REF_NS {
            best as f64 / REF_NS as f64
        } else {
            1.0
        }
    })
}

/// Polls `cond` every millisecond until it holds; fails after `ms` milliseconds on the
/// reference machine, scaled to this run ([`slowness`]). For state the kernel changes
/// asynchronously (an event's deletion after its last close, an enable bit written by the
/// fault-in worker): a deadline, never a fixed sleep, decides.
pub fn wait_until(what: &str, ms: u64, mut cond: impl FnMut() -> bool) -> Result<(), String> {
    let ms = (ms as f64 * slowness()) as u64;
    let deadline = Instant::now() + Duration::from_millis(ms);
    loop {
        if cond() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(format!("{what}: not within {ms} ms"));
        }
        thread::sleep(Duration::from_millis(1));
    }
}

/// Waits for user event `name` to be deleted (upstream deletes an unused, unreferenced
/// event asynchronously after its last close).
pub fn wait_event_gone(name: &str) -> Result<(), String> {
    wait_until(&format!("event {name} deleted"), 5000, || {
        !event_exists(name)
    })
}
