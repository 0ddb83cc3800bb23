//! Buffer contents stored as content-defined chunks, each compressed with zstd, packed into
//! few files.
//!
//! Why: an application that changes a tenth of a 16 MB buffer per launch produced a new
//! 16 MB blob per launch, and a Gaussian elimination stored 4 GB for 2 046 launches over one
//! 4 MB matrix. Cutting contents at boundaries chosen by their bytes (FastCDC) makes the
//! chunks of the unchanged parts of two successive versions identical, so each version costs
//! only its changed chunks plus a small index; zstd shrinks those chunks further. The new
//! chunks of one content go into one *pack* file: a file per chunk (format version 2) made
//! creating files the largest cost of such a capture (half of its CPU time on ext4).
//!
//! On disk, for a content whose whole-content blake3 digest is `H`:
//! * `blobs/H[..2]/H.chunks` — the index, text. Index version 2 (format version 4): the line
//!   `cltrap-chunks 2`, the line `size N`, one line `pack <P>` per pack file it refers to
//!   (numbered from 0 in order), then one line `<chunk digest> <length> <pack number>
//!   <offset> <stored length>` per chunk, in order. Index version 1 (format versions 2 and
//!   3): the line `cltrap-chunks 1`, the line `size N`, then one line `<chunk digest>
//!   <length>` per chunk, each chunk in its own file.
//! * `blobs/P[..2]/P.pack` — encoded chunks one after another, named by the blake3 digest
//!   `P` of the whole file (so two writers that make the same pack write the same bytes);
//!   an encoded chunk lies at `offset`, `stored length` bytes long.
//! * `blobs/C[..2]/C.chunk` (index version 1) — one encoded chunk whose blake3 digest (of its
//!   *uncompressed* bytes) is `C`.
//! * An encoded chunk: one encoding byte (`z`: zstd of the bytes; `s`: zstd of the bytes
//!   shuffled by 4-byte lanes — all first bytes of each 4-byte word, then all second bytes,
//!   ... which groups the exponent bytes of float data and compresses it better; `r`: the
//!   bytes themselves, for data zstd would shrink by less than a tenth; chosen per chunk on
//!   samples), then the zstd frame (`z`, `s`) or the raw bytes (`r`). Readers of every
//!   version accept all three, so packs without `r` chunks read unchanged.
//!
//! A reader checks every chunk against its digest and the reassembled content against `H`.

use std::fmt::Write as _;
use std::sync::Arc;

/// Contents smaller than this are stored whole, as a plain blob (one file, no index): the
/// index and chunk files would cost more than they save.
pub const MIN_CHUNKED: usize = 8 << 10;
/// FastCDC bounds. The average decides how much of a small change spills into rewritten
/// chunks (about one average chunk at each end of a changed run) and how big an index gets
/// (one line of about 90 bytes per chunk: 46 KB for a 16 MB buffer).
/// FastCDC does not look at the first `CHUNK_MIN` bytes of a chunk, so a minimum of half the
/// average halves the cost of cutting (the pass over every byte of every content).
pub const CHUNK_MIN: usize = 16 << 10;
/// See [`CHUNK_MIN`].
pub const CHUNK_AVG: usize = 32 << 10;
/// See [`CHUNK_MIN`]; also the largest chunk a reader accepts.
pub const CHUNK_MAX: usize = 128 << 10;
/// zstd level: 1 is the fastest and, on buffer contents, within a few percent of level 3.
#[cfg(feature = "compact")]
const LEVEL: i32 = 1;
/// zstd level for chunks whose sample does not compress ([`encode`]).
#[cfg(feature = "compact")]
const NOISE_LEVEL: i32 = -7;
/// First line of an index whose chunks are files of their own (format versions 2 and 3).
const INDEX_MAGIC_FILES: &str = "cltrap-chunks 1";
/// First line of an index whose chunks lie in pack files (format version 4).
const INDEX_MAGIC: &str = "cltrap-chunks 2";
/// Most bytes an encoded chunk can take: the encoding byte and zstd's bound for
/// [`CHUNK_MAX`] bytes (a reader refuses a larger stored length before reading it).
pub const STORED_MAX: usize = stored_bound(CHUNK_MAX);
/// Most bytes a chunk of `len` bytes can take encoded: the encoding byte and at least zstd's
/// bound ([`STORED_MAX`] for a chunk of [`CHUNK_MAX`]). Checked per chunk, so an index's
/// small chunks cannot claim the stored length of the largest one.
pub const fn stored_bound(len: usize) -> usize {
    1 + len + len / 128 + 1024
}

/// Most uncompressed bytes of new chunks that go into one pack: bounds the memory a writer
/// holds for a pack before writing it.
pub const PACK_RAW_MAX: usize = 64 << 20;

/// One chunk of a content: its digest, its length and, for index version 2, where its
/// encoded bytes lie.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkRef {
    pub hash: String,
    pub len: usize,
    /// None: the chunk is the file `C.chunk` (index version 1).
    pub at: Option<PackSlot>,
}

/// Where an encoded chunk lies in a pack file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackSlot {
    /// The pack's digest (its file is `blobs/P[..2]/P.pack`).
    pub pack: Arc<str>,
    pub offset: u64,
    /// Bytes of the encoded chunk.
    pub stored: usize,
}

/// The encoded chunk at `at` in its open pack `file`, or None when the pack is shorter than
/// the slot says (a damaged pack). The one place the reader and the compactor's check of a
/// learned chunk read a slot (neither is in a build without the `compact` feature).
#[cfg_attr(not(feature = "compact"), allow(dead_code))]
pub(crate) fn read_slot(file: &std::fs::File, at: &PackSlot) -> std::io::Result<Option<Vec<u8>>> {
    use std::os::unix::fs::FileExt;
    if at.offset.saturating_add(at.stored as u64) > file.metadata()?.len() {
        return Ok(None);
    }
    let mut encoded = vec![0u8; at.stored];
    match file.read_exact_at(&mut encoded, at.offset) {
        Ok(()) => Ok(Some(encoded)),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(None),
        Err(e) => Err(e),
    }
}

#[cfg(feature = "compact")]
/// The chunks of a content: `(offset, length)` pairs covering `bytes` in order.
pub fn cut(bytes: &[u8]) -> Vec<(usize, usize)> {
    cut_from(bytes, 0).collect()
}

#[cfg(feature = "compact")]
/// The chunks of `bytes[start..]` as if a chunk began at `start` (offsets in `bytes`): a
/// chunk depends only on the bytes from its start on, which lets several threads cut one
/// content (`crate::parallel::cut_and_hash`).
pub fn cut_from(bytes: &[u8], start: usize) -> impl Iterator<Item = (usize, usize)> + '_ {
    let rest = bytes.get(start..).unwrap_or_default();
    fastcdc::v2020::FastCDC::new(rest, CHUNK_MIN, CHUNK_AVG, CHUNK_MAX)
        .map(move |c| (start + c.offset, c.length))
}

/// The text of an index (version 2) for a content of `size` bytes made of `chunks`, in
/// order: each chunk's digest, length and place in a pack.
pub fn index_text(size: u64, chunks: &[(&str, usize, &PackSlot)]) -> String {
    let mut packs: Vec<&str> = Vec::new();
    let mut number: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    let mut lines = String::with_capacity(chunks.len() * 96);
    for (hash, len, at) in chunks {
        let n = *number.entry(&at.pack).or_insert_with(|| {
            packs.push(&at.pack);
            packs.len() - 1
        });
        let _ = writeln!(lines, "{hash} {len} {n} {} {}", at.offset, at.stored);
    }
    let mut s = format!("{INDEX_MAGIC}\nsize {size}\n");
    for p in packs {
        let _ = writeln!(s, "pack {p}");
    }
    s.push_str(&lines);
    s
}

/// Parses an index file of either version: the content's size and its chunks (Err: why it
/// is malformed).
pub fn parse_index(text: &str) -> Result<(u64, Vec<ChunkRef>), String> {
    let mut lines = text.lines().peekable();
    let packed = match lines.next() {
        Some(INDEX_MAGIC) => true,
        Some(INDEX_MAGIC_FILES) => false,
        _ => {
            return Err(format!(
                "an index must start with `{INDEX_MAGIC}` or `{INDEX_MAGIC_FILES}`"
            ))
        }
    };
    let size = lines
        .next()
        .and_then(|l| l.strip_prefix("size "))
        .and_then(|n| n.parse::<u64>().ok())
        .ok_or("the second line of an index must be `size N`")?;
    let is_digest = crate::hex::is_digest;
    let mut packs: Vec<Arc<str>> = Vec::new();
    while let Some(p) = lines.peek().and_then(|l| l.strip_prefix("pack ")) {
        if !packed || !is_digest(p) {
            return Err(format!("bad pack line `pack {p}`"));
        }
        packs.push(p.into());
        lines.next();
    }
    let mut chunks = Vec::new();
    let mut total = 0u64;
    for line in lines {
        let mut fields = line.split(' ');
        let bad = || format!("bad chunk line {line:?}");
        let hash = fields.next().ok_or_else(bad)?;
        let len: usize = fields.next().and_then(|n| n.parse().ok()).ok_or_else(bad)?;
        if !is_digest(hash) {
            return Err(format!("bad chunk digest in {line:?}"));
        }
        if len == 0 || len > CHUNK_MAX {
            return Err(format!("chunk length {len} is out of range"));
        }
        let at = if packed {
            let mut number = || fields.next().and_then(|n| n.parse::<u64>().ok());
            let (pack, offset, stored) = (number(), number(), number());
            let (Some(pack), Some(offset), Some(stored)) = (pack, offset, stored) else {
                return Err(bad());
            };
            // Offsets a file can have (a reader adds the stored length to it).
            if offset > i64::MAX as u64 / 2 {
                return Err(format!("offset {offset} is out of range"));
            }
            let pack = usize::try_from(pack)
                .ok()
                .and_then(|p| packs.get(p))
                .ok_or_else(|| format!("chunk line {line:?} names no pack of the index"))?;
            let stored = usize::try_from(stored).unwrap_or(usize::MAX);
            if !(2..=stored_bound(len)).contains(&stored) {
                return Err(format!(
                    "stored length {stored} is out of range for a chunk of {len} bytes"
                ));
            }
            Some(PackSlot {
                pack: Arc::clone(pack),
                offset,
                stored,
            })
        } else {
            None
        };
        if fields.next().is_some() {
            return Err(bad());
        }
        total += len as u64;
        chunks.push(ChunkRef {
            hash: hash.to_string(),
            len,
            at,
        });
    }
    if total != size {
        return Err(format!("its chunks add up to {total} bytes, not {size}"));
    }
    Ok((size, chunks))
}

#[cfg(feature = "compact")]
/// The bytes of a chunk file for `chunk`: an encoding byte and a zstd frame. Float-like data
/// (4-byte words) is compressed shuffled by 4-byte lanes when that shrinks a sample of it
/// more than plain zstd does: the sample decides, so each chunk is compressed once. A chunk
/// zstd shrinks by less than a tenth is stored raw instead ([`encode_raw`]): reading it back
/// then costs a copy, not a decompression.
pub fn encode(chunk: &[u8]) -> std::io::Result<Vec<u8>> {
    let (tag, level) = encoding(chunk)?;
    if tag == b'r' {
        return Ok(encode_raw(chunk));
    }
    let frame = if tag == b's' {
        compress(&shuffle4(chunk), level)?
    } else {
        compress(chunk, level)?
    };
    if !saves_a_tenth(frame.len(), chunk.len()) {
        return Ok(encode_raw(chunk));
    }
    Ok(tagged(tag, frame))
}

/// Whether `stored` bytes for `len` bytes saves at least a tenth of them: below that, zstd
/// costs more time (when the chunk is compressed and read back) than the bytes it saves.
pub fn saves_a_tenth(stored: usize, len: usize) -> bool {
    stored * 10 < len * 9
}

/// The bytes of a chunk file for `chunk` stored raw (encoding `r`): what a writer uses for
/// the chunks of a content whose probed chunks ([`encode`]) all came out raw, without
/// compressing them (a solver's float fields shrank by 7 %, and zstd was a fifth of their
/// compaction).
pub fn encode_raw(chunk: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(chunk.len() + 1);
    out.push(b'r');
    out.extend_from_slice(chunk);
    out
}

#[cfg(feature = "compact")]
/// How [`encode`] stores `chunk`: its encoding byte and zstd level, from its first
/// [`SAMPLE`] bytes. Noise (a sample zstd cannot shrink) is compressed plain at
/// [`NOISE_LEVEL`], about three times faster than at [`LEVEL`] for the same bytes (the same
/// frame format: readers see no difference; what repeats beyond the sample still shrinks);
/// float-like data is shuffled when that shrinks the sample more, and stored raw when
/// neither way shrinks the sample by a tenth at [`LEVEL`] (only 4-byte words: a sample of
/// other lengths is weighed at the fastest level, which misjudges data that repeats every
/// few KB); the rest is plain at [`LEVEL`].
fn encoding(chunk: &[u8]) -> std::io::Result<(u8, i32)> {
    if chunk.len() < 2 * SAMPLE {
        return Ok((b'z', LEVEL));
    }
    let sample = &chunk[..SAMPLE];
    let shufflable = chunk.len().is_multiple_of(4);
    // Without the shuffle to weigh, telling noise apart needs only the fastest setting.
    let plain = compress(sample, if shufflable { LEVEL } else { NOISE_LEVEL })?.len();
    if plain * 50 >= SAMPLE * 49 {
        return Ok((b'z', NOISE_LEVEL));
    }
    // Data plain zstd shrinks well stays plain.
    let mut best = plain;
    if shufflable && plain * 10 > SAMPLE * 3 {
        let shuffled = compress(&shuffle4(sample), LEVEL)?.len();
        if shuffled * 20 < plain * 19 {
            return Ok((b's', LEVEL));
        }
        best = best.min(shuffled);
    }
    // Weighed at the storing level, neither way saves a tenth (float fields with noisy
    // low bytes): raw, no zstd pass over the chunk.
    if shufflable && !saves_a_tenth(best, SAMPLE) {
        return Ok((b'r', 0));
    }
    Ok((b'z', LEVEL))
}

#[cfg(feature = "compact")]
/// zstd of `bytes` at `level`, with this thread's compression context for that level:
/// creating one per chunk (`zstd::bulk::compress`) took a few percent of a buffer-heavy
/// capture. A thread whose thread-locals are being destroyed (the shim stores from an
/// application's `clFinish`, which may run in a destructor at exit) compresses with a
/// context of its own.
fn compress(bytes: &[u8], level: i32) -> std::io::Result<Vec<u8>> {
    type Contexts = Vec<(i32, zstd::bulk::Compressor<'static>)>;
    thread_local! {
        static CONTEXTS: std::cell::RefCell<Contexts> = const { std::cell::RefCell::new(Vec::new()) };
    }
    let reused = CONTEXTS.try_with(|c| {
        let mut c = c.try_borrow_mut().ok()?;
        let i = match c.iter().position(|(l, _)| *l == level) {
            Some(i) => i,
            None => {
                c.push((level, zstd::bulk::Compressor::new(level).ok()?));
                c.len() - 1
            }
        };
        Some(c[i].1.compress(bytes))
    });
    match reused {
        Ok(Some(done)) => done,
        _ => zstd::bulk::compress(bytes, level),
    }
}

#[cfg(feature = "compact")]
/// Bytes of a chunk [`encode`] tries both encodings on.
const SAMPLE: usize = 4 << 10;

#[cfg(feature = "compact")]
fn tagged(tag: u8, frame: Vec<u8>) -> Vec<u8> {
    let mut out = Vec::with_capacity(frame.len() + 1);
    out.push(tag);
    out.extend_from_slice(&frame);
    out
}

#[cfg(feature = "compact")]
/// The bytes of a chunk from its file (`len`: its length from the index). Err: why not.
pub fn decode(file: &[u8], len: usize) -> Result<Vec<u8>, String> {
    let (tag, frame) = file.split_first().ok_or("an empty chunk file")?;
    if *tag == b'r' {
        if frame.len() != len {
            return Err(format!(
                "it holds {} raw bytes, the index says {len}",
                frame.len()
            ));
        }
        return Ok(frame.to_vec());
    }
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

#[cfg(feature = "compact")]
/// Byte lanes of 4-byte words: `[a0 b0 c0 d0 a1 b1 ...]` → `[a0 a1 .. b0 b1 .. c0 .. d0 ..]`
/// (bytes past the last whole word are dropped: only whole words are shuffled). Written
/// into four lane slices at once: a byte-at-a-time iterator per lane took an eighth of a
/// compaction's time.
fn shuffle4(bytes: &[u8]) -> Vec<u8> {
    let n = bytes.len() / 4;
    let mut out = vec![0u8; 4 * n];
    let (a, rest) = out.split_at_mut(n);
    let (b, rest) = rest.split_at_mut(n);
    let (c, d) = rest.split_at_mut(n);
    for (i, w) in bytes.chunks_exact(4).enumerate() {
        a[i] = w[0];
        b[i] = w[1];
        c[i] = w[2];
        d[i] = w[3];
    }
    out
}

#[cfg(feature = "compact")]
/// The inverse of [`shuffle4`].
fn unshuffle4(bytes: &[u8]) -> Vec<u8> {
    let n = bytes.len() / 4;
    let (a, rest) = bytes.split_at(n);
    let (b, rest) = rest.split_at(n);
    let (c, d) = rest.split_at(n);
    let mut out = vec![0u8; 4 * n];
    for (i, w) in out.chunks_exact_mut(4).enumerate() {
        w.copy_from_slice(&[a[i], b[i], c[i], d[i]]);
    }
    out
}

#[cfg(all(test, feature = "compact"))]
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
        // Noise (its sample does not compress) is stored at zstd's fastest setting: a plain
        // frame of raw blocks, no larger than a few bytes over the chunk, read back the same.
        let n = noise(100_000, 5);
        assert_eq!(encoding(&n).unwrap(), (b'z', NOISE_LEVEL));
        assert_eq!(encoding(&n[..99_999]).unwrap(), (b'z', NOISE_LEVEL));
        assert_eq!(encoding(&vec![7u8; 99_999]).unwrap(), (b'z', LEVEL));
        // A chunk of noise that ends in a compressible run is judged by its sample: the run
        // still shrinks at the fast setting.
        let mut mixed = noise(16_384, 6);
        mixed.extend(std::iter::repeat_n(7u8, 65_536));
        let file = encode(&mixed).unwrap();
        assert!(file.len() < 20_000, "{}", file.len());
        assert_eq!(decode(&file, mixed.len()).unwrap(), mixed);
    }

    #[test]
    fn incompressible_chunks_are_stored_raw_and_read_back_bit_exact() {
        // Noise of both parities (the shuffle applies only to whole 4-byte words), and bytes
        // of 7.6 bits of entropy (about 5 % to save): zstd saves less than a tenth.
        let thin: Vec<u8> = noise(CHUNK_MAX, 11).iter().map(|b| b % 192).collect();
        assert_eq!(
            encoding(&thin).unwrap(),
            (b'r', 0),
            "judged raw on its sample"
        );
        for data in [noise(100_000, 5), noise(99_999, 5), thin, noise(100, 3)] {
            for file in [encode(&data).unwrap(), encode_raw(&data)] {
                assert_eq!(
                    file.len(),
                    data.len() + 1,
                    "a raw chunk is its bytes and its tag"
                );
                assert_eq!(file[0], b'r');
                assert_eq!(decode(&file, data.len()).unwrap(), data);
                // A raw chunk whose length is not the index's is damaged.
                assert!(decode(&file, data.len() - 1).is_err());
                assert!(decode(&file[..file.len() - 1], data.len()).is_err());
            }
        }
        assert_eq!(encode_raw(&[0u8; CHUNK_MAX]).len(), 1 + CHUNK_MAX);
        assert!(1 + CHUNK_MAX <= STORED_MAX);
        // Compressible data (smooth floats, a noise head before a run) is still compressed.
        let smooth: Vec<u8> = (0..8192u32)
            .flat_map(|i| (1.0f32 + i as f32 * 1e-3).to_le_bytes())
            .collect();
        let mut mixed = noise(16_384, 6);
        mixed.extend(std::iter::repeat_n(7u8, 65_536));
        for data in [smooth, mixed] {
            let file = encode(&data).unwrap();
            assert_ne!(file[0], b'r');
            assert!(saves_a_tenth(file.len(), data.len()));
        }
    }

    /// Chunks as a writer before the raw encoding existed made them (`z` and `s` frames,
    /// noise at the fast setting): still read back.
    #[test]
    fn chunks_of_the_zstd_only_encodings_still_read() {
        let n = noise(100_000, 5);
        let fast = tagged(b'z', compress(&n, NOISE_LEVEL).unwrap());
        assert_eq!(decode(&fast, n.len()).unwrap(), n);
        let floats: Vec<u8> = (0..8192u32)
            .flat_map(|i| (1.0f32 + i as f32 * 1e-3).to_le_bytes())
            .collect();
        let shuffled = tagged(b's', compress(&shuffle4(&floats), LEVEL).unwrap());
        assert_eq!(decode(&shuffled, floats.len()).unwrap(), floats);
        // The shuffle as the byte-at-a-time code laid it out.
        let lanes: Vec<u8> = (0..4)
            .flat_map(|l| floats.chunks_exact(4).map(move |w| w[l]))
            .collect();
        assert_eq!(shuffle4(&floats), lanes);
    }

    /// A thread-local destructor that runs after the compressor's own was destroyed: what
    /// an application's `clFinish` in a destructor at exit makes the shim do.
    #[test]
    fn chunks_are_encoded_while_thread_locals_are_destroyed() {
        use std::sync::atomic::{AtomicU8, Ordering};
        static RESULT: AtomicU8 = AtomicU8::new(0);
        struct Late;
        impl Drop for Late {
            fn drop(&mut self) {
                let data = noise(20_000, 4);
                let ok = std::panic::catch_unwind(|| encode(&data).map(|f| decode(&f, 20_000)))
                    .is_ok_and(|r| r.is_ok_and(|d| d == Ok(noise(20_000, 4))));
                RESULT.store(if ok { 1 } else { 2 }, Ordering::SeqCst);
            }
        }
        thread_local! { static LATE: Late = const { Late }; }
        std::thread::spawn(|| {
            LATE.with(|_| ()); // registered first, destroyed last
            encode(&[0u8; 20_000]).unwrap(); // registers the compressor
        })
        .join()
        .unwrap();
        assert_eq!(
            RESULT.load(Ordering::SeqCst),
            1,
            "encode failed in teardown"
        );
    }

    #[test]
    fn malformed_indexes_and_chunks_are_refused() {
        let c = ChunkRef {
            hash: "a".repeat(64),
            len: 10,
            at: Some(PackSlot {
                pack: "b".repeat(64).into(),
                offset: 7,
                stored: 12,
            }),
        };
        let slot = c.at.clone().unwrap();
        let text = index_text(10, &[(&c.hash, c.len, &slot)]);
        assert_eq!(parse_index(&text).unwrap(), (10, vec![c.clone()]));
        assert!(parse_index(&text.replace("size 10", "size 11")).is_err());
        assert!(
            parse_index(&text.replace(" 0 7 12", " 1 7 12")).is_err(),
            "no pack 1"
        );
        assert!(parse_index(&text.replace(" 7 12", " 7 99999999")).is_err());
        // A chunk of 10 bytes takes at most its bound encoded, however small the bound of
        // the largest chunk (`STORED_MAX`) would let it claim.
        let most = stored_bound(10);
        assert!(most < STORED_MAX);
        assert!(parse_index(&text.replace(" 7 12", &format!(" 7 {most}"))).is_ok());
        let e = parse_index(&text.replace(" 7 12", &format!(" 7 {}", most + 1))).unwrap_err();
        assert!(e.contains("stored length"), "{e}");
        assert_eq!(stored_bound(CHUNK_MAX), STORED_MAX);
        assert!(parse_index(&text.replace(" 7 12", " 7")).is_err());
        assert!(parse_index(&text.replace(" 7 12", &format!(" {} 12", u64::MAX))).is_err());
        assert!(parse_index("nonsense").is_err());
        // Index version 1: chunks in files of their own.
        let v1 = format!("cltrap-chunks 1\nsize 10\n{} 10\n", "a".repeat(64));
        let (_, chunks) = parse_index(&v1).unwrap();
        assert_eq!(chunks[0].at, None);
        assert!(parse_index(&format!("{v1}pack {}\n", "b".repeat(64))).is_err());
        assert!(decode(b"q", 3).is_err());
        let file = encode(b"hello").unwrap();
        assert!(decode(&file, 4).is_err());
    }
}
