use super::*;

/// Every `t("…")` in the panel's sources, and every label of the audit filter, has its
/// Portuguese: a new English text cannot ship untranslated.
#[test]
fn s4_every_panel_text_has_its_portuguese() {
    // Every source file of the panel (but this table's own), read as it is on disk, so a
    // handler file added later is scanned too.
    let sources = panel_sources();

    let mut seen = 0;
    let mut missing = Vec::new();
    for source in &sources {
        let mut rest: &str = source;
        while let Some(i) = rest.find("t(\"") {
            let before = rest[..i].chars().last();
            let call = &rest[i + 3..];
            rest = call;
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.') {
                continue;
            }
            let Some(end) = call.find("\")") else {
                continue;
            };
            let text = &call[..end];
            seen += 1;
            if portuguese(text).is_none() {
                missing.push(text.to_owned());
            }
        }
    }
    for (_, label) in super::super::audit_view::EVENTS {
        if portuguese(label).is_none() {
            missing.push(label.to_owned());
        }
    }
    for word in ["passed", "failed", "skipped"] {
        assert!(portuguese(word).is_some(), "{word}");
    }
    assert!(seen > 100, "{seen} texts found");
    assert!(missing.is_empty(), "no Portuguese for {missing:?}");
}

#[tokio::test]
async fn s4_the_language_is_the_remembered_choice_then_accept_language() {
    let mut h = HeaderMap::new();
    assert_eq!(of_request(&h), Language::En);
    h.insert(
        header::ACCEPT_LANGUAGE,
        HeaderValue::from_static("pt-BR,pt;q=0.9"),
    );
    assert_eq!(of_request(&h), Language::Pt);
    h.insert(
        header::COOKIE,
        HeaderValue::from_static("other=1; countersign-panel-lang=en"),
    );
    assert_eq!(of_request(&h), Language::En, "the choice wins");
    assert_eq!(t("Save"), "Save", "outside a request: English");
    let inside = LANG.scope(Language::Pt, async { t("Save") }).await;
    assert_eq!(inside, "Salvar");
}

#[test]
fn the_switch_goes_back_only_to_a_panel_page_of_this_host() {
    let with = |referer: &str| {
        let mut h = HeaderMap::new();
        h.insert(header::HOST, HeaderValue::from_static("panel.example.com"));
        h.insert(header::REFERER, HeaderValue::from_str(referer).unwrap());
        back_to(&h)
    };
    assert_eq!(
        with("https://panel.example.com/admin/audit?event=mcp."),
        Some("/admin/audit?event=mcp.".into())
    );
    assert_eq!(with("https://evil.example/admin/audit"), None);
    assert_eq!(with("https://panel.example.com/elsewhere"), None);
    assert_eq!(with("https://panel.example.com/admin/language?to=en"), None);
}

/// The panel's Rust sources, but the translation table's own.
fn panel_sources() -> Vec<String> {
    fn walk(dir: &std::path::Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                if !path.ends_with("i18n") {
                    walk(&path, out);
                }
            } else if path.extension().is_some_and(|e| e == "rs") && !path.ends_with("i18n.rs") {
                out.push(std::fs::read_to_string(&path).unwrap());
            }
        }
    }
    let mut out = Vec::new();
    walk(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/panel"),
        &mut out,
    );
    assert!(out.len() >= 14, "{} panel sources", out.len());
    out
}
