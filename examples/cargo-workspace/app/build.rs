// A build script: Cargo links it as its own executable and runs it before compiling app.
fn main() {
    let profile = std::env::var("PROFILE").unwrap_or_default();
    println!("cargo:rustc-env=APP_BUILT_BY=build.rs ({profile})");
    println!("cargo:rerun-if-changed=build.rs");
}
