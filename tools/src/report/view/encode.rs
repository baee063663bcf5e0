//! The page's binary columns: unsigned LEB128 varints (deltas where the
//! values grow), packed one after another and written as base64.
//!
//! A column of small numbers takes one byte a value; the page decodes them
//! into typed arrays. Base64 adds a third, so a column of `n` bytes costs
//! `4 * ceil(n / 3)` characters of HTML.
#![forbid(unsafe_code)]

/// Columns packed one after another, each remembered by name, offset and length.
#[derive(Debug, Default, Clone)]
pub struct Columns {
    /// The packed bytes.
    pub bytes: Vec<u8>,
    /// `(name, offset, length in bytes, count of values)` of each column.
    pub index: Vec<(String, usize, usize, usize)>,
}

impl Columns {
    /// Appends a column of values as varints.
    pub fn push(&mut self, name: &str, values: impl IntoIterator<Item = u64>) {
        let offset = self.bytes.len();
        let mut count = 0;
        for v in values {
            put_varint(&mut self.bytes, v);
            count += 1;
        }
        self.index
            .push((name.to_string(), offset, self.bytes.len() - offset, count));
    }
}

/// Appends `v` as an unsigned LEB128 varint (7 bits a byte, low bits first).
///
/// ```
/// use rmm_tools::report::view::encode::put_varint;
/// let mut out = Vec::new();
/// put_varint(&mut out, 300);
/// assert_eq!(out, [0xac, 0x02]);
/// ```
pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Zigzag: small magnitudes of either sign to small unsigned numbers.
///
/// ```
/// use rmm_tools::report::view::encode::zigzag;
/// assert_eq!([zigzag(0), zigzag(-1), zigzag(1), zigzag(-2)], [0, 1, 2, 3]);
/// ```
pub fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// Standard base64 with padding.
///
/// ```
/// use rmm_tools::report::view::encode::base64;
/// assert_eq!(base64(b"rmm view"), "cm1tIHZpZXc=");
/// ```
pub fn base64(bytes: &[u8]) -> String {
    const TABLE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (i, shift) in [18u32, 12, 6, 0].into_iter().enumerate() {
            if i <= chunk.len() {
                out.push(TABLE[((n >> shift) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get_varint(bytes: &[u8], at: &mut usize) -> u64 {
        let (mut v, mut shift) = (0u64, 0);
        loop {
            let b = bytes[*at];
            *at += 1;
            v |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return v;
            }
            shift += 7;
        }
    }

    #[test]
    fn varints_round_trip() {
        let values = [0, 1, 127, 128, 16_383, 16_384, u32::MAX as u64, 1 << 53, u64::MAX];
        let mut cols = Columns::default();
        cols.push("v", values);
        let mut at = 0;
        for v in values {
            assert_eq!(get_varint(&cols.bytes, &mut at), v);
        }
        assert_eq!(at, cols.bytes.len());
        assert_eq!(cols.index[0].3, values.len());
    }

    #[test]
    fn base64_lengths() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"a"), "YQ==");
        assert_eq!(base64(b"ab"), "YWI=");
        assert_eq!(base64(b"abc"), "YWJj");
    }
}
