//! Reading line-based files (JSON lines) with a bound on each line, so an endless line
//! (`/dev/zero`, a corrupt file) is an error naming it instead of exhausting memory.

use std::io::{BufRead, Read};
use std::path::Path;

/// The longest line read (bytes): one JSON object per line never needs more.
pub const MAX_LINE_BYTES: usize = 16 << 20;

fn invalid(message: String) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, message)
}

/// The lines of `reader` with their numbers (from 1), without their line ends. A line
/// longer than `max` bytes, or not UTF-8, is an error naming it, and reading stops there.
pub fn lines(mut reader: impl BufRead, max: usize) -> impl Iterator<Item = std::io::Result<(usize, String)>> {
    let mut n = 0usize;
    let mut done = false;
    std::iter::from_fn(move || {
        if done {
            return None;
        }
        n += 1;
        let mut bytes = Vec::new();
        let line = match (&mut reader).take(max as u64 + 1).read_until(b'\n', &mut bytes) {
            Ok(0) => return None,
            Ok(_) if bytes.last() == Some(&b'\n') => {
                bytes.pop();
                if bytes.last() == Some(&b'\r') {
                    bytes.pop();
                }
                Ok(bytes)
            }
            Ok(_) if bytes.len() > max => Err(invalid(format!("line {n} is longer than {max} bytes"))),
            Ok(_) => Ok(bytes),
            Err(e) => Err(invalid(format!("reading line {n}: {e}"))),
        };
        let line =
            line.and_then(|b| String::from_utf8(b).map_err(|_| invalid(format!("line {n} is not UTF-8"))));
        done = line.is_err();
        Some(line.map(|text| (n, text)))
    })
}

/// The whole text of `path`, each line at most [`MAX_LINE_BYTES`]: for the readers that
/// need the file at once (a torn last line is found by its missing newline, which is kept).
///
/// # Errors
/// The file cannot be read, or a line is too long or not UTF-8 (naming it).
pub fn read_text(path: &Path) -> std::io::Result<String> {
    read_text_bounded(std::io::BufReader::new(std::fs::File::open(path)?), MAX_LINE_BYTES)
}

fn read_text_bounded(mut reader: impl BufRead, max: usize) -> std::io::Result<String> {
    let mut text = Vec::new();
    for n in 1.. {
        let start = text.len();
        let read = (&mut reader).take(max as u64 + 1).read_until(b'\n', &mut text)?;
        if read == 0 {
            break;
        }
        let body = read - usize::from(text.last() == Some(&b'\n'));
        if body > max {
            return Err(invalid(format!("line {n} is longer than {max} bytes")));
        }
        if std::str::from_utf8(&text[start..]).is_err() {
            return Err(invalid(format!("line {n} is not UTF-8")));
        }
    }
    Ok(String::from_utf8(text).expect("each line checked"))
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

    /// The whole text comes back as it is (line ends and a torn last line kept); an endless
    /// line stops the read after `max + 1` bytes.
    #[test]
    fn whole_texts_are_bounded_per_line() {
        let read = |text: &[u8], max| read_text_bounded(text, max).map_err(|e| e.to_string());
        assert_eq!(read(b"ab\r\ncd\n\nlast", 4), Ok("ab\r\ncd\n\nlast".into()));
        assert_eq!(read(b"abcd\n", 4), Ok("abcd\n".into()));
        assert_eq!(read(b"ok\nabcde\n", 4), Err("line 2 is longer than 4 bytes".into()));
        assert_eq!(read(b"ok\n\xff\n", 4), Err("line 2 is not UTF-8".into()));
        let endless = std::io::BufReader::new(std::io::repeat(b'x').take(1 << 40));
        assert_eq!(
            read_text_bounded(endless, 1 << 10).unwrap_err().to_string(),
            "line 1 is longer than 1024 bytes"
        );
    }
}
