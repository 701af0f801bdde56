//! The confirm path's AWS budget (ARCHITECTURE "The conversation lock and the confirm
//! path"), counted with an SDK interceptor on a messages router served in-process over
//! the same stack: a confirmation performs exactly, before the provider call, one GetItem
//! (the widget credential: revocation takes effect at once), one Query (case, slot,
//! proposal), one TransactWriteItems (confirm + message + configuration-version check),
//! one KMS Sign; and after it one TransactWriteItems (outcome + result message).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use countersign_acceptance::{Stack, texts};
use countersign_aws::calls::CallLog;
use countersign_aws::dynamo::DynamoStore;
use countersign_aws::kms::KmsProofSigner;
use countersign_aws::secrets::SecretsManagerStore;
use countersign_aws::system::{SystemClock, UlidIds};
use countersign_chat::api::{AppState, router};
use countersign_chat::model::ScriptedModel;
use countersign_chat::widget::WidgetAuth;
use countersign_chat::{Chat, ChatParts};
use countersign_domain::config::UrlPolicy;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

#[tokio::test]
async fn confirm_path_is_one_query_one_transaction_one_sign_then_one_write() {
    let stack = Stack::start().await;
    let sdk = aws_config::load_from_env().await;
    let calls = CallLog::default();
    let store = DynamoStore::new(
        DynamoStore::client(&sdk, Some(&calls)),
        &stack.settings.table,
        None,
    );
    let secrets = Arc::new(SecretsManagerStore::new(
        SecretsManagerStore::client(&sdk, Some(&calls)),
        stack.settings.secret_prefix.clone(),
    ));
    let chat = Chat::new(ChatParts {
        conversations: Arc::new(store.clone()),
        tenants: Arc::new(store.clone()),
        integration: Arc::new(countersign_tools::integration::IntegrationService::new(
            Arc::new(store.clone()),
            secrets.clone(),
            Arc::new(
                countersign_provider_client::HttpProvider::new(
                    countersign_provider_client::Settings {
                        url_policy: UrlPolicy {
                            allow_loopback_http: true,
                        },
                        ..countersign_provider_client::Settings::default()
                    },
                )
                .unwrap(),
            ),
        )),
        signer: Arc::new(KmsProofSigner::new(
            KmsProofSigner::client(&sdk, Some(&calls)),
            stack.settings.signing_key.clone(),
        )),
        model: Arc::new(ScriptedModel),
        registry: Arc::new(countersign_tools::builtins::registry().unwrap()),
        clock: Arc::new(SystemClock),
        ids: Arc::new(UlidIds::default()),
        issuer: countersign_acceptance::ISSUER.into(),
        stuck_after: Duration::from_secs(30),
    });
    let app = router(AppState {
        chat: Arc::new(chat),
        auth: Arc::new(WidgetAuth::new(Arc::new(store), secrets)),
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let http = reqwest::Client::new();
    let t = stack.token("u_alice");
    let post = |case: String, content: &'static str, reply: Option<String>| {
        let http = http.clone();
        let url = format!("{base}/api/cases/{case}/messages");
        let t = t.clone();
        async move {
            let r = http
                .post(url)
                .bearer_auth(t)
                .json(&json!({"content": content, "replyToMessageId": reply}))
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 200);
            r.json::<Value>().await.unwrap()["messages"]
                .as_array()
                .unwrap()
                .clone()
        }
    };
    let r = http
        .post(format!("{base}/api/cases"))
        .bearer_auth(&t)
        .send()
        .await
        .unwrap();
    let case = r.json::<Value>().await.unwrap()["caseId"]
        .as_str()
        .unwrap()
        .to_owned();
    // Twice: the first confirmation of the process and a later one cost the same.
    for ask in ["move ses_a1 to car_a2", "move ses_a1 to car_a3"] {
        let m = post(case.clone(), ask, None).await;
        let p = m.last().unwrap().clone();
        assert_eq!(p["kind"], "proposal");
        calls.reset();
        let m = post(case.clone(), "confirm", p["id"].as_str().map(str::to_owned)).await;
        assert!(texts(&m).contains("Action completed."), "{m:?}");
        let expected: BTreeMap<String, u64> = [
            ("GetItem".to_owned(), 1),
            ("Query".to_owned(), 1),
            ("Sign".to_owned(), 1),
            ("TransactWriteItems".to_owned(), 2),
        ]
        .into_iter()
        .collect();
        assert_eq!(calls.snapshot(), expected, "the confirm path's AWS calls");
    }
    assert_eq!(stack.stats()["executions"], 2);
    stack.finish();
}
