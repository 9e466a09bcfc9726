//! Tool declarations in the wire formats of the model APIs: OpenAI function tools (plain and
//! strict), Anthropic tools, and Gemini function declarations.
//!
//! Each exporter takes the provider-neutral [`ToolParams`] that
//! [`ToolRegistry::get_tool_params`](crate::ToolRegistry::get_tool_params) returns:
//!
//! ```
//! use harnessx::{tool, ToolRegistry, schema::export};
//!
//! /// Multiply two numbers.
//! #[tool]
//! fn calculate(a: i64, b: i64) -> i64 { a * b }
//!
//! let registry = ToolRegistry::new();
//! registry.register_tool(calculate)?;
//! let tools: Vec<_> = registry.get_tool_params().iter().map(export::anthropic).collect();
//! assert_eq!(tools[0]["name"], "calculate");
//! assert_eq!(tools[0]["input_schema"]["required"], serde_json::json!(["a", "b"]));
//! # Ok::<(), harnessx::RegistryError>(())
//! ```

use serde_json::{Map, Value, json};

use crate::tool::ToolParams;

/// An OpenAI Chat Completions / Responses function tool:
/// `{"type": "function", "function": {"name", "description", "parameters"}}`.
///
/// The schema is sent as it is; optional parameters may be left out by the model.
///
/// ```
/// # use harnessx::{ToolParams, schema::export};
/// # use serde_json::json;
/// let params = ToolParams {
///     name: "label".into(),
///     description: "Uppercase a label.".into(),
///     input_schema: json!({"type": "object", "properties": {"value": {"type": "string"}}, "required": ["value"]}),
/// };
/// let tool = export::openai(&params);
/// assert_eq!(tool["type"], "function");
/// assert_eq!(tool["function"]["parameters"], params.input_schema);
/// ```
pub fn openai(params: &ToolParams) -> Value {
    json!({
        "type": "function",
        "function": {
            "name": params.name,
            "description": params.description,
            "parameters": params.input_schema,
        }
    })
}

/// An OpenAI function tool in strict mode (`"strict": true`), where the model's arguments are
/// guaranteed to match the schema.
///
/// Strict mode requires every property to be listed in `required` and
/// `"additionalProperties": false` on every object, so the schema is rewritten:
/// - a property that was optional becomes required and nullable (`["integer", "null"]`, or an
///   `anyOf` with `{"type": "null"}`); its `default` moves into its description;
/// - `oneOf` becomes `anyOf`, a single-entry `allOf` is merged into its parent;
/// - `$defs` and `$ref`s stay (strict mode supports them), rewritten the same way.
///
/// Because the model now sends `null` for what it would have left out, pass its arguments
/// through [`relax_strict_arguments`] before executing the call, so defaults apply again.
///
/// Fails, naming the place, when the schema uses what strict mode cannot express: a map with
/// free-form keys (`HashMap<String, T>`), an unconstrained value (`serde_json::Value`), or an
/// `allOf` of several schemas. Fall back to [`openai`] for such tools.
///
/// ```
/// # use harnessx::{ToolParams, schema::export};
/// # use serde_json::json;
/// let params = ToolParams {
///     name: "fetch".into(),
///     description: "Fetch a page.".into(),
///     input_schema: json!({
///         "type": "object",
///         "properties": {
///             "url": {"type": "string"},
///             "max_length": {"type": "integer", "default": 20000}
///         },
///         "required": ["url"],
///         "additionalProperties": false
///     }),
/// };
/// let tool = export::openai_strict(&params)?;
/// let parameters = &tool["function"]["parameters"];
/// assert_eq!(tool["function"]["strict"], true);
/// assert_eq!(parameters["required"], json!(["url", "max_length"]));
/// assert_eq!(parameters["properties"]["max_length"]["type"], json!(["integer", "null"]));
///
/// // The model sends `null` for "not given"; relaxing restores the neutral form.
/// let mut args = json!({"url": "https://example.com", "max_length": null});
/// export::relax_strict_arguments(&params, &mut args);
/// assert_eq!(args, json!({"url": "https://example.com"}));
/// # Ok::<(), harnessx::schema::export::StrictSchemaError>(())
/// ```
pub fn openai_strict(params: &ToolParams) -> Result<Value, StrictSchemaError> {
    let mut schema = params.input_schema.clone();
    strictify(&mut schema, "").map_err(|(path, reason)| StrictSchemaError {
        tool: params.name.clone(),
        path: if path.is_empty() {
            "the root".to_owned()
        } else {
            format!("`{path}`")
        },
        reason,
    })?;
    Ok(json!({
        "type": "function",
        "function": {
            "name": params.name,
            "description": params.description,
            "parameters": schema,
            "strict": true,
        }
    }))
}

/// OpenAI's `response_format` for a structured answer. Strict (the answer is guaranteed to
/// match) when the schema is already one strict mode takes as it is — every property required,
/// no additional properties — so that the answer means what the schema says; otherwise sent
/// without `strict`, and the agent checks the answer.
///
/// ```
/// # use harnessx::{model::OutputSchema, schema::export};
/// # use serde_json::json;
/// let exact = OutputSchema {
///     name: "verdict".into(),
///     schema: json!({"type": "object", "properties": {"ok": {"type": "boolean"}},
///                    "required": ["ok"], "additionalProperties": false}),
/// };
/// let format = export::openai_response_format(&exact);
/// assert_eq!(format["type"], "json_schema");
/// assert_eq!(format["json_schema"]["name"], "verdict");
/// assert_eq!(format["json_schema"]["strict"], true);
/// let loose = OutputSchema { name: "note".into(), schema: json!({"type": "object"}) };
/// assert_eq!(export::openai_response_format(&loose)["json_schema"]["strict"], false);
/// ```
pub fn openai_response_format(output: &crate::model::OutputSchema) -> Value {
    let mut strict = output.schema.clone();
    let exact = strictify(&mut strict, "").is_ok() && strict == output.schema;
    json!({
        "type": "json_schema",
        "json_schema": {
            "name": output.name,
            "schema": output.schema,
            "strict": exact,
        }
    })
}

/// A schema that OpenAI strict mode cannot express.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the input schema of tool `{tool}` cannot be used in OpenAI strict mode: at {path}, {reason}; \
     export this tool with `openai` (non-strict) instead"
)]
pub struct StrictSchemaError {
    /// The tool.
    pub tool: String,
    /// Where in the schema, as a dotted path.
    pub path: String,
    /// What strict mode cannot express there.
    pub reason: String,
}

/// An Anthropic Messages API tool: `{"name", "description", "input_schema"}`.
///
/// ```
/// # use harnessx::{ToolParams, schema::export};
/// # use serde_json::json;
/// let params = ToolParams {
///     name: "label".into(),
///     description: "Uppercase a label.".into(),
///     input_schema: json!({"type": "object", "properties": {}, "required": []}),
/// };
/// assert_eq!(
///     export::anthropic(&params),
///     json!({"name": "label", "description": "Uppercase a label.", "input_schema": params.input_schema})
/// );
/// ```
pub fn anthropic(params: &ToolParams) -> Value {
    json!({
        "name": params.name,
        "description": params.description,
        "input_schema": params.input_schema,
    })
}

/// A Gemini function declaration: `{"name", "description", "parameters"}` with the parameters in
/// the OpenAPI subset Gemini accepts.
///
/// - `$ref`s are inlined (a recursive reference becomes a plain `{"type": "object"}`) and
///   `$defs` dropped;
/// - type arrays become one `type` plus `"nullable": true` (several non-null types become an
///   `anyOf`), and an `anyOf` member `{"type": "null"}` becomes `"nullable": true`;
/// - `const` becomes a one-value `enum`, `oneOf` becomes `anyOf`;
/// - keywords outside the subset (`additionalProperties`, `$schema`, ...) are dropped, and
///   formats other than `enum`, `date-time`, `int32`, `int64`, `float` and `double` too.
///
/// A tool without parameters gets no `parameters` key, as Gemini expects.
///
/// ```
/// # use harnessx::{ToolParams, schema::export};
/// # use serde_json::json;
/// let params = ToolParams {
///     name: "greet".into(),
///     description: "Greet someone.".into(),
///     input_schema: json!({
///         "type": "object",
///         "properties": {"name": {"type": ["string", "null"]}},
///         "required": ["name"],
///         "additionalProperties": false
///     }),
/// };
/// let decl = export::gemini(&params);
/// assert_eq!(
///     decl["parameters"],
///     json!({"type": "object", "properties": {"name": {"type": "string", "nullable": true}}, "required": ["name"]})
/// );
/// ```
pub fn gemini(params: &ToolParams) -> Value {
    let defs = params
        .input_schema
        .get("$defs")
        .or_else(|| params.input_schema.get("definitions"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let parameters = to_gemini(&params.input_schema, &defs, &mut Vec::new());
    let empty = parameters
        .get("properties")
        .and_then(Value::as_object)
        .is_none_or(Map::is_empty);
    let mut decl = json!({
        "name": params.name,
        "description": params.description,
    });
    if !empty && let Some(obj) = decl.as_object_mut() {
        obj.insert("parameters".into(), parameters);
    }
    decl
}

/// Undoes what strict mode forced on the model's arguments: an optional property it set to
/// `null` is removed when the tool's own schema does not accept `null` there, so the tool's
/// default applies. Nested objects (also through `$ref`s and arrays) are relaxed the same way.
///
/// See [`openai_strict`] for an example.
pub fn relax_strict_arguments(params: &ToolParams, arguments: &mut Value) {
    let defs = params
        .input_schema
        .get("$defs")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    relax(&params.input_schema, &defs, arguments, 0);
}

// ----- strict mode --------------------------------------------------------------------------

type Failure = (String, String);

fn child_path(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

/// Applies `f` to every direct subschema of a schema object, with its path.
fn for_each_subschema<E>(
    map: &mut Map<String, Value>,
    path: &str,
    f: &mut dyn FnMut(&mut Value, &str) -> Result<(), E>,
) -> Result<(), E> {
    for key in ["properties", "$defs", "definitions", "patternProperties"] {
        if let Some(Value::Object(children)) = map.get_mut(key) {
            for (name, child) in children.iter_mut() {
                f(child, &child_path(path, &format!("{key}.{name}")))?;
            }
        }
    }
    for key in ["items", "additionalProperties", "not", "contains"] {
        if let Some(child @ Value::Object(_)) = map.get_mut(key) {
            f(child, &child_path(path, key))?;
        }
    }
    for key in ["anyOf", "oneOf", "allOf", "prefixItems"] {
        if let Some(Value::Array(children)) = map.get_mut(key) {
            for (i, child) in children.iter_mut().enumerate() {
                f(child, &child_path(path, &format!("{key}[{i}]")))?;
            }
        }
    }
    Ok(())
}

fn strictify(schema: &mut Value, path: &str) -> Result<(), Failure> {
    let Value::Object(map) = schema else {
        return match schema {
            Value::Bool(true) => Err((
                path.to_owned(),
                "any value is accepted (`serde_json::Value`), but strict mode needs a typed schema"
                    .to_owned(),
            )),
            _ => Ok(()),
        };
    };
    if map.is_empty() || map.keys().all(|k| k == "description" || k == "default") {
        return Err((
            path.to_owned(),
            "any value is accepted (`serde_json::Value`), but strict mode needs a typed schema"
                .to_owned(),
        ));
    }
    if let Some(one_of) = map.remove("oneOf") {
        map.insert("anyOf".into(), one_of);
    }
    if let Some(all_of) = map.remove("allOf") {
        match all_of {
            Value::Array(mut items) if items.len() == 1 => {
                if let Some(Value::Object(inner)) = items.pop() {
                    for (k, v) in inner {
                        map.entry(k).or_insert(v);
                    }
                }
            }
            _ => {
                return Err((
                    path.to_owned(),
                    "`allOf` combines several schemas, which strict mode does not support"
                        .to_owned(),
                ));
            }
        }
    }
    let is_object = match map.get("type") {
        Some(Value::String(t)) => t == "object",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "object"),
        _ => false,
    } || map.contains_key("properties");
    if is_object {
        let properties = map.get("properties").and_then(Value::as_object);
        let free_keys = match map.get("additionalProperties") {
            None | Some(Value::Bool(false)) => false,
            Some(_) => true,
        };
        if free_keys && properties.is_none_or(Map::is_empty) {
            return Err((
                path.to_owned(),
                "a map with free-form keys (`HashMap<String, T>`) has no fixed properties, but \
                 strict mode needs every property named"
                    .to_owned(),
            ));
        }
        map.insert("additionalProperties".into(), Value::Bool(false));
        let required: Vec<String> = map
            .get("required")
            .and_then(Value::as_array)
            .map(|r| {
                r.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        let all: Vec<Value> = map
            .get("properties")
            .and_then(Value::as_object)
            .map(|props| props.keys().cloned().map(Value::String).collect())
            .unwrap_or_default();
        map.insert("required".into(), Value::Array(all));
        // Children first, so an error names the property itself, not the nullable wrapper.
        for_each_subschema(map, path, &mut |child, child_path| {
            strictify(child, child_path)
        })?;
        if let Some(Value::Object(props)) = map.get_mut("properties") {
            for (name, prop) in props.iter_mut() {
                if !required.contains(name) {
                    make_optional_nullable(prop);
                }
            }
        }
        return Ok(());
    }
    for_each_subschema(map, path, &mut |child, child_path| {
        strictify(child, child_path)
    })
}

/// Makes a formerly optional property accept `null`, and moves its default into the text.
fn make_optional_nullable(prop: &mut Value) {
    let Value::Object(map) = prop else {
        return;
    };
    if let Some(default) = map.remove("default") {
        let note = format!("Default: {default}.");
        let text = match map.get("description").and_then(Value::as_str) {
            Some(d) if !d.is_empty() => format!("{d} {note}"),
            _ => note,
        };
        map.insert("description".into(), Value::String(text));
    }
    if accepts_null(map) {
        return;
    }
    if !map.contains_key("const") {
        let typed = match map.get_mut("type") {
            Some(Value::String(t)) => {
                let t = std::mem::take(t);
                map.insert("type".into(), json!([t, "null"]));
                true
            }
            Some(Value::Array(types)) => {
                types.push(json!("null"));
                true
            }
            _ => false,
        };
        if typed {
            if let Some(Value::Array(values)) = map.get_mut("enum") {
                values.push(Value::Null);
            }
            return;
        }
    }
    if let Some(Value::Array(any_of)) = map.get_mut("anyOf") {
        any_of.push(json!({"type": "null"}));
        return;
    }
    let description = map.remove("description");
    let inner = std::mem::take(map);
    map.insert(
        "anyOf".into(),
        json!([Value::Object(inner), {"type": "null"}]),
    );
    if let Some(d) = description {
        map.insert("description".into(), d);
    }
}

fn accepts_null(map: &Map<String, Value>) -> bool {
    let type_null = match map.get("type") {
        Some(Value::String(t)) => t == "null",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "null"),
        _ => false,
    };
    let any_null = ["anyOf", "oneOf"].iter().any(|k| {
        map.get(*k)
            .and_then(Value::as_array)
            .is_some_and(|xs| xs.iter().any(|x| x.as_object().is_some_and(accepts_null)))
    });
    let enum_null = map
        .get("enum")
        .and_then(Value::as_array)
        .is_some_and(|xs| xs.iter().any(Value::is_null));
    type_null || any_null || enum_null || map.get("const") == Some(&Value::Null)
}

const MAX_REF_DEPTH: usize = 32;

/// Follows a local `$ref` (`#/$defs/Name` or `#/definitions/Name`).
fn resolve<'a>(schema: &'a Value, defs: &'a Map<String, Value>) -> &'a Value {
    let mut current = schema;
    for _ in 0..MAX_REF_DEPTH {
        let Some(name) = current
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(ref_name)
        else {
            return current;
        };
        match defs.get(name) {
            Some(def) => current = def,
            None => return current,
        }
    }
    current
}

fn ref_name(reference: &str) -> Option<&str> {
    reference
        .strip_prefix("#/$defs/")
        .or_else(|| reference.strip_prefix("#/definitions/"))
}

fn relax(schema: &Value, defs: &Map<String, Value>, value: &mut Value, depth: usize) {
    if depth > MAX_REF_DEPTH {
        return;
    }
    let schema = resolve(schema, defs);
    match value {
        Value::Object(args) => {
            let Some(props) = schema.get("properties").and_then(Value::as_object) else {
                return;
            };
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            args.retain(|name, v| {
                let optional = !required.contains(&name.as_str());
                let drop = v.is_null()
                    && optional
                    && props.get(name).is_some_and(|p| {
                        !resolve(p, defs).as_object().is_some_and(accepts_null)
                            && !p.as_object().is_some_and(accepts_null)
                    });
                !drop
            });
            for (name, v) in args.iter_mut() {
                if let Some(p) = props.get(name) {
                    relax(p, defs, v, depth + 1);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for item in items {
                    relax(item_schema, defs, item, depth + 1);
                }
            }
        }
        _ => {}
    }
}

// ----- Gemini -------------------------------------------------------------------------------

const GEMINI_KEYS: &[&str] = &[
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "maxItems",
    "minItems",
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "example",
    "anyOf",
    "propertyOrdering",
    "default",
    "items",
    "minimum",
    "maximum",
];

const GEMINI_FORMATS: &[&str] = &["enum", "date-time", "int32", "int64", "float", "double"];

fn to_gemini(schema: &Value, defs: &Map<String, Value>, stack: &mut Vec<String>) -> Value {
    let Value::Object(source) = schema else {
        return json!({});
    };
    let mut map = source.clone();

    // Inline a `$ref`, keeping the referring schema's own keys (description, default).
    if let Some(name) = map
        .remove("$ref")
        .as_ref()
        .and_then(Value::as_str)
        .and_then(ref_name)
        .map(str::to_owned)
    {
        if stack.contains(&name) {
            return keep_text(&map, json!({"type": "object"}));
        }
        let Some(def) = defs.get(&name) else {
            return keep_text(&map, json!({"type": "object"}));
        };
        stack.push(name);
        let inlined = to_gemini(def, defs, stack);
        stack.pop();
        let mut merged = match inlined {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        let own = to_gemini(&Value::Object(map), defs, stack);
        if let Value::Object(own) = own {
            for (k, v) in own {
                merged.insert(k, v);
            }
        }
        return Value::Object(merged);
    }

    if let Some(Value::Array(mut all_of)) = map.remove("allOf") {
        if all_of.len() == 1 {
            if let Some(Value::Object(inner)) = all_of.pop() {
                for (k, v) in inner {
                    map.entry(k).or_insert(v);
                }
            }
            return to_gemini(&Value::Object(map), defs, stack);
        }
        map.insert("anyOf".into(), Value::Array(all_of));
    }
    if let Some(one_of) = map.remove("oneOf") {
        map.insert("anyOf".into(), one_of);
    }
    if let Some(constant) = map.remove("const") {
        if !map.contains_key("type") {
            let kind = match &constant {
                Value::String(_) => Some("string"),
                Value::Bool(_) => Some("boolean"),
                Value::Number(n) if n.is_i64() || n.is_u64() => Some("integer"),
                Value::Number(_) => Some("number"),
                _ => None,
            };
            if let Some(kind) = kind {
                map.insert("type".into(), json!(kind));
            }
        }
        map.insert("enum".into(), json!([constant]));
    }
    if let Some(Value::Array(types)) = map.get("type").cloned() {
        let nullable = types.iter().any(|t| t == "null");
        let rest: Vec<Value> = types.into_iter().filter(|t| t != "null").collect();
        map.remove("type");
        match rest.len() {
            0 => {}
            1 => {
                map.insert("type".into(), rest[0].clone());
            }
            _ => {
                let variants = rest.into_iter().map(|t| json!({ "type": t })).collect();
                map.insert("anyOf".into(), Value::Array(variants));
            }
        }
        if nullable {
            map.insert("nullable".into(), Value::Bool(true));
        }
    }
    if let Some(Value::Array(any_of)) = map.remove("anyOf") {
        let mut nullable = false;
        let mut variants = Vec::new();
        for variant in &any_of {
            if variant.get("type").and_then(Value::as_str) == Some("null")
                && variant.as_object().is_some_and(|m| m.len() == 1)
            {
                nullable = true;
            } else {
                variants.push(to_gemini(variant, defs, stack));
            }
        }
        if nullable {
            map.insert("nullable".into(), Value::Bool(true));
        }
        if variants.len() == 1 {
            if let Some(Value::Object(only)) = variants.pop() {
                for (k, v) in only {
                    map.entry(k).or_insert(v);
                }
            }
        } else if !variants.is_empty() {
            map.insert("anyOf".into(), Value::Array(variants));
        }
    }
    if let Some(Value::Array(values)) = map.get("enum")
        && values.iter().any(Value::is_null)
    {
        let kept: Vec<Value> = values.iter().filter(|v| !v.is_null()).cloned().collect();
        map.insert("enum".into(), Value::Array(kept));
        map.insert("nullable".into(), Value::Bool(true));
    }
    if map
        .get("format")
        .and_then(Value::as_str)
        .is_some_and(|f| !GEMINI_FORMATS.contains(&f))
    {
        map.remove("format");
    }
    if let Some(Value::Object(props)) = map.get_mut("properties") {
        for value in props.values_mut() {
            *value = to_gemini(value, defs, stack);
        }
    }
    if let Some(items) = map.get_mut("items") {
        *items = to_gemini(items, defs, stack);
    }
    map.retain(|k, _| GEMINI_KEYS.contains(&k.as_str()));
    Value::Object(map)
}

/// `target` with the description (and default) of the schema it replaces.
fn keep_text(source: &Map<String, Value>, mut target: Value) -> Value {
    if let Value::Object(t) = &mut target {
        for key in ["description", "default"] {
            if let Some(v) = source.get(key) {
                t.insert(key.into(), v.clone());
            }
        }
    }
    target
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested() -> ToolParams {
        ToolParams {
            name: "order".into(),
            description: "Place an order.".into(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "items": {"type": "array", "items": {"$ref": "#/$defs/Item"}, "description": "What to buy."},
                    "note": {"type": ["string", "null"]},
                    "priority": {"$ref": "#/$defs/Priority", "default": "normal"},
                    "limit": {"type": "integer", "minimum": 0, "default": 10}
                },
                "required": ["items", "note"],
                "additionalProperties": false,
                "$defs": {
                    "Item": {
                        "type": "object",
                        "properties": {
                            "sku": {"type": "string"},
                            "quantity": {"type": "integer", "format": "uint32"},
                            "gift": {"anyOf": [{"$ref": "#/$defs/Gift"}, {"type": "null"}]}
                        },
                        "required": ["sku"]
                    },
                    "Gift": {
                        "type": "object",
                        "properties": {"message": {"type": "string"}},
                        "required": ["message"]
                    },
                    "Priority": {
                        "oneOf": [
                            {"const": "normal", "description": "Ship normally."},
                            {"const": "urgent", "description": "Ship today."}
                        ]
                    }
                }
            }),
        }
    }

    #[test]
    fn openai_and_anthropic_carry_the_schema_unchanged() {
        let p = nested();
        let o = openai(&p);
        assert_eq!(o["type"], "function");
        assert_eq!(o["function"]["name"], "order");
        assert_eq!(o["function"]["description"], "Place an order.");
        assert_eq!(o["function"]["parameters"], p.input_schema);
        assert!(o["function"].get("strict").is_none());
        let a = anthropic(&p);
        assert_eq!(
            a,
            json!({"name": "order", "description": "Place an order.", "input_schema": p.input_schema})
        );
    }

    fn assert_strict_objects(schema: &Value) {
        if let Value::Object(map) = schema {
            if map.contains_key("properties") {
                assert_eq!(map["additionalProperties"], false, "{schema}");
                let props: Vec<&String> = map["properties"].as_object().unwrap().keys().collect();
                let required: Vec<&str> = map["required"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_str().unwrap())
                    .collect();
                assert_eq!(props, required, "{schema}");
            }
            assert!(!map.contains_key("oneOf"), "{schema}");
            for v in map.values() {
                assert_strict_objects(v);
            }
        } else if let Value::Array(xs) = schema {
            xs.iter().for_each(assert_strict_objects);
        }
    }

    #[test]
    fn strict_requires_everything_and_makes_optionals_nullable() {
        let tool = openai_strict(&nested()).unwrap();
        assert_eq!(tool["function"]["strict"], true);
        let params = &tool["function"]["parameters"];
        assert_strict_objects(params);
        assert_eq!(
            params["properties"]["limit"],
            json!({"type": ["integer", "null"], "minimum": 0, "description": "Default: 10."})
        );
        // Already nullable: unchanged.
        assert_eq!(
            params["properties"]["note"],
            json!({"type": ["string", "null"]})
        );
        // A `$ref` becomes a nullable union; its default moves to the description.
        assert_eq!(
            params["properties"]["priority"],
            json!({"anyOf": [{"$ref": "#/$defs/Priority"}, {"type": "null"}], "description": "Default: \"normal\"."})
        );
        // Nested objects in `$defs` are rewritten too.
        let item = &params["$defs"]["Item"];
        assert_eq!(item["required"], json!(["sku", "quantity", "gift"]));
        assert_eq!(
            item["properties"]["quantity"]["type"],
            json!(["integer", "null"])
        );
        assert_eq!(
            params["$defs"]["Priority"]["anyOf"][1],
            json!({"const": "urgent", "description": "Ship today."})
        );
    }

    #[test]
    fn strict_refuses_free_form_maps_and_values() {
        let mut p = nested();
        p.input_schema["properties"]["tags"] =
            json!({"type": "object", "additionalProperties": {"type": "string"}});
        let e = openai_strict(&p).unwrap_err();
        assert_eq!(
            e.to_string(),
            "the input schema of tool `order` cannot be used in OpenAI strict mode: at \
             `properties.tags`, a map with free-form keys (`HashMap<String, T>`) has no fixed \
             properties, but strict mode needs every property named; export this tool with \
             `openai` (non-strict) instead"
        );
        let mut p = nested();
        p.input_schema["$defs"]["Gift"]["properties"]["extra"] =
            json!({"description": "Anything."});
        let e = openai_strict(&p).unwrap_err();
        assert_eq!(e.path, "`$defs.Gift.properties.extra`");
        assert_eq!(
            e.reason,
            "any value is accepted (`serde_json::Value`), but strict mode needs a typed schema"
        );
        let mut p = nested();
        p.input_schema["properties"]["both"] =
            json!({"allOf": [{"type": "object"}, {"required": ["a"]}]});
        let e = openai_strict(&p).unwrap_err();
        assert_eq!(
            e.reason,
            "`allOf` combines several schemas, which strict mode does not support"
        );
    }

    #[test]
    fn relaxing_drops_nulls_only_where_the_tool_does_not_accept_them() {
        let p = nested();
        let mut args = json!({
            "items": [{"sku": "a", "quantity": null, "gift": null}],
            "note": null,
            "priority": null,
            "limit": null
        });
        relax_strict_arguments(&p, &mut args);
        assert_eq!(
            args,
            json!({"items": [{"sku": "a", "gift": null}], "note": null})
        );
    }

    #[test]
    fn gemini_inlines_refs_and_uses_the_openapi_subset() {
        let decl = gemini(&nested());
        assert_eq!(decl["name"], "order");
        assert_eq!(decl["description"], "Place an order.");
        let params = &decl["parameters"];
        assert_eq!(
            params,
            &json!({
                "type": "object",
                "properties": {
                    "items": {
                        "type": "array",
                        "description": "What to buy.",
                        "items": {
                            "type": "object",
                            "properties": {
                                "sku": {"type": "string"},
                                "quantity": {"type": "integer"},
                                "gift": {
                                    "nullable": true,
                                    "type": "object",
                                    "properties": {"message": {"type": "string"}},
                                    "required": ["message"]
                                }
                            },
                            "required": ["sku"]
                        }
                    },
                    "note": {"type": "string", "nullable": true},
                    "priority": {
                        "anyOf": [
                            {"type": "string", "enum": ["normal"], "description": "Ship normally."},
                            {"type": "string", "enum": ["urgent"], "description": "Ship today."}
                        ],
                        "default": "normal"
                    },
                    "limit": {"type": "integer", "minimum": 0, "default": 10}
                },
                "required": ["items", "note"]
            })
        );
        let text = params.to_string();
        for banned in [
            "$ref",
            "$defs",
            "const",
            "additionalProperties",
            "oneOf",
            "\"null\"",
        ] {
            assert!(!text.contains(banned), "{banned} left in {text}");
        }
    }

    #[test]
    fn gemini_cuts_recursion_and_omits_empty_parameters() {
        let p = ToolParams {
            name: "tree".into(),
            description: "Walk a tree.".into(),
            input_schema: json!({
                "type": "object",
                "properties": {"root": {"$ref": "#/$defs/Node"}},
                "required": ["root"],
                "$defs": {"Node": {
                    "type": "object",
                    "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/Node", "description": "A child."}}}
                }}
            }),
        };
        let decl = gemini(&p);
        assert_eq!(
            decl["parameters"]["properties"]["root"]["properties"]["children"]["items"],
            json!({"type": "object", "description": "A child."})
        );
        let none = ToolParams {
            name: "now".into(),
            description: "The time.".into(),
            input_schema: json!({"type": "object", "properties": {}, "required": []}),
        };
        assert_eq!(
            gemini(&none),
            json!({"name": "now", "description": "The time."})
        );
    }
}
