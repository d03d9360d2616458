//! Text as messages quote it.

/// `text` cut to at most `max` bytes (at a character boundary), with a
/// note of its full length when cut. For messages that quote a caller's
/// or a model's input back, so that hostile input cannot make them huge.
pub fn clip(text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let mut cut = max;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}… ({} bytes in all)", &text[..cut], text.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clipping_keeps_characters_whole() {
        assert_eq!(clip("short".into(), 10), "short");
        assert_eq!(clip("ééé".into(), 3), "é… (6 bytes in all)");
    }
}
