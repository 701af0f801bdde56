//! The summary / message checker (A-20, A-40).
//!
//! It never edits. Text a provider wants shown to a person is either accepted exactly as
//! it is, byte for byte, or rejected with every violation listed; a "cleaned" version is
//! never produced, so it can never be presented (A-20: if the sanitiser would change one
//! byte, the proposal is rejected).
//!
//! Violations never carry the offending text itself (it may be a secret), only its kind,
//! position or host.

use crate::language::Translated;
use crate::net::{InternalReason, host_internal_reason, ipv4_internal_reason};
use regex::Regex;
use std::collections::BTreeSet;
use std::fmt;
use std::net::Ipv4Addr;
use std::sync::LazyLock;
use unicode_general_category::{GeneralCategory, get_general_category};

/// Maximum length of a summary or result message, in characters (Unicode scalar values).
pub const MAX_CHARS: usize = 4_000;

/// Text that passed the checker unchanged. The only way to build one is
/// [`SafeText::check`], so holding a `SafeText` proves the check ran.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(transparent)]
pub struct SafeText(String);

impl SafeText {
    /// Checks `text` against every rule of A-20 and keeps it, unchanged, if all hold.
    pub fn check(text: impl Into<String>) -> Result<Self, Vec<TextViolation>> {
        let text = text.into();
        let violations = violations(&text);
        if violations.is_empty() {
            Ok(Self(text))
        } else {
            Err(violations)
        }
    }

    /// The text, exactly as checked.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl<'de> serde::Deserialize<'de> for SafeText {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Self::check(s).map_err(|v| serde::de::Error::custom(ViolationList(&v)))
    }
}

/// Where a forbidden character occurs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CharFinding {
    /// The code point, e.g. `0x202E`.
    pub code_point: u32,
    /// Position of its first occurrence, in characters from the start.
    pub first_position: usize,
    /// How many times it occurs.
    pub count: usize,
}

/// A kind of secret found in text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SecretKind {
    /// `Bearer <token>`.
    BearerToken,
    /// Three base64url segments starting with `eyJ` (a JWT / JWS).
    Jwt,
    /// A Countersign admin key, `tsk_…`.
    AdminKey,
    /// A Countersign widget secret, `wsk_…`.
    WidgetSecret,
    /// An AWS access key id (`AKIA…`, `ASIA…`, …).
    AwsAccessKeyId,
    /// A PEM private-key block.
    PrivateKey,
    /// A URL with a user name or password in it.
    UrlCredentials,
}

/// One broken rule of A-20.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "rule", rename_all = "snake_case")]
pub enum TextViolation {
    /// No characters at all.
    Empty,
    /// Only white space.
    Blank,
    /// More than [`MAX_CHARS`] characters.
    TooLong {
        /// The text's length in characters.
        chars: usize,
        /// The limit.
        max: usize,
    },
    /// A control character other than newline and tab (C0, DEL, C1; carriage return too).
    ControlCharacter(CharFinding),
    /// A bidirectional control: U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069.
    DirectionControl(CharFinding),
    /// Another invisible or non-printing character: Unicode format characters (Cf, such as
    /// zero-width spaces and joiners, soft hyphen, BOM, tag characters), line and paragraph
    /// separators, private-use and unassigned code points, and invisible fillers.
    InvisibleCharacter(CharFinding),
    /// Something shaped like a secret.
    Secret {
        /// Which kind.
        kind: SecretKind,
        /// How many times.
        count: usize,
    },
    /// A URL or host name that is not public.
    InternalUrl {
        /// The host as written (lower-cased), or the URL's scheme when it has no host.
        host: String,
        /// Why it is internal.
        reason: InternalReason,
    },
}

impl fmt::Display for TextViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Empty => f.write_str("text is empty"),
            Self::Blank => f.write_str("text is only white space"),
            Self::TooLong { chars, max } => {
                write!(f, "text has {chars} characters; at most {max} are allowed")
            }
            Self::ControlCharacter(c) => write!(
                f,
                "control character U+{:04X} at position {} ({} occurrence(s)); only newline and tab are allowed",
                c.code_point, c.first_position, c.count
            ),
            Self::DirectionControl(c) => write!(
                f,
                "direction-control character U+{:04X} at position {} ({} occurrence(s))",
                c.code_point, c.first_position, c.count
            ),
            Self::InvisibleCharacter(c) => write!(
                f,
                "invisible character U+{:04X} at position {} ({} occurrence(s))",
                c.code_point, c.first_position, c.count
            ),
            Self::Secret { kind, count } => {
                write!(
                    f,
                    "text contains what looks like a secret ({kind:?}, {count} time(s))"
                )
            }
            Self::InternalUrl { host, reason } => {
                write!(
                    f,
                    "text contains an internal address or URL ({host}: {reason:?})"
                )
            }
        }
    }
}

impl Translated for TextViolation {
    fn portuguese(&self) -> String {
        let at = |c: &CharFinding| {
            format!(
                "U+{:04X} na posição {} ({} ocorrência(s))",
                c.code_point, c.first_position, c.count
            )
        };
        match self {
            Self::Empty => "o texto está vazio".into(),
            Self::Blank => "o texto só tem espaços".into(),
            Self::TooLong { chars, max } => {
                format!("o texto tem {chars} caracteres; o máximo é {max}")
            }
            Self::ControlCharacter(c) => format!(
                "caractere de controle {}; só quebra de linha e tabulação são aceitas",
                at(c)
            ),
            Self::DirectionControl(c) => {
                format!("caractere de controle de direção {}", at(c))
            }
            Self::InvisibleCharacter(c) => format!("caractere invisível {}", at(c)),
            Self::Secret { kind, count } => {
                format!("o texto contém algo que parece um segredo ({kind:?}, {count} vez(es))")
            }
            Self::InternalUrl { host, reason } => {
                format!("o texto contém um endereço ou URL interno ({host}: {reason:?})")
            }
        }
    }
}

/// Formats a list of violations as one sentence, `; `-separated.
#[derive(Debug, Clone, Copy)]
pub struct ViolationList<'a>(pub &'a [TextViolation]);

impl Translated for ViolationList<'_> {
    fn portuguese(&self) -> String {
        (self.0.iter().map(Translated::portuguese))
            .collect::<Vec<_>>()
            .join("; ")
    }
}

impl fmt::Display for ViolationList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, v) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{v}")?;
        }
        Ok(())
    }
}

/// The bidirectional controls named by A-20.
pub fn is_direction_control(c: char) -> bool {
    matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// Control characters other than newline and tab.
pub fn is_forbidden_control(c: char) -> bool {
    c.is_control() && c != '\n' && c != '\t'
}

/// Invisible or non-printing characters other than controls and direction controls.
pub fn is_invisible(c: char) -> bool {
    if is_direction_control(c) || c.is_control() {
        return false;
    }
    matches!(
        get_general_category(c),
        GeneralCategory::Format
            | GeneralCategory::LineSeparator
            | GeneralCategory::ParagraphSeparator
            | GeneralCategory::PrivateUse
            | GeneralCategory::Unassigned
            | GeneralCategory::Surrogate
    ) || matches!(
        c,
        // Combining grapheme joiner, Hangul fillers, braille blank: render as nothing.
        '\u{034F}' | '\u{115F}' | '\u{1160}' | '\u{3164}' | '\u{FFA0}' | '\u{2800}'
    )
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum CharClass {
    Control,
    Direction,
    Invisible,
}

fn char_class(c: char) -> Option<CharClass> {
    if is_forbidden_control(c) {
        Some(CharClass::Control)
    } else if is_direction_control(c) {
        Some(CharClass::Direction)
    } else if is_invisible(c) {
        Some(CharClass::Invisible)
    } else {
        None
    }
}

// Secret patterns have no word boundaries on purpose: a secret glued to other text
// (`xAKIA…`, `aBearer …`) is still a secret; a false positive only rejects a summary.
#[allow(clippy::expect_used)] // constant patterns, covered by tests
fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("valid constant regex")
}

static BEARER: LazyLock<Regex> = LazyLock::new(|| re(r"(?i)bearer\s+([A-Za-z0-9\-._~+/]+=*)"));
static JWT: LazyLock<Regex> =
    LazyLock::new(|| re(r"eyJ[A-Za-z0-9_-]{2,}\.[A-Za-z0-9_-]{2,}\.[A-Za-z0-9_-]*"));
static ADMIN_KEY: LazyLock<Regex> = LazyLock::new(|| re(r"tsk_[A-Za-z0-9_-]{8,}"));
static WIDGET_SECRET: LazyLock<Regex> = LazyLock::new(|| re(r"wsk_[A-Za-z0-9_-]{8,}"));
static AWS_KEY_ID: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|APKA|AROA|ASCA)[A-Z0-9]{16}")
});
static PRIVATE_KEY: LazyLock<Regex> =
    LazyLock::new(|| re(r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----"));
static INTERNAL_HOST: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\b(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)*(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)\.(?:internal|local|localhost)\b|\blocalhost\b",
    )
});
/// Runs of digits and dots; those of exactly four numbers are IPv4 candidates. (No word
/// boundaries: `a10.0.0.1` still names 10.0.0.1.)
static DOTTED: LazyLock<Regex> = LazyLock::new(|| re(r"[0-9][0-9.]*[0-9]"));

/// The internal IPv4 addresses a reader could see in a run of digits and dots: each
/// window of four consecutive numbers, where the first may be read by its last 1–3 digits
/// and the last by its first 1–3 digits (`0192.168.0.1` still names 192.168.0.1; leading
/// zeros never hide an address). Longest readings first; one finding per window.
/// Over-reading only rejects a summary; under-reading would let an address through.
fn internal_dotted_ipv4(run: &str) -> Vec<(Ipv4Addr, InternalReason)> {
    let parts: Vec<&str> = run.split('.').collect();
    let number = |s: &str| -> Option<u8> {
        let t = s.trim_start_matches('0');
        if t.is_empty() && !s.is_empty() {
            Some(0)
        } else {
            t.parse().ok()
        }
    };
    let mut out = Vec::new();
    for w in parts.windows(4) {
        let (Some(b), Some(c)) = (number(w[1]), number(w[2])) else {
            continue;
        };
        let readings = (1..=3.min(w[0].len()))
            .rev()
            .flat_map(|i| (1..=3.min(w[3].len())).rev().map(move |j| (i, j)));
        for (i, j) in readings {
            let first = &w[0][w[0].len() - i..];
            if let (Some(a), Some(d)) = (number(first), number(&w[3][..j])) {
                let ip = Ipv4Addr::new(a, b, c, d);
                if let Some(reason) = ipv4_internal_reason(ip) {
                    out.push((ip, reason));
                    break;
                }
            }
        }
    }
    out
}

/// A bearer credential, not the word "bearer" in prose: long enough and not only letters.
fn looks_like_token(candidate: &str) -> bool {
    let t = candidate.trim_end_matches(['.', ',']);
    t.len() >= 12 && t.chars().any(|c| !c.is_ascii_alphabetic())
}

fn secret_findings(text: &str) -> Vec<TextViolation> {
    let mut out = Vec::new();
    let mut push = |kind, count| {
        if count > 0 {
            out.push(TextViolation::Secret { kind, count });
        }
    };
    push(
        SecretKind::BearerToken,
        BEARER
            .captures_iter(text)
            .filter(|c| c.get(1).is_some_and(|m| looks_like_token(m.as_str())))
            .count(),
    );
    push(SecretKind::Jwt, JWT.find_iter(text).count());
    push(SecretKind::AdminKey, ADMIN_KEY.find_iter(text).count());
    push(
        SecretKind::WidgetSecret,
        WIDGET_SECRET.find_iter(text).count(),
    );
    push(
        SecretKind::AwsAccessKeyId,
        AWS_KEY_ID.find_iter(text).count(),
    );
    push(SecretKind::PrivateKey, PRIVATE_KEY.find_iter(text).count());
    let with_credentials = url_candidates(text)
        .filter_map(|c| url::Url::parse(c).ok())
        .filter(|u| !u.username().is_empty() || u.password().is_some())
        .count();
    push(SecretKind::UrlCredentials, with_credentials);
    out
}

/// Every URL-like span: one per `://`, from the scheme characters before it to the next
/// white space. Spans may overlap, so a URL glued to another
/// (`https://a.example/xhttps://intranet/`) is still seen.
fn url_candidates(text: &str) -> impl Iterator<Item = &str> {
    let is_scheme = |c: char| c.is_ascii_alphanumeric() || matches!(c, '+' | '.' | '-');
    text.match_indices("://").map(move |(at, _)| {
        let start = text[..at]
            .char_indices()
            .rev()
            .take_while(|(_, c)| is_scheme(*c))
            .last()
            .map_or(at, |(i, _)| i);
        let end = text[at..]
            .find(|c: char| c.is_whitespace() || matches!(c, '<' | '>' | '\'' | '`'))
            .map_or(text.len(), |n| at + n);
        trim_url(&text[start..end])
    })
}

/// Trailing punctuation that ends a sentence rather than the URL.
fn trim_url(s: &str) -> &str {
    s.trim_end_matches(['.', ',', ';', ':', '!', '?', ')', '"'])
}

fn internal_url_findings(text: &str) -> Vec<TextViolation> {
    let mut found: BTreeSet<(String, InternalReason)> = BTreeSet::new();
    for candidate in url_candidates(text) {
        match url::Url::parse(candidate) {
            Ok(u) => match u.host() {
                Some(host) => {
                    if let Some(reason) = host_internal_reason(&host) {
                        found.insert((host.to_string().to_ascii_lowercase(), reason));
                    }
                }
                None => {
                    found.insert((format!("{}://", u.scheme()), InternalReason::BareHostname));
                }
            },
            Err(_) => {
                let scheme = candidate.split("://").next().unwrap_or_default();
                found.insert((
                    format!("{}://", scheme.to_ascii_lowercase()),
                    InternalReason::Unparseable,
                ));
            }
        }
    }
    for m in INTERNAL_HOST.find_iter(text) {
        let host = m.as_str().to_ascii_lowercase();
        if let Some(reason) = crate::net::domain_internal_reason(&host) {
            found.insert((host, reason));
        }
    }
    for m in DOTTED.find_iter(text) {
        for (ip, reason) in internal_dotted_ipv4(m.as_str()) {
            found.insert((ip.to_string(), reason));
        }
    }
    found
        .into_iter()
        .map(|(host, reason)| TextViolation::InternalUrl { host, reason })
        .collect()
}

/// Every violation of A-20 in `text`, in a stable order (empty means the text is safe).
pub fn violations(text: &str) -> Vec<TextViolation> {
    let mut out = Vec::new();
    let chars = text.chars().count();
    if chars == 0 {
        out.push(TextViolation::Empty);
        return out;
    }
    if text.trim().is_empty() {
        out.push(TextViolation::Blank);
    }
    if chars > MAX_CHARS {
        out.push(TextViolation::TooLong {
            chars,
            max: MAX_CHARS,
        });
    }

    // One finding per (class, code point), in order of first appearance.
    let mut findings: Vec<(CharClass, CharFinding)> = Vec::new();
    for (position, c) in text.chars().enumerate() {
        let Some(class) = char_class(c) else { continue };
        let code_point = u32::from(c);
        match findings
            .iter_mut()
            .find(|(k, f)| *k == class && f.code_point == code_point)
        {
            Some((_, f)) => f.count += 1,
            None => findings.push((
                class,
                CharFinding {
                    code_point,
                    first_position: position,
                    count: 1,
                },
            )),
        }
    }
    out.extend(findings.into_iter().map(|(class, f)| match class {
        CharClass::Control => TextViolation::ControlCharacter(f),
        CharClass::Direction => TextViolation::DirectionControl(f),
        CharClass::Invisible => TextViolation::InvisibleCharacter(f),
    }));
    out.extend(secret_findings(text));
    out.extend(internal_url_findings(text));
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn rules(text: &str) -> Vec<TextViolation> {
        SafeText::check(text).unwrap_err()
    }

    /// A-20: accepted text is kept byte for byte.
    #[test]
    fn a20_safe_text_is_kept_exactly() {
        let s = "Move session #4812 (Interlagos, 2026-11-02) from car \"Civic\" to \"GR86\".\n\tNo other data changes. ✓ Olá! https://trackshare.example.com/help";
        assert_eq!(SafeText::check(s).unwrap().as_str(), s);
    }

    /// A-20: length is 1–4,000 characters (counted as characters, not bytes).
    #[test]
    fn a20_length_limits() {
        assert_eq!(rules(""), vec![TextViolation::Empty]);
        assert_eq!(rules(" \n\t"), vec![TextViolation::Blank]);
        assert!(SafeText::check("é".repeat(MAX_CHARS)).is_ok());
        assert_eq!(
            rules(&"é".repeat(MAX_CHARS + 1)),
            vec![TextViolation::TooLong {
                chars: MAX_CHARS + 1,
                max: MAX_CHARS
            }]
        );
    }

    /// A-20: control characters other than newline and tab are rejected, each reported.
    #[test]
    fn a20_control_characters() {
        let v = rules("a\rb\u{0}c\u{7f}d\u{85}e\u{0}");
        let cps: Vec<(u32, usize, usize)> = v
            .iter()
            .map(|x| match x {
                TextViolation::ControlCharacter(f) => (f.code_point, f.first_position, f.count),
                other => panic!("unexpected {other:?}"),
            })
            .collect();
        assert_eq!(
            cps,
            vec![(0x0d, 1, 1), (0, 3, 2), (0x7f, 5, 1), (0x85, 7, 1)]
        );
    }

    /// A-20: every direction control named by the rule is rejected.
    #[test]
    fn a20_direction_controls() {
        let all: Vec<char> = "\u{061C}\u{200E}\u{200F}\u{202A}\u{202B}\u{202C}\u{202D}\u{202E}\u{2066}\u{2067}\u{2068}\u{2069}"
            .chars()
            .collect();
        for c in all {
            let v = rules(&format!("pay {c}100"));
            assert!(
                matches!(v.as_slice(), [TextViolation::DirectionControl(f)] if f.code_point == u32::from(c)),
                "U+{:04X}: {v:?}",
                u32::from(c)
            );
        }
    }

    /// A-20: other invisible format characters are rejected.
    #[test]
    fn a20_invisible_characters() {
        for c in [
            '\u{200B}',
            '\u{200C}',
            '\u{200D}',
            '\u{2060}',
            '\u{FEFF}',
            '\u{00AD}',
            '\u{E0041}',
            '\u{2028}',
            '\u{2029}',
            '\u{E000}',
            '\u{034F}',
            '\u{3164}',
        ] {
            let v = rules(&format!("a{c}b"));
            assert!(
                matches!(v.as_slice(), [TextViolation::InvisibleCharacter(f)] if f.code_point == u32::from(c)),
                "U+{:04X}: {v:?}",
                u32::from(c)
            );
        }
    }

    /// A-20: secrets of each kind are rejected, and the violation never quotes them.
    #[test]
    fn a20_secrets() {
        let cases = [
            (
                "use Bearer abcDEF123456ghi to call",
                SecretKind::BearerToken,
            ),
            (
                "token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl here",
                SecretKind::Jwt,
            ),
            ("key tsk_9f8e7d6c5b4a39281706", SecretKind::AdminKey),
            ("secret wsk_9f8e7d6c5b4a39281706", SecretKind::WidgetSecret),
            (
                "AKIAIOSFODNN7EXAMPLE is the key",
                SecretKind::AwsAccessKeyId,
            ),
            (
                "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----",
                SecretKind::PrivateKey,
            ),
            (
                "see https://admin:hunter2@example.com/x",
                SecretKind::UrlCredentials,
            ),
        ];
        for (text, kind) in cases {
            let v = rules(text);
            assert!(
                v.contains(&TextViolation::Secret { kind, count: 1 }),
                "{text}: {v:?}"
            );
            for violation in &v {
                let shown = format!("{violation} {}", serde_json::to_string(violation).unwrap());
                assert!(!shown.contains("hunter2") && !shown.contains("abcDEF123456"));
            }
        }
    }

    #[test]
    fn prose_about_bearers_is_not_a_secret() {
        assert!(SafeText::check("The bearer authentication header is required.").is_ok());
        assert!(SafeText::check("Token bearer: the account owner").is_ok());
    }

    /// A-20: internal URLs and hosts are rejected; public ones pass.
    #[test]
    fn a20_internal_urls() {
        use InternalReason::*;
        let cases = [
            ("see http://127.0.0.1:8080/admin", "127.0.0.1", Loopback),
            ("see http://localhost/x", "localhost", Loopback),
            ("see https://10.0.0.5/x.", "10.0.0.5", Private),
            ("see http://[::1]/", "[::1]", Loopback),
            ("see http://[fe80::1]/", "[fe80::1]", LinkLocal),
            (
                "see http://169.254.169.254/latest/meta-data",
                "169.254.169.254",
                LinkLocal,
            ),
            (
                "see https://db.prod.internal/x",
                "db.prod.internal",
                InternalSuffix,
            ),
            ("see https://printer.local", "printer.local", InternalSuffix),
            ("see https://api.localhost/", "api.localhost", Loopback),
            ("see http://intranet/wiki", "intranet", BareHostname),
            ("see http://0x7f000001/", "127.0.0.1", Loopback),
            (
                "call db.prod.internal:5432 now",
                "db.prod.internal",
                InternalSuffix,
            ),
            ("host 192.168.1.20 is down", "192.168.1.20", Private),
            ("open localhost:3000", "localhost", Loopback),
        ];
        for (text, host, reason) in cases {
            let v = rules(text);
            assert!(
                v.contains(&TextViolation::InternalUrl {
                    host: host.to_owned(),
                    reason
                }),
                "{text}: {v:?}"
            );
        }
        assert!(SafeText::check("Details at https://trackshare.example.com/s/4812.").is_ok());
        assert!(SafeText::check("Version 1.2.3.4 and IP 8.8.8.8 are fine").is_ok());
        for hidden in [
            "0192.168.0.1",
            "x10.0.0.1",
            "1.10.0.0.1",
            "010.0.0.1",
            "127.000.000.001",
        ] {
            assert!(SafeText::check(hidden).is_err(), "{hidden}");
        }
        assert!(SafeText::check("the local team will call").is_ok());
    }

    #[test]
    fn file_urls_and_garbage_urls_are_rejected() {
        assert!(!rules("file:///etc/passwd").is_empty());
        assert!(!rules("http://[zz/").is_empty());
        // A URL glued to another is still seen.
        assert!(!rules("https://example.com/okhttps://intranet/").is_empty());
    }

    /// A-20: every violation is reported, not just the first.
    #[test]
    fn a20_reports_every_violation() {
        let v = rules("\u{202E}x\u{0} tsk_abcdefghijkl http://10.1.1.1/");
        assert_eq!(v.len(), 4, "{v:?}");
    }
}
