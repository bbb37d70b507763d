//! Where a run keeps its finished intervals until the results are written: in an unlinked
//! temporary file, so that a long run's resident memory stays flat.
//!
//! Each interval carries its three histograms, compressed and encoded (about 12 KB a second at
//! 20,000 requests/s); kept in memory they grow a ten-minute run by ~7 MB and an hour-long one
//! by ~45 MB. They are only needed once, when the results are assembled, so they go to disk as
//! JSON lines as they are made and are read back at the end. Should the temporary file fail
//! (no writable temporary directory, a full disk), the store falls back to memory for the rest
//! of the run and says so once: the results are never lost, only the memory bound is.

use candor_core::results::Interval;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Seek, SeekFrom, Write};

/// The finished intervals of one run, in the order they were pushed.
pub struct IntervalStore {
    spill: Option<BufWriter<File>>,
    /// Intervals kept in memory: those pushed after the spill file failed (and, after
    /// `into_vec`, everything).
    in_memory: Vec<Interval>,
    /// How many intervals the spill file holds.
    spilled: usize,
    /// Why the store fell back to memory, if it did.
    fallback: Option<String>,
}

impl Default for IntervalStore {
    fn default() -> Self {
        Self::new()
    }
}

impl IntervalStore {
    /// A store backed by an unlinked file in the temporary directory (memory if there is none).
    pub fn new() -> IntervalStore {
        match tempfile::tempfile() {
            Ok(f) => IntervalStore::with_file(f),
            Err(e) => IntervalStore {
                spill: None,
                in_memory: Vec::new(),
                spilled: 0,
                fallback: Some(format!("no temporary file for the intervals ({e})")),
            },
        }
    }

    /// A store that spills into `file` (which it truncates).
    pub fn with_file(file: File) -> IntervalStore {
        IntervalStore {
            spill: Some(BufWriter::new(file)),
            in_memory: Vec::new(),
            spilled: 0,
            fallback: None,
        }
    }

    /// A store that keeps everything in memory (the tests' reference).
    #[cfg(test)]
    fn in_memory() -> IntervalStore {
        IntervalStore {
            spill: None,
            in_memory: Vec::new(),
            spilled: 0,
            fallback: None,
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.spilled + self.in_memory.len()
    }

    /// Keeps `interval` (after the ones pushed before it).
    pub fn push(&mut self, interval: Interval) {
        if let Some(w) = &mut self.spill {
            let written = serde_json::to_writer(&mut *w, &interval)
                .map_err(std::io::Error::from)
                .and_then(|()| w.write_all(b"\n"));
            match written {
                Ok(()) => {
                    self.spilled += 1;
                    return;
                }
                Err(e) => self.fall_back(format!("writing the intervals' temporary file: {e}")),
            }
        }
        self.in_memory.push(interval);
    }

    /// Stops spilling: reads back what the file holds, so that everything is in memory.
    fn fall_back(&mut self, why: String) {
        let earlier = self.read_spilled();
        self.fallback.get_or_insert(why);
        match earlier {
            Ok(mut spilled) => {
                spilled.append(&mut self.in_memory);
                self.in_memory = spilled;
            }
            Err(e) => {
                self.fallback = Some(format!(
                    "{}; the {} intervals written before could not be read back ({e})",
                    self.fallback.take().unwrap_or_default(),
                    self.spilled
                ));
            }
        }
        self.spilled = 0;
    }

    /// The spill file's intervals (the file is then gone).
    fn read_spilled(&mut self) -> std::io::Result<Vec<Interval>> {
        let Some(w) = self.spill.take() else {
            return Ok(Vec::new());
        };
        // Without flushing: what a failed write left in the buffer follows what reached the file.
        let (mut file, buffered) = w.into_parts();
        let buffered = buffered.unwrap_or_default();
        file.seek(SeekFrom::Start(0))?;
        let mut out = Vec::with_capacity(self.spilled);
        let lines = BufReader::new(file.chain(&buffered[..])).lines();
        // Lines after the counted ones are an interval whose write failed halfway.
        for line in lines.take(self.spilled) {
            out.push(serde_json::from_str(&line?).map_err(std::io::Error::other)?);
        }
        Ok(out)
    }

    /// Every interval, in order, and why the store had to keep them in memory, if it did.
    pub fn into_vec(mut self) -> (Vec<Interval>, Option<String>) {
        if self.spill.is_some() {
            match self.read_spilled() {
                Ok(mut spilled) => {
                    spilled.append(&mut self.in_memory);
                    self.in_memory = spilled;
                }
                Err(e) => {
                    self.fallback = Some(format!(
                        "the {} intervals in the temporary file could not be read back ({e})",
                        self.spilled
                    ))
                }
            }
        }
        (self.in_memory, self.fallback)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candor_core::results::{EncodedHistograms, IntervalStats};
    use candor_core::Recorder;

    fn interval(i: u64) -> Interval {
        Interval {
            start_s: i as f64,
            length_s: 1.0,
            warmup: i == 0,
            completed: 100 + i,
            failed: i % 3,
            response_time: IntervalStats::default(),
            service_time: IntervalStats::default(),
            send_lag: IntervalStats::default(),
            first_byte: None,
            histograms: EncodedHistograms::of(&Recorder::new()),
            stream: None,
        }
    }

    #[test]
    fn spilled_intervals_come_back_in_order() {
        let mut store = IntervalStore::new();
        for i in 0..50 {
            store.push(interval(i));
        }
        assert_eq!(store.len(), 50);
        assert!(store.in_memory.is_empty(), "nothing is kept in memory");
        let (all, fallback) = store.into_vec();
        assert_eq!(fallback, None);
        assert_eq!(all, (0..50).map(interval).collect::<Vec<_>>());
    }

    #[test]
    fn a_spill_file_that_fails_falls_back_to_memory_and_keeps_everything() {
        // A file opened read-only: every write fails once the buffer is flushed.
        let path =
            std::env::temp_dir().join(format!("candor-interval-store-{}", std::process::id()));
        std::fs::write(&path, b"").unwrap();
        let read_only = File::open(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        let mut store = IntervalStore::with_file(read_only);
        // Enough to overflow BufWriter's 8 KiB buffer, so that a write reaches the file.
        for i in 0..200 {
            store.push(interval(i));
        }
        let (all, fallback) = store.into_vec();
        assert!(fallback.is_some(), "the fallback is reported");
        // What never reached the file is read back from the writer's buffer.
        assert_eq!(all, (0..200).map(interval).collect::<Vec<_>>());
    }

    #[test]
    fn the_in_memory_store_keeps_everything() {
        let mut store = IntervalStore::in_memory();
        for i in 0..3 {
            store.push(interval(i));
        }
        assert_eq!(store.into_vec(), ((0..3).map(interval).collect(), None));
    }
}
