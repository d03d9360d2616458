//! Plain HTTP for the JSON surfaces (`/mcp`, `/ag-ui`, A2A's JSON
//! bindings): requests with a key, and a reader of server-sent events, so
//! that a test sees exactly what goes over the wire.

use serde_json::Value;

/// A POST of `body` as JSON to `url`, with `key` as its bearer and
/// `headers` besides.
pub(crate) async fn post(
    url: &str,
    key: Option<&str>,
    headers: &[(&str, &str)],
    body: &Value,
) -> reqwest::Response {
    let mut request = crate::helpers::http().post(url).json(body);
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.send().await.expect("the request is answered")
}

/// The events of a `text/event-stream` response, one at a time.
pub(crate) struct Events {
    response: reqwest::Response,
    buffer: String,
}

impl Events {
    pub(crate) fn of(response: reqwest::Response) -> Self {
        Self {
            response,
            buffer: String::new(),
        }
    }

    /// The next event's data, as JSON (events without data, such as
    /// priming ones, are skipped); `None` once the stream ends.
    pub(crate) async fn next(&mut self) -> Option<Value> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let event: String = self.buffer.drain(..end + 2).collect();
                let data: Vec<&str> = event
                    .lines()
                    .filter_map(|line| line.strip_prefix("data:"))
                    .map(str::trim_start)
                    .collect();
                let data = data.join("\n");
                if data.is_empty() {
                    continue;
                }
                return Some(serde_json::from_str(&data).unwrap_or_else(|_| panic!("JSON data: {data}")));
            }
            match self.response.chunk().await.expect("read the stream") {
                Some(bytes) => self.buffer.push_str(&String::from_utf8_lossy(&bytes)),
                None => return None,
            }
        }
    }

    /// The first event that `wanted` picks; panics if the stream ends first.
    pub(crate) async fn until(&mut self, wanted: impl Fn(&Value) -> bool) -> Value {
        while let Some(event) = self.next().await {
            if wanted(&event) {
                return event;
            }
        }
        panic!("the stream ended before the event wanted");
    }
}
