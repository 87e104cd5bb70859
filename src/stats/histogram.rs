//! A bounded latency histogram: log-linear buckets over microseconds, so recording is a
//! few instructions and an increment, and memory never grows with the number of samples.
//! Only the span of buckets between the lowest and the highest value seen is allocated (one
//! kind of request's latencies cover a few powers of two: some 20 to 40 counters rather than
//! all [`BUCKETS`]), since a daemon keeps one histogram per debugger and command on every VM.
//!
//! Below [`SUB_BUCKETS`] µs every value has its own bucket; above, each power of two is cut
//! into [`SUB_BUCKETS`] equal parts, so a bucket is never wider than 1/8 of its lower bound
//! (percentiles are within 12.5 % of the truth, reported as the bucket's upper bound and
//! never above the exact maximum). Values from 2^32 µs (71 minutes) on share the last bucket.

/// log2 of the sub-buckets per power of two.
const SUB_BITS: u32 = 3;
/// Sub-buckets per power of two.
pub const SUB_BUCKETS: usize = 1 << SUB_BITS;
/// Powers of two with buckets of their own: values up to 2^32 - 1 µs.
const TOP_EXP: u32 = 32;
/// Number of buckets: the exact ones below SUB_BUCKETS, then SUB_BUCKETS per power of two.
pub const BUCKETS: usize = (TOP_EXP - SUB_BITS + 1) as usize * SUB_BUCKETS;

/// Reply latencies of one kind of request, in microseconds.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct LatencyHistogram {
    /// The bucket of `counts[0]`.
    lo: usize,
    /// Buckets `lo..lo + counts.len()`: the first and the last are never 0.
    counts: Vec<u32>,
    count: u64,
    sum_us: u64,
    max_us: u64,
}

impl std::fmt::Debug for LatencyHistogram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LatencyHistogram")
            .field("count", &self.count)
            .field("sum_us", &self.sum_us)
            .field("max_us", &self.max_us)
            .finish_non_exhaustive()
    }
}

/// The bucket of a value in µs.
fn index(us: u64) -> usize {
    if us < SUB_BUCKETS as u64 {
        return us as usize;
    }
    let us = us.min(u64::from(u32::MAX));
    let exp = 63 - us.leading_zeros(); // >= SUB_BITS
    let top = (us >> (exp - SUB_BITS)) as usize; // SUB_BUCKETS..2*SUB_BUCKETS
    (exp - SUB_BITS + 1) as usize * SUB_BUCKETS + top - SUB_BUCKETS
}

/// The largest value (µs) that falls in bucket `i`.
fn upper_bound(i: usize) -> u64 {
    if i < SUB_BUCKETS {
        return i as u64;
    }
    let exp = (i / SUB_BUCKETS) as u32 + SUB_BITS - 1;
    let top = (i % SUB_BUCKETS + SUB_BUCKETS) as u64;
    ((top + 1) << (exp - SUB_BITS)) - 1
}

impl LatencyHistogram {
    /// The counter of bucket `i`, the span grown to hold it.
    fn slot(&mut self, i: usize) -> &mut u32 {
        if self.counts.is_empty() {
            self.lo = i;
            self.counts.push(0);
        } else if i < self.lo {
            self.counts.splice(0..0, std::iter::repeat_n(0, self.lo - i));
            self.lo = i;
        } else if i >= self.lo + self.counts.len() {
            self.counts.resize(i - self.lo + 1, 0);
        }
        &mut self.counts[i - self.lo]
    }

    pub fn record(&mut self, us: u64) {
        let c = self.slot(index(us));
        *c = c.saturating_add(1);
        self.count += 1;
        self.sum_us = self.sum_us.saturating_add(us);
        self.max_us = self.max_us.max(us);
    }

    /// Adds every sample of `other`.
    pub fn merge(&mut self, other: &LatencyHistogram) {
        for (k, &b) in other.counts.iter().enumerate().filter(|(_, b)| **b > 0) {
            let a = self.slot(other.lo + k);
            *a = a.saturating_add(b);
        }
        self.count += other.count;
        self.sum_us = self.sum_us.saturating_add(other.sum_us);
        self.max_us = self.max_us.max(other.max_us);
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    /// Sum of every sample: the time spent waiting on this kind of request.
    pub fn sum_us(&self) -> u64 {
        self.sum_us
    }

    pub fn max_us(&self) -> u64 {
        self.max_us
    }

    /// The value at or below which a fraction `q` (0..=1) of the samples lie: the upper bound
    /// of the bucket holding that rank, capped at the exact maximum. 0 when empty.
    pub fn percentile(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.count as f64).ceil() as u64).max(1);
        let mut seen = 0u64;
        for (k, &c) in self.counts.iter().enumerate() {
            let i = self.lo + k;
            seen += u64::from(c);
            if seen >= rank {
                // The last bucket is open-ended: only the maximum bounds it.
                return if i == BUCKETS - 1 { self.max_us } else { upper_bound(i).min(self.max_us) };
            }
        }
        self.max_us
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_contiguous_and_tight() {
        assert_eq!(BUCKETS, 240);
        let mut last = None;
        for i in 0..BUCKETS {
            let hi = upper_bound(i);
            let lo = last.map_or(0, |l: u64| l + 1);
            assert_eq!(index(lo), i, "lower bound of bucket {i}");
            assert_eq!(index(hi), i, "upper bound of bucket {i}");
            // Width at most 1/8 of the lower bound above the exact range.
            if i >= SUB_BUCKETS {
                assert!((hi - lo + 1) * 8 <= lo, "bucket {i}: {lo}..={hi}");
            }
            last = Some(hi);
        }
        assert_eq!(last, Some(u64::from(u32::MAX)));
        assert_eq!(index(u64::MAX), BUCKETS - 1, "huge values share the last bucket");
    }

    #[test]
    fn percentiles_of_known_samples() {
        let mut h = LatencyHistogram::default();
        assert_eq!((h.percentile(0.5), h.max_us(), h.count()), (0, 0, 0));
        for us in 1..=1000 {
            h.record(us);
        }
        assert_eq!(h.count(), 1000);
        assert_eq!(h.sum_us(), 500_500);
        assert_eq!(h.max_us(), 1000);
        for (q, exact) in [(0.5, 500u64), (0.9, 900), (0.99, 990)] {
            let got = h.percentile(q);
            assert!(got >= exact && got <= exact + exact / 8, "p{q}: {got} vs {exact}");
        }
        assert_eq!(h.percentile(1.0), 1000, "capped at the exact maximum");
        assert_eq!(h.percentile(0.0), 1);
    }

    #[test]
    fn small_values_are_exact_and_merge_adds() {
        let mut a = LatencyHistogram::default();
        let mut b = LatencyHistogram::default();
        for _ in 0..3 {
            a.record(2);
        }
        b.record(7);
        b.record(10_000_000_000); // hours: the last bucket, max stays exact
        a.merge(&b);
        assert_eq!(a.count(), 5);
        assert_eq!(a.percentile(0.5), 2);
        assert_eq!(a.percentile(0.8), 7);
        assert_eq!(a.max_us(), 10_000_000_000);
        assert_eq!(a.percentile(1.0), 10_000_000_000);
    }

    #[test]
    fn only_the_span_used_is_allocated() {
        let mut h = LatencyHistogram::default();
        for us in [90, 100, 120, 300, 95] {
            h.record(us);
        }
        assert_eq!(h.counts.len(), index(300) - index(90) + 1);
        assert!(h.counts.len() < 20, "{} counters for 90..300 µs", h.counts.len());
        h.record(3);
        assert_eq!((h.lo, h.counts.len()), (3, index(300) - 3 + 1));
        assert_eq!(h.counts.first(), Some(&1));
    }

    proptest::proptest! {
        /// Recording into two histograms and merging them equals recording into one, in any
        /// order; percentiles match a sorted copy within a bucket.
        #[test]
        fn merge_equals_recording_all(a in proptest::collection::vec(0u64..20_000_000, 0..200),
                                      b in proptest::collection::vec(0u64..20_000_000, 0..200)) {
            let (mut ha, mut hb, mut all) = (LatencyHistogram::default(), LatencyHistogram::default(), LatencyHistogram::default());
            a.iter().for_each(|&v| ha.record(v));
            b.iter().for_each(|&v| hb.record(v));
            b.iter().chain(a.iter()).for_each(|&v| all.record(v));
            ha.merge(&hb);
            proptest::prop_assert_eq!(&ha, &all);
            let mut sorted: Vec<u64> = a.iter().chain(b.iter()).copied().collect();
            sorted.sort_unstable();
            if let Some(&exact) = sorted.get(sorted.len().saturating_sub(1) / 2) {
                let got = all.percentile(0.5);
                proptest::prop_assert!(got >= exact && got <= exact + exact / 8 + 1, "p50 {} vs {}", got, exact);
            }
        }
    }
}
