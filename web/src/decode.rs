//! Typed data out of an already parsed JSON value.
//!
//! Every response's `data` (over HTTP and over the websocket) is parsed once into a
//! [`serde_json::Value`] and then decoded into the operation's generated types here. GraphQL
//! always answers an object with an object, so unlike `serde_json::from_value` this decoder never
//! reads a struct from an array: the array path of every generated type is then never called and
//! the compiler leaves it out of the wasm, which keeps the dashboard within its size budget.

use std::fmt;

use serde::de::value::StringDeserializer;
use serde::de::{
    self, DeserializeOwned, DeserializeSeed, Deserializer, IntoDeserializer, MapAccess, SeqAccess,
    Visitor,
};
use serde_json::{Map, Value};

/// Decode `value` into `T`.
pub fn from_value<T: DeserializeOwned>(value: Value) -> Result<T, DecodeError> {
    T::deserialize(Data(value))
}

/// Why a value did not have the expected shape.
#[derive(Debug)]
pub struct DecodeError(String);

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DecodeError {}

impl de::Error for DecodeError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        Self(msg.to_string())
    }
}

fn expected(what: &str, found: &Value) -> DecodeError {
    let kind = match found {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    };
    DecodeError(format!("expected {what}, found {kind}"))
}

struct Data(Value);

impl<'de> Deserializer<'de> for Data {
    type Error = DecodeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        match self.0 {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(b),
            Value::Number(n) => match (n.as_i64(), n.as_u64()) {
                (Some(i), _) => visitor.visit_i64(i),
                (None, Some(u)) => visitor.visit_u64(u),
                (None, None) => visitor.visit_f64(n.as_f64().unwrap_or_default()),
            },
            Value::String(s) => visitor.visit_string(s),
            Value::Array(items) => visitor.visit_seq(Items(items.into_iter())),
            Value::Object(fields) => visitor.visit_map(Fields::new(fields)),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        match self.0 {
            Value::Null => visitor.visit_none(),
            other => visitor.visit_some(Data(other)),
        }
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        match self.0 {
            Value::Array(items) => visitor.visit_seq(Items(items.into_iter())),
            other => Err(expected("a list", &other)),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        match self.0 {
            Value::Object(fields) => visitor.visit_map(Fields::new(fields)),
            other => Err(expected("an object", &other)),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        match self.0 {
            Value::String(word) => {
                let word: StringDeserializer<DecodeError> = word.into_deserializer();
                visitor.visit_enum(word)
            }
            other => Err(expected("a name", &other)),
        }
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        visitor.visit_unit()
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        unit unit_struct tuple tuple_struct map identifier
    }
}

struct Items(std::vec::IntoIter<Value>);

impl<'de> SeqAccess<'de> for Items {
    type Error = DecodeError;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, DecodeError> {
        self.0
            .next()
            .map(|item| seed.deserialize(Data(item)))
            .transpose()
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.0.len())
    }
}

struct Fields {
    fields: serde_json::map::IntoIter,
    value: Option<Value>,
}

impl Fields {
    fn new(fields: Map<String, Value>) -> Self {
        Self {
            fields: fields.into_iter(),
            value: None,
        }
    }
}

impl<'de> MapAccess<'de> for Fields {
    type Error = DecodeError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, DecodeError> {
        let Some((name, value)) = self.fields.next() else {
            return Ok(None);
        };
        self.value = Some(value);
        let name: StringDeserializer<DecodeError> = name.into_deserializer();
        seed.deserialize(name).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, DecodeError> {
        let value = self.value.take().unwrap_or(Value::Null);
        seed.deserialize(Data(value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(rename_all = "camelCase")]
    struct Row {
        id: String,
        amount_minor: i64,
        share: f64,
        note: Option<String>,
        tags: Vec<String>,
        inner: Option<Box<Row>>,
    }

    #[test]
    fn objects_lists_options_and_numbers_decode_like_serde_json() {
        let value = json!({
            "id": "7", "amountMinor": -5, "share": 1, "note": null, "tags": ["a", "b"],
            "extra": {"ignored": [1, 2]},
            "inner": {"id": "8", "amountMinor": 9007199254740993i64, "share": 0.5,
                      "note": "n", "tags": [], "inner": null}
        });
        let row: Row = from_value(value.clone()).unwrap();
        let reference: Row = serde_json::from_value(value).unwrap();
        assert_eq!(row, reference);
        assert_eq!(row.inner.unwrap().amount_minor, 9_007_199_254_740_993);
    }

    #[test]
    fn a_struct_is_never_read_from_a_list_and_a_wrong_shape_names_what_was_found() {
        let err = from_value::<Row>(json!(["7", 1, 1.0, null, [], null])).unwrap_err();
        assert_eq!(err.to_string(), "expected an object, found a list");
        let err = from_value::<Row>(json!({"id": 7})).unwrap_err();
        assert!(err.to_string().contains("expected a string"), "{err}");
    }
}
