//! The confirm path's AWS budget (ARCHITECTURE "The conversation lock and the confirm
//! path"), counted with an SDK interceptor on a messages router served in-process over
//! the same stack: a confirmation performs exactly, before the provider call, two GetItems
//! (the widget credential: revocation takes effect at once; and, after the confirm write,
//! the tenant's action settings: C-8 holds at execution, decision 0042), one Query (case,
//! slot, proposal), one TransactWriteItems (confirm + message; no item shared by the
//! tenant's conversations, decision 0019), one KMS Sign; and after it one TransactWriteItems
//! (outcome + result message). A cold container adds only what it caches: the widget
//! secret, the service token's version and the signing key's public half.
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

/// A messages router over the stack, in this process, counting its AWS calls in `calls`:
/// a fresh one is a cold container (no caches).
async fn serve(stack: &Stack, sdk: &aws_config::SdkConfig, calls: &CallLog) -> String {
    let store = DynamoStore::new(DynamoStore::client(sdk, Some(calls)), &stack.settings.table);
    let secrets = Arc::new(SecretsManagerStore::new(
        SecretsManagerStore::client(sdk, Some(calls)),
        stack.settings.secret_prefix.clone(),
    ));
    let provider =
        countersign_provider_client::HttpProvider::new(countersign_provider_client::Settings {
            url_policy: UrlPolicy {
                allow_loopback_http: true,
            },
            ..countersign_provider_client::Settings::default()
        })
        .unwrap();
    let chat = Chat::new(ChatParts {
        conversations: Arc::new(store.clone()),
        proposals: Arc::new(store.clone()),
        unsettled: Arc::new(store.clone()),
        tenants: Arc::new(store.clone()),
        settings: Arc::new(store.clone()),
        integration: Arc::new(countersign_tools::integration::IntegrationService::new(
            Arc::new(store.clone()),
            secrets.clone(),
            Arc::new(provider),
        )),
        signer: Arc::new(KmsProofSigner::new(
            KmsProofSigner::client(sdk, Some(calls)),
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
    base
}

fn counts(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect()
}

#[tokio::test]
async fn confirm_path_is_one_query_one_transaction_one_sign_then_one_write() {
    let stack = Stack::start().await;
    // I-1: the router runs as the messages function's role.
    let sdk = countersign_aws::sdk::as_principal(
        &aws_config::load_from_env().await,
        countersign_aws::sdk::Principal::Messages,
    );
    let (calls, cold_calls) = (CallLog::default(), CallLog::default());
    let warm = serve(&stack, &sdk, &calls).await;
    let http = reqwest::Client::new();
    let t = stack.token("u_alice");
    let post = |base: String, case: String, content: &'static str, reply: Option<String>| {
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
        .post(format!("{warm}/api/cases"))
        .bearer_auth(&t)
        .send()
        .await
        .unwrap();
    let case = r.json::<Value>().await.unwrap()["caseId"]
        .as_str()
        .unwrap()
        .to_owned();
    let warm_path = counts(&[
        ("GetItem", 2),
        ("Query", 1),
        ("Sign", 1),
        ("TransactWriteItems", 2),
    ]);
    // Twice: the first confirmation of the process and a later one cost the same.
    for ask in ["move ses_a1 to car_a2", "move ses_a1 to car_a3"] {
        let m = post(warm.clone(), case.clone(), ask, None).await;
        let p = m.last().unwrap().clone();
        assert_eq!(p["kind"], "proposal");
        calls.reset();
        let reply = p["id"].as_str().map(str::to_owned);
        let m = post(warm.clone(), case.clone(), "confirm", reply).await;
        assert!(texts(&m).contains("Action completed."), "{m:?}");
        assert_eq!(
            calls.snapshot(),
            warm_path,
            "the warm confirm path's AWS calls"
        );
    }
    // A cold container confirms a proposal another one prepared: it also reads the widget
    // secret, the service token's version and the signing key's public half, once each.
    let m = post(warm.clone(), case.clone(), "move ses_a1 to car_a1", None).await;
    let p = m.last().unwrap().clone();
    let cold = serve(&stack, &sdk, &cold_calls).await;
    let reply = p["id"].as_str().map(str::to_owned);
    let m = post(cold, case.clone(), "confirm", reply).await;
    assert!(texts(&m).contains("Action completed."), "{m:?}");
    let cold_path = counts(&[
        ("GetItem", 2),
        ("GetPublicKey", 1),
        ("GetSecretValue", 2),
        ("Query", 1),
        ("Sign", 1),
        ("TransactWriteItems", 2),
    ]);
    assert_eq!(
        cold_calls.snapshot(),
        cold_path,
        "the cold confirm path's AWS calls"
    );
    assert_eq!(stack.stats()["executions"], 3);
    stack.finish();
}

/// S-2: what an open widget's live check costs. `GET /api/cases/{id}` is two GetItems (the
/// widget credential, read on every request so a revocation takes effect at once; the
/// case) and one Query of one key (the newest message), whatever the conversation's length;
/// the messages are read only when that key changed. `docs/widget-guide.md` prices it.
#[tokio::test]
async fn s2_a_live_check_is_two_gets_and_one_query() {
    let stack = Stack::start().await;
    // I-1: the router runs as the messages function's role.
    let sdk = countersign_aws::sdk::as_principal(
        &aws_config::load_from_env().await,
        countersign_aws::sdk::Principal::Messages,
    );
    let calls = CallLog::default();
    let base = serve(&stack, &sdk, &calls).await;
    let http = reqwest::Client::new();
    let t = stack.token("u_alice");
    let case = stack.create_case(&t).await;
    for content in ["show my cars", "show my sessions"] {
        stack.say(&t, &case, content, None).await;
    }
    let newest = stack.history(&t, &case).await.last().unwrap()["id"].clone();
    let check = || async {
        let r = http
            .get(format!("{base}/api/cases/{case}"))
            .bearer_auth(&t)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        r.json::<Value>().await.unwrap()
    };
    check().await; // the cold container reads the widget secret once
    calls.reset();
    let view = check().await;
    assert_eq!(view["status"], "open");
    assert_eq!(view["lastMessageId"], newest);
    assert_eq!(
        calls.snapshot(),
        counts(&[("GetItem", 2), ("Query", 1)]),
        "a live check's AWS calls"
    );
    stack.finish();
}
