//! The truth server's prefix cache (`--prefix-cache BLOCKS`), kept as vLLM's automatic prefix
//! caching keeps its KV blocks: a prompt is cut into blocks of [`BLOCK_TOKENS`] tokens, each
//! block's hash chained with the one before it, so that a block's hash names the whole prompt up
//! to its end; a request's cached tokens are the longest run of its leading blocks found in the
//! cache, and its blocks go in when its prefill ends (its first token's instant: from then on
//! vLLM's scheduler can share them with a request that overlaps it), the least recently used
//! going out at `BLOCKS` entries.
//!
//! The server counts tokens by words (a token is three quarters of a word,
//! [`TOKENS_PER_WORD`](super::TOKENS_PER_WORD)), so a block is [`BLOCK_WORDS`] = 12 words =
//! 16 tokens exactly: vLLM's default block size.

use std::collections::{BTreeMap, HashMap};
use std::hash::{DefaultHasher, Hasher};

/// Words in one block.
pub const BLOCK_WORDS: u64 = 12;

/// Tokens in one block (12 words by the 3/4-word rule; vLLM's default `--block-size`).
pub const BLOCK_TOKENS: u64 = 16;

/// The chained hashes of a prompt's full blocks, fed a word at a time as the body is parsed (the
/// prompt is never held). At most `cap` are kept: blocks past the cache's size could not all be
/// cached anyway, and the cap bounds what one request costs whatever its length.
#[derive(Debug, Clone)]
pub struct BlockHashes {
    hashes: Vec<u64>,
    cap: usize,
    current: DefaultHasher,
    in_block: u64,
}

impl BlockHashes {
    /// Keeps at most `cap` block hashes.
    pub fn new(cap: usize) -> BlockHashes {
        BlockHashes {
            hashes: Vec::with_capacity(cap.min(4096)),
            cap,
            current: block_hasher(0),
            in_block: 0,
        }
    }

    /// Ready for the next prompt.
    pub fn clear(&mut self) {
        self.hashes.clear();
        self.current = block_hasher(0);
        self.in_block = 0;
    }

    /// The prompt's next word.
    pub fn word(&mut self, word: &str) {
        if self.hashes.len() >= self.cap {
            return;
        }
        self.current.write(word.as_bytes());
        // 0xff is no byte of UTF-8: words cannot run into each other.
        self.current.write_u8(0xff);
        self.in_block += 1;
        if self.in_block == BLOCK_WORDS {
            let hash = self.current.finish();
            self.hashes.push(hash);
            self.current = block_hasher(hash);
            self.in_block = 0;
        }
    }

    /// Every word of `text` (split on whitespace, as the server counts them).
    pub fn words(&mut self, text: &str) {
        for w in text.split_whitespace() {
            self.word(w);
        }
    }

    /// The full blocks' hashes, first block first.
    pub fn hashes(&self) -> &[u64] {
        &self.hashes
    }
}

/// The hasher of a block that follows the block hashed `parent` (0 for the first).
fn block_hasher(parent: u64) -> DefaultHasher {
    // `DefaultHasher::new()` has fixed keys: the same prompt hashes the same in every thread.
    let mut h = DefaultHasher::new();
    h.write_u64(parent);
    h
}

/// The blocks of a prompt of `words` words that a cache may serve: the full blocks before its
/// last word, since (as vLLM) the last prompt token is always computed, so that there is a
/// token to generate the first output from.
pub fn cacheable_blocks(words: u64) -> u64 {
    words.saturating_sub(1) / BLOCK_WORDS
}

/// A bounded cache of block hashes with least-recently-used eviction. Written by hand (the
/// `lru` crate would do): a map of hash to last use and an ordered map of last use to hash are a
/// few lines and no dependency.
#[derive(Debug)]
pub struct PrefixCache {
    capacity: usize,
    /// Each block's last use and the instant (monotonic ns) it is computed from.
    last_use: HashMap<u64, Entry>,
    by_age: BTreeMap<u64, u64>,
    clock: u64,
}

impl PrefixCache {
    /// A cache of at most `capacity` blocks (at least 1).
    pub fn new(capacity: usize) -> PrefixCache {
        let capacity = capacity.max(1);
        PrefixCache {
            capacity,
            last_use: HashMap::with_capacity(capacity.min(1 << 20)),
            by_age: BTreeMap::new(),
            clock: 0,
        }
    }

    /// Blocks held.
    pub fn len(&self) -> usize {
        self.last_use.len()
    }

    /// Whether no block is held.
    pub fn is_empty(&self) -> bool {
        self.last_use.is_empty()
    }

    /// How many leading blocks of `hashes` are cached for a request read at `now_ns` (a block
    /// counts once its prefill has ended); those are used (made most recent).
    pub fn hit(&mut self, hashes: &[u64], now_ns: u64) -> usize {
        let run = hashes
            .iter()
            .take_while(|h| self.last_use.get(h).is_some_and(|e| e.ready_ns <= now_ns))
            .count();
        // The last of the run is touched first, so that a prompt's leading blocks stay longest.
        for &h in hashes[..run].iter().rev() {
            self.touch(h, now_ns);
        }
        run
    }

    /// Puts a prompt's blocks in, computed from `ready_ns` (its prefill's end), when the request
    /// is read: they hold their place in the cache from then, as vLLM's blocks do while being
    /// computed, and a later lookup counts them from `ready_ns` on. A block already there keeps
    /// its earlier instant. As vLLM frees a request's blocks tail first, the last block is the
    /// first to go: inserted in reverse, the first block is the most recent.
    pub fn insert(&mut self, hashes: &[u64], ready_ns: u64) {
        for &h in hashes.iter().rev() {
            self.touch(h, ready_ns);
        }
    }

    fn touch(&mut self, hash: u64, ready_ns: u64) {
        self.clock += 1;
        if let Some(e) = self.last_use.get_mut(&hash) {
            self.by_age.remove(&e.used);
            e.used = self.clock;
            e.ready_ns = e.ready_ns.min(ready_ns);
        } else {
            let entry = Entry {
                used: self.clock,
                ready_ns,
            };
            self.last_use.insert(hash, entry);
            if self.last_use.len() > self.capacity {
                if let Some((_, oldest)) = self.by_age.pop_first() {
                    self.last_use.remove(&oldest);
                }
            }
        }
        self.by_age.insert(self.clock, hash);
    }
}

/// One cached block: its last use (the cache's clock) and the instant it is computed from.
#[derive(Debug, Clone, Copy)]
struct Entry {
    used: u64,
    ready_ns: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hashes(text: &str, cap: usize) -> Vec<u64> {
        let mut b = BlockHashes::new(cap);
        b.words(text);
        b.hashes().to_vec()
    }

    /// `n` words: `w0 w1 ...`, with `tag` in place of word `at`.
    fn words(n: usize, at: usize, tag: &str) -> String {
        (0..n)
            .map(|k| {
                if k == at {
                    tag.to_string()
                } else {
                    format!("w{k}")
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn only_full_blocks_are_hashed_and_each_names_everything_before_it() {
        assert_eq!(hashes(&words(11, 99, ""), 100).len(), 0);
        assert_eq!(hashes(&words(12, 99, ""), 100).len(), 1);
        assert_eq!(hashes(&words(35, 99, ""), 100).len(), 2);
        let a = hashes(&words(36, 99, ""), 100);
        // Whitespace does not matter, the words do.
        assert_eq!(hashes(&words(36, 99, "").replace(' ', "\n  "), 100), a);
        // A change in block 1 changes blocks 1 and 2, not 0.
        let b = hashes(&words(36, 13, "x"), 100);
        assert_eq!(
            (a[0] == b[0], a[1] == b[1], a[2] == b[2]),
            (true, false, false)
        );
        // Words cannot run into each other: "ab c" is not "a bc".
        assert_ne!(
            hashes("ab c d e f g h i j k l m", 9),
            hashes("a bc d e f g h i j k l m", 9)
        );
        // At most `cap` are kept.
        assert_eq!(hashes(&words(36, 99, ""), 2), a[..2]);
        // A reused hasher starts over.
        let mut h = BlockHashes::new(100);
        h.words("stale words");
        h.clear();
        h.words(&words(36, 99, ""));
        assert_eq!(h.hashes(), a);
    }

    #[test]
    fn the_last_word_is_never_served_from_the_cache() {
        assert_eq!(cacheable_blocks(0), 0);
        assert_eq!(cacheable_blocks(12), 0);
        assert_eq!(cacheable_blocks(13), 1);
        assert_eq!(cacheable_blocks(24), 1);
        assert_eq!(cacheable_blocks(25), 2);
    }

    #[test]
    fn a_hit_is_the_run_of_leading_blocks_in_the_cache() {
        let mut c = PrefixCache::new(100);
        assert_eq!(c.hit(&[1, 2, 3], 0), 0);
        c.insert(&[1, 2, 3], 0);
        assert_eq!(c.len(), 3);
        assert_eq!(c.hit(&[1, 2, 3, 4], 0), 3);
        assert_eq!(c.hit(&[1, 2, 9, 3], 0), 2);
        // A block present but after a miss does not count.
        assert_eq!(c.hit(&[9, 2, 3], 0), 0);
        assert_eq!(c.hit(&[], 0), 0);
        // Inserting again adds nothing new.
        c.insert(&[1, 2, 3], 0);
        assert_eq!(c.len(), 3);
    }

    #[test]
    fn the_least_recently_used_block_goes_first_and_a_prompt_loses_its_tail_first() {
        let mut c = PrefixCache::new(4);
        c.insert(&[1, 2, 3], 0); // ages: 3 oldest, then 2, then 1
        c.insert(&[10, 11], 0); // 11 then 10: 3 is evicted for 10
        assert_eq!(c.len(), 4);
        assert_eq!(c.hit(&[1, 2, 3], 0), 2);
        assert_eq!(c.hit(&[10, 11], 0), 2);
        // Now the oldest is 2's (touched before 1), then 1, then 11, 10.
        c.insert(&[20], 0);
        assert_eq!(c.hit(&[1, 2], 0), 1, "2 went");
        // The order of use is now 11, 10, 20, 1 (oldest first).
        c.insert(&[30, 31], 0);
        assert_eq!((c.hit(&[10], 0), c.hit(&[11], 0)), (0, 0));
        assert_eq!(
            (c.hit(&[20], 0), c.hit(&[1], 0), c.hit(&[30, 31], 0)),
            (1, 1, 2)
        );
        assert_eq!(c.len(), 4);
        // A prompt longer than the cache keeps its leading blocks.
        let mut c = PrefixCache::new(2);
        c.insert(&[1, 2, 3, 4, 5], 0);
        assert_eq!(c.hit(&[1, 2, 3], 0), 2);
        assert_eq!(c.len(), 2);
    }

    #[test]
    fn a_block_counts_from_its_prefill_end_on_and_keeps_its_earliest_instant() {
        let mut c = PrefixCache::new(100);
        // Read at 0, its prefill ends at 148: inserted when read, counted from 148 on.
        c.insert(&[1, 2, 3], 148);
        assert_eq!(c.len(), 3, "it holds its place from its read");
        assert_eq!(c.hit(&[1, 2, 3], 147), 0, "before its prefill ends");
        assert_eq!(c.hit(&[1, 2, 3], 148), 3, "at its prefill's end");
        // A later request with the same prefix (prefill ending later) leaves 1 and 2 ready at
        // 148, its own block 4 only at 300.
        c.insert(&[1, 2, 4], 300);
        assert_eq!(c.hit(&[1, 2, 4], 200), 2);
        assert_eq!(c.hit(&[1, 2, 4], 300), 3);
    }
}
