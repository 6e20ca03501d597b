//! [`Field`]: one field of a request as it was sent — absent, `null`, a value of its type, or a
//! value of the wrong type kept as it came — so that reading a body never fails on a field and
//! the validation, not serde, words the refusal (docs/contract.md#errors).

use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, DeserializeOwned, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// One field of a request as sent.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Field<T> {
    /// Not in the body.
    #[default]
    Absent,
    /// Sent as `null` (for most fields the same as absent).
    Null,
    /// A value of the field's type.
    Given(T),
    /// A value of another type, kept for the refusal (and sent on unchanged when serialised).
    Wrong(Value),
}

impl<T> Field<T> {
    /// Whether the body left it out (serde's `skip_serializing_if`).
    pub fn is_absent(&self) -> bool {
        matches!(self, Field::Absent)
    }

    /// Absent or `null`: the field says nothing.
    pub fn is_unset(&self) -> bool {
        matches!(self, Field::Absent | Field::Null)
    }

    /// The value: `None` when absent or `null`, and `Err(())` when it has the wrong type, for
    /// the caller to word.
    #[expect(
        clippy::result_unit_err,
        reason = "the caller words the refusal, naming its field"
    )]
    pub fn value(self) -> Result<Option<T>, ()> {
        match self {
            Field::Absent | Field::Null => Ok(None),
            Field::Given(value) => Ok(Some(value)),
            Field::Wrong(_) => Err(()),
        }
    }
}

impl Field<String> {
    /// The string trimmed, when it is given and not blank; anything else reads as left out.
    pub fn nonblank(&self) -> Option<&str> {
        match self {
            Field::Given(text) => Some(text.trim()).filter(|text| !text.is_empty()),
            _ => None,
        }
    }
}

impl<T> Field<Box<T>> {
    /// An envelope's fields: its `payload` when that is an object, else `body` itself.
    pub fn payload_or<'a>(&'a self, body: &'a T) -> &'a T {
        match self {
            Field::Given(payload) => payload,
            _ => body,
        }
    }
}

impl<T> From<Option<T>> for Field<T> {
    fn from(value: Option<T>) -> Self {
        value.map_or(Field::Absent, Field::Given)
    }
}

impl<T> From<T> for Field<T> {
    fn from(value: T) -> Self {
        Field::Given(value)
    }
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for Field<T> {
    /// Read through `deserialize_option`, so a field left out of a struct reads as
    /// [`Field::Null`] without `#[serde(default)]` (which would put `"default": null` in every
    /// documented schema); a struct that must tell a left-out field from `null` gives that one
    /// field `#[serde(default)]`, which makes it [`Field::Absent`].
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_option(FieldVisitor(PhantomData))
    }
}

struct FieldVisitor<T>(PhantomData<T>);

impl<'de, T: DeserializeOwned> Visitor<'de> for FieldVisitor<T> {
    type Value = Field<T>;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("any JSON value")
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Field::Null)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Field::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        // Read as a JSON value first, then try the field's type: a mismatch is kept, not
        // thrown, so one wrong field never hides behind serde's message for it.
        let value = Value::deserialize(deserializer)?;
        if value.is_null() {
            return Ok(Field::Null);
        }
        Ok(match T::deserialize(ObjectsOnly(&value)) {
            Ok(typed) => Field::Given(typed),
            Err(_) => Field::Wrong(value),
        })
    }
}

/// A JSON value read as serde reads `&Value`, except that a struct must be an object: serde's
/// derive also reads a struct from a list of its fields in order, which no agent means (a
/// `payload` or an option sent as a list is refused, as the contract says).
struct ObjectsOnly<'de>(&'de Value);

impl<'de> Deserializer<'de> for ObjectsOnly<'de> {
    type Error = serde_json::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        self.0.deserialize_any(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        self.0.deserialize_option(visitor)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.deserialize_enum(name, variants, visitor)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        if !self.0.is_object() {
            return Err(de::Error::custom("a struct is an object"));
        }
        self.0.deserialize_struct(name, fields, visitor)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        unit unit_struct newtype_struct seq tuple tuple_struct map identifier ignored_any
    }
}

impl<T: Serialize> Serialize for Field<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Field::Absent | Field::Null => serializer.serialize_none(),
            Field::Given(value) => value.serialize(serializer),
            Field::Wrong(value) => value.serialize(serializer),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
    struct Pair {
        id: Field<String>,
        label: Field<String>,
    }

    #[test]
    fn a_struct_field_is_an_object_never_a_list_of_its_fields() {
        let read =
            |value: Value| serde_json::from_value::<Field<Pair>>(value).expect("never fails");
        assert!(matches!(
            read(json!({"id": "a", "label": "A"})),
            Field::Given(_)
        ));
        assert_eq!(read(json!(["a", "A"])), Field::Wrong(json!(["a", "A"])));
    }

    #[derive(Debug, Default, Deserialize, Serialize)]
    struct Probe {
        #[serde(skip_serializing_if = "Field::is_unset")]
        count: Field<i64>,
        #[serde(default, skip_serializing_if = "Field::is_absent")]
        envelope: Field<i64>,
    }

    #[test]
    fn a_field_keeps_whether_it_was_absent_null_typed_or_wrong() {
        let read = |body: Value| serde_json::from_value::<Probe>(body).expect("never fails");
        assert_eq!(read(json!({})).count, Field::Null);
        assert_eq!(read(json!({"count": null})).count, Field::Null);
        assert_eq!(read(json!({})).envelope, Field::Absent);
        assert_eq!(read(json!({"envelope": null})).envelope, Field::Null);
        assert_eq!(read(json!({"count": 3})).count, Field::Given(3));
        assert_eq!(read(json!({"count": 1.5})).count, Field::Wrong(json!(1.5)));
        assert_eq!(read(json!({"count": "3"})).count, Field::Wrong(json!("3")));
    }

    #[test]
    fn a_field_is_sent_as_it_was_read_and_an_unset_one_not_at_all() {
        let sent = |count: Field<i64>| {
            serde_json::to_value(Probe {
                count,
                envelope: Field::Absent,
            })
            .expect("a value")
        };
        assert_eq!(sent(Field::Absent), json!({}));
        assert_eq!(sent(Field::Null), json!({}));
        assert_eq!(sent(Field::Given(3)), json!({"count": 3}));
        assert_eq!(sent(Field::Wrong(json!("x"))), json!({"count": "x"}));
    }
}
