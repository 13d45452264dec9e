//! Reading a JSON-lines input file, or standard input for `-`, a bounded line at a time.

use std::io::{BufRead, Read};
use std::path::Path;

use anyhow::{Context, Result, anyhow};

/// The longest input line read (bytes): one JSON object per line never needs more, and an
/// endless line (`--input /dev/zero`) stops here instead of exhausting memory.
pub const MAX_LINE_BYTES: usize = 16 << 20;

/// The lines of `path`; `-` means standard input.
pub fn open(path: &Path) -> Result<Box<dyn BufRead>> {
    if path.as_os_str() == "-" {
        return Ok(Box::new(std::io::stdin().lock()));
    }
    let file = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    Ok(Box::new(std::io::BufReader::new(file)))
}

/// The lines of `reader` with their numbers (from 1), without their line ends. A line
/// longer than `max` bytes, or not UTF-8, is an error naming it, and reading stops there.
pub fn lines(mut reader: impl BufRead, max: usize) -> impl Iterator<Item = Result<(usize, String)>> {
    let mut n = 0usize;
    let mut done = false;
    std::iter::from_fn(move || {
        if done {
            return None;
        }
        n += 1;
        let mut bytes = Vec::new();
        let read = (&mut reader).take(max as u64 + 1).read_until(b'\n', &mut bytes);
        let line = match read {
            Ok(0) => return None,
            Ok(_) if bytes.last() == Some(&b'\n') => {
                bytes.pop();
                if bytes.last() == Some(&b'\r') {
                    bytes.pop();
                }
                Ok(bytes)
            }
            Ok(_) if bytes.len() > max => Err(anyhow!("line {n} is longer than {max} bytes")),
            Ok(_) => Ok(bytes),
            Err(e) => Err(anyhow!(e).context(format!("reading line {n}"))),
        };
        let line = line.and_then(|b| String::from_utf8(b).map_err(|_| anyhow!("line {n} is not UTF-8")));
        done = line.is_err();
        Some(line.map(|text| (n, text)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines come back numbered and without line ends; an overlong line is an error naming
    /// it after at most `max + 1` bytes read, and nothing is read after it.
    #[test]
    fn lines_are_bounded_and_numbered() {
        let read =
            |text: &[u8], max| lines(text, max).map(|l| l.map_err(|e| e.to_string())).collect::<Vec<_>>();
        assert_eq!(
            read(b"a\r\nbcd\n\nlast", 4),
            vec![Ok((1, "a".into())), Ok((2, "bcd".into())), Ok((3, String::new())), Ok((4, "last".into()))]
        );
        assert_eq!(
            read(b"abcd\nabcde\nx\n", 4),
            vec![Ok((1, "abcd".into())), Err("line 2 is longer than 4 bytes".into())]
        );
        assert_eq!(read(b"ok\n\xff\n", 4), vec![Ok((1, "ok".into())), Err("line 2 is not UTF-8".into())]);
        let endless = std::io::repeat(0).take(1 << 40);
        let first = lines(std::io::BufReader::new(endless), 1 << 10).next().unwrap();
        assert_eq!(first.unwrap_err().to_string(), "line 1 is longer than 1024 bytes");
    }
}
