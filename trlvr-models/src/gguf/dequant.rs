//! ggml tensor types and their dequantisation to f32.
//!
//! A quantised tensor is a sequence of blocks; each block stores a fixed number of
//! elements (32, or 256 for the "K" super-blocks) as small integers plus f16 scales.
//! Every layout here follows `ggml-common.h` (the `block_*` structs) and the reference
//! `dequantize_row_*` routines of `ggml-quants.c`; all multi-byte fields are
//! little-endian.
//!
//! | type | elements | bytes | value of quant `q` |
//! |---|---|---|---|
//! | `Q4_0` | 32 | 18 = d + 16 nibbles | `(q - 8) * d` |
//! | `Q4_1` | 32 | 20 = d, m + 16 nibbles | `q * d + m` |
//! | `Q5_0` | 32 | 22 = d + 4 high-bit bytes + 16 nibbles | `(q - 16) * d` |
//! | `Q8_0` | 32 | 34 = d + 32 i8 | `q * d` |
//! | `Q4_K` | 256 | 144 = d, dmin + 12 packed 6-bit scales/mins + 128 nibbles | `d*sc*q - dmin*m` |
//! | `Q6_K` | 256 | 210 = 128 low nibbles + 64 high 2-bit pairs + 16 i8 scales + d | `d*sc*(q - 32)` |
//!
//! In the 32-element types, byte `j` of the nibbles holds element `j` in its low half
//! and element `j + 16` in its high half.

use half::f16;

/// The ggml element types this crate reads (the `ggml_type` enum's values).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GgmlType {
    /// 32-bit float.
    F32,
    /// 16-bit IEEE float.
    F16,
    /// bfloat16.
    Bf16,
    /// 4-bit, one scale per 32.
    Q4_0,
    /// 4-bit, scale and minimum per 32.
    Q4_1,
    /// 5-bit, one scale per 32.
    Q5_0,
    /// 8-bit, one scale per 32.
    Q8_0,
    /// 4-bit super-blocks of 256 with 6-bit sub-block scales and minimums.
    Q4K,
    /// 6-bit super-blocks of 256 with 8-bit sub-block scales.
    Q6K,
}

impl GgmlType {
    /// The type with ggml id `id`, or `None` for types this crate cannot dequantise.
    pub fn from_id(id: u32) -> Option<Self> {
        Some(match id {
            0 => Self::F32,
            1 => Self::F16,
            2 => Self::Q4_0,
            3 => Self::Q4_1,
            6 => Self::Q5_0,
            8 => Self::Q8_0,
            12 => Self::Q4K,
            14 => Self::Q6K,
            30 => Self::Bf16,
            _ => return None,
        })
    }

    /// ggml's name for a type id, for error messages (`"id N"` when unknown).
    pub fn name_of(id: u32) -> String {
        const NAMES: [&str; 31] = [
            "F32", "F16", "Q4_0", "Q4_1", "Q4_2", "Q4_3", "Q5_0", "Q5_1", "Q8_0", "Q8_1", "Q2_K", "Q3_K",
            "Q4_K", "Q5_K", "Q6_K", "Q8_K", "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ4_NL", "IQ3_S",
            "IQ2_S", "IQ4_XS", "I8", "I16", "I32", "I64", "F64", "IQ1_M", "BF16",
        ];
        NAMES.get(id as usize).map_or_else(|| format!("id {id}"), |n| (*n).to_string())
    }

    /// Elements per block.
    pub fn block_elements(self) -> usize {
        match self {
            Self::F32 | Self::F16 | Self::Bf16 => 1,
            Self::Q4_0 | Self::Q4_1 | Self::Q5_0 | Self::Q8_0 => 32,
            Self::Q4K | Self::Q6K => 256,
        }
    }

    /// Bytes per block.
    pub fn block_bytes(self) -> usize {
        match self {
            Self::F32 => 4,
            Self::F16 | Self::Bf16 => 2,
            Self::Q4_0 => 18,
            Self::Q4_1 => 20,
            Self::Q5_0 => 22,
            Self::Q8_0 => 34,
            Self::Q4K => 144,
            Self::Q6K => 210,
        }
    }

    /// Bytes taken by `elements` elements, or `None` when they do not fill whole blocks
    /// (or would not fit in memory's address range).
    pub fn bytes_for(self, elements: usize) -> Option<usize> {
        if !elements.is_multiple_of(self.block_elements()) {
            return None;
        }
        (elements / self.block_elements()).checked_mul(self.block_bytes())
    }

    /// Dequantises whole blocks: `bytes.len()` must be a multiple of
    /// [`Self::block_bytes`]; returns `bytes.len() / block_bytes * block_elements` values.
    pub fn dequantize(self, bytes: &[u8]) -> Vec<f32> {
        let blocks = bytes.chunks_exact(self.block_bytes());
        let mut out = Vec::with_capacity(blocks.len() * self.block_elements());
        for block in blocks {
            match self {
                Self::F32 => out.push(f32::from_le_bytes([block[0], block[1], block[2], block[3]])),
                Self::F16 => out.push(f16_at(block, 0)),
                Self::Bf16 => out.push(half::bf16::from_le_bytes([block[0], block[1]]).to_f32()),
                Self::Q4_0 => q4_0(block, &mut out),
                Self::Q4_1 => q4_1(block, &mut out),
                Self::Q5_0 => q5_0(block, &mut out),
                Self::Q8_0 => q8_0(block, &mut out),
                Self::Q4K => q4_k(block, &mut out),
                Self::Q6K => q6_k(block, &mut out),
            }
        }
        out
    }
}

fn f16_at(bytes: &[u8], at: usize) -> f32 {
    f16::from_le_bytes([bytes[at], bytes[at + 1]]).to_f32()
}

/// `d: f16, qs: [u8; 16]`.
fn q4_0(block: &[u8], out: &mut Vec<f32>) {
    let d = f16_at(block, 0);
    let qs = &block[2..18];
    out.extend(qs.iter().map(|&q| (f32::from(q & 0x0F) - 8.0) * d));
    out.extend(qs.iter().map(|&q| (f32::from(q >> 4) - 8.0) * d));
}

/// `d: f16, m: f16, qs: [u8; 16]`.
fn q4_1(block: &[u8], out: &mut Vec<f32>) {
    let (d, m) = (f16_at(block, 0), f16_at(block, 2));
    let qs = &block[4..20];
    out.extend(qs.iter().map(|&q| f32::from(q & 0x0F) * d + m));
    out.extend(qs.iter().map(|&q| f32::from(q >> 4) * d + m));
}

/// `d: f16, qh: u32 (bit j is the fifth bit of element j), qs: [u8; 16]`.
fn q5_0(block: &[u8], out: &mut Vec<f32>) {
    let d = f16_at(block, 0);
    let qh = u32::from_le_bytes([block[2], block[3], block[4], block[5]]);
    let qs = &block[6..22];
    let value = |low: u8, j: usize| {
        let high = ((qh >> j) & 1) as u8;
        (f32::from(low | (high << 4)) - 16.0) * d
    };
    out.extend(qs.iter().enumerate().map(|(j, &q)| value(q & 0x0F, j)));
    out.extend(qs.iter().enumerate().map(|(j, &q)| value(q >> 4, j + 16)));
}

/// `d: f16, qs: [i8; 32]`.
fn q8_0(block: &[u8], out: &mut Vec<f32>) {
    let d = f16_at(block, 0);
    out.extend(block[2..34].iter().map(|&q| f32::from(q as i8) * d));
}

/// Scale and minimum of sub-block `j` (0..8) from the 12 packed bytes of a `Q4_K`
/// block: sub-blocks 0..4 keep 6 bits in bytes `j` and `j + 4`; sub-blocks 4..8 keep
/// their low 4 bits in byte `j + 4` and their top 2 bits in the spare high bits of
/// bytes `j - 4` (scale) and `j` (minimum).
fn scale_min_k4(j: usize, s: &[u8]) -> (u8, u8) {
    if j < 4 {
        (s[j] & 63, s[j + 4] & 63)
    } else {
        ((s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4), (s[j + 4] >> 4) | ((s[j] >> 6) << 4))
    }
}

/// `d: f16, dmin: f16, scales: [u8; 12], qs: [u8; 128]`: four chunks of 64 elements;
/// chunk `c` reads bytes `32c..32c+32`, low nibbles (sub-block `2c`) first, then high
/// nibbles (sub-block `2c + 1`).
fn q4_k(block: &[u8], out: &mut Vec<f32>) {
    let (d, dmin) = (f16_at(block, 0), f16_at(block, 2));
    let scales = &block[4..16];
    for (c, qs) in block[16..144].chunks_exact(32).enumerate() {
        for (sub, shift) in [(2 * c, 0), (2 * c + 1, 4)] {
            let (sc, m) = scale_min_k4(sub, scales);
            let (scale, min) = (d * f32::from(sc), dmin * f32::from(m));
            out.extend(qs.iter().map(|&q| scale * f32::from((q >> shift) & 0x0F) - min));
        }
    }
}

/// `ql: [u8; 128], qh: [u8; 64], scales: [i8; 16], d: f16`: two halves of 128
/// elements; in half `n`, element `32k + l` (k in 0..4, l in 0..32) takes the low
/// (k < 2) or high (k >= 2) nibble of `ql[64n + l + 32(k % 2)]`, bits `2k..2k+2` of
/// `qh[32n + l]` as its top two bits, and scale `scales[8n + 2k + l / 16]`.
fn q6_k(block: &[u8], out: &mut Vec<f32>) {
    let d = f16_at(block, 208);
    let (ql, qh, scales) = (&block[0..128], &block[128..192], &block[192..208]);
    for n in 0..2 {
        for k in 0..4 {
            for l in 0..32 {
                let low = ql[64 * n + l + 32 * (k % 2)];
                let low = if k < 2 { low & 0x0F } else { low >> 4 };
                let high = (qh[32 * n + l] >> (2 * k)) & 3;
                let q = i32::from(low | (high << 4)) - 32;
                let scale = f32::from(scales[8 * n + 2 * k + l / 16] as i8);
                out.push(d * scale * q as f32);
            }
        }
    }
}
