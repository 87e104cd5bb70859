//! JDWP numbers the tests use: command sets, commands, error codes, event kinds and suspend
//! policies (from the JDWP specification), plus the DDM command set.

pub const SET_VM: u8 = 1;
pub const VM_VERSION: u8 = 1;
pub const VM_ALL_THREADS: u8 = 4;
pub const VM_DISPOSE: u8 = 6;
pub const VM_ID_SIZES: u8 = 7;
pub const VM_SUSPEND: u8 = 8;
pub const VM_RESUME: u8 = 9;
pub const SET_THREAD: u8 = 11;
pub const THREAD_SUSPEND: u8 = 2;
pub const THREAD_RESUME: u8 = 3;
pub const THREAD_SUSPEND_COUNT: u8 = 12;
pub const SET_OBJECT: u8 = 9;
pub const OBJECT_DISABLE_COLLECTION: u8 = 7;
pub const OBJECT_ENABLE_COLLECTION: u8 = 8;
pub const VM_HOLD_EVENTS: u8 = 15;
pub const VM_RELEASE_EVENTS: u8 = 16;
pub const SET_EVENT_REQUEST: u8 = 15;
pub const ER_SET: u8 = 1;
pub const ER_CLEAR: u8 = 2;
pub const ER_CLEAR_ALL_BREAKPOINTS: u8 = 3;
pub const SET_EVENT: u8 = 64;
pub const EVENT_COMPOSITE: u8 = 100;
pub const DDM_SET: u8 = 0xC7;
pub const DDM_CMD: u8 = 0x01;

pub const ERR_NONE: u16 = 0;
pub const ERR_INVALID_THREAD: u16 = 10;
pub const ERR_INVALID_OBJECT: u16 = 20;
pub const ERR_NOT_IMPLEMENTED: u16 = 99;
pub const ERR_ABSENT_INFORMATION: u16 = 101;

pub const KIND_SINGLE_STEP: u8 = 1;
pub const KIND_BREAKPOINT: u8 = 2;
pub const KIND_EXCEPTION: u8 = 4;
pub const KIND_THREAD_START: u8 = 6;
pub const KIND_THREAD_DEATH: u8 = 7;
pub const KIND_CLASS_PREPARE: u8 = 8;
pub const KIND_METHOD_ENTRY: u8 = 40;
pub const KIND_METHOD_EXIT: u8 = 41;
pub const KIND_VM_START: u8 = 90;

pub const SUSPEND_NONE: u8 = 0;
pub const SUSPEND_EVENT_THREAD: u8 = 1;
pub const SUSPEND_ALL: u8 = 2;

