//! Standard Webhooks signatures: a secret written `whsec_<base64>` (24 to
//! 64 bytes once decoded, as the specification asks), and the
//! `webhook-signature` header, `v1,` + base64 of HMAC-SHA256 over
//! `{id}.{timestamp}.{body}` keyed with the decoded bytes. The signing is
//! the Standard Webhooks project's own library; this module checks the
//! secret and never prints it.

use std::fmt;

use base64::Engine;

/// What every symmetric Standard Webhooks secret starts with.
pub(super) const SECRET_PREFIX: &str = "whsec_";
/// The shortest and longest decoded secret the specification allows.
const KEY_BYTES: std::ops::RangeInclusive<usize> = 24..=64;

/// A webhook's signing secret. `Debug` shows no part of it.
#[derive(Clone)]
pub struct Secret {
    key: Vec<u8>,
}

impl Secret {
    /// Reads `whsec_<base64>`; the error says what is wrong, never the
    /// secret.
    pub fn parse(text: &str) -> Result<Self, String> {
        let Some(encoded) = text.strip_prefix(SECRET_PREFIX) else {
            return Err(format!(
                "a Standard Webhooks secret starts with {SECRET_PREFIX} (then base64 of 24 to 64 random \
                 bytes, e.g. from `openssl rand -base64 32`)"
            ));
        };
        let key = base64::engine::general_purpose::STANDARD
            .decode(encoded.trim())
            .map_err(|error| format!("what follows {SECRET_PREFIX} is not base64 ({error})"))?;
        if !KEY_BYTES.contains(&key.len()) {
            return Err(format!(
                "the secret is {} bytes once decoded; use {} to {} random bytes",
                key.len(),
                KEY_BYTES.start(),
                KEY_BYTES.end()
            ));
        }
        Ok(Self { key })
    }

    /// The `webhook-signature` header of `body` sent as message `id` at
    /// `timestamp` (unix seconds). The body must be UTF-8 (JSON is).
    pub fn sign(&self, id: &str, timestamp: i64, body: &[u8]) -> Result<String, String> {
        let signer = standardwebhooks::Webhook::from_bytes(self.key.clone()).map_err(|e| e.to_string())?;
        signer.sign(id, timestamp, body).map_err(|e| e.to_string())
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

impl PartialEq for Secret {
    fn eq(&self, other: &Self) -> bool {
        use subtle::ConstantTimeEq;
        self.key.ct_eq(&other.key).into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The test vectors of the Standard Webhooks libraries (the Python
    /// library's `test_sign_function`, the Rust library's `test_sign`),
    /// byte for byte.
    #[test]
    fn signatures_match_the_specification_s_test_vectors() {
        let secret = Secret::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").expect("secret");
        let signature = secret
            .sign(
                "msg_p5jXN8AQM9LWM0D4loKWxJek",
                1614265330,
                br#"{"test": 2432232314}"#,
            )
            .expect("sign");
        assert_eq!(signature, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");

        let secret = Secret::parse("whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD").expect("secret");
        let signature = secret
            .sign(
                "msg_27UH4WbU6Z5A5EzD8u03UvzRbpk",
                1649367553,
                br#"{"email":"test@example.com","username":"test_user"}"#,
            )
            .expect("sign");
        assert_eq!(signature, "v1,tZ1I4/hDygAJgO5TYxiSd6Sd0kDW6hPenDe+bTa3Kkw=");
    }

    #[test]
    fn bad_secrets_say_what_is_wrong_and_never_show_the_secret() {
        let missing_prefix = Secret::parse("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap_err();
        assert!(missing_prefix.contains("starts with whsec_"), "{missing_prefix}");
        assert!(!missing_prefix.contains("MfKQ9r8"), "{missing_prefix}");
        let not_base64 = Secret::parse("whsec_not base64!").unwrap_err();
        assert!(not_base64.contains("not base64"), "{not_base64}");
        let short = Secret::parse("whsec_c2hvcnQ=").unwrap_err();
        assert!(short.contains("5 bytes"), "{short}");
        let secret = Secret::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").expect("secret");
        assert_eq!(format!("{secret:?}"), "Secret(<redacted>)");
    }
}
