//! Message content beyond text: [`Image`]s a user sends and the model's [`Thinking`] blocks.

use serde::{Deserialize, Serialize};

/// An image in a user message.
///
/// The OpenAI provider sends it as an `image_url` part (a `data:` URL for base64 data); the
/// Anthropic provider as an `image` block with a `base64` or `url` source.
///
/// ```
/// use harnessx::Message;
/// use harnessx::model::Image;
/// let message = Message::user_with_images(
///     "What is in this picture?",
///     vec![Image::base64("image/png", "iVBORw0KGgo="), Image::url("https://example.com/cat.jpg")],
/// );
/// assert!(matches!(&message, Message::User { images, .. } if images.len() == 2));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Image {
    /// Image bytes, base64-encoded.
    Base64 {
        /// The MIME type: `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
        media_type: String,
        /// The base64 text (standard alphabet, no `data:` prefix).
        data: String,
    },
    /// An image the provider fetches itself.
    Url {
        /// The `http(s)` URL.
        url: String,
    },
}

impl Image {
    /// Base64-encoded image bytes of MIME type `media_type`.
    pub fn base64(media_type: impl Into<String>, data: impl Into<String>) -> Self {
        Self::Base64 {
            media_type: media_type.into(),
            data: data.into(),
        }
    }

    /// An image at a URL.
    pub fn url(url: impl Into<String>) -> Self {
        Self::Url { url: url.into() }
    }

    /// The image as one URL: a `data:` URL for base64 data.
    ///
    /// ```
    /// use harnessx::model::Image;
    /// assert_eq!(Image::base64("image/png", "AAAA").as_url(), "data:image/png;base64,AAAA");
    /// assert_eq!(Image::url("https://x/y.png").as_url(), "https://x/y.png");
    /// ```
    pub fn as_url(&self) -> String {
        match self {
            Self::Base64 { media_type, data } => format!("data:{media_type};base64,{data}"),
            Self::Url { url } => url.clone(),
        }
    }
}

/// A reasoning block a model produced before its answer (Anthropic extended thinking).
///
/// Anthropic requires the blocks of the turn that called a tool to come back unchanged, signature
/// included, in the assistant message of the next request; the agent keeps them on
/// [`Message::Assistant`](super::Message::Assistant) for that. Providers without thinking ignore
/// them.
///
/// ```
/// use harnessx::model::Thinking;
/// let block = Thinking::Thinking { thinking: "2 + 3 is 5".into(), signature: "sig".into() };
/// assert_eq!(block.text(), Some("2 + 3 is 5"));
/// assert_eq!(Thinking::Redacted { data: "opaque".into() }.text(), None);
/// // Serialised as the Anthropic API writes the blocks.
/// assert_eq!(
///     serde_json::to_value(&block).unwrap(),
///     serde_json::json!({"type": "thinking", "thinking": "2 + 3 is 5", "signature": "sig"})
/// );
/// assert_eq!(
///     serde_json::to_value(Thinking::Redacted { data: "x".into() }).unwrap(),
///     serde_json::json!({"type": "redacted_thinking", "data": "x"})
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Thinking {
    /// Readable reasoning with the signature that authenticates it.
    Thinking {
        /// The reasoning text (possibly summarised by the provider).
        thinking: String,
        /// The provider's signature; sent back unchanged.
        signature: String,
    },
    /// Reasoning the provider encrypted (`redacted_thinking`); only its opaque data is kept.
    #[serde(rename = "redacted_thinking")]
    Redacted {
        /// The encrypted data; sent back unchanged.
        data: String,
    },
}

impl Thinking {
    /// The readable reasoning, if it is not redacted.
    pub fn text(&self) -> Option<&str> {
        match self {
            Self::Thinking { thinking, .. } => Some(thinking),
            Self::Redacted { .. } => None,
        }
    }
}
