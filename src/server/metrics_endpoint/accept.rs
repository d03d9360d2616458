//! Content negotiation for a scrape: OpenMetrics 1.0.0 when the `Accept`
//! header prefers it to the Prometheus text format, as Prometheus's own
//! scrapes do (`application/openmetrics-text;version=1.0.0;q=0.5,...,
//! text/plain;version=0.0.4;q=0.3,*/*;q=0.2`); the Prometheus text format
//! otherwise, also when the header names neither, so that any client gets
//! an answer it can read.

use mime::Mime;

use crate::metrics::Format;

/// The format to answer an `Accept` header with (`None`: no header).
pub(super) fn negotiate(accept: Option<&str>) -> Format {
    let Some(accept) = accept else {
        return Format::Prometheus;
    };
    let ranges: Vec<Mime> = accept
        .split(',')
        .filter_map(|range| range.trim().parse().ok())
        .collect();
    let openmetrics = ranges
        .iter()
        .filter(|range| is_openmetrics_1(range))
        .map(quality)
        .fold(None, |best: Option<f32>, q| {
            Some(best.map_or(q, |best| best.max(q)))
        });
    match openmetrics {
        Some(q) if q > 0.0 && q >= text_quality(&ranges) => Format::OpenMetrics,
        _ => Format::Prometheus,
    }
}

/// `application/openmetrics-text` of version 1.0.0, or of no version.
fn is_openmetrics_1(range: &Mime) -> bool {
    range.type_() == mime::APPLICATION
        && range.subtype() == "openmetrics-text"
        && range
            .get_param("version")
            .is_none_or(|version| version == "1.0.0")
}

/// The quality the most specific range matching `text/plain` (of version
/// 0.0.4, or of none) gives it; 0 when none matches.
fn text_quality(ranges: &[Mime]) -> f32 {
    let specificity = |range: &Mime| {
        let version_fits = range
            .get_param("version")
            .is_none_or(|version| version == "0.0.4");
        match (range.type_(), range.subtype()) {
            (mime::TEXT, mime::PLAIN) if version_fits => Some(2),
            (mime::TEXT, mime::STAR) => Some(1),
            (mime::STAR, mime::STAR) => Some(0),
            _ => None,
        }
    };
    ranges
        .iter()
        .filter_map(|range| Some((specificity(range)?, quality(range))))
        .max_by(|(a, qa), (b, qb)| a.cmp(b).then(qa.total_cmp(qb)))
        .map_or(0.0, |(_, q)| q)
}

/// A range's `q` parameter; 1 when it has none or an unreadable one.
fn quality(range: &Mime) -> f32 {
    range
        .get_param("q")
        .and_then(|q| q.as_str().parse::<f32>().ok())
        .filter(|q| (0.0..=1.0).contains(q))
        .unwrap_or(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prometheus_scrapes_get_openmetrics() {
        let header = "application/openmetrics-text;version=1.0.0;q=0.5,application/openmetrics-text;version=0.0.1;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2";
        assert_eq!(negotiate(Some(header)), Format::OpenMetrics);
        assert_eq!(
            negotiate(Some("application/openmetrics-text")),
            Format::OpenMetrics
        );
        assert_eq!(
            negotiate(Some(
                "text/plain;q=0.1, application/openmetrics-text; version=1.0.0"
            )),
            Format::OpenMetrics
        );
    }

    #[test]
    fn anything_else_gets_the_text_format() {
        for header in [
            None,
            Some("*/*"),
            Some("text/plain"),
            Some("application/json"),
            Some("not a media type"),
            Some("application/openmetrics-text;version=0.0.1"),
            Some("application/openmetrics-text;q=0"),
            Some("application/openmetrics-text;q=0.2, text/plain;q=0.9"),
        ] {
            assert_eq!(negotiate(header), Format::Prometheus, "{header:?}");
        }
    }
}
