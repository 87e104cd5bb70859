//! Cutting an input into the reads a socket might deliver: the sizes come from one seed
//! byte, so the fuzzer explores splits as it explores bytes.

/// Splits `data` into consecutive pieces whose sizes follow `seed`: the low two bits pick
/// the largest piece (1, 7, 64 or 4096 bytes), the rest seed a small generator for the
/// sizes in between. Every byte lands in exactly one piece, in order.
pub fn pieces(seed: u8, data: &[u8]) -> impl Iterator<Item = &[u8]> {
    let max = [1usize, 7, 64, 4096][usize::from(seed & 3)];
    let mut state = u32::from(seed) | 0x9E37_7900;
    let mut rest = data;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        // xorshift32: cheap and deterministic.
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        let n = (state as usize % max + 1).min(rest.len());
        let (piece, tail) = rest.split_at(n);
        rest = tail;
        Some(piece)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_cover_the_input_in_order() {
        let data: Vec<u8> = (0..=255).collect();
        for seed in 0..=255u8 {
            let got: Vec<&[u8]> = pieces(seed, &data).collect();
            assert_eq!(got.concat(), data, "seed {seed}");
            let max = [1usize, 7, 64, 4096][usize::from(seed & 3)];
            assert!(got.iter().all(|p| !p.is_empty() && p.len() <= max), "seed {seed}");
        }
        assert_eq!(pieces(0, &[]).count(), 0);
    }
}
