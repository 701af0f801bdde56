//! What the suites that put a server nobody here wrote behind the bridge share (B-5's
//! τ²-bench retail, E-1's AgentDojo): the checkout, a pinned virtualenv's Python, its
//! scripts, the bridge's counters.

#![allow(clippy::unwrap_used)]

use countersign_bridge::Bridge;
use std::path::{Path, PathBuf};

/// The checkout.
pub(crate) fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The Python of `.venv/<venv>` (installed by `infra/scripts/install.sh <venv>`), or
/// the one `var` names.
pub(crate) fn python(var: &str, venv: &str) -> PathBuf {
    let p = std::env::var_os(var).map_or_else(
        || root().join(format!(".venv/{venv}/bin/python")),
        PathBuf::from,
    );
    assert!(
        p.exists(),
        "{} is missing: run infra/scripts/install.sh {venv}",
        p.display()
    );
    p
}

/// `python script args…`'s standard output; its standard error when it fails.
pub(crate) fn script(python: &Path, script: &str, args: &[&str]) -> Vec<u8> {
    let out = std::process::Command::new(python)
        .arg(root().join(script))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{script} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// The bridge's `countersign_bridge_<name>_total` counter.
pub(crate) fn counter(bridge: &Bridge, name: &str) -> u64 {
    let text = bridge.metrics.render();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("countersign_bridge_{name}_total ")))
        .and_then(|v| v.parse().ok())
        .unwrap()
}
