//! The one export path, after hyperfine's `ExportManager`: each format is an [`Exporter`] (in the
//! file of its format: `text.rs`, `json.rs`, `hlog.rs`, `hgrm.rs`, `html/`, its sweep page `html/sweep.rs`)
//! that turns a document into bytes, and [`Destination`] is the one place that opens a file (or
//! stdout for `-`), replaces its contents and says which flag failed. Every output ends in a
//! newline, whatever its format, so files and stdout agree.

use std::fs::{File, OpenOptions};
use std::io::{Seek, Write};
use std::os::fd::AsFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// Turns a document (`T`: one run, several labelled runs, a sweep, a histogram) into the bytes
/// of one format.
pub trait Exporter<T: ?Sized> {
    fn export(&self, document: &T) -> Result<Vec<u8>, ExportError>;
}

/// An export that could not be made or written; each names the flag and the place.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("{flag} {path}: cannot write there: {reason}")]
    Open {
        flag: &'static str,
        path: String,
        reason: std::io::Error,
    },
    #[error("writing {flag} {path}: {reason}")]
    Write {
        flag: &'static str,
        path: String,
        reason: std::io::Error,
    },
    #[error("preparing {flag} {path}: {reason}")]
    Prepare {
        flag: &'static str,
        path: String,
        reason: String,
    },
    /// The document cannot be put in this format (a histogram that does not decode...).
    #[error("{0}")]
    Format(String),
    /// Two outputs would land in one file (or both on stdout): the second would replace or
    /// interleave with the first.
    #[error("{first} and {second} both write to {place}: give each output its own file")]
    SamePlace {
        first: &'static str,
        second: &'static str,
        place: String,
    },
    /// An output would replace a file the command reads.
    #[error("{flag} {path} is also an input: writing there would replace what is being read")]
    Input { flag: &'static str, path: String },
}

/// The file an output really lands in, whatever path named it (a symlink, a hard link,
/// `/dev/stdout` for `-`): its device and inode. `None` for a character device such as
/// `/dev/null` or a terminal, where two outputs take nothing from each other.
type Place = Option<(u64, u64)>;

fn place_of(meta: &std::fs::Metadata) -> Place {
    (!meta.file_type().is_char_device()).then(|| (meta.dev(), meta.ino()))
}

/// Where stdout leads (a file, a pipe), for `-`.
fn stdout_place() -> Place {
    let fd = std::io::stdout().as_fd().try_clone_to_owned().ok()?;
    File::from(fd).metadata().ok().as_ref().and_then(place_of)
}

/// `ENOSPC` on Linux: a full device.
const ENOSPC: i32 = 28;

/// Where an export goes: a file opened before the work that produces it (so that a typo in a
/// path fails in a second, not after a long run), or stdout for `-`.
pub struct Destination {
    /// The flag that named it, for messages (`--hlog`).
    pub flag: &'static str,
    pub path: PathBuf,
    /// `None` for stdout.
    file: Option<File>,
    /// Created by this process (and so removed again if nothing is ever written to it).
    created: bool,
    written: bool,
    place: Place,
}

impl Destination {
    /// Opens (creating it if needed) `path` for `flag`, or stdout for `-`. An existing file keeps
    /// its contents until [`Destination::write`] replaces them, so a run that fails early does
    /// not destroy an old result.
    pub fn open(flag: &'static str, path: impl Into<PathBuf>) -> Result<Destination, ExportError> {
        let path = path.into();
        if path.as_os_str() == "-" {
            return Ok(Destination {
                flag,
                path,
                file: None,
                created: false,
                written: false,
                place: stdout_place(),
            });
        }
        let existed = path.exists();
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|reason| ExportError::Open {
                flag,
                path: path.display().to_string(),
                reason,
            })?;
        let mut dest = Destination {
            flag,
            path,
            file: Some(file),
            created: !existed,
            written: false,
            place: None,
        };
        let file = dest.file.as_mut().expect("opened above");
        // Opening for write is not proof of writing: root opens /proc/version for write and
        // learns only at the first write, after the load, that it takes none. A write of no
        // bytes asks the file's own write operation now, changing nothing. A full device
        // (/dev/full, ENOSPC) is let through: it may have room by the end, and the final
        // write says so if not.
        let probe = file
            .write(&[])
            .map(|_| ())
            .or_else(|e| match e.raw_os_error() {
                Some(ENOSPC) => Ok(()),
                _ => Err(e),
            });
        let meta = probe.and_then(|()| file.metadata());
        match meta {
            Ok(meta) => dest.place = place_of(&meta),
            Err(reason) => {
                return Err(ExportError::Open {
                    flag,
                    path: dest.path.display().to_string(),
                    reason,
                })
            }
        }
        Ok(dest)
    }

    /// Refuses `self` when it lands where one of `others` already does (the same file under
    /// another name, or stdout twice).
    pub fn refuse_same_place<'d>(
        &self,
        others: impl IntoIterator<Item = &'d Destination>,
    ) -> Result<(), ExportError> {
        for other in others {
            let both_stdout = self.is_stdout() && other.is_stdout();
            if both_stdout || (self.place.is_some() && self.place == other.place) {
                return Err(ExportError::SamePlace {
                    first: other.flag,
                    second: self.flag,
                    place: if both_stdout {
                        "stdout".into()
                    } else {
                        self.name()
                    },
                });
            }
        }
        Ok(())
    }

    /// Refuses `self` when it is one of the `inputs` (under any name), which writing would
    /// replace. Inputs that cannot be looked at are not its concern (reading them says why).
    pub fn refuse_inputs(&self, inputs: &[impl AsRef<Path>]) -> Result<(), ExportError> {
        if self.place.is_none() {
            return Ok(());
        }
        for input in inputs {
            let place = std::fs::metadata(input).ok().as_ref().and_then(place_of);
            if place == self.place {
                return Err(ExportError::Input {
                    flag: self.flag,
                    path: self.name(),
                });
            }
        }
        Ok(())
    }

    /// Opens the destination when the flag was given.
    pub fn open_opt(
        flag: &'static str,
        path: Option<impl Into<PathBuf>>,
    ) -> Result<Option<Destination>, ExportError> {
        path.map(|p| Destination::open(flag, p)).transpose()
    }

    /// True for `-`.
    pub fn is_stdout(&self) -> bool {
        self.file.is_none()
    }

    /// "stdout" or the path, for messages.
    pub fn name(&self) -> String {
        match self.file {
            None => "stdout".into(),
            Some(_) => self.path.display().to_string(),
        }
    }

    /// Replaces the contents with `bytes`, ending them with a newline if they lack one.
    pub fn write(&mut self, bytes: &[u8]) -> Result<(), ExportError> {
        self.written = true;
        let newline: &[u8] = if bytes.ends_with(b"\n") { b"" } else { b"\n" };
        let result = match &mut self.file {
            None => {
                let mut out = std::io::stdout().lock();
                match out
                    .write_all(bytes)
                    .and_then(|()| out.write_all(newline))
                    .and_then(|()| out.flush())
                {
                    // The reader took what it wanted and left (`--json - | head -1`): not a
                    // failure of the export, and the other outputs are still written.
                    Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
                    other => other,
                }
            }
            Some(f) => {
                // Truncating and syncing apply to regular files; /dev/stdout or a pipe is just
                // written.
                let regular = f.metadata().map(|m| m.is_file()).unwrap_or(false);
                (|| {
                    if regular {
                        f.set_len(0)?;
                        f.rewind()?;
                    }
                    f.write_all(bytes)?;
                    f.write_all(newline)?;
                    if regular {
                        // A full disk can surface only here (delayed allocation).
                        f.sync_data()?;
                    }
                    Ok(())
                })()
            }
        };
        result.map_err(|reason| ExportError::Write {
            flag: self.flag,
            path: self.path.display().to_string(),
            reason,
        })
    }

    /// Exports `document` with `exporter` and writes it here.
    pub fn export<T: ?Sized>(
        &mut self,
        exporter: &dyn Exporter<T>,
        document: &T,
    ) -> Result<(), ExportError> {
        let bytes = exporter
            .export(document)
            .map_err(|e| ExportError::Prepare {
                flag: self.flag,
                path: self.path.display().to_string(),
                reason: e.to_string(),
            })?;
        self.write(&bytes)
    }
}

impl Drop for Destination {
    fn drop(&mut self) {
        // Leave no empty file behind for a run that never produced results.
        if self.created && !self.written {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// The exports of one document, each to its own destination, all opened up front.
pub struct ExportManager<'a, T: ?Sized> {
    targets: Vec<(Destination, Box<dyn Exporter<T> + 'a>)>,
}

impl<'a, T: ?Sized> Default for ExportManager<'a, T> {
    fn default() -> Self {
        ExportManager {
            targets: Vec::new(),
        }
    }
}

impl<'a, T: ?Sized> ExportManager<'a, T> {
    /// Adds an export when its flag was given (opening the destination now).
    pub fn add(
        &mut self,
        flag: &'static str,
        path: Option<impl Into<PathBuf>>,
        exporter: impl Exporter<T> + 'a,
    ) -> Result<&mut Self, ExportError> {
        if let Some(dest) = Destination::open_opt(flag, path)? {
            dest.refuse_same_place(self.targets.iter().map(|(d, _)| d))?;
            self.targets.push((dest, Box::new(exporter)));
        }
        Ok(self)
    }

    /// Refuses any export that is one of `inputs` ([`Destination::refuse_inputs`]).
    pub fn refuse_inputs(&self, inputs: &[impl AsRef<Path>]) -> Result<(), ExportError> {
        self.targets
            .iter()
            .try_for_each(|(d, _)| d.refuse_inputs(inputs))
    }

    /// True when one of the exports goes to stdout.
    pub fn uses_stdout(&self) -> bool {
        self.targets.iter().any(|(d, _)| d.is_stdout())
    }

    /// Writes every export of `document` in the order added, going on after a failure; returns
    /// the failures (empty when all were written), so that a full disk loses only that file.
    pub fn write_all(&mut self, document: &T) -> Vec<ExportError> {
        let mut failures = Vec::new();
        for (dest, exporter) in &mut self.targets {
            if let Err(e) = dest.export(exporter.as_ref(), document) {
                failures.push(e);
            }
        }
        failures
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("candor-export-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// The bytes of a string, or a refusal.
    struct Echo;
    impl Exporter<str> for Echo {
        fn export(&self, s: &str) -> Result<Vec<u8>, ExportError> {
            if s == "bad" {
                return Err(ExportError::Format("cannot encode".into()));
            }
            Ok(s.as_bytes().to_vec())
        }
    }

    #[test]
    fn unwritable_places_fail_at_open_naming_the_flag() {
        let dir = tmp("unwritable");
        let e = Destination::open("--json", dir.clone())
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.starts_with("--json ") && e.contains("cannot write there"),
            "{e}"
        );
        let e = Destination::open("--hlog", dir.join("missing/x.hlog"))
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
        drop(Destination::open("--json", fresh.clone()).unwrap());
        assert!(!fresh.exists());
        let old = dir.join("old.json");
        std::fs::write(&old, "previous results, longer than the new ones").unwrap();
        drop(Destination::open("--json", old.clone()).unwrap());
        assert_eq!(
            std::fs::read_to_string(&old).unwrap(),
            "previous results, longer than the new ones"
        );
        let mut o = Destination::open("--json", old.clone()).unwrap();
        o.write(b"new").unwrap();
        drop(o);
        assert_eq!(std::fs::read_to_string(&old).unwrap(), "new\n");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn two_outputs_in_one_place_are_refused_whatever_names_them() {
        let dir = tmp("place");
        let f = dir.join("f");
        let mut m: ExportManager<str> = ExportManager::default();
        m.add("--json", Some(f.clone()), Echo).unwrap();
        std::os::unix::fs::symlink(&f, dir.join("link")).unwrap();
        let e = m.add("--hlog", Some(dir.join("link")), Echo).err().unwrap();
        assert!(
            e.to_string()
                .starts_with("--json and --hlog both write to "),
            "{e}"
        );
        let e = m.add("--hgrm", Some(dir.join("./f")), Echo).err().unwrap();
        assert!(matches!(e, ExportError::SamePlace { .. }), "{e}");
        // A place where outputs take nothing from each other.
        let mut null: ExportManager<str> = ExportManager::default();
        null.add("--json", Some("/dev/null"), Echo).unwrap();
        null.add("--hlog", Some("/dev/null"), Echo).unwrap();
        // An input under another name.
        std::fs::write(dir.join("in"), "x").unwrap();
        std::fs::hard_link(dir.join("in"), dir.join("in-too")).unwrap();
        let d = Destination::open("-o", dir.join("in-too")).unwrap();
        let e = d.refuse_inputs(&[dir.join("in")]).unwrap_err();
        assert!(e.to_string().contains("is also an input"), "{e}");
        d.refuse_inputs(&[dir.join("f"), dir.join("missing")])
            .unwrap();
        drop((m, d));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_file_that_takes_no_writes_is_refused_at_open() {
        // procfs opens for write (as root) but refuses every write; as another user the open
        // fails. Either way the refusal comes at open, not after the work.
        let e = Destination::open("--json", "/proc/version").err().unwrap();
        assert!(
            e.to_string()
                .starts_with("--json /proc/version: cannot write there"),
            "{e}"
        );
    }

    #[test]
    fn every_output_ends_in_exactly_the_newline_it_needs() {
        let dir = tmp("newline");
        for (bytes, want) in [("a", "a\n"), ("a\n", "a\n"), ("", "\n"), ("a\n\n", "a\n\n")] {
            let mut d = Destination::open("-o", dir.join("f")).unwrap();
            d.write(bytes.as_bytes()).unwrap();
            assert_eq!(std::fs::read_to_string(dir.join("f")).unwrap(), want);
        }
        let d = Destination::open("-o", "-").unwrap();
        assert!(d.is_stdout() && d.name() == "stdout");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_failed_export_does_not_stop_the_others() {
        let dir = tmp("partial");
        let mut bad: ExportManager<str> = ExportManager::default();
        bad.add("--json", Some(dir.join("a")), Echo).unwrap();
        bad.add("--hlog", Some(dir.join("b")), Echo).unwrap();
        bad.add("--hgrm", None::<PathBuf>, Echo).unwrap();
        assert!(!bad.uses_stdout());
        let failures = bad.write_all("bad");
        assert_eq!(failures.len(), 2);
        assert!(failures[0].to_string().starts_with("preparing --json "));
        let mut good: ExportManager<str> = ExportManager::default();
        good.add("--json", Some(dir.join("a")), Echo).unwrap();
        good.add("--hlog", Some(dir.join("b")), Echo).unwrap();
        assert!(good.write_all("hlog").is_empty());
        assert_eq!(std::fs::read(dir.join("b")).unwrap(), b"hlog\n");
        // A full device: opening works, writing fails, and says which output.
        if std::path::Path::new("/dev/full").exists() {
            let mut full = Destination::open("--hgrm", "/dev/full").unwrap();
            let e = full.write(b"x").unwrap_err();
            assert!(e.to_string().starts_with("writing --hgrm /dev/full"), "{e}");
        }
        std::fs::remove_dir_all(dir).unwrap();
    }
}
