//! The VirtualMachine.Version reply, and what it says about the VM: Android VMs call
//! themselves "Dalvik" there, ART included.

use super::reader::{ReadError, Reader};

/// A decoded VirtualMachine.Version reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VmVersion {
    pub description: String,
    pub jdwp_major: i32,
    pub jdwp_minor: i32,
    pub vm_version: String,
    pub vm_name: String,
}

impl VmVersion {
    pub fn parse(data: &[u8]) -> Result<VmVersion, ReadError> {
        let mut r = Reader::new(data);
        Ok(VmVersion {
            description: r.string("description")?,
            jdwp_major: r.i32("jdwpMajor")?,
            jdwp_minor: r.i32("jdwpMinor")?,
            vm_version: r.string("vmVersion")?,
            vm_name: r.string("vmName")?,
        })
    }

    /// "vmName vmVersion", as `list` shows it.
    pub fn ident(&self) -> String {
        format!("{} {}", self.vm_name, self.vm_version)
    }

    pub fn is_android(&self) -> bool {
        is_android_vm(&self.ident()) || self.description.contains("Android")
    }
}

/// Whether a VM ident ("vmName vmVersion") names an Android VM.
pub fn is_android_vm(ident: &str) -> bool {
    ident.contains("Dalvik") || ident.split_whitespace().next() == Some("ART") || ident.contains("Android")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(description: &str, vm_version: &str, vm_name: &str) -> Vec<u8> {
        let mut d = Vec::new();
        for (i, s) in [description, "", vm_version, vm_name].iter().enumerate() {
            if i == 1 {
                d.extend_from_slice(&1i32.to_be_bytes());
                d.extend_from_slice(&8i32.to_be_bytes());
                continue;
            }
            d.extend_from_slice(&(s.len() as u32).to_be_bytes());
            d.extend_from_slice(s.as_bytes());
        }
        d
    }

    #[test]
    fn android_or_not() {
        let cases = [
            ("Java Debug Wire Protocol (Reference Implementation)", "17.0.9+9", "OpenJDK 64-Bit Server VM", false),
            ("Android Runtime 2.1.0", "2.1.0", "Dalvik", true),
            ("Dalvik Debug", "1.4.0", "Dalvik", true),
            ("ART JDWP", "14", "ART", true),
            ("Java VM on Android", "1", "Other", true),
            ("x", "1", "ARTEMIS", false),
        ];
        for (desc, ver, name, want) in cases {
            let v = VmVersion::parse(&reply(desc, ver, name)).unwrap();
            assert_eq!(v.vm_name, name);
            assert_eq!((v.jdwp_major, v.jdwp_minor), (1, 8));
            assert_eq!(v.is_android(), want, "{desc} / {name}");
        }
        assert!(VmVersion::parse(&reply("a", "b", "c")[..10]).is_err());
    }
}
