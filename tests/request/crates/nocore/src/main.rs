// A program for any target without its Rust standard library (none but the host's is installed
// here): no core library at all, a C `main` that returns 42. Built with RUSTC_BOOTSTRAP=1.
#![feature(no_core, lang_items)]
#![allow(internal_features)]
#![no_core]
#![no_main]

#[lang = "pointee_sized"]
pub trait PointeeSized {}
#[lang = "meta_sized"]
pub trait MetaSized: PointeeSized {}
#[lang = "sized"]
pub trait Sized: MetaSized {}

#[no_mangle]
pub extern "C" fn main() -> i32 {
    42
}
