//! Payload types about the VM itself and their parsers: HELO reply, APNM, FEAT, HPIF, ARTT,
//! boot stages, and the bounded `Blob` summary used for opaque (possibly huge) data.

use std::fmt;

use serde::Serialize;

use super::chunk_type::fmt_fourcc;
use super::error::DdmError;
use super::reader::Reader;

/// How many leading bytes of an opaque chunk we keep for logging.
pub const HEAD_LEN: usize = 32;

/// An opaque chunk body summarised as its length and first bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Blob {
    pub len: u32,
    #[serde(serialize_with = "ser_hex")]
    pub head: Vec<u8>,
}

impl Blob {
    pub fn of(data: &[u8]) -> Blob {
        Blob { len: u32::try_from(data.len()).unwrap_or(u32::MAX), head: head_of(data) }
    }
}

pub(super) fn head_of(data: &[u8]) -> Vec<u8> {
    data[..data.len().min(HEAD_LEN)].to_vec()
}

pub(super) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub(super) fn ser_hex<S: serde::Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&hex(bytes))
}

/// A boot stage (STAG, end of HELO): four ASCII letters such as `A_GO`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BootStage(pub u32);

impl BootStage {
    pub const BOOT: BootStage = BootStage(u32::from_be_bytes(*b"BOOT"));
    pub const ATCH: BootStage = BootStage(u32::from_be_bytes(*b"ATCH"));
    pub const BIND: BootStage = BootStage(u32::from_be_bytes(*b"BIND"));
    pub const NAMD: BootStage = BootStage(u32::from_be_bytes(*b"NAMD"));
    pub const DEBG: BootStage = BootStage(u32::from_be_bytes(*b"DEBG"));
    pub const A_GO: BootStage = BootStage(u32::from_be_bytes(*b"A_GO"));
}

impl fmt::Display for BootStage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_fourcc(self.0, f)
    }
}

impl fmt::Debug for BootStage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "BootStage({self})")
    }
}

impl Serialize for BootStage {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// The VM's HELO reply. Fields after `app_name` were appended over the years; each is
/// present only if the VM sent it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct HeloInfo {
    pub version: u32,
    pub pid: u32,
    pub vm_ident: String,
    pub app_name: String,
    pub user_id: Option<u32>,
    pub abi: Option<String>,
    pub jvm_flags: Option<String>,
    pub native_debuggable: Option<bool>,
    pub package_name: Option<String>,
    pub boot_stage: Option<BootStage>,
    /// Bytes after the last field we know: a newer VM's additions, skipped rather than
    /// costing us the whole HELO.
    #[serde(skip_serializing_if = "is_zero")]
    pub trailing_bytes: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// HELO reply: any prefix that ends on a field boundary; a partial field is an error.
pub fn parse_helo(r: &mut Reader<'_>) -> Result<HeloInfo, DdmError> {
    let version = r.u4("version")?;
    let pid = r.u4("pid")?;
    let vm_len = r.u4("vm ident length")?;
    let app_len = r.u4("app name length")?;
    let mut h = HeloInfo {
        version,
        pid,
        vm_ident: r.utf16(vm_len, "vm ident")?,
        app_name: r.utf16(app_len, "app name")?,
        ..HeloInfo::default()
    };
    if r.is_empty() {
        return Ok(h);
    }
    h.user_id = Some(r.u4("user id")?);
    if r.is_empty() {
        return Ok(h);
    }
    h.abi = Some(r.string("abi")?);
    if r.is_empty() {
        return Ok(h);
    }
    h.jvm_flags = Some(r.string("jvm flags")?);
    if r.is_empty() {
        return Ok(h);
    }
    h.native_debuggable = Some(r.u1("native debuggable")? != 0);
    if r.is_empty() {
        return Ok(h);
    }
    h.package_name = Some(r.string("package name")?);
    if r.is_empty() {
        return Ok(h);
    }
    h.boot_stage = Some(BootStage(r.u4("boot stage")?));
    h.trailing_bytes = r.rest().len();
    Ok(h)
}

/// APNM: `string appName [u4 userId [string packageName]]`.
pub fn parse_apnm(r: &mut Reader<'_>) -> Result<(String, Option<u32>, Option<String>), DdmError> {
    let name = r.string("app name")?;
    let user = if r.is_empty() { None } else { Some(r.u4("user id")?) };
    let package = if r.is_empty() { None } else { Some(r.string("package name")?) };
    Ok((name, user, package))
}

/// `u4 count, {string}*` (FEAT reply, VULW reply).
pub fn parse_string_list(r: &mut Reader<'_>, field: &'static str) -> Result<Vec<String>, DdmError> {
    let count = r.u4("count")?;
    let n = r.check_count(u64::from(count), 4, "count")?;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        out.push(r.string(field)?);
    }
    Ok(out)
}

/// One heap in an HPIF reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct HeapInfo {
    pub heap_id: u32,
    pub timestamp_ms: u64,
    /// The "when" value that caused this report (1 now, 2 next GC, 3 every GC).
    pub reason: u8,
    pub max_bytes: u32,
    pub size_bytes: u32,
    pub allocated_bytes: u32,
    pub objects: u32,
}

pub fn parse_hpif(r: &mut Reader<'_>) -> Result<Vec<HeapInfo>, DdmError> {
    let count = r.u4("heap count")?;
    let n = r.check_count(u64::from(count), 29, "heap count")?;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        out.push(HeapInfo {
            heap_id: r.u4("heap id")?,
            timestamp_ms: r.u8("timestamp")?,
            reason: r.u1("reason")?,
            max_bytes: r.u4("max size")?,
            size_bytes: r.u4("heap size")?,
            allocated_bytes: r.u4("bytes allocated")?,
            objects: r.u4("objects allocated")?,
        });
    }
    Ok(out)
}

/// One JDWP command timing measured by ART (ARTT).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CmdTiming {
    pub id: u32,
    pub cmd_set: u32,
    pub cmd: u32,
    pub start_ns: u64,
    pub duration_ns: u64,
}

pub fn parse_artt(r: &mut Reader<'_>) -> Result<(u32, Vec<CmdTiming>), DdmError> {
    let version = r.u4("version")?;
    let count = r.u4("timing count")?;
    let n = r.check_count(u64::from(count), 28, "timing count")?;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        out.push(CmdTiming {
            id: r.u4("packet id")?,
            cmd_set: r.u4("command set")?,
            cmd: r.u4("command")?,
            start_ns: r.u8("start")?,
            duration_ns: r.u8("duration")?,
        });
    }
    Ok((version, out))
}
