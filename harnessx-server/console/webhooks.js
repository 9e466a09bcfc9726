// The webhooks page: every webhook (GET /v2/webhooks) with its URL and events, a button to
// delete it and one to show its delivery log (each attempt's time, status or error, duration and
// the next attempt), and a form to add one: a URL and the events to send. The secret the server
// makes is shown once, right after the webhook is added; the server never returns it again.

import { api } from "./api.js";
import { h, replace, pageTitle, errorBox, announce } from "./dom.js";

const EVENTS = [
  ["run.waiting_input", "A run waits for a person"],
  ["run.completed", "A run completed"],
  ["run.failed", "A run failed"],
  ["run.cancelled", "A run was cancelled"],
];

/** `iso` (RFC 3339) as this browser's local date and time. */
function when(iso) {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString();
}

export async function webhooksPage(main, made = null) {
  replace(main, h("h1", {}, "Webhooks"), h("p", { class: "muted" }, "Loading…"));
  pageTitle(main, "Webhooks");
  let list;
  try {
    list = await api("GET", "/webhooks");
  } catch (err) {
    replace(main, h("h1", {}, "Webhooks"), errorBox(err));
    return;
  }
  const items = list.webhooks.map((w) => webhookCard(w, main));
  replace(main,
    h("h1", {}, "Webhooks"),
    h("p", { class: "hint" }, "A webhook is told when a run waits for a person, completes, fails or is cancelled: ",
      "an HTTP POST signed with its secret (Standard Webhooks), retried until it is accepted."),
    made ? secretNotice(made) : null,
    items.length ? h("ul", { class: "cards", "aria-label": "Webhooks" }, items)
      : h("p", {}, "The server has no webhooks yet; add one below."),
    newWebhookForm(main));
  pageTitle(main, "Webhooks");
}

/** The secret of a webhook just made: shown this once. */
function secretNotice(made) {
  return h("div", { class: "card secret", role: "status", "aria-label": `Secret of ${made.id}` },
    h("p", {}, `Webhook ${made.id} added. Its signing secret, shown only now:`),
    h("pre", {}, h("code", {}, made.secret)),
    h("p", { class: "hint" }, "Give it to the receiver, which verifies each request's webhook-signature with it."));
}

function webhookCard(w, main) {
  const log = h("div", { class: "deliveries" });
  const show = h("button", { type: "button", "aria-expanded": "false", "aria-label": `Deliveries of ${w.id}` }, "Deliveries");
  show.addEventListener("click", async () => {
    if (show.getAttribute("aria-expanded") === "true") {
      show.setAttribute("aria-expanded", "false");
      replace(log);
      return;
    }
    show.setAttribute("aria-expanded", "true");
    await showDeliveries(w.id, log);
  });
  const remove = h("button", { type: "button", class: "danger", "aria-label": `Delete ${w.id}` }, "Delete");
  const outcome = h("div", { class: "outcome" });
  remove.addEventListener("click", async () => {
    remove.disabled = true;
    try {
      await api("DELETE", `/webhooks/${encodeURIComponent(w.id)}`);
      announce(`Webhook ${w.id} deleted.`);
      await webhooksPage(main);
    } catch (err) {
      remove.disabled = false;
      replace(outcome, errorBox(err));
    }
  });
  return h("li", { class: "card webhook", "aria-label": w.id },
    h("h2", {}, w.id),
    h("dl", { class: "facts" },
      h("dt", {}, "URL"), h("dd", {}, h("code", {}, w.url)),
      h("dt", {}, "Events"), h("dd", {}, w.events.join(", ")),
      h("dt", {}, "State"), h("dd", {}, w.enabled ? "on" : "off"),
      w.description ? [h("dt", {}, "Description"), h("dd", {}, w.description)] : null),
    w.disabled_reason ? h("p", { class: "hint" }, w.disabled_reason) : null,
    h("p", { class: "actions" }, show, " ", remove),
    outcome,
    log);
}

/** Fills `into` with the delivery log of webhook `id`, newest first. */
async function showDeliveries(id, into) {
  replace(into, h("p", { class: "muted" }, "Loading…"));
  let page;
  try {
    page = await api("GET", `/webhooks/${encodeURIComponent(id)}/deliveries`);
  } catch (err) {
    replace(into, errorBox(err));
    return;
  }
  const refresh = h("button", { type: "button", "aria-label": `Refresh the deliveries of ${id}` }, "Refresh");
  refresh.addEventListener("click", () => showDeliveries(id, into));
  if (!page.deliveries.length) {
    replace(into, h("p", {}, "Nothing was sent yet."), refresh);
    return;
  }
  const rows = page.deliveries.map((d) => h("tr", {},
    h("td", {}, d.event),
    h("td", {}, String(d.run_id)),
    h("td", {}, h("span", { class: `delivery-${d.state}` }, d.state)),
    h("td", {}, h("ol", { class: "attempts" }, d.attempts.map((a) => h("li", {},
      `${when(a.at)}: `,
      a.status ? `HTTP ${a.status}` : "no answer",
      a.error ? ` — ${a.error}` : "",
      ` (${a.duration_ms} ms)`,
      a.next_attempt_at ? `; next at ${when(a.next_attempt_at)}` : "")))),
    h("td", {}, d.next_attempt_at ? when(d.next_attempt_at) : "—")));
  replace(into,
    h("div", { class: "scroll" },
      h("table", { class: "log" },
        h("caption", {}, `Deliveries to ${id}, newest first`),
        h("thead", {}, h("tr", {},
          h("th", { scope: "col" }, "Event"),
          h("th", { scope: "col" }, "Run"),
          h("th", { scope: "col" }, "State"),
          h("th", { scope: "col" }, "Attempts"),
          h("th", { scope: "col" }, "Next attempt"))),
        h("tbody", {}, rows))),
    refresh);
}

/** Adds a webhook: a URL and the events to send it. */
function newWebhookForm(main) {
  const url = h("input", { id: "new-webhook-url", name: "url", inputmode: "url", autocomplete: "off", required: true, "aria-describedby": "new-webhook-url-hint" });
  const description = h("input", { id: "new-webhook-description", name: "description", autocomplete: "off" });
  const boxes = EVENTS.map(([name, text]) => {
    const id = `new-webhook-${name.replace(".", "-")}`;
    const box = h("input", { type: "checkbox", id, name: "events", value: name, checked: name === "run.waiting_input" });
    return [box, h("p", {}, box, " ", h("label", { for: id, class: "inline" }, `${text} (${name})`))];
  });
  const outcome = h("div", { class: "outcome" });
  const form = h("form", { class: "card", "aria-label": "New webhook" },
    h("h2", {}, "New webhook"),
    h("label", { for: "new-webhook-url" }, "URL"),
    h("p", { class: "hint", id: "new-webhook-url-hint" }, "Where events are posted: an http or https address."),
    url,
    h("fieldset", {},
      h("legend", {}, "Events"),
      boxes.map(([, line]) => line)),
    h("label", { for: "new-webhook-description" }, "Description"),
    description,
    outcome,
    h("button", { type: "submit", class: "primary" }, "Add webhook"));
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    replace(outcome);
    const events = boxes.filter(([box]) => box.checked).map(([box]) => box.value);
    const body = { url: url.value.trim(), events };
    if (description.value.trim()) body.description = description.value.trim();
    try {
      const made = await api("POST", "/webhooks", body);
      announce(`Webhook ${made.id} added.`);
      await webhooksPage(main, made);
    } catch (err) {
      replace(outcome, errorBox(err));
    }
  });
  return form;
}
