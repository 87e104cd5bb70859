//! A raw JDWP debugger of a real HotSpot VM, for tests that need exact control of the bytes
//! (pipelined commands, half-sent packets, unread replies): look up classes, fields and
//! methods, read arrays, set breakpoints. HotSpot's ids are 8 bytes; `attach` checks that.

use std::time::Duration;

use anyhow::{bail, Context, Result};
use tokio::net::ToSocketAddrs;

use super::client::RawClient;
use super::consts::*;
use super::reader::{put_jdwp_string, Reader};
use super::wire::{BufMut, Packet};

pub const SET_REFERENCE_TYPE: u8 = 2;
pub const RT_FIELDS: u8 = 4;
pub const RT_METHODS: u8 = 5;
pub const RT_GET_VALUES: u8 = 6;
pub const VM_CLASSES_BY_SIGNATURE: u8 = 2;
pub const VM_ALL_CLASSES: u8 = 3;
pub const SET_ARRAY: u8 = 13;
pub const ARRAY_GET_VALUES: u8 = 2;
/// EventRequest modifier: a location.
pub const MOD_LOCATION_ONLY: u8 = 7;
/// Class type tag of a Location.
pub const TAG_CLASS: u8 = 1;

/// How long one command of these helpers may take.
pub const REPLY_TIMEOUT: Duration = Duration::from_secs(30);

pub struct JvmDebugger {
    pub c: RawClient,
    next_id: u32,
}

impl JvmDebugger {
    /// Connects, handshakes and checks that every id is 8 bytes.
    pub async fn attach(addr: impl ToSocketAddrs) -> Result<JvmDebugger> {
        let c = RawClient::connect(addr).await?;
        let mut d = JvmDebugger { c, next_id: 1 };
        let sizes = d.cmd(SET_VM, VM_ID_SIZES, &[]).await?;
        let mut r = sizes.reader();
        for _ in 0..5 {
            if r.u4()? != 8 {
                bail!("this helper expects 8-byte ids: {:?}", sizes.data);
            }
        }
        Ok(d)
    }

    /// A fresh command id.
    pub fn id(&mut self) -> u32 {
        self.next_id += 1;
        self.next_id
    }

    /// Sends a command and waits for its reply; an error reply is an error.
    pub async fn cmd(&mut self, set: u8, cmd: u8, data: &[u8]) -> Result<Packet> {
        let id = self.id();
        let r = self.c.request(id, set, cmd, data, REPLY_TIMEOUT).await?;
        match r.error_code() {
            Some(0) => Ok(r),
            e => bail!("command {set}/{cmd} answered with error {e:?}"),
        }
    }

    /// The reference type id of the loaded class with JNI signature `sig` ("LMain;").
    pub async fn class_id(&mut self, sig: &str) -> Result<u64> {
        let mut data = Vec::new();
        put_jdwp_string(&mut data, sig);
        let reply = self.cmd(SET_VM, VM_CLASSES_BY_SIGNATURE, &data).await?;
        let mut r = reply.reader();
        if r.u4()? == 0 {
            bail!("class {sig} is not loaded");
        }
        let _tag = r.u1()?;
        Ok(r.u8()?)
    }

    /// The id of the field `name` of `class`.
    pub async fn field_id(&mut self, class: u64, name: &str) -> Result<u64> {
        self.member_id(class, RT_FIELDS, name).await?.with_context(|| format!("no field {name}"))
    }

    /// The id of the first method `name` of `class`.
    pub async fn method_id(&mut self, class: u64, name: &str) -> Result<u64> {
        self.member_id(class, RT_METHODS, name).await?.with_context(|| format!("no method {name}"))
    }

    /// The id of the first member `name` in ReferenceType.Fields or .Methods (same layout).
    async fn member_id(&mut self, class: u64, cmd: u8, name: &str) -> Result<Option<u64>> {
        let reply = self.cmd(SET_REFERENCE_TYPE, cmd, &class.to_be_bytes()).await?;
        let mut r = reply.reader();
        for _ in 0..r.u4()? {
            let id = r.u8()?;
            let n = r.jdwp_string()?;
            let _sig = r.jdwp_string()?;
            let _mods = r.u4()?;
            if n == name {
                return Ok(Some(id));
            }
        }
        Ok(None)
    }

    /// The object a static reference field of `class` holds.
    pub async fn static_object(&mut self, class: u64, field: &str) -> Result<u64> {
        let f = self.field_id(class, field).await?;
        let mut data = Vec::new();
        data.put_u64(class);
        data.put_u32(1);
        data.put_u64(f);
        let reply = self.cmd(SET_REFERENCE_TYPE, RT_GET_VALUES, &data).await?;
        let mut r = reply.reader();
        let _count = r.u4()?;
        let _tag = r.u1()?;
        Ok(r.u8()?)
    }

    /// Sets a breakpoint at the start of `class.method` with `suspend` policy; its request id.
    pub async fn break_at(&mut self, class: u64, method: &str, suspend: u8) -> Result<u32> {
        let m = self.method_id(class, method).await?;
        let reply = self.cmd(SET_EVENT_REQUEST, ER_SET, &breakpoint_request(class, m, suspend)).await?;
        Ok(reply.reader().u4()?)
    }
}

/// The body of an EventRequest.Set for a breakpoint at index 0 of `method`.
pub fn breakpoint_request(class: u64, method: u64, suspend: u8) -> Vec<u8> {
    let mut data = vec![KIND_BREAKPOINT, suspend];
    data.put_u32(1);
    data.put_u8(MOD_LOCATION_ONLY);
    data.put_u8(TAG_CLASS);
    data.put_u64(class);
    data.put_u64(method);
    data.put_u64(0);
    data
}

/// The body of ArrayReference.GetValues for `len` elements of `array` from 0.
pub fn array_get_values(array: u64, len: u32) -> Vec<u8> {
    let mut data = Vec::new();
    data.put_u64(array);
    data.put_u32(0);
    data.put_u32(len);
    data
}

/// The `(tag, length)` that open an ArrayReference.GetValues reply.
pub fn array_region_head(reply: &Packet) -> Result<(u8, u32)> {
    let mut r = Reader::new(&reply.data);
    Ok((r.u1().context("tag")?, r.u4().context("length")?))
}

/// `Big.java`: `Main`'s ticks, plus a large `int[]` to read (`BIG_LEN` elements, 4 bytes each
/// in a GetValues reply).
pub const BIG_JAVA: &str = "public class Big {
    static volatile int counter;
    static int[] big = new int[Integer.getInteger(\"big.len\", 4 * 1024 * 1024)];

    static void tick(int n) {
        System.out.println(\"tick \" + n);
        System.out.flush();
    }

    public static void main(String[] args) throws Exception {
        for (int i = 0; i < big.length; i++) {
            big[i] = i;
        }
        System.out.println(\"Main started\");
        System.out.flush();
        while (true) {
            counter++;
            tick(counter);
            Thread.sleep(50);
        }
    }
}
";

/// Elements of `Big.big`: a 16 MiB GetValues reply.
pub const BIG_LEN: u32 = 4 * 1024 * 1024;
