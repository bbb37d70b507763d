//! Output files opened before the load starts, so that a typo in `--json` or a missing directory
//! fails in a second instead of after a long run; and written at the end one by one, so that one
//! failing write (a full disk) loses only that file.

use anyhow::{Context, Result};
use std::fs::{File, OpenOptions};
use std::io::{Seek, Write};
use std::path::PathBuf;

/// One output file, open for writing since before the run.
pub struct Output {
    /// The flag that named it, for messages ("--hlog").
    pub flag: &'static str,
    pub path: PathBuf,
    file: File,
    /// Created by this process (and so removed again if nothing is ever written to it).
    created: bool,
    written: bool,
}

impl Output {
    /// Opens (creating it if needed) `path` for `flag`. An existing file keeps its contents until
    /// [`Output::write`] replaces them, so a run that fails early does not destroy an old result.
    pub fn open(flag: &'static str, path: impl Into<PathBuf>) -> Result<Output> {
        let path = path.into();
        let existed = path.exists();
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| anyhow::anyhow!("{flag} {}: cannot write there: {e}", path.display()))?;
        Ok(Output {
            flag,
            path,
            file,
            created: !existed,
            written: false,
        })
    }

    /// Opens the file when the flag was given.
    pub fn open_opt(flag: &'static str, path: Option<&str>) -> Result<Option<Output>> {
        path.map(|p| Output::open(flag, p)).transpose()
    }

    /// Replaces the file's contents with `bytes`.
    pub fn write(&mut self, bytes: &[u8]) -> Result<()> {
        self.written = true;
        let f = &mut self.file;
        // Truncating and syncing apply to regular files; /dev/stdout or a pipe is just written.
        let regular = f.metadata().map(|m| m.is_file()).unwrap_or(false);
        let result = (|| {
            if regular {
                f.set_len(0)?;
                f.rewind()?;
            }
            f.write_all(bytes)?;
            if regular {
                // A full disk can surface only here (delayed allocation).
                f.sync_data()?;
            }
            Ok::<(), std::io::Error>(())
        })();
        result.with_context(|| format!("writing {} {}", self.flag, self.path.display()))
    }
}

impl Drop for Output {
    fn drop(&mut self) {
        // Leave no empty file behind for a run that never produced results.
        if self.created && !self.written {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Writes every (output, contents) pair, going on after a failure; each failure is printed as one
/// line naming the flag and path. Returns whether all succeeded.
pub fn write_all(items: Vec<(&mut Output, Result<Vec<u8>>)>) -> bool {
    let mut ok = true;
    for (out, bytes) in items {
        let result = bytes
            .with_context(|| format!("preparing {} {}", out.flag, out.path.display()))
            .and_then(|b| out.write(&b));
        if let Err(e) = result {
            eprintln!("candor: error: {e:#} (the other outputs were written)");
            ok = false;
        }
    }
    ok
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("candor-outputs-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn unwritable_places_fail_at_open_naming_the_flag() {
        let dir = tmp("unwritable");
        let e = Output::open("--json", dir.clone())
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.starts_with("--json ") && e.contains("cannot write there"),
            "{e}"
        );
        let e = Output::open("--hlog", dir.join("missing/x.hlog"))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("--hlog") && e.contains("missing/x.hlog"), "{e}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn an_unused_new_file_is_removed_and_an_old_one_kept_until_written() {
        let dir = tmp("lifecycle");
        let fresh = dir.join("fresh.json");
        drop(Output::open("--json", fresh.clone()).unwrap());
        assert!(!fresh.exists());
        let old = dir.join("old.json");
        std::fs::write(&old, "previous results, longer than the new ones").unwrap();
        drop(Output::open("--json", old.clone()).unwrap());
        assert_eq!(
            std::fs::read_to_string(&old).unwrap(),
            "previous results, longer than the new ones"
        );
        let mut o = Output::open("--json", old.clone()).unwrap();
        o.write(b"new").unwrap();
        drop(o);
        assert_eq!(std::fs::read_to_string(&old).unwrap(), "new");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_failed_write_does_not_stop_the_others() {
        let dir = tmp("partial");
        let mut a = Output::open("--json", dir.join("a")).unwrap();
        let mut b = Output::open("--hlog", dir.join("b")).unwrap();
        let ok = write_all(vec![
            (&mut a, Err(anyhow::anyhow!("encoding failed"))),
            (&mut b, Ok(b"hlog".to_vec())),
        ]);
        assert!(!ok);
        assert_eq!(std::fs::read(dir.join("b")).unwrap(), b"hlog");
        // A full device: opening works, writing fails, and says which output.
        if std::path::Path::new("/dev/full").exists() {
            let mut full = Output::open("--hgrm", "/dev/full").unwrap();
            let e = full.write(b"x").unwrap_err();
            assert!(
                format!("{e:#}").starts_with("writing --hgrm /dev/full"),
                "{e:#}"
            );
        }
        std::fs::remove_dir_all(dir).unwrap();
    }
}
