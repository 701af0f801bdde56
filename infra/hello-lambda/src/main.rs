//! The smallest `lambda_http` function: what a cold start costs before any of Countersign's
//! own work. `infra/lambda/init_time.py` measures each function against it.

use lambda_http::{Body, Error, Request, Response, service_fn};

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_http::run(service_fn(|_: Request| async {
        Ok::<_, Error>(Response::new(Body::from("hello")))
    }))
    .await
}
