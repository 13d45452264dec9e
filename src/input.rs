//! Reading a JSON-lines input file, or standard input for `-`, a bounded line at a time.

use std::io::BufRead;
use std::path::Path;

use anyhow::{Context, Result};

pub use trlvr::lines::MAX_LINE_BYTES;

/// The lines of `path`; `-` means standard input.
pub fn open(path: &Path) -> Result<Box<dyn BufRead>> {
    if path.as_os_str() == "-" {
        return Ok(Box::new(std::io::stdin().lock()));
    }
    let file = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    Ok(Box::new(std::io::BufReader::new(file)))
}

/// The lines of `reader` with their numbers, each bounded ([`trlvr::lines::lines`]).
pub fn lines(reader: impl BufRead, max: usize) -> impl Iterator<Item = Result<(usize, String)>> {
    trlvr::lines::lines(reader, max).map(|line| line.map_err(anyhow::Error::from))
}
