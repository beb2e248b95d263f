// SPDX-License-Identifier: GPL-2.0

//! Decoding recorded user events as their consumers do, with Microsoft's `tracepoint_decode`
//! (the decoder behind `perf-decode`): the event's tracefs `format` file gives the field
//! offsets, and an EventHeader event (first field `eventheader_flags`) is enumerated from its
//! payload: provider, event name, level, keyword, header fields, extensions and typed fields.

use crate::tracefs::event_format;
use tracepoint_decode::{
    EventHeaderEnumeratorContext, EventHeaderEnumeratorState, PerfByteReader,
    PerfEventDecodingStyle, PerfEventFormat, PerfFieldArray, PerfFieldFormat,
};

/// A user event's parsed `format` file.
pub struct Format(PerfEventFormat);

impl Format {
    /// Parses `format` of user event `name` (system `user_events`, 64-bit `long`).
    pub fn of(name: &str) -> Result<Self, String> {
        Self::parse(&event_format(name)?)
    }

    /// Parses the text of a `format` file.
    pub fn parse(text: &str) -> Result<Self, String> {
        PerfEventFormat::parse(true, "user_events", text)
            .map(Self)
            .ok_or_else(|| format!("tracepoint_decode cannot parse the format file {text:?}"))
    }

    /// The event's name in its `name:` line.
    pub fn name(&self) -> &str {
        self.0.name()
    }

    /// True if decoders take the event for EventHeader (first user field `eventheader_flags`).
    pub fn is_eventheader(&self) -> bool {
        self.0.decoding_style() == PerfEventDecodingStyle::EventHeader
    }

    /// The user fields (after the common ones) as `(name, offset, size)`.
    pub fn user_fields(&self) -> Vec<(String, u16, u16)> {
        self.0.fields()[self.0.common_field_count()..]
            .iter()
            .map(|f| (f.name().to_owned(), f.offset(), f.size()))
            .collect()
    }

    fn field(&self, name: &str) -> Result<&PerfFieldFormat, String> {
        self.0
            .fields()
            .iter()
            .find(|f| f.name() == name)
            .ok_or_else(|| format!("{}: no field {name} in the format file", self.0.name()))
    }

    /// The bytes of field `name` of a record (the trace event's bytes, common fields first).
    /// A 4-byte `__rel_loc` is `(size << 16) | offset` from the end of the field, which this
    /// resolves itself: `tracepoint_decode` 0.5.0's `get_field_bytes` leaves the field's end out
    /// for 4-byte `__rel_loc` fields (it tests for `RelLoc2` in the 4-byte branch).
    pub fn bytes<'a>(&self, record: &'a [u8], name: &str) -> Result<&'a [u8], String> {
        let f = self.field(name)?;
        let (start, end) = (f.offset() as usize, f.offset() as usize + f.size() as usize);
        let raw = record.get(start..end).ok_or_else(|| {
            format!(
                "field {name} at {start}..{end} past a {}-byte record",
                record.len()
            )
        })?;
        if f.array() != PerfFieldArray::RelLoc4 {
            return f
                .get_field_bytes(record, PerfByteReader::new(false))
                .ok_or_else(|| format!("field {name} out of a {}-byte record", record.len()));
        }
        let loc = u32::from_le_bytes(raw.try_into().unwrap());
        let (off, len) = (end + (loc & 0xffff) as usize, (loc >> 16) as usize);
        record.get(off..off + len).ok_or_else(|| {
            format!(
                "__rel_loc {name} ({len} bytes at {off}) past a {}-byte record",
                record.len()
            )
        })
    }

    /// Field `name` as an unsigned integer of its size (1, 2, 4 or 8 bytes, little-endian).
    pub fn uint(&self, record: &[u8], name: &str) -> Result<u64, String> {
        let b = self.bytes(record, name)?;
        match b.len() {
            1 | 2 | 4 | 8 => Ok(b.iter().rev().fold(0u64, |v, &x| v << 8 | x as u64)),
            n => Err(format!("field {name}: {n} bytes is not an integer")),
        }
    }

    /// The record's payload: what follows the common fields.
    pub fn user_data<'a>(&self, record: &'a [u8]) -> Result<&'a [u8], String> {
        record
            .get(self.0.common_fields_size() as usize..)
            .ok_or_else(|| {
                format!(
                    "{}-byte record shorter than the common fields",
                    record.len()
                )
            })
    }

    /// Decodes an EventHeader record.
    pub fn eventheader(&self, record: &[u8]) -> Result<EventHeaderEvent, String> {
        if !self.is_eventheader() {
            return Err(format!("{} is not an EventHeader event", self.name()));
        }
        decode_eventheader(self.name(), self.user_data(record)?)
    }
}

/// An EventHeader event as `tracepoint_decode` enumerates it.
#[derive(Debug, Default)]
pub struct EventHeaderEvent {
    /// Provider name, from the tracepoint name (`Provider_L<level>K<keyword><options>`).
    pub provider: String,
    /// Event name, from the metadata.
    pub name: String,
    /// Level: from the header (checked against the tracepoint name by the decoder).
    pub level: u8,
    /// Keyword, from the tracepoint name.
    pub keyword: u64,
    /// Header fields.
    pub opcode: u8,
    pub id: u16,
    pub version: u8,
    pub tag: u16,
    /// The activity id extension, if any.
    pub activity_id: Option<[u8; 16]>,
    /// The related activity id, if any.
    pub related_id: Option<[u8; 16]>,
    /// Every field in order, named by its path (`PartB.body`); arrays as `[a,b,c]`.
    pub fields: Vec<(String, String)>,
}

impl EventHeaderEvent {
    /// The value of field `path`, if the event has exactly one such field.
    pub fn field(&self, path: &str) -> Result<&str, String> {
        let mut found = self.fields.iter().filter(|(p, _)| p == path);
        match (found.next(), found.next()) {
            (Some((_, v)), None) => Ok(v),
            (None, _) => Err(format!(
                "event {}: no field {path} in {:?}",
                self.name, self.fields
            )),
            _ => Err(format!(
                "event {}: two fields {path} in {:?}",
                self.name, self.fields
            )),
        }
    }

    /// Checks that field `path` holds `want`.
    pub fn expect(&self, path: &str, want: &str) -> Result<(), String> {
        let got = self.field(path)?;
        if got == want {
            Ok(())
        } else {
            Err(format!(
                "event {}: field {path} is {got:?}, want {want:?}",
                self.name
            ))
        }
    }
}

/// Enumerates the payload of tracepoint `tracepoint` (its bytes after the common fields).
pub fn decode_eventheader(tracepoint: &str, data: &[u8]) -> Result<EventHeaderEvent, String> {
    let mut ctx = EventHeaderEnumeratorContext::new();
    let mut e = ctx
        .enumerate_with_name_and_data(
            tracepoint,
            data,
            EventHeaderEnumeratorContext::MOVE_NEXT_LIMIT_DEFAULT,
        )
        .map_err(|err| format!("{tracepoint}: not a valid EventHeader event: {err}"))?;
    let info = e.event_info();
    let header = info.header();
    let mut event = EventHeaderEvent {
        provider: info.provider_name().to_owned(),
        name: info.name_display().to_string(),
        level: header.level.as_int(),
        keyword: info.keyword(),
        opcode: header.opcode.as_int(),
        id: header.id,
        version: header.version,
        tag: header.tag,
        activity_id: info.activity_id().copied(),
        related_id: info.related_activity_id().copied(),
        fields: Vec::new(),
    };
    // Struct names on the way down; an array's elements while in one.
    let mut path: Vec<String> = Vec::new();
    let mut array: Option<(String, Vec<String>)> = None;
    let full = |path: &[String], name: String| {
        path.iter()
            .cloned()
            .chain(std::iter::once(name))
            .collect::<Vec<_>>()
            .join(".")
    };
    while e.move_next() {
        match e.state() {
            EventHeaderEnumeratorState::Value => {
                let item = e.item_info();
                let value = item.value().display().to_string();
                match &mut array {
                    Some((_, elements)) => elements.push(value),
                    None => event
                        .fields
                        .push((full(&path, item.name_display().to_string()), value)),
                }
            }
            EventHeaderEnumeratorState::ArrayBegin => {
                array = Some((
                    full(&path, e.item_info().name_display().to_string()),
                    Vec::new(),
                ));
            }
            EventHeaderEnumeratorState::ArrayEnd => {
                let (name, elements) = array.take().ok_or("array end outside an array")?;
                event
                    .fields
                    .push((name, format!("[{}]", elements.join(","))));
            }
            EventHeaderEnumeratorState::StructBegin => {
                path.push(e.item_info().name_display().to_string())
            }
            EventHeaderEnumeratorState::StructEnd => {
                path.pop();
            }
            s => return Err(format!("{tracepoint}: unexpected enumerator state {s}")),
        }
    }
    if e.state() != EventHeaderEnumeratorState::AfterLastItem {
        return Err(format!(
            "{tracepoint}: decoding stopped in state {}: {}",
            e.state(),
            e.last_error()
        ));
    }
    Ok(event)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The format file of .NET's EventPipe event, as upstream prints it.
    const EVENTPIPE_FORMAT: &str = "name: rue_eventpipe\nID: 1234\nformat:\n\
        \tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
        \tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
        \tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
        \tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\
        \tfield:u8 version;\toffset:8;\tsize:1;\tsigned:0;\n\
        \tfield:u16 event_id;\toffset:9;\tsize:2;\tsigned:0;\n\
        \tfield:__rel_loc u8[] extension;\toffset:11;\tsize:4;\tsigned:0;\n\
        \tfield:__rel_loc u8[] payload;\toffset:15;\tsize:4;\tsigned:0;\n\n\
        print fmt: \"version=%u event_id=%u\", REC->version, REC->event_id\n";

    /// A record: common fields, version 1, event_id 42, a 3-byte extension, a 2-byte payload.
    fn record() -> Vec<u8> {
        let mut r = vec![0xd2, 0x04, 0, 0, 7, 0, 0, 0, 1, 42, 0];
        r.extend_from_slice(&(3u32 << 16 | 4).to_le_bytes()); // after the payload's loc
        r.extend_from_slice(&(2u32 << 16 | 3).to_le_bytes()); // after the extension
        r.extend_from_slice(&[0xe1, 0xe2, 0xe3, 0xa1, 0xa2, 0, 0, 0]); // and padding
        r
    }

    #[test]
    fn fields_of_the_eventpipe_format() {
        let f = Format::parse(EVENTPIPE_FORMAT).unwrap();
        assert_eq!(f.name(), "rue_eventpipe");
        assert!(!f.is_eventheader());
        let fields = f.user_fields();
        let names: Vec<_> = fields
            .iter()
            .map(|(n, o, s)| (n.as_str(), *o, *s))
            .collect();
        assert_eq!(
            names,
            [
                ("version", 8, 1),
                ("event_id", 9, 2),
                ("extension", 11, 4),
                ("payload", 15, 4)
            ]
        );
        let r = record();
        assert_eq!(f.uint(&r, "common_type").unwrap(), 1234);
        assert_eq!(f.uint(&r, "common_pid").unwrap(), 7);
        assert_eq!(f.uint(&r, "version").unwrap(), 1);
        assert_eq!(f.uint(&r, "event_id").unwrap(), 42);
        assert_eq!(f.bytes(&r, "extension").unwrap(), [0xe1, 0xe2, 0xe3]);
        assert_eq!(f.bytes(&r, "payload").unwrap(), [0xa1, 0xa2]);
        assert!(f.bytes(&r[..20], "payload").is_err());
        assert!(f.bytes(&r, "nothing").is_err());
    }

    /// Why `Format::bytes` resolves 4-byte `__rel_loc` fields itself: the pinned
    /// `tracepoint_decode` leaves the field's end out. When this fails, a newer version
    /// fixed it and `bytes` can use `get_field_bytes` for every field.
    #[test]
    fn tracepoint_decode_0_5_0_misplaces_4_byte_rel_loc() {
        let f = Format::parse(EVENTPIPE_FORMAT).unwrap();
        let r = record();
        let payload = f.field("payload").unwrap();
        let theirs = payload
            .get_field_bytes(&r, PerfByteReader::new(false))
            .unwrap();
        assert_eq!(theirs, &r[3..5]);
        assert_ne!(theirs, f.bytes(&r, "payload").unwrap());
    }

    #[test]
    fn eventheader_format_is_recognised() {
        let text = "name: P_L4K1\nID: 99\nformat:\n\
            \tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
            \tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
            \tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
            \tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\
            \tfield:u8 eventheader_flags;\toffset:8;\tsize:1;\tsigned:0;\n\
            \tfield:u8 version;\toffset:9;\tsize:1;\tsigned:0;\n\
            \tfield:u16 id;\toffset:10;\tsize:2;\tsigned:0;\n\
            \tfield:u16 tag;\toffset:12;\tsize:2;\tsigned:0;\n\
            \tfield:u8 opcode;\toffset:14;\tsize:1;\tsigned:0;\n\
            \tfield:u8 level;\toffset:15;\tsize:1;\tsigned:0;\n\n\
            print fmt: \"\"\n";
        assert!(Format::parse(text).unwrap().is_eventheader());
        // Not a valid event: too short for the 8-byte header.
        assert!(decode_eventheader("P_L4K1", &[7, 0, 0]).is_err());
    }
}
