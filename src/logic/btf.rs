// SPDX-License-Identifier: GPL-2.0

//! The kernel's own description of its types (BTF, the blob `/sys/kernel/btf/vmlinux` reads):
//! what a per-CPU variable is and where it lies in `.data..percpu`, as pahole recorded it from
//! the kernel's debug information when the kernel was linked. kallsyms, which the module resolves
//! its symbols through ([`crate::ksym`]), knows names and addresses only; this is the independent
//! check of what the objects are ([`crate::symbols`]). BTF's layout is the UAPI of
//! `include/uapi/linux/btf.h`, in the kernel's byte order.

/// `BTF_MAGIC`, as the kernel's byte order reads it.
const MAGIC: u16 = 0xeb9f;

/// The kinds of `include/uapi/linux/btf.h` (`BTF_KIND_*`), each stepped over by its size.
const KIND_INT: u32 = 1;
const KIND_PTR: u32 = 2;
const KIND_ARRAY: u32 = 3;
const KIND_STRUCT: u32 = 4;
const KIND_UNION: u32 = 5;
const KIND_ENUM: u32 = 6;
const KIND_FWD: u32 = 7;
const KIND_TYPEDEF: u32 = 8;
const KIND_VOLATILE: u32 = 9;
const KIND_CONST: u32 = 10;
const KIND_RESTRICT: u32 = 11;
const KIND_FUNC: u32 = 12;
const KIND_FUNC_PROTO: u32 = 13;
const KIND_VAR: u32 = 14;
const KIND_DATASEC: u32 = 15;
const KIND_FLOAT: u32 = 16;
const KIND_DECL_TAG: u32 = 17;
const KIND_TYPE_TAG: u32 = 18;
const KIND_ENUM64: u32 = 19;

/// The section of per-CPU variables, whose `DATASEC` gives each its offset and size.
const PER_CPU_SECTION: &[u8] = b".data..percpu";

/// Why a question could not be answered.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub(crate) enum Error {
    /// Not a BTF blob of this byte order, or its sections lie outside it.
    Header,
    /// A type of a kind this reader does not know how to step over (a newer BTF), by number.
    Kind(u32),
    /// A type or a name runs past the end of its section, or a type id is out of range.
    Truncated,
    /// No per-CPU variable of that name.
    NoVariable,
    /// The variable is not in `.data..percpu`.
    NotPerCpu,
}

/// What a variable's type is, once typedefs and qualifiers are stepped over.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub(crate) enum Shape<'a> {
    /// An integer type, by its C name (`int`, `_Bool`), and its size in bytes.
    Int {
        /// The type's name.
        name: &'a [u8],
        /// Its size in bytes.
        size: u32,
    },
    /// A pointer to a struct or union of this name.
    PointerTo(&'a [u8]),
    /// Anything else, by its BTF kind.
    Other(u32),
}

impl<'a> Shape<'a> {
    /// What kind of type this is, in words, for a message.
    pub(crate) fn kind_text(&self) -> &'static str {
        match self {
            Shape::Int { .. } => "the integer type",
            Shape::PointerTo(_) => "a pointer to",
            Shape::Other(_) => "a type of another kind",
        }
    }

    /// The name of the type, or of the struct pointed to (empty for another kind).
    pub(crate) fn name(&self) -> &'a [u8] {
        match self {
            Shape::Int { name, .. } | Shape::PointerTo(name) => name,
            Shape::Other(_) => b"",
        }
    }
}

/// A per-CPU variable: its offset and size in `.data..percpu`, and its type.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub(crate) struct Variable<'a> {
    /// The offset from the start of `.data..percpu`.
    pub(crate) offset: u32,
    /// The size in bytes.
    pub(crate) size: u32,
    /// The type.
    pub(crate) shape: Shape<'a>,
}

/// One type record: its header (`struct btf_type`) and what follows it.
#[derive(Clone, Copy)]
struct Type<'a> {
    name_off: u32,
    kind: u32,
    /// `size` for sized kinds, `type` for the kinds that refer to another.
    size_or_type: u32,
    /// The records that follow the header (a `DATASEC`'s `btf_var_secinfo`s).
    tail: &'a [u8],
}

/// A BTF blob whose header was checked.
pub(crate) struct Btf<'a> {
    types: &'a [u8],
    strings: &'a [u8],
}

/// The native-endian `u32` at `at` in `bytes`.
fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    let word = bytes.get(at..at.checked_add(4)?)?;
    Some(u32::from_ne_bytes([word[0], word[1], word[2], word[3]]))
}

impl<'a> Btf<'a> {
    /// Checks `blob`'s header (`struct btf_header`: magic, version 1, and the type and string
    /// sections inside the blob) and returns the reader.
    pub(crate) fn new(blob: &'a [u8]) -> Result<Self, Error> {
        let magic = blob.get(..2).ok_or(Error::Header)?;
        if u16::from_ne_bytes([magic[0], magic[1]]) != MAGIC || blob.get(2) != Some(&1) {
            return Err(Error::Header);
        }
        // CAST: `u32` fits `usize` on every target of the module (64 bits).
        let field = |at| u32_at(blob, at).map(|v| v as usize).ok_or(Error::Header);
        let (hdr_len, type_off, type_len) = (field(4)?, field(8)?, field(12)?);
        let (str_off, str_len) = (field(16)?, field(20)?);
        // A newer header may be longer; its sections are counted from its end.
        let body = blob
            .get(hdr_len..)
            .filter(|_| hdr_len >= 24)
            .ok_or(Error::Header)?;
        let section = |off: usize, len: usize| {
            body.get(off..off.checked_add(len).ok_or(Error::Header)?)
                .ok_or(Error::Header)
        };
        Ok(Self {
            types: section(type_off, type_len)?,
            strings: section(str_off, str_len)?,
        })
    }

    /// The name at `off` in the string section, without its NUL.
    fn name(&self, off: u32) -> Result<&'a [u8], Error> {
        // CAST: As in `new`.
        let rest = self.strings.get(off as usize..).ok_or(Error::Truncated)?;
        let end = rest.iter().position(|&b| b == 0).ok_or(Error::Truncated)?;
        Ok(&rest[..end])
    }

    /// Calls `visit` with each type and its id (from 1, in order) until it returns `true`.
    fn walk(&self, mut visit: impl FnMut(u32, Type<'a>) -> bool) -> Result<(), Error> {
        let mut at = 0;
        let mut id = 1;
        while at < self.types.len() {
            let word = |n: usize| u32_at(self.types, at + 4 * n).ok_or(Error::Truncated);
            let (name_off, info, size_or_type) = (word(0)?, word(1)?, word(2)?);
            let kind = (info >> 24) & 0x1f;
            // CAST: 16 bits.
            let vlen = (info & 0xffff) as usize;
            let tail_len = match kind {
                // A `u32` of encoding, offset and bits; a `btf_var`; a `btf_decl_tag`.
                KIND_INT | KIND_VAR | KIND_DECL_TAG => 4,
                // Nothing, or another type's id in the header.
                KIND_PTR | KIND_FWD | KIND_TYPEDEF | KIND_VOLATILE | KIND_CONST | KIND_RESTRICT
                | KIND_FUNC | KIND_FLOAT | KIND_TYPE_TAG => 0,
                // One `btf_array`.
                KIND_ARRAY => 12,
                // `btf_member`s, `btf_var_secinfo`s, `btf_enum64`s.
                KIND_STRUCT | KIND_UNION | KIND_DATASEC | KIND_ENUM64 => 12 * vlen,
                // `btf_enum`s, `btf_param`s.
                KIND_ENUM | KIND_FUNC_PROTO => 8 * vlen,
                other => return Err(Error::Kind(other)),
            };
            let start = at + 12;
            let end = start.checked_add(tail_len).ok_or(Error::Truncated)?;
            let tail = self.types.get(start..end).ok_or(Error::Truncated)?;
            let ty = Type {
                name_off,
                kind,
                size_or_type,
                tail,
            };
            if visit(id, ty) {
                return Ok(());
            }
            at = end;
            id += 1;
        }
        Ok(())
    }

    /// The type of id `id`.
    fn by_id(&self, id: u32) -> Result<Type<'a>, Error> {
        let mut found = None;
        self.walk(|at, ty| {
            if at == id {
                found = Some(ty);
            }
            at == id
        })?;
        found.ok_or(Error::Truncated)
    }

    /// The type `id` is, once typedefs and qualifiers are stepped over (at most 16 of them).
    fn resolved(&self, mut id: u32) -> Result<Type<'a>, Error> {
        for _ in 0..16 {
            let ty = self.by_id(id)?;
            match ty.kind {
                KIND_TYPEDEF | KIND_VOLATILE | KIND_CONST | KIND_RESTRICT | KIND_TYPE_TAG => {
                    id = ty.size_or_type
                }
                _ => return Ok(ty),
            }
        }
        Err(Error::Truncated)
    }

    /// What type `id` is.
    fn shape(&self, id: u32) -> Result<Shape<'a>, Error> {
        let ty = self.resolved(id)?;
        Ok(match ty.kind {
            KIND_INT => Shape::Int {
                name: self.name(ty.name_off)?,
                size: ty.size_or_type,
            },
            // `void *`.
            KIND_PTR if ty.size_or_type == 0 => Shape::Other(KIND_PTR),
            KIND_PTR => {
                let to = self.resolved(ty.size_or_type)?;
                match to.kind {
                    KIND_STRUCT | KIND_UNION | KIND_FWD => {
                        Shape::PointerTo(self.name(to.name_off)?)
                    }
                    _ => Shape::Other(KIND_PTR),
                }
            }
            other => Shape::Other(other),
        })
    }

    /// The per-CPU variable `name`: where `.data..percpu`'s `DATASEC` places it and what it is.
    pub(crate) fn per_cpu_variable(&self, name: &[u8]) -> Result<Variable<'a>, Error> {
        let mut variable = None;
        let mut section = None;
        let mut failed = None;
        self.walk(|id, ty| {
            if ty.kind != KIND_VAR && ty.kind != KIND_DATASEC {
                return false;
            }
            let have = match self.name(ty.name_off) {
                Ok(have) => have,
                Err(e) => {
                    failed = Some(e);
                    return true;
                }
            };
            if ty.kind == KIND_VAR && variable.is_none() && have == name {
                variable = Some((id, ty.size_or_type));
            } else if ty.kind == KIND_DATASEC && section.is_none() && have == PER_CPU_SECTION {
                section = Some(ty.tail);
            }
            variable.is_some() && section.is_some()
        })?;
        if let Some(e) = failed {
            return Err(e);
        }
        let (id, type_id) = variable.ok_or(Error::NoVariable)?;
        let entries = section.ok_or(Error::NotPerCpu)?;
        // `btf_var_secinfo`: the variable's type id, its offset and its size.
        let (offset, size) = entries
            .chunks_exact(12)
            .find(|entry| u32_at(entry, 0) == Some(id))
            .and_then(|entry| Some((u32_at(entry, 4)?, u32_at(entry, 8)?)))
            .ok_or(Error::NotPerCpu)?;
        Ok(Variable {
            offset,
            size,
            shape: self.shape(type_id)?,
        })
    }
}
