//! The Markdown report: the terminal report's content as GitHub-flavoured Markdown
//! tables, headings and lists (written by [`super::text`] in its Markdown style).

use super::grid::Style;
use super::Exporter;
use crate::analysis::Analysis;

/// GitHub-flavoured Markdown tables.
pub struct Markdown;

impl Exporter for Markdown {
    fn render(&self, a: &Analysis) -> String {
        super::text::render_text(a, Style::Markdown)
    }
}
