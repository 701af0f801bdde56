//! The limit in `infra/scripts/load-gateway.sh`: the same HTTP stack as the gateway (axum
//! on tokio, HTTP/1.1) answering `POST /mcp` with a fixed body, the bytes the gateway
//! answers to the measured request, and doing nothing else.
//!
//!     bare-mcp ADDR BODY_FILE

use axum::http::header::CONTENT_TYPE;
use axum::routing::post;

// The same allocator as the functions, so the comparison measures the work done.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let (Some(addr), Some(body_file)) = (args.next(), args.next()) else {
        anyhow::bail!("usage: bare-mcp ADDR BODY_FILE");
    };
    let body: &'static [u8] = Vec::leak(std::fs::read(&body_file)?);
    let app = axum::Router::new().route(
        "/mcp",
        post(move || async move { ([(CONTENT_TYPE, "application/json")], body) }),
    );
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    axum::serve(listener, app).await?;
    Ok(())
}
