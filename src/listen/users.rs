//! User names and uids through the C library's user database (getpwnam_r / getpwuid_r), so
//! that users from NSS (LDAP, sssd) count as well as those in /etc/passwd.

use std::ffi::{CStr, CString};

/// Largest buffer tried for one passwd entry before giving up on it.
const MAX_BUF: usize = 1 << 20;

/// The uid of user `name`, if there is one.
pub fn uid_of(name: &str) -> Option<u32> {
    let c = CString::new(name).ok()?;
    lookup(&|pwd, buf, len, result| {
        // SAFETY: every pointer is valid for the call; `buf` has `len` bytes.
        unsafe { libc::getpwnam_r(c.as_ptr(), pwd, buf, len, result) }
    })
    .map(|(uid, _)| uid)
}

/// The name of the user with `uid`, if there is one.
pub fn name_of(uid: u32) -> Option<String> {
    lookup(&|pwd, buf, len, result| {
        // SAFETY: as above.
        unsafe { libc::getpwuid_r(uid, pwd, buf, len, result) }
    })
    .map(|(_, name)| name)
}

type PwCall<'a> = dyn Fn(*mut libc::passwd, *mut libc::c_char, usize, *mut *mut libc::passwd) -> libc::c_int + 'a;

/// Runs a getpw*_r call, growing the buffer while it says ERANGE.
fn lookup(call: &PwCall<'_>) -> Option<(u32, String)> {
    let mut len = 1024;
    loop {
        let mut buf = vec![0 as libc::c_char; len];
        // SAFETY: an all-zero passwd is a valid value (null pointers, zero ids); it is only
        // read after the call filled it.
        let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
        let mut result: *mut libc::passwd = std::ptr::null_mut();
        let rc = call(&mut pwd, buf.as_mut_ptr(), buf.len(), &mut result);
        if rc == libc::ERANGE && len < MAX_BUF {
            len *= 4;
            continue;
        }
        if rc != 0 || result.is_null() || pwd.pw_name.is_null() {
            return None;
        }
        // SAFETY: on success pw_name points to a NUL-terminated string inside `buf`.
        let name = unsafe { CStr::from_ptr(pwd.pw_name) }.to_string_lossy().into_owned();
        return Some((pwd.pw_uid, name));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_both_ways_and_unknown_names() {
        assert_eq!(uid_of("root"), Some(0));
        assert_eq!(name_of(0).as_deref(), Some("root"));
        assert_eq!(uid_of("no-such-user-jdwpmux-test"), None);
        assert_eq!(uid_of("nul\0inside"), None);
        let me = rustix::process::geteuid().as_raw();
        if let Some(n) = name_of(me) {
            assert_eq!(uid_of(&n), Some(me));
        }
    }
}
