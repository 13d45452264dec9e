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
//! largest single allocation of each input is measured (and one above 4 GiB is refused,
//! with a message, before it can take the machine down).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

/// A parser under test: its name, its seed files, where its structure lies.
#[derive(Debug, Clone)]
pub struct Target {
    name: String,
    seeds: Vec<Vec<u8>>,
    header: usize,
    tokens: Vec<Vec<u8>>,
    allocation_limit: usize,
    slow: Duration,
}

impl Target {
    /// A target fed mutations of `seeds` (at least one).
    pub fn new(name: impl Into<String>, seeds: Vec<Vec<u8>>) -> Self {
        assert!(!seeds.is_empty(), "a fuzz target needs at least one seed");
        Self {
            name: name.into(),
            seeds,
            header: 0,
            tokens: Vec::new(),
            allocation_limit: 256 << 20,
            slow: Duration::from_secs(5),
        }
    }

    /// Half of the mutations land in the first `bytes` bytes: binary formats keep their
    /// structure up front and their bulk (tensor data) after it.
    pub fn header(mut self, bytes: usize) -> Self {
        self.header = bytes;
        self
    }

    /// Tokens of the format (keywords, key names) inserted besides the generic ones.
    pub fn tokens(mut self, tokens: &[&str]) -> Self {
        self.tokens.extend(tokens.iter().map(|t| t.as_bytes().to_vec()));
        self
    }

    /// The longest one input may take (default 5 s): longer fails, and ten times longer
    /// aborts the process with the input saved (a hang).
    pub fn slow(mut self, limit: Duration) -> Self {
        self.slow = limit;
        self
    }

    /// The largest single allocation one input may make (default 256 MiB): a size read
    /// from the input must be checked against the input before memory is reserved for it.
    pub fn allocation_limit(mut self, bytes: usize) -> Self {
        self.allocation_limit = bytes;
        self
    }
}

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

/// Generic tokens of text formats (JSON, TOML, JSONL) and values that stress number parsers.
const TOKENS: &[&str] = &[
    "\"",
    "'",
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    "=",
    "\n",
    "\r\n",
    "\\",
    "\\u0000",
    "\\ud800",
    "#",
    ".",
    "-1",
    "0",
    "1e400",
    "-1e400",
    "NaN",
    "inf",
    "null",
    "true",
    "false",
    "18446744073709551616",
    "9223372036854775807",
    "4294967296",
    "0.5",
    "\u{FEFF}",
    "\u{1F600}",
    "[[",
    "]]",
    "\"\"\"",
];

/// Bytes and words that sit on format boundaries (sign bits, all ones, large counts).
const WORDS: &[u64] = &[
    0,
    1,
    2,
    0x7F,
    0x80,
    0xFF,
    0x7FFF,
    0xFFFF,
    0x7FFF_FFFF,
    0xFFFF_FFFF,
    1 << 20,
    1 << 32,
    1 << 40,
    i64::MAX as u64,
    u64::MAX,
];

/// Where a mutation lands: in the header region or anywhere.
#[derive(Debug, Clone)]
struct Position {
    header: bool,
    at: Index,
}

impl Position {
    fn index(&self, len: usize, header: usize) -> usize {
        if self.header && header > 0 {
            self.at.index(len.min(header).max(1))
        } else {
            self.at.index(len.max(1))
        }
    }
}

#[derive(Debug, Clone)]
enum Mutation {
    Flip { at: Position, bit: u8 },
    Byte { at: Position, word: Index },
    Word { at: Position, word: Index, width: u8 },
    Truncate { at: Position },
    Remove { at: Position, len: u8 },
    Insert { at: Position, token: Index },
    Random { at: Position, bytes: Vec<u8> },
    Copy { from: Position, to: Position, len: u16 },
    Splice { seed: Index, at: Position, from: Index },
}

fn position() -> impl Strategy<Value = Position> {
    (any::<bool>(), any::<Index>()).prop_map(|(header, at)| Position { header, at })
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        3 => (position(), 0u8..8).prop_map(|(at, bit)| Mutation::Flip { at, bit }),
        2 => (position(), any::<Index>()).prop_map(|(at, word)| Mutation::Byte { at, word }),
        2 => (position(), any::<Index>(), prop_oneof![Just(2u8), Just(4), Just(8)])
            .prop_map(|(at, word, width)| Mutation::Word { at, word, width }),
        1 => position().prop_map(|at| Mutation::Truncate { at }),
        2 => (position(), 1u8..64).prop_map(|(at, len)| Mutation::Remove { at, len }),
        3 => (position(), any::<Index>()).prop_map(|(at, token)| Mutation::Insert { at, token }),
        1 => (position(), proptest::collection::vec(any::<u8>(), 1..16))
            .prop_map(|(at, bytes)| Mutation::Random { at, bytes }),
        1 => (position(), position(), 1u16..2048).prop_map(|(from, to, len)| Mutation::Copy { from, to, len }),
        1 => (any::<Index>(), position(), any::<Index>())
            .prop_map(|(seed, at, from)| Mutation::Splice { seed, at, from }),
    ]
}

impl Mutation {
    fn apply(&self, bytes: &mut Vec<u8>, target: &Target) {
        let h = target.header;
        let len = bytes.len();
        match self {
            Mutation::Flip { at, bit } => {
                if len > 0 {
                    bytes[at.index(len, h)] ^= 1 << bit;
                }
            }
            Mutation::Byte { at, word } => {
                if len > 0 {
                    bytes[at.index(len, h)] = word.get(WORDS).to_le_bytes()[0];
                }
            }
            Mutation::Word { at, word, width } => {
                let width = usize::from(*width);
                if len >= width {
                    let i = at.index(len - width + 1, h);
                    bytes[i..i + width].copy_from_slice(&word.get(WORDS).to_le_bytes()[..width]);
                }
            }
            Mutation::Truncate { at } => bytes.truncate(at.index(len, h)),
            Mutation::Remove { at, len: n } => {
                let i = at.index(len, h).min(len);
                bytes.drain(i..(i + usize::from(*n)).min(len));
            }
            Mutation::Insert { at, token } => {
                let i = at.index(len + 1, h).min(len);
                let all = TOKENS.len() + target.tokens.len();
                let k = token.index(all);
                let token =
                    if k < TOKENS.len() { TOKENS[k].as_bytes() } else { &target.tokens[k - TOKENS.len()] };
                bytes.splice(i..i, token.iter().copied());
            }
            Mutation::Random { at, bytes: new } => {
                let i = at.index(len + 1, h).min(len);
                bytes.splice(i..i, new.iter().copied());
            }
            Mutation::Copy { from, to, len: n } => {
                if len > 0 {
                    let i = from.index(len, h);
                    let chunk = bytes[i..(i + usize::from(*n)).min(len)].to_vec();
                    let j = to.index(len + 1, h).min(len);
                    bytes.splice(j..j, chunk);
                }
            }
            Mutation::Splice { seed, at, from } => {
                let other = seed.get(&target.seeds);
                let i = at.index(len + 1, h).min(len);
                let j = from.index(other.len() + 1).min(other.len());
                bytes.truncate(i);
                bytes.extend_from_slice(&other[j..]);
            }
        }
    }
}

/// The largest allocation made on this thread since the last [`reset_largest`].
fn largest() -> usize {
    LARGEST.with(Cell::get)
}

fn reset_largest() {
    LARGEST.with(|l| l.set(0));
}

thread_local! {
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

/// The system allocator, measuring each thread's largest allocation and refusing any
/// above 1 GiB (the process then aborts, the input saved, instead of swapping the machine
/// to a halt). Install it in a test binary that fuzzes:
///
/// ```ignore
/// #[global_allocator]
/// static GUARD: trlvr::testing::fuzz::AllocationGuard = trlvr::testing::fuzz::AllocationGuard;
/// ```
#[derive(Debug)]
pub struct AllocationGuard;

const REFUSED_ABOVE: usize = 1 << 30;

/// Set by a refused allocation; the watchdog of a running [`fuzz`] then saves the input.
static REFUSED: AtomicBool = AtomicBool::new(false);
/// Set by the watchdog once the input is saved.
static SAVED: AtomicBool = AtomicBool::new(false);

impl AllocationGuard {
    fn admit(size: usize) -> bool {
        if size > REFUSED_ABOVE {
            use std::io::Write;
            // No allocation here: a fixed message, written unbuffered, then a short wait
            // for the watchdog to save the input before the process aborts.
            let _ = std::io::stderr().write_all(b"\nfuzz: an allocation above 1 GiB was refused; aborting\n");
            REFUSED.store(true, Ordering::SeqCst);
            for _ in 0..40 {
                if SAVED.load(Ordering::SeqCst) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            return false;
        }
        // `try_with`: thread-local storage may already be gone while a thread exits.
        let _ = LARGEST.try_with(|l| l.set(l.get().max(size)));
        true
    }
}

// SAFETY: every call is forwarded to `System` unchanged, or refused with a null pointer,
// which `GlobalAlloc` allows.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for AllocationGuard {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if Self::admit(layout.size()) { unsafe { System.alloc(layout) } } else { std::ptr::null_mut() }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if Self::admit(layout.size()) { unsafe { System.alloc_zeroed(layout) } } else { std::ptr::null_mut() }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if Self::admit(new_size) {
            unsafe { System.realloc(ptr, layout, new_size) }
        } else {
            std::ptr::null_mut()
        }
    }
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
    let run = |bytes: &[u8]| -> Option<String> {
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
                    format!(
                        "allocated {} MiB at once (limit {} MiB)",
                        big >> 20,
                        target.allocation_limit >> 20
                    )
                })
            },
        )
    };
    let mut largest_seen = 0;
    let mut inputs = 0;
    let fail = |bytes: &[u8], why: String, mutations: &str| -> ! {
        let path = std::env::temp_dir().join(format!("trlvr-fuzz-{}-{seed}.bin", target.name));
        let _ = std::fs::write(&path, bytes);
        panic!(
            "fuzz {}: {why}\n  input ({} bytes) saved to {}\n  mutations: {mutations}\n  reproduce with TRLVR_FUZZ_SEED={seed}",
            target.name,
            bytes.len(),
            path.display()
        );
    };
    for (i, s) in target.seeds.iter().enumerate() {
        inputs += 1;
        if let Some(why) = run(s) {
            fail(s, format!("seed {i} fails: {why}"), "none");
        }
        largest_seen = largest_seen.max(largest());
    }
    let config = Config { failure_persistence: None, ..Config::default() };
    let mut rng_seed = [0u8; 32];
    rng_seed[..8].copy_from_slice(&seed.to_le_bytes());
    rng_seed[8..16].copy_from_slice(&xxhash_rust::xxh3::xxh3_64(target.name.as_bytes()).to_le_bytes());
    let mut runner = TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &rng_seed));
    let strategy = (any::<Index>(), proptest::collection::vec(mutation(), 1..=6));
    let input = |(seed, mutations): &(Index, Vec<Mutation>)| {
        let mut bytes = seed.get(&target.seeds).clone();
        for m in mutations {
            m.apply(&mut bytes, &target);
        }
        bytes
    };
    while Instant::now() < deadline {
        let mut tree = strategy.new_tree(&mut runner).expect("the mutation strategy never rejects");
        let bytes = input(&tree.current());
        inputs += 1;
        let Some(mut why) = run(&bytes) else {
            largest_seen = largest_seen.max(largest());
            continue;
        };
        // Shrink: the shortest, simplest mutation list that still fails.
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
        drop(watchdog);
        fail(&input(&failing), why, &format!("{:?}", failing.1));
    }
    drop(watchdog);
    let report = Report { inputs, elapsed: started.elapsed(), largest_allocation: largest_seen };
    eprintln!(
        "fuzz {}: {} inputs in {:.1} s (seed {seed}), no failure; largest allocation {} KiB",
        target.name,
        report.inputs,
        report.elapsed.as_secs_f64(),
        report.largest_allocation.div_ceil(1024)
    );
    report
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

    #[test]
    fn mutations_stay_in_bounds_on_empty_and_tiny_inputs() {
        let target = Target::new("t", vec![Vec::new(), vec![1]]).header(4).tokens(&["key"]);
        let mut runner = TestRunner::deterministic();
        for _ in 0..2000 {
            let m = mutation().new_tree(&mut runner).unwrap().current();
            for seed in &target.seeds {
                let mut bytes = seed.clone();
                m.apply(&mut bytes, &target);
            }
        }
    }
}
