// Fails: `secret_in_description`, one tool per kind of secret or internal detail it recognises.
use toolsmith::tool;

/// Reads notes with key sk-live-4f9a8b7c6d5e4f3a2b1c. Read-only. Not for writes.
#[tool(effect = "read")]
fn read_notes() -> u32 {
    1
}

/// Reads notes; send the header Bearer eyJhbGciOiJIUzI1NiJ9xyz. Read-only. Not for writes.
#[tool(effect = "read")]
fn read_books() -> u32 {
    2
}

/// Reads notes signed with -----BEGIN PRIVATE KEY-----. Read-only. Not for writes.
#[tool(effect = "read")]
fn read_letters() -> u32 {
    3
}

/// Reads notes from the server at 10.0.3.7. Read-only. Not for writes.
#[tool(effect = "read")]
fn read_cards() -> u32 {
    4
}

/// Reads notes from localhost. Read-only. Not for writes.
#[tool(effect = "read")]
fn read_pages() -> u32 {
    5
}

/// Reads notes from notes.corp.internal. Read-only. Not for writes.
#[tool(effect = "read")]
fn read_memos() -> u32 {
    6
}

/// Reads notes kept in /var/lib/notes. Read-only. Not for writes.
#[tool(effect = "read")]
fn read_drafts() -> u32 {
    7
}

fn main() {}
