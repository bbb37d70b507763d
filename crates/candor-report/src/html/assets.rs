//! What every candor page inlines: the vendored uPlot (no network) and the report's styles.

pub(crate) const UPLOT_JS: &str = include_str!("../../../../vendor/uplot/uPlot.iife.min.js");
pub(crate) const UPLOT_CSS: &str = include_str!("../../../../vendor/uplot/uPlot.min.css");
/// The report's styles, shared by every candor page (the sweep page uses them too).
pub(crate) const PAGE_CSS: &str = include_str!("page.css");
