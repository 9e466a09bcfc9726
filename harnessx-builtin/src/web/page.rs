//! A fetched page as text: conversion of the download, the window of characters returned, and
//! the text the model reads, with the hint that tells it how to read more.

use std::fmt::Write as _;

use super::decode::{self, Kind};
use super::error::FetchError;
use super::fetch::Download;
use super::html;

/// Characters of an error page quoted in [`FetchError::Status`].
const ERROR_EXCERPT_CHARS: usize = 300;

/// A fetched page: the window of its text that was asked for, and where it came from.
///
/// `text` holds the characters `start_index..end_index` of the whole converted text, which has
/// `total_chars` characters. Truncation counts characters of that text, not bytes downloaded.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FetchedPage {
    /// The URL asked for.
    pub url: String,
    /// The URL the content came from, after redirects.
    pub final_url: String,
    /// The HTTP status (always a success status).
    pub status: u16,
    /// The media type, such as `text/html` (`unknown` when the server sent none).
    pub content_type: String,
    /// The HTML `<title>`, when there is one.
    pub title: Option<String>,
    /// The returned window of text: Markdown for HTML, the body as-is for JSON and text.
    pub text: String,
    /// Offset (in characters) of the window's first character.
    pub start_index: usize,
    /// Offset (in characters) just past the window's last character.
    pub end_index: usize,
    /// Length of the whole converted text in characters.
    pub total_chars: usize,
    /// The body was longer than the download cap and was cut at it before conversion.
    pub download_capped: bool,
    /// The download cap in bytes.
    pub max_download_bytes: u64,
}

/// How the model can ask for more, which depends on the parameters it was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Paging {
    /// The model controls `max_length` and `start_index`, up to this many characters per call.
    Model {
        /// The most characters one call returns.
        ceiling: usize,
    },
    /// The application fixed `max_length`; the model can set only `url`.
    Fixed,
}

impl FetchedPage {
    /// Whether text remains after this window.
    pub fn truncated(&self) -> bool {
        self.end_index < self.total_chars
    }

    /// The `start_index` that reads on after this window, when text remains.
    pub fn next_start_index(&self) -> Option<usize> {
        self.truncated().then_some(self.end_index)
    }

    /// The page as the model reads it, ending with a note on how to get the rest when the text
    /// was truncated.
    pub fn to_model_text(&self) -> String {
        self.render(Paging::Model {
            ceiling: super::MAX_LENGTH_CEILING,
        })
    }

    pub(crate) fn render(&self, paging: Paging) -> String {
        let mut out = String::with_capacity(self.text.len() + 400);
        let _ = writeln!(out, "URL: {}", self.final_url);
        if self.final_url != self.url {
            let _ = writeln!(out, "Redirected from: {}", self.url);
        }
        if let Some(title) = &self.title {
            let _ = writeln!(out, "Title: {title}");
        }
        let _ = writeln!(out, "Content-Type: {}", self.content_type);
        if self.start_index > 0 || self.truncated() {
            let _ = writeln!(
                out,
                "Showing characters {}-{} of {}",
                self.start_index, self.end_index, self.total_chars
            );
        }
        out.push('\n');
        if self.text.is_empty() {
            out.push_str("(the page has no text content)");
        } else {
            out.push_str(&self.text);
        }
        if self.truncated() {
            let remaining = self.total_chars - self.end_index;
            let _ = write!(
                out,
                "\n\n[Truncated: {remaining} more characters. {}]",
                match paging {
                    Paging::Model { ceiling } => format!(
                        "Call fetch_url again with the same url and start_index={} to read on \
                         (max_length sets how many characters you get, up to {ceiling}).",
                        self.end_index
                    ),
                    Paging::Fixed => format!(
                        "This tool returns at most {} characters of a page. For the rest, fetch \
                         a more specific URL: a sub-page, a single section, or a plain-text or \
                         raw version of this document.",
                        self.end_index - self.start_index
                    ),
                }
            );
        }
        if self.download_capped && !self.truncated() {
            let _ = write!(
                out,
                "\n\n[The page is larger than the download limit of {}; the text above is its \
                 beginning only. For the rest, fetch a smaller or more specific URL.]",
                size_text(self.max_download_bytes)
            );
        }
        out
    }
}

/// A byte count as people write it: `10 MB`, `512 KB`, `1000 bytes`.
pub(crate) fn size_text(bytes: u64) -> String {
    const KB: u64 = 1024;
    const MB: u64 = 1024 * 1024;
    match bytes {
        0 => "0 bytes".to_owned(),
        b if b % MB == 0 => format!("{} MB", b / MB),
        b if b % KB == 0 => format!("{} KB", b / KB),
        1 => "1 byte".to_owned(),
        b => format!("{b} bytes"),
    }
}

/// Converts a download to text and cuts the window `start_index .. start_index + max_length`.
/// HTML conversion is CPU-bound, so it runs on the blocking pool.
pub(crate) async fn from_download(
    requested: String,
    download: Download,
    max_download_bytes: u64,
    start_index: usize,
    max_length: usize,
) -> Result<FetchedPage, FetchError> {
    let converted = tokio::task::spawn_blocking(move || convert(download))
        .await
        .map_err(|e| FetchError::Request {
            url: requested.clone(),
            reason: format!("converting the page failed: {e}"),
        })?;
    let Converted {
        final_url,
        status,
        content_type,
        title,
        text,
        capped,
    } = converted;
    if !(200..300).contains(&status) {
        let excerpt: String = text
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .chars()
            .take(ERROR_EXCERPT_CHARS)
            .collect();
        return Err(FetchError::Status {
            url: final_url,
            status,
            excerpt,
        });
    }
    let total_chars = text.chars().count();
    if start_index > 0 && start_index >= total_chars {
        return Err(FetchError::StartIndexPastEnd {
            url: final_url,
            start_index,
            total_chars,
        });
    }
    let window: String = text.chars().skip(start_index).take(max_length).collect();
    let end_index = start_index + window.chars().count();
    Ok(FetchedPage {
        url: requested,
        final_url,
        status,
        content_type,
        title,
        text: window,
        start_index,
        end_index,
        total_chars,
        download_capped: capped,
        max_download_bytes,
    })
}

struct Converted {
    final_url: String,
    status: u16,
    content_type: String,
    title: Option<String>,
    text: String,
    capped: bool,
}

fn convert(download: Download) -> Converted {
    let decoded = decode::decode(&download.body, download.charset.as_deref(), &download.kind);
    let (title, text) = match download.kind {
        Kind::Html => {
            let page = html::to_markdown(&decoded);
            (page.title, page.markdown)
        }
        Kind::Text | Kind::Binary => (None, decoded),
    };
    Converted {
        final_url: download.final_url.to_string(),
        status: download.status.as_u16(),
        content_type: if download.media.is_empty() {
            "unknown".to_owned()
        } else {
            download.media
        },
        title,
        text,
        capped: download.capped,
    }
}

#[cfg(test)]
mod tests {
    use super::size_text;

    #[test]
    fn sizes_read_like_people_write_them() {
        assert_eq!(size_text(10 * 1024 * 1024), "10 MB");
        assert_eq!(size_text(512 * 1024), "512 KB");
        assert_eq!(size_text(1000), "1000 bytes");
        assert_eq!(size_text(1), "1 byte");
    }
}
