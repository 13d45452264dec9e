//! A forward pass on the CPU as one piece of work for Rayon's pool.
//!
//! A forward pass runs hundreds of parallel kernels, a few microseconds of serial work
//! apart. Called from a thread outside the pool, each kernel is handed over and waited for
//! (the caller sleeps, a worker is woken); on a worker it starts at once (SmolLM2 on 2
//! cores: batch-1 decode 33.5-35.4 -> 37.1 tokens/s, batch 8 166 -> 174-178). Between
//! kernels an idle worker still goes to sleep and must be woken for the next, so
//! [`keep_polling`] tasks keep the other workers stealing meanwhile, as OpenMP's active
//! wait does (batch 8 168-172 -> 196-203 tokens/s).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How long [`keep_polling`] spins without finding a task (a forward pass's kernels are
/// microseconds apart), then yields its core between polls (to another process's threads,
/// such as a second MPI rank's on the same cores), then gives its thread back.
const SPIN: Duration = Duration::from_micros(50);
const POLL_IDLE: Duration = Duration::from_millis(1);

/// Runs `work` on a thread of Rayon's pool (inline when already on one), the pool's other
/// threads polling for its kernels until it ends. Only for calls from outside the pool:
/// inside one (the demo's runs side by side), the other workers have their own work.
pub(crate) fn run<R: Send>(work: impl FnOnce() -> R + Send) -> R {
    if rayon::current_thread_index().is_some() || rayon::current_num_threads() < 2 {
        return rayon::scope(|_| work());
    }
    let done = AtomicBool::new(false);
    rayon::scope(|s| {
        let (caller, done) = (rayon::current_thread_index(), &done);
        for _ in 1..rayon::current_num_threads() {
            s.spawn(move |_| keep_polling(caller, done));
        }
        // Set on the way out, a panic included: the scope waits for the pollers.
        let _done = SetOnDrop(done);
        work()
    })
}

/// Runs Rayon's pending tasks on this worker until `done`, polling between them: a worker
/// that sleeps between a forward pass's kernels must be woken for each.
///
/// Returns at once on the `caller`'s own thread (it popped this task while waiting, and
/// would wait on itself), and after [`POLL_IDLE`] without a task: a worker may have taken
/// this task while inside one of the caller's own, which then waits below it, and a long
/// serial stretch of the caller's is better waited out asleep.
fn keep_polling(caller: Option<usize>, done: &AtomicBool) {
    if rayon::current_thread_index() == caller {
        return;
    }
    let mut last_task = Instant::now();
    while !done.load(Ordering::Acquire) {
        if rayon::yield_now() == Some(rayon::Yield::Executed) {
            last_task = Instant::now();
            continue;
        }
        match last_task.elapsed() {
            idle if idle > POLL_IDLE => return,
            idle if idle > SPIN => std::thread::yield_now(),
            _ => std::hint::spin_loop(),
        }
    }
}

/// Sets its flag when dropped.
struct SetOnDrop<'a>(&'a AtomicBool);

impl Drop for SetOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}
