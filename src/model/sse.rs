//! Server-sent events framing, as the WHATWG event stream format defines
//! it: bytes in (split anywhere, even inside a UTF-8 character or a CRLF),
//! complete events out. It only frames: what an event means is each
//! provider's business, and it never reconnects (a model stream is a POST
//! that must not be replayed behind the caller's back).
//!
//! Lines end with LF, CRLF or CR; `:` starts a comment; `data` lines of one
//! event are joined with `\n`; a blank line dispatches the event; a leading
//! byte order mark is skipped. At the end of the stream an event that was
//! not closed by a blank line is still dispatched (the standard drops it,
//! but some compatible servers close right after their last `data:` line).

/// One dispatched event.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event` field; empty when the event has none (a `message`).
    pub event: String,
    /// The `data` lines joined with `\n`.
    pub data: String,
    /// The last `id` field seen, if any.
    pub id: Option<String>,
}

/// Turns chunks of bytes into events.
#[derive(Debug, Default)]
pub struct SseParser {
    /// Bytes of the line being read.
    line: Vec<u8>,
    /// The previous chunk ended with CR: a LF that starts this one belongs
    /// to the same line ending.
    after_cr: bool,
    /// The first line has been seen (a BOM is only skipped before it).
    started: bool,
    event: String,
    data: String,
    has_data: bool,
    id: Option<String>,
}

impl SseParser {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds the next bytes; returns the events they complete.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        let mut events = Vec::new();
        let mut rest = bytes;
        if self.after_cr {
            self.after_cr = false;
            if let Some(stripped) = rest.strip_prefix(b"\n") {
                rest = stripped;
            }
        }
        while let Some(end) = rest.iter().position(|&b| b == b'\n' || b == b'\r') {
            self.line.extend_from_slice(&rest[..end]);
            let terminator = rest[end];
            rest = &rest[end + 1..];
            if terminator == b'\r' {
                match rest.first() {
                    Some(b'\n') => rest = &rest[1..],
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
            let line = std::mem::take(&mut self.line);
            if let Some(event) = self.line_done(&line) {
                events.push(event);
            }
        }
        self.line.extend_from_slice(rest);
        events
    }

    /// The stream ended: dispatches what is left.
    pub fn finish(&mut self) -> Option<SseEvent> {
        let line = std::mem::take(&mut self.line);
        if !line.is_empty() {
            if let Some(event) = self.line_done(&line) {
                return Some(event);
            }
        }
        self.dispatch()
    }

    fn line_done(&mut self, line: &[u8]) -> Option<SseEvent> {
        let mut line = line;
        if !self.started {
            self.started = true;
            line = line.strip_prefix("\u{feff}".as_bytes()).unwrap_or(line);
        }
        if line.is_empty() {
            return self.dispatch();
        }
        if line.first() == Some(&b':') {
            return None;
        }
        let text = String::from_utf8_lossy(line);
        let (field, value) = match text.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (text.as_ref(), ""),
        };
        match field {
            "event" => value.clone_into(&mut self.event),
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            "id" if !value.contains('\0') => self.id = Some(value.to_owned()),
            // `retry` only matters to reconnecting clients; unknown fields
            // are ignored, as the standard says.
            _ => {}
        }
        None
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        let event = std::mem::take(&mut self.event);
        if !self.has_data {
            return None;
        }
        self.has_data = false;
        Some(SseEvent {
            event,
            data: std::mem::take(&mut self.data),
            id: self.id.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut parser = SseParser::new();
        let mut events: Vec<SseEvent> = chunks.iter().flat_map(|c| parser.push(c)).collect();
        events.extend(parser.finish());
        events
    }

    fn data(text: &str) -> SseEvent {
        SseEvent {
            data: text.to_owned(),
            ..SseEvent::default()
        }
    }

    #[test]
    fn reads_events_with_types_and_data() {
        let events = all(&[b"event: ping\ndata: {}\n\ndata: one\ndata: two\n\n"]);
        assert_eq!(
            events,
            [
                SseEvent {
                    event: "ping".into(),
                    data: "{}".into(),
                    id: None
                },
                data("one\ntwo"),
            ]
        );
    }

    #[test]
    fn any_split_gives_the_same_events() {
        let text = "event: message_start\r\ndata: {\"a\": \"h\u{e9}llo \u{1f600}\"}\r\n\r\n: comment\r\ndata: [DONE]\r\n\r\n";
        let bytes = text.as_bytes();
        let whole = all(&[bytes]);
        assert_eq!(whole.len(), 2);
        assert_eq!(whole[0].data, "{\"a\": \"h\u{e9}llo \u{1f600}\"}");
        for size in 1..bytes.len() {
            let chunks: Vec<&[u8]> = bytes.chunks(size).collect();
            assert_eq!(all(&chunks), whole, "chunks of {size} bytes");
        }
    }

    #[test]
    fn cr_alone_ends_lines_and_a_split_crlf_is_one_ending() {
        assert_eq!(all(&[b"data: a\r\rdata: b\r", b"\n\r\n"]), [data("a"), data("b")]);
    }

    #[test]
    fn comments_empty_events_and_unknown_fields_are_skipped() {
        let events = all(&[b": keep-alive\n\nevent: x\n\nretry: 10\nfoo: bar\ndata\n\n"]);
        assert_eq!(events, [data("")]);
    }

    #[test]
    fn only_one_leading_space_is_removed_and_colons_stay_in_values() {
        assert_eq!(all(&[b"data:  a: b\n\ndata:c\n\n"]), [data(" a: b"), data("c")]);
    }

    #[test]
    fn a_leading_byte_order_mark_is_skipped() {
        assert_eq!(all(&["\u{feff}data: x\n\n".as_bytes()]), [data("x")]);
    }

    #[test]
    fn ids_are_remembered() {
        let events = all(&[b"id: 7\ndata: a\n\ndata: b\n\n"]);
        assert_eq!(events[1].id.as_deref(), Some("7"));
    }

    #[test]
    fn an_unterminated_last_event_is_still_dispatched() {
        assert_eq!(all(&[b"data: a\n\ndata: [DONE]"]), [data("a"), data("[DONE]")]);
        assert_eq!(all(&[b"data: [DONE]\n"]), [data("[DONE]")]);
    }
}
