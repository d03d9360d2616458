//! History windowing: which part of a conversation is sent to the model.
//! An agent may bound it by messages and by approximate tokens (a quarter
//! of the text's bytes); the oldest messages go first. A tool call and its
//! results are one unit, kept or dropped together, and the window never
//! starts with a tool result. Leading system messages (the instructions)
//! are always sent. Only what the model sees is windowed: runs and threads
//! keep every message.

use std::borrow::Cow;
use std::ops::Range;

use crate::domain::Message;

/// An agent's bounds on the conversation sent to the model; `None` is
/// unbounded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HistoryWindow {
    /// The most messages sent, not counting the leading system messages.
    pub max_messages: Option<usize>,
    /// The most tokens sent (approximately: bytes / 4), system messages
    /// included.
    pub max_tokens: Option<usize>,
}

/// A message's approximate token count.
pub(super) fn approx_tokens(message: &Message) -> usize {
    message.text_len().div_ceil(4)
}

/// The conversation the model sees: the run's leading system messages, then
/// `earlier` (the history of the run's thread), then the rest of the run's
/// messages.
pub(crate) fn compose<'a>(current: &'a [Message], earlier: &[Message]) -> Cow<'a, [Message]> {
    if earlier.is_empty() {
        return Cow::Borrowed(current);
    }
    let lead = leading_system(current);
    let mut all = Vec::with_capacity(current.len() + earlier.len());
    all.extend_from_slice(&current[..lead]);
    all.extend_from_slice(earlier);
    all.extend_from_slice(&current[lead..]);
    Cow::Owned(all)
}

fn leading_system(messages: &[Message]) -> usize {
    messages
        .iter()
        .take_while(|m| matches!(m, Message::System { .. }))
        .count()
}

/// `messages` split into units: an assistant message with the results of
/// its tool calls that follow it, or any other single message.
fn units(messages: &[Message]) -> Vec<Range<usize>> {
    let mut units = Vec::new();
    let mut i = 0;
    while i < messages.len() {
        let start = i;
        i += 1;
        if let Message::Assistant { tool_calls, .. } = &messages[start] {
            while let Some(Message::Tool { tool_call_id, .. }) = messages.get(i) {
                if !tool_calls.iter().any(|call| call.id == *tool_call_id) {
                    break;
                }
                i += 1;
            }
        }
        units.push(start..i);
    }
    units
}

impl HistoryWindow {
    pub fn is_unbounded(&self) -> bool {
        self.max_messages.is_none() && self.max_tokens.is_none()
    }

    /// The part of `messages` to send: the leading system messages, then the
    /// newest units that fit both bounds (the newest unit always, even if it
    /// alone is over), without a tool result whose call was left out at the
    /// start.
    pub fn apply<'a>(&self, messages: &'a [Message]) -> Cow<'a, [Message]> {
        if self.is_unbounded() {
            return Cow::Borrowed(messages);
        }
        let lead = leading_system(messages);
        let (system, rest) = messages.split_at(lead);
        let start = self.window_start(system, rest);
        if start == 0 {
            return Cow::Borrowed(messages);
        }
        let mut kept = Vec::with_capacity(lead + rest.len() - start);
        kept.extend_from_slice(system);
        kept.extend_from_slice(&rest[start..]);
        Cow::Owned(kept)
    }

    /// Where in `rest` the window starts.
    fn window_start(&self, system: &[Message], rest: &[Message]) -> usize {
        let units = units(rest);
        let max_messages = self.max_messages.unwrap_or(usize::MAX);
        let max_tokens = self.max_tokens.unwrap_or(usize::MAX);
        let mut messages = 0usize;
        let mut tokens: usize = system.iter().map(approx_tokens).sum();
        let mut first = units.len();
        for (index, unit) in units.iter().enumerate().rev() {
            let unit_tokens: usize = rest[unit.clone()].iter().map(approx_tokens).sum();
            let fits =
                messages + unit.len() <= max_messages && tokens.saturating_add(unit_tokens) <= max_tokens;
            if !fits && first < units.len() {
                break;
            }
            messages += unit.len();
            tokens = tokens.saturating_add(unit_tokens);
            first = index;
        }
        // A result whose call is not in the window (or never was) cannot
        // open it; the newest unit stays regardless.
        while first + 1 < units.len() && matches!(rest[units[first].start], Message::Tool { .. }) {
            first += 1;
        }
        units.get(first).map_or(0, |unit| unit.start)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::domain::ToolCall;

    fn user(text: &str) -> Message {
        Message::user(text)
    }

    fn say(text: &str) -> Message {
        Message::Assistant {
            content: text.to_owned(),
            tool_calls: Vec::new(),
        }
    }

    fn calls(ids: &[&str]) -> Message {
        Message::Assistant {
            content: String::new(),
            tool_calls: ids
                .iter()
                .map(|id| ToolCall {
                    id: (*id).to_owned(),
                    name: "ask_user".to_owned(),
                    args: json!({"question": "?"}).into(),
                })
                .collect(),
        }
    }

    fn result(id: &str) -> Message {
        Message::tool(id, "ask_user", format!("User answered: {id}"), false)
    }

    fn window(max_messages: Option<usize>, max_tokens: Option<usize>) -> HistoryWindow {
        HistoryWindow {
            max_messages,
            max_tokens,
        }
    }

    #[test]
    fn unbounded_sends_everything() {
        let messages = vec![user("a"), calls(&["1"]), result("1"), say("b")];
        assert!(matches!(window(None, None).apply(&messages), Cow::Borrowed(_)));
    }

    #[test]
    fn the_oldest_go_first_and_system_stays() {
        let system = Message::System {
            content: "be brief".into(),
        };
        let messages = vec![
            system.clone(),
            user("a"),
            say("b"),
            user("c"),
            say("d"),
            user("e"),
        ];
        let kept = window(Some(3), None).apply(&messages).into_owned();
        assert_eq!(kept, vec![system, user("c"), say("d"), user("e")]);
    }

    #[test]
    fn a_call_and_its_results_go_together() {
        let messages = vec![user("a"), calls(&["1", "2"]), result("1"), result("2"), user("b")];
        // Room for 3: the call unit (3 messages) and `b` do not both fit.
        assert_eq!(
            window(Some(3), None).apply(&messages).into_owned(),
            vec![user("b")]
        );
        assert_eq!(
            window(Some(4), None).apply(&messages).into_owned(),
            messages[1..].to_vec()
        );
    }

    #[test]
    fn never_starts_with_an_orphan_result() {
        // A result whose call is not there (e.g. cut by the caller).
        let messages = vec![result("9"), user("a"), say("b")];
        assert_eq!(
            window(Some(10), None).apply(&messages).into_owned(),
            messages[1..].to_vec()
        );
    }

    #[test]
    fn the_newest_unit_is_kept_even_over_budget() {
        let messages = vec![user("a"), calls(&["1"]), result("1")];
        assert_eq!(
            window(Some(1), Some(1)).apply(&messages).into_owned(),
            messages[1..].to_vec()
        );
    }

    #[test]
    fn tokens_bound_the_window() {
        let long = "x".repeat(400); // 100 tokens
        let messages = vec![user(&long), say(&long), user("short")];
        let kept = window(None, Some(150)).apply(&messages).into_owned();
        assert_eq!(kept, vec![say(&long), user("short")]);
    }

    #[test]
    fn compose_puts_history_after_the_instructions() {
        let system = Message::System { content: "s".into() };
        let current = vec![system.clone(), user("now")];
        let earlier = vec![user("before"), say("reply")];
        assert_eq!(
            compose(&current, &earlier).into_owned(),
            vec![system, user("before"), say("reply"), user("now")]
        );
        assert!(matches!(compose(&current, &[]), Cow::Borrowed(_)));
    }

    /// A random conversation: users, plain replies, calls with their results
    /// (sometimes some missing), and stray results.
    fn random_conversation(rng: &mut fastrand::Rng) -> Vec<Message> {
        let mut messages = Vec::new();
        let mut next_id = 0;
        for _ in 0..rng.usize(0..30) {
            match rng.u8(0..10) {
                0..=3 => messages.push(user(&"u".repeat(rng.usize(1..40)))),
                4..=5 => messages.push(say(&"a".repeat(rng.usize(0..40)))),
                6..=8 => {
                    let ids: Vec<String> = (0..rng.usize(1..4))
                        .map(|_| {
                            next_id += 1;
                            format!("c{next_id}")
                        })
                        .collect();
                    let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
                    messages.push(calls(&refs));
                    for id in &ids {
                        if rng.u8(0..8) > 0 {
                            messages.push(result(id));
                        }
                    }
                }
                _ => messages.push(result("stray")),
            }
        }
        messages
    }

    #[test]
    fn windows_keep_their_invariants() {
        let mut rng = fastrand::Rng::with_seed(7);
        for case in 0..3000 {
            let messages = random_conversation(&mut rng);
            let bounds = window(
                rng.bool().then(|| rng.usize(1..12)),
                rng.bool().then(|| rng.usize(1..60)),
            );
            let kept = bounds.apply(&messages);
            let context = || format!("case {case}: {bounds:?}\n{messages:#?}\n=> {kept:#?}");
            // A suffix of the conversation.
            assert!(messages.ends_with(&kept), "{}", context());
            if bounds.is_unbounded() {
                assert_eq!(kept.len(), messages.len(), "{}", context());
                continue;
            }
            if messages.is_empty() {
                continue;
            }
            // Never empty when there is something to send.
            assert!(!kept.is_empty(), "{}", context());
            // Never opens with a result, unless that is all there is left.
            let units = units(&messages);
            let last_unit = units.last().unwrap().clone();
            if let Some(Message::Tool { .. }) = kept.first() {
                assert_eq!(kept.len(), last_unit.len(), "{}", context());
            }
            // Every kept result whose call exists keeps its call.
            let start = messages.len() - kept.len();
            for (offset, message) in kept.iter().enumerate() {
                if let Message::Tool { tool_call_id, .. } = message {
                    let index = start + offset;
                    let caller = units.iter().find(|u| u.contains(&index)).unwrap();
                    if caller.start != index {
                        assert!(caller.start >= start, "{}", context());
                        let Message::Assistant { tool_calls, .. } = &messages[caller.start] else {
                            panic!("{}", context());
                        };
                        assert!(tool_calls.iter().any(|c| c.id == *tool_call_id), "{}", context());
                    }
                }
            }
            // The window starts on a unit boundary.
            assert!(units.iter().any(|u| u.start == start), "{}", context());
            // Within bounds, unless only the newest unit is left.
            if kept.len() > last_unit.len() {
                if let Some(max) = bounds.max_messages {
                    assert!(kept.len() <= max, "{}", context());
                }
                if let Some(max) = bounds.max_tokens {
                    assert!(
                        kept.iter().map(approx_tokens).sum::<usize>() <= max,
                        "{}",
                        context()
                    );
                }
            }
            // Maximal: the unit before the window would not have fitted,
            // or was a result without its call.
            if let Some(previous) = units.iter().rev().find(|u| u.end == start) {
                let orphan = matches!(messages[previous.start], Message::Tool { .. });
                let messages_over = bounds
                    .max_messages
                    .is_some_and(|max| kept.len() + previous.len() > max);
                let tokens: usize = messages[previous.start..].iter().map(approx_tokens).sum();
                let tokens_over = bounds.max_tokens.is_some_and(|max| tokens > max);
                assert!(orphan || messages_over || tokens_over, "{}", context());
            }
        }
    }
}
