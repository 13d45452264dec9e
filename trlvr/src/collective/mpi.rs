//! MPI ranks (Open MPI, MPICH) as a [`Collective`], with a watchdog on every collective.
//!
//! A rank that stops without dying (a hung kernel, SIGSTOP, a node whose link stays up)
//! would leave the others in MPI's blocking collectives for ever. So before each
//! collective every rank tells every other that it has arrived: non-blocking sends and
//! receives of the collective's sequence number, polled against a deadline. Past the
//! watchdog's limit the waiting rank names the ranks it has not heard from and ends the
//! job (MPI_Abort). Once all have arrived the blocking collective runs. The cost is
//! 2(N-1) eight-byte messages per rank and collective: nothing beside a gradient
//! all-reduce at the rank counts trlvr runs (a tree would scale further). A watchdog thread
//! was the other design; it needs MPI's thread-multiple mode to call MPI at all, and
//! cannot tell who is missing.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use ::mpi::collective::SystemOperation;
use ::mpi::environment::Universe;
use ::mpi::topology::SimpleCommunicator;
use ::mpi::traits::*;

use super::Collective;
use crate::{Error, Result};

/// How long a rank waits in one collective before it ends the job, unless set
/// ([`Mpi::set_watchdog`]): long enough for the others' slowest step (a long rollout,
/// a checkpoint written by rank 0).
pub const DEFAULT_WATCHDOG: Duration = Duration::from_secs(1800);

/// The tag of the arrival messages (the collectives themselves use none).
const ARRIVAL: i32 = 0x7472;

/// MPI ranks: one process per rank, launched by `mpirun` or `srun`. Buffers are staged
/// through host memory.
pub struct Mpi {
    // Finalizes MPI when dropped; kept for that.
    _universe: Universe,
    world: SimpleCommunicator,
    local_rank: usize,
    /// Collectives this rank has entered.
    calls: AtomicU64,
    /// The watchdog's limit, milliseconds.
    limit_ms: AtomicU64,
}

impl std::fmt::Debug for Mpi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mpi").field("rank", &self.rank()).field("size", &self.size()).finish()
    }
}

impl Mpi {
    /// Initialises MPI (once per process), the watchdog at [`DEFAULT_WATCHDOG`].
    ///
    /// # Errors
    /// [`Error::Collective`] when MPI was initialised already.
    pub fn init() -> Result<Self> {
        let universe = ::mpi::initialize()
            .ok_or_else(|| Error::Collective("MPI is initialised already in this process".into()))?;
        let world = universe.world();
        let local = world.split_shared(world.rank());
        let local_rank = usize::try_from(local.rank()).unwrap_or(0);
        let mpi = Self {
            _universe: universe,
            world,
            local_rank,
            calls: AtomicU64::new(0),
            limit_ms: AtomicU64::new(0),
        };
        mpi.set_watchdog(DEFAULT_WATCHDOG);
        Ok(mpi)
    }

    /// This rank's index among the ranks of its node (which GPU it takes).
    pub fn local_rank(&self) -> usize {
        self.local_rank
    }

    /// How long this rank waits in a collective for the others before it ends the job.
    pub fn set_watchdog(&self, limit: Duration) {
        let ms = u64::try_from(limit.as_millis()).unwrap_or(u64::MAX).max(1);
        self.limit_ms.store(ms, Ordering::Relaxed);
    }

    /// The watchdog's limit.
    pub fn watchdog(&self) -> Duration {
        Duration::from_millis(self.limit_ms.load(Ordering::Relaxed))
    }

    /// Ends every rank of the job with `code` (MPI_Abort): a rank that failed must not
    /// leave the others waiting in a collective.
    pub fn abort(&self, code: i32) -> ! {
        self.world.abort(code)
    }

    /// Waits until every rank has entered this collective (the module doc); past the
    /// watchdog's limit, names the missing ranks and ends the job.
    fn arrive(&self, what: &str) -> Result<()> {
        let (me, size) = (self.rank(), self.size());
        if size < 2 {
            return Ok(());
        }
        let call = self.calls.fetch_add(1, Ordering::Relaxed) + 1;
        let limit = self.watchdog();
        let others: Vec<usize> = (0..size).filter(|&r| r != me).collect();
        let sent = [call];
        let mut heard = vec![[0u64; 1]; others.len()];
        let mut arrived = vec![false; others.len()];
        let ids: Vec<i32> = others.iter().map(|&r| rank_id(r)).collect::<Result<_>>()?;
        let started = Instant::now();
        ::mpi::request::multiple_scope(2 * others.len(), |scope, requests| {
            for (&id, buf) in ids.iter().zip(heard.iter_mut()) {
                let from = self.world.process_at_rank(id);
                requests.add(from.immediate_receive_into_with_tag(scope, &mut buf[..], ARRIVAL));
            }
            for &id in &ids {
                let to = self.world.process_at_rank(id);
                requests.add(to.immediate_send_with_tag(scope, &sent[..], ARRIVAL));
            }
            let mut done = Vec::new();
            while arrived.iter().any(|a| !a) {
                requests.test_some(&mut done);
                for (i, _, _) in &done {
                    if let Some(a) = arrived.get_mut(*i) {
                        *a = true;
                    }
                }
                let waited = started.elapsed();
                if waited > limit {
                    let missing: Vec<usize> =
                        others.iter().zip(&arrived).filter(|(_, a)| !**a).map(|(r, _)| *r).collect();
                    self.give_up(what, call, waited, &missing);
                }
                if waited < Duration::from_millis(1) {
                    std::thread::yield_now();
                } else {
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
            // The sends: eight bytes each, long delivered by now.
            requests.wait_all(&mut done);
        });
        let astray: Vec<String> = others
            .iter()
            .zip(&heard)
            .filter(|(_, h)| h[0] != call)
            .map(|(r, h)| format!("rank {r} at #{}", h[0]))
            .collect();
        if !astray.is_empty() {
            return Err(Error::Collective(format!(
                "rank {me} of {size} entered collective #{call} ({what}) while {}: the ranks are out of step",
                astray.join(", ")
            )));
        }
        Ok(())
    }

    /// Names the ranks not heard from, then ends the job.
    fn give_up(&self, what: &str, call: u64, waited: Duration, missing: &[usize]) -> ! {
        use std::io::Write;
        let line = format!(
            "rank {} of {}: watchdog: waited {:.0} s in collective #{call} ({what}) and has not heard from \
             rank(s) {missing:?}; ending the job (the limit is the recipe's ranks.timeout_s)\n",
            self.rank(),
            self.size(),
            waited.as_secs_f64()
        );
        let _ = std::io::stderr().write_all(line.as_bytes());
        let _ = std::io::stderr().flush();
        self.abort(3)
    }
}

fn rank_id(rank: usize) -> Result<i32> {
    i32::try_from(rank).map_err(|_| Error::Collective(format!("rank {rank} out of range")))
}

impl Collective for Mpi {
    fn rank(&self) -> usize {
        usize::try_from(self.world.rank()).unwrap_or(0)
    }
    fn size(&self) -> usize {
        usize::try_from(self.world.size()).unwrap_or(1)
    }
    fn sum_f32(&self, values: &mut [f32]) -> Result<()> {
        self.arrive("sum of f32")?;
        let send = values.to_vec();
        self.world.all_reduce_into(&send[..], values, SystemOperation::sum());
        Ok(())
    }
    fn sum_f64(&self, values: &mut [f64]) -> Result<()> {
        self.arrive("sum of f64")?;
        let send = values.to_vec();
        self.world.all_reduce_into(&send[..], values, SystemOperation::sum());
        Ok(())
    }
    fn max_f64(&self, values: &mut [f64]) -> Result<()> {
        self.arrive("max of f64")?;
        let send = values.to_vec();
        self.world.all_reduce_into(&send[..], values, SystemOperation::max());
        Ok(())
    }
    fn broadcast(&self, bytes: &mut Vec<u8>, root: usize) -> Result<()> {
        self.arrive("broadcast")?;
        let root = self.world.process_at_rank(rank_id(root)?);
        let mut len = bytes.len() as u64;
        root.broadcast_into(&mut len);
        bytes.resize(usize::try_from(len).map_err(|_| Error::Collective("message too long".into()))?, 0);
        root.broadcast_into(&mut bytes[..]);
        Ok(())
    }
    fn barrier(&self) -> Result<()> {
        self.arrive("barrier")?;
        self.world.barrier();
        Ok(())
    }
}
