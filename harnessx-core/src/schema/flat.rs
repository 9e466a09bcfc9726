//! The common shape of a tool's input schema — an object of named fields of simple types —
//! checked in one pass without the general validator.
//!
//! Most tools take a flat object: `#[tool]` functions with scalar and optional parameters, and
//! most MCP tools. For those, [`FlatObject`] checks a call's arguments in one pass over its
//! object: each key is matched against a short list of field names (no hashing), each value
//! against its field's types and bounds, and the required fields are counted with a bit mask.
//! It only ever *accepts*: arguments it cannot vouch for (a failure, or a value it does not
//! judge, such as a number with a fractional part against `"integer"`) go to the general
//! validator, which decides and words the error. So its answer is never different from the
//! validator's, only quicker when the arguments are valid.
//!
//! A schema qualifies only when every keyword in it is one this check implements exactly as
//! every JSON Schema draft from 4 to 2020-12 defines it; any other keyword (`$ref`, `format`,
//! `pattern`, `exclusiveMinimum`, nested `properties`, ...) leaves the schema to the validator.

use serde_json::{Map, Value};

/// An object schema of at most [`MAX_FIELDS`] fields of simple types.
#[derive(Debug)]
pub(super) struct FlatObject {
    fields: Box<[Field]>,
    /// Bit `i` set when field `i` is required.
    required: u64,
    /// `additionalProperties: false`: a key that names no field fails.
    closed: bool,
}

/// How many fields a flat schema may have: one bit each in the required mask.
const MAX_FIELDS: usize = 64;

/// One field: the JSON types it accepts and the bounds its value must keep.
#[derive(Debug)]
struct Field {
    name: Box<str>,
    /// Bits of [`Kind`]; all of them when the field names no type.
    kinds: u8,
    /// `enum`, when every member is a string, boolean or null (compared exactly).
    members: Option<Box<[Value]>>,
    min_length: Option<u64>,
    max_length: Option<u64>,
    minimum: Option<i128>,
    maximum: Option<i128>,
    /// Whether any of the checks after the kind's applies.
    bounded: bool,
}

/// The JSON types, one bit each.
#[derive(Clone, Copy)]
#[repr(u8)]
enum Kind {
    Null = 1,
    Boolean = 2,
    Integer = 4,
    /// Any number; an integer is a number too.
    Number = 8,
    String = 16,
    Array = 32,
    Object = 64,
}

const ANY: u8 = 127;

/// Keywords of the root that this check implements, or that do not affect validation.
const ROOT_KEYWORDS: &[&str] = &[
    "type",
    "properties",
    "required",
    "additionalProperties",
    "$schema",
    "$defs",
    "definitions",
    "title",
    "description",
    "default",
    "examples",
];

/// Keywords of a field that this check implements, or that do not affect validation.
const FIELD_KEYWORDS: &[&str] = &[
    "type",
    "enum",
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
    "title",
    "description",
    "default",
    "examples",
];

/// The drafts whose meaning of every keyword above is the same.
const DRAFTS: &[&str] = &[
    "http://json-schema.org/draft-04/schema#",
    "http://json-schema.org/draft-06/schema#",
    "http://json-schema.org/draft-07/schema#",
    "http://json-schema.org/draft-07/schema",
    "https://json-schema.org/draft/2019-09/schema",
    "https://json-schema.org/draft/2020-12/schema",
];

impl FlatObject {
    /// The flat form of `schema`, or `None` when it is not (entirely) of that shape.
    pub(super) fn of(schema: &Value) -> Option<Self> {
        let root = schema.as_object()?;
        if !root.keys().all(|k| ROOT_KEYWORDS.contains(&k.as_str())) {
            return None;
        }
        if root.get("type")?.as_str()? != "object" {
            return None;
        }
        if let Some(draft) = root.get("$schema") {
            DRAFTS.contains(&draft.as_str()?).then_some(())?;
        }
        let closed = match root.get("additionalProperties") {
            None | Some(Value::Bool(true)) => false,
            Some(Value::Bool(false)) => true,
            Some(_) => return None,
        };
        let empty = Map::new();
        let properties = match root.get("properties") {
            None => &empty,
            Some(p) => p.as_object()?,
        };
        if properties.len() > MAX_FIELDS {
            return None;
        }
        let fields = properties
            .iter()
            .map(|(name, schema)| Field::of(name, schema))
            .collect::<Option<Box<[Field]>>>()?;
        let mut required = 0u64;
        let names = match root.get("required") {
            None => &[][..],
            Some(names) => names.as_array()?.as_slice(),
        };
        for name in names {
            let name = name.as_str()?;
            // A required name with no field of its own: the validator's to judge.
            let i = fields.iter().position(|f| *f.name == *name)?;
            required |= 1 << i;
        }
        Some(Self {
            fields,
            required,
            closed,
        })
    }

    /// Whether `args` certainly satisfies the schema. `false` means "ask the validator", not
    /// "invalid".
    pub(super) fn accepts(&self, args: &Value) -> bool {
        let Value::Object(map) = args else {
            return false;
        };
        let mut seen = 0u64;
        for (key, value) in map {
            match self.fields.iter().position(|f| *f.name == **key) {
                Some(i) => {
                    if !self.fields[i].accepts(value) {
                        return false;
                    }
                    seen |= 1 << i;
                }
                None if self.closed => return false,
                None => {}
            }
        }
        seen & self.required == self.required
    }
}

impl Field {
    fn of(name: &str, schema: &Value) -> Option<Self> {
        let schema = match schema {
            Value::Object(map) => map,
            // `true` accepts anything; `false` is the validator's.
            Value::Bool(true) => &Map::new(),
            _ => return None,
        };
        if !schema.keys().all(|k| FIELD_KEYWORDS.contains(&k.as_str())) {
            return None;
        }
        let kinds = match schema.get("type") {
            None => ANY,
            Some(Value::String(t)) => kind(t)?,
            Some(Value::Array(types)) if !types.is_empty() => types
                .iter()
                .map(|t| kind(t.as_str()?))
                .try_fold(0, |all, k| Some(all | k?))?,
            Some(_) => return None,
        };
        let members = match schema.get("enum") {
            None => None,
            Some(Value::Array(members))
                if members
                    .iter()
                    .all(|m| matches!(m, Value::String(_) | Value::Bool(_) | Value::Null)) =>
            {
                Some(members.clone().into_boxed_slice())
            }
            Some(_) => return None,
        };
        let count = |key| match schema.get(key) {
            None => Some(None),
            Some(v) => v.as_u64().map(Some),
        };
        let bound = |key| match schema.get(key) {
            None => Some(None),
            Some(v) => integer(v).map(Some),
        };
        let mut field = Self {
            name: name.into(),
            kinds,
            members,
            min_length: count("minLength")?,
            max_length: count("maxLength")?,
            minimum: bound("minimum")?,
            maximum: bound("maximum")?,
            bounded: false,
        };
        field.bounded = field.members.is_some()
            || field.min_length.is_some()
            || field.max_length.is_some()
            || field.minimum.is_some()
            || field.maximum.is_some();
        Some(field)
    }

    fn accepts(&self, value: &Value) -> bool {
        let (kind, number) = match value {
            Value::Null => (Kind::Null as u8, None),
            Value::Bool(_) => (Kind::Boolean as u8, None),
            Value::Number(_) => match integer(value) {
                Some(n) => (Kind::Integer as u8 | Kind::Number as u8, Some(n)),
                // Any other number is only a number here: one that JSON Schema may still
                // count as an integer (`1.0`) fails the kind check below when the field wants
                // an integer, and one a bound applies to is left to the validator, which
                // compares fractions.
                None if self.minimum.is_some() || self.maximum.is_some() => return false,
                None => (Kind::Number as u8, None),
            },
            Value::String(_) => (Kind::String as u8, None),
            Value::Array(_) => (Kind::Array as u8, None),
            Value::Object(_) => (Kind::Object as u8, None),
        };
        if self.kinds & kind == 0 {
            return false;
        }
        if !self.bounded {
            return true;
        }
        if let Some(members) = &self.members
            && !members.contains(value)
        {
            return false;
        }
        if let Value::String(s) = value
            && (self.min_length.is_some() || self.max_length.is_some())
        {
            // JSON Schema counts characters (code points), not bytes.
            let chars = s.chars().count() as u64;
            if self.min_length.is_some_and(|min| chars < min)
                || self.max_length.is_some_and(|max| chars > max)
            {
                return false;
            }
        }
        number.is_none_or(|n| {
            self.minimum.is_none_or(|min| n >= min) && self.maximum.is_none_or(|max| n <= max)
        })
    }
}

fn kind(name: &str) -> Option<u8> {
    Some(match name {
        "null" => Kind::Null,
        "boolean" => Kind::Boolean,
        "integer" => Kind::Integer,
        "number" => Kind::Number,
        "string" => Kind::String,
        "array" => Kind::Array,
        "object" => Kind::Object,
        _ => return None,
    } as u8)
}

/// A number stored as an integer (not `1.0`), widened so that every `i64` and `u64` compares.
fn integer(value: &Value) -> Option<i128> {
    let Value::Number(n) = value else { return None };
    n.as_i64()
        .map(i128::from)
        .or_else(|| n.as_u64().map(i128::from))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    /// Schemas of the flat shape: what `#[tool]` makes for scalar and optional parameters, what
    /// the MCP TypeScript SDK sends (zod, with `$schema`), and the bounds and enums in between.
    fn flat_schemas() -> Vec<Value> {
        vec![
            json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                   "required": ["a", "b"], "additionalProperties": false}),
            json!({"type": "object", "properties": {"message": {"type": "string", "description": "Message to echo"}},
                   "required": ["message"], "additionalProperties": false,
                   "$schema": "http://json-schema.org/draft-07/schema#"}),
            json!({"type": "object", "properties": {
                      "path": {"type": "string", "minLength": 1, "maxLength": 3},
                      "limit": {"type": ["integer", "null"], "minimum": 0, "maximum": 10, "default": 5},
                      "ratio": {"type": "number"},
                      "mode": {"enum": ["fast", "slow", null]},
                      "flag": {"type": "boolean"},
                      "tags": {"type": "array"},
                      "extra": {"type": "object"},
                      "anything": {},
                      "also": true},
                   "required": ["path"]}),
            json!({"type": "object"}),
            json!({"type": "object", "properties": {"n": {"type": "number", "minimum": -3}},
                   "$schema": "https://json-schema.org/draft/2020-12/schema"}),
        ]
    }

    #[test]
    fn the_schemas_tools_usually_have_are_flat() {
        for schema in flat_schemas() {
            assert!(FlatObject::of(&schema).is_some(), "{schema}");
        }
    }

    #[test]
    fn schemas_with_any_other_keyword_are_left_to_the_validator() {
        let not_flat = [
            json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}, "$defs": {"A": {"type": "string"}}}),
            json!({"type": "object", "properties": {"a": {"type": "string", "format": "email"}}}),
            json!({"type": "object", "properties": {"a": {"type": "string", "pattern": "^x"}}}),
            json!({"type": "object", "properties": {"a": {"type": "integer", "exclusiveMinimum": 0}}}),
            json!({"type": "object", "properties": {"a": {"type": "integer", "minimum": 0.5}}}),
            json!({"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {}}}}}),
            json!({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string"}}}}),
            json!({"type": "object", "properties": {"a": {"type": ["string", "date"]}}}),
            json!({"type": "object", "properties": {"a": {"type": []}}}),
            json!({"type": "object", "properties": {"a": {"enum": [1, 2]}}}),
            json!({"type": "object", "properties": {"a": {"minLength": -1}}}),
            json!({"type": "object", "properties": {"a": false}}),
            json!({"type": "object", "properties": {"a": {}}, "required": ["b"]}),
            json!({"type": "object", "properties": {"a": {}}, "required": [1]}),
            json!({"type": "object", "additionalProperties": {"type": "string"}}),
            json!({"type": "object", "patternProperties": {"^x": {}}}),
            json!({"type": "object", "$schema": "http://json-schema.org/draft-03/schema#"}),
            json!({"type": ["object"]}),
            json!({"type": "object", "allOf": [{"required": ["a"]}]}),
            json!({"properties": {}}),
        ];
        for schema in not_flat {
            assert!(FlatObject::of(&schema).is_none(), "{schema}");
        }
        let many: Map<String, Value> = (0..65).map(|i| (format!("f{i}"), json!({}))).collect();
        assert!(FlatObject::of(&json!({"type": "object", "properties": many})).is_none());
    }

    #[test]
    fn what_is_not_certain_goes_to_the_validator() {
        let flat = FlatObject::of(&flat_schemas()[2]).unwrap();
        // `1.0` is an integer to JSON Schema (draft 6 on), and within bounds: the validator's.
        assert!(!flat.accepts(&json!({"path": "a", "limit": 1.0})));
        assert!(!flat.accepts(&json!({"path": "a", "ratio": 0.5, "limit": 11})));
        assert!(flat.accepts(&json!({"path": "a", "ratio": 0.5, "limit": 10, "mode": null})));
        // Characters, not bytes.
        assert!(flat.accepts(&json!({"path": "äöü"})));
        assert!(!flat.accepts(&json!({"path": "äöüx"})));
        assert!(!flat.accepts(&json!({"path": ""})));
        assert!(!flat.accepts(&json!({"limit": 1})));
        assert!(!flat.accepts(&json!("path")));
        assert!(flat.accepts(&json!({"path": "a", "unknown": [1]})));
        let closed = FlatObject::of(&flat_schemas()[0]).unwrap();
        assert!(closed.accepts(&json!({"a": 1, "b": u64::MAX})));
        assert!(!closed.accepts(&json!({"a": 1, "b": 2, "c": 3})));
    }

    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            (-20i64..20).prop_map(Value::from),
            prop_oneof![Just(1.0), Just(-0.0), Just(2.5), Just(1e300), Just(-3.0)]
                .prop_map(Value::from),
            "[a-zä]{0,5}".prop_map(Value::from),
            prop_oneof![Just("fast"), Just("slow"), Just("x")].prop_map(Value::from),
        ];
        leaf.prop_recursive(2, 8, 3, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
                prop::collection::vec(("[a-c]", inner), 0..3)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    /// A value that often suits the field of that name in [`flat_schemas`], so that valid
    /// arguments (and ones off by one key or value) come up often.
    fn value_for(key: &'static str) -> BoxedStrategy<Value> {
        let suitable = match key {
            "a" | "b" | "limit" => (-2i64..12).prop_map(Value::from).boxed(),
            "n" => prop_oneof![
                (-5i64..5).prop_map(Value::from),
                Just(json!(-3.5)),
                Just(json!(-2.5))
            ]
            .boxed(),
            "message" | "path" => "[a-zä]{0,4}".prop_map(Value::from).boxed(),
            "mode" => {
                prop_oneof![Just(json!("fast")), Just(json!("slow")), Just(Value::Null)].boxed()
            }
            "flag" => any::<bool>().prop_map(Value::Bool).boxed(),
            "ratio" => prop_oneof![Just(json!(0.5)), Just(json!(3))].boxed(),
            "tags" => Just(json!(["x", 1])).boxed(),
            _ => Just(json!({"k": [1.5]})).boxed(),
        };
        prop_oneof![3 => suitable, 1 => value()].boxed()
    }

    fn arguments() -> impl Strategy<Value = Value> {
        let keys = prop_oneof![
            Just("a"),
            Just("b"),
            Just("c"),
            Just("message"),
            Just("path"),
            Just("limit"),
            Just("ratio"),
            Just("mode"),
            Just("flag"),
            Just("tags"),
            Just("extra"),
            Just("n"),
            Just("also"),
            Just("anything")
        ];
        prop_oneof![
            4 => prop::collection::vec(keys.prop_flat_map(|k| (Just(k), value_for(k))), 0..5)
                .prop_map(|kv| Value::Object(kv.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())),
            1 => value(),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2048))]
        /// The flat check never accepts what the validator refuses, and accepts everything the
        /// validator accepts unless a top-level value is a number with a fraction part.
        #[test]
        fn the_flat_check_agrees_with_the_validator(args in arguments()) {
            for schema in flat_schemas() {
                let flat = FlatObject::of(&schema).unwrap();
                let valid = jsonschema::validator_for(&schema).unwrap().is_valid(&args);
                let accepted = flat.accepts(&args);
                prop_assert!(!accepted || valid, "{schema} accepted {args}");
                let fractions = args.as_object().is_some_and(|m| m.values().any(Value::is_f64));
                prop_assert!(!valid || accepted || fractions, "{schema} left {args} to the validator");
            }
        }
    }
}
