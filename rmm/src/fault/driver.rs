//! Driver faults: [`FaultPlan`]s, the [`DriverFaults`] guard that keeps one
//! in force, and the hook the driver layer asks before every raw call.
#![forbid(unsafe_code)]

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::ThreadId;

use super::{InjectedError, Trigger};

/// Which driver calls fail, when, and with what status.
///
/// ```
/// use rmm::fault::{FaultPlan, InjectedError, Trigger};
/// let plan = FaultPlan::call("cuEventRecord")
///     .trigger(Trigger::EveryNth(3))
///     .error(InjectedError::LaunchFailed)
///     .process_wide();
/// assert!(plan.selects("cuEventRecord") && !plan.selects("cuEventRecordWithFlags"));
/// assert!(FaultPlan::call("cuMemAlloc").selects("cuMemAlloc_v2"));
/// assert!(!FaultPlan::call("cuMemAlloc").selects("cuMemAllocManaged"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FaultPlan {
    call: Option<&'static str>,
    trigger: Trigger,
    error: Option<InjectedError>,
    process_wide: bool,
}

impl FaultPlan {
    /// Fails calls named `name` (or `name` + a `_v2`-style version suffix),
    /// every one of them until [`trigger`](Self::trigger) says otherwise.
    pub fn call(name: &'static str) -> Self {
        FaultPlan {
            call: Some(name),
            trigger: Trigger::Always,
            error: None,
            process_wide: false,
        }
    }

    /// Fails any driver call (pick which with a [`trigger`](Self::trigger)).
    pub fn any_call() -> Self {
        FaultPlan {
            call: None,
            ..FaultPlan::call("")
        }
    }

    /// Which of the selected calls fail (default [`Trigger::Always`]).
    pub fn trigger(mut self, trigger: Trigger) -> Self {
        self.trigger = trigger;
        self
    }

    /// The status returned (default: [`InjectedError::default_for`] the call).
    pub fn error(mut self, error: InjectedError) -> Self {
        self.error = Some(error);
        self
    }

    /// Applies to calls of every thread, not only the thread that injects.
    pub fn process_wide(mut self) -> Self {
        self.process_wide = true;
        self
    }

    /// Whether the plan selects the driver call `call` by name.
    pub fn selects(&self, call: &str) -> bool {
        self.call.is_none_or(|name| names_match(name, call))
    }
}

/// `name` or `name` + `_v<N>`.
fn names_match(name: &str, call: &str) -> bool {
    call.strip_prefix(name)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with("_v"))
}

/// One plan in force.
#[derive(Debug)]
struct Rule {
    plan: FaultPlan,
    thread: Option<ThreadId>,
    /// Selected calls seen (the trigger's index).
    seen: AtomicU64,
    /// Faults injected, by call name.
    injected: Mutex<BTreeMap<&'static str, u64>>,
}

/// Plans in force, newest last.
static RULES: Mutex<Vec<Arc<Rule>>> = Mutex::new(Vec::new());
/// `RULES.len()`, read without the lock on every driver call.
static ARMED: AtomicUsize = AtomicUsize::new(0);
/// Faults injected since the process started, by call name.
static INJECTED: Mutex<BTreeMap<&'static str, u64>> = Mutex::new(BTreeMap::new());

/// Locks ignoring poison: every holder leaves the maps consistent.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Faults injected into driver calls matching `call` (as
/// [`FaultPlan::selects`] matches names) since the process started, by
/// every plan of every thread.
pub fn injected_count(call: &str) -> u64 {
    lock(&INJECTED)
        .iter()
        .filter(|(name, _)| names_match(call, name))
        .map(|(_, n)| n)
        .sum()
}

/// The hook: the raw status to return instead of making the driver call
/// `call`, when a plan in force fails it.
pub(crate) fn driver_fault(call: &'static str) -> Option<InjectedError> {
    if ARMED.load(Ordering::Acquire) == 0 {
        return None;
    }
    let me = std::thread::current().id();
    let rules = lock(&RULES).clone();
    for rule in rules.iter().rev() {
        if !rule.plan.selects(call) || rule.thread.is_some_and(|t| t != me) {
            continue;
        }
        let index = rule.seen.fetch_add(1, Ordering::Relaxed) + 1;
        if rule.plan.trigger.fires(index) {
            *lock(&rule.injected).entry(call).or_default() += 1;
            *lock(&INJECTED).entry(call).or_default() += 1;
            let error = rule
                .plan
                .error
                .unwrap_or_else(|| InjectedError::default_for(call));
            log::debug!("fault injection: {call} fails with {}", error.name());
            return Some(error);
        }
    }
    None
}

/// Keeps a [`FaultPlan`] in force until dropped.
///
/// Thread safety: plans may be injected and dropped from any thread while
/// driver calls run on others.
#[derive(Debug)]
#[must_use = "the plan ends when the guard is dropped"]
pub struct DriverFaults {
    rule: Arc<Rule>,
}

impl DriverFaults {
    /// Puts `plan` in force (on this thread unless it is
    /// [`process_wide`](FaultPlan::process_wide)). Plans stack: the newest
    /// one that selects a call decides first.
    pub fn inject(plan: FaultPlan) -> Self {
        let thread = (!plan.process_wide).then(|| std::thread::current().id());
        let rule = Arc::new(Rule {
            plan,
            thread,
            seen: AtomicU64::new(0),
            injected: Mutex::new(BTreeMap::new()),
        });
        let mut rules = lock(&RULES);
        rules.push(Arc::clone(&rule));
        ARMED.store(rules.len(), Ordering::Release);
        DriverFaults { rule }
    }

    /// Faults this plan injected.
    pub fn injected(&self) -> u64 {
        lock(&self.rule.injected).values().sum()
    }

    /// Faults this plan injected into calls matching `call`.
    pub fn injected_into(&self, call: &str) -> u64 {
        lock(&self.rule.injected)
            .iter()
            .filter(|(name, _)| names_match(call, name))
            .map(|(_, n)| n)
            .sum()
    }

    /// Calls this plan selected (failed or not).
    pub fn seen(&self) -> u64 {
        self.rule.seen.load(Ordering::Relaxed)
    }
}

impl Drop for DriverFaults {
    fn drop(&mut self) {
        let mut rules = lock(&RULES);
        rules.retain(|r| !Arc::ptr_eq(r, &self.rule));
        ARMED.store(rules.len(), Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_select_count_and_end_with_their_guard() {
        // Names no real call has: parallel unit tests make real driver calls.
        let faults = DriverFaults::inject(FaultPlan::call("cuTestOnly").trigger(Trigger::EveryNth(2)));
        let got: Vec<_> = (0..4).map(|_| driver_fault("cuTestOnly_v2")).collect();
        assert_eq!(
            got,
            [
                None,
                Some(InjectedError::Unknown),
                None,
                Some(InjectedError::Unknown)
            ]
        );
        assert_eq!(driver_fault("cuTestOnlyOther"), None);
        assert_eq!(
            (
                faults.injected(),
                faults.injected_into("cuTestOnly"),
                faults.seen()
            ),
            (2, 2, 4)
        );
        assert!(injected_count("cuTestOnly") >= 2);
        // Another thread is not affected by a thread-scoped plan.
        std::thread::spawn(|| assert_eq!(driver_fault("cuTestOnly"), None))
            .join()
            .unwrap();
        drop(faults);
        assert_eq!(driver_fault("cuTestOnly"), None);
    }

    #[test]
    fn process_wide_plans_reach_other_threads_with_the_chosen_error() {
        let faults = DriverFaults::inject(
            FaultPlan::call("cuTestWide")
                .error(InjectedError::LaunchFailed)
                .process_wide(),
        );
        let other = std::thread::spawn(|| driver_fault("cuTestWide")).join().unwrap();
        assert_eq!(other, Some(InjectedError::LaunchFailed));
        assert_eq!(faults.injected(), 1);
    }
}
