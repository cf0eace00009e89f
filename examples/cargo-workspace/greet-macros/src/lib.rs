//! A proc-macro crate using only `proc_macro` (no syn/quote: crates.io is not needed).
use proc_macro::{TokenStream, TokenTree};

/// `answer!()` expands to 42.
#[proc_macro]
pub fn answer(_input: TokenStream) -> TokenStream {
    "42".parse().unwrap()
}

/// `#[derive(Describe)]` adds `fn describe() -> &'static str` returning "<Name> (derived)".
#[proc_macro_derive(Describe)]
pub fn derive_describe(input: TokenStream) -> TokenStream {
    let mut tokens = input.into_iter();
    let mut name = None;
    while let Some(tt) = tokens.next() {
        if let TokenTree::Ident(id) = &tt {
            if id.to_string() == "struct" || id.to_string() == "enum" {
                if let Some(TokenTree::Ident(n)) = tokens.next() {
                    name = Some(n.to_string());
                }
                break;
            }
        }
    }
    let name = name.expect("Describe needs a struct or enum");
    format!("impl {name} {{ pub fn describe() -> &'static str {{ \"{name} (derived)\" }} }}")
        .parse()
        .unwrap()
}
