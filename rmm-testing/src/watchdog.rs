//! A stall watchdog for multi-threaded tests: each worker thread reports
//! progress through its [`Progress`] handle; when any of them makes none for
//! the watchdog's limit, the watchdog prints what every thread was doing,
//! every thread's stack (through elfutils' `eu-stack` when `RMM_EU_STACK`
//! names it) and aborts the process, so a stall fails loudly with evidence
//! instead of hanging a test run.
//!
//! ```
//! use std::time::Duration;
//! use rmm_testing::Watchdog;
//! let dog = Watchdog::new("example", Duration::from_secs(10));
//! std::thread::scope(|s| {
//!     for t in 0..4 {
//!         let p = dog.progress(format!("worker {t}"));
//!         s.spawn(move || {
//!             for _ in 0..100 {
//!                 p.doing("some work");
//!                 p.tick();
//!             }
//!         });
//!     }
//! });
//! dog.stop();
//! ```
#![forbid(unsafe_code)]

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

#[derive(Debug)]
struct Slot {
    label: String,
    count: AtomicU64,
    doing: Mutex<&'static str>,
    done: AtomicBool,
}

#[derive(Debug)]
struct Shared {
    name: String,
    limit: Duration,
    slots: Mutex<Vec<Arc<Slot>>>,
    stop: AtomicBool,
}

/// Watches the [`Progress`] of worker threads; see the module docs.
#[derive(Debug)]
pub struct Watchdog {
    shared: Arc<Shared>,
    monitor: Option<JoinHandle<()>>,
}

/// One worker's progress counter. Dropping it marks the worker finished.
#[derive(Debug)]
pub struct Progress(Arc<Slot>);

impl Progress {
    /// Counts one unit of progress.
    pub fn tick(&self) {
        self.0.count.fetch_add(1, Ordering::Relaxed);
    }

    /// Names what the thread does now (shown in a stall report).
    pub fn doing(&self, what: &'static str) {
        *self.0.doing.lock().unwrap_or_else(|e| e.into_inner()) = what;
    }

    /// Progress so far.
    pub fn count(&self) -> u64 {
        self.0.count.load(Ordering::Relaxed)
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.0.done.store(true, Ordering::Relaxed);
    }
}

impl Watchdog {
    /// Starts watching; a worker without progress for `limit` aborts the
    /// process after the report.
    pub fn new(name: impl Into<String>, limit: Duration) -> Watchdog {
        let shared = Arc::new(Shared {
            name: name.into(),
            limit,
            slots: Mutex::new(Vec::new()),
            stop: AtomicBool::new(false),
        });
        let watched = shared.clone();
        let monitor = std::thread::Builder::new()
            .name("rmm-watchdog".into())
            .spawn(move || watch(&watched))
            .expect("spawn the watchdog thread");
        Watchdog {
            shared,
            monitor: Some(monitor),
        }
    }

    /// A progress handle for one worker, watched from now on.
    pub fn progress(&self, label: impl Into<String>) -> Progress {
        let slot = Arc::new(Slot {
            label: label.into(),
            count: AtomicU64::new(0),
            doing: Mutex::new("starting"),
            done: AtomicBool::new(false),
        });
        self.shared
            .slots
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(slot.clone());
        Progress(slot)
    }

    /// Stops watching and joins the watchdog thread.
    pub fn stop(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(m) = self.monitor.take() {
            let _ = m.join();
        }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.halt();
    }
}

fn watch(shared: &Shared) {
    // Per slot: last count seen and when it last changed.
    let mut seen: Vec<(u64, Instant)> = Vec::new();
    while !shared.stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(200));
        let slots = shared.slots.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let now = Instant::now();
        seen.resize(slots.len(), (u64::MAX, now));
        let mut stalled = false;
        for (slot, (last, since)) in slots.iter().zip(seen.iter_mut()) {
            let c = slot.count.load(Ordering::Relaxed);
            if c != *last {
                *last = c;
                *since = now;
            } else if !slot.done.load(Ordering::Relaxed) && now - *since >= shared.limit {
                stalled = true;
            }
        }
        if stalled {
            report(shared, &slots, &seen, now);
            std::process::abort();
        }
    }
}

fn report(shared: &Shared, slots: &[Arc<Slot>], seen: &[(u64, Instant)], now: Instant) {
    eprintln!(
        "WATCHDOG {}: a thread made no progress for {:?}; every worker:",
        shared.name, shared.limit
    );
    for (slot, (count, since)) in slots.iter().zip(seen) {
        let doing = *slot.doing.lock().unwrap_or_else(|e| e.into_inner());
        let state = if slot.done.load(Ordering::Relaxed) {
            "finished"
        } else {
            doing
        };
        eprintln!(
            "  {:<24} progress {:>8}  idle {:>5.1}s  {}",
            slot.label,
            count,
            (now - *since).as_secs_f64(),
            state
        );
    }
    match crate::env::eu_stack() {
        Some(tool) => {
            let dir = std::path::Path::new(&tool)
                .parent()
                .map(|d| d.to_path_buf())
                .unwrap_or_default();
            let out = std::process::Command::new(&tool)
                .env("LD_LIBRARY_PATH", dir)
                .args(["-p", &std::process::id().to_string()])
                .output();
            match out {
                Ok(o) => {
                    eprintln!("WATCHDOG thread dump ({}):", tool.to_string_lossy());
                    eprintln!("{}", String::from_utf8_lossy(&o.stdout));
                    eprintln!("{}", String::from_utf8_lossy(&o.stderr));
                }
                Err(e) => eprintln!("WATCHDOG: could not run {}: {e}", tool.to_string_lossy()),
            }
        }
        None => eprintln!(
            "WATCHDOG: set {} to an eu-stack binary for thread dumps",
            crate::env::EU_STACK
        ),
    }
}
