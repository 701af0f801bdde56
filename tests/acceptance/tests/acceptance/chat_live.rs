//! The person's chat as an open widget sees it (issue 28): the case it polls
//! (`GET /api/cases/{id}`, S-2, S-3), the proposals' states with the history (S-3), and
//! the language, the tenant's or the person's (S-4), end to end with the messages and
//! admin functions as their own processes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use countersign_acceptance::Stack;
use serde_json::{Value, json};

async fn get(s: &Stack, token: Option<&str>, path: &str) -> (u16, Value) {
    let mut req = s.http.get(format!("{}{path}", s.messages_url));
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let res = req.send().await.unwrap();
    (
        res.status().as_u16(),
        res.json().await.unwrap_or(Value::Null),
    )
}

async fn open_case(s: &Stack, token: &str, body: Option<Value>) -> (u16, Value) {
    let mut req = s
        .http
        .post(format!("{}/api/cases", s.messages_url))
        .bearer_auth(token);
    if let Some(b) = body {
        req = req.json(&b);
    }
    let res = req.send().await.unwrap();
    (
        res.status().as_u16(),
        res.json().await.unwrap_or(Value::Null),
    )
}

/// S-2, S-3: the case names its newest message; another person, another tenant or no
/// token learn nothing; a closed case says so.
#[tokio::test]
async fn s2_s3_the_case_an_open_widget_polls() {
    let s = Stack::start().await;
    let alice = s.token("u_alice");
    let case = s.create_case(&alice).await;
    let (status, view) = get(&s, Some(&alice), &format!("/api/cases/{case}")).await;
    assert_eq!(status, 200, "{view}");
    assert_eq!(view["status"], "open");
    assert_eq!(view["language"], "en");
    assert!(view.get("lastMessageId").is_none(), "{view}");
    let said = s.say(&alice, &case, "show my cars", None).await;
    let (_, view) = get(&s, Some(&alice), &format!("/api/cases/{case}")).await;
    assert_eq!(view["lastMessageId"], said.last().unwrap()["id"]);
    let bruno = s.token("u_bruno");
    for (token, want) in [(Some(bruno.as_str()), 404), (None, 401)] {
        let (status, body) = get(&s, token, &format!("/api/cases/{case}")).await;
        assert_eq!(status, want, "{body}");
        assert!(body.to_string().find("cars").is_none());
    }
    let (status, _) = get(&s, Some(&alice), "/api/cases/case_nonsense").await;
    assert_eq!(status, 404);
    let other = s.second_tenant().await;
    let theirs = s.other_token(&other, "u_alice");
    let (status, _) = get(&s, Some(&theirs), &format!("/api/cases/{case}")).await;
    assert_eq!(status, 404, "another tenant's person");
    let closed = s
        .http
        .post(format!("{}/api/cases/{case}/close", s.messages_url))
        .bearer_auth(&alice)
        .send()
        .await
        .unwrap();
    assert_eq!(closed.status(), 200);
    let (_, view) = get(&s, Some(&alice), &format!("/api/cases/{case}")).await;
    assert_eq!(view["status"], "closed");
    let (status, body) = s.post(&alice, &case, "hello", None).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (409, Some("CASE_CLOSED"))
    );
    s.finish();
}

/// S-3: each proposal's state comes with the history, by its presentation; the answer to a
/// posted message leaves the states out (the confirm path stays one query).
#[tokio::test]
async fn s3_the_history_carries_each_proposals_state() {
    let s = Stack::start().await;
    let t = s.token("u_alice");
    let case = s.create_case(&t).await;
    let first = s.propose(&t, &case, "ses_a1", "car_a2").await;
    let second = s.propose(&t, &case, "ses_a1", "car_a3").await;
    let (status, answer) = s.post(&t, &case, "confirm", second["id"].as_str()).await;
    assert_eq!(status, 200);
    assert!(answer.get("proposals").is_none(), "{answer}");
    let (status, page) = get(&s, Some(&t), &format!("/api/cases/{case}/messages")).await;
    assert_eq!(status, 200);
    let states: Vec<(Value, Value)> = page["proposals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["messageId"].clone(), p["state"].clone()))
        .collect();
    assert_eq!(
        states,
        vec![
            // The second request was other text: it discarded the first.
            (first["id"].clone(), json!("cancelled")),
            (second["id"].clone(), json!("completed")),
        ]
    );
    assert!(
        page["proposals"][0]["expiresAt"]
            .as_str()
            .unwrap()
            .ends_with('Z')
    );
    // Put the car back.
    let back = s.propose(&t, &case, "ses_a1", "car_a1").await;
    s.say(&t, &case, "confirm", back["id"].as_str()).await;
    s.finish();
}

/// S-4: the tenant's language is self-service (audited); new cases take it, open ones keep
/// theirs, and the person's page may choose another. Bad input is a typed 400 that changes
/// nothing.
#[tokio::test]
async fn s4_the_tenants_language_and_the_persons() {
    let s = Stack::start().await;
    let t = s.token("u_alice");
    let before = s.create_case(&t).await;
    let (status, view) = s.admin("GET", "settings", None).await;
    assert_eq!(
        (status, view["language"].as_str()),
        (200, Some("en")),
        "{view}"
    );
    for bad in [
        json!({"language": "fr"}),
        json!({"language": 7}),
        json!({"language": "pt-BR", "extra": 1}),
        json!({}),
    ] {
        let (status, body) = s.admin("PUT", "settings", Some(bad.clone())).await;
        assert_eq!(status, 400, "{bad} → {body}");
        assert!(body["error"]["code"].is_string(), "{body}");
    }
    let (status, body) = s
        .admin_with(
            "tsk_wrong",
            "PUT",
            "settings",
            Some(json!({"language": "pt-BR"})),
        )
        .await;
    assert_eq!(status, 401, "{body}");
    let (_, view) = s.admin("GET", "settings", None).await;
    assert_eq!(view["language"], "en", "nothing changed");
    let (status, view) = s
        .admin("PUT", "settings", Some(json!({"language": "pt-BR"})))
        .await;
    assert_eq!((status, view["language"].as_str()), (200, Some("pt-BR")));
    let (_, audit) = s.admin("GET", "audit", None).await;
    let record = audit["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["action"] == "tenant.language")
        .expect("audited");
    assert_eq!(
        record["changes"]["language"],
        json!({"from": "en", "to": "pt-BR"})
    );
    // A new case speaks Portuguese; the open one keeps English.
    let (status, created) = open_case(&s, &t, None).await;
    assert_eq!((status, created["language"].as_str()), (201, Some("pt-BR")));
    let case = created["caseId"].as_str().unwrap();
    let proposal = s.propose(&t, case, "ses_a1", "car_a2").await;
    assert!(
        proposal["instructions"]
            .as_str()
            .unwrap()
            .contains("confirmar"),
        "{proposal}"
    );
    let m = s.say(&t, case, "cancelar", proposal["id"].as_str()).await;
    assert!(
        m.last().unwrap()["content"]
            .as_str()
            .unwrap()
            .contains("cancelada")
    );
    let old = s.propose(&t, &before, "ses_a1", "car_a2").await;
    assert!(
        old["instructions"]
            .as_str()
            .unwrap()
            .contains("reply: confirm")
    );
    s.say(&t, &before, "cancel", old["id"].as_str()).await;
    // The person's page chooses English over the tenant's Portuguese.
    let (status, created) = open_case(&s, &t, Some(json!({"language": "en"}))).await;
    assert_eq!((status, created["language"].as_str()), (201, Some("en")));
    for bad in [json!({"language": "xx"}), json!({"lang": "en"}), json!([1])] {
        let (status, body) = open_case(&s, &t, Some(bad.clone())).await;
        assert_eq!(status, 400, "{bad} → {body}");
    }
    s.admin("PUT", "settings", Some(json!({"language": "en"})))
        .await;
    s.finish();
}

/// S-1: the streamed post: the person's message, the model's text in pieces that add up to
/// the stored answer, that answer as stored, then the end; a refusal before anything is
/// stored answers as the buffered route does; no token is a 401.
#[tokio::test]
async fn s1_the_streamed_post_sends_pieces_then_the_stored_messages() {
    let s = Stack::start().await;
    let t = s.token("u_alice");
    let case = s.create_case(&t).await;
    let url = format!("{}/api/cases/{case}/messages/stream", s.messages_url);
    let res = s
        .http
        .post(&url)
        .bearer_auth(&t)
        .json(&json!({"content": "say one two three"}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert!(
        res.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/x-ndjson")
    );
    let body = res.text().await.unwrap();
    let events: Vec<Value> = body
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(kinds.first(), Some(&"message"), "{body}");
    assert_eq!(events[0]["message"]["role"], "user");
    assert_eq!(kinds.last(), Some(&"end"), "{body}");
    let pieces: String = events
        .iter()
        .filter(|e| e["type"] == "delta")
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    assert_eq!(pieces, "one two three");
    assert!(
        kinds.iter().filter(|k| **k == "delta").count() >= 3,
        "{body}"
    );
    let answer = events
        .iter()
        .rev()
        .find(|e| e["type"] == "message")
        .unwrap();
    assert_eq!(answer["message"]["content"], "one two three");
    // What was streamed is what is stored.
    let stored = s.history(&t, &case).await;
    assert_eq!(stored.last().unwrap()["id"], answer["message"]["id"]);
    assert_eq!(stored.len(), 2);
    // A proposal comes as its stored message, with its instructions.
    let res = s
        .http
        .post(&url)
        .bearer_auth(&t)
        .json(&json!({"content": "move ses_a1 to car_a2"}))
        .send()
        .await
        .unwrap();
    let body = res.text().await.unwrap();
    let proposal = body
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["message"]["kind"] == "proposal")
        .expect("the proposal, as stored");
    assert!(
        proposal["message"]["instructions"]
            .as_str()
            .unwrap()
            .contains("confirm")
    );
    assert!(
        !body.contains("\"type\":\"delta\",\"text\":\"Move"),
        "{body}"
    );
    s.say(&t, &case, "cancel", proposal["message"]["id"].as_str())
        .await;
    // Refusals are the buffered route's.
    let closed = s
        .http
        .post(format!("{}/api/cases/{case}/close", s.messages_url))
        .bearer_auth(&t)
        .send()
        .await
        .unwrap();
    assert_eq!(closed.status(), 200);
    let res = s
        .http
        .post(&url)
        .bearer_auth(&t)
        .json(&json!({"content": "hello"}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 409);
    assert_eq!(
        res.json::<Value>().await.unwrap()["error"]["code"],
        "CASE_CLOSED"
    );
    let res = s
        .http
        .post(&url)
        .json(&json!({"content": "hello"}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 401);
    s.finish();
}

/// S-4: an error's code never changes; its message is Portuguese when the caller prefers
/// Portuguese to English, English otherwise.
#[tokio::test]
async fn s4_error_messages_follow_accept_language() {
    let s = Stack::start().await;
    let ask = |lang: Option<&'static str>| {
        let mut req = s.http.post(format!("{}/api/cases", s.messages_url));
        if let Some(l) = lang {
            req = req.header("accept-language", l);
        }
        async move {
            let res = req.send().await.unwrap();
            let status = res.status().as_u16();
            let language = res
                .headers()
                .get("content-language")
                .map(|v| v.to_str().unwrap().to_owned());
            (status, language, res.json::<Value>().await.unwrap())
        }
    };
    let (status, language, body) = ask(Some("pt-BR,pt;q=0.9,en;q=0.8")).await;
    assert_eq!(status, 401);
    assert_eq!(body["error"]["code"], "UNAUTHORIZED");
    assert_eq!(
        body["error"]["message"],
        "É necessária uma credencial válida."
    );
    assert_eq!(language.as_deref(), Some("pt-BR"));
    for lang in [None, Some("en-US,pt;q=0.5"), Some("fr")] {
        let (status, _, body) = ask(lang).await;
        assert_eq!(status, 401);
        assert_eq!(body["error"]["code"], "UNAUTHORIZED");
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("widget token"),
            "{lang:?}: {body}"
        );
    }
    let res = s
        .http
        .get(format!(
            "{}/api/admin/tenants/{}/settings",
            s.admin_url, s.tenant
        ))
        .bearer_auth("tsk_wrong")
        .header("accept-language", "pt")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 401);
    let body = res.json::<Value>().await.unwrap();
    assert_eq!(body["error"]["code"], "UNAUTHORIZED");
    assert_eq!(
        body["error"]["message"],
        "É necessária uma credencial válida."
    );
    s.finish();
}
