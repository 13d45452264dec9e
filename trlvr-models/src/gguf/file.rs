//! The GGUF container: header, metadata key/values and tensor directory.
//!
//! Layout (versions 2 and 3; all integers little-endian):
//!
//! ```text
//! "GGUF" | version: u32 | tensor_count: u64 | kv_count: u64
//! kv_count x (key: string, type: u32, value)
//! tensor_count x (name: string, n_dims: u32, dims: [u64; n_dims], type: u32, offset: u64)
//! padding to `general.alignment` (default 32) | tensor data
//! ```
//!
//! A string is a `u64` byte length and UTF-8 bytes; an array is an element type (`u32`),
//! a `u64` count and the elements. Tensor offsets count from the start of the data
//! section and are aligned too. Dims are innermost first: `dims[0]` is the row length.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::dequant::GgmlType;
use crate::{Error, Result};

/// One metadata value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `u8`
    U8(u8),
    /// `i8`
    I8(i8),
    /// `u16`
    U16(u16),
    /// `i16`
    I16(i16),
    /// `u32`
    U32(u32),
    /// `i32`
    I32(i32),
    /// `u64`
    U64(u64),
    /// `i64`
    I64(i64),
    /// `f32`
    F32(f32),
    /// `f64`
    F64(f64),
    /// `bool`
    Bool(bool),
    /// A UTF-8 string.
    String(String),
    /// An array of values of one type (arrays of arrays are allowed).
    Array(Vec<Value>),
}

impl Value {
    /// An integer value of any width, if it is a non-negative integer.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Value::U8(v) => Some(v.into()),
            Value::U16(v) => Some(v.into()),
            Value::U32(v) => Some(v.into()),
            Value::U64(v) => Some(v),
            Value::I8(v) => u64::try_from(v).ok(),
            Value::I16(v) => u64::try_from(v).ok(),
            Value::I32(v) => u64::try_from(v).ok(),
            Value::I64(v) => u64::try_from(v).ok(),
            _ => None,
        }
    }

    /// A float or integer value as `f64`. An `f32` is widened through its shortest
    /// decimal form, so a stored `1e-6` reads as `1e-6`, not `9.99999997e-7`.
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Value::F32(v) => v.to_string().parse().ok(),
            Value::F64(v) => Some(v),
            _ => self.as_u64().map(|v| v as f64),
        }
    }

    /// A string value.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// An array value.
    pub fn as_array(&self) -> Option<&[Value]> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }
}

/// Where one tensor lives in the file.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorInfo {
    /// Dims, innermost first (`dims[0]` is the row length).
    pub dims: Vec<usize>,
    /// The ggml type id (see [`GgmlType::from_id`]).
    pub type_id: u32,
    /// Byte offset from the start of the data section.
    pub offset: usize,
}

impl TensorInfo {
    /// Number of elements.
    pub fn elements(&self) -> usize {
        self.dims.iter().product()
    }

    /// The dims outermost first, as PyTorch and Burn list them.
    pub fn shape(&self) -> Vec<usize> {
        self.dims.iter().rev().copied().collect()
    }
}

/// A parsed GGUF file held in memory.
#[derive(Debug)]
pub struct GgufFile {
    path: PathBuf,
    /// The format version (2 or 3).
    pub version: u32,
    /// Every metadata key/value.
    pub metadata: BTreeMap<String, Value>,
    /// The tensor directory, by GGUF tensor name.
    pub tensors: BTreeMap<String, TensorInfo>,
    bytes: Vec<u8>,
    data_start: usize,
}

impl GgufFile {
    /// Reads and parses the file at `path`.
    ///
    /// # Errors
    /// [`Error::Io`] if it cannot be read, [`Error::Checkpoint`] if it is not a valid
    /// GGUF v2/v3 file.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        let bytes = std::fs::read(&path).map_err(|source| Error::Io { path: path.clone(), source })?;
        Self::parse(path, bytes)
    }

    /// Parses GGUF bytes; `path` only names the file in errors.
    ///
    /// # Errors
    /// [`Error::Checkpoint`] if `bytes` is not a valid GGUF v2/v3 file.
    pub fn parse(path: impl Into<PathBuf>, bytes: Vec<u8>) -> Result<Self> {
        let path = path.into();
        let fail = |message: String| Error::Checkpoint { path: path.clone(), message };
        let mut r = Reader { bytes: &bytes, at: 0 };
        if r.take(4).map_err(&fail)? != b"GGUF" {
            return Err(fail("not a GGUF file (bad magic)".into()));
        }
        let version = r.u32().map_err(&fail)?;
        if !(2..=3).contains(&version) {
            return Err(fail(format!("GGUF version {version} is not supported; expected 2 or 3")));
        }
        let tensor_count = r.u64().map_err(&fail)?;
        let kv_count = r.u64().map_err(&fail)?;
        let mut metadata = BTreeMap::new();
        for _ in 0..kv_count {
            let key = r.string().map_err(&fail)?;
            let kind = r.u32().map_err(&fail)?;
            let value = r.value(kind, 0).map_err(|e| fail(format!("metadata {key}: {e}")))?;
            metadata.insert(key, value);
        }
        let mut tensors = BTreeMap::new();
        for _ in 0..tensor_count {
            let name = r.string().map_err(&fail)?;
            let info = r.tensor_info().map_err(|e| fail(format!("tensor {name}: {e}")))?;
            if tensors.insert(name.clone(), info).is_some() {
                return Err(fail(format!("tensor {name} appears twice")));
            }
        }
        let alignment = match metadata.get("general.alignment") {
            None => 32,
            Some(v) => match v.as_u64() {
                Some(a) if a > 0 && a.is_power_of_two() => a as usize,
                _ => return Err(fail(format!("general.alignment {v:?} is not a power of two"))),
            },
        };
        let data_start = r.at.next_multiple_of(alignment);
        let file = GgufFile { path, version, metadata, tensors, bytes, data_start };
        for (name, info) in &file.tensors {
            if !info.offset.is_multiple_of(alignment) {
                return Err(file.error(format!("tensor {name}: offset {} is not aligned", info.offset)));
            }
            // Unsupported types are reported when the tensor is read, so the metadata of
            // any file stays readable.
            if GgmlType::from_id(info.type_id).is_some() {
                file.tensor_bytes(name, info)?;
            }
        }
        Ok(file)
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// An [`Error::Checkpoint`] about this file.
    pub(crate) fn error(&self, message: String) -> Error {
        Error::Checkpoint { path: self.path.clone(), message }
    }

    /// The metadata value under `key`.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.metadata.get(key)
    }

    /// The type and raw bytes of a tensor.
    fn tensor_bytes(&self, name: &str, info: &TensorInfo) -> Result<(GgmlType, &[u8])> {
        let kind = GgmlType::from_id(info.type_id).ok_or_else(|| {
            self.error(format!(
                "tensor {name}: ggml type {} is not supported (F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q8_0, Q4_K, Q6_K are)",
                GgmlType::name_of(info.type_id)
            ))
        })?;
        let length = kind.bytes_for(info.elements()).ok_or_else(|| {
            self.error(format!(
                "tensor {name}: {} elements do not fill whole {kind:?} blocks",
                info.elements()
            ))
        })?;
        let start = self.data_start.checked_add(info.offset);
        let bytes = start.and_then(|s| self.bytes.get(s..s.checked_add(length)?));
        let bytes =
            bytes.ok_or_else(|| self.error(format!("tensor {name}: data runs past the end of the file")))?;
        Ok((kind, bytes))
    }

    /// Tensor `name` dequantised to f32, with its shape outermost first.
    ///
    /// # Errors
    /// [`Error::Checkpoint`] naming the tensor if it is absent or of an unsupported type.
    pub fn tensor_f32(&self, name: &str) -> Result<(Vec<f32>, Vec<usize>)> {
        let info = self.tensors.get(name).ok_or_else(|| self.error(format!("tensor {name} is missing")))?;
        let (kind, bytes) = self.tensor_bytes(name, info)?;
        Ok((kind.dequantize(bytes), info.shape()))
    }
}

/// A cursor over the file's bytes.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

/// Arrays nested deeper than this are refused (a malformed file could recurse forever).
const MAX_DEPTH: usize = 8;

/// The fewest bytes a value of type `kind` takes (a string its length, an array its
/// element type and length).
fn smallest_encoding(kind: u32) -> std::result::Result<usize, String> {
    Ok(match kind {
        0 | 1 | 7 => 1,
        2 | 3 => 2,
        4..=6 => 4,
        8 | 10..=12 => 8,
        9 => 12,
        other => return Err(format!("unknown value type {other}")),
    })
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> std::result::Result<&'a [u8], String> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len());
        let end = end.ok_or_else(|| format!("unexpected end of file at byte {}", self.at))?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }

    fn array<const N: usize>(&mut self) -> std::result::Result<[u8; N], String> {
        Ok(self.take(N)?.try_into().expect("took N bytes"))
    }

    fn u32(&mut self) -> std::result::Result<u32, String> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    fn u64(&mut self) -> std::result::Result<u64, String> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    fn length(&mut self) -> std::result::Result<usize, String> {
        let n = self.u64()?;
        usize::try_from(n)
            .ok()
            .filter(|&n| n <= self.bytes.len())
            .ok_or_else(|| format!("length {n} too large"))
    }

    fn string(&mut self) -> std::result::Result<String, String> {
        let n = self.length()?;
        String::from_utf8(self.take(n)?.to_vec()).map_err(|e| format!("invalid UTF-8 string: {e}"))
    }

    fn value(&mut self, kind: u32, depth: usize) -> std::result::Result<Value, String> {
        Ok(match kind {
            0 => Value::U8(u8::from_le_bytes(self.array()?)),
            1 => Value::I8(i8::from_le_bytes(self.array()?)),
            2 => Value::U16(u16::from_le_bytes(self.array()?)),
            3 => Value::I16(i16::from_le_bytes(self.array()?)),
            4 => Value::U32(self.u32()?),
            5 => Value::I32(i32::from_le_bytes(self.array()?)),
            6 => Value::F32(f32::from_le_bytes(self.array()?)),
            7 => match self.array::<1>()?[0] {
                0 => Value::Bool(false),
                1 => Value::Bool(true),
                b => return Err(format!("invalid bool byte {b}")),
            },
            8 => Value::String(self.string()?),
            9 if depth < MAX_DEPTH => {
                let inner = self.u32()?;
                let n = self.length()?;
                // Checked against the bytes left before allocating: each element takes at
                // least its type's smallest encoding.
                let least = n.checked_mul(smallest_encoding(inner)?);
                if least.is_none_or(|b| b > self.bytes.len() - self.at) {
                    return Err(format!(
                        "array of {n} elements of type {inner} runs past the end of the file"
                    ));
                }
                let mut items = Vec::with_capacity(n);
                for _ in 0..n {
                    items.push(self.value(inner, depth + 1)?);
                }
                Value::Array(items)
            }
            9 => return Err("arrays nested too deeply".into()),
            10 => Value::U64(self.u64()?),
            11 => Value::I64(i64::from_le_bytes(self.array()?)),
            12 => Value::F64(f64::from_le_bytes(self.array()?)),
            other => return Err(format!("unknown value type {other}")),
        })
    }

    fn tensor_info(&mut self) -> std::result::Result<TensorInfo, String> {
        let n_dims = self.u32()?;
        if n_dims == 0 || n_dims > 4 {
            return Err(format!("{n_dims} dimensions (1 to 4 expected)"));
        }
        let dims = (0..n_dims)
            .map(|_| self.u64().and_then(|d| usize::try_from(d).map_err(|e| e.to_string())))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        if dims.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d)).is_none() {
            return Err(format!("dims {dims:?} overflow"));
        }
        let type_id = self.u32()?;
        let offset = usize::try_from(self.u64()?).map_err(|e| e.to_string())?;
        Ok(TensorInfo { dims, type_id, offset })
    }
}
