//! A deserializer adapter that accepts only the JSON shapes the schema advertises.
//!
//! serde's derived code is more lenient than the JSON Schema schemars writes for the same type:
//! a struct also reads from an array (`["rust", 5]`), and an enum's unit variant also reads from
//! a one-key object (`{"d1": null}`). Both are rejected by the schema, so the runtime must
//! reject them too. [`Strict`] wraps any deserializer and, at every depth it can see,
//! reads structs only from objects and enums only in the forms the schema lists: a unit variant
//! as a string, other variants as an object with exactly one key.
//!
//! serde buffers the input of internally tagged, adjacently tagged and untagged enums (and of
//! `#[serde(flatten)]`) and reads it again outside of any deserializer we control; the schema
//! analysis in `schema.rs` sends tools whose schema has such shapes through the full validator.

use std::fmt;

use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, IgnoredAny, IntoDeserializer, MapAccess,
    SeqAccess, Unexpected, VariantAccess, Visitor,
};

/// The strict adapter around a deserializer.
pub(crate) struct Strict<D>(pub(crate) D);

macro_rules! forward {
    ($($method:ident),*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
            self.0.$method(Wrap(visitor))
        }
    )*};
}

macro_rules! forward_plain {
    ($($method:ident),*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
            self.0.$method(visitor)
        }
    )*};
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Strict<D> {
    type Error = D::Error;

    forward!(
        deserialize_any,
        deserialize_option,
        deserialize_unit,
        deserialize_seq,
        deserialize_map
    );
    // Scalars: the format calls only the scalar's own `visit_*` (or fails), so the visitor
    // cannot be handed a struct or enum shape and needs no wrapper.
    forward_plain!(
        deserialize_bool,
        deserialize_i8,
        deserialize_i16,
        deserialize_i32,
        deserialize_i64,
        deserialize_i128,
        deserialize_u8,
        deserialize_u16,
        deserialize_u32,
        deserialize_u64,
        deserialize_u128,
        deserialize_f32,
        deserialize_f64,
        deserialize_char,
        deserialize_str,
        deserialize_string,
        deserialize_bytes,
        deserialize_byte_buf,
        deserialize_identifier,
        deserialize_ignored_any
    );

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.deserialize_unit_struct(name, Wrap(visitor))
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.deserialize_newtype_struct(name, Wrap(visitor))
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.deserialize_tuple(len, Wrap(visitor))
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.deserialize_tuple_struct(name, len, Wrap(visitor))
    }

    /// Objects only: the schema of a struct is `type: object`.
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.deserialize_map(Wrap(visitor))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.deserialize_any(EnumVisitor(visitor))
    }

    fn is_human_readable(&self) -> bool {
        self.0.is_human_readable()
    }
}

/// Passes every value through, wrapping what it hands on so nested values stay strict.
struct Wrap<V>(V);

macro_rules! visit {
    ($($method:ident($ty:ty)),*) => {$(
        fn $method<E: de::Error>(self, v: $ty) -> Result<Self::Value, E> {
            self.0.$method(v)
        }
    )*};
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Wrap<V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.expecting(f)
    }

    visit!(
        visit_bool(bool),
        visit_i8(i8),
        visit_i16(i16),
        visit_i32(i32),
        visit_i64(i64),
        visit_i128(i128),
        visit_u8(u8),
        visit_u16(u16),
        visit_u32(u32),
        visit_u64(u64),
        visit_u128(u128),
        visit_f32(f32),
        visit_f64(f64),
        visit_char(char),
        visit_str(&str),
        visit_borrowed_str(&'de str),
        visit_string(String),
        visit_bytes(&[u8]),
        visit_borrowed_bytes(&'de [u8]),
        visit_byte_buf(Vec<u8>)
    );

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        self.0.visit_none()
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        self.0.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        self.0.visit_some(Strict(d))
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        self.0.visit_newtype_struct(Strict(d))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        self.0.visit_seq(SeqWrap(seq))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        self.0.visit_map(MapWrap(map))
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<Self::Value, A::Error> {
        self.0.visit_enum(EnumWrap(data))
    }
}

struct Seed<S>(S);

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for Seed<S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        self.0.deserialize(Strict(d))
    }
}

struct SeqWrap<A>(A);

impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for SeqWrap<A> {
    type Error = A::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Self::Error> {
        self.0.next_element_seed(Seed(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

struct MapWrap<A>(A);

impl<'de, A: MapAccess<'de>> MapAccess<'de> for MapWrap<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Self::Error> {
        self.0.next_key_seed(Seed(seed))
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.next_value_seed(Seed(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

/// An enum handed over by a deserializer that has its own enum support.
struct EnumWrap<A>(A);

impl<'de, A: EnumAccess<'de>> EnumAccess<'de> for EnumWrap<A> {
    type Error = A::Error;
    type Variant = VariantWrap<A::Variant>;

    fn variant_seed<V: DeserializeSeed<'de>>(
        self,
        seed: V,
    ) -> Result<(V::Value, Self::Variant), Self::Error> {
        let (value, variant) = self.0.variant_seed(seed)?;
        Ok((value, VariantWrap(variant)))
    }
}

struct VariantWrap<A>(A);

impl<'de, A: VariantAccess<'de>> VariantAccess<'de> for VariantWrap<A> {
    type Error = A::Error;

    fn unit_variant(self) -> Result<(), Self::Error> {
        self.0.unit_variant()
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(
        self,
        seed: T,
    ) -> Result<T::Value, Self::Error> {
        self.0.newtype_variant_seed(Seed(seed))
    }

    fn tuple_variant<V: Visitor<'de>>(self, len: usize, v: V) -> Result<V::Value, Self::Error> {
        self.0.tuple_variant(len, Wrap(v))
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.struct_variant(fields, Wrap(v))
    }
}

/// Reads an externally tagged enum: a string for a unit variant, or an object with one key.
struct EnumVisitor<V>(V);

impl<'de, V: Visitor<'de>> Visitor<'de> for EnumVisitor<V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a variant name, or an object with one key naming the variant")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        self.0.visit_enum(v.into_deserializer())
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        self.0
            .visit_enum(de::value::BorrowedStrDeserializer::new(v))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        self.0.visit_enum(v.into_deserializer())
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        self.0.visit_enum(MapEnum(map))
    }
}

struct MapEnum<A>(A);

impl<'de, A: MapAccess<'de>> EnumAccess<'de> for MapEnum<A> {
    type Error = A::Error;
    type Variant = MapVariant<A>;

    fn variant_seed<V: DeserializeSeed<'de>>(
        mut self,
        seed: V,
    ) -> Result<(V::Value, Self::Variant), Self::Error> {
        match self.0.next_key_seed(seed)? {
            Some(variant) => Ok((variant, MapVariant(self.0))),
            None => Err(de::Error::invalid_length(
                0,
                &"an object with exactly one key naming the variant",
            )),
        }
    }
}

struct MapVariant<A>(A);

impl<'de, A: MapAccess<'de>> MapVariant<A> {
    fn value<T: DeserializeSeed<'de>>(mut self, seed: T) -> Result<T::Value, A::Error> {
        let value = self.0.next_value_seed(Seed(seed))?;
        if self.0.next_key::<IgnoredAny>()?.is_some() {
            return Err(de::Error::invalid_length(
                2,
                &"an object with exactly one key naming the variant",
            ));
        }
        Ok(value)
    }
}

impl<'de, A: MapAccess<'de>> VariantAccess<'de> for MapVariant<A> {
    type Error = A::Error;

    /// The schema lists a unit variant as a string only.
    fn unit_variant(self) -> Result<(), Self::Error> {
        Err(de::Error::invalid_type(
            Unexpected::Map,
            &"the variant's name as a string",
        ))
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(
        self,
        seed: T,
    ) -> Result<T::Value, Self::Error> {
        self.value(seed)
    }

    fn tuple_variant<V: Visitor<'de>>(self, len: usize, v: V) -> Result<V::Value, Self::Error> {
        self.value(TupleSeed(len, v))
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        _fields: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, Self::Error> {
        self.value(StructSeed(v))
    }
}

struct TupleSeed<V>(usize, V);

impl<'de, V: Visitor<'de>> DeserializeSeed<'de> for TupleSeed<V> {
    type Value = V::Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_tuple(self.0, self.1)
    }
}

/// A struct variant's content: an object only.
struct StructSeed<V>(V);

impl<'de, V: Visitor<'de>> DeserializeSeed<'de> for StructSeed<V> {
    type Value = V::Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self.0)
    }
}

/// Deserializes `T` from JSON text through [`Strict`], requiring the whole text to be consumed.
pub(crate) fn from_str<T: de::DeserializeOwned>(text: &str) -> Result<T, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_str(text);
    let value = T::deserialize(Strict(&mut de))?;
    de.end()?;
    Ok(value)
}

/// Deserializes `T` from a parsed value through [`Strict`].
pub(crate) fn from_value<T: de::DeserializeOwned>(
    value: &serde_json::Value,
) -> Result<T, serde_json::Error> {
    T::deserialize(Strict(value))
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Point {
        x: i32,
        y: i32,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    enum Shape {
        Empty,
        Circle(f64),
        Rect { w: u8, h: u8 },
        Pair(u8, u8),
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct Outer {
        points: Vec<Point>,
        shape: Option<Shape>,
    }

    #[test]
    fn structs_read_only_from_objects() {
        assert_eq!(
            from_str::<Point>(r#"{"x":1,"y":2}"#).unwrap(),
            Point { x: 1, y: 2 }
        );
        assert!(
            serde_json::from_str::<Point>("[1,2]").is_ok(),
            "serde alone is lenient"
        );
        assert!(from_str::<Point>("[1,2]").is_err());
        assert!(from_str::<Outer>(r#"{"points":[[1,2]],"shape":null}"#).is_err());
        assert!(from_value::<Point>(&serde_json::json!([1, 2])).is_err());
    }

    #[test]
    fn enums_read_only_in_the_schema_forms() {
        assert_eq!(from_str::<Shape>(r#""Empty""#).unwrap(), Shape::Empty);
        assert!(
            serde_json::from_str::<Shape>(r#"{"Empty":null}"#).is_ok(),
            "serde alone is lenient"
        );
        assert!(from_str::<Shape>(r#"{"Empty":null}"#).is_err());
        assert_eq!(
            from_str::<Shape>(r#"{"Circle":1.5}"#).unwrap(),
            Shape::Circle(1.5)
        );
        assert_eq!(
            from_str::<Shape>(r#"{"Rect":{"w":1,"h":2}}"#).unwrap(),
            Shape::Rect { w: 1, h: 2 }
        );
        assert!(from_str::<Shape>(r#"{"Rect":[1,2]}"#).is_err());
        assert_eq!(
            from_str::<Shape>(r#"{"Pair":[1,2]}"#).unwrap(),
            Shape::Pair(1, 2)
        );
        assert!(from_str::<Shape>(r#"{"Circle":1.5,"Empty":null}"#).is_err());
        assert!(from_str::<Shape>("{}").is_err());
        assert!(from_str::<Shape>(r#""Circle""#).is_err());
        let outer = from_str::<Outer>(r#"{"points": [], "shape": {"Circle": 2.0}}"#).unwrap();
        assert_eq!(outer.shape, Some(Shape::Circle(2.0)));
        assert!(from_value::<Shape>(&serde_json::json!({"Empty": null})).is_err());
        let outer =
            from_value::<Outer>(&serde_json::json!({"points": [], "shape": {"Circle": 2.0}}))
                .unwrap();
        assert_eq!(outer.shape, Some(Shape::Circle(2.0)));
    }
}
