//! TensorBoard event files, written directly: a file of TFRecords (length, masked CRC-32C,
//! bytes, masked CRC-32C), each an `Event` protocol buffer (wall time, step, and a summary
//! of scalars). Two messages of a few fields do not need a protobuf stack; the format is
//! TensorBoard's own (`tensorflow/core/util/event.proto`, `summary.proto`), and
//! `scripts/check_tensorboard.py` reads what this writes with TensorBoard's reader.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use serde_json::Value;

/// Appends scalar events to one event file in a run's `tensorboard/` folder.
#[derive(Debug)]
pub struct EventWriter {
    path: PathBuf,
    file: BufWriter<File>,
}

impl EventWriter {
    /// A new event file in `dir` (a new one each start: TensorBoard reads every file of a
    /// folder), opened with the version record TensorBoard expects first.
    ///
    /// # Errors
    /// The folder or file cannot be made.
    pub fn create(dir: &Path) -> Result<Self> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let now = now();
        let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "localhost".into());
        let path = dir.join(format!("events.out.tfevents.{}.{host}.{}", now as u64, std::process::id()));
        let file = File::create(&path).with_context(|| format!("creating {}", path.display()))?;
        let mut writer = Self { path, file: BufWriter::new(file) };
        let mut event = Vec::new();
        double(&mut event, 1, now);
        bytes(&mut event, 3, b"brain.Event:2");
        writer.record(&event)?;
        Ok(writer)
    }

    /// The file written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// One event at `step` holding each `(tag, value)` as a scalar; flushed, so a crash
    /// loses at most the step under way.
    ///
    /// # Errors
    /// The write fails.
    pub fn scalars(&mut self, step: u64, values: &[(String, f32)]) -> Result<()> {
        let mut summary = Vec::new();
        for (tag, value) in values {
            let mut v = Vec::new();
            bytes(&mut v, 1, tag.as_bytes());
            key(&mut v, 2, 5);
            v.extend_from_slice(&value.to_le_bytes());
            bytes(&mut summary, 1, &v);
        }
        let mut event = Vec::new();
        double(&mut event, 1, now());
        key(&mut event, 2, 0);
        varint(&mut event, step);
        bytes(&mut event, 5, &summary);
        self.record(&event)?;
        self.file.flush().with_context(|| format!("writing {}", self.path.display()))
    }

    fn record(&mut self, data: &[u8]) -> Result<()> {
        let length = (data.len() as u64).to_le_bytes();
        let mut out = Vec::with_capacity(data.len() + 16);
        out.extend_from_slice(&length);
        out.extend_from_slice(&masked_crc(&length).to_le_bytes());
        out.extend_from_slice(data);
        out.extend_from_slice(&masked_crc(data).to_le_bytes());
        self.file.write_all(&out).with_context(|| format!("writing {}", self.path.display()))
    }
}

/// Every number of a metrics line as a scalar tagged `train/<key>`; objects one level
/// down as `train/<key>/<name>` (the reward terms, the objective's metrics).
pub fn scalars(metrics: &Value) -> Vec<(String, f32)> {
    let mut out = Vec::new();
    let Some(object) = metrics.as_object() else { return out };
    for (k, v) in object {
        if k == "step" {
            continue;
        }
        match v {
            Value::Number(n) => out.extend(n.as_f64().map(|x| (format!("train/{k}"), x as f32))),
            Value::Object(inner) => out.extend(
                inner.iter().filter_map(|(name, x)| Some((format!("train/{k}/{name}"), x.as_f64()? as f32))),
            ),
            _ => {}
        }
    }
    out
}

fn now() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
}

/// TFRecord's checksum: CRC-32C, rotated and offset so that a CRC of CRCs is not trivial.
fn masked_crc(data: &[u8]) -> u32 {
    let crc = crc32c::crc32c(data);
    crc.rotate_right(15).wrapping_add(0xa282_ead8)
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A field's key: its number and wire type (0 varint, 1 64-bit, 2 bytes, 5 32-bit).
fn key(out: &mut Vec<u8>, field: u64, wire: u64) {
    varint(out, (field << 3) | wire);
}

fn double(out: &mut Vec<u8>, field: u64, v: f64) {
    key(out, field, 1);
    out.extend_from_slice(&v.to_le_bytes());
}

fn bytes(out: &mut Vec<u8>, field: u64, data: &[u8]) {
    key(out, field, 2);
    varint(out, data.len() as u64);
    out.extend_from_slice(data);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The checksum of TFRecord's published test vector: CRC-32C of 32 zero bytes is
    /// 0x8a9136aa (RFC 3720, B.4), and the mask is the rotation plus the offset.
    #[test]
    fn the_record_checksum_is_masked_crc32c() {
        assert_eq!(crc32c::crc32c(&[0u8; 32]), 0x8a91_36aa);
        assert_eq!(masked_crc(&[0u8; 32]), 0x8a91_36aau32.rotate_right(15).wrapping_add(0xa282_ead8));
    }

    /// A varint and a scalar event decode back by hand: the bytes are protobuf's.
    #[test]
    fn fields_are_protobuf_wire_format() {
        let mut v = Vec::new();
        varint(&mut v, 300);
        assert_eq!(v, [0xac, 0x02]);
        let dir = std::env::temp_dir().join(format!("trlvr-tb-{}", std::process::id()));
        let mut writer = EventWriter::create(&dir).unwrap();
        writer.scalars(7, &[("train/reward_mean".into(), 0.5)]).unwrap();
        let data = std::fs::read(writer.path()).unwrap();
        // Two records; the second's payload ends with the tag, then the float 0.5.
        let first = u64::from_le_bytes(data[..8].try_into().unwrap()) as usize;
        let second = &data[8 + 4 + first + 4..];
        let len = u64::from_le_bytes(second[..8].try_into().unwrap()) as usize;
        let payload = &second[12..12 + len];
        assert_eq!(u32::from_le_bytes(second[12 + len..16 + len].try_into().unwrap()), masked_crc(payload));
        assert_eq!(&payload[9..11], &[0x10, 7], "step 7");
        assert!(
            payload.ends_with(&[b"train/reward_mean".as_slice(), &[0x15], &0.5f32.to_le_bytes()].concat())
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn every_number_of_a_metrics_line_becomes_a_scalar() {
        let m =
            serde_json::json!({ "step": 3, "reward_mean": 0.25, "kl": null, "rewards": { "length": -0.5 } });
        let mut s = scalars(&m);
        s.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(s, [("train/reward_mean".to_string(), 0.25), ("train/rewards/length".to_string(), -0.5)]);
    }
}
