//! Command line of the benchmark, the sizes of the full and smoke runs, and where the proxy
//! binary comes from.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Result};

use crate::jvm_suite::JvmParams;

pub const USAGE: &str = "usage: cargo bench --bench relay -- [--smoke] [--reps N] [--vms N] [--only jvm,bulk,scale,ddm,startup,decode,stats,owner,where,soak,soak-far,remote,far,far-mut,thin,containers,exec,docker] [--soak-minutes N] [--soak-far-minutes N]
  --smoke   tiny N, one repetition: checks every path works and the table prints (CI);
            the default when not started by `cargo bench` (e.g. by `cargo test --benches`)
  --full    the full run (the default under `cargo bench`)
  --reps N  measured repetitions (default 9; one more warm-up repetition is discarded)
  --vms N   fake VMs in the scale test (default 1000; 20 in smoke mode)
  --only    run only these sections (where: system calls and context switches per round
            trip under strace, not part of the default run; soak: load and churn for
            minutes, part of the default run only in smoke mode, a few seconds)
  --soak-minutes N  how long the soak section runs (default 10; 0.1 in smoke mode)
  --soak-far-minutes N  how long the far-side soak runs (default 30; 3 in smoke mode):
            an IDE stepping through serve --ssh --far always on a test host behind 25 ms
            each way while the link is cut every minute, a second debugger comes and goes
            and the far side is killed once, and a second IDE stepping a JVM in a Podman
            container through serve --exec while the exec is killed every few minutes; each
            stop checked against its app's log; part of the default run only in smoke mode
            (as remote)
  --far-links L  the far section's links: veth, one-way delays in ms and `thin` (10 Mbit/s,
            25 ms each way; default veth,0,10,25,thin; smoke veth,10), e.g. `--far-links veth`
            for the target's row alone
  --far-no-idle  the far section without its idle windows
  --far-ide-view  the far section's IDE as IntelliJ attaches and shows a stop: the class
            list at attach; at each stop also every thread's name, status, suspend count and
            frame count (the threads view), and a toString() of `this` invoked
  --far-jdb  the far section also types at the real jdb through the same paths and links
            (attach, first stop, steps with `where` and `locals`)
            remote: JVMs on ssh test hosts (network namespaces with sshd; needs root,
            iproute2, openssh-server; without them a failure, or skipped with
            JDWPMUX_TEST_ALLOW_SKIP=1)
            far: an IDE stepping through ssh -L, serve --ssh --far never and --far
            always, with and without added link delay; the far side's idle cost (as remote)
            far-mut: sequential mutations no near answer serves (UTF8Test's: CreateString,
            a static String set, read back, its value read, compared) through the same
            three paths on the veth: ms per string, µs and CPU per command (as remote)
            thin: big answers (a 1 MB class list, a 1 MiB string) at 10 Mbit/s and 25 ms
            each way: ssh -L, the far side uncompressed and compressed (as remote)
            containers: JVMs in network namespaces of their own (50; 3 in smoke mode) beside
            one here: connect cost, round trips, time to be listed, idle cost (needs root)
            exec: an IDE stepping through a Podman container: serve --exec 'podman exec -i
            C', a plain pipe through the exec, root entering it; the far side's idle cost
            there (needs root, podman, runc, socat, busybox)
            docker: an IDE stepping through a JVM in a root Docker container, as a
            docker group member (serve --far-copy, through docker exec) and as root
            (entering it), beside a JVM here; from serve's start to the JVMs of 20
            containers (3 in smoke mode) listed ready, as each (needs root, docker.io)
env: JDWPMUX_BIN (proxy binary), JDWPMUX_ARGS (extra serve arguments)";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    Jvm,
    Bulk,
    Scale,
    Ddm,
    Startup,
    /// System calls and context switches per round trip (not in the default run).
    Where,
    Decode,
    Stats,
    /// What the debugger ports' owner check costs per accept.
    Owner,
    /// Load and churn for minutes (in the default run only in smoke mode).
    Soak,
    /// A debug session through the far side over a link that is cut, for minutes (in the
    /// default run only in smoke mode).
    SoakFar,
    /// JVMs on other hosts through ssh (test hosts: network namespaces with sshd).
    Remote,
    /// An IDE stepping through jdwpmux on the far side, `ssh -L` and today's forward.
    Far,
    /// Sequential mutations no near answer serves (UTF8Test's shape) through the far
    /// section's three paths.
    FarMut,
    /// Big answers over a thin link (10 Mbit/s): `ssh -L`, the far side with and without
    /// compression.
    Thin,
    /// JVMs reached inside network namespaces of their own (a container's way in).
    Containers,
    /// An IDE stepping through a Podman container's exec (`serve --exec`), a plain pipe
    /// through the exec and root entering it; the far side's idle cost there.
    Exec,
    /// An IDE stepping through a root Docker container's JVM as a `docker` group member
    /// (through `docker exec`) and as root (entering it), beside a JVM here; the time to list
    /// many containers' JVMs, as each.
    Docker,
}

impl Section {
    pub fn name(self) -> &'static str {
        match self {
            Section::Jvm => "jvm",
            Section::Bulk => "bulk",
            Section::Scale => "scale",
            Section::Ddm => "ddm",
            Section::Startup => "startup",
            Section::Where => "where",
            Section::Decode => "decode",
            Section::Stats => "stats",
            Section::Owner => "owner",
            Section::Soak => "soak",
            Section::SoakFar => "soak-far",
            Section::Remote => "remote",
            Section::Far => "far",
            Section::FarMut => "far-mut",
            Section::Thin => "thin",
            Section::Containers => "containers",
            Section::Exec => "exec",
            Section::Docker => "docker",
        }
    }

    fn parse(s: &str) -> Option<Section> {
        [Section::Jvm, Section::Bulk, Section::Scale, Section::Ddm, Section::Startup, Section::Decode, Section::Stats, Section::Owner, Section::Where, Section::Soak, Section::SoakFar, Section::Remote, Section::Far, Section::FarMut, Section::Thin, Section::Containers, Section::Exec, Section::Docker]
            .into_iter()
            .find(|x| x.name() == s)
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Opts {
    pub smoke: bool,
    pub reps: Option<usize>,
    pub vms: Option<usize>,
    pub only: Option<Vec<Section>>,
    pub soak_minutes: Option<f64>,
    pub soak_far_minutes: Option<f64>,
    /// The far section's links (the veth first).
    pub far_links: Option<Vec<crate::far::Link>>,
    /// The far section without its idle windows.
    pub far_no_idle: bool,
    /// The far section's IDE also asks the class list at attach, and shows every thread and a
    /// toString() of `this` at each stop.
    pub far_ide_view: bool,
    /// The far section also drives jdb.
    pub far_jdb: bool,
}

impl Opts {
    /// Parses our flags. `cargo bench` passes `--bench`: only then is the full run the
    /// default, so `cargo test --benches` (no `--bench`) runs the quick smoke mode instead of
    /// ten minutes of benchmark. Anything else unknown (a cargo filter) is ignored.
    pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Opts> {
        let mut o = Opts::default();
        let (mut bench, mut full, mut smoke) = (false, false, false);
        let mut it = args.into_iter();
        while let Some(a) = it.next() {
            match a.as_str() {
                "--bench" => bench = true,
                "--full" => full = true,
                "--smoke" => smoke = true,
                "--reps" => {
                    let n = it.next().and_then(|v| v.parse().ok()).filter(|n| *n > 0);
                    let Some(n) = n else { bail!("--reps needs a positive number") };
                    o.reps = Some(n);
                }
                "--vms" => {
                    let n = it.next().and_then(|v| v.parse().ok()).filter(|n| *n > 0);
                    let Some(n) = n else { bail!("--vms needs a positive number") };
                    o.vms = Some(n);
                }
                "--only" => {
                    let v = it.next().unwrap_or_default();
                    let s: Option<Vec<Section>> = v.split(',').map(Section::parse).collect();
                    let Some(s) = s else { bail!("--only: unknown section in {v:?}") };
                    o.only = Some(s);
                }
                "--soak-minutes" => {
                    let n = it.next().and_then(|v| v.parse::<f64>().ok()).filter(|n| *n > 0.0 && n.is_finite());
                    let Some(n) = n else { bail!("--soak-minutes needs a positive number") };
                    o.soak_minutes = Some(n);
                }
                "--soak-far-minutes" => {
                    let n = it.next().and_then(|v| v.parse::<f64>().ok()).filter(|n| *n > 0.0 && n.is_finite());
                    let Some(n) = n else { bail!("--soak-far-minutes needs a positive number") };
                    o.soak_far_minutes = Some(n);
                }
                "--far-links" => {
                    let v = it.next().unwrap_or_default();
                    use crate::far::Link;
                    let links: Option<Vec<Link>> = v
                        .split(',')
                        .map(|l| match l {
                            "veth" => Some(Link::Veth),
                            "thin" => Some(Link::THIN),
                            ms => ms.parse::<u64>().ok().map(|ms| Link::Delay(Duration::from_millis(ms))),
                        })
                        .collect();
                    // The step rows take the first link as the veth the others are compared with.
                    match links {
                        Some(l) if l.first() == Some(&Link::Veth) => o.far_links = Some(l),
                        _ => bail!("--far-links: veth first, then delays in ms or `thin`, e.g. veth,10,thin"),
                    }
                }
                "--far-no-idle" => o.far_no_idle = true,
                "--far-ide-view" => o.far_ide_view = true,
                "--far-jdb" => o.far_jdb = true,
                "-h" | "--help" => bail!("help"),
                _ => {}
            }
        }
        if full && smoke {
            bail!("--full and --smoke exclude each other");
        }
        o.smoke = smoke || !(bench || full);
        Ok(o)
    }

    /// Whether a section runs: those named by --only, else every section of the default run
    /// (the soak only in smoke mode: ten minutes are asked for by name).
    pub fn wants(&self, s: Section) -> bool {
        match &self.only {
            Some(o) => o.contains(&s),
            None => s != Section::Where && (!matches!(s, Section::Soak | Section::SoakFar) || self.smoke),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Params {
    pub reps: usize,
    pub warmup_reps: usize,
    pub jvm: JvmParams,
    pub classes: usize,
    pub bulk_size: u32,
    pub scale_vms: usize,
    /// Longest wait for the proxy to go quiet after every VM was probed.
    pub scale_settle: Duration,
    pub scale_window: Duration,
    pub ddm_chunks: u64,
    pub ddm_threads: u16,
    /// A debugger round trip slower than this during the DDM flood is a stall.
    pub stall_limit: Duration,
    pub startup_runs: usize,
    /// Round trips counted per subject in the `where` section.
    pub where_n: usize,
    /// Size of the capture `jdwpmux decode` reads.
    pub decode_bytes: u64,
    /// Runs of each decode mode (the median is reported).
    pub decode_runs: usize,
    /// Round trips per run of the counting-cost measurement.
    pub stats_round_trips: usize,
    /// Established loopback connections held while the owner lookups are timed (two
    /// sockets each), and the lookups timed with sock_diag and with /proc.
    pub owner_pairs: usize,
    pub owner_diag_n: usize,
    pub owner_proc_n: usize,
    pub soak: crate::soak::SoakParams,
    pub soak_far: crate::soak_far::SoakFarParams,
    pub remote: crate::remote::RemoteParams,
    pub far: crate::far::FarParams,
    pub far_mut: crate::far_mut::MutParams,
    pub thin: crate::thin::ThinParams,
}

impl Params {
    pub fn new(o: &Opts) -> Params {
        let mut p = Params::sized(o);
        if let Some(links) = &o.far_links {
            p.far.links = links.clone();
        }
        if o.far_no_idle {
            p.far.idle.jvms.clear();
        }
        p.far.step.ide_view = o.far_ide_view;
        if o.far_jdb {
            p.far.jdb_steps = if o.smoke { 2 } else { crate::jdb_far::JDB_STEPS };
        }
        if let Some(r) = o.reps {
            p.far.reps = r;
            p.far_mut.reps = r;
        }
        p
    }

    fn sized(o: &Opts) -> Params {
        let classes = 3000;
        if o.smoke {
            return Params {
                reps: o.reps.unwrap_or(1),
                warmup_reps: 0,
                jvm: JvmParams {
                    warmup: 50,
                    latency_n: 300,
                    pipelined_n: 500,
                    window: 16,
                    all_classes_n: 3,
                    array_n: 2,
                    min_classes: classes,
                    ide_calls: 500,
                    ide_budget: Duration::from_secs(10),
                    jdb_steps: 3,
                },
                classes,
                bulk_size: 4 << 20,
                scale_vms: o.vms.unwrap_or(20),
                scale_settle: Duration::from_secs(5),
                scale_window: Duration::from_secs(2),
                ddm_chunks: 5_000,
                ddm_threads: 8,
                stall_limit: Duration::from_millis(100),
                startup_runs: 3,
                where_n: 500,
                decode_bytes: 8 << 20,
                decode_runs: 1,
                stats_round_trips: 300,
                owner_pairs: 500,
                owner_diag_n: 1_000,
                owner_proc_n: 10,
                soak: crate::soak::SoakParams::new(true, o.soak_minutes),
                soak_far: crate::soak_far::SoakFarParams::new(true, o.soak_far_minutes),
                remote: crate::remote::RemoteParams::new(true),
                far: crate::far::FarParams::new(true),
                far_mut: crate::far_mut::MutParams::new(true),
                thin: crate::thin::ThinParams::new(true),
            };
        }
        Params {
            reps: o.reps.unwrap_or(9),
            warmup_reps: 1,
            jvm: JvmParams {
                warmup: 2_000,
                latency_n: 20_000,
                pipelined_n: 50_000,
                window: 16,
                all_classes_n: 100,
                array_n: 20,
                min_classes: classes,
                ide_calls: 20_000,
                ide_budget: Duration::from_secs(10),
                jdb_steps: crate::jdb_local::STEPS,
            },
            classes,
            bulk_size: 200 << 20,
            scale_vms: o.vms.unwrap_or(1000),
            scale_settle: Duration::from_secs(60),
            scale_window: Duration::from_secs(20),
            ddm_chunks: 500_000,
            ddm_threads: 8,
            stall_limit: Duration::from_millis(100),
            startup_runs: 21,
            where_n: 3_000,
            decode_bytes: 1 << 30,
            decode_runs: 3,
            stats_round_trips: 20_000,
            owner_pairs: 5_000,
            owner_diag_n: 20_000,
            owner_proc_n: 100,
            soak: crate::soak::SoakParams::new(false, o.soak_minutes),
            soak_far: crate::soak_far::SoakFarParams::new(false, o.soak_far_minutes),
            remote: crate::remote::RemoteParams::new(false),
            far: crate::far::FarParams::new(false),
            far_mut: crate::far_mut::MutParams::new(false),
            thin: crate::thin::ThinParams::new(false),
        }
    }
}

/// The proxy binary: $JDWPMUX_BIN, the one cargo built for this bench, or
/// <crate>/target/release/jdwpmux (built with `cargo build --release` when missing).
pub fn locate_proxy() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("JDWPMUX_BIN") {
        let p = PathBuf::from(p);
        if !p.is_file() {
            bail!("JDWPMUX_BIN={} is not a file", p.display());
        }
        return Ok(p);
    }
    if let Some(p) = option_env!("CARGO_BIN_EXE_jdwpmux").map(PathBuf::from).filter(|p| p.is_file()) {
        return Ok(p);
    }
    let root = crate_root();
    let p = root.join("target").join("release").join("jdwpmux");
    if p.is_file() {
        return Ok(p);
    }
    crate::procs::build_proxy(&root)
}

/// The jdwpmux crate: two levels above this bench's source (benches/relay.rs).
fn crate_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    // file!() is relative to the package (benches/relay/params.rs) when cargo builds the
    // bench, absolute when another crate includes the file; join handles both.
    #[allow(clippy::join_absolute_paths)]
    let src = manifest.join(file!());
    src.ancestors().nth(3).filter(|r| r.join("Cargo.toml").is_file()).map(Path::to_path_buf).unwrap_or_else(|| manifest.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(a: &[&str]) -> Result<Opts> {
        Opts::parse(a.iter().map(|s| s.to_string()))
    }

    #[test]
    fn options() {
        assert_eq!(parse(&["--bench"]).unwrap(), Opts::default());
        let modes = [(&["--bench"][..], false), (&[][..], true), (&["--full"][..], false), (&["--bench", "--smoke"][..], true)];
        for (args, smoke) in modes {
            assert_eq!(parse(args).unwrap().smoke, smoke, "{args:?}");
        }
        assert!(parse(&["--full", "--smoke"]).is_err());
        let o = parse(&["--bench", "--far-links", "veth,10", "--far-no-idle"]).unwrap();
        let p = Params::new(&o);
        assert_eq!(p.far.links, vec![crate::far::Link::Veth, crate::far::Link::Delay(Duration::from_millis(10))]);
        assert!(p.far.idle.jvms.is_empty());
        assert_eq!((p.reps, p.far.reps), (9, 3), "the far section's own repetitions");
        assert_eq!(p.far.jdb_steps, 0);
        assert_eq!(Params::new(&parse(&["--bench", "--far-jdb"]).unwrap()).far.jdb_steps, crate::jdb_far::JDB_STEPS);
        assert_eq!(Params::new(&parse(&["--bench", "--reps", "5"]).unwrap()).far.reps, 5);
        assert!(parse(&["--far-links", "10,veth"]).is_err());
        assert!(parse(&["--far-links", "fast"]).is_err());
        let thin = parse(&["--bench", "--far-links", "veth,25,thin"]).unwrap();
        assert_eq!(thin.far_links, Some(vec![crate::far::Link::Veth, crate::far::Link::Delay(Duration::from_millis(25)), crate::far::Link::THIN]));
        let o = parse(&["--bench", "--smoke", "--reps", "3", "--vms", "7", "--only", "jvm,ddm"]).unwrap();
        assert!(o.smoke && o.reps == Some(3) && o.vms == Some(7));
        assert_eq!(Params::new(&o).scale_vms, 7);
        assert!(o.wants(Section::Jvm) && o.wants(Section::Ddm) && !o.wants(Section::Scale));
        assert!(parse(&["--reps", "0"]).is_err());
        let soak = parse(&["--bench", "--only", "soak", "--soak-minutes", "60"]).unwrap();
        assert!(soak.wants(Section::Soak) && !soak.wants(Section::Jvm));
        assert_eq!(Params::new(&soak).soak.duration, Duration::from_secs(3600));
        assert!(!parse(&["--bench"]).unwrap().wants(Section::Soak), "not in the full default run");
        assert!(parse(&["--smoke"]).unwrap().wants(Section::Soak), "but in the smoke run");
        assert!(parse(&["--soak-minutes", "0"]).is_err());
        let far_soak = parse(&["--bench", "--only", "soak-far", "--soak-far-minutes", "60"]).unwrap();
        assert!(far_soak.wants(Section::SoakFar) && !far_soak.wants(Section::Soak));
        assert_eq!(Params::new(&far_soak).soak_far.plan.duration, Duration::from_secs(3600));
        assert!(!parse(&["--bench"]).unwrap().wants(Section::SoakFar), "not in the full default run");
        assert!(parse(&["--smoke"]).unwrap().wants(Section::SoakFar), "but in the smoke run");
        assert_eq!(Params::new(&parse(&["--smoke"]).unwrap()).soak_far.plan.duration, Duration::from_secs(180));
        assert!(parse(&["--soak-far-minutes", "-1"]).is_err());
        assert!(parse(&["--only", "jvm,nope"]).is_err());
        let remote = parse(&["--bench", "--only", "remote"]).unwrap();
        assert!(remote.wants(Section::Remote) && !remote.wants(Section::Jvm));
        assert!(parse(&["--bench"]).unwrap().wants(Section::Remote) && parse(&["--smoke"]).unwrap().wants(Section::Remote), "in both default runs");
        let far = parse(&["--bench", "--only", "far"]).unwrap();
        assert!(far.wants(Section::Far) && !far.wants(Section::Remote));
        assert!(parse(&["--bench"]).unwrap().wants(Section::Far) && parse(&["--smoke"]).unwrap().wants(Section::Far), "in both default runs");
        let far_mut = parse(&["--bench", "--only", "far-mut", "--reps", "2"]).unwrap();
        assert!(far_mut.wants(Section::FarMut) && !far_mut.wants(Section::Far));
        assert_eq!(Params::new(&far_mut).far_mut.reps, 2);
        assert!(parse(&["--bench"]).unwrap().wants(Section::FarMut) && parse(&["--smoke"]).unwrap().wants(Section::FarMut), "in both default runs");
        let docker = parse(&["--bench", "--only", "docker"]).unwrap();
        assert!(docker.wants(Section::Docker) && !docker.wants(Section::Exec));
        assert!(parse(&["--smoke"]).unwrap().wants(Section::Docker), "in the smoke run CI runs");
    }

    #[test]
    fn sizes_follow_the_issue() {
        let full = Params::new(&Opts::default());
        assert_eq!((full.jvm.latency_n, full.jvm.pipelined_n, full.jvm.window), (20_000, 50_000, 16));
        assert!(full.reps >= 9 && full.warmup_reps >= 1);
        assert_eq!((full.bulk_size, full.scale_vms), (200 << 20, 1000));
        let smoke = Params::new(&Opts { smoke: true, ..Opts::default() });
        assert_eq!((smoke.reps, smoke.bulk_size, smoke.scale_vms), (1, 4 << 20, 20));
        assert!(smoke.jvm.latency_n <= 1000);
        assert_eq!((full.soak.vms, full.soak.debuggers, full.soak.duration), (500, 50, Duration::from_secs(600)));
        assert!(smoke.soak.duration <= Duration::from_secs(10));
    }

    #[test]
    fn crate_root_holds_a_manifest() {
        assert!(crate_root().join("Cargo.toml").is_file());
    }
}
