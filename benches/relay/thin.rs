//! The `thin` section: big answers over a thin link (a VPN's 10 Mbit/s with 25 ms each way,
//! `rate_link`, in front of a test host's sshd). A HotSpot JVM on the host holds 10,000
//! classes with long names (an AllClassesWithGeneric of about 1 MB) and a 1 MiB string of
//! JSON lines (`testkit/src/jdi/BigAnswers.java`); a raw JDWP client asks for both, each
//! on a fresh connection of a fresh path, through `ssh -L`, through jdwpmux on the far side
//! with compression off (`JDWPMUX_SQUEEZE=off` in `serve`'s environment: it speaks protocol 4,
//! as a jdwpmux from before compression) and on (protocol 5, `remote::protocol::squeeze`). The paths alternate
//! within each repetition. Figures: the seconds from the command to its whole reply, and
//! the bytes the relay carried from the host meanwhile (ssh's, encrypted); the answers must
//! be the same on every path (classes without their ids, which the agent numbers per
//! connection; the string byte for byte).

use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::far_paths::{self as fp, FarKind, FarWrapper};
use crate::jdwp_ops::{id_sizes, IdSizes, CLASSES_BY_SIGNATURE, FIELDS, REF_GET_VALUES, STRING_VALUE};
use crate::jvm::Debuggee;
use crate::proxy::ProxyBin;
use testkit::rate_link::RateLink;
use crate::remote::{Fail, VM_PORT};
use crate::remote_paths::Target;
use crate::stats::{fmt, fmt_opt, median};
use crate::table::{Row, Table};
use crate::test_hosts::BenchHost;
use testkit::blocking_client::BlockingClient;
use testkit::reader::{put_id, put_jdwp_string as put_str, Reader};

const BIG_ANSWERS_JAVA: &str = include_str!("../../testkit/src/jdi/BigAnswers.java");
/// VirtualMachine.AllClassesWithGeneric.
pub const ALL_CLASSES_GENERIC: (u8, u8) = (1, 20);
/// JDWP tag of a string object.
const TAG_STRING: u8 = b's';
/// The target: the class list at 10 Mbit/s within this, compressed.
pub const ALL_CLASSES_TARGET_S: f64 = 0.3;

#[derive(Debug, Clone)]
pub struct ThinParams {
    pub reps: usize,
    pub classes: usize,
    pub string_len: usize,
    pub bits_per_s: u64,
    pub delay: Duration,
}

impl ThinParams {
    pub fn new(smoke: bool) -> ThinParams {
        let link = (10_000_000, Duration::from_millis(25));
        if smoke {
            return ThinParams { reps: 1, classes: 1_000, string_len: 64 << 10, bits_per_s: link.0, delay: link.1 };
        }
        ThinParams { reps: 3, classes: 10_000, string_len: 1 << 20, bits_per_s: link.0, delay: link.1 }
    }
}

/// The three ways, in table order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThinPath {
    SshL,
    Raw,
    Squeezed,
}

pub const THIN_PATHS: [ThinPath; 3] = [ThinPath::SshL, ThinPath::Raw, ThinPath::Squeezed];

impl ThinPath {
    pub fn label(self) -> &'static str {
        match self {
            ThinPath::SshL => "ssh -L",
            ThinPath::Raw => "jdwpmux --far always, uncompressed",
            ThinPath::Squeezed => "jdwpmux --far always, compressed",
        }
    }

    /// Forward in even repetitions, backward in odd ones.
    pub fn order(rep: usize) -> [ThinPath; 3] {
        let mut p = THIN_PATHS;
        if rep % 2 == 1 {
            p.reverse();
        }
        p
    }
}

/// One path's answers and what they cost.
#[derive(Debug, Clone, Default)]
pub struct Answers {
    pub classes_s: f64,
    pub string_s: f64,
    /// Bytes the relay carried from the host during each.
    pub classes_link: u64,
    pub string_link: u64,
    /// The replies' JDWP data lengths.
    pub classes_len: usize,
    pub string_len: usize,
    /// The classes without their ids, sorted; the string's bytes.
    pub classes: Vec<(u8, String, String, u32)>,
    pub string: Vec<u8>,
}

pub fn run(bin: &ProxyBin, p: &ThinParams, t: &mut Table, fail: Fail) {
    if !crate::test_hosts::can_run("thin", fail) {
        return;
    }
    if !bin.has_control || !bin.has_list {
        eprintln!("thin: skipped, {} has no --control or no list", bin.path.display());
        return;
    }
    let args = [p.classes.to_string(), p.string_len.to_string()];
    let made = (|| -> Result<_> {
        let keys = crate::test_hosts::keys()?;
        let prog = Debuggee::program("BigAnswers", BIG_ANSWERS_JAVA, &args)?;
        Ok((keys, prog, FarWrapper::new(&bin.path)?))
    })();
    let (keys, prog, wrapper) = match made {
        Ok(m) => m,
        Err(e) => return fail("thin: set-up", format!("{e:#}")),
    };
    eprintln!("thin: {} repetitions; a test host with {} classes and a string of {} bytes ...", p.reps, p.classes, p.string_len);
    let started = (|| -> Result<_> {
        let mut host = BenchHost::start(&keys, "thin")?;
        host.launch(&prog, VM_PORT, false)?;
        host.wait_ready(Duration::from_secs(300))?;
        let link = RateLink::start(SocketAddr::from((host.addr(), 22)), p.bits_per_s, p.delay)?;
        keys.add_host("thinlink", Ipv4Addr::LOCALHOST, "id_ed25519", &format!("  Port {}\n  HostKeyAlias {}\n", link.port(), host.addr()))?;
        Ok((host, link))
    })();
    let (mut host, link) = match started {
        Ok(h) => h,
        Err(e) => return fail("thin: the host", format!("{e:#}")),
    };
    let target = Target { config: keys.ssh_config(), host: "thinlink".into(), port: VM_PORT };
    let mut all: Vec<[Option<Answers>; 3]> = Vec::new();
    for rep in 0..p.reps {
        let mut row: [Option<Answers>; 3] = Default::default();
        for path in ThinPath::order(rep) {
            let Some(jvm) = host.jvms.first_mut() else { return };
            // One far side for both: a new serve's session closes the one before's VM
            // connection (a serve ended by a kill says no goodbye).
            let (kind, env): (FarKind, &[(&str, &str)]) = match path {
                ThinPath::SshL => (FarKind::SshL, &[]),
                ThinPath::Raw => (FarKind::Far, &[(crate::far_paths::SQUEEZE_ENV, "off")]),
                ThinPath::Squeezed => (FarKind::Far, &[]),
            };
            let got = (|| -> Result<Answers> {
                jvm.wait_free(Duration::from_secs(60))?;
                jvm.session_ended();
                let (path, port) = fp::start_env(kind, &target, bin, &wrapper, env)?;
                let asked = ask(port, &link);
                // serve says goodbye: the far side lets the VM go at once.
                if let fp::Path3::Jdwpmux { mut proxy, .. } = path {
                    proxy.stop();
                }
                asked
            })();
            match got {
                Ok(a) => {
                    eprintln!(
                        "thin repetition {rep}, {}: AllClassesWithGeneric {} s ({} KB on the link), string {} s ({} KB)",
                        path.label(),
                        fmt(a.classes_s),
                        a.classes_link / 1000,
                        fmt(a.string_s),
                        a.string_link / 1000
                    );
                    row[path as usize] = Some(a);
                }
                Err(e) => fail(&format!("thin repetition {rep}, {}", path.label()), format!("{e:#}")),
            }
        }
        if let Err(e) = same_answers(&row) {
            fail(&format!("thin repetition {rep}"), format!("{e:#}"));
        }
        all.push(row);
    }
    rows(t, p, &all);
}

/// The answers of every path that gave some are the same.
fn same_answers(row: &[Option<Answers>; 3]) -> Result<()> {
    let got: Vec<(ThinPath, &Answers)> = THIN_PATHS.iter().zip(row).filter_map(|(p, a)| a.as_ref().map(|a| (*p, a))).collect();
    for w in got.windows(2) {
        let ((pa, a), (pb, b)) = (w[0], w[1]);
        if a.classes != b.classes {
            bail!("the classes through {} ({}) differ from those through {} ({})", pa.label(), a.classes.len(), pb.label(), b.classes.len());
        }
        if a.string != b.string {
            bail!("the string through {} ({} bytes) differs from the one through {} ({} bytes)", pa.label(), a.string.len(), pb.label(), b.string.len());
        }
    }
    Ok(())
}

/// Connects to `port`, finds the string, then asks for the class list and the string's value,
/// timing each and counting what the link carried from the host meanwhile.
pub fn ask(port: u16, link: &RateLink) -> Result<Answers> {
    let mut c = BlockingClient::connect(SocketAddr::from((Ipv4Addr::LOCALHOST, port)), Duration::from_secs(30))?;
    let ids = id_sizes(&mut c)?;
    let string = find_string(&mut c, &ids)?;
    let mut a = Answers::default();
    let (_, before) = link.carried();
    let t0 = Instant::now();
    let reply = c.request(ALL_CLASSES_GENERIC.0, ALL_CLASSES_GENERIC.1, &[])?;
    a.classes_s = t0.elapsed().as_secs_f64();
    let (_, after) = link.carried();
    a.classes_link = after - before;
    a.classes_len = reply.len();
    a.classes = classes_of(&reply, &ids)?;
    let mut q = Vec::new();
    put_id(&mut q, string, ids.object);
    let t0 = Instant::now();
    let reply = c.request(STRING_VALUE.0, STRING_VALUE.1, &q)?;
    a.string_s = t0.elapsed().as_secs_f64();
    a.string_link = link.carried().1 - after;
    a.string_len = reply.len();
    let mut r = Reader::new(&reply);
    let n = r.u4()? as usize;
    a.string = r.bytes(n)?.to_vec();
    Ok(a)
}

/// The object id of the string in `BigAnswers.text`.
fn find_string(c: &mut BlockingClient, ids: &IdSizes) -> Result<u64> {
    let mut q = Vec::new();
    put_str(&mut q, "LBigAnswers;");
    let d = c.request(CLASSES_BY_SIGNATURE.0, CLASSES_BY_SIGNATURE.1, &q)?;
    let mut r = Reader::new(&d);
    if r.u4()? == 0 {
        bail!("BigAnswers is not loaded");
    }
    let _tag = r.u1()?;
    let class = r.id(ids.reftype)?;
    let mut q = Vec::new();
    put_id(&mut q, class, ids.reftype);
    let d = c.request(FIELDS.0, FIELDS.1, &q)?;
    let mut r = Reader::new(&d);
    let mut field = None;
    for _ in 0..r.u4()? {
        let id = r.id(ids.field)?;
        let name = r.jdwp_string()?;
        let _sig = r.jdwp_string()?;
        let _mods = r.u4()?;
        if name == "text" {
            field = Some(id);
        }
    }
    let field = field.context("BigAnswers has no field text")?;
    let mut q = Vec::new();
    put_id(&mut q, class, ids.reftype);
    q.extend_from_slice(&1u32.to_be_bytes());
    put_id(&mut q, field, ids.field);
    let d = c.request(REF_GET_VALUES.0, REF_GET_VALUES.1, &q)?;
    let mut r = Reader::new(&d);
    if r.u4()? != 1 || r.u1()? != TAG_STRING {
        bail!("BigAnswers.text is not a string");
    }
    Ok(r.id(ids.object)?)
}

/// The classes of an AllClassesWithGeneric reply without their ids, sorted.
pub fn classes_of(data: &[u8], ids: &IdSizes) -> Result<Vec<(u8, String, String, u32)>> {
    let mut r = Reader::new(data);
    let n = r.u4()?;
    let mut out = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let tag = r.u1()?;
        let _id = r.id(ids.reftype)?;
        let sig = r.jdwp_string()?;
        let generic = r.jdwp_string()?;
        out.push((tag, sig, generic, r.u4()?));
    }
    if r.remaining() != 0 {
        bail!("{} bytes after {n} classes", r.remaining());
    }
    out.sort();
    Ok(out)
}

/// One figure of a path's answers.
type Figure<'a> = &'a dyn Fn(&Answers) -> f64;

fn rows(t: &mut Table, p: &ThinParams, all: &[[Option<Answers>; 3]]) {
    if all.iter().all(|r| r.iter().all(Option::is_none)) {
        return;
    }
    let any = all.iter().flat_map(|r| r.iter().flatten()).next();
    let (classes_len, string_len) = any.map_or((0, 0), |a| (a.classes_len, a.string_len));
    t.section(&format!(
        "big answers over a thin link ({} Mbit/s, {} ms each way; rate_link in front of the host's sshd): a raw client asks a HotSpot JVM for AllClassesWithGeneric ({} classes, a {} KB reply) and StringReference.Value (a {} KB string of JSON lines), each on a fresh path; {} repetitions, medians; KB = what the link carried from the host meanwhile",
        p.bits_per_s / 1_000_000,
        p.delay.as_millis(),
        any.map_or(0, |a| a.classes.len()),
        classes_len / 1000,
        string_len / 1000,
        all.len()
    ));
    t.columns(["ssh -L", "--far always, uncompressed", "--far always, compressed", "compressed / uncompressed"]);
    let of = |c: usize, f: &dyn Fn(&Answers) -> f64| median(&all.iter().filter_map(|r| r[c].as_ref()).map(f).collect::<Vec<_>>());
    let figures: [(&str, Figure, bool); 4] = [
        ("AllClassesWithGeneric, s", &|a| a.classes_s, true),
        ("AllClassesWithGeneric, KB on the link", &|a| a.classes_link as f64 / 1000.0, false),
        ("StringReference.Value of 1 MiB, s", &|a| a.string_s, false),
        ("StringReference.Value of 1 MiB, KB on the link", &|a| a.string_link as f64 / 1000.0, false),
    ];
    for (what, f, judged) in figures {
        let cells = [0, 1, 2].map(|c| fmt_opt(of(c, f)));
        let ratio = of(2, f).zip(of(1, f)).filter(|(_, raw)| *raw > 0.0).map_or(String::new(), |(s, raw)| format!("{} x", fmt(s / raw)));
        let r = Row::new(what, [cells[0].clone(), cells[1].clone(), cells[2].clone(), ratio]);
        t.push(if judged {
            r.judged(String::new(), &format!("compressed <= {ALL_CLASSES_TARGET_S} s"), of(2, f).map(|s| s <= ALL_CLASSES_TARGET_S))
        } else {
            r.judged(String::new(), "", None)
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_order() {
        let full = ThinParams::new(false);
        assert_eq!((full.classes, full.string_len, full.bits_per_s, full.delay), (10_000, 1 << 20, 10_000_000, Duration::from_millis(25)));
        assert_eq!(ThinParams::new(true).reps, 1);
        assert_eq!(ThinPath::order(0), THIN_PATHS);
        assert_eq!(ThinPath::order(1)[0], ThinPath::Squeezed);
    }

    #[test]
    fn a_class_list_parses_without_its_ids() {
        let ids = IdSizes { field: 8, method: 8, object: 8, reftype: 8, frame: 8 };
        let mut d = 2u32.to_be_bytes().to_vec();
        for (id, sig) in [(9u64, "LB;"), (4, "LA;")] {
            d.push(1);
            d.extend_from_slice(&id.to_be_bytes());
            put_str(&mut d, sig);
            put_str(&mut d, "");
            d.extend_from_slice(&7u32.to_be_bytes());
        }
        let got = classes_of(&d, &ids).unwrap();
        assert_eq!(got, vec![(1, "LA;".into(), String::new(), 7), (1, "LB;".into(), String::new(), 7)]);
        d.push(0);
        assert!(classes_of(&d, &ids).is_err(), "trailing bytes");
    }

    #[test]
    fn the_program_prints_the_ready_line() {
        assert!(BIG_ANSWERS_JAVA.contains("bench debuggee ready"));
    }
}
