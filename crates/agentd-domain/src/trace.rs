//! W3C Trace Context (level 1): the `traceparent` and `tracestate` a
//! request arrives with, read strictly, and written on to the services a
//! run calls. A value that does not parse is the caller's to ignore, as the
//! specification says (a request is never refused for it); a `tracestate`
//! that does not parse is dropped while its `traceparent` is kept. Plain
//! data and parsing: no I/O, no spans.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The version this build writes (and the only layout it reads; a later
/// version is read by its version-00 fields, as the specification asks).
const VERSION: &str = "00";
/// The length of a version-00 `traceparent`.
const TRACEPARENT_LEN: usize = 55;
/// The `sampled` bit of the trace flags, the only one level 1 defines.
const SAMPLED: u8 = 0x01;

/// Members of a `tracestate` at most; a longer list is dropped whole.
pub const MAX_TRACESTATE_MEMBERS: usize = 32;
/// Characters of `tracestate` kept at most: members are removed to fit,
/// those longer than [`LONG_MEMBER`] first, then from the end.
pub const MAX_TRACESTATE_LEN: usize = 512;
const LONG_MEMBER: usize = 128;

/// A trace's id: 16 bytes, never all zero.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct TraceId([u8; 16]);

/// A span's id (a `traceparent`'s parent-id): 8 bytes, never all zero.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct SpanId([u8; 8]);

impl TraceId {
    pub fn from_bytes(bytes: [u8; 16]) -> Option<Self> {
        (bytes != [0; 16]).then_some(Self(bytes))
    }

    pub fn to_bytes(self) -> [u8; 16] {
        self.0
    }
}

impl SpanId {
    pub fn from_bytes(bytes: [u8; 8]) -> Option<Self> {
        (bytes != [0; 8]).then_some(Self(bytes))
    }

    pub fn to_bytes(self) -> [u8; 8] {
        self.0
    }

    /// A fresh random id, for a call made outside any exported span.
    pub fn random() -> Self {
        Self(fastrand::u64(1..).to_be_bytes())
    }
}

fn write_hex(f: &mut fmt::Formatter<'_>, bytes: &[u8]) -> fmt::Result {
    bytes.iter().try_for_each(|byte| write!(f, "{byte:02x}"))
}

impl fmt::Display for TraceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_hex(f, &self.0)
    }
}

impl fmt::Debug for TraceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TraceId({self})")
    }
}

impl fmt::Display for SpanId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_hex(f, &self.0)
    }
}

impl fmt::Debug for SpanId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SpanId({self})")
    }
}

/// Why a `traceparent` is not one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InvalidTraceparent {
    #[error("traceparent is not version-traceid-parentid-flags in lowercase hex")]
    Malformed,
    #[error("traceparent version ff is forbidden")]
    ForbiddenVersion,
    #[error("traceparent has an all-zero trace-id")]
    ZeroTraceId,
    #[error("traceparent has an all-zero parent-id")]
    ZeroParentId,
}

/// Why a `tracestate` is dropped.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InvalidTracestate {
    #[error("tracestate member {0:?} is not key=value")]
    Member(String),
    #[error("tracestate names {0:?} twice")]
    DuplicateKey(String),
    #[error("tracestate has more than {MAX_TRACESTATE_MEMBERS} members")]
    TooManyMembers,
}

/// The vendor-specific list of a `tracestate`, kept as received (members
/// `key=value`, in order): agentd adds nothing to it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TraceState(Vec<String>);

impl TraceState {
    /// The list the `tracestate` header `values` carry (several headers are
    /// one list, in order); empty members are skipped. Cut to
    /// [`MAX_TRACESTATE_LEN`] characters as the specification says.
    pub fn parse<'a>(values: impl IntoIterator<Item = &'a str>) -> Result<Self, InvalidTracestate> {
        let mut members: Vec<String> = Vec::new();
        for member in values.into_iter().flat_map(|value| value.split(',')) {
            let member = member.trim_matches([' ', '\t']);
            if member.is_empty() {
                continue;
            }
            let (key, value) = member
                .split_once('=')
                .filter(|(key, value)| is_key(key) && is_value(value))
                .ok_or_else(|| InvalidTracestate::Member(member.to_owned()))?;
            if members
                .iter()
                .any(|kept| kept.split_once('=').map(|(k, _)| k) == Some(key))
            {
                return Err(InvalidTracestate::DuplicateKey(key.to_owned()));
            }
            if members.len() == MAX_TRACESTATE_MEMBERS {
                return Err(InvalidTracestate::TooManyMembers);
            }
            members.push(format!("{key}={value}"));
        }
        Ok(Self(cut_to_fit(members)))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The members, `key=value`, in order.
    pub fn members(&self) -> &[String] {
        &self.0
    }

    /// The header value: the members joined by commas.
    pub fn header(&self) -> String {
        self.0.join(",")
    }
}

/// The length of `members` as one header value.
fn joined_len(members: &[String]) -> usize {
    members.iter().map(String::len).sum::<usize>() + members.len().saturating_sub(1)
}

/// `members` within [`MAX_TRACESTATE_LEN`]: long members go first, from
/// the end, then the others from the end.
fn cut_to_fit(mut members: Vec<String>) -> Vec<String> {
    while joined_len(&members) > MAX_TRACESTATE_LEN {
        let drop = members
            .iter()
            .rposition(|member| member.len() > LONG_MEMBER)
            .unwrap_or(members.len() - 1);
        members.remove(drop);
    }
    members
}

/// A character of a key after its first: `a-z 0-9 _ - * /`.
fn is_key_char(c: u8) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, b'_' | b'-' | b'*' | b'/')
}

/// A `tracestate` key: `simple-key`, or `tenant-id@system-id`.
fn is_key(key: &str) -> bool {
    let rest_ok = |part: &[u8]| part.iter().copied().all(is_key_char);
    match key.split_once('@') {
        None => {
            let key = key.as_bytes();
            (1..=256).contains(&key.len()) && key[0].is_ascii_lowercase() && rest_ok(&key[1..])
        }
        Some((tenant, system)) => {
            let (tenant, system) = (tenant.as_bytes(), system.as_bytes());
            (1..=241).contains(&tenant.len())
                && (tenant[0].is_ascii_lowercase() || tenant[0].is_ascii_digit())
                && rest_ok(&tenant[1..])
                && (1..=14).contains(&system.len())
                && system[0].is_ascii_lowercase()
                && rest_ok(&system[1..])
        }
    }
}

/// A `tracestate` value: 1 to 256 printable ASCII characters other than
/// `,` and `=`, the last not a space.
fn is_value(value: &str) -> bool {
    let value = value.as_bytes();
    let printable = |c: u8| (0x20..=0x7e).contains(&c) && c != b',' && c != b'=';
    (1..=256).contains(&value.len()) && value.iter().copied().all(printable) && value.last() != Some(&b' ')
}

/// `N` bytes from `2 * N` lowercase hex digits.
fn lowercase_hex<const N: usize>(text: &[u8]) -> Option<[u8; N]> {
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    if text.len() != 2 * N {
        return None;
    }
    let mut bytes = [0; N];
    for (byte, pair) in bytes.iter_mut().zip(text.chunks_exact(2)) {
        *byte = (digit(pair[0])? << 4) | digit(pair[1])?;
    }
    Some(bytes)
}

/// Where a trace stands: the trace, the span a request came from (its
/// parent-id), whether the trace is sampled, and the vendors' state.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "StoredTraceContext", into = "StoredTraceContext")]
pub struct TraceContext {
    trace_id: TraceId,
    parent_id: SpanId,
    sampled: bool,
    state: TraceState,
}

impl TraceContext {
    pub fn new(trace_id: TraceId, parent_id: SpanId, sampled: bool, state: TraceState) -> Self {
        Self {
            trace_id,
            parent_id,
            sampled,
            state,
        }
    }

    /// The context a request's `traceparent` and `tracestate` header values
    /// say; a `tracestate` that does not parse is left out.
    pub fn from_headers<'a>(
        traceparent: &str,
        tracestate: impl IntoIterator<Item = &'a str>,
    ) -> Result<Self, InvalidTraceparent> {
        let mut context = Self::parse_traceparent(traceparent)?;
        context.state = TraceState::parse(tracestate).unwrap_or_default();
        Ok(context)
    }

    /// The context of a `traceparent` alone, read strictly.
    pub fn parse_traceparent(value: &str) -> Result<Self, InvalidTraceparent> {
        use InvalidTraceparent::{ForbiddenVersion, Malformed, ZeroParentId, ZeroTraceId};
        let text = value.as_bytes();
        if text.len() < TRACEPARENT_LEN {
            return Err(Malformed);
        }
        let version: [u8; 1] = lowercase_hex(&text[0..2]).ok_or(Malformed)?;
        if version == [0xff] {
            return Err(ForbiddenVersion);
        }
        // Version 00 is exactly its fields; a later one may add fields
        // after a dash.
        let exact = version == [0x00];
        if (exact && text.len() != TRACEPARENT_LEN)
            || (!exact && text.len() > TRACEPARENT_LEN && text[55] != b'-')
        {
            return Err(Malformed);
        }
        if text[2] != b'-' || text[35] != b'-' || text[52] != b'-' {
            return Err(Malformed);
        }
        let trace_id = lowercase_hex(&text[3..35]).ok_or(Malformed)?;
        let parent_id = lowercase_hex(&text[36..52]).ok_or(Malformed)?;
        let [flags] = lowercase_hex::<1>(&text[53..55]).ok_or(Malformed)?;
        Ok(Self {
            trace_id: TraceId::from_bytes(trace_id).ok_or(ZeroTraceId)?,
            parent_id: SpanId::from_bytes(parent_id).ok_or(ZeroParentId)?,
            sampled: flags & SAMPLED != 0,
            state: TraceState::default(),
        })
    }

    pub fn trace_id(&self) -> TraceId {
        self.trace_id
    }

    pub fn parent_id(&self) -> SpanId {
        self.parent_id
    }

    pub fn sampled(&self) -> bool {
        self.sampled
    }

    pub fn state(&self) -> &TraceState {
        &self.state
    }

    /// The same trace, continued from the span `parent_id`: what a call
    /// made from that span sends.
    pub fn child(&self, parent_id: SpanId) -> Self {
        Self {
            parent_id,
            ..self.clone()
        }
    }

    /// The `traceparent` header value (version 00).
    pub fn traceparent(&self) -> String {
        let flags = if self.sampled { SAMPLED } else { 0 };
        format!("{VERSION}-{}-{}-{flags:02x}", self.trace_id, self.parent_id)
    }

    /// The `tracestate` header value; `None` when there is no state.
    pub fn tracestate(&self) -> Option<String> {
        (!self.state.is_empty()).then(|| self.state.header())
    }
}

/// A trace context as a run record stores it: its two header values.
#[derive(Serialize, Deserialize)]
struct StoredTraceContext {
    traceparent: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    tracestate: String,
}

impl From<TraceContext> for StoredTraceContext {
    fn from(context: TraceContext) -> Self {
        Self {
            traceparent: context.traceparent(),
            tracestate: context.tracestate().unwrap_or_default(),
        }
    }
}

impl TryFrom<StoredTraceContext> for TraceContext {
    type Error = InvalidTraceparent;

    fn try_from(stored: StoredTraceContext) -> Result<Self, Self::Error> {
        Self::from_headers(&stored.traceparent, [stored.tracestate.as_str()])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const VALID: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    fn parse(value: &str) -> Result<TraceContext, InvalidTraceparent> {
        TraceContext::parse_traceparent(value)
    }

    fn state(values: &[&str]) -> Result<Vec<String>, InvalidTracestate> {
        TraceState::parse(values.iter().copied()).map(|state| state.members().to_vec())
    }

    #[test]
    fn a_valid_traceparent_reads_back_as_written() {
        let context = parse(VALID).expect("valid");
        assert_eq!(context.trace_id().to_string(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(context.parent_id().to_string(), "00f067aa0ba902b7");
        assert!(context.sampled());
        assert_eq!(context.traceparent(), VALID);
        let unsampled = parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00").unwrap();
        assert!(!unsampled.sampled());
        // Flags level 1 does not define are not passed on.
        let other_flags = parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-09").unwrap();
        assert!(other_flags.traceparent().ends_with("-01"));
    }

    #[test]
    fn malformed_traceparents_are_refused_with_their_reason() {
        use InvalidTraceparent::*;
        let cases = [
            ("", Malformed),
            ("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7", Malformed),
            (
                "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
                Malformed,
            ),
            (
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",
                Malformed,
            ),
            (
                "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                Malformed,
            ),
            (
                "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
                Malformed,
            ),
            (
                " 0-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                Malformed,
            ),
            (
                "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                ForbiddenVersion,
            ),
            (
                "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
                ZeroTraceId,
            ),
            (
                "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
                ZeroParentId,
            ),
        ];
        for (value, reason) in cases {
            assert_eq!(parse(value), Err(reason), "{value:?}");
        }
    }

    #[test]
    fn a_later_version_is_read_by_its_version_00_fields() {
        let later = parse("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-the-future-holds")
            .expect("a later version");
        assert_eq!(later.traceparent(), VALID);
        assert_eq!(
            parse("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x"),
            Err(InvalidTraceparent::Malformed)
        );
    }

    #[test]
    fn tracestate_keeps_its_members_in_order() {
        assert_eq!(
            state(&[
                "rojo=00f067aa0ba902b7, congo=t61rcWkgMzE",
                "",
                " tenant@vendor=a b\t,,"
            ])
            .unwrap(),
            ["rojo=00f067aa0ba902b7", "congo=t61rcWkgMzE", "tenant@vendor=a b"]
        );
        assert_eq!(state(&[]).unwrap(), Vec::<String>::new());
    }

    #[test]
    fn an_invalid_tracestate_is_refused_whole() {
        for value in [
            "Rojo=1",
            "rojo",
            "rojo=",
            "rojo=a=b",
            "1abc=x",
            "t@=x",
            "@v=x",
            "rojo=\u{e9}",
        ] {
            assert!(
                matches!(state(&[value]), Err(InvalidTracestate::Member(_))),
                "{value:?}"
            );
        }
        assert_eq!(
            state(&["rojo=1,congo=2", "rojo=3"]),
            Err(InvalidTracestate::DuplicateKey("rojo".into()))
        );
        let many: Vec<String> = (0..=MAX_TRACESTATE_MEMBERS).map(|i| format!("k{i}=v")).collect();
        assert_eq!(
            state(&[many.join(",").as_str()]),
            Err(InvalidTracestate::TooManyMembers)
        );
        let most = many[..MAX_TRACESTATE_MEMBERS].join(",");
        assert_eq!(state(&[most.as_str()]).unwrap().len(), MAX_TRACESTATE_MEMBERS);
    }

    #[test]
    fn a_long_tracestate_is_cut_long_members_first() {
        let long = format!("long={}", "x".repeat(200));
        let medium = |i: usize| format!("m{i}={}", "y".repeat(100));
        let mut members = vec![
            medium(0),
            long.clone(),
            medium(1),
            medium(2),
            medium(3),
            medium(4),
        ];
        let header = members.join(",");
        let kept = state(&[header.as_str()]).unwrap();
        members.retain(|member| *member != long);
        members.pop();
        assert_eq!(kept, members);
        assert!(joined_len(&kept) <= MAX_TRACESTATE_LEN);
    }

    #[test]
    fn a_child_continues_the_trace_from_another_span() {
        let context = TraceContext::from_headers(VALID, ["rojo=1"]).unwrap();
        let span = SpanId::from_bytes([1, 2, 3, 4, 5, 6, 7, 8]).unwrap();
        let child = context.child(span);
        assert_eq!(
            child.traceparent(),
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0102030405060708-01"
        );
        assert_eq!(child.tracestate().as_deref(), Some("rojo=1"));
        assert_ne!(SpanId::random(), SpanId::random());
    }

    #[test]
    fn an_invalid_tracestate_leaves_the_traceparent() {
        let context = TraceContext::from_headers(VALID, ["rojo=1,rojo=2"]).unwrap();
        assert_eq!(context.tracestate(), None);
        assert_eq!(context.traceparent(), VALID);
    }

    #[test]
    fn stored_it_reads_back_the_same() {
        let context = TraceContext::from_headers(VALID, ["rojo=1,congo=2"]).unwrap();
        let json = serde_json::to_string(&context).unwrap();
        assert_eq!(
            json,
            format!(r#"{{"traceparent":"{VALID}","tracestate":"rojo=1,congo=2"}}"#)
        );
        assert_eq!(serde_json::from_str::<TraceContext>(&json).unwrap(), context);
        let bare = parse(VALID).unwrap();
        assert_eq!(
            serde_json::to_string(&bare).unwrap(),
            format!(r#"{{"traceparent":"{VALID}"}}"#)
        );
        assert!(serde_json::from_str::<TraceContext>(r#"{"traceparent":"nope"}"#).is_err());
    }
}
