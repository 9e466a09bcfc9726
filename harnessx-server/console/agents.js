// The agents list.

import { api } from "./api.js";
import { h, replace, pageTitle, errorBox } from "./dom.js";

export async function agentsPage(main) {
  replace(main, h("h1", {}, "Agents"), h("p", { class: "muted" }, "Loading…"));
  pageTitle(main, "Agents");
  let list;
  try {
    list = await api("GET", "/agents");
  } catch (err) {
    replace(main, h("h1", {}, "Agents"), errorBox(err));
    return;
  }
  const items = list.agents.map((agent) => {
    const on = agent.builtin_tools.filter((t) => t.enabled).map((t) => t.key);
    return h("li", { class: "card" },
      h("h2", {}, h("a", { href: `#/agents/${encodeURIComponent(agent.id)}` }, agent.id)),
      h("dl", { class: "facts" },
        h("dt", {}, "Model"), h("dd", {}, h("code", {}, agent.model)),
        h("dt", {}, "Built-in tools"), h("dd", {}, on.length ? on.join(", ") : "none"),
        h("dt", {}, "Connectors"), h("dd", {}, agent.connectors.length
          ? agent.connectors.map((c) => c.name).join(", ") : "none")),
      agent.instructions ? h("p", { class: "instructions" }, agent.instructions) : null);
  });
  replace(main,
    h("h1", {}, "Agents"),
    items.length ? h("ul", { class: "cards", "aria-label": "Agents" }, items)
      : h("p", {}, "The server has no agents yet; create one below."),
    newAgentForm());
  pageTitle(main, "Agents");
}

/** Creates an agent (version 1, Ask user on) and opens its page. */
function newAgentForm() {
  const id = h("input", { id: "new-agent-id", name: "id", required: true, autocomplete: "off", "aria-describedby": "new-agent-id-hint" });
  const model = h("input", { id: "new-agent-model", name: "model", required: true, autocomplete: "off", value: "script", "aria-describedby": "new-agent-model-hint" });
  const instructions = h("textarea", { id: "new-agent-instructions", name: "instructions", rows: "3" });
  const outcome = h("div", { class: "outcome" });
  const form = h("form", { class: "card", "aria-label": "New agent" },
    h("h2", {}, "New agent"),
    h("label", { for: "new-agent-id" }, "Name"),
    h("p", { class: "hint", id: "new-agent-id-hint" }, "1 to 64 letters, digits, _ or -."),
    id,
    h("label", { for: "new-agent-model" }, "Model"),
    h("p", { class: "hint", id: "new-agent-model-hint" }, "script, or provider:model such as openai:gpt-4o-mini."),
    model,
    h("label", { for: "new-agent-instructions" }, "Instructions"),
    instructions,
    outcome,
    h("button", { type: "submit", class: "primary" }, "Create agent"));
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    replace(outcome);
    const text = instructions.value.trim();
    try {
      const agent = await api("POST", "/agents", {
        id: id.value.trim(),
        model: model.value.trim(),
        instructions: text === "" ? null : text,
      });
      location.hash = `#/agents/${encodeURIComponent(agent.id)}`;
    } catch (err) {
      replace(outcome, errorBox(err));
    }
  });
  return form;
}
