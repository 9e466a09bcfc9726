//! YAML front matter: the `---` block that opens a `SKILL.md` or an OKF concept, read into JSON.
//!
//! The YAML is parsed with `saphyr` (pure Rust, YAML 1.2, bounded alias expansion) and turned
//! into a `serde_json` object, the form the tools hand to the model.

use saphyr::{LoadableYamlNode, Scalar, Yaml};
use serde_json::{Map, Number, Value};

/// A document split into its front matter and its body.
#[derive(Debug)]
pub struct Split<'a> {
    /// The front matter's fields, in document order.
    pub fields: Map<String, Value>,
    /// Everything after the closing `---` line.
    pub body: &'a str,
}

/// Why a document's front matter could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrontMatterError {
    /// The document does not start with a `---` line.
    Missing,
    /// The opening `---` has no closing `---` line.
    Unclosed,
    /// The YAML does not parse; `line` counts from the document's first line.
    Yaml {
        /// The line of the document the parser stopped at, from 1.
        line: usize,
        /// The parser's message.
        message: String,
    },
    /// The YAML is a list or a scalar, not a mapping of fields.
    NotMapping,
}

impl std::fmt::Display for FrontMatterError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Missing => f.write_str(
                "it does not start with YAML front matter (a `---` line, `key: value` lines, \
                 then a closing `---` line)",
            ),
            Self::Unclosed => f.write_str(
                "its front matter opens with `---` but has no closing `---` line; add one after \
                 the last field",
            ),
            Self::Yaml { line, message } => {
                write!(
                    f,
                    "its front matter is not valid YAML (line {line}: {message})"
                )
            }
            Self::NotMapping => f.write_str(
                "its front matter is not a set of `key: value` fields (it is a list or a single \
                 value)",
            ),
        }
    }
}

/// Splits `text` into front matter fields and body. A leading byte-order mark is ignored;
/// lines may end in `\n` or `\r\n`; the block closes with `---` (or YAML's `...`).
pub fn split(text: &str) -> Result<Split<'_>, FrontMatterError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let first = lines.next().ok_or(FrontMatterError::Missing)?;
    if first.trim_end() != "---" {
        return Err(FrontMatterError::Missing);
    }
    let yaml_start = first.len();
    let mut offset = yaml_start;
    for line in lines {
        let trimmed = line.trim_end();
        if trimmed == "---" || trimmed == "..." {
            let yaml = &text[yaml_start..offset];
            let body = &text[offset + line.len()..];
            return Ok(Split {
                fields: parse_fields(yaml)?,
                body,
            });
        }
        offset += line.len();
    }
    Err(FrontMatterError::Unclosed)
}

/// The text after a front matter block that has an opening and a closing line, whether or not
/// its YAML parses; the whole text when there is no such block.
pub fn after_block(text: &str) -> &str {
    let stripped = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = stripped.split_inclusive('\n');
    if lines.next().is_none_or(|first| first.trim_end() != "---") {
        return text;
    }
    let mut offset = stripped.len() - lines.clone().map(str::len).sum::<usize>();
    for line in lines {
        offset += line.len();
        let trimmed = line.trim_end();
        if trimmed == "---" || trimmed == "..." {
            return &stripped[offset..];
        }
    }
    text
}

fn parse_fields(yaml: &str) -> Result<Map<String, Value>, FrontMatterError> {
    let docs = Yaml::load_from_str(yaml).map_err(|e| FrontMatterError::Yaml {
        // The YAML starts on the document's second line; saphyr counts lines from 1.
        line: e.marker().line() + 1,
        message: e.info().to_owned(),
    })?;
    match docs.into_iter().next() {
        None => Ok(Map::new()),
        Some(doc) => match to_json(doc) {
            Value::Object(fields) => Ok(fields),
            Value::Null => Ok(Map::new()),
            _ => Err(FrontMatterError::NotMapping),
        },
    }
}

/// A YAML node as JSON: mapping keys become strings, tags are dropped, and values YAML could
/// not resolve become `null`.
fn to_json(node: Yaml<'_>) -> Value {
    match node {
        Yaml::Value(scalar) => scalar_to_json(scalar),
        Yaml::Representation(text, _, _) => Value::String(text.into_owned()),
        Yaml::Sequence(items) => Value::Array(items.into_iter().map(to_json).collect()),
        Yaml::Mapping(entries) => Value::Object(
            entries
                .into_iter()
                .map(|(k, v)| (key_text(k), to_json(v)))
                .collect(),
        ),
        Yaml::Tagged(_, inner) => to_json(*inner),
        Yaml::Alias(_) | Yaml::BadValue => Value::Null,
    }
}

fn scalar_to_json(scalar: Scalar<'_>) -> Value {
    match scalar {
        Scalar::Null => Value::Null,
        Scalar::Boolean(b) => Value::Bool(b),
        Scalar::Integer(i) => Value::from(i),
        Scalar::FloatingPoint(x) => {
            Number::from_f64(x.into_inner()).map_or(Value::Null, Value::Number)
        }
        Scalar::String(s) => Value::String(s.into_owned()),
    }
}

fn key_text(key: Yaml<'_>) -> String {
    match to_json(key) {
        Value::String(s) => s,
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// A field as text: strings as they are, numbers and booleans written out (`version: 2`).
pub fn text_field(fields: &Map<String, Value>, key: &str) -> Option<String> {
    match fields.get(key)? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fields_and_body_are_split() {
        let doc = "\u{feff}---\r\nname: pdf\r\ntags: [a, b]\r\nn: 2\r\nx: 1.5\r\nt: 2024-01-02\r\n---\r\n# Body\r\n";
        let split = split(doc).unwrap();
        assert_eq!(
            Value::Object(split.fields),
            json!({"name": "pdf", "tags": ["a", "b"], "n": 2, "x": 1.5, "t": "2024-01-02"})
        );
        assert_eq!(split.body, "# Body\r\n");
    }

    #[test]
    fn the_body_after_a_bad_block_is_found() {
        assert_eq!(after_block("---\n- a\n---\nbody\n"), "body\n");
        assert_eq!(after_block("---\nkey: [\n...\nbody"), "body");
        assert_eq!(after_block("no block"), "no block");
        assert_eq!(after_block("---\nunclosed\n"), "---\nunclosed\n");
    }

    #[test]
    fn empty_front_matter_is_an_empty_map() {
        let split = split("---\n---\nbody").unwrap();
        assert!(split.fields.is_empty());
        assert_eq!(split.body, "body");
    }

    #[test]
    fn problems_are_named() {
        assert_eq!(
            split("# no front matter").unwrap_err(),
            FrontMatterError::Missing
        );
        assert_eq!(split("").unwrap_err(), FrontMatterError::Missing);
        assert_eq!(
            split("---\nname: x\n").unwrap_err(),
            FrontMatterError::Unclosed
        );
        assert_eq!(
            split("---\n- a\n- b\n---\n").unwrap_err(),
            FrontMatterError::NotMapping
        );
        let FrontMatterError::Yaml { line, .. } =
            split("---\nname: x\nbad: [1, 2\n---\n").unwrap_err()
        else {
            panic!("expected a YAML error");
        };
        assert!((2..=4).contains(&line), "line {line}");
    }

    #[test]
    fn messages_say_what_to_do() {
        assert!(
            FrontMatterError::Missing
                .to_string()
                .contains("closing `---` line")
        );
        assert!(
            FrontMatterError::Unclosed
                .to_string()
                .contains("add one after the last field")
        );
        assert_eq!(
            FrontMatterError::Yaml {
                line: 3,
                message: "oops".into()
            }
            .to_string(),
            "its front matter is not valid YAML (line 3: oops)"
        );
        assert!(
            FrontMatterError::NotMapping
                .to_string()
                .contains("`key: value` fields")
        );
    }

    #[test]
    fn alias_bombs_are_bounded() {
        let mut yaml = String::from("---\na0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..12 {
            let prev = i - 1;
            yaml.push_str(&format!(
                "a{i}: &a{i} [*a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}]\n"
            ));
        }
        yaml.push_str("---\n");
        // Either an error or a bounded tree: never 10^12 nodes.
        if let Ok(split) = split(&yaml) {
            assert!(serde_json::to_string(&split.fields).unwrap().len() < 50_000_000);
        }
    }
}
