//! Regenerates `tests/snapshots/mcp-tools.json` (G-4) and `docs/tools.md` (G-14) from the
//! registry. Run from anywhere: `cargo run -p countersign-tools --bin tools-catalog`.

use countersign_tools::{builtins, catalog};
use std::path::Path;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let r = builtins::registry()?;
    std::fs::write(root.join(catalog::SNAPSHOT_PATH), catalog::snapshot(&r))?;
    std::fs::write(root.join(catalog::DOCS_PATH), catalog::markdown(&r))?;
    Ok(())
}
