//! Buffer contents stored as content-defined chunks, each compressed with zstd.
//!
//! Why: an application that changes a tenth of a 16 MB buffer per launch produced a new
//! 16 MB blob per launch, and a Gaussian elimination stored 4 GB for 2 046 launches over one
//! 4 MB matrix. Cutting contents at boundaries chosen by their bytes (FastCDC) makes the
//! chunks of the unchanged parts of two successive versions identical, so each version costs
//! only its changed chunks plus a small index; zstd shrinks those chunks further.
//!
//! On disk (format version 2), for a content whose whole-content blake3 digest is `H`:
//! * `blobs/H[..2]/H.chunks` — the index, text: the line `cltrap-chunks 1`, the line
//!   `size N`, then one line `<chunk digest> <length>` per chunk, in order;
//! * `blobs/C[..2]/C.chunk` — one chunk whose blake3 digest (of its *uncompressed* bytes)
//!   is `C`: one encoding byte (`z`: zstd of the bytes; `s`: zstd of the bytes shuffled by
//!   4-byte lanes — all first bytes of each 4-byte word, then all second bytes, ... which
//!   groups the exponent bytes of float data and compresses it better; chosen per chunk on a
//!   sample), then the zstd frame.
//!
//! A reader checks every chunk against its digest and the reassembled content against `H`.

use std::fmt::Write as _;

/// Contents smaller than this are stored whole, as a plain blob (one file, no index): the
/// index and chunk files would cost more than they save.
pub const MIN_CHUNKED: usize = 8 << 10;
/// FastCDC bounds. The average decides how much of a small change spills into rewritten
/// chunks (about one average chunk at each end of a changed run) and how big an index gets
/// (one 70-byte line per chunk: 36 KB for a 16 MB buffer).
/// FastCDC does not look at the first `CHUNK_MIN` bytes of a chunk, so a minimum of half the
/// average halves the cost of cutting (the pass over every byte of every content).
pub const CHUNK_MIN: usize = 16 << 10;
/// See [`CHUNK_MIN`].
pub const CHUNK_AVG: usize = 32 << 10;
/// See [`CHUNK_MIN`]; also the largest chunk a reader accepts.
pub const CHUNK_MAX: usize = 128 << 10;
/// zstd level: 1 is the fastest and, on buffer contents, within a few percent of level 3.
const LEVEL: i32 = 1;
/// First line of an index file.
const INDEX_MAGIC: &str = "cltrap-chunks 1";

/// One chunk of a content: its digest and where it lies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkRef {
    pub hash: String,
    pub len: usize,
}

/// The chunks of a content: `(offset, length)` pairs covering `bytes` in order.
pub fn cut(bytes: &[u8]) -> Vec<(usize, usize)> {
    cut_from(bytes, 0).collect()
}

/// The chunks of `bytes[start..]` as if a chunk began at `start` (offsets in `bytes`): a
/// chunk depends only on the bytes from its start on, which lets several threads cut one
/// content (`crate::parallel::cut_and_hash`).
pub fn cut_from(bytes: &[u8], start: usize) -> impl Iterator<Item = (usize, usize)> + '_ {
    let rest = bytes.get(start..).unwrap_or_default();
    fastcdc::v2020::FastCDC::new(rest, CHUNK_MIN, CHUNK_AVG, CHUNK_MAX)
        .map(move |c| (start + c.offset, c.length))
}

/// The text of an index file for a content of `size` bytes made of `chunks`.
pub fn index_text(size: u64, chunks: &[ChunkRef]) -> String {
    let mut s = format!("{INDEX_MAGIC}\nsize {size}\n");
    for c in chunks {
        let _ = writeln!(s, "{} {}", c.hash, c.len);
    }
    s
}

/// Parses an index file: the content's size and its chunks (Err: why it is malformed).
pub fn parse_index(text: &str) -> Result<(u64, Vec<ChunkRef>), String> {
    let mut lines = text.lines();
    if lines.next() != Some(INDEX_MAGIC) {
        return Err(format!("an index must start with `{INDEX_MAGIC}`"));
    }
    let size = lines
        .next()
        .and_then(|l| l.strip_prefix("size "))
        .and_then(|n| n.parse::<u64>().ok())
        .ok_or("the second line of an index must be `size N`")?;
    let mut chunks = Vec::new();
    let mut total = 0u64;
    for line in lines {
        let (hash, len) = line
            .split_once(' ')
            .ok_or_else(|| format!("bad chunk line {line:?}"))?;
        let len: usize = len
            .parse()
            .map_err(|_| format!("bad chunk length in {line:?}"))?;
        if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(format!("bad chunk digest in {line:?}"));
        }
        if len == 0 || len > CHUNK_MAX {
            return Err(format!("chunk length {len} is out of range"));
        }
        total += len as u64;
        chunks.push(ChunkRef {
            hash: hash.to_string(),
            len,
        });
    }
    if total != size {
        return Err(format!("its chunks add up to {total} bytes, not {size}"));
    }
    Ok((size, chunks))
}

/// The bytes of a chunk file for `chunk`: an encoding byte and a zstd frame. Float-like data
/// (4-byte words) is compressed shuffled by 4-byte lanes when that shrinks a sample of it
/// more than plain zstd does: the sample decides, so each chunk is compressed once.
pub fn encode(chunk: &[u8]) -> std::io::Result<Vec<u8>> {
    if chunk.len().is_multiple_of(4) && chunk.len() >= 2 * SAMPLE {
        let sample = &chunk[..SAMPLE];
        let plain = zstd::bulk::compress(sample, LEVEL)?.len();
        // Noise (nothing to gain) and data plain zstd shrinks well stay plain.
        if plain * 50 < SAMPLE * 49 && plain * 10 > SAMPLE * 3 {
            let shuffled = zstd::bulk::compress(&shuffle4(sample), LEVEL)?.len();
            if shuffled * 20 < plain * 19 {
                return Ok(tagged(b's', zstd::bulk::compress(&shuffle4(chunk), LEVEL)?));
            }
        }
    }
    Ok(tagged(b'z', zstd::bulk::compress(chunk, LEVEL)?))
}

/// Bytes of a chunk [`encode`] tries both encodings on.
const SAMPLE: usize = 4 << 10;

fn tagged(tag: u8, frame: Vec<u8>) -> Vec<u8> {
    let mut out = Vec::with_capacity(frame.len() + 1);
    out.push(tag);
    out.extend_from_slice(&frame);
    out
}

/// The bytes of a chunk from its file (`len`: its length from the index). Err: why not.
pub fn decode(file: &[u8], len: usize) -> Result<Vec<u8>, String> {
    let (tag, frame) = file.split_first().ok_or("an empty chunk file")?;
    let bytes = zstd::bulk::decompress(frame, len).map_err(|e| format!("zstd: {e}"))?;
    if bytes.len() != len {
        return Err(format!(
            "it holds {} bytes, the index says {len}",
            bytes.len()
        ));
    }
    match tag {
        b'z' => Ok(bytes),
        b's' if len.is_multiple_of(4) => Ok(unshuffle4(&bytes)),
        t => Err(format!("unknown chunk encoding {t:#04x}")),
    }
}

/// Byte lanes of 4-byte words: `[a0 b0 c0 d0 a1 b1 ...]` → `[a0 a1 .. b0 b1 .. c0 .. d0 ..]`.
fn shuffle4(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    for lane in 0..4 {
        out.extend(bytes.chunks_exact(4).map(|w| w[lane]));
    }
    out
}

/// The inverse of [`shuffle4`].
fn unshuffle4(bytes: &[u8]) -> Vec<u8> {
    let n = bytes.len() / 4;
    let (a, rest) = bytes.split_at(n);
    let (b, rest) = rest.split_at(n);
    let (c, d) = rest.split_at(n);
    let mut out = Vec::with_capacity(bytes.len());
    for i in 0..n {
        out.extend_from_slice(&[a[i], b[i], c[i], d[i]]);
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Incompressible test bytes (xorshift), the same for the same seed: what the capture
    /// crate's tests store, cut and hash.
    pub(crate) fn noise(n: usize, seed: u32) -> Vec<u8> {
        let mut x = seed | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x as u8
            })
            .collect()
    }

    #[test]
    fn a_local_change_leaves_most_chunks_identical() {
        let a = noise(4 << 20, 7);
        let mut b = a.clone();
        for x in &mut b[1_000_000..1_100_000] {
            *x = x.wrapping_add(1);
        }
        let chunks = |v: &[u8]| -> std::collections::HashSet<Vec<u8>> {
            cut(v).iter().map(|(o, l)| v[*o..o + l].to_vec()).collect()
        };
        let (ca, cb) = (chunks(&a), chunks(&b));
        let new: usize = cb.difference(&ca).map(Vec::len).sum();
        assert!(new < 100_000 + 4 * CHUNK_MAX, "{new} new bytes");
        assert!(cut(&a).iter().all(|(_, l)| *l <= CHUNK_MAX));
    }

    #[test]
    fn chunks_round_trip_through_both_encodings() {
        let floats: Vec<u8> = (0..8192u32)
            .flat_map(|i| (1.0f32 + i as f32 * 1e-3).to_le_bytes())
            .collect();
        for data in [noise(10_000, 3), vec![0u8; 4096], floats] {
            let file = encode(&data).unwrap();
            assert_eq!(decode(&file, data.len()).unwrap(), data);
        }
        assert_eq!(unshuffle4(&shuffle4(&noise(64, 9))), noise(64, 9));
    }

    #[test]
    fn malformed_indexes_and_chunks_are_refused() {
        let c = ChunkRef {
            hash: "a".repeat(64),
            len: 10,
        };
        let text = index_text(10, std::slice::from_ref(&c));
        assert_eq!(parse_index(&text).unwrap(), (10, vec![c]));
        assert!(parse_index(&text.replace("size 10", "size 11")).is_err());
        assert!(parse_index("nonsense").is_err());
        assert!(decode(b"q", 3).is_err());
        let file = encode(b"hello").unwrap();
        assert!(decode(&file, 4).is_err());
    }
}
