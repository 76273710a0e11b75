//! Where a JSON text stands, by its brackets and strings alone: whether its first value has
//! closed (a streamed call's end, a text that was not cut off), whatever else is wrong in it.

/// Where a JSON text stands, read piece by piece: whether its first value has closed.
#[derive(Debug, Default)]
pub(crate) struct Scan {
    depth: usize,
    started: bool,
    in_string: bool,
    escaped: bool,
    /// The first value closed; anything but whitespace after it is an error.
    pub(crate) closed: bool,
    /// Something other than whitespace came after it.
    pub(crate) trailing: bool,
}

impl Scan {
    /// Reads the next piece of the text.
    pub(crate) fn feed(&mut self, text: &str) {
        for byte in text.bytes() {
            if self.closed {
                if !byte.is_ascii_whitespace() {
                    self.trailing = true;
                }
                continue;
            }
            if self.in_string {
                match byte {
                    _ if self.escaped => self.escaped = false,
                    b'\\' => self.escaped = true,
                    b'"' => self.in_string = false,
                    _ => {}
                }
                continue;
            }
            match byte {
                b'"' => self.in_string = true,
                b'{' | b'[' => {
                    self.started = true;
                    self.depth += 1;
                }
                b'}' | b']' => {
                    self.depth = self.depth.saturating_sub(1);
                    if self.started && self.depth == 0 {
                        self.closed = true;
                    }
                }
                _ => {}
            }
        }
    }
}
