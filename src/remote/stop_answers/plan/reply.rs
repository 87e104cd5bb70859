//! A reply taken in by the plan: kept within the bounds (or, of ABSENT_INFORMATION, kept as
//! such when the near side reads it), and the commands it leads to by its step; each command
//! issued once, answered at once when an earlier stop's reply is known to hold.

use super::frames::{get_values_data, parse_frames, parse_variable_table, visible_locals};
use super::lookup::{parse_lookup, parse_methods_with_code, LOOKUP_METHODS};
use super::{Class, Gathered, Known, Plan, Step, ARRAY_HEAD};
use crate::remote::stop_answers::values::{self, Field, CLASS};
use crate::remote::stop_answers::Key;
use crate::jdwp::reader::{put_id, Reader};
use crate::jdwp::packet::error::ABSENT_INFORMATION;
use crate::jdwp::unchanging::error_kept;

impl Plan {
    /// The reply to the command issued at position `n`; returns the commands it leads to.
    /// A position not issued or already answered changes nothing.
    pub fn on_reply(&mut self, n: usize, error: u16, data: &[u8], known: &mut Known) -> Vec<(usize, Key)> {
        let mut next = Vec::new();
        if n >= self.issued.len() || self.answered[n] {
            return next;
        }
        self.answered[n] = true;
        self.outstanding -= 1;
        if error != 0 {
            let key = &self.issued[n].0;
            if self.limits.absent && error == ABSENT_INFORMATION && error_kept(key.set, key.cmd, error) {
                self.absent.push(key.clone());
            }
            return next;
        }
        let (key, step) = self.issued[n].clone();
        known.learn(&key, data);
        if self.bytes + data.len() <= self.limits.bytes {
            self.bytes += data.len();
            self.gathered.push(Gathered { key: key.clone(), reply: data.to_vec() });
        }
        match step {
            Step::Plain => {}
            Step::AllFrames => {
                let Some(frames) = parse_frames(data, &self.sizes) else { return next };
                self.frames = frames.into_iter().take(self.limits.top_frames).collect();
                for i in 0..self.frames.len() {
                    let f = self.frames[i];
                    if self.limits.objects {
                        let mut this = self.thread_data();
                        put_id(&mut this, f.id, self.sizes.frame);
                        self.issue(&mut next, Key::new(16, 3, this), Step::ThisObject(i), known);
                    }
                    let mut method = Vec::new();
                    put_id(&mut method, f.class, self.sizes.reference_type);
                    put_id(&mut method, f.method, self.sizes.method);
                    self.issue(&mut next, Key::new(6, 5, method), Step::VariableTable(i), known);
                }
                if let Some(top) = self.frames.first().copied().filter(|_| self.limits.objects) {
                    self.statics = Some(top.class);
                    self.want_class(&mut next, top.class, top.type_tag, known);
                }
            }
            Step::ThisObject(i) => {
                let mut r = Reader::new(data);
                let (Ok(_tag), Ok(object)) = (r.u8("tag"), r.id(self.sizes.object, "object")) else { return next };
                if object != 0 && r.remaining() == 0 {
                    let step = if i == 0 { Step::ThisType(object) } else { Step::Plain };
                    self.issue(&mut next, Key::new(9, 1, self.id(object, self.sizes.object)), step, known);
                }
            }
            Step::ThisType(object) => {
                let Some((tag, ty)) = values::parse_reference_type(data, &self.sizes) else { return next };
                self.this = Some((object, ty));
                self.want_class(&mut next, ty, tag, known);
                self.read_fields(&mut next, known);
            }
            Step::Fields(class) => {
                let Some(fields) = values::parse_fields(data, &self.sizes) else { return next };
                self.classes.entry(class).or_default().fields = Some(fields);
                self.read_fields(&mut next, known);
            }
            Step::Superclass(class) => {
                let Some(superclass) = values::parse_superclass(data, &self.sizes) else { return next };
                self.classes.entry(class).or_default().superclass = Some(superclass);
                if superclass != 0 {
                    self.want_class(&mut next, superclass, CLASS, known);
                }
                self.read_fields(&mut next, known);
            }
            Step::Values if !self.limits.objects => {}
            Step::Values => {
                let Some(values) = values::parse_values(data, &self.sizes) else { return next };
                for v in values {
                    match (v.tag, v.object) {
                        (b's', Some(s)) if s != 0 => self.issue(&mut next, Key::new(10, 1, self.id(s, self.sizes.object)), Step::Plain, known),
                        (b'[', Some(a)) if a != 0 => self.issue(&mut next, Key::new(13, 1, self.id(a, self.sizes.object)), Step::ArrayLength(a), known),
                        _ => {}
                    }
                }
            }
            Step::AllThreads => {
                let Some(threads) = crate::remote::stop_answers::compose::all_threads(data, &self.sizes) else { return next };
                for t in threads.into_iter().take(self.limits.threads) {
                    let d = self.id(t, self.sizes.object);
                    for cmd in [1, 4, 7, 12] {
                        self.issue(&mut next, Key::new(11, cmd, d.clone()), Step::Plain, known);
                    }
                }
            }
            // The reply is the signature as a JDWP string, which is the lookup's own data.
            Step::ClassSignature => self.issue(&mut next, Key::new(1, 2, data.to_vec()), Step::Lookup, known),
            Step::Lookup => {
                let Some(found) = parse_lookup(data, &self.sizes) else { return next };
                self.found_classes(&mut next, found, known);
            }
            Step::Methods(class) => {
                let Some(methods) = parse_methods_with_code(data, &self.sizes) else { return next };
                for m in methods.into_iter().take(LOOKUP_METHODS) {
                    let mut d = self.id(class, self.sizes.reference_type);
                    put_id(&mut d, m, self.sizes.method);
                    self.issue(&mut next, Key::new(6, 1, d), Step::Plain, known);
                }
            }
            Step::ArrayLength(array) => {
                let Some(len) = values::parse_length(data) else { return next };
                let mut d = self.id(array, self.sizes.object);
                d.extend_from_slice(&0i32.to_be_bytes());
                d.extend_from_slice(&(len.min(ARRAY_HEAD) as i32).to_be_bytes());
                self.issue(&mut next, Key::new(13, 2, d), Step::Plain, known);
            }
            Step::VariableTable(i) => {
                let Some(frame) = self.frames.get(i).copied() else { return next };
                let Some(vars) = parse_variable_table(data) else { return next };
                let visible = visible_locals(&vars, frame.index);
                if visible.is_empty() {
                    return next;
                }
                let mut prefix = self.thread_data();
                put_id(&mut prefix, frame.id, self.sizes.frame);
                self.issue(&mut next, Key::new(16, 1, get_values_data(&prefix, &visible)), Step::Values, known);
                // One local alone is the same command as all of them. Their values are the
                // ones read just before: their strings and arrays are asked for once.
                let each = visible.len() > 1 && self.limits.objects;
                for v in visible.iter().filter(|_| each) {
                    self.issue(&mut next, Key::new(16, 1, get_values_data(&prefix, std::slice::from_ref(v))), Step::Plain, known);
                }
            }
        }
        next
    }

    pub(super) fn thread_data(&self) -> Vec<u8> {
        let mut d = Vec::new();
        put_id(&mut d, self.thread, self.sizes.object);
        d
    }

    pub(super) fn id(&self, id: u64, size: usize) -> Vec<u8> {
        let mut d = Vec::new();
        put_id(&mut d, id, size);
        d
    }

    /// Asks for a class's fields and (of a class) its superclass, once per class.
    pub(super) fn want_class(&mut self, out: &mut Vec<(usize, Key)>, class: u64, tag: u8, known: &mut Known) {
        if class == 0 || self.classes.contains_key(&class) {
            return;
        }
        // A type that is no class (an interface) has no superclass to ask for.
        let superclass = (tag != CLASS).then_some(0);
        self.classes.insert(class, Class { fields: None, superclass });
        let d = self.id(class, self.sizes.reference_type);
        self.issue(out, Key::new(2, 14, d.clone()), Step::Fields(class), known);
        if self.class_data {
            for cmd in [13, 10, 15] {
                self.issue(out, Key::new(2, cmd, d.clone()), Step::Plain, known);
            }
        }
        if tag == CLASS {
            self.issue(out, Key::new(3, 1, d), Step::Superclass(class), known);
        }
    }

    /// The fields of `class` and its superclasses, once all of them are known.
    fn chain_fields(&self, class: u64) -> Option<Vec<Field>> {
        let mut all = Vec::new();
        let mut at = class;
        // A chain longer than the classes known loops (a confused VM): none.
        for _ in 0..=self.classes.len() {
            let c = self.classes.get(&at)?;
            all.extend_from_slice(c.fields.as_ref()?);
            match c.superclass? {
                0 => return Some(all),
                s => at = s,
            }
        }
        None
    }

    /// Reads the fields of `this` and the statics of the frame's class once their chains are
    /// known.
    fn read_fields(&mut self, out: &mut Vec<(usize, Key)>, known: &mut Known) {
        if let Some((object, ty)) = self.this {
            if let Some(fields) = self.chain_fields(ty) {
                self.this = None;
                let ids: Vec<u64> = fields.iter().filter(|f| !f.is_static()).map(|f| f.id).collect();
                if !ids.is_empty() {
                    let d = self.fields_data(self.id(object, self.sizes.object), &ids);
                    self.issue(out, Key::new(9, 2, d), Step::Values, known);
                }
            }
        }
        if let Some(class) = self.statics {
            if let Some(fields) = self.chain_fields(class) {
                self.statics = None;
                let ids: Vec<u64> = fields.iter().filter(|f| f.is_static()).map(|f| f.id).collect();
                if !ids.is_empty() {
                    let d = self.fields_data(self.id(class, self.sizes.reference_type), &ids);
                    self.issue(out, Key::new(2, 6, d), Step::Values, known);
                }
            }
        }
    }

    /// `prefix` (an object or a type), then `int fields` and the field ids.
    fn fields_data(&self, mut prefix: Vec<u8>, ids: &[u64]) -> Vec<u8> {
        prefix.extend_from_slice(&(ids.len() as u32).to_be_bytes());
        for id in ids {
            put_id(&mut prefix, *id, self.sizes.field);
        }
        prefix
    }

    /// Issues `key` once: to the VM (into `out`, with its position), or, when `known` has
    /// its reply, answered from there at once.
    pub(super) fn issue(&mut self, out: &mut Vec<(usize, Key)>, key: Key, step: Step, known: &mut Known) {
        if self.issued.len() >= self.limits.commands || self.keys.contains(&key) {
            return;
        }
        self.keys.insert(key.clone());
        let n = self.issued.len();
        self.issued.push((key.clone(), step));
        self.answered.push(false);
        self.outstanding += 1;
        match known.get(&key).map(<[u8]>::to_vec) {
            Some(reply) => {
                let more = self.on_reply(n, 0, &reply, known);
                out.extend(more);
            }
            None => out.push((n, key)),
        }
    }
}
