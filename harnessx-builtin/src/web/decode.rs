//! Turning downloaded bytes into text: what kind of content it is, and which charset it uses.

use encoding_rs::Encoding;

/// What the body is, judged from the Content-Type header and, without one, from the bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Kind {
    /// HTML or XHTML: converted to Markdown.
    Html,
    /// JSON, XML, plain text, source code...: passed through.
    Text,
    /// Anything else: refused.
    Binary,
}

/// The media type (lowercase, without parameters) and the `charset` parameter of a Content-Type.
pub(crate) fn parse_content_type(header: &str) -> (String, Option<String>) {
    let mut parts = header.split(';');
    let media = parts.next().unwrap_or_default().trim().to_ascii_lowercase();
    let charset = parts.find_map(|p| {
        let (k, v) = p.split_once('=')?;
        k.trim()
            .eq_ignore_ascii_case("charset")
            .then(|| v.trim().trim_matches(|c| c == '"' || c == '\'').to_owned())
    });
    (media, charset)
}

/// Decides how to treat a body of media type `media` (empty when the server sent none).
pub(crate) fn classify(media: &str, body: &[u8]) -> Kind {
    match media {
        "text/html" | "application/xhtml+xml" => return Kind::Html,
        "" | "application/octet-stream" | "binary/octet-stream" | "application/unknown" => {
            return sniff(body);
        }
        _ => {}
    }
    let textual = media.starts_with("text/")
        || media.ends_with("+json")
        || media.ends_with("+xml")
        || matches!(
            media,
            "application/json"
                | "application/xml"
                | "application/javascript"
                | "application/ecmascript"
                | "application/x-javascript"
                | "application/x-ndjson"
                | "application/ld+json"
                | "application/x-yaml"
                | "application/yaml"
                | "application/toml"
                | "application/x-sh"
                | "application/sql"
                | "application/graphql"
                | "application/x-www-form-urlencoded"
        );
    if textual { Kind::Text } else { Kind::Binary }
}

/// Judges a body without a useful Content-Type: markup that opens like HTML is HTML; bytes with
/// NULs or mostly non-text are binary.
fn sniff(body: &[u8]) -> Kind {
    let head = &body[..body.len().min(1024)];
    let trimmed = String::from_utf8_lossy(head);
    let lower = trimmed
        .trim_start_matches('\u{feff}')
        .trim_start()
        .to_ascii_lowercase();
    if lower.starts_with("<!doctype html") || lower.starts_with("<html") {
        return Kind::Html;
    }
    if head.contains(&0) {
        return Kind::Binary;
    }
    if valid_utf8_prefix(head) {
        Kind::Text
    } else {
        Kind::Binary
    }
}

/// True when `bytes` is valid UTF-8 except for a multi-byte character cut at the very end.
fn valid_utf8_prefix(bytes: &[u8]) -> bool {
    match std::str::from_utf8(bytes) {
        Ok(_) => true,
        Err(e) => e.error_len().is_none(),
    }
}

/// Decodes a body: the header's charset, else (for HTML) a `<meta charset>` in the first 1024
/// bytes or (for XML) the declaration's `encoding`, else a byte-order mark, else UTF-8. Malformed sequences become U+FFFD.
pub(crate) fn decode(body: &[u8], header_charset: Option<&str>, kind: &Kind) -> String {
    let declared = header_charset
        .and_then(|label| Encoding::for_label(label.as_bytes()))
        .or_else(|| match kind {
            Kind::Html => meta_charset(body),
            _ => xml_encoding(body),
        })
        .unwrap_or(encoding_rs::UTF_8);
    // `decode` lets a byte-order mark override the declared encoding, as browsers do.
    let (text, _, _) = declared.decode(body);
    text.into_owned()
}

/// Prescans the start of an HTML document for `<meta charset="...">` or
/// `<meta http-equiv="Content-Type" content="...; charset=...">`.
fn meta_charset(body: &[u8]) -> Option<&'static Encoding> {
    let head = &body[..body.len().min(1024)];
    let text = String::from_utf8_lossy(head).to_ascii_lowercase();
    let mut rest = text.as_str();
    while let Some(start) = rest.find("<meta") {
        let tag = &rest[start..];
        let end = tag.find('>').unwrap_or(tag.len());
        let tag_text = &tag[..end];
        if let Some(pos) = tag_text.find("charset") {
            let value = tag_text[pos + "charset".len()..]
                .trim_start()
                .strip_prefix('=')
                .map(|v| v.trim_start().trim_start_matches(['"', '\'']))
                .unwrap_or_default();
            let label: String = value
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':' | '.'))
                .collect();
            if let Some(enc) = Encoding::for_label(label.as_bytes()) {
                // A page that claims UTF-16 in ASCII-compatible bytes is really UTF-8 (HTML spec).
                if enc == encoding_rs::UTF_16LE || enc == encoding_rs::UTF_16BE {
                    return Some(encoding_rs::UTF_8);
                }
                return Some(enc);
            }
        }
        rest = &tag[end..];
    }
    None
}

/// The `encoding` of an XML declaration (`<?xml version="1.0" encoding="ISO-8859-1"?>`).
fn xml_encoding(body: &[u8]) -> Option<&'static Encoding> {
    let head = &body[..body.len().min(256)];
    let text = String::from_utf8_lossy(head);
    let decl = text.trim_start_matches('\u{feff}').strip_prefix("<?xml")?;
    let decl = &decl[..decl.find("?>")?];
    let value = decl[decl.find("encoding")? + "encoding".len()..]
        .trim_start()
        .strip_prefix('=')?
        .trim_start();
    let quote = value.chars().next().filter(|c| *c == '"' || *c == '\'')?;
    let label = &value[1..value[1..].find(quote)? + 1];
    Encoding::for_label(label.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_type_parameters() {
        assert_eq!(
            parse_content_type("Text/HTML; Charset=\"ISO-8859-1\""),
            ("text/html".to_owned(), Some("ISO-8859-1".to_owned()))
        );
        assert_eq!(
            parse_content_type("application/json"),
            ("application/json".to_owned(), None)
        );
    }

    #[test]
    fn classifies_media_types() {
        assert_eq!(classify("text/html", b""), Kind::Html);
        assert_eq!(classify("application/vnd.api+json", b""), Kind::Text);
        assert_eq!(classify("text/csv", b""), Kind::Text);
        assert_eq!(classify("image/png", b""), Kind::Binary);
        assert_eq!(classify("application/pdf", b"%PDF"), Kind::Binary);
        assert_eq!(classify("", b"<!DOCTYPE html><p>x"), Kind::Html);
        assert_eq!(classify("", b"plain words"), Kind::Text);
        assert_eq!(classify("", b"\x89PNG\r\n\x1a\n\0\0"), Kind::Binary);
    }

    #[test]
    fn meta_charset_is_found_in_both_forms() {
        let a = b"<html><head><meta charset=\"windows-1252\"></head>";
        assert_eq!(meta_charset(a), Some(encoding_rs::WINDOWS_1252));
        let b = b"<meta http-equiv=\"Content-Type\" content=\"text/html; charset=Shift_JIS\">";
        assert_eq!(meta_charset(b), Some(encoding_rs::SHIFT_JIS));
        assert_eq!(meta_charset(b"<meta name=x>"), None);
    }

    #[test]
    fn xml_declarations_name_their_encoding() {
        let xml = b"<?xml version=\"1.0\" encoding='ISO-8859-1'?><r>caf\xe9</r>";
        assert_eq!(
            decode(xml, None, &Kind::Text),
            "<?xml version=\"1.0\" encoding='ISO-8859-1'?><r>café</r>"
        );
        assert_eq!(xml_encoding(b"<?xml version=\"1.0\"?><r/>"), None);
        assert_eq!(xml_encoding(b"{\"encoding\": \"latin1\"}"), None);
    }

    #[test]
    fn header_charset_wins_and_bom_overrides() {
        let latin1 = b"caf\xe9";
        assert_eq!(decode(latin1, Some("iso-8859-1"), &Kind::Text), "café");
        let bom = b"\xef\xbb\xbfcaf\xc3\xa9";
        assert_eq!(decode(bom, Some("iso-8859-1"), &Kind::Text), "café");
        assert_eq!(decode(b"caf\xc3\xa9", None, &Kind::Text), "café");
    }
}
