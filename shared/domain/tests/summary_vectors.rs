//! Summary test vectors for provider engineers (issue 25): `docs/summary-test-vectors.json`
//! holds texts and the platform's verdict on each as a summary or status message (A-20:
//! the rules a provider's `summary` and `message` must keep, or the platform refuses the
//! whole answer). The Python and TypeScript pre-checks in `docs/recipes/` are run over it
//! by the test command. This test writes the file (`UPDATE_VECTORS=1`) and checks the
//! checked-in one is what the checker says, so the file and the platform cannot disagree.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use countersign_domain::text::{SafeText, TextViolation};
use serde_json::{Value, json};

/// (name, text).
fn texts() -> Vec<(&'static str, String)> {
    vec![
        (
            "plain",
            "Move the session at Spa on 2026-11-22 to your car \"GR86\".".into(),
        ),
        (
            "portuguese",
            "Mover a sessão de Interlagos para o carro \"Civic\". Confirma?".into(),
        ),
        ("newlines_and_tabs", "Line one\n\tLine two".into()),
        (
            "emoji_and_accents",
            "Café ☕ — 3 laps, 1:36.877 best 🏁".into(),
        ),
        (
            "public_url",
            "Details at https://trackshare.example.com/help/sessions.".into(),
        ),
        (
            "public_ip_in_text",
            "Served from 93.184.216.34 today.".into(),
        ),
        ("empty", String::new()),
        ("blank", "  \n\t ".into()),
        ("too_long", "a".repeat(4001)),
        ("exactly_4000", "a".repeat(4000)),
        ("carriage_return", "one\r\ntwo".into()),
        ("nul", "a\u{0}b".into()),
        ("c1_control", "a\u{85}b".into()),
        ("right_to_left_override", "Move to car \u{202E}4GT".into()),
        ("left_to_right_mark", "a\u{200E}b".into()),
        ("zero_width_space", "pay\u{200B}ment".into()),
        ("soft_hyphen", "con\u{AD}firm".into()),
        ("byte_order_mark", "\u{FEFF}Move".into()),
        ("private_use", "a\u{E000}b".into()),
        ("line_separator", "a\u{2028}b".into()),
        ("hangul_filler", "a\u{3164}b".into()),
        ("bearer_token", "use Bearer abcdef0123456789xyz".into()),
        ("bearer_in_prose", "the bearer of this card".into()),
        (
            "jwt",
            "token eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln".into(),
        ),
        ("admin_key", "key tsk_abcdefghijkl".into()),
        ("widget_secret", "wsk_0123456789ab".into()),
        ("aws_key_id", "AKIAIOSFODNN7EXAMPLE".into()),
        ("private_key", "-----BEGIN RSA PRIVATE KEY-----".into()),
        (
            "url_credentials",
            "https://user:pass@trackshare.example.com/".into(),
        ),
        ("loopback_url", "see http://127.0.0.1:8080/admin".into()),
        ("private_url", "see http://10.1.2.3/x".into()),
        ("private_ip_in_text", "host 192.168.1.20 answered".into()),
        ("metadata_ip", "169.254.169.254".into()),
        ("shared_address_space", "100.64.0.1".into()),
        ("localhost_word", "open localhost to see".into()),
        ("internal_suffix", "see db.corp.internal for details".into()),
        ("local_suffix", "printer.local".into()),
        ("bare_hostname_url", "http://intranet/wiki".into()),
        ("ipv6_loopback_url", "http://[::1]/".into()),
        ("ipv6_unique_local_url", "http://[fd00::1]/".into()),
    ]
}

fn rule(v: &TextViolation) -> Value {
    serde_json::to_value(v).unwrap()["rule"].clone()
}

fn document() -> Value {
    let cases: Vec<Value> = texts()
        .into_iter()
        .map(|(name, text)| {
            let rules: Vec<Value> = match SafeText::check(text.clone()) {
                Ok(_) => Vec::new(),
                Err(v) => v.iter().map(rule).collect(),
            };
            let expect = if rules.is_empty() { "accept" } else { "reject" };
            json!({"name": name, "text": text, "expect": expect, "rules": rules})
        })
        .collect();
    json!({
        "about": "Countersign summary test vectors: the platform's verdict on each `text` as a prepare answer's `summary` or a status `message`. `accept` texts are shown as they are; a `reject` text makes the platform refuse the whole answer (`rules` lists why). Check your summaries before you answer: docs/recipes/summary_check.py and summary-check.ts agree with every vector.",
        "maxChars": 4000,
        "cases": cases,
    })
}

/// `UPDATE_VECTORS=1 cargo test -p countersign-domain --test summary_vectors` rewrites it.
#[test]
fn the_published_summary_vectors_are_these() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/summary-test-vectors.json"
    );
    let generated = serde_json::to_string_pretty(&document()).unwrap() + "\n";
    if std::env::var_os("UPDATE_VECTORS").is_some() {
        std::fs::write(path, &generated).unwrap();
    }
    let checked_in = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        checked_in == generated,
        "docs/summary-test-vectors.json is stale: run UPDATE_VECTORS=1 cargo test -p countersign-domain --test summary_vectors"
    );
}
