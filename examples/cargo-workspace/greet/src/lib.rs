//! A small library so the binary links an rlib of the workspace.

pub fn greeting(name: &str) -> String {
    format!("Hello, {name}!")
}

#[cfg(test)]
mod tests {
    #[test]
    fn greets() {
        assert_eq!(super::greeting("ld"), "Hello, ld!");
    }
}
