// SPDX-License-Identifier: GPL-2.0

//! What kallsyms says of an address, as `sprint_symbol()` prints it (`name+0xoff/0xsize`, and
//! ` [module]` after a module's symbol), and whether that fits an object of a known type: the
//! load-time check of every data symbol the module resolves ([`crate::symbols`]).

/// A symbol and where an address lies in it.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Located<'a> {
    /// The symbol's name.
    pub(crate) name: &'a [u8],
    /// The address's offset from the symbol.
    pub(crate) offset: u64,
    /// The symbol's size: how far the next symbol is.
    pub(crate) size: u64,
    /// The module the symbol is in, if it is not the kernel's own.
    pub(crate) module: Option<&'a [u8]>,
}

/// Parses `sprint_symbol()`'s text; `None` for anything else (a bare address: kallsyms does not
/// know it).
pub(crate) fn parse(text: &[u8]) -> Option<Located<'_>> {
    let (symbol, module) = match text.iter().position(|&b| b == b' ') {
        Some(space) => {
            let rest = text[space + 1..].strip_prefix(b"[")?.strip_suffix(b"]")?;
            // A module's build id may follow its name.
            let name = rest.split(|&b| b == b' ').next()?;
            (&text[..space], Some(name))
        }
        None => (text, None),
    };
    let plus = symbol.iter().rposition(|&b| b == b'+')?;
    let slash = symbol[plus..].iter().position(|&b| b == b'/')? + plus;
    let name = &symbol[..plus];
    if name.is_empty() {
        return None;
    }
    Some(Located {
        name,
        offset: hex(&symbol[plus + 1..slash])?,
        size: hex(&symbol[slash + 1..])?,
        module,
    })
}

/// A `0x`-prefixed hexadecimal number.
fn hex(text: &[u8]) -> Option<u64> {
    let digits = text.strip_prefix(b"0x")?;
    if digits.is_empty() || digits.len() > 16 {
        return None;
    }
    digits.iter().try_fold(0u64, |n, &b| {
        let d = (b as char).to_digit(16)?;
        Some(n << 4 | u64::from(d))
    })
}

/// True if `located` is the kernel's own symbol `name`, starts at the address looked up, and
/// has room for an object of `size` bytes: a different symbol, or the same one of a smaller
/// type, fails. There is no upper bound: the distance to the next symbol also spans alignment,
/// KASAN's redzones and data without a symbol of its own (on Debian's amd64 kernel, 1,056 bytes
/// follow the 16-byte `dyn_event_ops_list`).
pub(crate) fn fits(located: &Located<'_>, name: &[u8], size: u64) -> bool {
    located.name == name && located.module.is_none() && located.offset == 0 && located.size >= size
}
