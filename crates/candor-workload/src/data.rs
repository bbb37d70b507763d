//! `--data FILE.csv`: the rows that `{{data:COLUMN}}` placeholders are filled from. Read whole
//! before the run with the `csv` crate (a header row, RFC 4180 quoting); a request takes row
//! `seq mod rows`, or a seeded random row with `--data-order random`.

use candor_core::bounded::{MAX_DATA_FILE_BYTES, MAX_LINE_BYTES};
use std::path::Path;
use thiserror::Error;

#[derive(Debug, Error, PartialEq)]
pub enum DataError {
    #[error("cannot read --data {path}: {reason}")]
    Read { path: String, reason: String },
    #[error("--data {path}: line {line}: {reason}")]
    Row {
        path: String,
        line: u64,
        reason: String,
    },
    #[error("--data {0}: no header row")]
    NoHeader(String),
    #[error("--data {0}: a header row but no data rows")]
    NoRows(String),
    #[error("--data {path}: column '{column}' appears twice in the header")]
    DuplicateColumn { path: String, column: String },
}

/// How rows are taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DataOrder {
    /// Row `seq mod rows`: in file order, wrapping.
    #[default]
    Sequential,
    /// A uniformly random row per request, from the request's seeded generator.
    Random,
}

/// The table of a data file: a header and rows of byte strings, stored row-major.
#[derive(Debug, Clone, PartialEq)]
pub struct DataTable {
    columns: Vec<String>,
    cells: Vec<Box<[u8]>>,
    /// The longest value of each column, so that fill buffers are sized once before the run.
    widest: Vec<usize>,
}

impl DataTable {
    /// Reads and parses a CSV file of at most [`MAX_DATA_FILE_BYTES`], no line longer than
    /// [`MAX_LINE_BYTES`].
    pub fn load(path: &Path) -> Result<DataTable, DataError> {
        let shown = path.display().to_string();
        let bytes =
            candor_core::bounded::read_file(path, MAX_DATA_FILE_BYTES, Some(MAX_LINE_BYTES))
                .map_err(|e| DataError::Read {
                    path: shown.clone(),
                    reason: e.to_string(),
                })?;
        DataTable::parse(&bytes, &shown)
    }

    /// Parses CSV text (a leading byte order mark is not part of the first column's name);
    /// `path` names it in errors.
    pub fn parse(bytes: &[u8], path: &str) -> Result<DataTable, DataError> {
        let bytes = candor_core::bounded::strip_bom(bytes);
        let row_error = |e: csv::Error| {
            let line = e.position().map_or(0, |p| p.line());
            let reason = match e.kind() {
                csv::ErrorKind::UnequalLengths {
                    expected_len, len, ..
                } => format!("{len} fields, but the header has {expected_len}"),
                _ => e.to_string(),
            };
            DataError::Row {
                path: path.into(),
                line,
                reason,
            }
        };
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(true)
            .flexible(false)
            .from_reader(bytes);
        let header = reader.byte_headers().map_err(row_error)?.clone();
        if header.is_empty() {
            return Err(DataError::NoHeader(path.into()));
        }
        let columns: Vec<String> = header
            .iter()
            .map(|c| String::from_utf8_lossy(c).trim().to_string())
            .collect();
        for (i, c) in columns.iter().enumerate() {
            if columns[..i].contains(c) {
                return Err(DataError::DuplicateColumn {
                    path: path.into(),
                    column: c.clone(),
                });
            }
        }
        let mut cells = Vec::new();
        let mut widest = vec![0; columns.len()];
        for record in reader.byte_records() {
            let record = record.map_err(row_error)?;
            // Every load thread keeps a fill buffer per slot as wide as the widest value: a
            // quoted value spanning many short lines is bounded as a line is.
            if let Some(long) = record.iter().find(|f| f.len() > MAX_LINE_BYTES) {
                return Err(DataError::Row {
                    path: path.into(),
                    line: record.position().map_or(0, |p| p.line()),
                    reason: format!(
                        "a value of {} bytes, longer than {}, the longest value candor reads",
                        long.len(),
                        candor_core::bounded::format_limit(MAX_LINE_BYTES as u64)
                    ),
                });
            }
            for (i, field) in record.iter().enumerate() {
                widest[i] = widest[i].max(field.len());
                cells.push(field.into());
            }
        }
        if cells.is_empty() {
            return Err(DataError::NoRows(path.into()));
        }
        Ok(DataTable {
            columns,
            cells,
            widest,
        })
    }

    pub fn columns(&self) -> &[String] {
        &self.columns
    }

    pub fn rows(&self) -> usize {
        self.cells.len() / self.columns.len()
    }

    /// The index of a column by name.
    pub fn column(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c == name)
    }

    /// The longest value in a column.
    pub fn widest(&self, column: usize) -> usize {
        self.widest[column]
    }

    #[inline]
    pub fn cell(&self, row: usize, column: usize) -> &[u8] {
        &self.cells[row * self.columns.len() + column]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc_4180_quoting() {
        let t = DataTable::parse(
            b"user,note\nalice,\"hello, world\"\nbob,\"say \"\"hi\"\"\"\n\"car\nol\",plain\n",
            "users.csv",
        )
        .unwrap();
        assert_eq!(t.columns(), &["user", "note"]);
        assert_eq!(t.rows(), 3);
        assert_eq!(t.cell(0, 1), b"hello, world");
        assert_eq!(t.cell(1, 1), b"say \"hi\"");
        assert_eq!(t.cell(2, 0), b"car\nol");
        assert_eq!(t.column("note"), Some(1));
        assert_eq!(t.widest(1), 12);
        // A byte order mark (spreadsheets write one) is not part of the first column's name.
        let t = DataTable::parse(b"\xEF\xBB\xBFid,name\n1,a\n", "bom.csv").unwrap();
        assert_eq!(t.column("id"), Some(0));
    }

    #[test]
    fn files_values_and_lines_are_bounded() {
        let e = DataTable::load(Path::new("/dev/zero"))
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "cannot read --data /dev/zero: line 1 is longer than 4 MiB, the longest line candor reads"
        );
        let mut text = b"id\n\"".to_vec();
        text.extend(std::iter::repeat_n(b"ab\n", (MAX_LINE_BYTES / 3) + 1).flatten());
        text.extend_from_slice(b"\"\n");
        let e = DataTable::parse(&text, "d.csv").unwrap_err().to_string();
        assert!(
            e.starts_with("--data d.csv: line 2: a value of ")
                && e.ends_with("longer than 4 MiB, the longest value candor reads"),
            "{e}"
        );
    }

    #[test]
    fn bad_files_are_one_line_errors() {
        let e = DataTable::parse(b"a,b\n1,2\n3\n", "d.csv").unwrap_err();
        assert_eq!(
            e.to_string(),
            "--data d.csv: line 3: 1 fields, but the header has 2"
        );
        assert_eq!(
            DataTable::parse(b"a,b\n", "d.csv").unwrap_err(),
            DataError::NoRows("d.csv".into())
        );
        assert_eq!(
            DataTable::parse(b"", "d.csv").unwrap_err(),
            DataError::NoHeader("d.csv".into())
        );
        assert!(DataTable::parse(b"a,a\n1,2\n", "d.csv")
            .unwrap_err()
            .to_string()
            .contains("column 'a' appears twice"));
        let e = DataTable::load(Path::new("/nonexistent/users.csv"))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("cannot read --data /nonexistent/users.csv: "),
            "{e}"
        );
    }
}
