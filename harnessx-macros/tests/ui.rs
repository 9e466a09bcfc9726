//! Compile tests of the `#[tool]` macro: every mistake in `tests/ui/<category>/` must fail with
//! the `.stderr` beside it, and everything in `tests/ui/pass/` must compile. `tests/ui/features/`
//! holds the one category that is not about the macro: harnessx comes here without its default
//! features, and using an integration whose feature is off must fail with an error naming it.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass/*.rs");
    t.compile_fail("tests/ui/[!p]*/*.rs");
}
