//! Progress of long operations, for an application to show (the library draws nothing:
//! the `ferrocuda` command line turns these reports into progress bars on a terminal).
//!
//! A [`Progress`] is an optional observer, called with `(done, total)` in the
//! operation's unit (from the operation's thread, or from its worker threads where it
//! runs in parallel): ROCK4 reports thousandths of `[t0, t_end]`
//! after each step attempt (`progress` of [`crate::rock4::Rock4Options`]), multigrid cycles
//! (`progress` of [`crate::multigrid::MgOptions`]), generating a large matrix its block rows
//! ([`crate::sparse::generate::trace_like_with_progress`]). GMRES has its per-iteration
//! callback (`solve_with_progress`). An observer only watches: it cannot stop or change
//! the computation, and the results are the same bits with or without one.

use std::fmt;
use std::sync::Arc;

/// An optional progress observer (see the module docs); `Default` is none.
#[derive(Clone, Default)]
pub struct Progress(Option<Arc<dyn Fn(u64, u64) + Send + Sync>>);

impl Progress {
    /// No observer.
    pub fn none() -> Self {
        Progress(None)
    }

    /// `f(done, total)` after each unit of work.
    pub fn new(f: impl Fn(u64, u64) + Send + Sync + 'static) -> Self {
        Progress(Some(Arc::new(f)))
    }

    /// Whether an observer is set.
    pub fn is_some(&self) -> bool {
        self.0.is_some()
    }

    /// Tells the observer, if any, that `done` of `total` units are done.
    pub fn report(&self, done: u64, total: u64) {
        if let Some(f) = &self.0 {
            f(done.min(total), total);
        }
    }
}

impl fmt::Debug for Progress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.is_some() {
            "Progress(observer)"
        } else {
            "Progress(none)"
        })
    }
}

/// Observers do not take part in comparisons of options: two options that differ only
/// in their observer compute the same thing.
impl PartialEq for Progress {
    fn eq(&self, _: &Progress) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    #[test]
    fn reports_reach_the_observer_clamped_to_the_total() {
        let seen = Arc::new(AtomicU64::new(0));
        let s = seen.clone();
        let p = Progress::new(move |done, total| s.store(done * 100 + total, Ordering::Relaxed));
        p.report(7, 10);
        assert_eq!(seen.load(Ordering::Relaxed), 710);
        p.report(12, 10);
        assert_eq!(seen.load(Ordering::Relaxed), 1010);
        Progress::none().report(1, 2);
        assert_eq!(format!("{:?}", Progress::none()), "Progress(none)");
        assert_eq!(p, Progress::none());
    }
}
