//! Reading a JSON-lines input file, or standard input for `-`.

use std::io::BufRead;
use std::path::Path;

use anyhow::{Context, Result};

/// The lines of `path`; `-` means standard input.
pub fn open(path: &Path) -> Result<Box<dyn BufRead>> {
    if path.as_os_str() == "-" {
        return Ok(Box::new(std::io::stdin().lock()));
    }
    let file = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    Ok(Box::new(std::io::BufReader::new(file)))
}
