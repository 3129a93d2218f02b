//! A reader of bincode's standard wire format (the one `format::bincode_config`
//! writes) for the web layout's shards and binary manifest, without serde.
//!
//! It exists for the browser's search module, which downloads before any
//! result: decoding the shards through serde's visitors and bincode's serde
//! deserializer was about a fifth of that module (measured with `twiggy`:
//! about 146 KB of 946 KB of named code). This reader is straight-line code
//! per type instead: with it the module went from 228,210 to 216,816 bytes
//! gzipped (`gzip -9`), and to 193,321 once the single vectors shard was
//! read here too ([`crate::hnsw`]). The shards are still *written* by bincode through serde
//! (natively, where size does not matter), so the bytes on the wire do not
//! change; the web tests decode every shard kind of the fixture site here and
//! re-encode it with bincode to the same bytes.
//!
//! Like [`crate::bounded`], it never allocates for a length the input does
//! not hold: a sequence or map may announce at most as many elements as
//! bytes are left, since every element takes at least one byte, and a
//! sequence reserves ahead at most as much memory as bytes are left, so
//! what decoding allocates is bounded by the input (checked by `cargo xtask
//! fuzz`).
//!
//! Encoding (bincode 2, `config::standard()`): `u8`, `i8` and `bool` are one
//! byte; other integers are varints (below 251 one byte, else a tag 251,
//! 252 or 253 and 2, 4 or 8 little-endian bytes), signed ones zigzagged;
//! floats are little-endian; a string or sequence is its length then its
//! elements; an array is its elements; an `Option` a byte 0 or 1 then the
//! value; an enum its variant's index (a `u32`) then its fields; a struct
//! its fields in order.

use std::collections::BTreeMap;
use std::fmt;

/// Why bytes are not a value of the type asked for, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireError {
    /// Byte offset in the payload where decoding failed.
    pub offset: usize,
    /// What was wrong.
    pub message: String,
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at byte {}", self.message, self.offset)
    }
}

/// The payload being decoded, how far, and the first error.
///
/// Errors are sticky: after the first, every read returns a placeholder
/// (zero, empty, the first variant) without reading, and
/// [`Reader::decode_all`] reports that first error. A struct's reader is then
/// one call per field with no branch and no clean-up path, which keeps this
/// code small in the browser's module.
pub struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
    error: Option<WireError>,
}

impl<'a> Reader<'a> {
    /// Decode a `T` that must use every byte.
    pub fn decode_all<T: Wire>(bytes: &'a [u8]) -> Result<T, WireError> {
        let mut r = Reader {
            bytes,
            pos: 0,
            error: None,
        };
        let value = T::read(&mut r);
        if r.error.is_none() && r.pos < bytes.len() {
            r.fail(format!("{} bytes left after decoding", bytes.len() - r.pos));
        }
        match r.error {
            Some(e) => Err(e),
            None => Ok(value),
        }
    }

    /// Bytes not read yet.
    pub fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    /// Whether a read has failed.
    pub fn failed(&self) -> bool {
        self.error.is_some()
    }

    /// Record an error at the current position (the first one stays).
    #[cold]
    #[inline(never)]
    pub fn fail(&mut self, message: String) {
        if self.error.is_none() {
            self.error = Some(WireError {
                offset: self.pos,
                message,
            });
        }
    }

    /// The next `n` bytes (empty after an error).
    #[inline(never)]
    pub fn take(&mut self, n: usize) -> &'a [u8] {
        let left = self.bytes.len() - self.pos;
        if self.failed() {
            return &[];
        }
        if n > left {
            self.fail(format!("{n} bytes needed, {left} left"));
            return &[];
        }
        let out = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        out
    }

    fn array<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0u8; N];
        let bytes = self.take(N);
        if bytes.len() == N {
            out.copy_from_slice(bytes);
        }
        out
    }

    #[inline(never)]
    fn byte(&mut self) -> u8 {
        self.take(1).first().copied().unwrap_or(0)
    }

    /// A varint of at most `max_tag` (251: 16 bits, 252: 32, 253: 64).
    #[inline(never)]
    fn varint(&mut self, max_tag: u8) -> u64 {
        let tag = self.byte();
        match tag {
            0..=250 => u64::from(tag),
            251 if max_tag >= 251 => u64::from(u16::from_le_bytes(self.array())),
            252 if max_tag >= 252 => u64::from(u32::from_le_bytes(self.array())),
            253 if max_tag >= 253 => u64::from_le_bytes(self.array()),
            _ => {
                self.fail(format!("integer tag {tag} out of range"));
                0
            }
        }
    }

    /// A sequence's or map's length, at most the bytes left (every element
    /// takes at least one); 0 after an error.
    #[inline(never)]
    pub fn seq_len(&mut self) -> usize {
        let n = self.varint(253);
        let left = self.bytes.len() - self.pos;
        if n > left as u64 {
            self.fail(format!("{n} elements announced, {left} bytes left"));
            return 0;
        }
        n as usize
    }

    /// An enum's variant index.
    pub fn variant(&mut self) -> u32 {
        u32::read(self)
    }
}

/// A value read from bincode's standard wire format.
pub trait Wire: Sized {
    /// Read one value; after an error (recorded in `r`), a placeholder.
    fn read(r: &mut Reader<'_>) -> Self;
}

impl Wire for u8 {
    fn read(r: &mut Reader<'_>) -> Self {
        r.byte()
    }
}

impl Wire for i8 {
    fn read(r: &mut Reader<'_>) -> Self {
        r.byte() as i8
    }
}

impl Wire for bool {
    fn read(r: &mut Reader<'_>) -> Self {
        match r.byte() {
            0 => false,
            1 => true,
            b => {
                r.fail(format!("invalid bool {b}"));
                false
            }
        }
    }
}

macro_rules! unsigned {
    ($($t:ty: $tag:expr),*) => {$(
        impl Wire for $t {
            fn read(r: &mut Reader<'_>) -> Self {
                // The tag bounds the value to the type.
                r.varint($tag) as $t
            }
        }
    )*};
}
unsigned!(u16: 251, u32: 252, u64: 253);

impl Wire for usize {
    fn read(r: &mut Reader<'_>) -> Self {
        let v = r.varint(253);
        usize::try_from(v).unwrap_or_else(|_| {
            r.fail(format!("{v} out of range"));
            0
        })
    }
}

macro_rules! signed {
    ($($t:ty: $u:ty),*) => {$(
        impl Wire for $t {
            fn read(r: &mut Reader<'_>) -> Self {
                let n = <$u>::read(r);
                ((n >> 1) as $t) ^ -((n & 1) as $t)
            }
        }
    )*};
}
signed!(i32: u32, i64: u64);

impl Wire for f32 {
    fn read(r: &mut Reader<'_>) -> Self {
        f32::from_le_bytes(r.array())
    }
}

impl Wire for f64 {
    fn read(r: &mut Reader<'_>) -> Self {
        f64::from_le_bytes(r.array())
    }
}

impl Wire for String {
    fn read(r: &mut Reader<'_>) -> Self {
        let n = r.seq_len();
        let bytes = r.take(n);
        match std::str::from_utf8(bytes) {
            Ok(s) => s.to_owned(),
            Err(e) => {
                r.pos -= n;
                r.fail(format!("invalid UTF-8: {e}"));
                String::new()
            }
        }
    }
}

impl<T: Wire> Wire for Vec<T> {
    fn read(r: &mut Reader<'_>) -> Self {
        let n = r.seq_len();
        // Reserve ahead at most the bytes left (a large element, such as a
        // graph node, takes more memory than its smallest encoding); the
        // rest grows as elements arrive.
        let size = std::mem::size_of::<T>().max(1);
        let mut out = Vec::with_capacity(n.min(r.remaining() / size + 1));
        for _ in 0..n {
            if r.failed() {
                break;
            }
            out.push(T::read(r));
        }
        out
    }
}

impl<T: Wire> Wire for Option<T> {
    fn read(r: &mut Reader<'_>) -> Self {
        match r.byte() {
            0 => None,
            1 => Some(T::read(r)),
            b => {
                r.fail(format!("invalid option tag {b}"));
                None
            }
        }
    }
}

impl<T: Wire, const N: usize> Wire for [T; N] {
    fn read(r: &mut Reader<'_>) -> Self {
        std::array::from_fn(|_| T::read(r))
    }
}

impl<K: Wire + Ord, V: Wire> Wire for BTreeMap<K, V> {
    fn read(r: &mut Reader<'_>) -> Self {
        let n = r.seq_len();
        let mut out = BTreeMap::new();
        for _ in 0..n {
            if r.failed() {
                break;
            }
            let k = K::read(r);
            out.insert(k, V::read(r));
        }
        out
    }
}

/// [`Wire`] for a struct with named fields, read in the order listed
/// (which must be the declaration order, the order bincode writes them);
/// fields after `skip` are not on the wire and start as `Default`.
macro_rules! wire_struct {
    ($ty:ident $(<$($g:ident),*>)? { $($field:ident),* $(,)? } $(skip { $($skipped:ident),* })?) => {
        impl$(<$($g: $crate::wire::Wire),*>)? $crate::wire::Wire for $ty$(<$($g),*>)? {
            fn read(r: &mut $crate::wire::Reader<'_>) -> Self {
                $ty {
                    $($field: $crate::wire::Wire::read(r),)*
                    $($($skipped: Default::default(),)*)?
                }
            }
        }
    };
}

/// [`Wire`] for a field-less enum, its variants listed in declaration
/// order: a missing variant fails to compile (the match below), and a
/// variant out of order fails the constant check.
macro_rules! wire_enum {
    ($ty:ident { $($variant:ident),* $(,)? }) => {
        const _: () = {
            const VARIANTS: &[$ty] = &[$($ty::$variant),*];
            // Every variant is listed ...
            #[allow(dead_code)]
            fn exhaustive(x: $ty) {
                match x {
                    $($ty::$variant => (),)*
                }
            }
            // ... at its index.
            let mut i = 0;
            while i < VARIANTS.len() {
                assert!(VARIANTS[i] as usize == i, "variants listed out of order");
                i += 1;
            }
            impl $crate::wire::Wire for $ty {
                fn read(r: &mut $crate::wire::Reader<'_>) -> Self {
                    let v = r.variant();
                    match VARIANTS.get(v as usize) {
                        Some(&x) => x,
                        None => {
                            r.fail(format!("unknown variant {v} of {}", stringify!($ty)));
                            VARIANTS[0]
                        }
                    }
                }
            }
        };
    };
}

pub(crate) use wire_enum;
pub(crate) use wire_struct;

#[cfg(test)]
mod tests {
    use super::*;
    use serde::{Deserialize, Serialize};

    fn roundtrip<T: Serialize + Wire + PartialEq + fmt::Debug>(value: T) {
        let bytes = bincode::serde::encode_to_vec(&value, crate::format::bincode_config()).unwrap();
        let back: T = Reader::decode_all(&bytes).unwrap();
        assert_eq!(back, value);
    }

    #[derive(Serialize, Deserialize, Debug, PartialEq, Clone, Copy)]
    enum Colour {
        Red,
        Green,
        Blue,
    }
    wire_enum!(Colour { Red, Green, Blue });

    #[derive(Serialize, Deserialize, Debug, PartialEq, Default)]
    struct Sample {
        a: u8,
        b: u16,
        c: u32,
        d: u64,
        e: i32,
        f: i64,
        g: f32,
        h: f64,
        i: bool,
        j: String,
        k: Vec<Option<String>>,
        l: [u32; 2],
        m: BTreeMap<String, u64>,
        n: Vec<Vec<i8>>,
        o: usize,
        #[serde(skip)]
        p: u32,
    }
    wire_struct!(Sample { a, b, c, d, e, f, g, h, i, j, k, l, m, n, o } skip { p });

    #[test]
    fn values_read_as_bincode_writes_them() {
        for v in [
            0u64,
            1,
            250,
            251,
            255,
            65_535,
            65_536,
            u32::MAX as u64,
            u64::MAX,
        ] {
            roundtrip(v);
        }
        for v in [0i64, -1, 1, -126, 125, i64::MIN, i64::MAX] {
            roundtrip(v);
        }
        for v in [0u16, 250, 251, u16::MAX] {
            roundtrip(v);
        }
        for v in [i32::MIN, -300, 300, i32::MAX] {
            roundtrip(v);
        }
        roundtrip(vec![Colour::Blue, Colour::Red, Colour::Green]);
        roundtrip(Sample {
            a: 200,
            b: 40_000,
            c: 70_000,
            d: 1 << 40,
            e: -5,
            f: -(1 << 40),
            g: 1.5,
            h: -2.25,
            i: true,
            j: "héllo".into(),
            k: vec![None, Some("x".into()), Some(String::new())],
            l: [7, 300],
            m: [("a".to_string(), 1), ("bb".to_string(), 1_000)].into(),
            n: vec![vec![-1, 2], vec![]],
            o: 123_456,
            p: 0,
        });
        roundtrip([[1u8; 16], [2u8; 16]]);
    }

    #[test]
    fn bad_bytes_are_typed_errors() {
        // A length past the bytes left reserves nothing.
        let err = Reader::decode_all::<Vec<u64>>(&[253, 255, 255, 255, 255, 255, 255, 255, 127])
            .unwrap_err();
        assert!(err.message.contains("elements announced"), "{err}");
        let err = Reader::decode_all::<String>(&[2, 0xff, 0xfe]).unwrap_err();
        assert!(err.message.contains("UTF-8"), "{err}");
        assert_eq!(err.offset, 1);
        let err = Reader::decode_all::<bool>(&[2]).unwrap_err();
        assert!(err.message.contains("bool"), "{err}");
        let err = Reader::decode_all::<Colour>(&[3]).unwrap_err();
        assert!(err.message.contains("unknown variant 3 of Colour"), "{err}");
        let err = Reader::decode_all::<u16>(&[252, 0, 0, 1, 0]).unwrap_err();
        assert!(err.message.contains("tag 252"), "{err}");
        let err = Reader::decode_all::<u32>(&[7, 0]).unwrap_err();
        assert!(err.message.contains("1 bytes left"), "{err}");
        let err = Reader::decode_all::<u64>(&[253, 1]).unwrap_err();
        assert!(err.message.contains("8 bytes needed"), "{err}");
        let err = Reader::decode_all::<Option<u8>>(&[9]).unwrap_err();
        assert!(err.message.contains("option tag 9"), "{err}");
    }
}
