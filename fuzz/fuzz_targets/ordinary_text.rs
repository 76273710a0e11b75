//! Ordinary text, built from the fuzzer's bytes out of words, names, numbers, punctuation and
//! emoji in many scripts (joiners, direction marks and flags where those scripts have them):
//! the output checks find nothing in it and change nothing, through `scan`, `neutralize` and
//! `redact`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolsmith::output::{neutralize, redact, scan};

/// Pieces of ordinary text; each is ordinary on its own and next to any other.
const PIECES: &[&str] = &[
    "the", "order", "ships", "on", "Tuesday", "to", "Madrid", "please", "confirm", "address",
    "Ada", "Lovelace", "José", "Ñúñez", "Zoë", "Straße", "Łódź", "Nguyễn", "Thị", "Minh",
    "Ольга", "Иванова", "доставка", "Αθήνα", "συνάντηση", "שלום\u{200F}", "כתובת", "مرحبا",
    "العنوان", "می\u{200C}خواهم", "کتاب\u{200C}خانه", "नमस्ते", "क्\u{200D}ष", "क्\u{200C}ष",
    "ශ්\u{200D}රී", "അവന്\u{200D}", "সভা", "கூட்டம்", "ประชุม", "会議", "明天", "회의", "ስብሰባ",
    "შეხვედრა", "հանդիպում", "1,234.50", "€12", "42", "2026-11-24", "10:30", "+44 20 7946 0958",
    "ada@example.com", "https://example.com/orders/42", "\u{1F44D}", "\u{2764}\u{FE0F}",
    "\u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467}", "\u{1F3F3}\u{FE0F}\u{200D}\u{1F308}",
    "\u{1F469}\u{1F3FD}\u{200D}\u{1F4BB}", "1\u{FE0F}\u{20E3}", "\u{1F1EF}\u{1F1F5}",
    "\u{1F3F4}\u{E0067}\u{E0062}\u{E0073}\u{E0063}\u{E0074}\u{E007F}", "—", "«", "»", "“", "”",
    "(", ")", "!", "?", ".", ",", ";", ":", "'", "\"", "&", "&amp;", "-", "/", "#", "%", "*",
];

/// What goes between pieces.
const GAPS: &[&str] = &[" ", " ", " ", "\n", ", ", ". ", "\u{A0}", "  ", "\t", "\n\n", ""];

fuzz_target!(|data: &[u8]| {
    let mut text = String::new();
    for pair in data.chunks(2) {
        text.push_str(PIECES[usize::from(pair[0]) % PIECES.len()]);
        if let Some(gap) = pair.get(1) {
            text.push_str(GAPS[usize::from(*gap) % GAPS.len()]);
        }
    }
    assert_eq!(scan(&text), [], "{text:?}");
    assert_eq!(neutralize(&text), text);
    assert_eq!(redact(&text), text);
});
