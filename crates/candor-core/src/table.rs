//! Fixed-width text tables for the terminal reports, written once: two spaces of indent, each
//! cell padded to its column, one space between columns and an optional free-text tail. A cell
//! longer than its column is kept whole (as `format!` padding does), never cut. Hand-written
//! because the reports' layout is fixed and small; a table crate would only re-derive widths.

use std::fmt::Write as _;

/// Which side of its column a cell keeps to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

/// One column: its width in characters and its alignment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Column {
    pub width: usize,
    pub align: Align,
}

impl Column {
    pub const fn left(width: usize) -> Column {
        Column {
            width,
            align: Align::Left,
        }
    }

    pub const fn right(width: usize) -> Column {
        Column {
            width,
            align: Align::Right,
        }
    }
}

/// A table being written row by row.
#[derive(Debug, Clone)]
pub struct TextTable {
    columns: Vec<Column>,
    out: String,
}

impl TextTable {
    pub fn new(columns: impl Into<Vec<Column>>) -> TextTable {
        TextTable {
            columns: columns.into(),
            out: String::new(),
        }
    }

    /// Adds a row of cells, one per column (extra cells are ignored, missing ones are empty).
    pub fn row<S: AsRef<str>>(&mut self, cells: &[S]) -> &mut Self {
        self.row_with_tail(cells, "")
    }

    /// Adds a row followed by `tail` two spaces after the last column (when `tail` is not empty).
    pub fn row_with_tail<S: AsRef<str>>(&mut self, cells: &[S], tail: &str) -> &mut Self {
        self.out.push_str("  ");
        for (i, c) in self.columns.iter().enumerate() {
            if i > 0 {
                self.out.push(' ');
            }
            let cell = cells.get(i).map_or("", |s| s.as_ref());
            let w = c.width;
            let _ = match c.align {
                Align::Left => write!(self.out, "{cell:<w$}"),
                Align::Right => write!(self.out, "{cell:>w$}"),
            };
        }
        if !tail.is_empty() {
            self.out.push_str("  ");
            self.out.push_str(tail);
        }
        self.out.push('\n');
        self
    }

    /// The rows written so far.
    pub fn finish(self) -> String {
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_pad_to_their_columns_and_long_ones_stay_whole() {
        let mut t = TextTable::new([Column::left(4), Column::right(6)]);
        t.row(&["p50", "1.2ms"])
            .row(&["max", "123.456ms"])
            .row_with_tail(&["x"], "ok");
        assert_eq!(
            t.finish(),
            "  p50   1.2ms\n  max  123.456ms\n  x            ok\n"
        );
    }
}
