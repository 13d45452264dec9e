//! The ranks of a command: MPI ranks when `mpirun` or `srun` launched it (feature `mpi`),
//! otherwise one process.

use anyhow::Result;
use trlvr::collective::{Collective, Single};

/// Variables an MPI launcher sets in each rank's environment to the number of ranks: Open
/// MPI's `mpirun`, then PMI-1/2 (`srun --mpi=pmi2`, MPICH's Hydra).
const LAUNCHER_SIZE: [&str; 2] = ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE"];

/// This process's place among the ranks of the job.
pub struct Ranks {
    #[cfg(feature = "mpi")]
    mpi: Option<trlvr::collective::mpi::Mpi>,
}

impl std::fmt::Debug for Ranks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ranks").field("rank", &self.collective().rank()).field("size", &self.size()).finish()
    }
}

/// How many ranks the launcher says the job has (1 without a launcher). PMIx
/// (`srun --mpi=pmix`) names the rank but not the size: Slurm's task count stands in.
fn launched_size() -> usize {
    let var = |v: &str| std::env::var(v).ok()?.parse::<usize>().ok();
    LAUNCHER_SIZE.iter().find_map(|v| var(v)).unwrap_or_else(|| {
        if std::env::var_os("PMIX_RANK").is_some() { var("SLURM_NTASKS").unwrap_or(2) } else { 1 }
    })
}

impl Ranks {
    /// MPI when a launcher started this process with other ranks, one process otherwise.
    ///
    /// # Errors
    /// Under a launcher of several ranks, a build without the `mpi` feature: the ranks
    /// would each train alone and write the same files.
    pub fn connect() -> Result<Self> {
        let size = launched_size();
        #[cfg(feature = "mpi")]
        {
            let mpi = if size > 1 { Some(trlvr::collective::mpi::Mpi::init()?) } else { None };
            let ranks = Self { mpi };
            ranks.abort_on_panic();
            Ok(ranks)
        }
        #[cfg(not(feature = "mpi"))]
        {
            if size > 1 {
                anyhow::bail!(
                    "launched as one of {size} MPI ranks, but this trlvr was built without MPI: build it with \
                     `cargo build --release --features mpi` (needs Open MPI and libclang: `apt-get install \
                     libopenmpi-dev openmpi-bin libclang-dev`)"
                );
            }
            Ok(Self {})
        }
    }

    /// The collective operations between the ranks.
    pub fn collective(&self) -> &dyn Collective {
        #[cfg(feature = "mpi")]
        if let Some(mpi) = &self.mpi {
            return mpi;
        }
        &Single
    }

    /// How long a rank waits in one collective for the others before it ends the job
    /// (`trlvr::collective::mpi::Mpi`'s watchdog; nothing with one process).
    #[cfg_attr(not(feature = "mpi"), allow(unused_variables))]
    pub fn set_timeout(&self, limit: std::time::Duration) {
        #[cfg(feature = "mpi")]
        if let Some(mpi) = &self.mpi {
            mpi.set_watchdog(limit);
        }
    }

    /// Number of ranks.
    pub fn size(&self) -> usize {
        self.collective().size()
    }

    /// Whether this rank speaks for the job (writes files, shows progress).
    pub fn leads(&self) -> bool {
        self.collective().rank() == 0
    }

    /// A device name with `:local` replaced by this rank's index on its node (`cuda:local`:
    /// one GPU per rank).
    pub fn device(&self, name: &str) -> String {
        #[cfg(feature = "mpi")]
        let local = self.mpi.as_ref().map_or(0, trlvr::collective::mpi::Mpi::local_rank);
        #[cfg(not(feature = "mpi"))]
        let local = 0;
        match name.strip_suffix(":local") {
            Some(kind) => format!("{kind}:{local}"),
            None => name.to_owned(),
        }
    }

    /// `rank R of N: <line>` on stderr in one write, so lines of several ranks that share
    /// the launcher's output do not interleave mid-line.
    pub fn say(&self, line: &str) {
        use std::io::Write;
        let text = format!("rank {} of {}: {line}\n", self.collective().rank(), self.size());
        let _ = std::io::stderr().write_all(text.as_bytes());
    }

    /// With several ranks, a rank that fails ends the whole job (the others would wait for
    /// it in the next collective), naming itself; with one it hands the error back.
    pub fn finish<T>(&self, result: Result<T>) -> Result<T> {
        #[cfg(feature = "mpi")]
        if let (Err(e), Some(mpi)) = (&result, &self.mpi) {
            self.say(&format!("error: {e:#}"));
            mpi.abort(1);
        }
        result
    }

    /// A panic on one rank ends the process at once (the launcher then ends the others and
    /// names the rank), instead of unwinding into MPI's finalisation, which waits for them.
    #[cfg(feature = "mpi")]
    fn abort_on_panic(&self) {
        if let Some(mpi) = &self.mpi {
            let (rank, size) = (mpi.rank(), mpi.size());
            let default = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                eprintln!("rank {rank} of {size} panicked");
                default(info);
                std::process::abort();
            }));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_devices_take_the_ranks_index() {
        let ranks = Ranks::connect().unwrap();
        assert_eq!(ranks.device("cuda:local"), "cuda:0");
        assert_eq!(ranks.device("cuda:1"), "cuda:1");
        assert_eq!(ranks.device("flex"), "flex");
        assert!(ranks.leads() && ranks.size() == 1);
    }
}
