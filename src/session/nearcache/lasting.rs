//! Lasting classes: reference type ids the VM gave on this connection for classes that can
//! never be unloaded, so the id stays valid until a debugger disposes it. What makes an
//! ExceptionOnly modifier naming such a class certain (the early-answers row
//! "EventRequest.Set (ClassPrepare, ClassUnload, ThreadStart, ThreadDeath, Exception)").
//!
//! libjdwp reads ExceptionOnly with inStream_readClassRef (eventFilter.c: readAndSetFilters),
//! which refuses only an id that is not in its reference table (INVALID_OBJECT) or is not a
//! class (INVALID_CLASS); eventFilter_setExceptionOnlyFilter does not check that the class is
//! a Throwable. An id a VM reply on this connection gave as a reference type stays in that
//! table while its class is loaded and the id is not disposed.
//!
//! Which classes are never unloaded ([`lasting_signature`]): classes in `java.*` packages are
//! defined only by the boot or platform loader (the JVM refuses `java.*` to any other loader:
//! "Prohibited package name"), and those loaders' classes are never unloaded. Hidden classes
//! are the exception (they can be unloaded on their own): their JNI signature has a '.'
//! before the address suffix (`Ljava/lang/invoke/LambdaForm$MH.0x0000000800c40800;`), so a
//! signature with a '.' is left out. Arrays of such classes and of primitives (`[I`) are
//! defined by their element's loader (the boot loader for primitives) and never unloaded
//! either.
//!
//! Learnt from ClassesBySignature answers, ClassPrepare events and AllClasses and
//! AllClassesWithGeneric answers (of one too large to read whole, the classes wholly in the
//! prefix the session reads, `COLLECT_PREFIX`); forgotten when a DisposeObjects names the id (all of them
//! when its body does not parse), on a ClassUnload of a lasting signature (which should
//! never come) and on a new VM connection.

use std::collections::{HashMap, HashSet};

use crate::jdwp::reader::Reader;

/// Ids held at most; past this, more are not added (a request naming one is only not
/// answered early).
pub const MAX_LASTING: usize = 65_536;

/// Class lists (AllClasses) awaiting their reply at most; past this, more are not read.
pub const MAX_LISTS: usize = 4096;

/// JNI primitive type letters: the element of a primitive array.
const PRIMITIVES: &[u8] = b"ZBCSIJFD";

/// Whether a class of this JNI signature can never be unloaded: a `java.*` class that is not
/// hidden, or an array of one or of a primitive type.
pub fn lasting_signature(sig: &[u8]) -> bool {
    let element = &sig[sig.iter().take_while(|&&b| b == b'[').count()..];
    let arrays = sig.len() - element.len();
    match element {
        [p] => arrays > 0 && PRIMITIVES.contains(p),
        [b'L', name @ .., b';'] => name.starts_with(b"java/") && name.len() > 5 && !name.iter().any(|&b| matches!(b, b'.' | b';' | b'[')),
        _ => false,
    }
}

/// The lasting class ids of one VM connection, and the class lists asked that may teach more.
#[derive(Debug, Default)]
pub struct Lasting {
    ids: HashSet<u64>,
    /// AllClasses commands forwarded: proxy id -> (debugger, with generic signatures,
    /// DisposeObjects seen when it went).
    lists: HashMap<u32, (u64, bool, u64)>,
    /// DisposeObjects commands seen: an answer asked before one may name an id it freed.
    disposals: u64,
}

impl Lasting {
    /// Whether `t` is an id the VM gave for a lasting class, not disposed since.
    pub fn contains(&self, t: u64) -> bool {
        self.ids.contains(&t)
    }

    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// A VM reply or event on this connection gave `t` as the reference type of signature `sig`.
    pub fn saw(&mut self, t: u64, sig: &[u8]) {
        if t != 0 && self.ids.len() < MAX_LASTING && lasting_signature(sig) {
            self.ids.insert(t);
        }
    }

    /// An AllClasses (or, with `generic`, AllClassesWithGeneric) answer: classes, then
    /// (refTypeTag, typeID, signature, [genericSignature,] status) each. Read until the
    /// first thing that does not parse; what came before it is learnt.
    pub fn all_classes(&mut self, answer: &[u8], ref_size: usize, generic: bool) {
        let mut r = Reader::new(answer);
        let Ok(n) = r.u32("classes") else { return };
        for _ in 0..n {
            let Some((t, sig)) = next_class(&mut r, ref_size, generic) else { return };
            self.saw(t, sig);
        }
    }

    /// An AllClasses (`generic`: AllClassesWithGeneric) went out under `proxy_id` for `conn`.
    pub fn asked(&mut self, proxy_id: u32, conn: u64, generic: bool) {
        if self.lists.len() < MAX_LISTS {
            self.lists.insert(proxy_id, (conn, generic, self.disposals));
        }
    }

    /// The debugger a class list under `proxy_id` was asked for, while its reply is awaited.
    pub fn asker(&self, proxy_id: u32) -> Option<u64> {
        self.lists.get(&proxy_id).map(|(conn, _, _)| *conn)
    }

    /// Its reply will not be read.
    pub fn forget(&mut self, proxy_id: u32) {
        self.lists.remove(&proxy_id);
    }

    /// Debugger `conn` left.
    pub fn forget_conn(&mut self, conn: u64) {
        self.lists.retain(|_, (c, _, _)| *c != conn);
    }

    /// The reply (or the prefix read of it) to the class list under `proxy_id`, for debugger
    /// `conn`: its lasting classes are learnt, unless a DisposeObjects came since it was
    /// asked (it may have freed one it names). `ref_size`: the VM's referenceTypeID size.
    pub fn answered(&mut self, proxy_id: u32, conn: u64, error: u16, answer: &[u8], ref_size: Option<usize>) {
        let Some((asker, generic, disposals)) = self.lists.remove(&proxy_id) else { return };
        if let Some(size) = ref_size.filter(|_| asker == conn && error == 0 && disposals == self.disposals) {
            self.all_classes(answer, size, generic);
        }
    }

    /// DisposeObjects commands seen so far.
    pub fn disposals(&self) -> u64 {
        self.disposals
    }

    /// A DisposeObjects named these ids (None: its body did not parse, so any may be freed).
    pub fn disposed(&mut self, ids: Option<&[u64]>) {
        self.disposals += 1;
        match ids {
            Some(ids) => ids.iter().for_each(|t| {
                self.ids.remove(t);
            }),
            None => self.ids.clear(),
        }
    }

    /// A ClassUnload of this signature: one of a lasting signature should never come, and
    /// then nothing held is trusted.
    pub fn unloaded(&mut self, sig: &[u8]) {
        if lasting_signature(sig) {
            self.ids.clear();
        }
    }
}

/// One class of an AllClasses answer: its id and signature.
fn next_class<'a>(r: &mut Reader<'a>, ref_size: usize, generic: bool) -> Option<(u64, &'a [u8])> {
    r.u8("refTypeTag").ok()?;
    let t = r.id(ref_size, "typeID").ok()?;
    let sig = string(r)?;
    if generic {
        string(r)?;
    }
    r.u32("status").ok()?;
    Some((t, sig))
}

/// A JDWP string's bytes as sent (u4 length, then modified UTF-8), unconverted.
fn string<'a>(r: &mut Reader<'a>) -> Option<&'a [u8]> {
    let len = r.u32("string").ok()? as usize;
    r.bytes(len, "string").ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn java_classes_and_arrays_of_them_or_of_primitives_last() {
        for sig in ["Ljava/lang/Throwable;", "Ljava/lang/String;", "[Ljava/lang/String;", "[[I", "[J", "[[[Ljava/util/Map$Entry;"] {
            assert!(lasting_signature(sig.as_bytes()), "{sig}");
        }
    }

    #[test]
    fn other_classes_hidden_ones_and_malformed_signatures_do_not() {
        for sig in [
            "I",
            "V",
            "[V",
            "[",
            "",
            "Ljavax/swing/JFrame;",
            "Ljavafx/Foo;",
            "Ljava/lang/invoke/LambdaForm$MH.0x0000000800c40800;",
            "LFoo;",
            "Ljava/lang/Throwable",
            "Ljava/;",
            "Ljava;",
            "[Ljava/lang/String",
            "Ljava/a;b;",
            "Lcom/java/Foo;",
            "[[Lorg/Foo;",
        ] {
            assert!(!lasting_signature(sig.as_bytes()), "{sig}");
        }
    }

    fn class(out: &mut Vec<u8>, t: u64, sig: &str, generic: Option<&str>) {
        out.push(1);
        out.extend_from_slice(&t.to_be_bytes());
        out.extend_from_slice(&(sig.len() as u32).to_be_bytes());
        out.extend_from_slice(sig.as_bytes());
        if let Some(g) = generic {
            out.extend_from_slice(&(g.len() as u32).to_be_bytes());
            out.extend_from_slice(g.as_bytes());
        }
        out.extend_from_slice(&7u32.to_be_bytes());
    }

    #[test]
    fn the_bound_stops_adding() {
        let mut l = Lasting::default();
        for t in 1..=(MAX_LASTING as u64 + 10) {
            l.saw(t, b"Ljava/lang/Object;");
        }
        assert_eq!(l.len(), MAX_LASTING);
        assert!(!l.contains(MAX_LASTING as u64 + 1));
        l.saw(0, b"Ljava/lang/Object;");
        assert!(!l.contains(0), "0 is null, never a class");
    }

    #[test]
    fn an_all_classes_answer_is_read_up_to_its_first_error() {
        let mut a = 3u32.to_be_bytes().to_vec();
        class(&mut a, 5, "Ljava/lang/Throwable;", None);
        class(&mut a, 6, "LFoo;", None);
        class(&mut a, 7, "Ljava/lang/Error;", None);
        let mut l = Lasting::default();
        l.all_classes(&a[..a.len() - 2], 8, false);
        assert!(l.contains(5) && !l.contains(6) && !l.contains(7));
        let mut g = 1u32.to_be_bytes().to_vec();
        class(&mut g, 9, "Ljava/util/List;", Some("<E:Ljava/lang/Object;>"));
        l.all_classes(&g, 8, true);
        assert!(l.contains(9));
    }

    proptest! {
        #[test]
        fn any_bytes_as_an_all_classes_answer_never_panic(data in proptest::collection::vec(any::<u8>(), 0..256), generic in any::<bool>(), size in prop_oneof![Just(4usize), Just(8usize)]) {
            let mut l = Lasting::default();
            l.all_classes(&data, size, generic);
            prop_assert!(l.len() <= data.len());
        }

        #[test]
        fn any_signature_is_judged_without_a_panic(sig in proptest::collection::vec(any::<u8>(), 0..40)) {
            let _ = lasting_signature(&sig);
        }
    }
}
