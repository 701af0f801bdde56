//! I-2: every AWS client of every function has operation and attempt timeouts below the
//! function's own (`countersign_aws::sdk::timeouts`).

use crate::faulty::Faulty;
use countersign_aws::sdk::{ATTEMPT_TIMEOUT, OPERATION_TIMEOUT};
use std::time::Duration;

/// The functions' timeout (`Globals.Function.Timeout`): past it Lambda kills the
/// invocation, and until then a stalled call holds the function's slot.
const FUNCTION_TIMEOUT: Duration = Duration::from_secs(29);

/// I-2: a DynamoDB that stops answering (the connection open, no answer: the fault
/// proxy's stall) ends the call with the SDK's timeout error, far inside the function's
/// timeout. Without the timeouts the call waits for an answer that does not come, and the
/// guard (the function's own timeout) fails the test.
#[tokio::test]
async fn i2_a_stalled_dynamodb_ends_the_call_at_the_operation_timeout() {
    let upstream = countersign_testkit::local_aws_endpoint();
    let proxy = Faulty::start(&upstream, Duration::ZERO).await;
    let sdk = countersign_aws::sdk::sdk_config(None).await;
    let client = aws_sdk_dynamodb::Client::from_conf(
        aws_sdk_dynamodb::config::Builder::from(&sdk)
            .endpoint_url(proxy.url())
            .build(),
    );
    // Every attempt the SDK's retry makes.
    proxy.stall_next(usize::MAX);
    let call = client.describe_table().table_name("cs-stalled").send();
    let Ok(answer) = tokio::time::timeout(FUNCTION_TIMEOUT, call).await else {
        panic!("the stalled call held its caller for the function's whole timeout");
    };
    let e = answer.expect_err("a stalled DynamoDB answered");
    assert!(
        matches!(e, aws_sdk_dynamodb::error::SdkError::TimeoutError(_)),
        "{e:?}"
    );
}

/// I-2: the clients the adapters build from the one SDK configuration (DynamoDB, KMS,
/// Secrets Manager) all carry its timeouts, each below the function's.
#[tokio::test]
async fn i2_every_adapters_client_carries_the_timeouts() {
    countersign_testkit::local_aws_endpoint();
    let sdk = countersign_aws::sdk::sdk_config(None).await;
    let dynamo = countersign_aws::dynamo::DynamoStore::client(&sdk, None);
    let kms = countersign_aws::kms::KmsProofSigner::client(&sdk, None);
    let secrets = countersign_aws::secrets::SecretsManagerStore::client(&sdk, None);
    let configs = [
        dynamo.config().timeout_config().cloned(),
        kms.config().timeout_config().cloned(),
        secrets.config().timeout_config().cloned(),
    ];
    for t in configs {
        let t = t.expect("a client without a timeout configuration");
        assert_eq!(t.operation_timeout(), Some(OPERATION_TIMEOUT));
        assert_eq!(t.operation_attempt_timeout(), Some(ATTEMPT_TIMEOUT));
    }
    assert!(OPERATION_TIMEOUT < FUNCTION_TIMEOUT && ATTEMPT_TIMEOUT < OPERATION_TIMEOUT);
}
