//! Reading integer arguments the schema has validated.
//!
//! JSON Schema's `"type": "integer"` accepts any number whose fraction is zero, so `5.0` passes
//! a schema that asks for an integer, and `serde_json` holds it as a float, for which
//! `Value::as_i64` is `None`. Tools read integers through [`integer`], which takes `5.0` as `5`
//! (what the schema promised) and refuses anything else by name, rather than falling back to a
//! default that would act on the wrong memory or page.

use harnessx::ToolError;
use serde_json::Value;

/// The integer at `args[field]`: `None` when it is absent or null, `5` for `5` and for `5.0`.
/// A fraction, a number outside `i64`, or a value of another type is an error naming `field`.
pub(crate) fn integer(args: &Value, field: &str) -> Result<Option<i64>, ToolError> {
    let value = &args[field];
    if value.is_null() {
        return Ok(None);
    }
    if let Some(n) = value.as_i64() {
        return Ok(Some(n));
    }
    // Floats with no fraction, within i64's range (2^63 itself is not), are exact integers.
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    match value.as_f64() {
        Some(f) if f.fract() == 0.0 && (-LIMIT..LIMIT).contains(&f) => Ok(Some(f as i64)),
        _ => Err(ToolError::invalid_arguments(format!(
            "`{field}` must be a whole number between {} and {}, not {value}; pass it without a \
             fraction",
            i64::MIN,
            i64::MAX
        ))),
    }
}

/// [`integer`] for a count or offset: a negative number is an error naming `field` (the schema's
/// `minimum` refuses it first when the call comes through a registry).
pub(crate) fn count(args: &Value, field: &str) -> Result<Option<usize>, ToolError> {
    match integer(args, field)? {
        None => Ok(None),
        Some(n) => match usize::try_from(n) {
            Ok(n) => Ok(Some(n)),
            Err(_) => Err(ToolError::invalid_arguments(format!(
                "`{field}` must be 0 or more, not {n}"
            ))),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn whole_floats_are_integers_and_fractions_are_refused_by_name() {
        let args = json!({"a": 5, "b": 5.0, "c": 5.5, "d": "5", "e": 1e300, "f": -3.0, "n": null});
        assert_eq!(integer(&args, "a").ok(), Some(Some(5)));
        assert_eq!(integer(&args, "b").ok(), Some(Some(5)));
        assert_eq!(integer(&args, "f").ok(), Some(Some(-3)));
        assert_eq!(integer(&args, "n").ok(), Some(None));
        assert_eq!(integer(&args, "missing").ok(), Some(None));
        assert_eq!(
            integer(&args, "c").unwrap_err().message(),
            "`c` must be a whole number between -9223372036854775808 and 9223372036854775807, \
             not 5.5; pass it without a fraction"
        );
        assert!(
            integer(&args, "d")
                .unwrap_err()
                .message()
                .starts_with("`d` must be")
        );
        assert!(
            integer(&args, "e")
                .unwrap_err()
                .message()
                .starts_with("`e` must be")
        );
        assert_eq!(count(&args, "b").ok(), Some(Some(5)));
        assert_eq!(
            count(&args, "f").unwrap_err().message(),
            "`f` must be 0 or more, not -3"
        );
    }
}
