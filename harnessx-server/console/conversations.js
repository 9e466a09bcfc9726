// Conversations: start one with an agent, and the recent ones (from the newest runs).

import { api } from "./api.js";
import { h, replace, pageTitle, errorBox } from "./dom.js";

export async function conversationsPage(main, query) {
  replace(main, h("h1", {}, "Conversations"), h("p", { class: "muted" }, "Loading…"));
  pageTitle(main, "Conversations");
  let agents;
  let runs;
  try {
    [agents, runs] = await Promise.all([api("GET", "/agents"), api("GET", "/runs?limit=200")]);
  } catch (err) {
    replace(main, h("h1", {}, "Conversations"), errorBox(err));
    return;
  }
  const wanted = query.get("agent");
  const select = h("select", { id: "new-agent", name: "agent", required: true },
    agents.agents.map((a) => h("option", { value: a.id, selected: a.id === wanted }, a.id)));
  const input = h("textarea", { id: "new-message", name: "message", rows: "3", required: true });
  const problem = h("div", { class: "outcome" });
  const form = h("form", { class: "card", "aria-labelledby": "new-conversation-title" },
    h("h2", { id: "new-conversation-title" }, "New conversation"),
    h("label", { for: "new-agent" }, "Agent"), select,
    h("label", { for: "new-message" }, "Message"), input,
    problem,
    h("button", { type: "submit", class: "primary" }, "Start"));
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    replace(problem);
    try {
      const run = await api("POST", "/runs", { agent: select.value, input: input.value });
      location.hash = `#/conversations/${encodeURIComponent(run.conversation)}`;
    } catch (err) {
      replace(problem, errorBox(err));
    }
  });

  const byConversation = new Map();
  for (const run of runs.runs) {
    const seen = byConversation.get(run.conversation);
    // Runs come newest first: the first seen is the latest, the last seen the opening message.
    if (!seen) byConversation.set(run.conversation, { latest: run, first: run, count: 1 });
    else { seen.first = run; seen.count += 1; }
  }
  const items = [...byConversation.entries()].map(([id, c]) => h("li", { class: "card" },
    h("h3", {}, h("a", { href: `#/conversations/${encodeURIComponent(id)}` }, c.first.input.slice(0, 80) || id)),
    h("p", { class: "muted" }, `${c.latest.agent} · ${c.count} run${c.count === 1 ? "" : "s"} · `,
      h("span", { class: `state state-${c.latest.state}` }, c.latest.state.replace("_", " ")))));
  replace(main,
    h("h1", {}, "Conversations"),
    form,
    h("h2", {}, "Recent"),
    items.length ? h("ul", { class: "cards", "aria-label": "Recent conversations" }, items)
      : h("p", {}, "No conversations yet."));
  pageTitle(main, "Conversations");
  if (wanted) input.focus();
}
