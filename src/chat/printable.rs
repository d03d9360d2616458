//! What the chat prints of text it did not write (the model's words, tool
//! results, questions, option labels, an MCP server's messages and links):
//! with its terminal escape sequences (colours, cursor moves, window
//! titles, hyperlinks, clipboard writes) and every other control character
//! but line feeds and tabs taken out, so that text from a model or a tool
//! can neither draw over the screen nor talk to the terminal.

use std::borrow::Cow;

/// `text` as the chat may print it: borrowed when it has nothing to take
/// out.
pub(super) fn printable(text: &str) -> Cow<'_, str> {
    if !text.chars().any(unwanted) {
        return Cow::Borrowed(text);
    }
    // Whole sequences first (ESC [ 31 m, OSC 8 ; ; url BEL ...), so that
    // nothing of them is left; then any control character they left.
    let stripped = strip_ansi_escapes::strip_str(text);
    Cow::Owned(stripped.chars().filter(|c| !unwanted(*c)).collect())
}

/// A control character (C0, DEL or C1) other than a line feed or a tab.
fn unwanted(c: char) -> bool {
    c.is_control() && c != '\n' && c != '\t'
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_sequences_and_control_characters_are_taken_out() {
        for (text, shown) in [
            ("\u{1b}[31mred\u{1b}[0m text", "red text"),
            ("title\u{1b}]0;owned\u{7}!", "title!"),
            (
                "\u{1b}]8;;https://evil.example\u{1b}\\link\u{1b}]8;;\u{1b}\\",
                "link",
            ),
            ("\u{1b}]52;c;cm0gLXJmIH4=\u{7}copied", "copied"),
            ("over\rwrite\u{8}\u{8}", "overwrite"),
            ("csi\u{9b}2Jclear", "csi2Jclear"),
            ("a\u{7f}b", "ab"),
            ("lines\nand\ttabs stay", "lines\nand\ttabs stay"),
        ] {
            assert_eq!(printable(text), shown, "{text:?}");
        }
        assert!(matches!(printable("plain, ünïcode ✓"), Cow::Borrowed(_)));
    }
}
