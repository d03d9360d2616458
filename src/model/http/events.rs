//! Turns a streaming HTTP response into a model stream: body chunks go
//! through the SSE parser into a provider's decoder, and the decoder's
//! events come out. The body must not stay silent longer than the idle
//! timeout. Dropping the stream drops the response, which aborts the
//! request. Nothing here retries: once a byte was read, a failure is final.

use std::collections::VecDeque;
use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;
use futures_util::stream::{self, Stream, StreamExt};
use reqwest::Response;

use super::{chain, secs};
use crate::model::sse::{SseEvent, SseParser};
use crate::model::{ModelError, ModelErrorCode, ModelEvent, ModelStream};

/// A provider's reading of its event stream.
pub(crate) trait StreamDecoder: Send + 'static {
    /// Handles one event, adding the model events it completes to `out`.
    fn event(&mut self, event: SseEvent, out: &mut Vec<ModelEvent>) -> Result<(), ModelError>;

    /// Whether the provider said the stream is complete.
    fn is_done(&self) -> bool;

    /// The stream is over (done, or the body ended): adds the last events
    /// (tool calls not yet given, usage), or fails a truncated stream.
    fn end(&mut self, out: &mut Vec<ModelEvent>) -> Result<(), ModelError>;
}

type Body = Pin<Box<dyn Stream<Item = reqwest::Result<Bytes>> + Send>>;

struct Decoding<D> {
    provider: String,
    body: Option<Body>,
    parser: SseParser,
    decoder: D,
    idle: Duration,
    ready: VecDeque<Result<ModelEvent, ModelError>>,
}

impl<D: StreamDecoder> Decoding<D> {
    /// Reads the next chunk of the body and decodes what it completes.
    async fn read(&mut self) {
        let Some(body) = self.body.as_mut() else {
            return;
        };
        match tokio::time::timeout(self.idle, body.next()).await {
            Err(_) => self.fail(ModelError::new(
                ModelErrorCode::Timeout,
                format!("{} sent nothing for {}", self.provider, secs(self.idle)),
            )),
            Ok(Some(Err(error))) => self.fail(ModelError::new(
                ModelErrorCode::Connection,
                format!("the stream from {} broke: {}", self.provider, chain(&error)),
            )),
            Ok(Some(Ok(bytes))) => {
                for event in self.parser.push(&bytes) {
                    self.handle(event);
                    if self.body.is_none() {
                        return;
                    }
                }
            }
            Ok(None) => {
                if let Some(event) = self.parser.finish() {
                    self.handle(event);
                }
                if self.body.is_some() {
                    self.end();
                }
            }
        }
    }

    fn handle(&mut self, event: SseEvent) {
        let mut out = Vec::new();
        let result = self.decoder.event(event, &mut out);
        self.ready.extend(out.into_iter().map(Ok));
        match result {
            Err(error) => self.fail(error),
            Ok(()) if self.decoder.is_done() => self.end(),
            Ok(()) => {}
        }
    }

    /// Closes the stream with the decoder's last events.
    fn end(&mut self) {
        let mut out = Vec::new();
        let result = self.decoder.end(&mut out);
        self.ready.extend(out.into_iter().map(Ok));
        match result {
            Err(error) => self.fail(error),
            Ok(()) => self.body = None,
        }
    }

    /// Ends the stream with `error`; the connection is dropped.
    fn fail(&mut self, error: ModelError) {
        self.ready.push_back(Err(error));
        self.body = None;
    }
}

/// The model stream of a successful streaming response.
pub(super) fn decode<D: StreamDecoder>(
    provider: &str,
    response: Response,
    decoder: D,
    idle: Duration,
) -> ModelStream {
    let state = Decoding {
        provider: provider.to_owned(),
        body: Some(Box::pin(response.bytes_stream())),
        parser: SseParser::new(),
        decoder,
        idle,
        ready: VecDeque::new(),
    };
    Box::pin(stream::unfold(state, |mut state| async move {
        loop {
            if let Some(item) = state.ready.pop_front() {
                return Some((item, state));
            }
            state.body.as_ref()?;
            state.read().await;
        }
    }))
}

/// Runs `data` (the data of each event, in order) through `decoder` and
/// ends it: the events a response with those events gives.
#[cfg(test)]
pub(crate) fn decode_events<D: StreamDecoder>(
    mut decoder: D,
    data: &[&str],
) -> Result<Vec<ModelEvent>, ModelError> {
    let mut out = Vec::new();
    for data in data {
        let event = SseEvent {
            data: (*data).to_owned(),
            ..SseEvent::default()
        };
        decoder.event(event, &mut out)?;
    }
    decoder.end(&mut out)?;
    Ok(out)
}
