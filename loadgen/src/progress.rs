//! A progress line on stderr while a phase runs.

use std::io::IsTerminal as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::task::JoinHandle;

/// A progress line on stderr, refreshed every second while a phase runs.
pub(crate) struct Progress {
    pub(crate) done: Arc<AtomicU64>,
    task: JoinHandle<()>,
    tty: bool,
}

impl Progress {
    pub(crate) fn start(label: &str, total: u64) -> Self {
        let done = Arc::new(AtomicU64::new(0));
        let tty = std::io::stderr().is_terminal();
        let counter = done.clone();
        let label = label.to_string();
        let started = Instant::now();
        let task = tokio::spawn(async move {
            let mut ticks = tokio::time::interval(Duration::from_secs(1));
            ticks.tick().await;
            loop {
                ticks.tick().await;
                let line = format!(
                    "{label}: {}/{total} after {:.0} s",
                    counter.load(Ordering::Relaxed),
                    started.elapsed().as_secs_f64()
                );
                if tty {
                    eprint!("\r\x1b[2K{line}");
                } else {
                    eprintln!("{line}");
                }
            }
        });
        Progress { done, task, tty }
    }

    pub(crate) fn finish(self) {
        self.task.abort();
        if self.tty {
            eprint!("\r\x1b[2K");
        }
    }
}
