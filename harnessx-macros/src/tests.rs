//! Snapshots of the expansion for representative signatures (`cargo insta review` to update).

use quote::quote;

use crate::expand::expand;

fn pretty(attr: proc_macro2::TokenStream, item: proc_macro2::TokenStream) -> String {
    let tokens = expand(attr, item);
    match syn::parse2::<syn::File>(tokens.clone()) {
        Ok(file) => prettyplease::unparse(&file),
        Err(e) => panic!("the expansion does not parse ({e}):\n{tokens}"),
    }
}

#[test]
fn spec_example_sync() {
    insta::assert_snapshot!(pretty(
        quote!(permission = "allow", replay_policy = "safe"),
        quote! {
            /// Multiply two numbers.
            ///
            /// Args:
            ///     a: First number.
            ///     b: Second number.
            pub fn calculate(a: i64, b: i64) -> i64 {
                a * b
            }
        },
    ));
}

#[test]
fn async_with_defaults_options_and_context() {
    insta::assert_snapshot!(pretty(
        quote!(name = "fetch", concurrent = false, timeout_seconds = 60),
        quote! {
            /// Fetch a page as text.
            ///
            /// # Arguments
            ///
            /// * `url` - The address.
            /// * `max_length` - Cap on the text.
            pub(crate) async fn fetch_url(
                url: String,
                #[arg(default = 20_000)] max_length: usize,
                note: Option<String>,
                client: State<Client>,
                ctx: ToolContext,
            ) -> String {
                let _ = (client, ctx, note);
                url[..max_length.min(url.len())].to_owned()
            }
        },
    ));
}

#[test]
fn result_return_retry_and_crate_path() {
    insta::assert_snapshot!(pretty(
        quote!(
            crate = my::harnessx,
            replay_policy = ReplayPolicy::Idempotent,
            retry(max_attempts = 4, initial_backoff_ms = 100)
        ),
        quote! {
            /// Look a user up.
            fn lookup(#[arg(default = "guest")] user: String) -> Result<Vec<String>, ToolError> {
                Ok(vec![user])
            }
        },
    ));
}

#[test]
fn errors_keep_the_function_and_report_everything() {
    insta::assert_snapshot!(pretty(
        quote!(permission = "sometimes", bogus = 1),
        quote! {
            /// Broken.
            ///
            /// Args:
            ///     missing: Not a parameter.
            fn broken<T>(#[arg(default = 1)] a: &str, (b, c): (i64, i64)) -> i64 {
                b + c
            }
        },
    ));
}
