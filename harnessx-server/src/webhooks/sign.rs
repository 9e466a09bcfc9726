//! Signing as the Standard Webhooks specification says: a secret `whsec_` + base64 of its bytes,
//! and `webhook-signature: v1,<base64 of HMAC-SHA256(secret bytes, "{id}.{timestamp}.{body}")>`.
//!
//! ```
//! use harnessx_server::webhooks::sign::{Secret, sign};
//! // The specification's published example.
//! let secret = Secret::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")?;
//! let signature = sign(&secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, br#"{"test": 2432232314}"#);
//! assert_eq!(signature, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
//! # Ok::<(), String>(())
//! ```

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// The prefix of a secret as the specification writes it.
pub const SECRET_PREFIX: &str = "whsec_";

/// The fewest secret bytes accepted (the specification: 24 to 64).
pub const MIN_SECRET_BYTES: usize = 24;

/// The most secret bytes accepted.
pub const MAX_SECRET_BYTES: usize = 64;

/// How many random bytes a secret the server makes has.
pub const GENERATED_SECRET_BYTES: usize = 32;

/// A webhook's signing secret: the bytes after `whsec_`, base64-decoded.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(Vec<u8>);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret([REDACTED])")
    }
}

impl Secret {
    /// Reads `whsec_` followed by the standard base64 of 24 to 64 bytes; an error says what is
    /// wrong without repeating the text.
    ///
    /// ```
    /// use harnessx_server::webhooks::sign::Secret;
    /// assert!(Secret::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").is_ok());
    /// assert!(Secret::parse("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").is_err());
    /// assert!(Secret::parse("whsec_c2hvcnQ=").is_err());
    /// ```
    pub fn parse(text: &str) -> Result<Self, String> {
        let how = "write it as `whsec_` followed by the base64 of 24 to 64 random bytes (make one \
                   with `echo whsec_$(openssl rand -base64 32)`), or leave it out and the server \
                   makes one";
        let Some(encoded) = text.trim().strip_prefix(SECRET_PREFIX) else {
            return Err(format!(
                "the secret does not start with `{SECRET_PREFIX}`; {how}"
            ));
        };
        let bytes = STANDARD
            .decode(encoded)
            .map_err(|_| format!("the secret is not base64 after `{SECRET_PREFIX}`; {how}"))?;
        if !(MIN_SECRET_BYTES..=MAX_SECRET_BYTES).contains(&bytes.len()) {
            return Err(format!(
                "the secret holds {} bytes, not 24 to 64; {how}",
                bytes.len()
            ));
        }
        Ok(Self(bytes))
    }

    /// A new secret of [`GENERATED_SECRET_BYTES`] random bytes.
    pub fn generate() -> Self {
        let bytes: [u8; GENERATED_SECRET_BYTES] = rand::random();
        Self(bytes.to_vec())
    }

    /// As the specification writes it: `whsec_` and the base64 of the bytes.
    pub fn to_text(&self) -> String {
        format!("{SECRET_PREFIX}{}", STANDARD.encode(&self.0))
    }
}

/// The `webhook-signature` header's value for a message: `v1,` and the base64 of
/// HMAC-SHA256 over `{id}.{timestamp}.{body}` keyed with the secret's bytes.
pub fn sign(secret: &Secret, id: &str, timestamp: i64, body: &[u8]) -> String {
    // HMAC takes a key of any length: this cannot fail.
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&secret.0)
        .unwrap_or_else(|_| unreachable!("HMAC accepts keys of any length"));
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The specification's published test vector.
    #[test]
    fn the_standard_webhooks_test_vector() {
        let secret = Secret::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            sign(
                &secret,
                "msg_p5jXN8AQM9LWM0D4loKWxJek",
                1_614_265_330,
                br#"{"test": 2432232314}"#
            ),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
        // Any change to the signed content changes the signature.
        assert_ne!(
            sign(
                &secret,
                "msg_p5jXN8AQM9LWM0D4loKWxJek",
                1_614_265_331,
                br#"{"test": 2432232314}"#
            ),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
    }

    #[test]
    fn secrets_are_checked_and_never_shown() {
        let how = "write it as `whsec_` followed by the base64 of 24 to 64 random bytes (make one \
                   with `echo whsec_$(openssl rand -base64 32)`), or leave it out and the server \
                   makes one";
        assert_eq!(
            Secret::parse("hunter2").unwrap_err(),
            format!("the secret does not start with `whsec_`; {how}")
        );
        assert_eq!(
            Secret::parse("whsec_!!!").unwrap_err(),
            format!("the secret is not base64 after `whsec_`; {how}")
        );
        assert_eq!(
            Secret::parse("whsec_c2hvcnQ=").unwrap_err(),
            format!("the secret holds 5 bytes, not 24 to 64; {how}")
        );
        let made = Secret::generate();
        let text = made.to_text();
        assert!(text.starts_with("whsec_"));
        assert_eq!(Secret::parse(&text), Ok(made.clone()));
        assert_ne!(made, Secret::generate());
        assert_eq!(format!("{made:?}"), "Secret([REDACTED])");
    }
}
