//! bincode decoding that never allocates for a length the input does not
//! hold: the one serde decode path, of every native data file. The web
//! shards (the single vectors shard included) and the binary manifest are
//! read without serde, by [`crate::wire`].
//!
//! It exists because bincode decodes a `String` by allocating the length
//! its prefix announces and only then reading that many bytes: a 79-byte
//! data file could make it allocate hundreds of megabytes (found by `cargo
//! xtask fuzz`). Here every value is decoded through a serde proxy that
//! asks bincode for *borrowed* strings and bytes instead, which bincode
//! checks against the bytes left before handing out a slice; the owned
//! value is then exactly as long as what was read. Sequences allocate as
//! their elements arrive (serde caps the capacity it reserves ahead), so
//! what decoding allocates is bounded by the input, not by its prefixes.

use serde::de::{
    DeserializeOwned, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess,
    VariantAccess, Visitor,
};
use serde::Deserialize;

/// Decode `T` from the start of `payload`; returns the value and the bytes
/// it used.
pub(crate) fn decode<T: DeserializeOwned>(
    payload: &[u8],
) -> Result<(T, usize), bincode::error::DecodeError> {
    let (Bounded(value), used) = bincode::serde::borrow_decode_from_slice::<Bounded<T>, _>(
        payload,
        crate::format::bincode_config(),
    )?;
    Ok((value, used))
}

/// `T`, deserialized through [`Proxy`].
struct Bounded<T>(T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Bounded<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        T::deserialize(Proxy(d)).map(Bounded)
    }
}

/// A deserializer that forwards to `D`, except that owned strings and byte
/// buffers are read as borrowed ones (checked against the input first).
struct Proxy<D>(D);

/// A visitor, seed or access object whose nested deserializers are
/// wrapped in [`Proxy`] too.
struct Wrap<V>(V);

/// Forward each `deserialize_*` method, with its leading arguments, to the
/// inner deserializer with the visitor wrapped.
macro_rules! forward {
    ($($method:ident($($arg:ident: $t:ty),*)),* $(,)?) => {
        $(fn $method<V: Visitor<'de>>(self, $($arg: $t,)* v: V) -> Result<V::Value, Self::Error> {
            self.0.$method($($arg,)* Wrap(v))
        })*
    };
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Proxy<D> {
    type Error = D::Error;

    forward!(
        deserialize_any(),
        deserialize_bool(),
        deserialize_i8(),
        deserialize_i16(),
        deserialize_i32(),
        deserialize_i64(),
        deserialize_i128(),
        deserialize_u8(),
        deserialize_u16(),
        deserialize_u32(),
        deserialize_u64(),
        deserialize_u128(),
        deserialize_f32(),
        deserialize_f64(),
        deserialize_char(),
        deserialize_str(),
        deserialize_bytes(),
        deserialize_option(),
        deserialize_unit(),
        deserialize_seq(),
        deserialize_map(),
        deserialize_identifier(),
        deserialize_ignored_any(),
        deserialize_unit_struct(name: &'static str),
        deserialize_newtype_struct(name: &'static str),
        deserialize_tuple(len: usize),
        deserialize_tuple_struct(name: &'static str, len: usize),
        deserialize_struct(name: &'static str, fields: &'static [&'static str]),
        deserialize_enum(name: &'static str, variants: &'static [&'static str]),
    );

    // The two owned reads, asked for as borrowed ones.
    fn deserialize_string<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Self::Error> {
        self.0.deserialize_str(Wrap(v))
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Self::Error> {
        self.0.deserialize_bytes(Wrap(v))
    }

    fn is_human_readable(&self) -> bool {
        self.0.is_human_readable()
    }
}

macro_rules! visit {
    ($($method:ident: $t:ty),*) => {
        $(fn $method<E: serde::de::Error>(self, x: $t) -> Result<V::Value, E> {
            self.0.$method(x)
        })*
    };
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Wrap<V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        self.0.expecting(f)
    }

    visit!(
        visit_bool: bool,
        visit_i8: i8,
        visit_i16: i16,
        visit_i32: i32,
        visit_i64: i64,
        visit_i128: i128,
        visit_u8: u8,
        visit_u16: u16,
        visit_u32: u32,
        visit_u64: u64,
        visit_u128: u128,
        visit_f32: f32,
        visit_f64: f64,
        visit_char: char,
        visit_str: &str,
        visit_borrowed_str: &'de str,
        visit_string: String,
        visit_bytes: &[u8],
        visit_borrowed_bytes: &'de [u8],
        visit_byte_buf: Vec<u8>
    );

    fn visit_none<E: serde::de::Error>(self) -> Result<V::Value, E> {
        self.0.visit_none()
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<V::Value, E> {
        self.0.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<V::Value, D::Error> {
        self.0.visit_some(Proxy(d))
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<V::Value, D::Error> {
        self.0.visit_newtype_struct(Proxy(d))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
        self.0.visit_seq(Wrap(seq))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.0.visit_map(Wrap(map))
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<V::Value, A::Error> {
        self.0.visit_enum(Wrap(data))
    }
}

/// A seed whose deserializer is wrapped.
struct Seed<S>(S);

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for Seed<S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<S::Value, D::Error> {
        self.0.deserialize(Proxy(d))
    }
}

impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for Wrap<A> {
    type Error = A::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, A::Error> {
        self.0.next_element_seed(Seed(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Wrap<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        self.0.next_key_seed(Seed(seed))
    }

    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, A::Error> {
        self.0.next_value_seed(Seed(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

impl<'de, A: EnumAccess<'de>> EnumAccess<'de> for Wrap<A> {
    type Error = A::Error;
    type Variant = Wrap<A::Variant>;

    fn variant_seed<T: DeserializeSeed<'de>>(
        self,
        seed: T,
    ) -> Result<(T::Value, Wrap<A::Variant>), A::Error> {
        self.0
            .variant_seed(Seed(seed))
            .map(|(value, variant)| (value, Wrap(variant)))
    }
}

impl<'de, A: VariantAccess<'de>> VariantAccess<'de> for Wrap<A> {
    type Error = A::Error;

    fn unit_variant(self) -> Result<(), A::Error> {
        self.0.unit_variant()
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, A::Error> {
        self.0.newtype_variant_seed(Seed(seed))
    }

    fn tuple_variant<V: Visitor<'de>>(self, len: usize, v: V) -> Result<V::Value, A::Error> {
        self.0.tuple_variant(len, Wrap(v))
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, A::Error> {
        self.0.struct_variant(fields, Wrap(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_string_longer_than_the_input_fails_before_it_is_allocated() {
        // A 100 MB length prefix in 6 bytes (varint 253 = u32 follows).
        let mut payload = vec![253];
        payload.extend_from_slice(&100_000_000u32.to_le_bytes());
        payload.push(b'x');
        let err = decode::<String>(&payload).unwrap_err();
        assert!(
            matches!(err, bincode::error::DecodeError::UnexpectedEnd { .. }),
            "{err}"
        );
    }

    #[test]
    fn values_decode_as_bincode_decodes_them() {
        type Value = (
            String,
            Vec<(u32, u16)>,
            Option<String>,
            std::collections::BTreeMap<String, u64>,
            Vec<i8>,
            [u8; 3],
            crate::model::EntityKind,
        );
        let value: Value = (
            "ünïcode".into(),
            vec![(1, 2), (u32::MAX, 7)],
            Some(String::new()),
            [("a".to_string(), 1u64), ("b".into(), u64::MAX)].into(),
            vec![-128, 0, 127],
            [1, 2, 3],
            crate::model::EntityKind::Method,
        );
        let bytes = bincode::serde::encode_to_vec(&value, crate::format::bincode_config()).unwrap();
        let (back, used): (Value, usize) = decode(&bytes).unwrap();
        assert_eq!((back, used), (value, bytes.len()));
        assert!(decode::<Value>(&bytes[..bytes.len() - 1]).is_err());
    }
}
