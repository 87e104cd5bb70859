//! A stopped thread's frames and locals: a Frames reply and a variable table parsed, the
//! locals JDI shows at a frame's location, and the data of the commands that ask for them.
//! Pure.

use crate::jdwp::events::IdSizes;
use crate::jdwp::reader::Reader;

/// One frame of a Frames reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame {
    pub id: u64,
    pub type_tag: u8,
    pub class: u64,
    pub method: u64,
    pub index: u64,
}

pub(super) fn frames_data(thread: &[u8], start: i32, length: i32) -> Vec<u8> {
    let mut d = thread.to_vec();
    d.extend_from_slice(&start.to_be_bytes());
    d.extend_from_slice(&length.to_be_bytes());
    d
}

/// StackFrame.GetValues data for the frame in `prefix` (thread, frame) and these locals.
pub(super) fn get_values_data(prefix: &[u8], locals: &[Local]) -> Vec<u8> {
    let mut d = prefix.to_vec();
    d.extend_from_slice(&(locals.len() as u32).to_be_bytes());
    for l in locals {
        d.extend_from_slice(&l.slot.to_be_bytes());
        d.push(l.sig_byte);
    }
    d
}

/// A ThreadReference.Frames reply's frames; None when it does not parse to its last byte.
pub fn parse_frames(data: &[u8], s: &IdSizes) -> Option<Vec<Frame>> {
    let mut r = Reader::new(data);
    let n = r.u32("frames").ok()? as usize;
    let each = s.frame + 1 + s.reference_type + s.method + 8;
    if n.checked_mul(each)? != r.remaining() {
        return None;
    }
    let mut frames = Vec::with_capacity(n);
    for _ in 0..n {
        let id = r.id(s.frame, "frame").ok()?;
        let type_tag = r.u8("typeTag").ok()?;
        let class = r.id(s.reference_type, "class").ok()?;
        let method = r.id(s.method, "method").ok()?;
        let index = r.id(8, "index").ok()?;
        frames.push(Frame { id, type_tag, class, method, index });
    }
    Some(frames)
}

/// One entry of a Method.VariableTableWithGeneric reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Variable {
    pub code_index: u64,
    pub name: String,
    pub signature: String,
    pub length: u32,
    pub slot: i32,
}

/// A Method.VariableTableWithGeneric reply's entries; None when it does not parse to its
/// last byte.
pub fn parse_variable_table(data: &[u8]) -> Option<Vec<Variable>> {
    let mut r = Reader::new(data);
    let _arg_count = r.u32("argCnt").ok()?;
    let n = r.u32("slots").ok()? as usize;
    // Each entry is at least 8 + 4 + 4 + 4 + 4 + 4 bytes: a bound before allocating.
    if n > r.remaining() / 28 {
        return None;
    }
    let mut vars = Vec::with_capacity(n);
    for _ in 0..n {
        let code_index = r.id(8, "codeIndex").ok()?;
        let name = r.string("name").ok()?;
        let signature = r.string("signature").ok()?;
        let _generic = r.string("genericSignature").ok()?;
        let length = r.u32("length").ok()?;
        let slot = r.i32("slot").ok()?;
        vars.push(Variable { code_index, name, signature, length, slot });
    }
    (r.remaining() == 0).then_some(vars)
}

/// A local as StackFrame.GetValues names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Local {
    pub slot: i32,
    pub sig_byte: u8,
}

/// The locals JDI's `StackFrame.visibleVariables()` gives at code index `at`, in its order:
/// entries named `this` or `this$...` are not variables; an entry is visible when
/// `code_index <= at <= code_index + length - 1`; of two visible with one name, the one whose
/// scope starts later hides the other; the rest sorted by slot.
pub fn visible_locals(vars: &[Variable], at: u64) -> Vec<Local> {
    let mut by_name: Vec<&Variable> = Vec::new();
    for v in vars {
        if v.name == "this" || v.name.starts_with("this$") || v.signature.is_empty() {
            continue;
        }
        let end = v.code_index.checked_add(u64::from(v.length)).and_then(|e| e.checked_sub(1));
        let visible = v.code_index <= at && end.is_some_and(|e| at <= e);
        if !visible {
            continue;
        }
        match by_name.iter_mut().find(|w| w.name == v.name) {
            Some(w) if v.code_index > w.code_index => *w = v,
            Some(_) => {}
            None => by_name.push(v),
        }
    }
    by_name.sort_by_key(|v| v.slot);
    by_name.iter().map(|v| Local { slot: v.slot, sig_byte: v.signature.as_bytes()[0] }).collect()
}
