//! A fixed-size latency histogram: log-linear buckets over microseconds, so recording is a
//! few instructions and an increment, and memory never grows with the number of samples.
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
#[derive(Clone, PartialEq, Eq)]
pub struct LatencyHistogram {
    counts: [u32; BUCKETS],
    count: u64,
    sum_us: u64,
    max_us: u64,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        LatencyHistogram { counts: [0; BUCKETS], count: 0, sum_us: 0, max_us: 0 }
    }
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
    pub fn record(&mut self, us: u64) {
        let c = &mut self.counts[index(us)];
        *c = c.saturating_add(1);
        self.count += 1;
        self.sum_us = self.sum_us.saturating_add(us);
        self.max_us = self.max_us.max(us);
    }

    /// Adds every sample of `other`.
    pub fn merge(&mut self, other: &LatencyHistogram) {
        for (a, b) in self.counts.iter_mut().zip(other.counts.iter()) {
            *a = a.saturating_add(*b);
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
        for (i, &c) in self.counts.iter().enumerate() {
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
}
