//! The proof key's public forms (A-31): its RFC 7638 JWK thumbprint (the proofs' `kid`),
//! its JWK members and its SPKI PEM, computed from the DER SubjectPublicKeyInfo that KMS
//! `GetPublicKey` returns.
//!
//! Reading the key needs only a few DER elements, so they are parsed here rather than
//! with a general RSA crate (which would bring big-integer arithmetic, a second `rand`
//! and its advisories for no use: nothing here signs or verifies). The parser accepts
//! DER only, never BER: every length and integer must be in its shortest form and nothing
//! may follow the key, so the PEM of the input bytes is exactly the PEM of the key.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use sha2::{Digest, Sha256};

/// Why bytes are not a DER SubjectPublicKeyInfo of an RSA key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum JwkError {
    /// The input ends inside an element.
    #[error("the DER ends inside an element")]
    Truncated,
    /// An element has another type than the structure requires.
    #[error("expected DER tag {expected:#04x}, found {found:#04x}")]
    UnexpectedTag {
        /// The tag the structure requires here.
        expected: u8,
        /// The tag found.
        found: u8,
    },
    /// A length or an integer is not in its shortest form, or the length is indefinite.
    #[error("the key is not in DER (a length or an integer is not in its shortest form)")]
    NotDer,
    /// Bytes follow the last element of a structure.
    #[error("bytes follow the end of a DER structure")]
    TrailingData,
    /// The algorithm is not `rsaEncryption` with NULL parameters (RFC 3279 §2.3.1).
    #[error("the key's algorithm is not rsaEncryption")]
    NotRsa,
    /// The modulus or the exponent is zero or negative.
    #[error("the RSA modulus or exponent is not a positive integer")]
    NotPositive,
}

/// An RSA public key read from a SubjectPublicKeyInfo: big-endian unsigned bytes, without
/// leading zero bytes (the form JWK `n` and `e` encode, RFC 7518 §6.3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RsaPublicKey<'a> {
    /// The modulus.
    pub n: &'a [u8],
    /// The public exponent.
    pub e: &'a [u8],
}

impl RsaPublicKey<'_> {
    /// JWK `n`: the modulus in base64url without padding.
    pub fn n_b64url(&self) -> String {
        URL_SAFE_NO_PAD.encode(self.n)
    }

    /// JWK `e`: the exponent in base64url without padding.
    pub fn e_b64url(&self) -> String {
        URL_SAFE_NO_PAD.encode(self.e)
    }

    /// The RFC 7638 thumbprint of this key's JWK.
    pub fn thumbprint(&self) -> String {
        rsa_jwk_thumbprint(&self.n_b64url(), &self.e_b64url())
    }
}

/// RFC 7638 thumbprint of an RSA JWK given its base64url `n` and `e`: SHA-256 over the
/// required members in lexicographic order, no white space, base64url without padding.
/// `n` and `e` must be base64url text (as [`RsaPublicKey`] writes them): that alphabet
/// needs no JSON escaping, so the members are written as they are.
pub fn rsa_jwk_thumbprint(n: &str, e: &str) -> String {
    let canonical = format!(r#"{{"e":"{e}","kty":"RSA","n":"{n}"}}"#);
    URL_SAFE_NO_PAD.encode(Sha256::digest(canonical.as_bytes()))
}

/// Reads the modulus and exponent of a DER SubjectPublicKeyInfo:
/// `SEQUENCE { SEQUENCE { OID rsaEncryption, NULL }, BIT STRING { SEQUENCE { INTEGER n,
/// INTEGER e } } }`. Anything else, including BER and trailing bytes, is an error.
pub fn rsa_public_key(spki_der: &[u8]) -> Result<RsaPublicKey<'_>, JwkError> {
    let spki = only(spki_der, SEQUENCE)?;
    let mut spki = Der(spki);
    let algorithm = spki.element(SEQUENCE)?;
    let key_bits = spki.element(BIT_STRING)?;
    spki.finish()?;

    let mut algorithm = Der(algorithm);
    if algorithm.element(OID)? != RSA_ENCRYPTION {
        return Err(JwkError::NotRsa);
    }
    // RFC 3279 requires the NULL; the key's PEM is only canonical with it.
    if !matches!(algorithm.element(NULL), Ok([])) {
        return Err(JwkError::NotRsa);
    }
    algorithm.finish()?;

    // A BIT STRING starts with its count of unused bits; a DER-encoded key has none.
    let (&unused_bits, key) = key_bits.split_first().ok_or(JwkError::Truncated)?;
    if unused_bits != 0 {
        return Err(JwkError::NotDer);
    }
    let mut key = Der(only(key, SEQUENCE)?);
    let n = positive_integer(key.element(INTEGER)?)?;
    let e = positive_integer(key.element(INTEGER)?)?;
    key.finish()?;
    Ok(RsaPublicKey { n, e })
}

/// The RFC 7638 thumbprint of the RSA key in a DER SubjectPublicKeyInfo (the proofs'
/// `kid`, A-31).
pub fn rsa_thumbprint(spki_der: &[u8]) -> Result<String, JwkError> {
    Ok(rsa_public_key(spki_der)?.thumbprint())
}

/// A DER SubjectPublicKeyInfo as PEM (`PUBLIC KEY`, RFC 7468): standard base64 in lines of
/// 64 characters, LF line endings, a final LF. The bytes are not checked: read them with
/// [`rsa_public_key`] first.
pub fn spki_pem(spki_der: &[u8]) -> String {
    const BEGIN: &str = "-----BEGIN PUBLIC KEY-----\n";
    const END: &str = "-----END PUBLIC KEY-----\n";
    let body = STANDARD.encode(spki_der);
    let mut pem = String::with_capacity(BEGIN.len() + body.len() + body.len() / 64 + 1 + END.len());
    pem.push_str(BEGIN);
    for (i, c) in body.chars().enumerate() {
        if i > 0 && i.is_multiple_of(64) {
            pem.push('\n');
        }
        pem.push(c);
    }
    if !body.is_empty() {
        pem.push('\n');
    }
    pem.push_str(END);
    pem
}

/// The DER inside a `PUBLIC KEY` PEM (the inverse of [`spki_pem`]); the bytes are not
/// checked: read them with [`rsa_public_key`].
pub fn pem_der(pem: &str) -> Result<Vec<u8>, JwkError> {
    let body: String = pem
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("-----"))
        .collect();
    STANDARD.decode(body).map_err(|_| JwkError::Truncated)
}

/// The JWK (RFC 7517) of an RSA `PUBLIC KEY` PEM for RS256 signatures, with `kid`.
pub fn rsa_jwk(pem: &str, kid: &str) -> Result<serde_json::Value, JwkError> {
    let der = pem_der(pem)?;
    let key = rsa_public_key(&der)?;
    Ok(serde_json::json!({
        "kty": "RSA",
        "use": "sig",
        "alg": "RS256",
        "kid": kid,
        "n": key.n_b64url(),
        "e": key.e_b64url(),
    }))
}

const INTEGER: u8 = 0x02;
const BIT_STRING: u8 = 0x03;
const NULL: u8 = 0x05;
const OID: u8 = 0x06;
const SEQUENCE: u8 = 0x30;

/// The content of OID 1.2.840.113549.1.1.1 (`rsaEncryption`, RFC 8017 appendix A.1).
const RSA_ENCRYPTION: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01];

/// A cursor over the elements of one DER structure's content.
struct Der<'a>(&'a [u8]);

impl<'a> Der<'a> {
    /// The content of the next element, which must have tag `tag`.
    fn element(&mut self, tag: u8) -> Result<&'a [u8], JwkError> {
        let (&found, rest) = self.0.split_first().ok_or(JwkError::Truncated)?;
        if found != tag {
            return Err(JwkError::UnexpectedTag {
                expected: tag,
                found,
            });
        }
        let (&first, mut rest) = rest.split_first().ok_or(JwkError::Truncated)?;
        let len = if first < 0x80 {
            usize::from(first)
        } else {
            // Long form: the low bits count the length bytes that follow. 0x80 is BER's
            // indefinite length; more than 4 bytes is no key this module reads.
            let count = usize::from(first & 0x7f);
            if count == 0 || count > 4 {
                return Err(JwkError::NotDer);
            }
            let (bytes, after) = rest.split_at_checked(count).ok_or(JwkError::Truncated)?;
            rest = after;
            // DER: no leading zero byte, and the long form only when the short one cannot
            // say it.
            if bytes.first() == Some(&0) {
                return Err(JwkError::NotDer);
            }
            let len = bytes.iter().fold(0u64, |len, &b| (len << 8) | u64::from(b));
            if len < 0x80 {
                return Err(JwkError::NotDer);
            }
            usize::try_from(len).map_err(|_| JwkError::Truncated)?
        };
        let (content, after) = rest.split_at_checked(len).ok_or(JwkError::Truncated)?;
        self.0 = after;
        Ok(content)
    }

    /// Checks that the structure has no more elements.
    fn finish(self) -> Result<(), JwkError> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(JwkError::TrailingData)
        }
    }
}

/// The content of `bytes` when they are exactly one element with tag `tag`.
fn only(bytes: &[u8], tag: u8) -> Result<&[u8], JwkError> {
    let mut der = Der(bytes);
    let content = der.element(tag)?;
    der.finish()?;
    Ok(content)
}

/// The magnitude of a positive DER INTEGER, without its sign byte.
fn positive_integer(content: &[u8]) -> Result<&[u8], JwkError> {
    match content {
        [] => Err(JwkError::NotDer),
        // The high bit of the first byte is the sign.
        [first, ..] if first & 0x80 != 0 => Err(JwkError::NotPositive),
        // A leading zero byte is only allowed (and required) before a high bit.
        [0, next, ..] if next & 0x80 == 0 => Err(JwkError::NotDer),
        [0] => Err(JwkError::NotPositive),
        [0, magnitude @ ..] => Ok(magnitude),
        magnitude => Ok(magnitude),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// RFC 7638 §3.1's example key (`n`, `e`) and its thumbprint.
    const RFC_N: &str = "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw";
    const RFC_E: &str = "AQAB";
    const RFC_THUMBPRINT: &str = "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs";

    /// A 2048-bit key as OpenSSL writes it (`openssl rsa -pubout`), and its thumbprint
    /// computed independently (Python: n and e from `openssl rsa -pubin -text`).
    const OPENSSL_PEM: &str = "-----BEGIN PUBLIC KEY-----
MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA8J869iMPby5jUHTYV9/3
JO0jq2R25FqTfPD0Lc1O5p/DTylW2POowjvDVe3EQIdOyNgvY7vSWAUbfFdTk3qK
rFMtvsHD8YyADIXTzA3yz1m71QC4iX6TXTRve8esjgw3vhVN4ebGFQcb7bkmEOwQ
EFgDcb2ps57YrKjg/Rgd9cv2D27UD4ZiJ19j/4gvJq5lZpxmJCu7sctG9JdB+58L
476fYOi1hJ0Ux5gJBjRdzvK5XSHUXAeGBxP9pPmWcooKp1hhsooNP2/7zw+he5Ec
SdDDP5mqaX30fn+DzzeeXbWSmeu2HRBxvbXDt1tmT2gqtRHkIRtwuft2c9HPIqOm
rwIDAQAB
-----END PUBLIC KEY-----
";
    const OPENSSL_THUMBPRINT: &str = "oUEFlnJkysellaxiXoyt4hfOFlJSFjjS0T0nZ2XoCSg";

    /// A DER element with the shortest length form (what a DER encoder writes).
    fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
        let mut out = vec![tag];
        let len = content.len();
        if len < 0x80 {
            out.push(len as u8);
        } else {
            let bytes: Vec<u8> = len
                .to_be_bytes()
                .into_iter()
                .skip_while(|b| *b == 0)
                .collect();
            out.push(0x80 | bytes.len() as u8);
            out.extend(bytes);
        }
        out.extend_from_slice(content);
        out
    }

    /// A positive INTEGER: a zero byte before a high bit, as DER requires.
    fn integer(magnitude: &[u8]) -> Vec<u8> {
        let mut content = Vec::new();
        if magnitude.first().is_some_and(|b| b & 0x80 != 0) {
            content.push(0);
        }
        content.extend_from_slice(magnitude);
        tlv(INTEGER, &content)
    }

    /// The SubjectPublicKeyInfo of RSA key (`n`, `e`).
    fn spki(n: &[u8], e: &[u8]) -> Vec<u8> {
        spki_of(&integer(n), &integer(e), 0)
    }

    /// A SubjectPublicKeyInfo from encoded elements `n` and `e` and a BIT STRING whose
    /// first byte (the count of unused bits) is `unused_bits`.
    fn spki_of(n: &[u8], e: &[u8], unused_bits: u8) -> Vec<u8> {
        let algorithm = [tlv(OID, RSA_ENCRYPTION), tlv(NULL, &[])].concat();
        let key = tlv(SEQUENCE, &[n, e].concat());
        let bits = [&[unused_bits][..], &key[..]].concat();
        tlv(
            SEQUENCE,
            &[tlv(SEQUENCE, &algorithm), tlv(BIT_STRING, &bits)].concat(),
        )
    }

    fn rfc_spki() -> Vec<u8> {
        let n = URL_SAFE_NO_PAD.decode(RFC_N).unwrap();
        let e = URL_SAFE_NO_PAD.decode(RFC_E).unwrap();
        spki(&n, &e)
    }

    fn openssl_der() -> Vec<u8> {
        let body: String = OPENSSL_PEM
            .lines()
            .filter(|l| !l.starts_with("-----"))
            .collect();
        STANDARD.decode(body).unwrap()
    }

    #[test]
    fn thumbprint_matches_rfc7638_example() {
        assert_eq!(rsa_jwk_thumbprint(RFC_N, RFC_E), RFC_THUMBPRINT);
        let der = rfc_spki();
        let key = rsa_public_key(&der).unwrap();
        // The modulus' high bit is set, so DER carries a sign byte; JWK `n` must not.
        assert_eq!(key.n_b64url(), RFC_N);
        assert_eq!(key.e_b64url(), RFC_E);
        assert_eq!(rsa_thumbprint(&der).unwrap(), RFC_THUMBPRINT);
    }

    #[test]
    fn openssl_key_reads_and_its_pem_is_reproduced() {
        let der = openssl_der();
        let key = rsa_public_key(&der).unwrap();
        assert_eq!(key.n.len(), 256);
        assert_eq!(key.e_b64url(), "AQAB");
        assert_eq!(rsa_thumbprint(&der).unwrap(), OPENSSL_THUMBPRINT);
        assert_eq!(spki_pem(&der), OPENSSL_PEM);
    }

    #[test]
    fn a_pem_gives_its_jwk() {
        let jwk = rsa_jwk(OPENSSL_PEM, OPENSSL_THUMBPRINT).unwrap();
        assert_eq!(jwk["kid"], OPENSSL_THUMBPRINT);
        assert_eq!(
            rsa_jwk_thumbprint(jwk["n"].as_str().unwrap(), jwk["e"].as_str().unwrap()),
            OPENSSL_THUMBPRINT
        );
        assert_eq!(pem_der(&spki_pem(&openssl_der())).unwrap(), openssl_der());
        assert!(
            rsa_jwk(
                "-----BEGIN PUBLIC KEY-----\nTEST\n-----END PUBLIC KEY-----\n",
                "k"
            )
            .is_err()
        );
    }

    #[test]
    fn pem_lines_are_64_characters() {
        assert_eq!(
            spki_pem(&[]),
            "-----BEGIN PUBLIC KEY-----\n-----END PUBLIC KEY-----\n"
        );
        // 48 bytes are exactly one 64-character line; 49 start a second one.
        let one = spki_pem(&[0; 48]);
        assert_eq!(one.lines().nth(1).unwrap().len(), 64);
        assert_eq!(one.lines().count(), 3);
        let two = spki_pem(&[0; 49]);
        assert_eq!(two.lines().nth(2).unwrap(), "AA==");
    }

    #[test]
    fn truncated_keys_are_refused() {
        let der = rfc_spki();
        for len in 0..der.len() {
            assert!(
                rsa_public_key(&der[..len]).is_err(),
                "prefix of {len} bytes"
            );
        }
    }

    #[test]
    fn garbage_is_refused() {
        assert_eq!(
            rsa_public_key(b"not a key"),
            Err(JwkError::UnexpectedTag {
                expected: SEQUENCE,
                found: b'n'
            })
        );
        assert!(rsa_public_key(&[]).is_err());
        assert!(rsa_public_key(&[SEQUENCE]).is_err());
        assert!(rsa_public_key(&[SEQUENCE, 0x84, 0xff, 0xff, 0xff, 0xff]).is_err());
        assert!(rsa_public_key(&[SEQUENCE, 0x89, 1, 2, 3, 4, 5, 6, 7, 8, 9]).is_err());
    }

    /// No byte of a key, changed to anything, makes the parser panic.
    #[test]
    fn mutated_keys_never_panic() {
        let der = rfc_spki();
        for at in 0..der.len() {
            for b in [0x00, 0x01, 0x7f, 0x80, 0x81, 0x82, 0x84, 0x85, 0xff] {
                let mut bad = der.clone();
                bad[at] = b;
                let _ = rsa_thumbprint(&bad);
            }
        }
    }

    #[test]
    fn trailing_bytes_are_refused() {
        let mut der = rfc_spki();
        der.push(0);
        assert_eq!(rsa_public_key(&der), Err(JwkError::TrailingData));
    }

    #[test]
    fn ber_and_wrong_algorithms_are_refused() {
        let n = URL_SAFE_NO_PAD.decode(RFC_N).unwrap();
        // Long-form lengths where the short form fits, or with a leading zero byte.
        assert_eq!(
            rsa_public_key(&[SEQUENCE, 0x81, 0x05, 5, 0, 0, 0, 0]),
            Err(JwkError::NotDer)
        );
        assert_eq!(
            rsa_public_key(&[SEQUENCE, 0x82, 0x00, 0x05, 5, 0, 0, 0, 0]),
            Err(JwkError::NotDer)
        );
        // Indefinite length.
        assert_eq!(
            rsa_public_key(&[SEQUENCE, 0x80, 0, 0]),
            Err(JwkError::NotDer)
        );
        // An integer with a needless leading zero; negative or zero exponents.
        let n = integer(&n);
        fn e(content: &[u8]) -> Vec<u8> {
            tlv(INTEGER, content)
        }
        assert_eq!(
            rsa_public_key(&spki_of(&n, &e(&[0x00, 0x01, 0x00, 0x01]), 0)),
            Err(JwkError::NotDer)
        );
        assert_eq!(
            rsa_public_key(&spki_of(&n, &e(&[0x81]), 0)),
            Err(JwkError::NotPositive)
        );
        assert_eq!(
            rsa_public_key(&spki_of(&n, &e(&[0x00]), 0)),
            Err(JwkError::NotPositive)
        );
        assert_eq!(
            rsa_public_key(&spki_of(&n, &e(&[]), 0)),
            Err(JwkError::NotDer)
        );
        // A key BIT STRING that claims unused bits.
        assert_eq!(
            rsa_public_key(&spki_of(&n, &e(&[0x01, 0x00, 0x01]), 1)),
            Err(JwkError::NotDer)
        );
        assert!(rsa_public_key(&spki_of(&n, &e(&[0x01, 0x00, 0x01]), 0)).is_ok());
        // An EC key's algorithm (id-ecPublicKey, 1.2.840.10045.2.1).
        let ec = {
            let algorithm = [
                tlv(OID, &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01]),
                tlv(NULL, &[]),
            ]
            .concat();
            tlv(
                SEQUENCE,
                &[tlv(SEQUENCE, &algorithm), tlv(BIT_STRING, &[0, 4])].concat(),
            )
        };
        assert_eq!(rsa_public_key(&ec), Err(JwkError::NotRsa));
        // rsaEncryption without its NULL.
        let no_null = tlv(
            SEQUENCE,
            &[
                tlv(SEQUENCE, &tlv(OID, RSA_ENCRYPTION)),
                tlv(BIT_STRING, &[0]),
            ]
            .concat(),
        );
        assert_eq!(rsa_public_key(&no_null), Err(JwkError::NotRsa));
    }
}
