//! Progress bars on stderr for long runs: the benchmarks' loops over cases and sizes,
//! generating large matrices, long solves (`ferrocuda solve`, `rock4`, `mg`).
//!
//! Bars are drawn (with `indicatif`) only where stderr is a terminal, and never once
//! [`set_enabled`] turned them off (the command line does for `--quiet` and `--json`).
//! Everywhere else a bar is [`ProgressBar::hidden`]: nothing is written, to stderr or
//! stdout, so pipes, files, tests and JSON see no trace of them. The library draws
//! nothing; its long operations report through [`ferrocuda::progress::Progress`], which
//! [`observer`] turns into a bar.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};

use ferrocuda::sparse::Bcsr;
use ferrocuda::sparse::generate::{TraceSpec, trace_like_with_progress};
pub use indicatif::ProgressBar;
use indicatif::{ProgressDrawTarget, ProgressStyle};

static ENABLED: AtomicBool = AtomicBool::new(true);

/// Turns bars on (the default, where stderr is a terminal) or off for the rest of the
/// process.
pub fn set_enabled(on: bool) {
    ENABLED.store(on, Ordering::Relaxed);
}

/// Whether bars are drawn: not turned off, and stderr is a terminal.
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed) && std::io::stderr().is_terminal()
}

/// A bar of `len` steps labelled `what` (e.g. `bench lu`), hidden where bars are off.
pub fn bar(len: u64, what: &str) -> ProgressBar {
    if !enabled() {
        return ProgressBar::hidden();
    }
    // ProgressDrawTarget::stderr also draws nothing where stderr is not a terminal.
    let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
    let style = ProgressStyle::with_template(
        "{prefix:.bold} [{bar:32}] {pos}/{len} {wide_msg} {elapsed_precise}",
    )
    .map(|s| s.progress_chars("=> "))
    .unwrap_or_else(|_| ProgressStyle::default_bar());
    bar.set_style(style);
    bar.set_prefix(what.to_string());
    bar
}

/// A bar cleared from the terminal when dropped (also on an early return with an error).
pub struct Cleared(pub ProgressBar);

impl Drop for Cleared {
    fn drop(&mut self) {
        self.0.finish_and_clear();
    }
}

impl std::ops::Deref for Cleared {
    type Target = ProgressBar;
    fn deref(&self) -> &ProgressBar {
        &self.0
    }
}

/// A bar over the steps of a benchmark's loops: [`Steps::next`] at the start of each
/// step; cleared when dropped (also on an early return with an error).
pub struct Steps {
    bar: ProgressBar,
    started: bool,
}

impl Steps {
    /// Counts the step before as done and shows `what` as the current one.
    pub fn next(&mut self, what: impl Into<std::borrow::Cow<'static, str>>) {
        if self.started {
            self.bar.inc(1);
        }
        self.started = true;
        self.bar.set_message(what);
    }
}

impl Drop for Steps {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}

/// [`Steps`] of `total` steps labelled `what` (e.g. `bench lu`).
pub fn steps(what: &str, total: usize) -> Steps {
    Steps {
        bar: bar(total as u64, what),
        started: false,
    }
}

/// A library progress observer that moves `bar` (its length follows the reports).
pub fn observer(bar: &ProgressBar) -> ferrocuda::progress::Progress {
    if bar.is_hidden() {
        return ferrocuda::progress::Progress::none();
    }
    let bar = bar.clone();
    ferrocuda::progress::Progress::new(move |done, total| {
        if bar.length() != Some(total) {
            bar.set_length(total);
        }
        bar.set_position(done);
    })
}

/// Runs `f` for each item of `items` under a bar labelled `what` (one step per item,
/// with `label(item)` as the message), and clears the bar at the end.
pub fn each<T, R>(
    what: &str,
    items: impl IntoIterator<Item = T, IntoIter: ExactSizeIterator>,
    label: impl Fn(&T) -> String,
    mut f: impl FnMut(T) -> R,
) -> Vec<R> {
    let items = items.into_iter();
    let bar = bar(items.len() as u64, what);
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        bar.set_message(label(&item));
        out.push(f(item));
        bar.inc(1);
    }
    bar.finish_and_clear();
    out
}

/// [`ferrocuda::sparse::generate::trace_like`] under a bar of the block rows filled.
pub fn generate<T: ferrocuda::sparse::Element>(
    spec: &TraceSpec,
) -> Result<Bcsr<T>, ferrocuda::sparse::SparseError> {
    let bar = bar(spec.block_rows() as u64, "generating");
    bar.set_message(format!(
        "{} x {} x {} cells x {} grid blocks",
        spec.nx, spec.ntheta, spec.nr, spec.grid_blocks
    ));
    let a = trace_like_with_progress(spec, &observer(&bar));
    bar.finish_and_clear();
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn off_means_hidden_bars_and_no_observer() {
        set_enabled(false);
        let b = bar(10, "test");
        assert!(b.is_hidden());
        assert!(!observer(&b).is_some());
        let squares = each("test", [1, 2, 3], |i| format!("{i}"), |i| i * i);
        assert_eq!(squares, vec![1, 4, 9]);
        set_enabled(true);
    }
}
