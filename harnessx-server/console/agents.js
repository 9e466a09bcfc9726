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
      : h("p", {}, "The server has no agents; add them to its config file."));
  pageTitle(main, "Agents");
}
