#!/usr/bin/env bash
# Fails when the pure domain crate (shared/domain) depends, directly or not, on an AWS
# SDK, an HTTP client or server, or an async runtime (issue 2: "cargo tree of the domain
# crate shows no AWS SDK, HTTP client or async runtime").
set -euo pipefail
cd "$(dirname "$0")/../.."
deps=$(cargo tree --locked -p countersign-domain -e normal --prefix none --format '{p}' | awk '{print $1}' | sort -u)
forbidden=$(grep -E '^(aws-|hyper|reqwest|http$|http-body|h2$|tokio|async-std|smol|mio|ureq|isahc|surf|lambda_|axum|tower|rustls|openssl|native-tls)' <<<"$deps" || true)
if [ -n "$forbidden" ]; then
  echo "shared/domain must stay free of I/O crates, but depends on:" >&2
  echo "$forbidden" >&2
  exit 1
fi
echo "ok: $(wc -l <<<"$deps") crates, none of them I/O"
