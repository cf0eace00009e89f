// A build script: linked for the host, whatever --target says.
fn main() {
    // The binary has no Rust runtime: libc's start files call its `main`, and rustc adds no -lc itself.
    println!("cargo:rustc-link-arg-bins=-lc");
}
