//! The capture's hex spelling of raw bytes (scalar argument values, `ArgRecord::Scalar::bytes`)
//! and of digests (the names of blobs).
//!
//! It lives here because it is part of the format: the shim writes it, the analyzer reads it,
//! and generated suites write it too. Readers accept an optional `0x` prefix and either case.

/// Lower-case hex of `bytes` in memory order, no prefix (`e8030000` for the `uint` 1000).
pub fn encode(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[(b >> 4) as usize] as char);
        s.push(DIGITS[(b & 15) as usize] as char);
    }
    s
}

/// The bytes of a hex spelling (optional `0x`, either case); `None` when it is not valid hex.
pub fn decode(text: &str) -> Option<Vec<u8>> {
    let t = text.strip_prefix("0x").unwrap_or(text).as_bytes();
    if !t.len().is_multiple_of(2) {
        return None;
    }
    let digit = |c: u8| -> Option<u8> {
        match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            b'A'..=b'F' => Some(c - b'A' + 10),
            _ => None,
        }
    };
    t.chunks_exact(2)
        .map(|p| Some((digit(p[0])? << 4) | digit(p[1])?))
        .collect()
}

/// A blake3 digest in lower-case hex: the name of a blob in `blobs/`.
pub type Hash = String;

/// Whether `s` names a blob: exactly 64 lower-case hex digits (blake3), nothing else — the
/// one shape a capture field may have before it becomes part of a path.
pub fn is_digest(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_rejects_garbage() {
        assert_eq!(encode(&[0xe8, 3, 0, 0]), "e8030000");
        assert_eq!(decode("0a0BfF"), Some(vec![0x0a, 0x0b, 0xff]));
        assert_eq!(decode("0x01"), Some(vec![1]));
        assert_eq!(decode(&encode(&[0, 0xab, 0xff])), Some(vec![0, 0xab, 0xff]));
        assert_eq!(decode("abc"), None);
        assert_eq!(decode("zz"), None);
    }
}
