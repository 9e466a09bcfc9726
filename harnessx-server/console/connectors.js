// The connectors page: every connector with its status and tools, a "Sign in" button for one that
// needs a sign-in (the browser goes to the authorization server and comes back here), and a form
// to add one (a stdio command with arguments, or a URL with headers).

import { api } from "./api.js";
import { h, replace, pageTitle, errorBox, announce } from "./dom.js";

const STATUS = { ready: "Ready", needs_sign_in: "Needs sign-in", unreachable: "Unreachable" };

export async function connectorsPage(main, query) {
  replace(main, h("h1", {}, "Connectors"), h("p", { class: "muted" }, "Loading…"));
  pageTitle(main, "Connectors");
  let list;
  try {
    list = await api("GET", "/connectors");
  } catch (err) {
    replace(main, h("h1", {}, "Connectors"), errorBox(err));
    return;
  }
  const signedIn = query.get("signed_in");
  const failed = query.get("sign_in_error");
  const notice = signedIn
    ? h("p", { class: "ok", role: "status" }, `Signed in: ${signedIn}.`)
    : failed ? h("p", { class: "error", role: "alert" }, `The sign-in failed: ${failed}`) : null;
  const items = list.connectors.map((c) => connectorCard(c, main, query));
  replace(main,
    h("h1", {}, "Connectors"),
    notice,
    items.length ? h("ul", { class: "cards", "aria-label": "Connectors" }, items)
      : h("p", {}, "The server has no connectors yet; add one below."),
    newConnectorForm(main));
  pageTitle(main, "Connectors");
}

function connectorCard(c, main, query) {
  const where = c.transport === "http"
    ? [h("dt", {}, "URL"), h("dd", {}, h("code", {}, c.url))]
    : [h("dt", {}, "Command"), h("dd", {}, h("code", {}, [c.command, ...c.args].join(" ")))];
  const outcome = h("div", { class: "outcome" });
  let signIn = null;
  if (c.status === "needs_sign_in" && c.oauth) {
    signIn = h("button", { type: "button", class: "primary", "aria-label": `Sign in to ${c.name}` }, "Sign in");
    signIn.addEventListener("click", async () => {
      signIn.disabled = true;
      replace(outcome, h("p", { class: "muted", role: "status" }, "Starting the sign-in…"));
      try {
        const started = await api("POST", `/connectors/${encodeURIComponent(c.name)}/sign-in`);
        if (started.authorization_url) {
          location.assign(started.authorization_url);
          return;
        }
        announce(`${c.name} is ready.`);
        connectorsPage(main, query);
      } catch (err) {
        signIn.disabled = false;
        replace(outcome, errorBox(err));
      }
    });
  }
  return h("li", { class: "card connector", "aria-label": c.name },
    h("h2", {}, c.name),
    h("dl", { class: "facts" },
      ...where,
      h("dt", {}, "Status"),
      h("dd", {}, h("span", { class: `badge status-${c.status}` }, STATUS[c.status] ?? c.status)),
      h("dt", {}, "Sign-in"), h("dd", {}, c.oauth ? "OAuth" : "none"),
      h("dt", {}, "Tools"),
      h("dd", {}, c.tools.length ? c.tools.map((t) => t.name).join(", ") : "none")),
    c.error ? h("p", { class: "hint" }, c.error) : null,
    signIn,
    outcome);
}

/** Lines of `text`, trimmed, without empty ones. */
function lines(text) {
  return text.split("\n").map((l) => l.trim()).filter(Boolean);
}

/** Adds a connector: a stdio command with arguments, or a URL with headers (and OAuth). */
function newConnectorForm(main) {
  const field = (id, label, input, hint) => [
    h("label", { for: id }, label),
    hint ? h("p", { class: "hint", id: `${id}-hint` }, hint) : null,
    input,
  ];
  const name = h("input", { id: "new-connector-name", name: "name", required: true, autocomplete: "off", "aria-describedby": "new-connector-name-hint" });
  const stdio = h("input", { type: "radio", id: "new-connector-stdio", name: "transport", value: "stdio", checked: true });
  const http = h("input", { type: "radio", id: "new-connector-http", name: "transport", value: "http" });
  const command = h("input", { id: "new-connector-command", name: "command", autocomplete: "off" });
  const args = h("textarea", { id: "new-connector-args", name: "args", rows: "3", "aria-describedby": "new-connector-args-hint" });
  const url = h("input", { id: "new-connector-url", name: "url", type: "url", autocomplete: "off" });
  const headers = h("textarea", { id: "new-connector-headers", name: "headers", rows: "2", "aria-describedby": "new-connector-headers-hint" });
  const oauth = h("input", { type: "checkbox", id: "new-connector-oauth", name: "oauth" });
  const stdioPart = h("div", {},
    field("new-connector-command", "Command", command),
    field("new-connector-args", "Arguments", args, "One argument per line."));
  const httpPart = h("div", { hidden: true },
    field("new-connector-url", "URL", url),
    field("new-connector-headers", "Headers", headers, "One `Name: value` per line; values are never shown again."),
    h("p", {}, oauth, " ", h("label", { for: "new-connector-oauth", class: "inline" }, "Sign in with OAuth")));
  const pick = () => {
    stdioPart.hidden = !stdio.checked;
    httpPart.hidden = !http.checked;
  };
  stdio.addEventListener("change", pick);
  http.addEventListener("change", pick);
  const outcome = h("div", { class: "outcome" });
  const form = h("form", { class: "card", "aria-label": "New connector" },
    h("h2", {}, "New connector"),
    field("new-connector-name", "Name", name, "1 to 64 letters, digits, _ or -."),
    h("fieldset", {},
      h("legend", {}, "Transport"),
      h("p", {}, stdio, " ", h("label", { for: "new-connector-stdio", class: "inline" }, "Command (stdio)")),
      h("p", {}, http, " ", h("label", { for: "new-connector-http", class: "inline" }, "URL (streamable HTTP)"))),
    stdioPart,
    httpPart,
    outcome,
    h("button", { type: "submit", class: "primary" }, "Add connector"));
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    replace(outcome);
    const body = { name: name.value.trim() };
    if (stdio.checked) {
      body.command = command.value.trim();
      body.args = lines(args.value);
    } else {
      body.url = url.value.trim();
      body.headers = {};
      for (const line of lines(headers.value)) {
        const colon = line.indexOf(":");
        if (colon <= 0) {
          replace(outcome, errorBox(new Error(`Headers: "${line}" is not \`Name: value\`; write one header per line.`)));
          return;
        }
        body.headers[line.slice(0, colon).trim()] = line.slice(colon + 1).trim();
      }
      if (oauth.checked) body.oauth = {};
    }
    try {
      const made = await api("POST", "/connectors", body);
      announce(`Connector ${made.name} added.`);
      await connectorsPage(main, new URLSearchParams());
    } catch (err) {
      replace(outcome, errorBox(err));
    }
  });
  return form;
}
