//! Property tests of the domain's safety rules (issue 2, item 3) and of the parsers that
//! read other parties' bytes (issue 13). Each counted property prints how many cases ran
//! (`--nocapture`) and asserts that number.
#![allow(clippy::panic, clippy::print_stderr)]

use countersign_domain::confirmation::{Reply, classify};
use countersign_domain::ids::OperationName;
use countersign_domain::prepare::parse_prepare_answer;
use countersign_domain::proposal::{ProposalEvent, ProposalState, RemoteStatus, transition};
use countersign_domain::text::{SafeText, TextViolation, violations};
use countersign_domain::time::Timestamp;
use countersign_domain::tool_result::{ContentBlock, ToolResult};
use proptest::prelude::*;

/// Deterministic across runs (no persisted regressions files in CI); failures print
/// the minimal input.
fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

const WORDS: [&str; 4] = ["confirm", "confirmar", "cancel", "cancelar"];

/// Strings near the four words: random case, white space around, a character added,
/// removed or replaced, quotes, look-alikes.
fn near_words() -> impl Strategy<Value = String> {
    let word = prop::sample::select(WORDS.to_vec());
    let case_mask = prop::collection::vec(any::<bool>(), 9);
    let pad = prop::sample::select(vec![
        "", " ", "\t", "\n", "  \r\n", "\u{a0}", "\u{3000}", "\u{200B}",
    ]);
    let edit = prop_oneof![
        Just(None),
        (0usize..10, any::<char>()).prop_map(|(i, c)| Some((i, Some(c)))),
        (0usize..10).prop_map(|i| Some((i, None))),
    ];
    let wrap = prop::sample::select(vec!["", "\"", "'", "«", "`", ".", "!", "I ", "ok "]);
    (word, case_mask, pad.clone(), pad, edit, wrap).prop_map(|(w, mask, l, r, edit, wrap)| {
        let mut chars: Vec<char> = w
            .chars()
            .zip(mask)
            .map(|(c, up)| if up { c.to_ascii_uppercase() } else { c })
            .collect();
        if let Some((i, c)) = edit {
            let i = i.min(chars.len());
            match c {
                Some(c) => chars.insert(i, c),
                None if i < chars.len() => {
                    chars.remove(i);
                }
                None => {}
            }
        }
        let core: String = chars.into_iter().collect();
        format!("{l}{wrap}{core}{r}")
    })
}

fn oracle(s: &str) -> Reply {
    // Independent restatement of A-24: Unicode white-space trim, ASCII lower-case,
    // exact equality.
    let t: String = s.trim().chars().map(|c| c.to_ascii_lowercase()).collect();
    match t.as_str() {
        "confirm" | "confirmar" => Reply::Confirm,
        "cancel" | "cancelar" => Reply::Cancel,
        _ => Reply::Other,
    }
}

proptest! {
    #![proptest_config(config(4096))]

    /// A-24: nothing but the four words (trimmed, any ASCII case) ever classifies as
    /// Confirm or Cancel.
    #[test]
    fn a24_only_the_four_words_confirm_or_cancel(s in prop_oneof![near_words(), any::<String>()]) {
        prop_assert_eq!(classify(&s), oracle(&s));
        if classify(&s) != Reply::Other {
            let lower = s.trim().to_ascii_lowercase();
            prop_assert!(WORDS.contains(&lower.as_str()), "{:?}", s);
        }
    }
}

/// Characters the checker must never let through (A-20), restated independently of the
/// implementation for the cheap classes.
fn forbidden_char(c: char) -> bool {
    let cp = u32::from(c);
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(cp, 0x061C | 0x200B..=0x200F | 0x202A..=0x202E | 0x2060..=0x2069 | 0xFEFF | 0x00AD | 0xE0000..=0xE007F | 0x2028 | 0x2029)
}

fn text_strategy() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        4 => "[a-zA-Z0-9 .,;:!?#()\"'\\n\\t-]{0,20}",
        1 => any::<String>(),
        1 => prop::sample::select(vec![
            "\u{202E}", "\u{200B}", "\r", "\u{0}", "\u{2066}", "\u{FEFF}", "\u{85}",
            "tsk_AbCdEf123456", "Bearer abc.DEF-123456", "AKIAIOSFODNN7EXAMPLE",
            "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiIxIn0.sig", "-----BEGIN PRIVATE KEY-----",
            "http://127.0.0.1/", "https://10.2.3.4/x", "http://metadata.internal/",
            "https://intranet/", "192.168.0.1", "http://[::1]:80/", "https://u:p@example.com/",
            "https://example.com/ok", "é", "🚗", "\u{301}",
        ]).prop_map(str::to_owned),
    ];
    prop::collection::vec(piece, 0..8).prop_map(|v| v.concat())
}

const PLANTED: [&str; 12] = [
    "\u{202E}",
    "\u{2069}",
    "\u{200B}",
    "\r",
    "\u{0}",
    "\u{FEFF}",
    "tsk_AbCdEf123456",
    "AKIAIOSFODNN7EXAMPLE",
    "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiIxIn0.sig",
    "-----BEGIN PRIVATE KEY-----",
    " http://127.0.0.1/ ",
    " https://db.internal/ ",
];

proptest! {
    #![proptest_config(config(2048))]

    /// A-20: the checker never panics, never edits, and what it accepts contains none of
    /// the forbidden classes.
    #[test]
    fn a20_checker_never_panics_and_accepts_only_clean_text(s in text_strategy()) {
        let v = violations(&s);
        match SafeText::check(s.clone()) {
            Ok(safe) => {
                prop_assert!(v.is_empty());
                prop_assert_eq!(safe.as_str(), s.as_str());
                prop_assert!(!s.chars().any(forbidden_char), "{:?}", s);
                prop_assert!((1..=4000).contains(&s.chars().count()));
                for needle in ["tsk_AbCdEf", "AKIAIOSFODNN7", "eyJhbGciOiJSUzI1NiJ9.", "PRIVATE KEY-----", "127.0.0.1", "10.2.3.4", ".internal", "//intranet", "192.168.", "[::1]", "u:p@", "Bearer abc"] {
                    prop_assert!(!s.contains(needle), "{:?} accepted with {}", s, needle);
                }
            }
            Err(found) => prop_assert_eq!(found, v),
        }
    }

    /// A-20: planting any forbidden element anywhere in otherwise clean text is rejected.
    #[test]
    fn a20_planted_violation_is_always_found(
        prefix in "[a-zA-Z0-9 .,]{0,40}",
        suffix in "[a-zA-Z0-9 .,]{0,40}",
        planted in prop::sample::select(PLANTED.to_vec()),
    ) {
        let s = format!("{prefix}{planted}{suffix}");
        let v = violations(&s);
        prop_assert!(!v.is_empty(), "{:?}", s);
        let only_length = v.iter().all(|x| matches!(x, TextViolation::Empty | TextViolation::TooLong { .. }));
        prop_assert!(!only_length, "{:?}", v);
    }
}

fn event() -> impl Strategy<Value = ProposalEvent> {
    let remote = prop::sample::select(RemoteStatus::ALL.to_vec());
    prop_oneof![
        Just(ProposalEvent::Confirm),
        Just(ProposalEvent::Cancel),
        Just(ProposalEvent::Invalidate),
        Just(ProposalEvent::Supersede),
        Just(ProposalEvent::Expire),
        Just(ProposalEvent::ExecutionUncertain),
        Just(ProposalEvent::StatusUnavailable),
        remote.clone().prop_map(ProposalEvent::ExecutionAnswered),
        remote.prop_map(ProposalEvent::StatusAnswered),
    ]
}

proptest! {
    #![proptest_config(config(4096))]

    /// A-16, A-43, A-45: no sequence of events leads a superseded, cancelled or expired
    /// proposal to `executing`, and a proposal enters `executing` at most once (so
    /// `execute_action` is never sent twice).
    #[test]
    fn a16_no_event_sequence_executes_a_dead_proposal(
        start in prop::sample::select(ProposalState::ALL.to_vec()),
        events in prop::collection::vec(event(), 0..40),
    ) {
        let mut state = start;
        let mut dead = matches!(start, ProposalState::Superseded | ProposalState::Cancelled | ProposalState::Expired);
        let mut entered_executing = 0;
        for e in events {
            if let Ok(next) = transition(state, e) {
                if next == ProposalState::Executing {
                    prop_assert!(!dead, "{:?} reached executing", start);
                    entered_executing += 1;
                }
                if state.is_terminal() {
                    prop_assert_eq!(next, state);
                }
                state = next;
                dead |= matches!(state, ProposalState::Superseded | ProposalState::Cancelled | ProposalState::Expired);
            }
        }
        prop_assert!(entered_executing <= 1);
    }
}

fn json_value() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        ".{0,30}".prop_map(serde_json::Value::from),
        prop::sample::select(vec![
            "pending_confirmation",
            "reassign_session_car",
            "2026-11-29T21:16:00Z",
            "act_1"
        ])
        .prop_map(serde_json::Value::from),
    ];
    leaf.prop_recursive(3, 32, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(serde_json::Value::from),
            prop::collection::btree_map(
                prop::sample::select(vec![
                    "contractVersion",
                    "actionId",
                    "status",
                    "operation",
                    "summary",
                    "argumentsHash",
                    "summaryHash",
                    "expiresAt",
                    "x"
                ])
                .prop_map(str::to_owned),
                inner,
                0..9
            )
            .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(config(512))]

    /// A-13: any provider answer, however malformed, yields a typed result, never a panic.
    #[test]
    fn a13_prepare_parser_never_panics(v in json_value(), as_text in any::<bool>()) {
        let now = Timestamp::from_unix_seconds(1_795_986_900).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let op = OperationName::parse("reassign_session_car").map_err(|e| TestCaseError::fail(e.to_string()))?;
        let r = if as_text {
            ToolResult { structured_content: None, content: vec![ContentBlock::Text(v.to_string())], is_error: false }
        } else {
            ToolResult { structured_content: Some(v), content: vec![], is_error: false }
        };
        match parse_prepare_answer(&r, &op, now) {
            Ok(p) => prop_assert!(p.expires_at > now),
            Err(violations) => prop_assert!(!violations.is_empty()),
        }
    }
}

/// Runs `check` on `cases` values of `strategy` (deterministic, no persistence) and
/// returns how many ran; the test asserts that number, so a property that silently ran
/// nothing fails.
fn run_cases<S: Strategy>(
    name: &str,
    cases: u32,
    strategy: S,
    check: impl Fn(S::Value) -> Result<(), TestCaseError>,
) -> u32 {
    let ran = std::sync::atomic::AtomicU32::new(0);
    let mut runner = proptest::test_runner::TestRunner::new_with_rng(
        config(cases),
        proptest::test_runner::TestRng::deterministic_rng(
            proptest::test_runner::RngAlgorithm::ChaCha,
        ),
    );
    let result = runner.run(&strategy, |v| {
        ran.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        check(v)
    });
    if let Err(e) = result {
        panic!("{name}: {e}");
    }
    let n = ran.into_inner();
    eprintln!("{name}: {n} cases");
    n
}

/// Issue 13 / A-40: any `execute_action` / `get_action_status` answer, as MCP JSON or as
/// a payload, is read into a typed answer or typed violations, never a panic; violations
/// name rules, never an empty list.
#[test]
fn a40_action_answer_parser_never_panics() {
    use countersign_domain::ids::ActionId;
    use countersign_domain::outcome::parse_action_answer;
    let expected = ActionId::parse("act_1").unwrap_or_else(|_| unreachable!());
    let n = run_cases(
        "a40_action_answer_parser",
        2048,
        (json_value(), any::<bool>()),
        |(v, wrap)| {
            let raw = if wrap {
                serde_json::json!({"content": [{"type": "text", "text": v.to_string()}], "structuredContent": v})
            } else {
                v
            };
            if let Ok(result) = ToolResult::from_mcp_json(&raw)
                && let Err(violations) = parse_action_answer(&result, &expected)
            {
                prop_assert!(!violations.is_empty());
                for v in &violations {
                    prop_assert!(!v.rule().is_empty());
                }
            }
            Ok(())
        },
    );
    assert_eq!(n, 2048);
}

/// Issue 13 / C-11: any admin body is either a configuration or a list of field errors,
/// each naming a field of the body (or the body itself) and a rule — never a panic.
#[test]
fn c11_admin_body_validation_never_panics_and_blames_fields() {
    use countersign_domain::config::{UrlPolicy, validate_mcp_config};
    let fields = [
        "",
        "serverUrl",
        "serviceToken",
        "allowedTools",
        "actionPolicy",
        "audience",
    ];
    let body = prop_oneof![
        json_value(),
        (
            prop::sample::select(vec![
                "https://mcp.example.com/mcp",
                "http://127.0.0.1:9/mcp",
                "ftp://x",
                "https://10.0.0.1/",
                "",
            ]),
            ".{0,20}",
            prop::collection::vec("[a-z_.\\-]{0,12}", 0..4),
            any::<bool>(),
            prop::collection::vec("[a-z_]{0,10}", 0..3),
            prop::option::of(".{0,40}"),
        )
            .prop_map(|(url, token, tools, enabled, ops, audience)| {
                serde_json::json!({"serverUrl": url, "serviceToken": token, "allowedTools": tools,
                    "actionPolicy": {"contractVersion": 1, "enabled": enabled, "operations": ops},
                    "audience": audience})
            }),
    ];
    let n = run_cases("c11_admin_body_validation", 2048, body, |b| {
        for policy in [
            UrlPolicy::default(),
            UrlPolicy {
                allow_loopback_http: true,
            },
        ] {
            if let Err(errors) = validate_mcp_config(&b, policy) {
                prop_assert!(!errors.is_empty());
                for e in errors {
                    let top = e.field.split(['.', '[']).next().unwrap_or("");
                    prop_assert!(fields.contains(&top) || b.get(top).is_some(), "{}", e.field);
                    prop_assert!(!e.to_string().is_empty());
                }
            }
        }
        Ok(())
    });
    assert_eq!(n, 2048);
}
