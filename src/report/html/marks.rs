//! SVG elements the charts write themselves instead of through plotters, whose
//! elements carry no class or data attribute: a reader of the page (and its tests)
//! must be able to tell a trial's dot from a bar and read the interval an error bar
//! spans, not only see it.

use plotters::style::RGBColor;

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

/// A rectangle in SVG pixels, edges included: (left, top, right, bottom).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Px {
    pub(crate) l: i32,
    pub(crate) t: i32,
    pub(crate) r: i32,
    pub(crate) b: i32,
}

impl Px {
    /// The rectangle spanning two corners given in any order.
    pub(crate) fn span((x0, y0): (i32, i32), (x1, y1): (i32, i32)) -> Px {
        Px {
            l: x0.min(x1),
            t: y0.min(y1),
            r: x0.max(x1),
            b: y0.max(y1),
        }
    }

    pub(crate) fn around((x, y): (i32, i32), radius: i32) -> Px {
        Px::span((x - radius, y - radius), (x + radius, y + radius))
    }

    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn overlaps(&self, o: &Px) -> bool {
        self.l <= o.r && o.l <= self.r && self.t <= o.b && o.t <= self.b
    }
}
