//! Data parallelism across processes: the few collective operations training needs (rank,
//! size, sums and maxima over ranks, broadcast, barrier) behind one trait, so the trainer
//! never names a transport. [`Single`] is one process; `mpi::Mpi` is MPI ranks (feature
//! `mpi`; launched by `mpirun` or Slurm's `srun`); [`Threads`] runs ranks as threads of
//! one process, for tests. An NCCL or CUDA-aware implementation can slot in later.
//!
//! How a step splits ([`Shard`]): every rank draws the same prompts; rank `r` of `N` takes
//! the `r`-th `1/N` of each PPO mini-batch's prompt groups (a group is never split), so
//! each mini-batch is the one a single process would form. Rows are keyed by their global
//! position, so `N` ranks sample exactly the rollouts one process would.

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use burn::module::{Module, ModuleVisitor, Param, ParamId};
use burn::prelude::*;

use crate::{Error, Result};

/// The collective operations of data-parallel training. Every rank calls each operation,
/// in the same order, with buffers of the same length.
pub trait Collective: std::fmt::Debug {
    /// This process's rank, `0..size`.
    fn rank(&self) -> usize;
    /// Number of ranks.
    fn size(&self) -> usize;
    /// Element-wise sum over ranks, in place (gradients).
    ///
    /// # Errors
    /// [`Error::Collective`] when the transport fails.
    fn sum_f32(&self, values: &mut [f32]) -> Result<()>;
    /// Element-wise sum over ranks, in place (counts and metrics; exact for integers
    /// below 2^53).
    ///
    /// # Errors
    /// As [`Collective::sum_f32`].
    fn sum_f64(&self, values: &mut [f64]) -> Result<()>;
    /// Element-wise maximum over ranks, in place.
    ///
    /// # Errors
    /// As [`Collective::sum_f32`].
    fn max_f64(&self, values: &mut [f64]) -> Result<()>;
    /// Rank `root`'s bytes to every rank (the others' `bytes` are replaced).
    ///
    /// # Errors
    /// As [`Collective::sum_f32`].
    fn broadcast(&self, bytes: &mut Vec<u8>, root: usize) -> Result<()>;
    /// Waits until every rank has called it.
    ///
    /// # Errors
    /// As [`Collective::sum_f32`].
    fn barrier(&self) -> Result<()>;
}

/// One process: every operation is the identity.
#[derive(Debug, Clone, Copy, Default)]
pub struct Single;

impl Collective for Single {
    fn rank(&self) -> usize {
        0
    }
    fn size(&self) -> usize {
        1
    }
    fn sum_f32(&self, _: &mut [f32]) -> Result<()> {
        Ok(())
    }
    fn sum_f64(&self, _: &mut [f64]) -> Result<()> {
        Ok(())
    }
    fn max_f64(&self, _: &mut [f64]) -> Result<()> {
        Ok(())
    }
    fn broadcast(&self, _: &mut Vec<u8>, _: usize) -> Result<()> {
        Ok(())
    }
    fn barrier(&self) -> Result<()> {
        Ok(())
    }
}

/// Every rank's bytes, in rank order (one broadcast per rank: for small messages such as
/// metrics).
///
/// # Errors
/// The transport's.
pub fn all_gather(collective: &dyn Collective, bytes: &[u8]) -> Result<Vec<Vec<u8>>> {
    (0..collective.size())
        .map(|root| {
            let mut buffer = if root == collective.rank() { bytes.to_vec() } else { Vec::new() };
            collective.broadcast(&mut buffer, root)?;
            Ok(buffer)
        })
        .collect()
}

/// Checks that every rank holds the same `what` (compared by a hash of `bytes`), and fails
/// on every rank with one message naming the ranks that differ from rank 0.
///
/// # Errors
/// [`Error::Collective`] when some rank differs; the transport's.
pub fn agree(collective: &dyn Collective, what: &str, bytes: &[u8]) -> Result<()> {
    if collective.size() == 1 {
        return Ok(());
    }
    let mine = xxhash_rust::xxh3::xxh3_64(bytes).to_le_bytes();
    let mut root = mine.to_vec();
    collective.broadcast(&mut root, 0)?;
    let mut differs = vec![0.0; collective.size()];
    differs[collective.rank()] = f64::from(u8::from(root != mine));
    collective.sum_f64(&mut differs)?;
    let ranks: Vec<usize> = (0..differs.len()).filter(|&r| differs[r] > 0.0).collect();
    if ranks.is_empty() {
        return Ok(());
    }
    Err(Error::Collective(format!(
        "rank(s) {ranks:?} of {} have a different {what} from rank 0: every rank must run the same build \
         on the same files and settings",
        collective.size()
    )))
}

/// Which of a step's prompts and rollout rows one rank handles.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shard {
    /// Positions in the step's prompt list, in order.
    pub prompts: Vec<usize>,
    /// Rows (prompt position × group size + copy) of the step's rollouts, in order.
    pub rows: Vec<usize>,
}

impl Shard {
    /// Rank `rank` of `size`'s part of a step of `prompts_per_step` prompt groups of
    /// `group_size` rows, cut into mini-batches of `mini_batch_prompts`: the rank's
    /// `1/size` of each mini-batch's groups.
    ///
    /// ```
    /// use trlvr::collective::Shard;
    /// // 8 prompts, mini-batches of 4, 2 ranks: rank 1 takes 2-3 and 6-7.
    /// assert_eq!(Shard::new(8, 4, 1, 1, 2)?.prompts, [2, 3, 6, 7]);
    /// assert!(Shard::new(8, 4, 1, 0, 3).is_err()); // 3 ranks cannot split groups of 4
    /// # Ok::<(), trlvr::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Config`] unless `size` divides `mini_batch_prompts` (which divides
    /// `prompts_per_step`): a prompt group is never split, and every rank takes part in
    /// every mini-batch.
    pub fn new(
        prompts_per_step: usize,
        mini_batch_prompts: usize,
        group_size: usize,
        rank: usize,
        size: usize,
    ) -> Result<Self> {
        if size == 0 || rank >= size {
            return Err(Error::Config(format!("rank {rank} of {size}")));
        }
        if mini_batch_prompts == 0 || !mini_batch_prompts.is_multiple_of(size) {
            return Err(Error::Config(format!(
                "{size} ranks cannot share mini-batches of {mini_batch_prompts} prompt groups: the number of \
                 ranks must divide [train] mini_batch_prompts (and so prompts_per_step, {prompts_per_step}); a \
                 group is never split"
            )));
        }
        let per_rank = mini_batch_prompts / size;
        let prompts: Vec<usize> = (0..prompts_per_step / mini_batch_prompts)
            .flat_map(|m| {
                let first = m * mini_batch_prompts + rank * per_rank;
                first..first + per_rank
            })
            .collect();
        let rows = prompts.iter().flat_map(|&p| p * group_size..(p + 1) * group_size).collect();
        Ok(Self { prompts, rows })
    }
}

/// A fingerprint (XXH3) of every float parameter's values, in visiting order: ranks whose
/// weights drifted apart, or started from other files, differ.
///
/// # Errors
/// [`Error::Read`] if a tensor cannot be read back.
pub fn weights_fingerprint<M: Module>(module: &M) -> Result<u64> {
    let mut visitor =
        Fingerprint { hash: xxhash_rust::xxh3::Xxh3::new(), seen: Default::default(), error: None };
    module.visit(&mut visitor);
    match visitor.error {
        Some(e) => Err(e),
        None => Ok(visitor.hash.digest()),
    }
}

struct Fingerprint {
    hash: xxhash_rust::xxh3::Xxh3,
    seen: std::collections::HashSet<ParamId>,
    error: Option<Error>,
}

impl ModuleVisitor for Fingerprint {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        if self.error.is_some() || !self.seen.insert(param.id) {
            return;
        }
        match crate::objective::host(param.val()) {
            Ok(values) => values.iter().for_each(|v| self.hash.update(&v.to_le_bytes())),
            Err(e) => self.error = Some(e),
        }
    }
}

/// Ranks as threads of one process, for tests: sums are taken in rank order, so every rank
/// gets the same bits. A rank that waits more than [`Threads::TIMEOUT`] for the others
/// fails, so a rank that panicked fails the test instead of hanging it.
#[derive(Debug, Clone)]
pub struct Threads {
    rank: usize,
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    size: usize,
    /// Ranks arrived at the current barrier, and how many barriers have opened.
    round: Mutex<(usize, u64)>,
    opened: Condvar,
    slots: Mutex<Vec<Vec<f64>>>,
    bytes: Mutex<Vec<u8>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Threads {
    /// How long a rank waits for the others at a barrier.
    pub const TIMEOUT: Duration = Duration::from_secs(300);

    /// `size` connected ranks: hand one to each thread.
    pub fn group(size: usize) -> Vec<Self> {
        let shared = Arc::new(Shared {
            size,
            round: Mutex::new((0, 0)),
            opened: Condvar::new(),
            slots: Mutex::new(vec![Vec::new(); size]),
            bytes: Mutex::new(Vec::new()),
        });
        (0..size).map(|rank| Self { rank, shared: Arc::clone(&shared) }).collect()
    }

    fn wait(&self) -> Result<()> {
        let mut round = lock(&self.shared.round);
        let generation = round.1;
        round.0 += 1;
        if round.0 == self.shared.size {
            *round = (0, generation + 1);
            self.shared.opened.notify_all();
            return Ok(());
        }
        let deadline = Instant::now() + Self::TIMEOUT;
        while round.1 == generation {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(Error::Collective(format!(
                    "rank {} waited {:?} for the other ranks",
                    self.rank,
                    Self::TIMEOUT
                )));
            }
            round = self
                .shared
                .opened
                .wait_timeout(round, left)
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .0;
        }
        Ok(())
    }

    fn reduce(&self, values: &mut [f64], op: fn(f64, f64) -> f64) -> Result<()> {
        lock(&self.shared.slots)[self.rank] = values.to_vec();
        self.wait()?;
        {
            let slots = lock(&self.shared.slots);
            for (i, v) in values.iter_mut().enumerate() {
                *v = slots.iter().map(|s| s[i]).reduce(op).unwrap_or(*v);
            }
        }
        self.wait()
    }
}

impl Collective for Threads {
    fn rank(&self) -> usize {
        self.rank
    }
    fn size(&self) -> usize {
        self.shared.size
    }
    fn sum_f32(&self, values: &mut [f32]) -> Result<()> {
        let mut wide: Vec<f64> = values.iter().map(|&v| f64::from(v)).collect();
        self.reduce(&mut wide, |a, b| a + b)?;
        values.iter_mut().zip(wide).for_each(|(v, w)| *v = w as f32);
        Ok(())
    }
    fn sum_f64(&self, values: &mut [f64]) -> Result<()> {
        self.reduce(values, |a, b| a + b)
    }
    fn max_f64(&self, values: &mut [f64]) -> Result<()> {
        self.reduce(values, f64::max)
    }
    fn broadcast(&self, bytes: &mut Vec<u8>, root: usize) -> Result<()> {
        if self.rank == root {
            bytes.clone_into(&mut lock(&self.shared.bytes));
        }
        self.wait()?;
        if self.rank != root {
            lock(&self.shared.bytes).clone_into(bytes);
        }
        self.wait()
    }
    fn barrier(&self) -> Result<()> {
        self.wait()
    }
}

#[cfg(feature = "mpi")]
pub mod mpi;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_cover_each_mini_batch_once_in_order() {
        for (p, m, n) in [(8, 4, 2), (8, 8, 4), (6, 3, 3), (4, 4, 1), (12, 6, 2)] {
            let shards: Vec<Shard> = (0..n).map(|r| Shard::new(p, m, 3, r, n).unwrap()).collect();
            let mut all: Vec<usize> = shards.iter().flat_map(|s| s.prompts.clone()).collect();
            all.sort_unstable();
            assert_eq!(all, (0..p).collect::<Vec<_>>(), "every prompt once ({p}, {m}, {n})");
            for s in &shards {
                // Each mini-batch gives each rank m/n groups.
                for k in 0..p / m {
                    assert_eq!(s.prompts.iter().filter(|&&i| i / m == k).count(), m / n);
                }
                assert_eq!(s.rows.len(), s.prompts.len() * 3);
                assert!(s.rows.windows(2).all(|w| w[0] < w[1]));
            }
        }
        assert!(Shard::new(8, 4, 2, 0, 8).is_err(), "more ranks than a mini-batch's groups");
        assert!(Shard::new(8, 4, 2, 2, 2).is_err());
    }

    #[test]
    fn threads_sum_broadcast_and_agree() {
        let ranks = Threads::group(3);
        std::thread::scope(|s| {
            for c in &ranks {
                s.spawn(move || {
                    // Every collective call first, then the checks: a failing check on one
                    // rank must not leave the others waiting at a barrier.
                    let r = c.rank();
                    let mut a = vec![r as f32, 1.0];
                    c.sum_f32(&mut a).unwrap();
                    let mut m = vec![r as f64, -(r as f64)];
                    c.max_f64(&mut m).unwrap();
                    let mut b = if r == 2 { b"from two".to_vec() } else { Vec::new() };
                    c.broadcast(&mut b, 2).unwrap();
                    let gathered = all_gather(c, &[r as u8; 2][..r]).unwrap();
                    let same = agree(c, "thing", b"same");
                    let other: &[u8] = if r == 1 { b"else" } else { b"same" };
                    let differs = agree(c, "thing", other).unwrap_err().to_string();
                    assert_eq!(a, [3.0, 3.0]);
                    assert_eq!(m, [2.0, 0.0]);
                    assert_eq!(b, b"from two");
                    assert_eq!(gathered, [vec![], vec![1], vec![2, 2]]);
                    assert!(same.is_ok());
                    assert!(differs.contains("rank(s) [1] of 3 have a different thing"), "{differs}");
                });
            }
        });
    }

    proptest::proptest! {
        /// Ranks send their records as JSON (evaluation results, rollouts): every float
        /// must come back with its bits, or two ranks' figures differ from one process's
        /// in the last digit. serde_json's default parser rounds about 8% of f64 values
        /// wrongly (3.7559814144171844 is one); the workspace turns on `float_roundtrip`.
        #[test]
        fn json_records_keep_every_float_bit(x in proptest::num::f64::NORMAL | proptest::num::f64::SUBNORMAL, y in proptest::num::f32::NORMAL) {
            let (known, sent) = (3.7559814144171844_f64, (x, y));
            let back: f64 = serde_json::from_slice(&serde_json::to_vec(&known).unwrap()).unwrap();
            proptest::prop_assert_eq!(back.to_bits(), known.to_bits());
            let back: (f64, f32) = serde_json::from_slice(&serde_json::to_vec(&sent).unwrap()).unwrap();
            proptest::prop_assert_eq!((back.0.to_bits(), back.1.to_bits()), (x.to_bits(), y.to_bits()));
        }
    }
}
