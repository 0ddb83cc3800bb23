//! Storing contents as chunks: cut at content-defined boundaries (FastCDC), compressed
//! (zstd) and packed ([`crate::chunks`]). Compaction does this in a `cltrap` process; it is
//! built only with the `compact` feature, so the shim, which stores contents uncut
//! ([`BlobStore::put_content_spooled`]), never links a compressor or a chunker.

use super::{digest, index_path, BlobStore, WriteError};
use crate::model::Hash;
use crate::writer::pack_path;
use crate::writer_fs;
use std::collections::{HashMap, HashSet};

impl BlobStore {
    /// Stores buffer or image contents whose digest is `hash` in content-defined chunks,
    /// compressed (see [`crate::chunks`]), so a version that differs from an earlier one in a
    /// few places costs only the chunks that changed. Small contents are stored whole; with
    /// the spool on, a large one is spooled ([`BlobStore::put_content_spooled`]). Returns the
    /// bytes this call wrote to disk (0 when the content was stored already).
    pub fn put_content(&self, hash: &str, bytes: &[u8]) -> Result<u64, WriteError> {
        if let Some((written, _)) = self.put_uncut_now(hash, bytes, None)? {
            return Ok(written);
        }
        let index = index_path(&self.dir, hash);
        let cuts = crate::parallel::cut_and_hash(bytes);
        let (mut written, slots) = self.put_chunks(bytes, &cuts)?;
        let refs: Vec<_> = cuts
            .iter()
            .zip(&slots)
            .map(|(c, at)| (c.hash.as_str(), c.len, at))
            .collect();
        // The index last: a content whose index exists has every chunk.
        let text = crate::chunks::index_text(bytes.len() as u64, &refs);
        self.write_new(&index, text.as_bytes())?;
        written += text.len() as u64;
        self.remember(hash);
        Ok(written)
    }

    /// Stores content `hash` (`bytes`, cut into `cuts`: [`crate::parallel::cut_and_hash`] or
    /// [`crate::parallel::cut_and_hash_like`]) as [`BlobStore::put_content`] would, but its
    /// new chunks join `batch`'s pack and its index waits in `batch` until the pack is
    /// written ([`BlobStore::flush_batch`], here once the pack holds [`BATCH_MAX`] bytes):
    /// an index never exists before its chunks do. Contents below
    /// [`crate::chunks::MIN_CHUNKED`] are stored whole at once (`cuts` unused). Returns the
    /// bytes written to disk by this call.
    ///
    /// Why: a compactor storing one pack and one index per content spent most of its time
    /// in the filesystem creating files (each new inode of ext4 costs a search of its
    /// bitmaps); one pack per batch of contents halves the files made.
    pub fn put_content_batched(
        &self,
        batch: &mut PackBatch,
        hash: &str,
        bytes: &[u8],
        cuts: &[crate::parallel::Cut],
    ) -> Result<u64, WriteError> {
        // Small, known or stored already (the compactor's store keeps no spool).
        if let Some((written, _)) = self.put_uncut_now(hash, bytes, None)? {
            return Ok(written);
        }
        let covered = cuts
            .iter()
            .try_fold(0usize, |at, c| (c.offset == at).then_some(at + c.len));
        if covered != Some(bytes.len()) {
            return Err(WriteError::Write {
                path: index_path(&self.dir, hash),
                source: std::io::Error::other("the chunks given do not cover the content"),
            });
        }
        self.vouch_for_learned(bytes, cuts);
        let new: Vec<&crate::parallel::Cut> = {
            let known = self.known_chunks.lock().unwrap_or_else(|p| p.into_inner());
            let mut seen = HashSet::new();
            cuts.iter()
                .filter(|c| {
                    !known.contains_key(&c.hash)
                        && !batch.placed.contains_key(&c.hash)
                        && seen.insert(c.hash.as_str())
                })
                .collect()
        };
        // A large content's new chunks go in groups of at most GROUP_RAW_MAX bytes, the pack
        // written between groups once it holds BATCH_MAX: the memory held and a pack's size
        // stay bounded whatever the content's size. This content's index waits until its
        // last group's pack is written (the earlier ones are known chunks by then).
        let mut written = 0;
        let mut start = 0;
        while start < new.len() {
            let mut end = start;
            let mut raw = 0;
            while end < new.len() && (end == start || raw + new[end].len <= GROUP_RAW_MAX) {
                raw += new[end].len;
                end += 1;
            }
            let group = &new[start..end];
            let encoded = self.encode_new(bytes, group)?;
            // Room for the whole batch at once: no copies of a growing pack.
            let need = batch.pack.len() + encoded.iter().map(Vec::len).sum::<usize>();
            batch.pack.reserve(need.max(BATCH_MAX) - batch.pack.len());
            for (c, e) in group.iter().zip(encoded) {
                batch
                    .placed
                    .insert(c.hash.clone(), (batch.pack.len() as u64, e.len()));
                batch.pack.extend_from_slice(&e);
            }
            start = end;
            if start < new.len() && batch.pack.len() >= BATCH_MAX {
                written += self.flush_batch(batch)?;
            }
        }
        batch.names.insert(hash.to_string());
        batch.waiting.push((
            hash.to_string(),
            bytes.len() as u64,
            cuts.iter().map(|c| (c.hash.clone(), c.len)).collect(),
        ));
        if batch.pack.len() >= BATCH_MAX {
            return Ok(written + self.flush_batch(batch)?);
        }
        Ok(written)
    }

    /// Chunks of `cuts` learned from the capture's packs and not known yet: each whose stored
    /// bytes (read back, decoded) equal its bytes in `bytes` becomes known, so it is reused;
    /// the others are forgotten, so they are stored again. A chunk stays learned while it is
    /// read back, so a thread storing another content with it meanwhile reads it back too
    /// instead of storing it again.
    fn vouch_for_learned(&self, bytes: &[u8], cuts: &[crate::parallel::Cut]) {
        let candidates: Vec<(&crate::parallel::Cut, crate::chunks::PackSlot)> = {
            let learned = self
                .learned_chunks
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            if learned.is_empty() {
                return;
            }
            let known = self.known_chunks.lock().unwrap_or_else(|p| p.into_inner());
            let mut seen = HashSet::new();
            cuts.iter()
                .filter(|c| !known.contains_key(&c.hash) && seen.insert(c.hash.as_str()))
                .filter_map(|c| learned.get(&c.hash).map(|at| (c, at.clone())))
                .collect()
        };
        for (c, at) in candidates {
            let good = self.slot_holds(&at, &bytes[c.offset..c.offset + c.len]);
            let mut learned = self
                .learned_chunks
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            if learned.remove(&c.hash).is_some() && good {
                let mut known = self.known_chunks.lock().unwrap_or_else(|p| p.into_inner());
                known.entry(c.hash.clone()).or_insert(at);
            }
        }
    }

    /// Whether pack slot `at` of this capture decodes to `chunk`.
    fn slot_holds(&self, at: &crate::chunks::PackSlot, chunk: &[u8]) -> bool {
        if at.stored > crate::chunks::stored_bound(chunk.len()) {
            return false;
        }
        let parts = crate::reader::blob_parts(&at.pack, ".pack");
        let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
        let Ok(file) = crate::safe_open::open_inside(&self.dir, &refs, u64::MAX) else {
            return false;
        };
        match crate::chunks::read_slot(&file, at) {
            Ok(Some(encoded)) => {
                crate::chunks::decode(&encoded, chunk.len()).is_ok_and(|d| d == chunk)
            }
            _ => false,
        }
    }

    /// Writes `batch`'s pack, then the indexes of the contents waiting for it, and empties
    /// it. Returns the bytes written.
    pub fn flush_batch(&self, batch: &mut PackBatch) -> Result<u64, WriteError> {
        let mut written = 0;
        let pack = std::mem::take(&mut batch.pack);
        let placed = std::mem::take(&mut batch.placed);
        if !pack.is_empty() {
            let name: std::sync::Arc<str> = digest(&pack).into();
            let path = pack_path(&self.dir, &name);
            if !holds(&path, &pack) {
                self.write_new(&path, &pack)?;
                written += pack.len() as u64;
            }
            let mut known = self.known_chunks.lock().unwrap_or_else(|p| p.into_inner());
            for (chunk, (offset, stored)) in placed {
                known.entry(chunk).or_insert(crate::chunks::PackSlot {
                    pack: std::sync::Arc::clone(&name),
                    offset,
                    stored,
                });
            }
        }
        batch.names.clear();
        for (hash, size, chunks) in std::mem::take(&mut batch.waiting) {
            let slots: Vec<crate::chunks::PackSlot> = {
                let known = self.known_chunks.lock().unwrap_or_else(|p| p.into_inner());
                chunks
                    .iter()
                    .map(|(c, _)| known.get(c).cloned())
                    .collect::<Option<_>>()
                    .ok_or_else(|| WriteError::Write {
                        path: self.dir.join("blobs"),
                        source: std::io::Error::other("a chunk of the content has no place"),
                    })?
            };
            let refs: Vec<_> = chunks
                .iter()
                .zip(&slots)
                .map(|((c, len), at)| (c.as_str(), *len, at))
                .collect();
            let text = crate::chunks::index_text(size, &refs);
            self.write_new(&index_path(&self.dir, &hash), text.as_bytes())?;
            written += text.len() as u64;
            self.remember(&hash);
        }
        Ok(written)
    }

    /// The encodings of chunks `new` of `bytes`, in order: probed first ([`probe`]), then
    /// the rest by several threads for a large content.
    fn encode_new(
        &self,
        bytes: &[u8],
        new: &[&crate::parallel::Cut],
    ) -> Result<Vec<Vec<u8>>, WriteError> {
        let io = |source| WriteError::Write {
            path: self.dir.join("blobs"),
            source,
        };
        let (probed, raw_rest) = probe(bytes, new).map_err(io)?;
        let parallel = new.iter().map(|c| c.len).sum::<usize>() >= crate::parallel::parallel_min();
        crate::parallel::for_each(new.len(), parallel, |i| {
            let c = new[i];
            let chunk = &bytes[c.offset..c.offset + c.len];
            match probed.iter().find(|(k, _)| *k == i) {
                Some((_, e)) => Ok(e.clone()),
                None if raw_rest => Ok(crate::chunks::encode_raw(chunk)),
                None => crate::chunks::encode(chunk),
            }
        })
        .map_err(io)
    }

    /// Stores the chunks of `bytes` (cut into `cuts`) that this process has not stored yet,
    /// each once, compressed by several threads for a large content and written into pack
    /// files of at most [`crate::chunks::PACK_RAW_MAX`] uncompressed bytes each. Returns the
    /// bytes written and where each chunk of `cuts` lies (new places join `known_chunks`).
    fn put_chunks(
        &self,
        bytes: &[u8],
        cuts: &[crate::parallel::Cut],
    ) -> Result<(u64, Vec<crate::chunks::PackSlot>), WriteError> {
        self.vouch_for_learned(bytes, cuts);
        let lock = || self.known_chunks.lock().unwrap_or_else(|p| p.into_inner());
        let new: Vec<&crate::parallel::Cut> = {
            let known = lock();
            let mut seen = HashSet::new();
            cuts.iter()
                .filter(|c| !known.contains_key(&c.hash) && seen.insert(c.hash.as_str()))
                .collect()
        };
        let mut written = 0;
        let mut rest = &new[..];
        while !rest.is_empty() {
            let mut raw = 0;
            let take = rest
                .iter()
                .take_while(|c| {
                    raw += c.len;
                    raw <= crate::chunks::PACK_RAW_MAX
                })
                .count()
                .max(1);
            let (group, after) = rest.split_at(take);
            rest = after;
            let encoded = self.encode_new(bytes, group)?;
            let mut pack = Vec::with_capacity(encoded.iter().map(Vec::len).sum());
            let mut places = Vec::with_capacity(encoded.len());
            for e in &encoded {
                places.push((pack.len() as u64, e.len()));
                pack.extend_from_slice(e);
            }
            drop(encoded);
            let name: std::sync::Arc<str> = digest(&pack).into();
            let path = pack_path(&self.dir, &name);
            if !holds(&path, &pack) {
                self.write_new(&path, &pack)?;
                written += pack.len() as u64;
            }
            let mut known = lock();
            for (c, (offset, stored)) in group.iter().zip(places) {
                let at = crate::chunks::PackSlot {
                    pack: std::sync::Arc::clone(&name),
                    offset,
                    stored,
                };
                known.insert(c.hash.clone(), at);
            }
        }
        // Every chunk was known or placed above (a place joins the table only once its pack
        // exists, and none leaves it; another thread's place for the same chunk is as good).
        let known = lock();
        let slots = cuts
            .iter()
            .map(|c| known.get(&c.hash).cloned())
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| WriteError::Write {
                path: self.dir.join("blobs"),
                source: std::io::Error::other("a chunk of the content has no place"),
            })?;
        Ok((written, slots))
    }
}

/// Bytes of encoded chunks a [`PackBatch`] gathers before its pack is written: bounds the
/// memory each compacting thread holds, and keeps the pack in the processor's cache until
/// it is digested and written (with 16 MB packs, copying them into the page cache cost
/// more than the files saved).
pub const BATCH_MAX: usize = 2 << 20;

/// Uncompressed bytes of one content's new chunks encoded at once by
/// [`BlobStore::put_content_batched`]: enough for its threads to share, small enough that a
/// gigabyte content is never held twice more in memory (encoded, then in the pack).
pub const GROUP_RAW_MAX: usize = 16 << 20;

/// New chunks of several contents gathered into one pack, and the contents whose indexes
/// wait for it ([`BlobStore::put_content_batched`]). Dropped unflushed, it leaves nothing on
/// disk: its contents are not stored.
#[derive(Default)]
pub struct PackBatch {
    pack: Vec<u8>,
    /// Chunks in `pack`: digest → (offset, encoded length).
    placed: HashMap<Hash, (u64, usize)>,
    /// Contents waiting for the pack: digest, size, chunks (digest, length) in order.
    waiting: Vec<(Hash, u64, Vec<(Hash, usize)>)>,
    /// The digests of `waiting`: contents that add no chunk leave the pack as it is, so the
    /// list may grow long before it is flushed.
    names: HashSet<Hash>,
}

impl PackBatch {
    /// Whether contents wait in it.
    pub fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }

    /// Whether content `hash` waits in it: stored once it is flushed, so not to be stored
    /// again meanwhile.
    pub fn holds(&self, hash: &str) -> bool {
        self.names.contains(hash)
    }
}

/// Chunks of a content [`probe`] encodes first: with fewer new chunks than this, each is
/// encoded on its own merits.
const PROBES: usize = 3;

/// Encodes the first, middle and last of the new chunks `new` of `bytes` ([`crate::chunks::encode`])
/// and says whether the others are to be stored raw without trying zstd on them: when
/// every probe came out raw (zstd saved less than a tenth of it). Returns the probes'
/// encodings by index in `new`. Why: a content that does not compress (a solver's float
/// fields) paid a zstd pass over every chunk to save 7 %; the probes cost three chunks.
fn probe(
    bytes: &[u8],
    new: &[&crate::parallel::Cut],
) -> std::io::Result<(Vec<(usize, Vec<u8>)>, bool)> {
    if new.len() <= PROBES {
        return Ok((Vec::new(), false));
    }
    // Side by side when the process splits work finer (a compactor's chain of versions).
    let probes = [0, new.len() / 2, new.len() - 1];
    let probed = crate::parallel::for_each(probes.len(), crate::parallel::finer(), |i| {
        let c = new[probes[i]];
        Ok::<_, std::io::Error>((
            probes[i],
            crate::chunks::encode(&bytes[c.offset..c.offset + c.len])?,
        ))
    })?;
    let raw = probed.iter().all(|(_, e)| e.first() == Some(&b'r'));
    Ok((probed, raw))
}

/// Whether `path` is a regular file that holds exactly `bytes`. A pack is named by its
/// digest, so a file of that name is the same pack unless it was damaged or planted; such a
/// file is replaced (written anew over it), not taken for the pack.
fn holds(path: &std::path::Path, bytes: &[u8]) -> bool {
    writer_fs::is_regular(path)
        && writer_fs::read_regular(path, bytes.len() as u64 + 1).is_ok_and(|b| b == bytes)
}

#[cfg(test)]
mod tests {
    use crate::writer::BlobStore;

    /// Incompressible words: chunks that stay the same size once stored.
    fn noise(n: usize, seed: u64) -> Vec<u8> {
        let mut x = seed | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    }

    /// A content that shares chunks with one stored earlier, whose pack was damaged since,
    /// is stored with its own copies of those chunks: it reads back whole.
    #[test]
    fn a_learned_chunk_is_reused_only_once_its_stored_bytes_proved_good() {
        let dir = tempfile::tempdir().expect("temp dir");
        let first = noise(4 << 20, 7);
        let mut second = first.clone();
        let end = second.len();
        second[end - 1000..].fill(0x5a);
        let put = |bytes: &[u8]| {
            let store = BlobStore::new(dir.path());
            store.learn_stored_chunks();
            let hash = crate::writer::digest(bytes);
            let cuts = crate::parallel::cut_and_hash(bytes);
            let mut batch = crate::writer::PackBatch::default();
            store
                .put_content_batched(&mut batch, &hash, bytes, &cuts)
                .expect("stored");
            store.flush_batch(&mut batch).expect("flushed");
            hash
        };
        let read =
            |hash: &str| crate::reader::Contents::new(dir.path()).blob_of_size(hash, 4 << 20);
        let h1 = put(&first);
        assert_eq!(read(&h1).expect("the first reads back"), first);
        damage_packs(dir.path());
        assert!(read(&h1).is_err(), "the damage is seen");
        let h2 = put(&second);
        assert_eq!(read(&h2).expect("the second reads back"), second);
    }

    /// Every pack file of the store in `dir`, its bytes flipped every 512 (length kept).
    fn damage_packs(dir: &std::path::Path) {
        for d in std::fs::read_dir(dir.join("blobs")).expect("blobs") {
            for f in std::fs::read_dir(d.expect("entry").path()).expect("prefix") {
                let p = f.expect("entry").path();
                if p.extension().is_some_and(|e| e == "pack") {
                    let mut b = std::fs::read(&p).expect("pack");
                    for i in (0..b.len()).step_by(512) {
                        b[i] ^= 0xff;
                    }
                    std::fs::write(&p, b).expect("damaged");
                }
            }
        }
    }

    /// A content stored again into a store whose pack of the same name (the same chunks,
    /// so the same digest) was damaged: the pack is written anew over it, not taken for it.
    #[test]
    fn a_damaged_pack_of_the_name_about_to_be_written_is_replaced() {
        let dir = tempfile::tempdir().expect("temp dir");
        let bytes = noise(4 << 20, 11);
        let hash = crate::writer::digest(&bytes);
        let cuts = crate::parallel::cut_and_hash(&bytes);
        let put = || {
            let store = BlobStore::new(dir.path());
            let mut batch = crate::writer::PackBatch::default();
            store
                .put_content_batched(&mut batch, &hash, &bytes, &cuts)
                .expect("stored");
            store.flush_batch(&mut batch).expect("flushed");
        };
        let read = || crate::reader::Contents::new(dir.path()).blob_of_size(&hash, 4 << 20);
        put();
        damage_packs(dir.path());
        std::fs::remove_file(crate::writer::index_path(dir.path(), &hash)).expect("index");
        put();
        assert_eq!(read().expect("it reads back"), bytes);
    }
}
