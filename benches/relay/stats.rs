//! Small statistics for the report: medians, percentiles, paired ratios, and the figure
//! formatting shared by every row.

/// Median of the finite values (mean of the middle two for an even count).
pub fn median(values: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    Some(if v.len() % 2 == 1 { v[m] } else { (v[m - 1] + v[m]) / 2.0 })
}

pub fn max(values: &[f64]) -> Option<f64> {
    values.iter().copied().filter(|x| x.is_finite()).max_by(f64::total_cmp)
}

/// The `p`-th percentile (0..=100, nearest rank) of unsorted samples.
pub fn percentile(samples: &mut [u32], p: f64) -> Option<u32> {
    if samples.is_empty() {
        return None;
    }
    samples.sort_unstable();
    let rank = ((p / 100.0) * samples.len() as f64).ceil() as usize;
    samples.get(rank.clamp(1, samples.len()) - 1).copied()
}

/// Ratios a/b for the pairs where both exist (one pair per repetition).
pub fn paired(a: &[Option<f64>], b: &[Option<f64>]) -> Vec<f64> {
    a.iter()
        .zip(b)
        .filter_map(|(x, y)| match (x, y) {
            (Some(x), Some(y)) if *y > 0.0 => Some(x / y),
            _ => None,
        })
        .collect()
}

/// Per repetition, the better of two values (`lower`: smaller is better).
pub fn best_of(a: &[Option<f64>], b: &[Option<f64>], lower: bool) -> Vec<Option<f64>> {
    a.iter()
        .zip(b)
        .map(|(x, y)| match (x, y) {
            (Some(x), Some(y)) => Some(if lower { x.min(*y) } else { x.max(*y) }),
            (Some(v), None) | (None, Some(v)) => Some(*v),
            (None, None) => None,
        })
        .collect()
}

/// A figure with about three significant digits.
pub fn fmt(v: f64) -> String {
    let a = v.abs();
    if !v.is_finite() {
        "-".into()
    } else if a >= 100.0 {
        format!("{:.0}", v)
    } else if a >= 10.0 {
        format!("{:.1}", v)
    } else if a >= 1.0 {
        format!("{:.2}", v)
    } else {
        format!("{:.3}", v)
    }
}

pub fn fmt_opt(v: Option<f64>) -> String {
    v.map(fmt).unwrap_or_else(|| "-".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians() {
        let cases: [(&[f64], Option<f64>); 5] = [
            (&[], None),
            (&[3.0], Some(3.0)),
            (&[3.0, 1.0, 2.0], Some(2.0)),
            (&[4.0, 1.0, 2.0, 3.0], Some(2.5)),
            (&[f64::NAN, 5.0], Some(5.0)),
        ];
        for (v, want) in cases {
            assert_eq!(median(v), want, "{v:?}");
        }
        assert_eq!(max(&[1.0, 9.0, 3.0]), Some(9.0));
    }

    #[test]
    fn percentiles() {
        let mut v: Vec<u32> = (1..=100).rev().collect();
        assert_eq!(percentile(&mut v, 99.0), Some(99));
        assert_eq!(percentile(&mut v, 50.0), Some(50));
        assert_eq!(percentile(&mut v, 100.0), Some(100));
        assert_eq!(percentile(&mut v, 0.0), Some(1));
        assert_eq!(percentile(&mut [], 99.0), None);
    }

    #[test]
    fn pairing_skips_missing_runs() {
        let a = [Some(2.0), None, Some(3.0)];
        let b = [Some(1.0), Some(1.0), Some(0.0)];
        assert_eq!(paired(&a, &b), vec![2.0]);
        let best = best_of(&[Some(1.0), None, Some(5.0)], &[Some(2.0), Some(4.0), None], true);
        assert_eq!(best, vec![Some(1.0), Some(4.0), Some(5.0)]);
        assert_eq!(best_of(&[Some(1.0)], &[Some(2.0)], false), vec![Some(2.0)]);
    }

    #[test]
    fn formatting() {
        let cases = [(123456.0, "123456"), (1234.4, "1234"), (12.34, "12.3"), (1.234, "1.23"), (0.1234, "0.123")];
        for (v, want) in cases {
            assert_eq!(fmt(v), want);
        }
        assert_eq!(fmt_opt(None), "-");
    }
}
