//! The early answers given on one VM connection ([`super::early`]), kept by the id their
//! command went to the VM under until the VM's own reply comes and is compared with them.

use std::collections::HashMap;

/// The early answers given on a connection, by the id their command went to the VM under,
/// until the VM's reply comes to be compared.
#[derive(Debug, Default)]
pub struct Pending {
    by_id: HashMap<u32, Given>,
}

/// One early answer: to whom, for which command, and what it said (error NONE, this data).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Given {
    pub conn: u64,
    pub set: u8,
    pub cmd: u8,
    pub data: Vec<u8>,
}

/// What the VM's reply to an early-answered command showed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The same: nothing to do.
    Same(Given),
    /// Another error code or other data: a defect.
    Differed { given: Given, error: u16, data: Vec<u8> },
}

impl Pending {
    pub fn given(&mut self, proxy_id: u32, g: Given) {
        self.by_id.insert(proxy_id, g);
    }

    /// Whether the command under this id was answered early (its reply is not relayed).
    pub fn contains(&self, proxy_id: u32) -> bool {
        self.by_id.contains_key(&proxy_id)
    }

    /// Whether `conn` was told `request` by an early answer to a Set whose VM reply has not
    /// come yet (the sharing layer does not know the request as its own until then).
    pub fn set_pending(&self, conn: u64, request: u32) -> bool {
        self.by_id.values().any(|g| g.conn == conn && (g.set, g.cmd) == (15, 1) && g.data == request.to_be_bytes())
    }

    /// The VM's reply to `proxy_id`, when that command was answered early.
    pub fn replied(&mut self, proxy_id: u32, error: u16, data: &[u8]) -> Option<Verdict> {
        let given = self.by_id.remove(&proxy_id)?;
        Some(if error == 0 && data == given.data {
            Verdict::Same(given)
        } else {
            Verdict::Differed { given, error, data: data.to_vec() }
        })
    }

    /// A reply that will not be read whole: forgotten, not compared.
    pub fn forget(&mut self, proxy_id: u32) -> Option<Given> {
        self.by_id.remove(&proxy_id)
    }

    /// A debugger left: its early answers' replies will find no request.
    pub fn forget_conn(&mut self, conn: u64) {
        self.by_id.retain(|_, g| g.conn != conn);
    }

    pub fn clear(&mut self) {
        self.by_id.clear();
    }

    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }
}
