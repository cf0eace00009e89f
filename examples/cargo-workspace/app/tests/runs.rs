// An integration test: Cargo links it as a separate test executable.
#[test]
fn binary_prints_the_greeting() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_app")).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("Hello, linkwrap!"), "{text}");
    assert!(text.contains("answer=42 Point (derived)"), "{text}");
}
