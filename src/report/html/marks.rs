//! SVG elements the charts write themselves instead of through plotters, whose
//! elements carry no class or data attribute: a reader of the page (and its tests)
//! must be able to tell a trial's dot from a bar and read the interval an error bar
//! spans, not only see it.

use plotters::style::RGBColor;

use super::charts::Px;

/// `s` made safe inside a double-quoted attribute value.
pub(crate) fn attr(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// `#RRGGBB`, as plotters writes colours, so the page's colours read the same
/// whichever drew them.
pub(crate) fn hex(c: RGBColor) -> String {
    format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2)
}

/// `svg` with `elements` added just before its closing tag: drawn after, so over,
/// plotters' own.
pub(crate) fn with_elements(svg: &str, elements: &[String]) -> String {
    match svg.rfind("</svg>") {
        Some(end) if !elements.is_empty() => {
            format!("{}{}\n{}", &svg[..end], elements.join("\n"), &svg[end..])
        }
        _ => svg.to_string(),
    }
}

/// A straight line in SVG pixels: (start, end).
pub(crate) type Segment = ((i32, i32), (i32, i32));

/// Diagonal hatch lines, lower left to upper right, `gap` pixels apart along x,
/// clipped to `rect`: (start, end) of each, both on the rectangle's edge.
pub(crate) fn hatch_segments(rect: Px, gap: i32) -> Vec<Segment> {
    let gap = gap.max(2);
    let mut out = Vec::new();
    // A line x + y = c (pixel y grows downwards) crosses the rectangle for c strictly
    // between the sums at its upper-left and lower-right corners.
    let mut c = rect.l + rect.t + gap;
    while c < rect.r + rect.b {
        let x0 = rect.l.max(c - rect.b);
        let x1 = rect.r.min(c - rect.t);
        if x0 < x1 {
            out.push(((x0, c - x0), (x1, c - x1)));
        }
        c += gap;
    }
    out
}

/// The `d` of a path drawing `segments` as separate strokes.
pub(crate) fn segments_d(segments: &[Segment]) -> String {
    segments
        .iter()
        .map(|((x0, y0), (x1, y1))| format!("M{x0} {y0}L{x1} {y1}"))
        .collect()
}
