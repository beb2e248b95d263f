// SPDX-License-Identifier: GPL-2.0

//! ftrace's binary records, as trace-cmd reads them: the sub-buffer pages of each CPU's
//! `per_cpu/cpuN/trace_pipe_raw` (read and consumed), split into records by the ring buffer's
//! event headers (`events/header_page`, `events/header_event`). A record's data is the trace
//! event's bytes: the common fields (`common_type` first), then the user event's payload,
//! rounded up to 4 bytes by the ring buffer.

use crate::tracefs::{read_once, TRACEFS};
use std::{
    fs::{self, OpenOptions},
    io::{ErrorKind, Read},
    os::unix::fs::OpenOptionsExt,
};

/// Where a sub-buffer page keeps its commit count and its data (`events/header_page`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageLayout {
    /// Offset and size of `commit`: the bytes of data, with the missed-events flags on top.
    pub commit: (usize, usize),
    /// Offset and size of `data`: the records.
    pub data: (usize, usize),
}

/// The ring buffer's `commit` flags (`RB_MISSED_EVENTS`, `RB_MISSED_STORED`), not part of the length.
const COMMIT_LEN_MASK: u64 = (1 << 30) - 1;
/// Event header `type_len` values that are not data (`ring_buffer.c`).
const TYPE_PADDING: u32 = 29;
const TYPE_TIME_EXTEND: u32 = 30;
const TYPE_TIME_STAMP: u32 = 31;

impl PageLayout {
    /// Parses the text of `events/header_page`, whose lines look like
    /// `field: local_t commit;<TAB>offset:8;<TAB>size:8;<TAB>signed:1;`.
    pub fn parse(header_page: &str) -> Result<Self, String> {
        let mut commit = None;
        let mut data = None;
        for line in header_page.lines() {
            let mut name = None;
            let mut offset = None;
            let mut size = None;
            for part in line.split(';').map(str::trim) {
                if let Some(decl) = part.strip_prefix("field:") {
                    name = decl.split_whitespace().last();
                } else if let Some(v) = part.strip_prefix("offset:") {
                    offset = v.parse::<usize>().ok();
                } else if let Some(v) = part.strip_prefix("size:") {
                    size = v.parse::<usize>().ok();
                }
            }
            match (name, offset, size) {
                (Some("commit"), Some(o), Some(s)) => commit = Some((o, s)),
                (Some("data"), Some(o), Some(s)) => data = Some((o, s)),
                _ => {}
            }
        }
        match (commit, data) {
            (Some(commit), Some(data)) if commit.1 == 4 || commit.1 == 8 => {
                Ok(Self { commit, data })
            }
            _ => Err(format!(
                "header_page without commit and data fields: {header_page:?}"
            )),
        }
    }

    /// Bytes of one sub-buffer page.
    pub fn page_size(&self) -> usize {
        self.data.0 + self.data.1
    }
}

fn u32_at(bytes: &[u8], pos: usize) -> Result<u32, String> {
    bytes
        .get(pos..pos + 4)
        .map(|b| u32::from_le_bytes(b.try_into().unwrap()))
        .ok_or_else(|| {
            format!(
                "record header at {pos} past the page's data ({} bytes)",
                bytes.len()
            )
        })
}

/// Appends the data of every record in one page read from `trace_pipe_raw` to `out`.
pub fn parse_page(layout: &PageLayout, page: &[u8], out: &mut Vec<Vec<u8>>) -> Result<(), String> {
    let (co, cs) = layout.commit;
    let raw = page
        .get(co..co + cs)
        .ok_or("page shorter than its header")?;
    let commit = if cs == 8 {
        u64::from_le_bytes(raw.try_into().unwrap())
    } else {
        u32::from_le_bytes(raw.try_into().unwrap()) as u64
    };
    let len = (commit & COMMIT_LEN_MASK) as usize;
    let data = page
        .get(layout.data.0..layout.data.0 + len)
        .ok_or_else(|| format!("commit {len} past the page ({} bytes)", page.len()))?;
    let mut pos = 0;
    while pos + 4 <= data.len() {
        let header = u32_at(data, pos)?;
        let (type_len, time_delta) = (header & 0x1f, header >> 5);
        let (start, size) = match type_len {
            TYPE_PADDING if time_delta == 0 => break, // the rest of the page is unused
            TYPE_PADDING => {
                pos += 4 + u32_at(data, pos + 4)? as usize;
                continue;
            }
            TYPE_TIME_EXTEND | TYPE_TIME_STAMP => {
                pos += 8;
                continue;
            }
            // The length, which counts itself, in the first word; the data after it.
            0 => {
                let len = u32_at(data, pos + 4)? as usize;
                let size = len
                    .checked_sub(4)
                    .ok_or_else(|| format!("record at {pos}: length {len}"))?;
                (pos + 8, size)
            }
            n => (pos + 4, 4 * n as usize),
        };
        let record = data.get(start..start + size).ok_or_else(|| {
            format!(
                "record at {pos} ({size} bytes) past the page's data ({} bytes)",
                data.len()
            )
        })?;
        out.push(record.to_vec());
        pos = start + size;
    }
    Ok(())
}

/// Reads (consumes) every CPU's `trace_pipe_raw` of the top-level buffer until it is empty
/// and returns the records' data.
pub fn drain() -> Result<Vec<Vec<u8>>, String> {
    let layout = PageLayout::parse(&read_once(&format!("{TRACEFS}/events/header_page"))?)?;
    let dir = format!("{TRACEFS}/per_cpu");
    let mut records = Vec::new();
    for entry in fs::read_dir(&dir).map_err(|e| format!("{dir}: {e}"))? {
        let entry = entry.map_err(|e| format!("{dir}: {e}"))?;
        if !entry.file_name().to_string_lossy().starts_with("cpu") {
            continue;
        }
        let path = entry.path().join("trace_pipe_raw");
        let mut file = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        let mut page = vec![0u8; layout.page_size()];
        loop {
            match file.read(&mut page) {
                Ok(0) => break,
                Ok(n) => parse_page(&layout, &page[..n], &mut records)?,
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) => return Err(format!("{}: {e}", path.display())),
            }
        }
    }
    Ok(records)
}

/// The records of trace event `id` in every CPU's buffer (consumed).
pub fn records_of(id: u16) -> Result<Vec<Vec<u8>>, String> {
    Ok(drain()?
        .into_iter()
        .filter(|r| r.len() >= 2 && u16::from_le_bytes([r[0], r[1]]) == id)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER_PAGE: &str = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\
        \tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\
        \tfield: char overwrite;\toffset:8;\tsize:1;\tsigned:0;\n\
        \tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";

    fn layout() -> PageLayout {
        PageLayout::parse(HEADER_PAGE).unwrap()
    }

    fn header(type_len: u32, delta: u32) -> [u8; 4] {
        (type_len | delta << 5).to_le_bytes()
    }

    #[test]
    fn header_page_of_x86_64() {
        assert_eq!(
            layout(),
            PageLayout {
                commit: (8, 8),
                data: (16, 4080)
            }
        );
        assert_eq!(layout().page_size(), 4096);
        assert!(
            PageLayout::parse("\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n").is_err()
        );
    }

    #[test]
    fn page_with_small_big_extended_and_padding_records() {
        let mut data = Vec::new();
        data.extend_from_slice(&header(3, 7)); // 12 bytes inline
        data.extend((1..=12).map(|b| b as u8));
        data.extend_from_slice(&header(TYPE_TIME_EXTEND, 5));
        data.extend_from_slice(&[0; 4]);
        data.extend_from_slice(&header(0, 1)); // 120 bytes, length word first
        data.extend_from_slice(&124u32.to_le_bytes());
        data.extend_from_slice(&[0xab; 120]);
        data.extend_from_slice(&header(TYPE_PADDING, 1)); // discarded record
        data.extend_from_slice(&8u32.to_le_bytes());
        data.extend_from_slice(&[0; 4]);
        data.extend_from_slice(&header(1, 2));
        data.extend_from_slice(&[9, 9, 9, 9]);
        let mut page = vec![0u8; 4096];
        // Missed events flagged on top of the length.
        page[8..16].copy_from_slice(&((1u64 << 31) | data.len() as u64).to_le_bytes());
        page[16..16 + data.len()].copy_from_slice(&data);
        let mut out = Vec::new();
        parse_page(&layout(), &page, &mut out).unwrap();
        assert_eq!(out.len(), 3);
        assert_eq!(out[0], (1..=12).collect::<Vec<u8>>());
        assert_eq!(out[1], vec![0xab; 120]);
        assert_eq!(out[2], vec![9; 4]);
    }

    #[test]
    fn null_padding_ends_the_page() {
        let mut page = vec![0u8; 64];
        page[8..16].copy_from_slice(&16u64.to_le_bytes());
        page[16..20].copy_from_slice(&header(TYPE_PADDING, 0));
        page[20..24].copy_from_slice(&header(1, 0));
        let mut out = Vec::new();
        parse_page(
            &PageLayout {
                commit: (8, 8),
                data: (16, 48),
            },
            &page,
            &mut out,
        )
        .unwrap();
        assert!(out.is_empty());
    }

    #[test]
    fn record_past_commit_is_an_error() {
        let mut page = vec![0u8; 64];
        page[8..16].copy_from_slice(&8u64.to_le_bytes());
        page[16..20].copy_from_slice(&header(2, 0)); // 8 bytes of data, 4 committed
        let mut out = Vec::new();
        assert!(parse_page(
            &PageLayout {
                commit: (8, 8),
                data: (16, 48)
            },
            &page,
            &mut out
        )
        .is_err());
    }
}
