// SPDX-License-Identifier: GPL-2.0

//! Reading per-CPU variables out of a BTF blob laid out as pahole writes the kernel's.

use crate::logic::btf::{Btf, Error, Shape, Variable};
use std::vec::Vec;

/// A BTF blob under construction: its types, its strings, and the length of its header.
struct Blob {
    types: Vec<u8>,
    strings: Vec<u8>,
    hdr_len: u32,
}

impl Blob {
    fn new() -> Self {
        Self {
            types: Vec::new(),
            strings: std::vec![0],
            hdr_len: 24,
        }
    }

    fn name(&mut self, name: &[u8]) -> u32 {
        let off = self.strings.len() as u32;
        self.strings.extend_from_slice(name);
        self.strings.push(0);
        off
    }

    fn words(&mut self, words: &[u32]) {
        for w in words {
            self.types.extend_from_slice(&w.to_ne_bytes());
        }
    }

    /// A type header: name, kind, vlen and its size or type.
    fn ty(&mut self, name: &[u8], kind: u32, vlen: u32, size_or_type: u32) {
        let off = if name.is_empty() { 0 } else { self.name(name) };
        self.words(&[off, kind << 24 | vlen, size_or_type]);
    }

    fn bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&0xeb9fu16.to_ne_bytes());
        out.extend_from_slice(&[1, 0]);
        let tl = self.types.len() as u32;
        let sl = self.strings.len() as u32;
        for w in [self.hdr_len, 0, tl, tl, sl] {
            out.extend_from_slice(&w.to_ne_bytes());
        }
        out.resize(self.hdr_len as usize, 0);
        out.extend_from_slice(&self.types);
        out.extend_from_slice(&self.strings);
        out
    }
}

/// The shape of trace.c's three per-CPU variables, with a struct and a global between them.
fn kernel_like(hdr_len: u32) -> Vec<u8> {
    let mut b = Blob::new();
    b.hdr_len = hdr_len;
    b.ty(b"int", 1, 0, 4); // 1
    b.words(&[1 << 24 | 32]);
    b.ty(b"_Bool", 1, 0, 1); // 2
    b.words(&[4 << 24 | 8]);
    b.ty(b"ring_buffer_event", 4, 1, 8); // 3, one member
    b.words(&[0, 1, 0]);
    b.ty(b"", 2, 0, 3); // 4: struct ring_buffer_event *
    b.ty(b"bool", 8, 0, 2); // 5: typedef _Bool bool
    b.ty(b"", 10, 0, 5); // 6: const bool
    b.ty(b"trace_buffered_event", 14, 0, 4); // 7
    b.words(&[1]);
    b.ty(b"trace_buffered_event_cnt", 14, 0, 1); // 8
    b.words(&[1]);
    b.ty(b"trace_taskinfo_save", 14, 0, 6); // 9
    b.words(&[1]);
    b.ty(b"jiffies", 14, 0, 1); // 10, not per-CPU
    b.words(&[1]);
    b.ty(b"f", 13, 2, 0); // 11: a prototype with two parameters
    b.words(&[0, 1, 0, 2]);
    b.ty(b".data", 15, 1, 64); // 12
    b.words(&[10, 0, 4]);
    b.ty(b".data..percpu", 15, 3, 4096); // 13
    b.words(&[9, 0x100, 1, 7, 0x2a8, 8, 8, 0x2b0, 4]);
    b.bytes()
}

#[test]
fn a_pointer_variable_is_found_with_its_offset_and_pointee() {
    let blob = kernel_like(24);
    let btf = Btf::new(&blob).unwrap();
    assert_eq!(
        btf.per_cpu_variable(b"trace_buffered_event"),
        Ok(Variable {
            offset: 0x2a8,
            size: 8,
            shape: Shape::PointerTo(b"ring_buffer_event")
        })
    );
}

#[test]
fn integers_are_named_through_typedefs_and_qualifiers() {
    let blob = kernel_like(24);
    let btf = Btf::new(&blob).unwrap();
    assert_eq!(
        btf.per_cpu_variable(b"trace_buffered_event_cnt"),
        Ok(Variable {
            offset: 0x2b0,
            size: 4,
            shape: Shape::Int {
                name: b"int",
                size: 4
            }
        })
    );
    assert_eq!(
        btf.per_cpu_variable(b"trace_taskinfo_save"),
        Ok(Variable {
            offset: 0x100,
            size: 1,
            shape: Shape::Int {
                name: b"_Bool",
                size: 1
            }
        })
    );
}

#[test]
fn a_longer_header_is_stepped_over() {
    let blob = kernel_like(32);
    let btf = Btf::new(&blob).unwrap();
    assert_eq!(
        btf.per_cpu_variable(b"trace_taskinfo_save")
            .map(|v| v.offset),
        Ok(0x100)
    );
}

#[test]
fn a_missing_or_global_variable_is_not_per_cpu() {
    let blob = kernel_like(24);
    let btf = Btf::new(&blob).unwrap();
    assert_eq!(
        btf.per_cpu_variable(b"trace_buffered"),
        Err(Error::NoVariable)
    );
    assert_eq!(btf.per_cpu_variable(b"jiffies"), Err(Error::NotPerCpu));
    // A name is matched whole: the struct's name is not a variable's.
    assert_eq!(
        btf.per_cpu_variable(b"ring_buffer_event"),
        Err(Error::NoVariable)
    );
}

#[test]
fn a_bad_header_is_refused() {
    let blob = kernel_like(24);
    let mut bad = blob.clone();
    bad[0] ^= 0xff;
    assert!(Btf::new(&bad).is_err());
    let mut bad = blob.clone();
    bad[2] = 2; // version
    assert!(Btf::new(&bad).is_err());
    // Sections past the end of the blob.
    assert!(Btf::new(&blob[..blob.len() - 1]).is_err());
    assert!(Btf::new(&blob[..10]).is_err());
    assert!(Btf::new(&[]).is_err());
}

#[test]
fn an_unknown_kind_stops_the_walk_before_the_variable() {
    let mut b = Blob::new();
    b.ty(b"x", 30, 0, 0);
    b.ty(b"trace_taskinfo_save", 14, 0, 1);
    b.words(&[1]);
    let blob = b.bytes();
    let btf = Btf::new(&blob).unwrap();
    assert_eq!(
        btf.per_cpu_variable(b"trace_taskinfo_save"),
        Err(Error::Kind(30))
    );
}

#[test]
fn a_truncated_type_or_name_is_an_error_not_a_panic() {
    let mut b = Blob::new();
    b.ty(b"s", 4, 1000, 8); // 1,000 members, none there
    let blob = b.bytes();
    let btf = Btf::new(&blob).unwrap();
    assert_eq!(btf.per_cpu_variable(b"s"), Err(Error::Truncated));
    let mut b = Blob::new();
    b.words(&[9999, 14 << 24, 1, 1]); // a name past the strings
    let blob = b.bytes();
    let btf = Btf::new(&blob).unwrap();
    assert_eq!(btf.per_cpu_variable(b"x"), Err(Error::Truncated));
}

#[test]
fn every_prefix_of_a_blob_reads_without_panicking() {
    let blob = kernel_like(24);
    for len in 0..blob.len() {
        if let Ok(btf) = Btf::new(&blob[..len]) {
            let _ = btf.per_cpu_variable(b"trace_buffered_event");
        }
    }
    // And every single-byte change of its types.
    for at in 24..blob.len() {
        let mut changed = blob.clone();
        changed[at] = changed[at].wrapping_add(0x41);
        if let Ok(btf) = Btf::new(&changed) {
            let _ = btf.per_cpu_variable(b"trace_buffered_event");
        }
    }
}
