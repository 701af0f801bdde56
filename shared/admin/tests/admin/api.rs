//! The admin API against the local AWS emulator (C-2 … C-8, C-10, C-11), in memory over
//! HTTP (`Router::oneshot`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use countersign_admin::tenants;
use countersign_aws::system::{SystemClock, UlidIds};
use countersign_domain::config::service_token_secret_name;
use countersign_domain::conversation::{Case, CaseStatus, MessageKind, Role};
use countersign_domain::hash::Sha256Hex;
use countersign_domain::ids::{ActionId, OperationName, UserId};
use countersign_domain::ports::Conversations;
use countersign_domain::ports::McpSettings;
use countersign_domain::ports::ProposalLock;
use countersign_domain::ports::{Clock, Ids, NewMessage, SecretError, SecretStore};
use countersign_domain::proposal::{Presentation, Proposal, ProposalState};
use countersign_domain::secret::SecretString;
use countersign_domain::text::SafeText;
use countersign_domain::texts::Language;
use http::StatusCode;
use serde_json::{Value, json};
use std::sync::Arc;

use crate::common::*;

/// V-1: a save reads the provider's live tools/list and refuses, naming each tool and the
/// reason, an allowed tool that is declared destructive, is not declared read-only, or is
/// not listed; a provider that cannot be read refuses the save. Nothing is
/// saved by a refused save, and the configuration saved before is untouched.
#[tokio::test]
async fn v1_only_read_only_tools_can_be_saved_as_consultations() {
    let env = env(false).await;
    let ids = UlidIds::default();
    let a = tenants::register(&env.store, &ids, &SystemClock, "TrackShare", Language::En)
        .await
        .unwrap();
    let path = format!("/api/admin/tenants/{}/mcp", a.tenant.id);
    let key = a.admin_key.expose();
    let app = || app(&env, env.secrets.clone());
    let url = "https://mcp.trackshare.example.com/mcp";
    let (s, body) = send(app(), "PUT", &path, Some(key), Some(config(url, false))).await;
    assert_eq!(s, StatusCode::OK, "{body}");
    let (_, saved) = send(app(), "GET", &path, Some(key), None).await;

    let mut writes: Value = serde_json::from_str(&config(url, false)).unwrap();
    // (An operation's name is refused earlier, by C-4's syntax rules.)
    writes["allowedTools"] = json!([
        "get_user_uploads",
        "delete_upload",
        "get_user_notes",
        "ghost_tool"
    ]);
    let (s, body) = send(app(), "PUT", &path, Some(key), Some(writes.to_string())).await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["error"]["code"], "NOT_A_CONSULTATION");
    assert_eq!(body["error"]["field"], "allowedTools");
    let errors: Vec<(String, String)> = body["error"]["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["field"].as_str().unwrap().to_owned(),
                e["message"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let fields: Vec<&str> = errors.iter().map(|(f, _)| f.as_str()).collect();
    assert_eq!(
        fields,
        ["allowedTools[1]", "allowedTools[2]", "allowedTools[3]"],
        "{body}"
    );
    for ((_, message), (tool, why)) in errors.iter().zip([
        ("delete_upload", "destructive"),
        ("get_user_notes", "not declared read-only"),
        ("ghost_tool", "not listed"),
    ]) {
        assert!(message.contains(tool) && message.contains(why), "{message}");
    }

    // The provider cannot be read: nothing is saved, the reason is given.
    env.provider
        .faults
        .once("tools/list", countersign_testkit::Fault::Unavailable);
    let mut moved: Value = serde_json::from_str(&config(url, false)).unwrap();
    moved["allowedTools"] = json!(["get_user_cars"]);
    let (s, body) = send(app(), "PUT", &path, Some(key), Some(moved.to_string())).await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["error"]["code"], "PROVIDER_UNREACHABLE");
    assert_eq!(body["error"]["field"], "serverUrl");
    assert!(!body.to_string().contains("svc_secret_token_1"), "{body}");

    let (_, after) = send(app(), "GET", &path, Some(key), None).await;
    assert_eq!(after, saved, "a refused save changes nothing");
    let (_, audit) = send(
        app(),
        "GET",
        &format!("/api/admin/tenants/{}/audit", a.tenant.id),
        Some(key),
        None,
    )
    .await;
    let puts = audit["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["action"] == "mcp.put")
        .count();
    assert_eq!(puts, 1, "only the accepted save is audited: {audit}");
}

/// C-2, C-3, C-5, C-11: PUT stores the configuration and the token (as a secret, never
/// returned); GET shows it with actionVerification; wrong keys are 401, another tenant's
/// id 404; bad bodies are clear 400/413s that store nothing.
#[tokio::test]
async fn c2_c3_c5_c11_put_get_and_refusals() {
    let env = env(true).await;
    let ids = UlidIds::default();
    let a = tenants::register(&env.store, &ids, &SystemClock, "TrackShare", Language::En)
        .await
        .unwrap();
    let b = tenants::register(&env.store, &ids, &SystemClock, "Other", Language::En)
        .await
        .unwrap();
    let path = format!("/api/admin/tenants/{}/mcp", a.tenant.id);
    let key = a.admin_key.expose();
    let app = || app(&env, env.secrets.clone());

    let (s, body) = send(app(), "GET", &path, Some(key), None).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(body["configured"], false);

    // H-4: actions cannot be enabled before a certification run of these settings; the
    // refusal saves nothing.
    let (s, body) = send(
        app(),
        "PUT",
        &path,
        Some(key),
        Some(config("https://mcp.trackshare.example.com/mcp", true)),
    )
    .await;
    assert_eq!(s, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], "CERTIFICATION_REQUIRED");
    assert_eq!(body["error"]["field"], "actionPolicy.enabled");
    let (s, body) = send(
        app(),
        "PUT",
        &path,
        Some(key),
        Some(config("https://mcp.trackshare.example.com/mcp", false)),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    assert_eq!(body["version"], 1);
    assert!(
        !body.to_string().contains("svc_secret_token_1"),
        "the token is never returned"
    );
    assert_eq!(body["actionVerification"]["algorithm"], "RS256");
    assert!(
        body["actionVerification"]["publicKeyPem"]
            .as_str()
            .unwrap()
            .starts_with("-----BEGIN PUBLIC KEY-----")
    );
    let (token, _) = env
        .secrets
        .get_current(&service_token_secret_name(&a.tenant.id))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(token.expose(), "svc_secret_token_1");

    let (s, got) = send(app(), "GET", &path, Some(key), None).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(
        got["allowedTools"],
        json!(["get_user_uploads", "get_user_sessions"])
    );
    assert_eq!(got["actionPolicy"]["enabled"], false);
    assert!(!got.to_string().contains("svc_secret_token_1"));

    // C-2, C-11: missing or wrong key → 401; another tenant's key → 404, no data.
    for k in [None, Some("tsk_wrong"), Some("not-a-key")] {
        let (s, _) = send(app(), "GET", &path, k, None).await;
        assert_eq!(s, StatusCode::UNAUTHORIZED, "{k:?}");
    }
    let (s, body) = send(app(), "GET", &path, Some(b.admin_key.expose()), None).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    assert!(!body.to_string().contains("trackshare"));

    // C-11: malformed, invalid and oversized bodies: clear 4xx, nothing stored.
    let (s, body) = send(app(), "PUT", &path, Some(key), Some("{not json".into())).await;
    assert_eq!(
        (s, body["error"]["code"].as_str()),
        (StatusCode::BAD_REQUEST, Some("INVALID_JSON"))
    );
    let (s, body) = send(
        app(),
        "PUT",
        &path,
        Some(key),
        Some(config("http://mcp.example.com/", false)),
    )
    .await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert_eq!(body["error"]["code"], "VALIDATION_ERROR");
    assert_eq!(body["error"]["field"], "serverUrl");
    // D-5: a name resolving to a non-public address is refused on save.
    let (s, body) = send(
        app(),
        "PUT",
        &path,
        Some(key),
        Some(config("https://mcp.internal-rebind.example.com/mcp", false)),
    )
    .await;
    assert_eq!(
        (s, body["error"]["field"].as_str()),
        (StatusCode::BAD_REQUEST, Some("serverUrl")),
        "{body}"
    );
    let huge = json!({"serverUrl": "https://e.com", "serviceToken": "x".repeat(70_000), "allowedTools": ["a"]}).to_string();
    let (s, e) = send(app(), "PUT", &path, Some(key), Some(huge)).await;
    assert_eq!(s, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(e["error"]["code"], "PAYLOAD_TOO_LARGE");
    // Far beyond any limit: still the typed error, never a plain-text rejection.
    let (s, e) = send(app(), "PUT", &path, Some(key), Some("x".repeat(1 << 20))).await;
    assert_eq!(
        (s, e["error"]["code"].as_str()),
        (StatusCode::PAYLOAD_TOO_LARGE, Some("PAYLOAD_TOO_LARGE"))
    );
    let (_, got_after) = send(app(), "GET", &path, Some(key), None).await;
    assert_eq!(got_after, got, "nothing partial was stored");

    // A PUT without actionPolicy is accepted, actions off, as a new version. (This starts
    // with actions already off, so it cannot show C-7's "disables": that is held with
    // actions on by `config.rs::c7_missing_policy_disables_actions`.)
    let no_policy = json!({"serverUrl": "https://mcp.trackshare.example.com/mcp", "serviceToken": "svc_secret_token_1", "allowedTools": ["get_user_uploads"]}).to_string();
    let (s, body) = send(app(), "PUT", &path, Some(key), Some(no_policy)).await;
    assert_eq!(s, StatusCode::OK, "{body}");
    assert_eq!(body["actionPolicy"]["enabled"], false);
    assert_eq!(body["version"], 2);

    // C-10: DELETE removes the connector.
    let (s, _) = send(app(), "DELETE", &path, Some(key), None).await;
    assert_eq!(s, StatusCode::NO_CONTENT);
    let (_, body) = send(app(), "GET", &path, Some(key), None).await;
    assert_eq!(body["configured"], false);
}

/// C-5, C-6: without a signing key, actionVerification is null and enabling answers 503
/// ACTION_SIGNING_UNAVAILABLE; consultations stay configurable.
#[tokio::test]
async fn c6_enabling_without_a_signing_key_is_503() {
    let env = env(false).await;
    let t = tenants::register(
        &env.store,
        &UlidIds::default(),
        &SystemClock,
        "T",
        Language::En,
    )
    .await
    .unwrap();
    let path = format!("/api/admin/tenants/{}/mcp", t.tenant.id);
    let key = t.admin_key.expose();
    let (s, body) = send(
        app(&env, env.secrets.clone()),
        "PUT",
        &path,
        Some(key),
        Some(config("https://mcp.example.com/mcp", true)),
    )
    .await;
    assert_eq!(s, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(body["error"]["code"], "ACTION_SIGNING_UNAVAILABLE");
    let (s, body) = send(
        app(&env, env.secrets.clone()),
        "PUT",
        &path,
        Some(key),
        Some(config("https://mcp.example.com/mcp", false)),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    assert_eq!(body["actionVerification"], Value::Null);
}

/// A secret store that fails every write.
struct BrokenSecrets;

#[async_trait::async_trait]
impl SecretStore for BrokenSecrets {
    async fn put(&self, _: &str, _: &SecretString) -> Result<String, SecretError> {
        Err(SecretError::Unavailable("down".into()))
    }
    async fn get_current(&self, _: &str) -> Result<Option<(SecretString, String)>, SecretError> {
        Ok(None)
    }
    async fn get_version(&self, _: &str, _: &str) -> Result<Option<SecretString>, SecretError> {
        Ok(None)
    }
    async fn delete(&self, _: &str) -> Result<(), SecretError> {
        Ok(())
    }
}

/// C-11: a PUT whose secret write fails saves nothing: the configuration stays as it was.
#[tokio::test]
async fn c11_failed_secret_write_leaves_the_configuration_unchanged() {
    let env = env(true).await;
    let t = tenants::register(
        &env.store,
        &UlidIds::default(),
        &SystemClock,
        "T",
        Language::En,
    )
    .await
    .unwrap();
    let path = format!("/api/admin/tenants/{}/mcp", t.tenant.id);
    let key = t.admin_key.expose();
    let (s, before) = send(
        app(&env, env.secrets.clone()),
        "PUT",
        &path,
        Some(key),
        Some(config("https://a.example.com/mcp", false)),
    )
    .await;
    assert_eq!(s, StatusCode::OK);
    let (s, body) = send(
        app(&env, Arc::new(BrokenSecrets)),
        "PUT",
        &path,
        Some(key),
        Some(config("https://b.example.com/mcp", false)),
    )
    .await;
    assert_eq!(s, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert!(
        !body.to_string().contains("down"),
        "no internal cause in the answer"
    );
    let (_, after) = send(
        app(&env, env.secrets.clone()),
        "GET",
        &path,
        Some(key),
        None,
    )
    .await;
    assert_eq!(after, before);
}

/// C-8: changing the URL cancels proposals prepared with the older configuration.
#[tokio::test]
async fn c8_configuration_change_invalidates_pending_proposals() {
    let env = env(true).await;
    let ids = UlidIds::default();
    let t = tenants::register(&env.store, &ids, &SystemClock, "T", Language::En)
        .await
        .unwrap();
    let path = format!("/api/admin/tenants/{}/mcp", t.tenant.id);
    let key = t.admin_key.expose();
    send(
        app(&env, env.secrets.clone()),
        "PUT",
        &path,
        Some(key),
        Some(config("https://a.example.com/mcp", false)),
    )
    .await;

    let case = Case {
        id: ids.case_id(),
        tenant: t.tenant.id.clone(),
        user: UserId::parse("driver-42").unwrap(),
        status: CaseStatus::Open,
        created_at: SystemClock.now(),
    };
    env.store.create_case(&case, Language::En).await.unwrap();
    let summary = "Move session 4812 to car GR86.";
    let presented = ids.message_id();
    let settings = env
        .store
        .get_mcp_config(&t.tenant.id)
        .await
        .unwrap()
        .unwrap();
    let p = Proposal {
        action_id: ActionId::parse("act_c8").unwrap(),
        tenant: case.tenant.clone(),
        user: case.user.clone(),
        case: case.id.clone(),
        operation: OperationName::parse("reassign_session_car").unwrap(),
        summary: SafeText::check(summary).unwrap(),
        summary_hash: Sha256Hex::digest(summary),
        arguments_hash: Sha256Hex::digest("{}"),
        expires_at: SystemClock.now().plus_seconds(300),
        prepared_at: SystemClock.now(),
        state: ProposalState::PendingConfirmation,
        presented: Presentation {
            replaced: None,
            first_served_at: None,
            message_id: presented.clone(),
        },
        confirmation_message_id: None,
        confirm_attempt: None,
        config_version: settings.actions_version,
        secret_version: Some(settings.secret_version.clone()),
        server_url: Some(settings.config.server_url.as_str().to_owned()),
        audience: None,
        needs_passkey: false,
        prepared_outside: false,
    };
    let m = NewMessage {
        id: presented,
        case: case.id.clone(),
        role: Role::Assistant,
        kind: MessageKind::Proposal,
        content: summary.into(),
        reply_to: None,
        created_at: SystemClock.now(),
    };
    env.store.create_proposal(&p, &[m]).await.unwrap();

    // Only consultations changed: the proposal survives.
    let same_integration = json!({
        "serverUrl": "https://a.example.com/mcp", "serviceToken": "svc_secret_token_1",
        "allowedTools": ["get_user_uploads"],
        "actionPolicy": {"contractVersion": 1, "enabled": false, "operations": ["reassign_session_car"]}
    })
    .to_string();
    send(
        app(&env, env.secrets.clone()),
        "PUT",
        &path,
        Some(key),
        Some(same_integration),
    )
    .await;
    let state = || async {
        env.store
            .proposal(&case.tenant, &case.id, &p.action_id)
            .await
            .unwrap()
            .unwrap()
            .state
    };
    assert_eq!(state().await, ProposalState::PendingConfirmation);

    // The URL changed: it is cancelled.
    let (s, _) = send(
        app(&env, env.secrets.clone()),
        "PUT",
        &path,
        Some(key),
        Some(config("https://b.example.com/mcp", false)),
    )
    .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(state().await, ProposalState::Cancelled);
}

/// C-9, D-2: a widget credential's secret is shown once at creation; listing shows ids and
/// dates only; revoking removes it (and its secret); another tenant cannot touch it.
#[tokio::test]
async fn c9_widget_credentials_are_shown_once_listed_without_secrets_and_revoked() {
    let env = env(true).await;
    let ids = UlidIds::default();
    let a = tenants::register(&env.store, &ids, &SystemClock, "A", Language::En)
        .await
        .unwrap();
    let b = tenants::register(&env.store, &ids, &SystemClock, "B", Language::En)
        .await
        .unwrap();
    let base = format!("/api/admin/tenants/{}/widget-credentials", a.tenant.id);
    let key = a.admin_key.expose();
    let app = || app(&env, env.secrets.clone());

    let (s, created) = send(app(), "POST", &base, Some(key), None).await;
    assert_eq!(s, StatusCode::CREATED, "{created}");
    let key_id = created["keyId"].as_str().unwrap().to_owned();
    let secret = created["secret"].as_str().unwrap().to_owned();
    assert!(key_id.starts_with("wk_") && secret.starts_with("wsk_") && secret.len() == 47);
    let wk = countersign_domain::ids::WidgetKeyId::parse(key_id.clone()).unwrap();
    let stored = env
        .secrets
        .get_current(&countersign_domain::config::widget_secret_name(
            &a.tenant.id,
            &wk,
        ))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.0.expose(), secret);

    let (s, list) = send(app(), "GET", &base, Some(key), None).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(list["items"].as_array().unwrap().len(), 1);
    assert_eq!(list["items"][0]["keyId"], key_id);
    assert!(
        !list.to_string().contains(&secret),
        "the secret is shown only once"
    );

    let (s, _) = send(
        app(),
        "DELETE",
        &format!("{base}/{key_id}"),
        Some(b.admin_key.expose()),
        None,
    )
    .await;
    assert_eq!(s, StatusCode::NOT_FOUND, "another tenant cannot revoke it");
    let (s, _) = send(
        app(),
        "DELETE",
        &format!("{base}/{key_id}"),
        Some(key),
        None,
    )
    .await;
    assert_eq!(s, StatusCode::NO_CONTENT);
    let (_, list) = send(app(), "GET", &base, Some(key), None).await;
    assert_eq!(list["items"], json!([]));
    assert!(
        env.secrets
            .get_current(&countersign_domain::config::widget_secret_name(
                &a.tenant.id,
                &wk
            ))
            .await
            .unwrap()
            .is_none()
    );
    let (s, _) = send(
        app(),
        "DELETE",
        &format!("{base}/{key_id}"),
        Some(key),
        None,
    )
    .await;
    assert_eq!(s, StatusCode::NOT_FOUND);
}

/// Issue 5 (audit): every change writes a record naming the admin key (by fingerprint)
/// and what changed; `GET audit` lists them newest first, in pages; no record, response or
/// table item holds a secret value; a refused change records nothing.
#[tokio::test]
async fn audit_records_every_change_without_secrets() {
    let env = env(true).await;
    let ids = UlidIds::default();
    let a = tenants::register(&env.store, &ids, &SystemClock, "A", Language::En)
        .await
        .unwrap();
    let b = tenants::register(&env.store, &ids, &SystemClock, "B", Language::En)
        .await
        .unwrap();
    let key = a.admin_key.expose();
    let base = format!("/api/admin/tenants/{}", a.tenant.id);
    let app = || app(&env, env.secrets.clone());

    let (s, _) = send(
        app(),
        "PUT",
        &format!("{base}/mcp"),
        Some(key),
        Some(config("https://mcp.trackshare.example.com/mcp", false)),
    )
    .await;
    assert_eq!(s, StatusCode::OK);
    // A refused change (validation) records nothing.
    let (s, _) = send(
        app(),
        "PUT",
        &format!("{base}/mcp"),
        Some(key),
        Some(json!({"serverUrl": "http://x"}).to_string()),
    )
    .await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    let second = json!({
        "serverUrl": "https://mcp2.trackshare.example.com/mcp",
        "serviceToken": "svc_secret_token_2",
        "allowedTools": ["get_user_uploads", "get_user_sessions"],
        "actionPolicy": {"contractVersion": 1, "enabled": false, "operations": ["reassign_session_car"]}
    });
    let (s, _) = send(
        app(),
        "PUT",
        &format!("{base}/mcp"),
        Some(key),
        Some(second.to_string()),
    )
    .await;
    assert_eq!(s, StatusCode::OK);
    let (s, created) = send(
        app(),
        "POST",
        &format!("{base}/widget-credentials"),
        Some(key),
        None,
    )
    .await;
    assert_eq!(s, StatusCode::CREATED);
    let key_id = created["keyId"].as_str().unwrap().to_owned();
    let widget_secret = created["secret"].as_str().unwrap().to_owned();
    let (s, _) = send(
        app(),
        "DELETE",
        &format!("{base}/widget-credentials/{key_id}"),
        Some(key),
        None,
    )
    .await;
    assert_eq!(s, StatusCode::NO_CONTENT);
    let (s, _) = send(app(), "DELETE", &format!("{base}/mcp"), Some(key), None).await;
    assert_eq!(s, StatusCode::NO_CONTENT);

    let (s, all) = send(app(), "GET", &format!("{base}/audit"), Some(key), None).await;
    assert_eq!(s, StatusCode::OK, "{all}");
    let items = all["items"].as_array().unwrap();
    let actions: Vec<&str> = items
        .iter()
        .map(|i| i["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        actions,
        [
            "mcp.delete",
            "widgetCredential.revoke",
            "widgetCredential.create",
            "mcp.put",
            "mcp.put"
        ],
        "newest first; the refused PUT left no record"
    );
    let hash = Sha256Hex::digest(key);
    let fingerprint = &hash.as_str()[..16];
    for i in items {
        assert_eq!(i["actor"], format!("adminKey:{fingerprint}"));
    }
    // L-3: each record's place in the tenant's chain, linked to the one before it.
    for (newer, older) in items.iter().zip(items.iter().skip(1)) {
        assert_eq!(newer["chain"]["id"], "tenant");
        assert_eq!(newer["chain"]["prev"], older["chain"]["hash"], "{newer}");
        assert_eq!(
            newer["chain"]["seq"].as_u64(),
            older["chain"]["seq"].as_u64().map(|s| s + 1)
        );
        assert_eq!(newer["chain"]["hash"].as_str().map(str::len), Some(64));
    }
    let put2 = &items[3]["changes"];
    assert_eq!(
        put2["serverUrl"],
        json!({"from": "https://mcp.trackshare.example.com/mcp", "to": "https://mcp2.trackshare.example.com/mcp"})
    );
    assert_eq!(put2["serviceToken"], json!({"changed": true}));
    assert_eq!(put2["version"], json!({"from": 1, "to": 2}));
    assert!(
        put2.get("allowedTools").is_none(),
        "unchanged fields are not listed"
    );
    assert_eq!(items[1]["changes"]["keyId"], key_id);
    assert_eq!(all["nextCursor"], Value::Null);

    // Pages of two: 2 + 2 + 1, in the same order.
    let mut paged = Vec::new();
    let mut next: Option<String> = None;
    loop {
        let path = match &next {
            None => format!("{base}/audit?limit=2"),
            Some(c) => format!("{base}/audit?limit=2&cursor={c}"),
        };
        let (s, page) = send(app(), "GET", &path, Some(key), None).await;
        assert_eq!(s, StatusCode::OK);
        paged.extend(page["items"].as_array().unwrap().iter().cloned());
        match page["nextCursor"].as_str() {
            Some(c) => next = Some(c.to_owned()),
            None => break,
        }
    }
    assert_eq!(&paged, items);

    // Bad parameters are typed 400s; keys are checked like everywhere else.
    for (q, field) in [
        ("limit=0", "limit"),
        ("limit=101", "limit"),
        ("limit=x", "limit"),
        ("cursor=nope", "cursor"),
        ("colour=red", "colour"),
    ] {
        let (s, e) = send(app(), "GET", &format!("{base}/audit?{q}"), Some(key), None).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{q}");
        assert_eq!(e["error"]["field"], field, "{q}");
    }
    let (s, _) = send(
        app(),
        "GET",
        &format!("{base}/audit"),
        Some("tsk_wrong"),
        None,
    )
    .await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    let (s, _) = send(
        app(),
        "GET",
        &format!("{base}/audit"),
        Some(b.admin_key.expose()),
        None,
    )
    .await;
    assert_eq!(
        s,
        StatusCode::NOT_FOUND,
        "another tenant's audit is not shown"
    );

    // No secret value anywhere: the audit answer, or any item in the table.
    let secrets = [
        "svc_secret_token_1",
        "svc_secret_token_2",
        widget_secret.as_str(),
        key,
    ];
    for s in secrets {
        assert!(!all.to_string().contains(s));
    }
    let sdk = aws_config::load_from_env().await;
    let client = aws_sdk_dynamodb::Client::new(&sdk);
    let table = client
        .scan()
        .table_name(env.store.table())
        .send()
        .await
        .unwrap();
    let dump = format!("{:?}", table.items());
    assert!(dump.contains("mcp.put"), "the scan sees the audit records");
    for s in secrets {
        assert!(!dump.contains(s), "a secret value is stored in the table");
    }
}

/// R-1: the tenant sets its `retentionDays` (audited as `tenant.retention_days`); 0,
/// negative, absurd or non-integer values are a typed 400 that saves nothing.
#[tokio::test]
async fn r1_the_tenant_sets_its_retention_and_bad_values_save_nothing() {
    let env = env(false).await;
    let ids = UlidIds::default();
    let a = tenants::register(&env.store, &ids, &SystemClock, "Keeper", Language::En)
        .await
        .unwrap();
    let path = format!("/api/admin/tenants/{}/settings", a.tenant.id);
    let key = a.admin_key.expose();
    let app = || app(&env, env.secrets.clone());
    let (s, body) = send(app(), "GET", &path, Some(key), None).await;
    assert_eq!(s, StatusCode::OK, "{body}");
    assert_eq!(body["retentionDays"], Value::Null);
    let (s, body) = send(
        app(),
        "PUT",
        &path,
        Some(key),
        Some(r#"{"retentionDays": 90}"#.into()),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    assert_eq!(body["retentionDays"], 90);
    for bad in ["0", "-1", "3651", "100000000000", "1.5", "\"30\"", "true"] {
        let (s, body) = send(
            app(),
            "PUT",
            &path,
            Some(key),
            Some(format!(
                r#"{{"retentionDays": {bad}, "language": "pt-BR"}}"#
            )),
        )
        .await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{bad}: {body}");
        assert_eq!(body["error"]["code"], "VALIDATION_ERROR", "{bad}: {body}");
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("retentionDays"),
            "{bad}: {body}"
        );
    }
    let (_, body) = send(app(), "GET", &path, Some(key), None).await;
    assert_eq!(
        body["retentionDays"], 90,
        "nothing saved by a refused change"
    );
    assert_eq!(body["language"], "en", "nothing else either");
    let changes = audited(&env, &a.tenant.id, "tenant.retention_days").await;
    assert_eq!(changes.len(), 1);
    assert_eq!(changes[0].changes["retentionDays"]["to"], 90);
}

/// The tenant's audit records of `action` (of its latest 50).
async fn audited(
    env: &Env,
    tenant: &countersign_domain::ids::TenantId,
    action: &str,
) -> Vec<countersign_domain::ports::AuditEntry> {
    let trail = countersign_domain::ports::AuditRecords::list_audit(&env.store, tenant, None, 50)
        .await
        .unwrap();
    trail
        .items
        .into_iter()
        .filter(|r| r.action == action)
        .collect()
}

/// Issue 50: the tenant sets its accent and a welcome per language (audited as
/// `tenant.appearance`); a pale accent, a fifth starter or a name without a greeting is a
/// typed 400 that saves nothing, not even the other settings of the same request.
#[tokio::test]
async fn the_tenant_sets_its_accent_and_welcome_and_bad_values_save_nothing() {
    let env = env(false).await;
    let ids = UlidIds::default();
    let a = tenants::register(&env.store, &ids, &SystemClock, "Greeter", Language::En)
        .await
        .unwrap();
    let path = format!("/api/admin/tenants/{}/settings", a.tenant.id);
    let key = a.admin_key.expose();
    let app = || app(&env, env.secrets.clone());
    let (s, body) = send(app(), "GET", &path, Some(key), None).await;
    assert_eq!(s, StatusCode::OK, "{body}");
    assert_eq!(body["accent"], Value::Null);
    assert_eq!(
        body["welcome"],
        serde_json::json!({"en": null, "pt-BR": null})
    );
    let good = r##"{"accent": "#0B5D3B", "welcome": {"pt-BR": {"greeting": "Olá! Como podemos ajudar?", "assistantName": "Ana", "starters": ["Onde está meu pedido?", " "]}}}"##;
    let (s, body) = send(app(), "PUT", &path, Some(key), Some(good.into())).await;
    assert_eq!(s, StatusCode::OK, "{body}");
    assert_eq!(body["accent"], "#0b5d3b");
    assert_eq!(
        body["welcome"]["pt-BR"]["starters"],
        serde_json::json!(["Onde está meu pedido?"])
    );
    assert_eq!(body["welcome"]["en"], Value::Null);
    for (bad, field) in [
        (r##"{"accent": "#ffff00", "language": "pt-BR"}"##, "accent"),
        (r##"{"accent": "blue"}"##, "accent"),
        (
            r#"{"welcome": {"en": {"greeting": "", "assistantName": "Ana"}}, "language": "pt-BR"}"#,
            "welcome.en",
        ),
        (
            r#"{"welcome": {"en": {"greeting": "Hi", "starters": ["a","b","c","d","e"]}}}"#,
            "welcome.en",
        ),
        (
            r#"{"welcome": {"pt-BR": {"greeting": "Oi\u202e"}}}"#,
            "welcome.pt-BR",
        ),
    ] {
        let (s, body) = send(app(), "PUT", &path, Some(key), Some(bad.into())).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{bad}: {body}");
        assert_eq!(body["error"]["code"], "VALIDATION_ERROR", "{bad}: {body}");
        assert!(body.to_string().contains(field), "{bad}: {body}");
    }
    let (_, body) = send(app(), "GET", &path, Some(key), None).await;
    assert_eq!(
        body["accent"], "#0b5d3b",
        "nothing saved by a refused change"
    );
    assert_eq!(body["welcome"]["pt-BR"]["assistantName"], "Ana");
    assert_eq!(body["language"], "en", "nothing else either");
    let changes = audited(&env, &a.tenant.id, "tenant.appearance").await;
    assert_eq!(changes.len(), 1);
    assert_eq!(changes[0].changes["appearance"]["to"]["accent"], "#0b5d3b");
}
