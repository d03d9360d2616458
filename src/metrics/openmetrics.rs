//! The OpenMetrics 1.0.0 text format, written from the metric families the
//! registry gathers (the `prometheus` crate encodes only the Prometheus
//! text format). What differs from that format: a counter family is named
//! without its `_total` suffix in `# HELP` and `# TYPE` while its samples
//! keep it; `le` values are canonical numbers (`1.0`, `+Inf`); help text
//! escapes quotes too; timestamps are in seconds; the exposition ends with
//! `# EOF`.

use std::fmt::Write;

use prometheus::proto::{LabelPair, Metric, MetricFamily, MetricType};

/// The content type of an OpenMetrics exposition.
pub(super) const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

const COUNTER_SUFFIX: &str = "_total";

/// `families` in the OpenMetrics text format, `# EOF` included.
pub(super) fn encode(families: &[MetricFamily]) -> String {
    let mut text = String::new();
    for family in families {
        encode_family(&mut text, family);
    }
    text.push_str("# EOF\n");
    text
}

fn encode_family(text: &mut String, family: &MetricFamily) {
    let kind = family.get_field_type();
    let name = match kind {
        MetricType::COUNTER => family
            .name()
            .strip_suffix(COUNTER_SUFFIX)
            .unwrap_or(family.name()),
        _ => family.name(),
    };
    let type_name = match kind {
        MetricType::COUNTER => "counter",
        MetricType::GAUGE => "gauge",
        MetricType::HISTOGRAM => "histogram",
        MetricType::SUMMARY => "summary",
        MetricType::UNTYPED => "unknown",
    };
    let _ = writeln!(text, "# TYPE {name} {type_name}");
    if !family.help().is_empty() {
        let _ = writeln!(text, "# HELP {name} {}", escape(family.help()));
    }
    for metric in family.get_metric() {
        match kind {
            MetricType::COUNTER => {
                Sample::of(text, name, metric).write(COUNTER_SUFFIX, None, metric.get_counter().get_value())
            }
            MetricType::GAUGE => {
                Sample::of(text, name, metric).write("", None, metric.get_gauge().get_value())
            }
            // The crate makes no untyped metrics (its own text encoder
            // refuses them): the family is described, without samples.
            MetricType::UNTYPED => {}
            MetricType::HISTOGRAM => encode_histogram(text, name, metric),
            MetricType::SUMMARY => encode_summary(text, name, metric),
        }
    }
}

fn encode_histogram(text: &mut String, name: &str, metric: &Metric) {
    let histogram = metric.get_histogram();
    let mut infinite_seen = false;
    for bucket in histogram.get_bucket() {
        let bound = bucket.upper_bound();
        infinite_seen |= bound == f64::INFINITY;
        Sample::of(text, name, metric).write(
            "_bucket",
            Some(("le", &number(bound))),
            bucket.cumulative_count() as f64,
        );
    }
    let count = histogram.get_sample_count() as f64;
    if !infinite_seen {
        Sample::of(text, name, metric).write("_bucket", Some(("le", "+Inf")), count);
    }
    Sample::of(text, name, metric).write("_count", None, count);
    Sample::of(text, name, metric).write("_sum", None, histogram.get_sample_sum());
}

fn encode_summary(text: &mut String, name: &str, metric: &Metric) {
    let summary = metric.get_summary();
    for quantile in summary.get_quantile() {
        Sample::of(text, name, metric).write(
            "",
            Some(("quantile", &number(quantile.quantile()))),
            quantile.value(),
        );
    }
    Sample::of(text, name, metric).write("_count", None, summary.sample_count() as f64);
    Sample::of(text, name, metric).write("_sum", None, summary.sample_sum());
}

/// One line of a metric: `name<suffix>{labels} value [timestamp]`.
struct Sample<'a> {
    text: &'a mut String,
    name: &'a str,
    metric: &'a Metric,
}

impl<'a> Sample<'a> {
    fn of(text: &'a mut String, name: &'a str, metric: &'a Metric) -> Self {
        Self { text, name, metric }
    }

    fn write(self, suffix: &str, extra: Option<(&str, &str)>, value: f64) {
        let Sample { text, name, metric } = self;
        text.push_str(name);
        text.push_str(suffix);
        write_labels(text, metric.get_label(), extra);
        text.push(' ');
        text.push_str(&number(value));
        let millis = metric.timestamp_ms();
        if millis != 0 {
            let _ = write!(text, " {}", number(millis as f64 / 1000.0));
        }
        text.push('\n');
    }
}

fn write_labels(text: &mut String, labels: &[LabelPair], extra: Option<(&str, &str)>) {
    let pairs = labels.iter().map(|pair| (pair.name(), pair.value())).chain(extra);
    let mut first = true;
    for (label, value) in pairs {
        text.push(if first { '{' } else { ',' });
        first = false;
        let _ = write!(text, "{label}=\"{}\"", escape(value));
    }
    if !first {
        text.push('}');
    }
}

/// A number as OpenMetrics writes it: `+Inf`, `-Inf`, `NaN`, and a whole
/// number with `.0`, so that `le` and `quantile` values are canonical.
fn number(value: f64) -> String {
    if value.is_nan() {
        "NaN".to_owned()
    } else if value.is_infinite() {
        if value > 0.0 { "+Inf" } else { "-Inf" }.to_owned()
    } else if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{value:.1}")
    } else {
        value.to_string()
    }
}

/// A label value or help text with `\`, `"` and line feeds escaped.
fn escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' => escaped.push_str("\\\\"),
            '"' => escaped.push_str("\\\""),
            '\n' => escaped.push_str("\\n"),
            c => escaped.push(c),
        }
    }
    escaped
}

#[cfg(test)]
mod tests {
    use prometheus::{HistogramOpts, HistogramVec, IntCounterVec, IntGauge, Opts, Registry};

    use super::*;

    fn registry() -> Registry {
        let registry = Registry::new();
        let counter = IntCounterVec::new(
            Opts::new("agentd_runs_started_total", "Runs \"started\".\nBy agent."),
            &["agent"],
        )
        .unwrap();
        counter.with_label_values(&["a\"b\\c\nd"]).inc_by(3);
        let gauge = IntGauge::new("agentd_suspended_runs", "Runs suspended now.").unwrap();
        gauge.set(2);
        let histogram = HistogramVec::new(
            HistogramOpts::new("rpc_seconds", "Time.").buckets(vec![0.5, 1.0, 2.5]),
            &["rpc"],
        )
        .unwrap();
        histogram.with_label_values(&["resume"]).observe(0.75);
        histogram.with_label_values(&["resume"]).observe(10.0);
        registry.register(Box::new(counter)).unwrap();
        registry.register(Box::new(gauge)).unwrap();
        registry.register(Box::new(histogram)).unwrap();
        registry
    }

    #[test]
    fn follows_the_openmetrics_rules() {
        let text = encode(&registry().gather());
        let expected = "\
# TYPE agentd_runs_started counter
# HELP agentd_runs_started Runs \\\"started\\\".\\nBy agent.
agentd_runs_started_total{agent=\"a\\\"b\\\\c\\nd\"} 3.0
# TYPE agentd_suspended_runs gauge
# HELP agentd_suspended_runs Runs suspended now.
agentd_suspended_runs 2.0
# TYPE rpc_seconds histogram
# HELP rpc_seconds Time.
rpc_seconds_bucket{rpc=\"resume\",le=\"0.5\"} 0.0
rpc_seconds_bucket{rpc=\"resume\",le=\"1.0\"} 1.0
rpc_seconds_bucket{rpc=\"resume\",le=\"2.5\"} 1.0
rpc_seconds_bucket{rpc=\"resume\",le=\"+Inf\"} 2.0
rpc_seconds_count{rpc=\"resume\"} 2.0
rpc_seconds_sum{rpc=\"resume\"} 10.75
# EOF
";
        assert_eq!(text, expected);
    }

    #[test]
    fn every_line_is_a_descriptor_or_a_sample_of_its_family() {
        let text = encode(&registry().gather());
        assert!(text.ends_with("\n# EOF\n"), "{text}");
        assert_eq!(text.matches("# EOF").count(), 1);
        let mut family = String::new();
        for line in text.lines().filter(|line| *line != "# EOF") {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                family = rest.split(' ').next().unwrap().to_owned();
                continue;
            }
            if let Some(rest) = line.strip_prefix("# HELP ") {
                assert!(rest.starts_with(&format!("{family} ")), "{line}");
                continue;
            }
            assert!(line.starts_with(&family), "{line} outside {family}");
            assert!(!line.contains(" inf") && !line.ends_with(" inf"), "{line}");
        }
    }

    #[test]
    fn numbers_are_canonical() {
        assert_eq!(number(1.0), "1.0");
        assert_eq!(number(0.005), "0.005");
        assert_eq!(number(f64::INFINITY), "+Inf");
        assert_eq!(number(f64::NEG_INFINITY), "-Inf");
        assert_eq!(number(f64::NAN), "NaN");
        assert_eq!(number(1e20), "100000000000000000000");
    }
}
