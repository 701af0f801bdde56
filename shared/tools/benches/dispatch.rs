//! The dispatcher's cost per call for `describe_tool` (issue 4): argument parsing, the
//! whole call (parse + handler + seal + metric), and the seal alone.
//!
//!   cargo bench -p countersign-tools --bench dispatch
#![allow(clippy::unwrap_used, missing_docs)]

use countersign_domain::conversation::Principal;
use countersign_domain::ids::{CaseId, TenantId, UserId};
use countersign_testkit::MemoryStore;
use countersign_tools::builtins::{self, CallContext, DescribeToolArgs, Services};
use countersign_tools::envelope::{Data, Meta, Success, seal};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use std::hint::black_box;
use std::sync::Arc;

fn ctx() -> CallContext {
    let ulid = "01JDZ6Y5X1QW9T3V7N2K4M8P0R";
    let fake = Arc::new(MemoryStore::default());
    CallContext {
        principal: Principal {
            tenant: TenantId::from_ulid_text(ulid).unwrap(),
            user: UserId::parse("driver-42").unwrap(),
        },
        case: CaseId::from_ulid_text(ulid).unwrap(),
        services: Services {
            conversations: fake.clone(),
            tenants: fake,
            actions: None,
        },
        consultations: Vec::new(),
    }
}

fn dispatch(c: &mut Criterion) {
    let r = builtins::registry().unwrap();
    let ctx = ctx();
    let args = json!({"name": "action_status"});
    c.bench_function("describe_tool: parse arguments", |b| {
        b.iter(|| serde_json::from_value::<DescribeToolArgs>(black_box(args.clone())).unwrap());
    });
    c.bench_function(
        "describe_tool: whole call (parse + handler + seal + metric)",
        |b| {
            b.iter(|| {
                pollster::block_on(r.call(ctx.clone(), "describe_tool", black_box(args.clone())))
                    .unwrap()
            });
        },
    );
    let data: std::sync::Arc<serde_json::value::RawValue> =
        serde_json::value::to_raw_value(&r.get("action_status").unwrap().published())
            .unwrap()
            .into();
    let meta = Meta {
        tool: "describe_tool".into(),
        version: "1.0.0".into(),
    };
    c.bench_function("describe_tool: seal only", |b| {
        b.iter(|| {
            seal(
                &meta,
                Ok(Success {
                    data: Data::Written(black_box(data.clone())),
                    images: Vec::new(),
                }),
            )
        });
    });
}

criterion_group!(benches, dispatch);
criterion_main!(benches);
