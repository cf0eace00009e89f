use greet_macros::{answer, Describe};

#[derive(Describe)]
struct Point;

fn main() {
    println!("{}", greet::greeting("linkwrap"));
    println!("answer={} {}", answer!(), Point::describe());
    println!("built by {}", env!("APP_BUILT_BY"));
}
