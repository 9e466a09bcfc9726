// Conversations: start one by posting its first message to an agent, and the conversations
// so far (`GET /v2/conversations`, the one with the newest run first, a page at a time).

import { api } from "./api.js";
import { h, replace, pageTitle, errorBox, announce } from "./dom.js";
import { whenView } from "./values.js";

const PAGE = 25;

export async function conversationsPage(main, query) {
  replace(main, h("h1", {}, "Conversations"), h("p", { class: "muted" }, "Loading…"));
  pageTitle(main, "Conversations");
  let agents;
  let first;
  try {
    [agents, first] = await Promise.all([api("GET", "/agents"), api("GET", `/conversations?limit=${PAGE}`)]);
  } catch (err) {
    replace(main, h("h1", {}, "Conversations"), errorBox(err));
    return;
  }
  const wanted = query.get("agent");
  // Checked on submit with a message of its own (the browser's bubble says less).
  const input = h("textarea", { id: "new-message", name: "message", rows: "3", "aria-required": "true" });
  const list = h("ul", { class: "conversations card", "aria-label": "Recent conversations" });
  const more = h("div", { class: "more" });
  const recent = h("section", { "aria-labelledby": "recent-title" },
    h("h2", { id: "recent-title" }, "Recent"), list, more);
  let next = null;
  const show = (page) => {
    list.append(...page.conversations.map(item));
    next = page.next_before;
    if (next === null || next === undefined) {
      replace(more, list.children.length ? null : h("p", {}, "No conversations yet."));
      return;
    }
    const button = h("button", { type: "button" }, "Show older conversations");
    button.addEventListener("click", async () => {
      button.disabled = true;
      try {
        const page = await api("GET", `/conversations?limit=${PAGE}&before=${next}`);
        const focusAt = list.children.length;
        show(page);
        // Keyboard users land on the first conversation that came in.
        list.children[focusAt]?.querySelector("a")?.focus();
        announce(`${page.conversations.length} older conversation${page.conversations.length === 1 ? "" : "s"} shown.`);
      } catch (err) {
        replace(more, errorBox(err), button);
        button.disabled = false;
      }
    });
    replace(more, button);
  };
  show(first);
  replace(main, h("h1", {}, "Conversations"), newConversation(agents.agents, wanted, input), recent);
  pageTitle(main, "Conversations");
  if (wanted) input.focus();
}

/** One conversation: its first message as a link, its agent, runs, latest state and activity. */
function item(c) {
  return h("li", { class: "conversation" },
    h("h3", {}, h("a", { href: `#/conversations/${encodeURIComponent(c.id)}` }, c.title || c.id)),
    h("p", { class: "muted" }, `${c.agent} · ${c.runs} run${c.runs === 1 ? "" : "s"} · `,
      h("span", { class: `state state-${c.state}` }, c.state.replace("_", " ")),
      " · last activity ", whenView(c.updated_at)));
}

/** Starts a conversation: the agent to talk to and the first message, posted as its first run. */
function newConversation(agents, wanted, input) {
  const select = h("select", { id: "new-agent", name: "agent", required: true },
    agents.map((a) => h("option", { value: a.id, selected: a.id === wanted }, a.id)));
  const problem = h("div", { class: "outcome" });
  const form = h("form", { class: "card", "aria-labelledby": "new-conversation-title" },
    h("h2", { id: "new-conversation-title" }, "New conversation"),
    h("label", { for: "new-agent" }, "Agent"), select,
    h("label", { for: "new-message" }, "Message"), input,
    problem,
    h("button", { type: "submit", class: "primary" }, "Start"));
  if (agents.length === 0) {
    form.append(h("p", { class: "hint" }, "The server has no agents yet; create one on the ",
      h("a", { href: "#/agents" }, "Agents page"), "."));
  }
  input.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); form.requestSubmit(); }
  });
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    replace(problem);
    if (!input.value.trim()) {
      replace(problem, h("p", { class: "error", role: "alert" }, "Message: write the first message to send."));
      input.focus();
      return;
    }
    try {
      const run = await api("POST", "/runs", { agent: select.value, input: input.value });
      location.hash = `#/conversations/${encodeURIComponent(run.conversation)}`;
    } catch (err) {
      replace(problem, errorBox(err));
    }
  });
  return form;
}
