//! The daemon's open-file limit. Every debugger, VM connection and handshake in progress
//! holds a descriptor; under the usual soft limit of 1,024 a few hundred slow handshakes use
//! them up, accepts fail, and real debuggers are locked out until the handshake deadline
//! frees some. `serve` raises the soft limit to the hard one at start, as servers do.

use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};

/// The most the soft limit is raised to (Linux's default `fs.nr_open`, above which the
/// kernel refuses it), also when the hard limit is unlimited.
pub const FD_LIMIT_GOAL: u64 = 1 << 20;

/// Raises the soft RLIMIT_NOFILE to the hard limit (at most [`FD_LIMIT_GOAL`]). Returns
/// the soft limit before and after when it moved, None when it was high enough already.
pub fn raise() -> std::io::Result<Option<(u64, u64)>> {
    let lim = getrlimit(Resource::Nofile);
    let Some(current) = lim.current else { return Ok(None) };
    let goal = lim.maximum.map_or(FD_LIMIT_GOAL, |hard| hard.min(FD_LIMIT_GOAL));
    if current >= goal {
        return Ok(None);
    }
    setrlimit(Resource::Nofile, Rlimit { current: Some(goal), maximum: lim.maximum })?;
    Ok(Some((current, goal)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_soft_limit_ends_at_the_hard_one_or_the_goal() {
        let _ = raise().unwrap();
        let lim = getrlimit(Resource::Nofile);
        let goal = lim.maximum.map_or(FD_LIMIT_GOAL, |hard| hard.min(FD_LIMIT_GOAL));
        assert!(lim.current.is_none_or(|c| c >= goal), "{lim:?}");
        assert_eq!(raise().unwrap(), None, "a second call has nothing to do");
    }
}
