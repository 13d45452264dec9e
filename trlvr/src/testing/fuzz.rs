//! Fuzzing on stable Rust: real files, mutated byte by byte by proptest, fed to a parser
//! that must answer every input with a value or an error, never a panic, a hang or a
//! huge allocation.
//!
//! cargo-fuzz needs a nightly compiler that CI cannot be relied on to install; this kit
//! needs nothing beyond `cargo test`. Proptest draws mutation lists (bit flips, special
//! bytes and words, truncations, removals, insertions of format tokens, copies, splices of
//! another seed) and shrinks a failing list to a short one. Each target runs for a time
//! budget, `TRLVR_FUZZ_SECS` seconds (default 2), from the stream `TRLVR_FUZZ_SEED`
//! (default 0): CI passes a fresh seed and a longer budget, and prints both.
//!
//! ```no_run
//! use trlvr::testing::fuzz::{Target, fuzz};
//! let seeds = vec![br#"{"question": "1+1?", "answer": "2"}"#.to_vec()];
//! fuzz(Target::new("json", seeds), |bytes| {
//!     let _ = serde_json::from_slice::<serde_json::Value>(bytes);
//!     Ok(())
//! });
//! ```
//!
//! Test binaries that fuzz install [`AllocationGuard`] as their global allocator, so the
//! largest single allocation of each input is measured (and one above 1 GiB is refused,
//! with a message, before it can take the machine down).
//!
//! Here the runner; a target and its mutations are in `fuzz/target.rs`, the allocator in
//! `fuzz/allocation.rs`.

mod allocation;
mod target;

use std::cell::Cell;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

pub use allocation::AllocationGuard;
use allocation::{REFUSED, SAVED, largest, reset_largest};
pub use target::Target;
use target::{Mutation, mutation};

/// What one run of a target did.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// Inputs tried (seeds included).
    pub inputs: usize,
    /// Wall time spent.
    pub elapsed: Duration,
    /// The largest single allocation any input made on the fuzzing thread.
    pub largest_allocation: usize,
}
fn budget() -> Duration {
    let secs = std::env::var("TRLVR_FUZZ_SECS").ok().and_then(|s| s.parse::<f64>().ok()).unwrap_or(2.0);
    Duration::from_secs_f64(secs.max(0.0))
}

fn seed() -> u64 {
    std::env::var("TRLVR_FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0)
}

thread_local! {
    static FUZZING: Cell<bool> = const { Cell::new(false) };
    /// Where the last panic of an input being fuzzed was raised.
    static PANICKED_AT: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

/// Feeds `target`'s seeds and then mutations of them to `check` for the time budget.
/// `check` returns `Err` for a wrong answer (an error that does not name the file, say);
/// a panic, or a run or an allocation over the target's limits, fails too.
///
/// # Panics
/// On the first failing input, after shrinking its mutation list, with the seed to
/// reproduce it.
pub fn fuzz(target: Target, check: impl Fn(&[u8]) -> Result<(), String>) -> Report {
    install_quiet_panic_hook();
    let started = Instant::now();
    let deadline = started + budget();
    let seed = seed();
    let current: Arc<Mutex<(Instant, Vec<u8>, bool)>> =
        Arc::new(Mutex::new((Instant::now(), Vec::new(), true)));
    let watchdog = spawn_watchdog(&target.name, target.slow * 10, current.clone());
    let run = |bytes: &[u8]| run_input(&target, &current, &check, bytes);
    let mut largest_seen = 0;
    let mut inputs = 0;
    for (i, s) in target.seeds.iter().enumerate() {
        inputs += 1;
        if let Some(why) = run(s) {
            fail(&target, seed, s, format!("seed {i} fails: {why}"), "none");
        }
        largest_seen = largest_seen.max(largest());
    }
    let mut runner = mutation_runner(&target, seed);
    let strategy = (any::<Index>(), proptest::collection::vec(mutation(), 1..=6));
    let input = |drawn: &(Index, Vec<Mutation>)| mutated(&target, drawn);
    while Instant::now() < deadline {
        let mut tree = strategy.new_tree(&mut runner).expect("the mutation strategy never rejects");
        let bytes = input(&tree.current());
        inputs += 1;
        let Some(why) = run(&bytes) else {
            largest_seen = largest_seen.max(largest());
            continue;
        };
        let (failing, why) = shrink(&mut tree, why, run, input);
        drop(watchdog);
        fail(&target, seed, &input(&failing), why, &format!("{:?}", failing.1));
    }
    drop(watchdog);
    let report = Report { inputs, elapsed: started.elapsed(), largest_allocation: largest_seen };
    print_summary(&target, seed, &report);
    report
}

/// Runs `check` on one input under the watchdog's eye; why it fails, if it does: a wrong
/// answer, a panic, a run over the time limit or an allocation over the size limit.
fn run_input(
    target: &Target,
    current: &Mutex<(Instant, Vec<u8>, bool)>,
    check: &impl Fn(&[u8]) -> Result<(), String>,
    bytes: &[u8],
) -> Option<String> {
    {
        let mut c = current.lock().expect("watchdog lock");
        *c = (Instant::now(), bytes.to_vec(), false);
    }
    reset_largest();
    let t = Instant::now();
    FUZZING.with(|f| f.set(true));
    let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| check(bytes)));
    FUZZING.with(|f| f.set(false));
    let took = t.elapsed();
    current.lock().expect("watchdog lock").2 = true;
    let failure = match outcome {
        Ok(Ok(())) => None,
        Ok(Err(message)) => Some(message),
        Err(panic) => {
            let at = PANICKED_AT.with(|p| p.borrow().clone());
            Some(format!("panicked at {at}: {}", panic_text(&panic)))
        }
    };
    failure.or_else(|| (took > target.slow).then(|| format!("took {:.3} s", took.as_secs_f64()))).or_else(
        || {
            let big = largest();
            (big > target.allocation_limit).then(|| {
                format!("allocated {} MiB at once (limit {} MiB)", big >> 20, target.allocation_limit >> 20)
            })
        },
    )
}

/// Saves a failing input to the temporary directory and panics with why it failed, its
/// mutations and the seed that reproduces it.
fn fail(target: &Target, seed: u64, bytes: &[u8], why: String, mutations: &str) -> ! {
    let path = std::env::temp_dir().join(format!("trlvr-fuzz-{}-{seed}.bin", target.name));
    let _ = std::fs::write(&path, bytes);
    panic!(
        "fuzz {}: {why}\n  input ({} bytes) saved to {}\n  mutations: {mutations}\n  reproduce with TRLVR_FUZZ_SEED={seed}",
        target.name,
        bytes.len(),
        path.display()
    );
}

/// Proptest's runner for `target`'s mutations: its stream seeded by `seed` and the
/// target's name (two targets under one seed draw apart), no failure files.
fn mutation_runner(target: &Target, seed: u64) -> TestRunner {
    let config = Config { failure_persistence: None, ..Config::default() };
    let mut rng_seed = [0u8; 32];
    rng_seed[..8].copy_from_slice(&seed.to_le_bytes());
    rng_seed[8..16].copy_from_slice(&xxhash_rust::xxh3::xxh3_64(target.name.as_bytes()).to_le_bytes());
    TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &rng_seed))
}

/// The input a draw stands for: the seed it picks, its mutations applied in order.
fn mutated(target: &Target, (seed, mutations): &(Index, Vec<Mutation>)) -> Vec<u8> {
    let mut bytes = seed.get(&target.seeds).clone();
    for m in mutations {
        m.apply(&mut bytes, target);
    }
    bytes
}

/// Shrinks a failing draw: the shortest, simplest mutation list that still fails, and
/// why it fails.
fn shrink(
    tree: &mut impl ValueTree<Value = (Index, Vec<Mutation>)>,
    mut why: String,
    run: impl Fn(&[u8]) -> Option<String>,
    input: impl Fn(&(Index, Vec<Mutation>)) -> Vec<u8>,
) -> ((Index, Vec<Mutation>), String) {
    let mut failing = tree.current();
    for _ in 0..1024 {
        if !tree.simplify() {
            break;
        }
        match run(&input(&tree.current())) {
            Some(w) => {
                why = w;
                failing = tree.current();
            }
            None => {
                if !tree.complicate() {
                    break;
                }
            }
        }
    }
    (failing, why)
}

/// The line a run without failure ends with: inputs, time, seed, largest allocation.
fn print_summary(target: &Target, seed: u64, report: &Report) {
    eprintln!(
        "fuzz {}: {} inputs in {:.1} s (seed {seed}), no failure; largest allocation {} KiB",
        target.name,
        report.inputs,
        report.elapsed.as_secs_f64(),
        report.largest_allocation.div_ceil(1024)
    );
}

fn panic_text(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "(no message)".into())
}

/// Panics of inputs being fuzzed are reported by [`fuzz`] once, not printed per input;
/// every other thread's panics print as before.
fn install_quiet_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if FUZZING.with(Cell::get) {
                let at = info.location().map(|l| format!("{}:{}", l.file(), l.line())).unwrap_or_default();
                PANICKED_AT.with(|p| *p.borrow_mut() = at);
            } else {
                previous(info);
            }
        }));
    });
}

/// A thread that aborts the process, input saved, when one input runs ten times over
/// its target's time limit (a true hang would otherwise stall the test binary until CI's limit), and
/// saves the input of an allocation [`AllocationGuard`] refused.
struct Watchdog {
    stop: Arc<AtomicBool>,
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn spawn_watchdog(name: &str, hang: Duration, current: Arc<Mutex<(Instant, Vec<u8>, bool)>>) -> Watchdog {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let name = name.to_string();
    std::thread::spawn(move || {
        while !flag.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(50));
            let c = current.lock().expect("watchdog lock");
            let refused = REFUSED.load(Ordering::SeqCst);
            if refused || (!c.2 && c.0.elapsed() > hang) {
                let what = if refused {
                    "allocated over 1 GiB at once"
                } else {
                    "ran ten times over the limit (a hang)"
                };
                let path = std::env::temp_dir().join(format!("trlvr-fuzz-{name}-abort.bin"));
                let _ = std::fs::write(&path, &c.1);
                eprintln!("fuzz {name}: an input {what}; saved to {}", path.display());
                SAVED.store(true, Ordering::SeqCst);
                if !refused {
                    std::process::abort();
                }
                return;
            }
        }
    });
    Watchdog { stop }
}

/// `Ok` when `error`'s message names `path`: what every target asks of an error.
///
/// # Errors
/// The message, when it does not name the file.
pub fn names(error: &impl std::fmt::Display, path: &std::path::Path) -> Result<(), String> {
    let message = error.to_string();
    if message.contains(&*path.to_string_lossy()) {
        Ok(())
    } else {
        Err(format!("the error does not name {}: {message}", path.display()))
    }
}

/// A folder for one target's scratch files, under the temporary directory.
///
/// # Panics
/// If it cannot be created.
pub fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("trlvr-fuzz-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    dir
}

/// The files under `dir` whose names end in `suffix`, read, sorted by name: a seed corpus.
///
/// # Panics
/// If the folder cannot be read or holds no such file.
pub fn seeds_in(dir: impl AsRef<std::path::Path>, suffix: &str) -> Vec<Vec<u8>> {
    let dir = dir.as_ref();
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    paths.sort();
    assert!(!paths.is_empty(), "no *{suffix} seeds in {}", dir.display());
    paths.iter().map(|p| std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parser_that_panics_on_some_input_is_caught_and_shrunk() {
        let target = Target::new("panics-on-7", vec![b"123456".to_vec()]);
        let caught = std::panic::catch_unwind(AssertUnwindSafe(|| {
            fuzz(target, |bytes| {
                assert!(!bytes.contains(&b'7'), "a seven");
                Ok(())
            })
        }));
        let message = panic_text(&caught.expect_err("mutations put a 7 in within the budget"));
        assert!(
            message.contains("panicked at")
                && message.contains(": a seven")
                && message.contains("TRLVR_FUZZ_SEED"),
            "{message}"
        );
    }

    #[test]
    fn an_input_that_allocates_past_the_limit_fails() {
        let target = Target::new("allocates", vec![b"ab".to_vec()]).allocation_limit(1 << 20);
        let caught = std::panic::catch_unwind(AssertUnwindSafe(|| {
            fuzz(target, |bytes| {
                if bytes.len() > 2 {
                    std::hint::black_box(vec![0u8; 8 << 20]);
                }
                Ok(())
            })
        }));
        let message = panic_text(&caught.expect_err("some mutation lengthens the seed"));
        assert!(message.contains("allocated 8 MiB at once (limit 1 MiB)"), "{message}");
    }
}
