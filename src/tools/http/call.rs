//! One call of an HTTP tool: the request (JSON body, or query parameters
//! for GET), the bounded read of the response body, the retries of an
//! idempotent tool, and the result the model sees. Redirects are followed
//! within the tool's origin only (the catalog's client): one to another
//! origin is an error result, and the headers never go there.

use std::time::Duration;

use reqwest::header::HeaderMap;
use serde_json::Value;

use super::{HttpMethod, HttpTool};
use crate::domain::ToolOutput;
use crate::outbound::redirects;

/// Characters of a failed response's body quoted in the error result.
const ERROR_EXCERPT_CHARS: usize = 200;
/// Wait before the first retry; doubled for each further one.
const FIRST_BACKOFF: Duration = Duration::from_millis(100);

/// A response read within the size limit.
struct Response {
    status: reqwest::StatusCode,
    body: String,
    truncated: bool,
}

/// How one attempt ended.
enum Attempt {
    Answered(Response),
    /// The server could not be reached: safe to retry.
    Unreachable(reqwest::Error),
    /// The request failed in another way (e.g. the body broke off).
    Failed(reqwest::Error),
    TimedOut,
}

impl Attempt {
    fn retryable(&self) -> bool {
        match self {
            Attempt::Answered(response) => response.status.is_server_error(),
            Attempt::Unreachable(_) => true,
            Attempt::Failed(_) | Attempt::TimedOut => false,
        }
    }
}

impl HttpTool {
    /// Calls the endpoint (retrying an idempotent tool) and turns the
    /// outcome into the result the model sees. Every attempt carries the
    /// trace context (`traceparent`, `tracestate`) of the work it is made
    /// for, after the configured headers.
    pub(super) async fn call(&self, args: &Value) -> ToolOutput {
        let mut headers = self.headers.clone();
        crate::propagation::insert_outgoing(&mut headers);
        let mut retry = 0;
        loop {
            let attempt = match tokio::time::timeout(self.timeout, self.attempt(args, &headers)).await {
                Ok(attempt) => attempt,
                Err(_) => Attempt::TimedOut,
            };
            if attempt.retryable() && retry < self.retries {
                retry += 1;
                tracing::debug!(tool = %self.spec.name, retry, "retrying an idempotent HTTP tool");
                tokio::time::sleep(FIRST_BACKOFF * 2u32.saturating_pow(retry - 1)).await;
                continue;
            }
            return self.output(attempt);
        }
    }

    async fn attempt(&self, args: &Value, headers: &HeaderMap) -> Attempt {
        let request = match self.method {
            HttpMethod::Get => {
                let mut url = self.url.clone();
                let pairs = query_pairs(args);
                if !pairs.is_empty() {
                    url.query_pairs_mut().extend_pairs(pairs);
                }
                self.client.get(url)
            }
            HttpMethod::Post => self.client.post(self.url.clone()).json(args),
            HttpMethod::Put => self.client.put(self.url.clone()).json(args),
            HttpMethod::Patch => self.client.patch(self.url.clone()).json(args),
            HttpMethod::Delete => self.client.delete(self.url.clone()).json(args),
        };
        let response = match request.headers(headers.clone()).send().await {
            Ok(response) => response,
            Err(error) if error.is_connect() => return Attempt::Unreachable(error),
            Err(error) => return Attempt::Failed(error),
        };
        match read_limited(response, self.max_response_bytes).await {
            Ok(response) => Attempt::Answered(response),
            Err(error) => Attempt::Failed(error),
        }
    }

    fn output(&self, attempt: Attempt) -> ToolOutput {
        let name = &self.spec.name;
        match attempt {
            Attempt::Answered(response) if response.status.is_success() => {
                let mut content = response.body;
                if response.truncated {
                    content.push_str(&format!(
                        "\n[truncated: the response is longer than {} bytes]",
                        self.max_response_bytes
                    ));
                }
                ToolOutput::ok(content)
            }
            Attempt::Answered(response) => {
                let excerpt = excerpt(&response.body);
                let status = response.status;
                ToolOutput::error(if excerpt.is_empty() {
                    format!("{name} failed: HTTP {status}")
                } else {
                    format!("{name} failed: HTTP {status}: {excerpt}")
                })
            }
            Attempt::TimedOut => ToolOutput::error(format!(
                "{name} failed: no response within {} ms (timed out)",
                self.timeout.as_millis()
            )),
            Attempt::Unreachable(error) => ToolOutput::error(format!(
                "{name} failed: the server could not be reached: {}",
                error.without_url()
            )),
            Attempt::Failed(error) => match redirects::refusal(&error) {
                Some(reason) => {
                    ToolOutput::error(format!("{name} failed: the redirect was refused: {reason}"))
                }
                None => ToolOutput::error(format!("{name} failed: {}", error.without_url())),
            },
        }
    }
}

/// The arguments as query parameters: strings as they are, numbers and
/// booleans as text, arrays and objects as JSON text; nulls left out.
fn query_pairs(args: &Value) -> Vec<(String, String)> {
    let Value::Object(map) = args else {
        return Vec::new();
    };
    map.iter()
        .filter_map(|(key, value)| {
            let text = match value {
                Value::Null => return None,
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            Some((key.clone(), text))
        })
        .collect()
}

/// Reads at most `limit` bytes of the body (stopping early, so a huge body
/// is never held in memory) and cuts it at a character boundary.
async fn read_limited(mut response: reqwest::Response, limit: usize) -> Result<Response, reqwest::Error> {
    let status = response.status();
    let mut bytes: Vec<u8> = Vec::new();
    let mut truncated = false;
    while let Some(chunk) = response.chunk().await? {
        bytes.extend_from_slice(&chunk);
        if bytes.len() > limit {
            truncated = true;
            break;
        }
    }
    if truncated {
        let mut cut = limit;
        // Back up over UTF-8 continuation bytes so no character is split.
        while cut > 0 && bytes.get(cut).is_some_and(|b| b & 0xC0 == 0x80) {
            cut -= 1;
        }
        bytes.truncate(cut);
    }
    Ok(Response {
        status,
        body: String::from_utf8_lossy(&bytes).into_owned(),
        truncated,
    })
}

/// The start of a failed response's body, on one line.
fn excerpt(body: &str) -> String {
    let flat: String = body.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= ERROR_EXCERPT_CHARS {
        flat
    } else {
        let cut: String = flat.chars().take(ERROR_EXCERPT_CHARS).collect();
        format!("{cut}…")
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn query_pairs_flatten_scalars_and_encode_the_rest() {
        let pairs =
            query_pairs(&json!({"city": "Oslo", "days": 3, "metric": true, "tags": ["a"], "none": null}));
        assert_eq!(
            pairs,
            [
                ("city".to_owned(), "Oslo".to_owned()),
                ("days".to_owned(), "3".to_owned()),
                ("metric".to_owned(), "true".to_owned()),
                ("tags".to_owned(), r#"["a"]"#.to_owned()),
            ]
        );
    }

    #[test]
    fn excerpts_are_short_and_on_one_line() {
        assert_eq!(excerpt("  upstream\n  broke \n"), "upstream broke");
        let long = "x".repeat(500);
        assert_eq!(excerpt(&long).chars().count(), ERROR_EXCERPT_CHARS + 1);
    }
}
