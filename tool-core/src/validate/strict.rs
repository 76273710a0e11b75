//! A deserializer adapter that accepts only the JSON shapes the schema advertises.
//!
//! serde's derived code is more lenient than the JSON Schema schemars writes for the same type:
//! a struct also reads from an array (`["rust", 5]`), and an enum's unit variant also reads from
//! a one-key object (`{"d1": null}`). Both are rejected by the schema, so the runtime must
//! reject them too. [`Strict`] wraps any deserializer and, at every depth it can see,
//! reads structs only from objects and enums only in the forms the schema lists: a unit variant
//! as a string, other variants as an object with exactly one key.
//!
//! The adapter also enforces the [`InputLimits`] while it reads (values, depth, members of an
//! object, items of an array) and, on text, refuses a key that appears twice in one object:
//! serde's derived structs refuse a repeated field, but maps and `serde_json::Value` keep the
//! last one. Any refusal sends the call to the explaining reader, which says where.
//!
//! serde buffers the input of internally tagged, adjacently tagged and untagged enums (and of
//! `#[serde(flatten)]`) and reads it again outside of any deserializer we control; the schema
//! analysis in `schema.rs` sends tools whose schema has such shapes through the full validator.

use std::cell::Cell;
use std::collections::HashSet;
use std::fmt;
use std::hash::BuildHasher;

use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, IgnoredAny, IntoDeserializer, MapAccess,
    SeqAccess, Unexpected, VariantAccess, Visitor,
};

use crate::limits::InputLimits;

/// What one read may still do: the limits, the values read so far, the open containers.
pub(crate) struct Guard {
    limits: InputLimits,
    nodes: Cell<usize>,
    depth: Cell<usize>,
    /// Whether keys are checked for repeats (text; a parsed value cannot repeat a key).
    track_keys: bool,
    /// Whether only the answer matters, not why: serde's words for a refusal are then not
    /// written where they cost most (a name no variant of an enum has).
    quiet: bool,
}

impl Guard {
    pub(crate) fn new(limits: &InputLimits, track_keys: bool, quiet: bool) -> Self {
        Self {
            limits: *limits,
            nodes: Cell::new(0),
            depth: Cell::new(0),
            track_keys,
            quiet,
        }
    }

    fn node<E: de::Error>(&self) -> Result<(), E> {
        let n = self.nodes.get() + 1;
        if n > self.limits.max_nodes {
            return Err(E::custom("too many values"));
        }
        self.nodes.set(n);
        Ok(())
    }

    fn enter<E: de::Error>(&self) -> Result<(), E> {
        let d = self.depth.get() + 1;
        if d > self.limits.max_depth {
            return Err(E::custom("nested too deep"));
        }
        self.depth.set(d);
        Ok(())
    }

    fn leave(&self) {
        self.depth.set(self.depth.get().saturating_sub(1));
    }
}

/// The strict adapter around a deserializer.
pub(crate) struct Strict<'g, D>(pub(crate) D, pub(crate) &'g Guard);

/// The methods of a `Deserializer` that hands every request on to `$inner` with the visitor
/// `$wrapped` makes of it: all but `deserialize_struct`, which each such deserializer writes.
macro_rules! forward_deserializer {
    (|$this:ident, $visitor:ident| $inner:expr, $wrapped:expr) => {
        forward_deserializer!(@each |$this, $visitor| $inner, $wrapped;
            deserialize_any,
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
            deserialize_option,
            deserialize_unit,
            deserialize_seq,
            deserialize_map,
            deserialize_identifier,
            deserialize_ignored_any
        );

        fn deserialize_unit_struct<V: Visitor<'de>>(
            self,
            name: &'static str,
            visitor: V,
        ) -> Result<V::Value, Self::Error> {
            let ($this, $visitor) = (self, visitor);
            $inner.deserialize_unit_struct(name, $wrapped)
        }

        fn deserialize_newtype_struct<V: Visitor<'de>>(
            self,
            name: &'static str,
            visitor: V,
        ) -> Result<V::Value, Self::Error> {
            let ($this, $visitor) = (self, visitor);
            $inner.deserialize_newtype_struct(name, $wrapped)
        }

        fn deserialize_tuple<V: Visitor<'de>>(
            self,
            len: usize,
            visitor: V,
        ) -> Result<V::Value, Self::Error> {
            let ($this, $visitor) = (self, visitor);
            $inner.deserialize_tuple(len, $wrapped)
        }

        fn deserialize_tuple_struct<V: Visitor<'de>>(
            self,
            name: &'static str,
            len: usize,
            visitor: V,
        ) -> Result<V::Value, Self::Error> {
            let ($this, $visitor) = (self, visitor);
            $inner.deserialize_tuple_struct(name, len, $wrapped)
        }

        fn deserialize_enum<V: Visitor<'de>>(
            self,
            name: &'static str,
            variants: &'static [&'static str],
            visitor: V,
        ) -> Result<V::Value, Self::Error> {
            let ($this, $visitor) = (self, visitor);
            $inner.deserialize_enum(name, variants, $wrapped)
        }

        fn is_human_readable(&self) -> bool {
            self.0.is_human_readable()
        }
    };
    (@each |$this:ident, $visitor:ident| $inner:expr, $wrapped:expr; $($method:ident),*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
            let ($this, $visitor) = (self, visitor);
            $inner.$method($wrapped)
        }
    )*};
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Strict<'_, D> {
    type Error = D::Error;

    forward_deserializer!(@each |this, visitor| this.0, Wrap(visitor, this.1, this.1.track_keys);
        deserialize_any,
        deserialize_option,
        deserialize_unit,
        deserialize_seq,
        deserialize_map
    );
    // Scalars: the format calls only the scalar's own `visit_*` (or fails), so the visitor
    // cannot be handed a struct or enum shape and needs no wrapper.
    forward_deserializer!(@each |this, visitor| this.0, visitor;
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
        deserialize_identifier
    );

    /// A value serde skips (a key a lenient struct does not know) still counts against the
    /// limits, and its objects' keys are still checked: it is read, not skipped unseen.
    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        self.0
            .deserialize_any(Wrap(visitor, self.1, self.1.track_keys))
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0
            .deserialize_unit_struct(name, Wrap(visitor, self.1, self.1.track_keys))
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0
            .deserialize_newtype_struct(name, Wrap(visitor, self.1, self.1.track_keys))
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0
            .deserialize_tuple(len, Wrap(visitor, self.1, self.1.track_keys))
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0
            .deserialize_tuple_struct(name, len, Wrap(visitor, self.1, self.1.track_keys))
    }

    /// Objects only: the schema of a struct is `type: object`. The arguments struct `#[tool]`
    /// generates needs no key tracking: serde's derive refuses a repeated field, and
    /// `deny_unknown_fields` any other key.
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        let keys = self.1.track_keys && name != ARGS_STRUCT;
        self.0.deserialize_map(Wrap(visitor, self.1, keys))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.deserialize_any(EnumVisitor(visitor, self.1))
    }

    fn is_human_readable(&self) -> bool {
        self.0.is_human_readable()
    }
}

/// The name (serde's `rename`) of the arguments struct `#[tool]` generates.
pub const ARGS_STRUCT: &str = "toolsmith::Arguments";

/// The strict adapter at the top of a read of the arguments struct `#[tool]` generates (serde's
/// name for it is [`ARGS_STRUCT`]): that struct's members are read without the key tracking of
/// [`Wrap`] (serde's derive refuses a repeated field, and `deny_unknown_fields` any other key),
/// and no code that tracks its keys is compiled for it: a branch taken at run time would still
/// be compiled once per tool. Another struct at the top is refused (the caller's explaining
/// read decides then); every other type is read as [`Strict`] reads it.
struct Args<'g, D>(Strict<'g, D>);

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Args<'_, D> {
    type Error = D::Error;

    forward_deserializer!(|this, visitor| this.0, visitor);

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        if name != ARGS_STRUCT {
            return Err(de::Error::custom(
                "only the arguments struct `#[tool]` generates is read this way",
            ));
        }
        let Strict(d, guard) = self.0;
        d.deserialize_map(ArgsVisitor(visitor, guard))
    }
}

/// The arguments struct's object: its members counted, its values read strictly.
struct ArgsVisitor<'g, V>(V, &'g Guard);

impl<'de, V: Visitor<'de>> Visitor<'de> for ArgsVisitor<'_, V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.expecting(f)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        let guard = self.1;
        guard.enter()?;
        let out = self.0.visit_map(MapWrap {
            map,
            guard,
            members: 0,
            keys: NoKeys,
        });
        guard.leave();
        out
    }
}

/// Passes every value through, wrapping what it hands on so nested values stay strict; the
/// flag says whether an object it gets has its keys checked for repeats.
struct Wrap<'g, V>(V, &'g Guard, bool);

macro_rules! visit {
    ($($method:ident($ty:ty)),*) => {$(
        fn $method<E: de::Error>(self, v: $ty) -> Result<Self::Value, E> {
            self.0.$method(v)
        }
    )*};
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Wrap<'_, V> {
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
        self.0.visit_some(Strict(d, self.1))
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        self.0.visit_newtype_struct(Strict(d, self.1))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        let guard = self.1;
        guard.enter()?;
        let out = self.0.visit_seq(SeqWrap {
            seq,
            guard,
            items: 0,
        });
        guard.leave();
        out
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        let guard = self.1;
        guard.enter()?;
        let out = self.0.visit_map(MapWrap {
            map,
            guard,
            members: 0,
            keys: self.2.then(Keys::default),
        });
        guard.leave();
        out
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<Self::Value, A::Error> {
        self.0.visit_enum(EnumWrap(data, self.1))
    }
}

/// A value inside a container: one more node, read strictly.
struct Seed<'g, S>(S, &'g Guard);

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for Seed<'_, S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        self.1.node()?;
        self.0.deserialize(Strict(d, self.1))
    }
}

struct SeqWrap<'g, A> {
    seq: A,
    guard: &'g Guard,
    items: usize,
}

impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for SeqWrap<'_, A> {
    type Error = A::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Self::Error> {
        let item = self.seq.next_element_seed(Seed(seed, self.guard))?;
        if item.is_some() {
            self.items += 1;
            if self.items > self.guard.limits.max_items {
                return Err(de::Error::custom("too many items"));
            }
        }
        Ok(item)
    }

    fn size_hint(&self) -> Option<usize> {
        self.seq.size_hint()
    }
}

struct MapWrap<'g, A, K = Option<Keys>> {
    map: A,
    guard: &'g Guard,
    members: usize,
    /// The keys seen, when they are checked for repeats ([`NoKeys`]: never, by type).
    keys: K,
}

/// What a [`MapWrap`] checks its keys with.
trait KeyCheck {
    /// Whether keys may be checked at all. A constant, so that code under `if !TRACKED` is
    /// not compiled for the types it would be generic over.
    const TRACKED: bool;
    /// The keys, when they are checked for repeats.
    fn keys(&mut self) -> Option<&mut Keys>;
}

impl KeyCheck for Option<Keys> {
    const TRACKED: bool = true;

    fn keys(&mut self) -> Option<&mut Keys> {
        self.as_mut()
    }
}

/// The keys of an object read without key tracking, known when the code is compiled: no
/// key seed is wrapped, so none of the wrapping is compiled for its keys' type.
struct NoKeys;

impl KeyCheck for NoKeys {
    const TRACKED: bool = false;

    fn keys(&mut self) -> Option<&mut Keys> {
        None
    }
}

impl<'de, A: MapAccess<'de>, K: KeyCheck> MapAccess<'de> for MapWrap<'_, A, K> {
    type Error = A::Error;

    fn next_key_seed<S: DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> Result<Option<S::Value>, Self::Error> {
        // The constant first: for `NoKeys` the wrapped seed is not compiled at all.
        let key = if K::TRACKED
            && let Some(keys) = self.keys.keys()
        {
            self.map.next_key_seed(KeySeed { seed, keys })?
        } else {
            self.map.next_key_seed(seed)?
        };
        if key.is_some() {
            self.members += 1;
            if self.members > self.guard.limits.max_members {
                return Err(de::Error::custom("too many keys"));
            }
        }
        Ok(key)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, Self::Error> {
        self.map.next_value_seed(Seed(seed, self.guard))
    }

    fn size_hint(&self) -> Option<usize> {
        self.map.size_hint()
    }
}

/// The keys of one object seen so far, as hashes: a repeat (or, rarely, a collision) refuses
/// the typed read, and the explaining reader then compares the keys themselves.
#[derive(Default)]
struct Keys {
    few: [u64; 8],
    len: usize,
    many: Option<HashSet<u64, foldhash::fast::RandomState>>,
}

impl Keys {
    /// Records a key; `false` if it was seen before.
    fn insert(&mut self, key: &[u8]) -> bool {
        let hash = foldhash::fast::FixedState::with_seed(0x746f_6f6c_736d_6974).hash_one(key);
        if let Some(many) = &mut self.many {
            return many.insert(hash);
        }
        if self.few[..self.len].contains(&hash) {
            return false;
        }
        if self.len < self.few.len() {
            self.few[self.len] = hash;
            self.len += 1;
        } else {
            let mut many: HashSet<u64, foldhash::fast::RandomState> =
                self.few.iter().copied().collect();
            many.insert(hash);
            self.many = Some(many);
        }
        true
    }
}

/// A key, recorded as its deserializer hands it to the key's visitor.
struct KeySeed<'k, S> {
    seed: S,
    keys: &'k mut Keys,
}

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for KeySeed<'_, S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        self.seed.deserialize(KeyDe(d, self.keys))
    }
}

struct KeyDe<'k, D>(D, &'k mut Keys);

impl<'de, D: Deserializer<'de>> Deserializer<'de> for KeyDe<'_, D> {
    type Error = D::Error;

    forward_deserializer!(|this, visitor| this.0, KeyVisitor(visitor, this.1));

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0
            .deserialize_struct(name, fields, KeyVisitor(visitor, self.1))
    }
}

/// Records the key's text (or number, for maps keyed by integers), then hands it on.
struct KeyVisitor<'k, V>(V, &'k mut Keys);

impl<V> KeyVisitor<'_, V> {
    fn record<E: de::Error>(&mut self, key: &[u8]) -> Result<(), E> {
        if self.1.insert(key) {
            Ok(())
        } else {
            Err(E::custom("a key appears twice"))
        }
    }
}

macro_rules! key_visit_number {
    ($($method:ident($ty:ty)),*) => {$(
        fn $method<E: de::Error>(mut self, v: $ty) -> Result<Self::Value, E> {
            self.record(v.to_string().as_bytes())?;
            self.0.$method(v)
        }
    )*};
}

impl<'de, V: Visitor<'de>> Visitor<'de> for KeyVisitor<'_, V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.expecting(f)
    }

    fn visit_str<E: de::Error>(mut self, v: &str) -> Result<Self::Value, E> {
        self.record(v.as_bytes())?;
        self.0.visit_str(v)
    }

    fn visit_borrowed_str<E: de::Error>(mut self, v: &'de str) -> Result<Self::Value, E> {
        self.record(v.as_bytes())?;
        self.0.visit_borrowed_str(v)
    }

    fn visit_string<E: de::Error>(mut self, v: String) -> Result<Self::Value, E> {
        self.record(v.as_bytes())?;
        self.0.visit_string(v)
    }

    fn visit_bytes<E: de::Error>(mut self, v: &[u8]) -> Result<Self::Value, E> {
        self.record(v)?;
        self.0.visit_bytes(v)
    }

    fn visit_borrowed_bytes<E: de::Error>(mut self, v: &'de [u8]) -> Result<Self::Value, E> {
        self.record(v)?;
        self.0.visit_borrowed_bytes(v)
    }

    fn visit_byte_buf<E: de::Error>(mut self, v: Vec<u8>) -> Result<Self::Value, E> {
        self.record(&v)?;
        self.0.visit_byte_buf(v)
    }

    key_visit_number!(
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
        visit_bool(bool),
        visit_char(char)
    );

    fn visit_f32<E: de::Error>(self, v: f32) -> Result<Self::Value, E> {
        self.0.visit_f32(v)
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        self.0.visit_f64(v)
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        self.0.visit_none()
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        self.0.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        self.0.visit_some(d)
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        self.0.visit_newtype_struct(d)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        self.0.visit_seq(seq)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        self.0.visit_map(map)
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<Self::Value, A::Error> {
        self.0.visit_enum(data)
    }
}

/// An enum handed over by a deserializer that has its own enum support.
struct EnumWrap<'g, A>(A, &'g Guard);

impl<'g, 'de, A: EnumAccess<'de>> EnumAccess<'de> for EnumWrap<'g, A> {
    type Error = A::Error;
    type Variant = VariantWrap<'g, A::Variant>;

    fn variant_seed<V: DeserializeSeed<'de>>(
        self,
        seed: V,
    ) -> Result<(V::Value, Self::Variant), Self::Error> {
        let (value, variant) = self.0.variant_seed(seed)?;
        Ok((value, VariantWrap(variant, self.1)))
    }
}

struct VariantWrap<'g, A>(A, &'g Guard);

impl<'de, A: VariantAccess<'de>> VariantAccess<'de> for VariantWrap<'_, A> {
    type Error = A::Error;

    fn unit_variant(self) -> Result<(), Self::Error> {
        self.0.unit_variant()
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(
        self,
        seed: T,
    ) -> Result<T::Value, Self::Error> {
        self.0.newtype_variant_seed(Seed(seed, self.1))
    }

    fn tuple_variant<V: Visitor<'de>>(self, len: usize, v: V) -> Result<V::Value, Self::Error> {
        self.0
            .tuple_variant(len, Wrap(v, self.1, self.1.track_keys))
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, Self::Error> {
        self.0
            .struct_variant(fields, Wrap(v, self.1, self.1.track_keys))
    }
}

/// Reads an externally tagged enum: a string for a unit variant, or an object with one key.
struct EnumVisitor<'g, V>(V, &'g Guard);

impl<'de, V: Visitor<'de>> Visitor<'de> for EnumVisitor<'_, V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a variant name, or an object with one key naming the variant")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        if self.1.quiet {
            return quietly(
                self.0
                    .visit_enum(IntoDeserializer::<Quiet>::into_deserializer(v)),
            );
        }
        self.0.visit_enum(v.into_deserializer())
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        if self.1.quiet {
            return quietly(
                self.0
                    .visit_enum(de::value::BorrowedStrDeserializer::<Quiet>::new(v)),
            );
        }
        self.0
            .visit_enum(de::value::BorrowedStrDeserializer::new(v))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        if self.1.quiet {
            return quietly(
                self.0
                    .visit_enum(IntoDeserializer::<Quiet>::into_deserializer(v)),
            );
        }
        self.0.visit_enum(v.into_deserializer())
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        let guard = self.1;
        guard.enter()?;
        let out = self.0.visit_enum(MapEnum(map, guard));
        guard.leave();
        out
    }
}

/// An enum named by a string, read where only the answer matters. serde's enums refuse a name
/// no variant has with a message listing every variant, written and then dropped; in a quiet
/// read the enum's visitor is handed an error type that writes nothing instead. The visitor
/// still decides (a `#[serde(other)]` variant takes any name), and what it accepts costs the
/// same.
fn quietly<T, E: de::Error>(read: Result<T, Quiet>) -> Result<T, E> {
    read.map_err(|Quiet| E::custom("the enum's value was refused"))
}

/// A refusal without words, for reads whose error is dropped.
#[derive(Debug)]
struct Quiet;

impl fmt::Display for Quiet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("refused")
    }
}

impl std::error::Error for Quiet {}

impl de::Error for Quiet {
    fn custom<T: fmt::Display>(_: T) -> Self {
        Self
    }
}

struct MapEnum<'g, A>(A, &'g Guard);

impl<'g, 'de, A: MapAccess<'de>> EnumAccess<'de> for MapEnum<'g, A> {
    type Error = A::Error;
    type Variant = MapVariant<'g, A>;

    fn variant_seed<V: DeserializeSeed<'de>>(
        mut self,
        seed: V,
    ) -> Result<(V::Value, Self::Variant), Self::Error> {
        match self.0.next_key_seed(seed)? {
            Some(variant) => Ok((variant, MapVariant(self.0, self.1))),
            None => Err(de::Error::invalid_length(
                0,
                &"an object with exactly one key naming the variant",
            )),
        }
    }
}

struct MapVariant<'g, A>(A, &'g Guard);

impl<'de, A: MapAccess<'de>> MapVariant<'_, A> {
    fn value<T: DeserializeSeed<'de>>(mut self, seed: T) -> Result<T::Value, A::Error> {
        let value = self.0.next_value_seed(Seed(seed, self.1))?;
        if self.0.next_key::<IgnoredAny>()?.is_some() {
            return Err(de::Error::invalid_length(
                2,
                &"an object with exactly one key naming the variant",
            ));
        }
        Ok(value)
    }
}

impl<'de, A: MapAccess<'de>> VariantAccess<'de> for MapVariant<'_, A> {
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

/// Reads the arguments struct `#[tool]` generates from JSON text under `limits`, through
/// [`Args`], requiring the whole text to be consumed; the byte limit is the caller's to check.
/// `quiet` when the caller drops the error and keeps only that the read failed: some refusals
/// then carry no words.
pub(crate) fn args_from_str<T: de::DeserializeOwned>(
    text: &str,
    limits: &InputLimits,
    quiet: bool,
) -> Result<T, serde_json::Error> {
    read_text::<T, true>(text, limits, quiet)
}

/// Reads the arguments struct `#[tool]` generates from a parsed value, through [`Args`]. The
/// value's limits are checked before (without recursion); here they hold again for values
/// nested in what the struct reads, at no extra cost. `quiet` as for [`args_from_str`].
pub(crate) fn args_from_value<T: de::DeserializeOwned>(
    value: &serde_json::Value,
    limits: &InputLimits,
    quiet: bool,
) -> Result<T, serde_json::Error> {
    read_value::<T, true>(value, limits, quiet)
}

/// Any `T` from JSON text, as [`args_from_str`] reads the arguments struct, through [`Strict`].
#[cfg(test)]
fn from_str<T: de::DeserializeOwned>(
    text: &str,
    limits: &InputLimits,
    quiet: bool,
) -> Result<T, serde_json::Error> {
    read_text::<T, false>(text, limits, quiet)
}

/// Any `T` from a parsed value, as [`args_from_value`] reads the arguments struct, through
/// [`Strict`].
#[cfg(test)]
fn from_value<T: de::DeserializeOwned>(
    value: &serde_json::Value,
    limits: &InputLimits,
    quiet: bool,
) -> Result<T, serde_json::Error> {
    read_value::<T, false>(value, limits, quiet)
}

/// A read from text through [`Strict`], or with `ARGS` through [`Args`] (a constant: only one
/// of the two is compiled for `T`).
fn read_text<T: de::DeserializeOwned, const ARGS: bool>(
    text: &str,
    limits: &InputLimits,
    quiet: bool,
) -> Result<T, serde_json::Error> {
    let guard = Guard::new(limits, true, quiet);
    guard.node::<serde_json::Error>()?;
    let mut de = serde_json::Deserializer::from_str(text);
    let value = if ARGS {
        T::deserialize(Args(Strict(&mut de, &guard)))?
    } else {
        T::deserialize(Strict(&mut de, &guard))?
    };
    de.end()?;
    Ok(value)
}

/// A read from a parsed value through [`Strict`], or with `ARGS` through [`Args`].
fn read_value<T: de::DeserializeOwned, const ARGS: bool>(
    value: &serde_json::Value,
    limits: &InputLimits,
    quiet: bool,
) -> Result<T, serde_json::Error> {
    let guard = Guard::new(limits, false, quiet);
    guard.node::<serde_json::Error>()?;
    if ARGS {
        T::deserialize(Args(Strict(value, &guard)))
    } else {
        T::deserialize(Strict(value, &guard))
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use std::collections::BTreeMap;

    use super::*;

    fn from_str<T: de::DeserializeOwned>(text: &str) -> Result<T, serde_json::Error> {
        super::from_str(text, &InputLimits::DEFAULT, false)
    }

    fn from_value<T: de::DeserializeOwned>(
        value: &serde_json::Value,
    ) -> Result<T, serde_json::Error> {
        super::from_value(value, &InputLimits::DEFAULT, false)
    }

    #[test]
    fn repeated_keys_are_refused_in_maps_and_values_at_every_depth() {
        assert!(from_str::<BTreeMap<String, u8>>(r#"{"a":1,"b":2}"#).is_ok());
        assert!(from_str::<BTreeMap<String, u8>>(r#"{"a":1,"a":2}"#).is_err());
        assert!(from_str::<serde_json::Value>(r#"[{"x":{"y":1,"y":2}}]"#).is_err());
        assert!(from_str::<BTreeMap<u8, u8>>(r#"{"1":1,"1":2}"#).is_err());
        assert!(from_str::<Outer>(r#"{"points":[{"x":1,"y":2,"x":3}],"shape":null}"#).is_err());
        // Many keys spill from the inline set and are still compared.
        let many: String = (0..20).map(|i| format!(r#""k{i}":{i},"#)).collect();
        assert!(from_str::<BTreeMap<String, u8>>(&format!("{{{many}\"k3\":0}}")).is_err());
        assert!(from_str::<BTreeMap<String, u8>>(&format!("{{{many}\"k99\":0}}")).is_ok());
    }

    #[derive(Debug, Deserialize)]
    struct Lenient {
        #[allow(dead_code)]
        a: u8,
    }

    #[test]
    fn skipped_values_count_too() {
        assert!(from_str::<Lenient>(r#"{"a": 1, "b": [1, 2]}"#).is_ok());
        let limits = InputLimits::DEFAULT.with_max_items(2);
        assert!(super::from_str::<Lenient>(r#"{"a": 1, "b": [1, 2, 3]}"#, &limits, false).is_err());
        assert!(from_str::<Lenient>(r#"{"a": 1, "b": {"x": 1, "x": 2}}"#).is_err());
    }

    #[test]
    fn limits_hold_while_reading() {
        let limits = InputLimits::DEFAULT.with_max_items(3);
        assert!(super::from_str::<Vec<u8>>("[1,2,3]", &limits, false).is_ok());
        assert!(super::from_str::<Vec<u8>>("[1,2,3,4]", &limits, false).is_err());
        let limits = InputLimits::DEFAULT.with_max_depth(2);
        assert!(super::from_str::<Vec<Vec<u8>>>("[[1]]", &limits, false).is_ok());
        assert!(super::from_str::<Vec<Vec<Vec<u8>>>>("[[[1]]]", &limits, false).is_err());
        let limits = InputLimits::DEFAULT.with_max_nodes(3);
        assert!(super::from_str::<Vec<u8>>("[1,2]", &limits, false).is_ok());
        assert!(super::from_str::<Vec<u8>>("[1,2,3]", &limits, false).is_err());
        let limits = InputLimits::DEFAULT.with_max_members(1);
        assert!(
            super::from_str::<BTreeMap<String, u8>>(r#"{"a":1,"b":2}"#, &limits, false).is_err()
        );
        assert!(
            super::from_value::<Vec<Vec<Vec<u8>>>>(
                &serde_json::json!([[[1]]]),
                &InputLimits::DEFAULT.with_max_depth(2),
                false,
            )
            .is_err()
        );
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(rename_all = "lowercase")]
    enum Window {
        Day,
        Week,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(rename_all = "lowercase")]
    enum Open {
        Day,
        #[serde(other)]
        Other,
    }

    #[test]
    fn a_quiet_read_gives_the_same_answer_without_serde_words() {
        for quiet in [false, true] {
            let text = |t: &str| super::from_str::<Window>(t, &InputLimits::DEFAULT, quiet);
            let value =
                |t: &str| super::from_value::<Window>(&t.into(), &InputLimits::DEFAULT, quiet);
            assert_eq!(text(r#""week""#).unwrap(), Window::Week);
            assert_eq!(value("week").unwrap(), Window::Week);
            assert!(text(r#""month""#).is_err());
            assert!(value("month").is_err());
            assert!(
                text(r#""We\u0065k""#).is_err(),
                "an escaped name is read as any other"
            );
            assert_eq!(text(r#""we\u0065k""#).unwrap(), Window::Week);
            // A `#[serde(other)]` variant still takes a name no variant has.
            let open = |t: &str| super::from_str::<Open>(t, &InputLimits::DEFAULT, quiet);
            assert_eq!(open(r#""day""#).unwrap(), Open::Day);
            assert_eq!(open(r#""month""#).unwrap(), Open::Other);
        }
        let loud = super::from_str::<Window>(r#""month""#, &InputLimits::DEFAULT, false);
        assert!(
            loud.unwrap_err()
                .to_string()
                .contains("expected `day` or `week`")
        );
        let quiet = super::from_str::<Window>(r#""month""#, &InputLimits::DEFAULT, true);
        assert!(!quiet.unwrap_err().to_string().contains("expected"));
    }

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
