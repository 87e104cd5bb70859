//! The replies the gather plan reads objects, fields and classes from, parsed as the JDWP
//! specification lays them out. Pure; each parser reads a reply to its last byte or gives
//! None, and bounds a count by the bytes left before allocating for it.

use crate::jdwp::events::{value_width, IdSizes};
use crate::jdwp::reader::Reader;

/// JDWP's modifier bit of a static field (`ACC_STATIC`).
pub const STATIC: u32 = 0x0008;
/// The type tag of a class (JDWP `TypeTag.CLASS`): only classes have a superclass to ask.
pub const CLASS: u8 = 1;

/// One value of a reply of tagged values: its tag, and its object id when it is one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Value {
    pub tag: u8,
    pub object: Option<u64>,
}

/// `int values; values x (tag, value)`: the reply of StackFrame.GetValues,
/// ObjectReference.GetValues and ReferenceType.GetValues.
pub fn parse_values(data: &[u8], s: &IdSizes) -> Option<Vec<Value>> {
    let mut r = Reader::new(data);
    let n = r.u32("values").ok()? as usize;
    // Each value is at least its tag.
    if n > r.remaining() {
        return None;
    }
    let mut values = Vec::with_capacity(n);
    for _ in 0..n {
        let tag = r.u8("tag").ok()?;
        let len = value_width(tag, s)?;
        let object = if matches!(tag, b'[' | b'L' | b's' | b't' | b'g' | b'l' | b'c') {
            Some(r.id(len, "object").ok()?)
        } else {
            r.bytes(len, "value").ok()?;
            None
        };
        values.push(Value { tag, object });
    }
    (r.remaining() == 0).then_some(values)
}

/// One field of a ReferenceType.FieldsWithGeneric reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    pub id: u64,
    pub mod_bits: u32,
}

impl Field {
    pub fn is_static(&self) -> bool {
        self.mod_bits & STATIC != 0
    }
}

/// `int declared; declared x (fieldID, name, signature, genericSignature, int modBits)`.
pub fn parse_fields(data: &[u8], s: &IdSizes) -> Option<Vec<Field>> {
    let mut r = Reader::new(data);
    let n = r.u32("declared").ok()? as usize;
    // Each field is at least its id, three string lengths and its modifiers.
    if n > r.remaining() / (s.field + 16).max(1) {
        return None;
    }
    let mut fields = Vec::with_capacity(n);
    for _ in 0..n {
        let id = r.id(s.field, "fieldID").ok()?;
        for what in ["name", "signature", "genericSignature"] {
            let len = r.u32(what).ok()? as usize;
            r.bytes(len, what).ok()?;
        }
        let mod_bits = r.u32("modBits").ok()?;
        fields.push(Field { id, mod_bits });
    }
    (r.remaining() == 0).then_some(fields)
}

/// ClassType.Superclass: the superclass's id, 0 for java.lang.Object (or an interface).
pub fn parse_superclass(data: &[u8], s: &IdSizes) -> Option<u64> {
    let mut r = Reader::new(data);
    let id = r.id(s.reference_type, "superclass").ok()?;
    (r.remaining() == 0).then_some(id)
}

/// ObjectReference.ReferenceType: the type's tag and id.
pub fn parse_reference_type(data: &[u8], s: &IdSizes) -> Option<(u8, u64)> {
    let mut r = Reader::new(data);
    let tag = r.u8("refTypeTag").ok()?;
    let id = r.id(s.reference_type, "typeID").ok()?;
    (r.remaining() == 0 && id != 0).then_some((tag, id))
}

/// ArrayReference.Length: the length (never negative from a VM).
pub fn parse_length(data: &[u8]) -> Option<u32> {
    let mut r = Reader::new(data);
    let n = r.i32("arrayLength").ok()?;
    (r.remaining() == 0).then_some(u32::try_from(n).ok()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    const S8: IdSizes = IdSizes { field: 8, method: 8, object: 8, reference_type: 8, frame: 8 };
    const S4: IdSizes = IdSizes { field: 4, method: 4, object: 4, reference_type: 4, frame: 4 };

    #[test]
    fn tagged_values_give_their_objects() {
        let d = [&2u32.to_be_bytes()[..], b"I", &7u32.to_be_bytes(), b"s", &0x55u64.to_be_bytes()].concat();
        assert_eq!(parse_values(&d, &S8), Some(vec![Value { tag: b'I', object: None }, Value { tag: b's', object: Some(0x55) }]));
        let d4 = [&3u32.to_be_bytes()[..], b"[", &9u32.to_be_bytes(), b"J", &[0; 8], b"Z", &[1]].concat();
        assert_eq!(parse_values(&d4, &S4).map(|v| v.iter().map(|x| x.object).collect::<Vec<_>>()), Some(vec![Some(9), None, None]));
        assert!(parse_values(&[0, 0, 0, 1, b'?', 0], &S8).is_none(), "an unknown tag");
        assert!(parse_values(&[0, 0, 0, 1, b'I', 0, 0, 0, 1, 0], &S8).is_none(), "a trailing byte");
        assert!(parse_values(&[0xFF, 0xFF, 0xFF, 0xFF], &S8).is_none(), "a count past the bytes");
    }

    #[test]
    fn fields_give_their_ids_and_whether_static() {
        let mut d = 2u32.to_be_bytes().to_vec();
        for (id, name, bits) in [(0x11u64, "count", 0x0002u32), (0x12, "TOTAL", 0x0018)] {
            d.extend_from_slice(&id.to_be_bytes());
            for s in [name, "I", ""] {
                d.extend_from_slice(&(s.len() as u32).to_be_bytes());
                d.extend_from_slice(s.as_bytes());
            }
            d.extend_from_slice(&bits.to_be_bytes());
        }
        let f = parse_fields(&d, &S8).unwrap();
        assert_eq!(f, vec![Field { id: 0x11, mod_bits: 2 }, Field { id: 0x12, mod_bits: 0x18 }]);
        assert!(!f[0].is_static() && f[1].is_static());
        assert!(parse_fields(&d[..d.len() - 1], &S8).is_none());
        assert!(parse_fields(&[0x7F, 0xFF, 0xFF, 0xFF], &S8).is_none());
    }

    #[test]
    fn classes_and_lengths() {
        assert_eq!(parse_superclass(&0x30u64.to_be_bytes(), &S8), Some(0x30));
        assert_eq!(parse_superclass(&[0; 8], &S8), Some(0));
        assert!(parse_superclass(&[0; 9], &S8).is_none());
        assert_eq!(parse_reference_type(&[&[1u8][..], &0x30u64.to_be_bytes()].concat(), &S8), Some((1, 0x30)));
        assert!(parse_reference_type(&[1, 0, 0, 0, 0, 0, 0, 0, 0], &S8).is_none(), "no type 0");
        assert_eq!(parse_length(&5i32.to_be_bytes()), Some(5));
        assert!(parse_length(&(-1i32).to_be_bytes()).is_none());
    }
}
