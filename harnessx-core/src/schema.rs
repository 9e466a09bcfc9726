//! JSON Schema: inferring parameter schemas from Rust types, checking and compiling input
//! schemas, and turning validation failures into one-line errors the model can act on.

pub mod export;
mod flat;

use serde_json::{Map, Value, json};

use crate::error::RegistryError;
use crate::output::echo;

/// A compiled input schema. Built once at registration, used for every call.
pub(crate) struct CompiledSchema {
    validator: jsonschema::Validator,
    /// The same schema in its flat form, when it has one: valid arguments are accepted without
    /// the validator.
    flat: Option<flat::FlatObject>,
    /// How many properties the schema declares at its top level: the room a call's arguments
    /// are parsed into.
    properties: usize,
    /// The schema as given, to explain a failed `oneOf`/`anyOf` by its branches.
    schema: Value,
}

impl std::fmt::Debug for CompiledSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CompiledSchema")
    }
}

impl CompiledSchema {
    /// Checks that the root is an object schema and compiles it.
    pub(crate) fn compile(tool: &str, schema: &Value) -> Result<Self, RegistryError> {
        check_object_root(tool, schema)?;
        let validator =
            jsonschema::validator_for(schema).map_err(|e| RegistryError::InvalidSchema {
                tool: tool.to_owned(),
                reason: e.to_string(),
            })?;
        let properties = schema
            .get("properties")
            .and_then(Value::as_object)
            .map_or(0, Map::len);
        Ok(Self {
            validator,
            flat: flat::FlatObject::of(schema),
            properties,
            schema: schema.clone(),
        })
    }

    /// How many properties the schema declares at its top level.
    pub(crate) fn properties(&self) -> usize {
        self.properties
    }

    /// Validates arguments; on failure a one-line message naming the field (nested fields by
    /// path, `items[0].name`).
    pub(crate) fn validate(&self, tool: &str, args: &Value) -> Result<(), String> {
        let Some(invalid) = self.problem(args) else {
            return Ok(());
        };
        // The model's own keys are quoted back shortened (`… (N bytes)`).
        let location = match &invalid.field {
            Some(f) => format!("field `{}`", echo(f)),
            None => "the arguments".to_owned(),
        };
        let extra = match invalid.more {
            0 => String::new(),
            1 => " (1 more problem after this one)".to_owned(),
            n => format!(" ({n} more problems after this one)"),
        };
        Err(format!(
            "Invalid arguments for `{tool}`: {location}: {}{extra}. Fix it and call `{tool}` again.",
            invalid.problem
        ))
    }

    /// The first problem of arguments that do not fit, with how many more there are; `None`
    /// for arguments that fit.
    pub(crate) fn problem(&self, args: &Value) -> Option<InvalidArguments> {
        // The common case first: valid arguments of a flat schema are accepted in one pass;
        // other schemas get the validator's yes/no check, which allocates nothing. The errors
        // are collected only for arguments that fail.
        if self.flat.as_ref().is_some_and(|flat| flat.accepts(args))
            || self.validator.is_valid(args)
        {
            return None;
        }
        let mut errors = self.validator.iter_errors(args);
        let first = errors.next()?;
        let more = errors.count();
        let pointer = first.instance_path().to_string();
        let field = pointer_to_field(&pointer);
        // The values are quoted back shortened (`… (N bytes)`).
        let value = first.instance().to_string();
        let problem = self
            .alternatives_problem(&first, &echo(&value))
            .unwrap_or_else(|| first.masked_with(echo(&value)).to_string());
        Some(InvalidArguments {
            field,
            problem: one_line(&problem),
            more,
        })
    }
}

/// Why arguments do not fit a tool's input schema: the first problem found.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct InvalidArguments {
    /// The field, by path (`path`, `items[0].name`); `None` when the arguments as a whole do
    /// not fit (not an object, a required field missing is reported on the object).
    pub field: Option<String>,
    /// What is wrong with it, in one line (values quoted back shortened).
    pub problem: String,
    /// How many more problems there are after this one.
    pub more: usize,
}

impl std::fmt::Display for InvalidArguments {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.field {
            Some(field) => write!(f, "`{field}`: {}", self.problem)?,
            None => f.write_str(&self.problem)?,
        }
        match self.more {
            0 => Ok(()),
            1 => f.write_str(" (1 more problem after this one)"),
            n => write!(f, " ({n} more problems after this one)"),
        }
    }
}

/// Checks `arguments` against a tool's `input_schema` the way the engine checks a model's call
/// before it runs: the schema's root must be an object schema, and on failure the first
/// problem names the field. A schema that cannot be compiled is reported as the problem too.
///
/// ```
/// use harnessx::schema::check_arguments;
/// use serde_json::json;
/// let schema = json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]});
/// assert!(check_arguments(&schema, &json!({"path": "notes"})).is_ok());
/// let invalid = check_arguments(&schema, &json!({"path": 5})).unwrap_err();
/// assert_eq!(invalid.field.as_deref(), Some("path"));
/// assert_eq!(invalid.to_string(), "`path`: 5 is not of type \"string\"");
/// let missing = check_arguments(&schema, &json!({})).unwrap_err();
/// assert_eq!(missing.field, None);
/// assert_eq!(missing.problem, "\"path\" is a required property");
/// // A schema that is not an object schema checks nothing.
/// let unusable = check_arguments(&json!({"type": "array"}), &json!({})).unwrap_err();
/// assert!(unusable.problem.starts_with("the tool's input schema cannot be used: "), "{unusable}");
/// ```
pub fn check_arguments(input_schema: &Value, arguments: &Value) -> Result<(), InvalidArguments> {
    let compiled = CompiledSchema::compile("tool", input_schema).map_err(|e| InvalidArguments {
        field: None,
        problem: format!("the tool's input schema cannot be used: {e}"),
        more: 0,
    })?;
    compiled.problem(arguments).map_or(Ok(()), Err)
}

impl CompiledSchema {
    /// A failed `oneOf` or `anyOf` in the words of the schema the model saw, where the exported
    /// schema turns `oneOf` into `anyOf`: when every branch is a fixed value (`const` or a
    /// one-value `enum`, as a documented Rust enum becomes), the allowed values; otherwise that
    /// the value matches none (or, for `oneOf`, more than one) of the alternatives. `None` for
    /// every other failure.
    fn alternatives_problem(
        &self,
        error: &jsonschema::ValidationError<'_>,
        value: &str,
    ) -> Option<String> {
        use jsonschema::error::ValidationErrorKind as Kind;
        let several = match error.kind() {
            Kind::OneOfNotValid { .. } | Kind::AnyOf { .. } => false,
            Kind::OneOfMultipleValid { .. } => true,
            _ => return None,
        };
        if several {
            return Some(format!(
                "{value} matches more than one of the alternatives (`anyOf`); send a value that \
                 matches exactly one"
            ));
        }
        let branches = resolve_schema_path(&self.schema, &error.schema_path().to_string())
            .and_then(Value::as_array);
        let fixed: Option<Vec<String>> = branches.and_then(|branches| {
            branches
                .iter()
                .map(
                    |b| match (b.get("const"), b.get("enum").and_then(Value::as_array)) {
                        (Some(c), _) => Some(c.to_string()),
                        (None, Some(values)) if values.len() == 1 => Some(values[0].to_string()),
                        _ => None,
                    },
                )
                .collect::<Option<Vec<String>>>()
        });
        Some(match fixed {
            Some(values) if !values.is_empty() => {
                format!(
                    "{value} is not one of the allowed values: {}",
                    values.join(", ")
                )
            }
            _ => format!("{value} matches none of the alternatives (`anyOf`)"),
        })
    }
}

/// The part of `root` a validator's schema path points at, following local `$ref`s the path
/// goes through (`/properties/mode/$ref/oneOf`).
fn resolve_schema_path<'a>(root: &'a Value, path: &str) -> Option<&'a Value> {
    let mut current = root;
    for raw in path.split('/').skip(1) {
        let segment = raw.replace("~1", "/").replace("~0", "~");
        current = if segment == "$ref" {
            let target = current.get("$ref")?.as_str()?.strip_prefix('#')?;
            root.pointer(target)?
        } else {
            match current {
                Value::Object(map) => map.get(&segment)?,
                Value::Array(items) => items.get(segment.parse::<usize>().ok()?)?,
                _ => return None,
            }
        };
    }
    Some(current)
}

fn one_line(s: &str) -> String {
    let mut out: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if out.len() > 300 {
        let mut cut = 300;
        while !out.is_char_boundary(cut) {
            cut -= 1;
        }
        out.truncate(cut);
        out.push('…');
    }
    out
}

/// `/items/0/name` → `items[0].name`; the root → `None`.
fn pointer_to_field(pointer: &str) -> Option<String> {
    if pointer.is_empty() || pointer == "/" {
        return None;
    }
    let mut out = String::new();
    for raw in pointer.trim_start_matches('/').split('/') {
        let seg = raw.replace("~1", "/").replace("~0", "~");
        if !seg.is_empty() && seg.bytes().all(|b| b.is_ascii_digit()) {
            out.push('[');
            out.push_str(&seg);
            out.push(']');
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&seg);
        }
    }
    Some(out)
}

/// Refuses a schema whose root is not an object schema.
pub(crate) fn check_object_root(tool: &str, schema: &Value) -> Result<(), RegistryError> {
    let Some(obj) = schema.as_object() else {
        return Err(RegistryError::SchemaRootNotObject {
            tool: tool.to_owned(),
            found: json_kind(schema).to_owned(),
        });
    };
    match obj.get("type") {
        Some(Value::String(t)) if t == "object" => Ok(()),
        Some(other) => Err(RegistryError::SchemaRootNotObject {
            tool: tool.to_owned(),
            found: format!("a schema of type {other}"),
        }),
        None => Err(RegistryError::SchemaRootNotObject {
            tool: tool.to_owned(),
            found: "a schema without `\"type\": \"object\"`".to_owned(),
        }),
    }
}

/// What kind of JSON value `v` is, as error messages say it: `"null"`, `"a boolean"`,
/// `"a number"`, `"a string"`, `"an array"` or `"an object"`.
///
/// ```
/// assert_eq!(harnessx::schema::json_kind(&serde_json::json!([1])), "an array");
/// ```
pub fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The properties a schema lists as required (none: empty argument text counts as `{}`).
pub(crate) fn required_fields(schema: &Value) -> Vec<&str> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// One parameter of a `#[tool]` function, as the macro describes it.
#[doc(hidden)]
#[derive(Debug, Clone)]
pub struct ParamSpec {
    /// The parameter name.
    pub name: &'static str,
    /// The text from the `Args:` section, if any.
    pub description: Option<&'static str>,
    /// The type's schema (may contain `$ref`s into the generator's definitions).
    pub schema: Value,
    /// `false` when the parameter has a default.
    pub required: bool,
    /// The default value, shown in the schema.
    pub default: Option<Value>,
}

/// The schema generator settings used for every inferred schema (draft 2020-12, `$defs`).
#[doc(hidden)]
pub fn schema_generator() -> schemars::SchemaGenerator {
    schemars::generate::SchemaSettings::draft2020_12().into_generator()
}

/// The schema of one parameter type, with integer `format`s dropped (they are noise to a model).
#[doc(hidden)]
pub fn param_schema<T: schemars::JsonSchema>(generator: &mut schemars::SchemaGenerator) -> Value {
    let mut v = generator.subschema_for::<T>().to_value();
    strip_formats(&mut v);
    v
}

fn strip_formats(v: &mut Value) {
    match v {
        Value::Object(map) => {
            let numeric = matches!(
                map.get("format").and_then(Value::as_str),
                Some(
                    "int8"
                        | "int16"
                        | "int32"
                        | "int64"
                        | "int128"
                        | "uint"
                        | "uint8"
                        | "uint16"
                        | "uint32"
                        | "uint64"
                        | "uint128"
                        | "int"
                        | "float"
                        | "double"
                )
            );
            if numeric {
                map.remove("format");
            }
            for child in map.values_mut() {
                strip_formats(child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(strip_formats),
        _ => {}
    }
}

/// Assembles the root object schema from the parameters and the generator's definitions.
///
/// `params` holds one slot per function parameter, `None` for a context parameter (the model
/// never sees it); each spec is taken out of its slot. A slice rather than a collected `Vec`, so
/// that the code `#[tool]` generates per tool calls no generic iterator or collection code: a
/// debug build of many tools compiles and links less.
#[doc(hidden)]
pub fn build_input_schema(
    params: &mut [Option<ParamSpec>],
    mut generator: schemars::SchemaGenerator,
) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for p in params.iter_mut().filter_map(Option::take) {
        let mut schema = match p.schema {
            Value::Object(m) => m,
            Value::Bool(true) => Map::new(),
            other => {
                let mut m = Map::new();
                m.insert("allOf".into(), json!([other]));
                m
            }
        };
        if let Some(d) = p.description {
            schema.insert("description".into(), Value::String(d.to_owned()));
        }
        if let Some(d) = p.default {
            schema.insert("default".into(), d);
        }
        if p.required {
            required.push(Value::String(p.name.to_owned()));
        }
        properties.insert(p.name.to_owned(), Value::Object(schema));
    }
    let mut root = Map::new();
    root.insert("type".into(), json!("object"));
    root.insert("properties".into(), Value::Object(properties));
    root.insert("required".into(), Value::Array(required));
    root.insert("additionalProperties".into(), Value::Bool(false));
    let mut defs = Map::new();
    for (name, schema) in generator.take_definitions(true) {
        let mut schema = schema;
        strip_formats(&mut schema);
        defs.insert(name, schema);
    }
    if !defs.is_empty() {
        root.insert("$defs".into(), Value::Object(defs));
    }
    Value::Object(root)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointers_become_field_paths() {
        assert_eq!(pointer_to_field(""), None);
        assert_eq!(pointer_to_field("/a"), Some("a".into()));
        assert_eq!(
            pointer_to_field("/items/0/name"),
            Some("items[0].name".into())
        );
        assert_eq!(pointer_to_field("/a~1b"), Some("a/b".into()));
    }

    #[test]
    fn root_must_be_object() {
        let e = check_object_root("t", &json!({"type": "string"})).unwrap_err();
        assert_eq!(
            e.to_string(),
            "the input schema of tool `t` must have an object root (`{\"type\": \"object\", ...}`), but it is a schema of type \"string\""
        );
        assert!(check_object_root("t", &json!([1])).is_err());
        assert!(check_object_root("t", &json!({"type": "object"})).is_ok());
    }
}
