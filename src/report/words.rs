//! The words of verdicts: "12.3% faster", "no significant difference (p = 0.41)",
//! "too few trials", the suspect suffix, and the p-value and level expressions the
//! tables and verdict lines share.

use crate::analysis::{Ctx, Outcome, PhaseComparison};

/// The verdict in words; never empty.
pub(crate) fn verdict_of(cmp: &PhaseComparison, ctx: &Ctx, zero_baseline: bool) -> String {
    let pct = cmp.pct.unwrap_or(0.0);
    let p = cmp.p.unwrap_or(1.0);
    let adj = cmp.p_adjusted.unwrap_or(p);
    let verdict = match cmp.outcome {
        Outcome::TooFewTrials => "too few trials".to_string(),
        Outcome::NotComparable if zero_baseline => {
            "not comparable (baseline rate is 0)".to_string()
        }
        Outcome::NotComparable => "not comparable (invalid values)".to_string(),
        Outcome::WithinNoiseBand => format!(
            "no meaningful difference ({pct:+.1}% is within the {}% noise band, {})",
            fmt_num_short(ctx.opts.noise_band * 100.0),
            p_pair(p, adj, true)
        ),
        Outcome::NoSignificantDifference => {
            format!("no significant difference ({})", p_pair(p, adj, true))
        }
        Outcome::Faster | Outcome::Slower => verdict_text(pct, adj, true),
    };
    if cmp.suspect {
        format!(
            "{verdict} (suspect: phase < {} s)",
            ctx.opts.suspect_below_secs
        )
    } else {
        verdict
    }
}

/// "p = 0.03, adjusted p = 0.21", or just "p = 0.03" when the adjustment changed
/// nothing (a family of one).
pub(crate) fn p_pair(p: f64, adjusted: f64, spaced: bool) -> String {
    if p_expr(p, spaced) == p_expr(adjusted, spaced) {
        p_expr(p, spaced)
    } else {
        format!(
            "{}, adjusted {}",
            p_expr(p, spaced),
            p_expr(adjusted, spaced)
        )
    }
}

/// 2, 2.5: a percentage without trailing zeros.
pub(crate) fn fmt_num_short(x: f64) -> String {
    let s = format!("{x:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

pub(crate) fn verdict_text(pct: f64, p: f64, significant: bool) -> String {
    if !significant {
        return format!("no significant difference ({})", p_expr(p, true));
    }
    let direction = if pct > 0.0 { "faster" } else { "slower" };
    let magnitude = pct.abs();
    // Keep a tiny but significant difference from printing as "0.0% faster".
    if magnitude < 0.1 {
        format!("{magnitude:.2}% {direction}")
    } else {
        format!("{magnitude:.1}% {direction}")
    }
}

/// The significance level as a short decimal: 0.05, 0.01, 0.005.
pub(crate) fn fmt_alpha(alpha: f64) -> String {
    let s = format!("{alpha:.6}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// "p = 0.41" (`spaced`) or "p=0.41": two decimals for ordinary p-values, three near
/// and below 0.05 so significance is visible, and a floor below which digits mean
/// nothing.
pub(crate) fn p_expr(p: f64, spaced: bool) -> String {
    let (rel, value) = if p >= 0.1 {
        ("=", format!("{p:.2}"))
    } else if p >= 0.001 {
        ("=", format!("{p:.3}"))
    } else {
        ("<", "0.001".to_string())
    };
    if spaced {
        format!("p {rel} {value}")
    } else {
        format!("p{rel}{value}")
    }
}

pub(crate) fn fmt_level(level: f64) -> String {
    let pct = level * 100.0;
    if (pct - pct.round()).abs() < 1e-9 {
        format!("{pct:.0}")
    } else {
        format!("{pct}")
    }
}
