//! Every store is bounded by bytes as well as by count: filled far past its bound, a store
//! keeps at most its bound, and the process's resident memory grows by about that much, not
//! by what was put in (docs/deployment.md, "What each store keeps"). Linux only for the
//! resident-memory figure; the bounds themselves are checked everywhere.

use std::sync::Arc;

use serde_json::json;
use toolsmith::policy::Approvals;
use toolsmith::state::{MemoryResultStore, ResultStore};
use toolsmith::{ErrorCode, ToolContext, Toolbox, tool};

/// Files a note for review. Writes. Not for drafts.
#[tool(effect = "write", requires_approval, idempotent)]
async fn file_note(
    /// The note.
    #[arg(length(max = 300_000))]
    text: String,
) -> usize {
    text.len()
}

/// The process's resident memory, in bytes (0 where /proc is not there).
fn resident() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|l| l.starts_with("VmRSS:"))?
                .split_whitespace()
                .nth(1)?
                .parse::<u64>()
                .ok()
        })
        .map_or(0, |kib| kib * 1024)
}

const MIB: u64 = 1 << 20;

/// One test, so that no other test of this binary allocates while it measures.
#[tokio::test(flavor = "current_thread")]
async fn every_in_memory_store_keeps_its_byte_bound() {
    // Pending approvals: 1,000 requests of 200 KiB each (200 MB if kept), bounded to 16 MiB.
    let approvals = Approvals::new();
    let toolbox = Toolbox::new()
        .with(FileNote)
        .with_approver(approvals.clone());
    let ctx = ToolContext::new().with_principal("ada");
    let before = resident();
    for i in 0..1_000 {
        let text = format!("{i:06}{}", "x".repeat(200 * 1024));
        let out = toolbox
            .call("file_note", json!({ "text": text }), &ctx)
            .await;
        assert_eq!(
            out.error().map(|e| e.code()),
            Some(ErrorCode::ApprovalRequired)
        );
    }
    let pending = approvals.pending();
    let kept: usize = pending
        .iter()
        .map(|p| serde_json::to_string(&p.arguments).unwrap().len())
        .sum();
    assert!(kept <= 16 << 20, "{kept} bytes of pending arguments kept");
    assert!(
        pending.len() >= 60,
        "the newest are kept: {}",
        pending.len()
    );
    // The newest request is among those kept; the oldest is not.
    assert!(
        pending
            .iter()
            .any(|p| p.arguments["text"].as_str().unwrap().starts_with("000999"))
    );
    assert!(
        !pending
            .iter()
            .any(|p| p.arguments["text"].as_str().unwrap().starts_with("000000"))
    );
    let grown = resident().saturating_sub(before);
    assert!(
        grown < 96 * MIB,
        "pending approvals grew the process by {} MiB",
        grown / MIB
    );

    // Stored results: 300 results of 1 MiB each (300 MB if kept), bounded to 64 MiB.
    let store = Arc::new(MemoryResultStore::default());
    let before = resident();
    let data = format!("\"{}\"", "y".repeat(1 << 20));
    for i in 0..300 {
        store
            .put(
                &format!("r{i}"),
                &data,
                std::time::Duration::from_secs(3600),
            )
            .await
            .unwrap();
    }
    let mut kept = 0;
    for i in 0..300 {
        if store.get(&format!("r{i}")).await.unwrap().is_some() {
            kept += 1;
        }
    }
    assert!(kept <= 64, "{kept} results of 1 MiB kept");
    assert!(
        store.get("r299").await.unwrap().is_some(),
        "the newest is kept"
    );
    let grown = resident().saturating_sub(before);
    assert!(
        grown < 160 * MIB,
        "stored results grew the process by {} MiB",
        grown / MIB
    );
}
