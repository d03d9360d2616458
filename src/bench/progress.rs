//! Progress bars on stderr (drawn only when stderr is a terminal, so the
//! report on stdout and `--json` stay clean).

use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

const TICK: Duration = Duration::from_millis(100);

fn bar(label: &str, length: u64, template: &str) -> ProgressBar {
    let bar = ProgressBar::new(length).with_prefix(label.to_owned());
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.enable_steady_tick(TICK);
    bar
}

/// A bar that fills over `total` time; the caller sets the position in
/// milliseconds and a message with the running figures.
pub(super) fn timed(label: &str, total: Duration) -> ProgressBar {
    let millis = u64::try_from(total.as_millis()).unwrap_or(u64::MAX).max(1);
    bar(label, millis, "{prefix:>24} [{bar:30}] {elapsed:>4} {msg}")
}

/// A bar that fills as `total` things get done.
pub(super) fn counted(label: &str, total: u64) -> ProgressBar {
    bar(
        label,
        total,
        "{prefix:>24} [{bar:30}] {pos}/{len} {per_sec} {msg}",
    )
}

/// A spinner with a running count, for work of unknown length.
pub(super) fn spinner(label: &str) -> ProgressBar {
    bar(label, 0, "{prefix:>24} {spinner} {msg}")
}
