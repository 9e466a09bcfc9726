// Sign-in: the server's API key, checked with one call, kept in this tab's sessionStorage.

import { api, signIn, signOut } from "./api.js";
import { h, replace, pageTitle, errorBox } from "./dom.js";

export function signInPage(main, done) {
  const input = h("input", {
    id: "api-key", name: "api-key", type: "password", required: true,
    autocomplete: "off", spellcheck: "false", "aria-describedby": "api-key-help",
  });
  const problem = h("div", { id: "sign-in-problem" });
  const form = h("form", { class: "card narrow", "aria-labelledby": "sign-in-title" },
    h("h1", { id: "sign-in-title" }, "Sign in"),
    h("p", { id: "api-key-help" },
      "Enter one of the API keys the server was started with (its config's ",
      h("code", {}, "server.api_keys"), " or ", h("code", {}, "HARNESSX_API_KEYS"),
      "). It stays in this tab only."),
    h("label", { for: "api-key" }, "API key"),
    input,
    problem,
    h("button", { type: "submit", class: "primary" }, "Sign in"),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    replace(problem);
    signIn(input.value.trim());
    try {
      await api("GET", "/agents");
      done();
    } catch (err) {
      signOut();
      replace(problem, errorBox(err.status === 401
        ? "The server refused this key. Check it and try again."
        : err));
      input.focus();
    }
  });
  replace(main, form);
  pageTitle(main, "Sign in");
}
