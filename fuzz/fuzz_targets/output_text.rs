//! Any text through the output checks' public functions (`scan`, `neutralize`, `redact`): no
//! input may panic, every finding is a range of the text on character boundaries, in order and
//! apart, and a text with nothing found comes back from `neutralize` unchanged. `redact` and a
//! second scan of the rewritten text run too, for their panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolsmith::output::{Family, neutralize, redact, scan};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let found = scan(&text);
    for finding in &found {
        assert!(finding.start < finding.end && finding.end <= text.len(), "{finding:?}");
        assert!(text.is_char_boundary(finding.start) && text.is_char_boundary(finding.end));
    }
    for pair in found.windows(2) {
        assert!(pair[0].end <= pair[1].start, "findings in order, apart: {pair:?}");
    }
    let safe = neutralize(&text);
    if found.is_empty() {
        assert_eq!(safe, text, "nothing found, nothing changed");
    }
    let _ = redact(&text);
    let _ = scan(&safe)
        .iter()
        .filter(|f| f.family != Family::Instruction)
        .count();
});
