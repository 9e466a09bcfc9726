//! The TLS settings of a connection string: `sslmode` and `sslrootcert` are taken out of a URL
//! (`postgresql://…?sslmode=verify-full`) or a key-value string (`host=… sslmode=verify-full`)
//! and read here, and the rest goes to tokio-postgres, whose parser knows `sslmode` only as
//! `disable`, `prefer` or `require` and refuses keys it does not know.
//!
//! Both forms are scanned by tokio-postgres's own rules (a URL's query starts at the first `?`
//! after the credentials; a key-value string is `key = value` pairs, values quoted with `'` or
//! not, `\` escaping the next character), so what is handed on parses exactly as it would have
//! without the two settings. A string this scan cannot read is handed on unchanged, for
//! tokio-postgres to report.

use std::path::PathBuf;

use super::tls::SslMode;
use crate::error::StoreError;

/// A connection string with its TLS settings taken out.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Conninfo {
    /// The rest of the string, for tokio-postgres.
    pub(super) rest: String,
    /// `sslmode`, if given (the last one wins, as in libpq).
    pub(super) ssl_mode: Option<SslMode>,
    /// `sslrootcert`, if given.
    pub(super) root_cert: Option<PathBuf>,
}

/// Takes `sslmode` and `sslrootcert` out of `conninfo`; fails on a `sslmode` that is not one.
pub(super) fn split(conninfo: &str) -> Result<Conninfo, StoreError> {
    let url_body = ["postgres://", "postgresql://"]
        .iter()
        .find_map(|prefix| conninfo.strip_prefix(prefix));
    match url_body {
        Some(body) => split_url(conninfo, conninfo.len() - body.len()),
        None => split_key_value(conninfo),
    }
}

fn split_url(url: &str, body: usize) -> Result<Conninfo, StoreError> {
    let mut out = Conninfo {
        rest: url.to_owned(),
        ..Conninfo::default()
    };
    // tokio-postgres takes the credentials up to the first `@`, then the host and the path up
    // to the first `?`.
    let after_credentials = url[body..].find('@').map_or(body, |at| body + at + 1);
    let Some(question) = url[after_credentials..].find('?') else {
        return Ok(out);
    };
    let question = after_credentials + question;
    let mut kept = Vec::new();
    for pair in url[question + 1..].split('&') {
        let setting = pair
            .split_once('=')
            .and_then(|(key, value)| Some((percent_decode(key).ok()?, value)));
        match setting {
            Some((key, value)) if key == "sslmode" => {
                out.ssl_mode = Some(decode_value("sslmode", value)?.parse()?);
            }
            Some((key, value)) if key == "sslrootcert" => {
                out.root_cert = Some(decode_value("sslrootcert", value)?.into());
            }
            _ => kept.push(pair),
        }
    }
    out.rest = if kept.is_empty() {
        url[..question].to_owned()
    } else {
        format!("{}?{}", &url[..question], kept.join("&"))
    };
    Ok(out)
}

fn decode_value(setting: &str, value: &str) -> Result<String, StoreError> {
    percent_decode(value).map_err(|()| StoreError::Setting {
        setting: setting.to_owned(),
        problem: "is not UTF-8 once its %-escapes are decoded; percent-encode the value's UTF-8 \
                  bytes"
            .to_owned(),
    })
}

/// Decodes `%XX` escapes as tokio-postgres does: a `%` not followed by two hex digits stays.
fn percent_decode(s: &str) -> Result<String, ()> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = (bytes[i] == b'%')
            .then(|| bytes.get(i + 1..i + 3))
            .flatten()
            .and_then(|hex| std::str::from_utf8(hex).ok())
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match escaped {
            Some(byte) => {
                out.push(byte);
                i += 3;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8(out).map_err(|_| ())
}

fn split_key_value(s: &str) -> Result<Conninfo, StoreError> {
    let unchanged = || Conninfo {
        rest: s.to_owned(),
        ..Conninfo::default()
    };
    let mut out = Conninfo::default();
    let mut scan = Scanner { s, pos: 0 };
    let mut copied = 0;
    loop {
        scan.skip_whitespace();
        let start = scan.pos;
        let Some(key) = scan.keyword() else { break };
        scan.skip_whitespace();
        if !scan.eat('=') {
            return Ok(unchanged());
        }
        scan.skip_whitespace();
        let Some(value) = scan.value() else {
            return Ok(unchanged());
        };
        match key {
            "sslmode" => out.ssl_mode = Some(value.parse()?),
            "sslrootcert" => out.root_cert = Some(value.into()),
            _ => continue,
        }
        // A space in its place keeps the neighbours apart.
        out.rest.push_str(&s[copied..start]);
        out.rest.push(' ');
        copied = scan.pos;
    }
    out.rest.push_str(&s[copied..]);
    Ok(out)
}

/// tokio-postgres's key-value grammar, keeping byte positions.
struct Scanner<'a> {
    s: &'a str,
    pos: usize,
}

impl<'a> Scanner<'a> {
    fn peek(&self) -> Option<char> {
        self.s[self.pos..].chars().next()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    fn skip_whitespace(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.bump();
        }
    }

    fn eat(&mut self, target: char) -> bool {
        let found = self.peek() == Some(target);
        if found {
            self.bump();
        }
        found
    }

    fn keyword(&mut self) -> Option<&'a str> {
        let start = self.pos;
        while self.peek().is_some_and(|c| !c.is_whitespace() && c != '=') {
            self.bump();
        }
        (self.pos > start).then(|| &self.s[start..self.pos])
    }

    /// A quoted or bare value, with `\` escapes; `None` where tokio-postgres reports an error.
    fn value(&mut self) -> Option<String> {
        let quoted = self.eat('\'');
        let mut value = String::new();
        loop {
            match self.peek() {
                Some('\'') if quoted => {
                    self.bump();
                    return Some(value);
                }
                Some(c) if !quoted && c.is_whitespace() => break,
                None if quoted => return None,
                None => break,
                Some(_) => {
                    if let Some(c) = self.bump().filter(|&c| c != '\\').or_else(|| self.bump()) {
                        value.push(c);
                    }
                }
            }
        }
        (quoted || !value.is_empty()).then_some(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(s: &str) -> Conninfo {
        split(s).unwrap()
    }

    #[test]
    fn a_url_loses_its_tls_settings_and_keeps_the_rest_in_order() {
        let c = ok(
            "postgresql://u:p%3F@db.example:5433/app?application_name=a&sslmode=verify-full\
                    &sslrootcert=%2Fetc%2Fca%20file.pem&connect_timeout=3",
        );
        assert_eq!(
            c.rest,
            "postgresql://u:p%3F@db.example:5433/app?application_name=a&connect_timeout=3"
        );
        assert_eq!(c.ssl_mode, Some(SslMode::VerifyFull));
        assert_eq!(c.root_cert, Some(PathBuf::from("/etc/ca file.pem")));
    }

    #[test]
    fn a_url_with_only_tls_settings_loses_its_query() {
        let c = ok("postgres://h/db?sslmode=require");
        assert_eq!(c.rest, "postgres://h/db");
        assert_eq!(c.ssl_mode, Some(SslMode::Require));
        assert_eq!(ok("postgres://h/db").rest, "postgres://h/db");
        assert_eq!(ok("postgres://h/db?").rest, "postgres://h/db?");
    }

    #[test]
    fn the_query_starts_after_the_credentials_and_the_last_setting_wins() {
        // A `?` in the password is part of the credentials, as tokio-postgres reads them.
        let c = ok("postgresql://u:a?b@h/db?sslmode=disable&sslmode=verify-ca");
        assert_eq!(c.rest, "postgresql://u:a?b@h/db");
        assert_eq!(c.ssl_mode, Some(SslMode::VerifyCa));
    }

    #[test]
    fn a_key_value_string_loses_its_tls_settings() {
        let c =
            ok(r"host=localhost sslmode = verify-full  sslrootcert='/tmp/my ca\'s.pem' port=5432");
        assert_eq!(c.rest, "host=localhost      port=5432");
        assert_eq!(c.ssl_mode, Some(SslMode::VerifyFull));
        assert_eq!(c.root_cert, Some(PathBuf::from("/tmp/my ca's.pem")));
        let c = ok(r"sslrootcert=/a\ b.pem user='x'sslmode=disable");
        assert_eq!(c.root_cert, Some(PathBuf::from("/a b.pem")));
        assert_eq!(c.ssl_mode, Some(SslMode::Disable));
        assert_eq!(c.rest, "  user='x' ");
        let parsed: tokio_postgres::Config = c.rest.parse().unwrap();
        assert_eq!(parsed.get_user(), Some("x"));
    }

    #[test]
    fn a_string_the_scan_cannot_read_goes_on_unchanged() {
        for s in [
            "no such url",
            "host='open sslmode=require",
            "host=",
            "sslmode",
        ] {
            assert_eq!(ok(s).rest, s);
            assert_eq!(ok(s).ssl_mode, None);
        }
    }

    #[test]
    fn a_bad_sslmode_names_the_allowed_values_in_both_forms() {
        let expected = "the PostgreSQL setting `sslmode` is `verify_full`; use one of disable, \
                        prefer, require, verify-ca, verify-full";
        for s in [
            "postgresql://h/db?sslmode=verify_full",
            "host=h sslmode=verify_full",
        ] {
            assert_eq!(split(s).unwrap_err().to_string(), expected);
        }
    }

    #[test]
    fn a_value_that_is_not_utf8_names_its_setting() {
        let e = split("postgresql://h/db?sslrootcert=%FF").unwrap_err();
        assert_eq!(
            e.to_string(),
            "the PostgreSQL setting `sslrootcert` is not UTF-8 once its %-escapes are decoded; \
             percent-encode the value's UTF-8 bytes"
        );
    }

    #[test]
    fn an_empty_quoted_value_is_a_value() {
        let c = ok("password='' sslmode=require");
        assert_eq!(c.ssl_mode, Some(SslMode::Require));
        assert_eq!(c.rest, "password=''  ");
    }

    #[test]
    fn percent_decoding_leaves_a_lone_percent() {
        assert_eq!(percent_decode("a%2Fb%zz%4").unwrap(), "a/b%zz%4");
    }
}
