//! Compile tests of the `#[tool]` macro: every mistake in `tests/ui/<category>/` must fail with
//! the `.stderr` beside it, and everything in `tests/ui/pass/` must compile.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass/*.rs");
    t.compile_fail("tests/ui/[!p]*/*.rs");
}
