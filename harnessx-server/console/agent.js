// An agent's page: its settings (model, instructions) and its Tools tab — every tool the model
// sees, grouped by where it comes from with its permission; then the platform built-in tools,
// each with an independent switch, directly above the connectors, then the knowledge bases
// attached to it.

import { api, ApiError } from "./api.js";
import { h, replace, pageTitle, errorBox, announce } from "./dom.js";
import { renderMarkdown } from "./markdown.js";
import { toolsOverview } from "./tools.js";

const TABS = [
  { id: "settings", label: "Settings" },
  { id: "tools", label: "Tools" },
];

export async function agentPage(main, id, tab) {
  replace(main, h("h1", {}, id), h("p", { class: "muted" }, "Loading…"));
  let agent;
  try {
    agent = await api("GET", `/agents/${encodeURIComponent(id)}`);
  } catch (err) {
    replace(main, h("h1", {}, id), errorBox(err));
    pageTitle(main, id);
    return;
  }
  const base = `#/agents/${encodeURIComponent(id)}`;
  const panels = {
    settings: settingsPanel(agent, (next) => { agent = next; }),
    tools: await toolsPanel(agent),
  };
  const buttons = TABS.map((t) => h("button", {
    type: "button", role: "tab", id: `tab-${t.id}`, "aria-controls": `panel-${t.id}`,
  }, t.label));
  const select = (which, focus) => {
    TABS.forEach((t, i) => {
      const on = t.id === which;
      buttons[i].setAttribute("aria-selected", String(on));
      buttons[i].tabIndex = on ? 0 : -1;
      panels[t.id].hidden = !on;
    });
    // A page the person already left (it finished loading late) must not take the address back.
    if (main.isConnected) history.replaceState(null, "", which === "settings" ? base : `${base}/${which}`);
    if (focus) buttons[TABS.findIndex((t) => t.id === which)].focus();
  };
  buttons.forEach((b, i) => {
    b.addEventListener("click", () => select(TABS[i].id, false));
    b.addEventListener("keydown", (e) => {
      const step = { ArrowRight: 1, ArrowLeft: -1 }[e.key];
      let next = null;
      if (step) next = (i + step + TABS.length) % TABS.length;
      if (e.key === "Home") next = 0;
      if (e.key === "End") next = TABS.length - 1;
      if (next === null) return;
      e.preventDefault();
      select(TABS[next].id, true);
    });
  });
  replace(main,
    h("p", { class: "crumbs" }, h("a", { href: "#/agents" }, "Agents"), " / ", id),
    h("h1", {}, id),
    h("p", {}, h("a", { href: `#/conversations?agent=${encodeURIComponent(id)}` },
      `Start a conversation with ${id}`)),
    h("div", { role: "tablist", "aria-label": "Agent" }, buttons),
    panels.settings, panels.tools);
  select(TABS.some((t) => t.id === tab) ? tab : "settings", false);
  pageTitle(main, `${id} — ${tab === "tools" ? "Tools" : "Settings"}`);
}

function settingsPanel(agent, changed) {
  const model = h("input", { id: "agent-model", name: "model", value: agent.model, required: true, autocomplete: "off" });
  const instructions = h("textarea", { id: "agent-instructions", name: "instructions", rows: "6" });
  instructions.value = agent.instructions ?? "";
  const outcome = h("div", { class: "outcome" });
  const form = h("form", { class: "card" },
    h("label", { for: "agent-model" }, "Model"),
    h("p", { class: "hint", id: "model-hint" }, "script, or provider:model such as openai:gpt-4o-mini."),
    model,
    h("label", { for: "agent-instructions" }, "Instructions"),
    instructions,
    outcome,
    h("button", { type: "submit", class: "primary" }, "Save settings"));
  model.setAttribute("aria-describedby", "model-hint");
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    replace(outcome);
    const text = instructions.value.trim();
    try {
      const next = await api("PATCH", `/agents/${encodeURIComponent(agent.id)}`, {
        model: model.value.trim(),
        instructions: text === "" ? null : text,
      });
      changed(next);
      replace(outcome, h("p", { class: "ok", role: "status" },
        `Saved. The agent's next run uses these settings (version ${next.version}).`));
    } catch (err) {
      replace(outcome, errorBox(err));
    }
  });
  const removed = h("div", { class: "outcome" });
  const remove = h("button", { type: "button", class: "danger" }, "Delete agent");
  remove.addEventListener("click", async () => {
    replace(removed);
    if (!confirm(`Delete ${agent.id}? New runs of it are refused; runs already started finish.`)) return;
    try {
      await api("DELETE", `/agents/${encodeURIComponent(agent.id)}`);
      location.hash = "#/agents";
    } catch (err) {
      replace(removed, errorBox(err));
    }
  });
  return h("section", { role: "tabpanel", id: "panel-settings", "aria-labelledby": "tab-settings", tabindex: "0" },
    h("h2", {}, "Settings"), form, h("div", { class: "card" }, removed, remove));
}

/** A `role="switch"` toggle labelled `label`, calling `change(on)` (which may throw to refuse). */
export function toggle(label, on, change) {
  const state = h("span", { class: "switch-state", "aria-hidden": "true" }, on ? "On" : "Off");
  const button = h("button", {
    type: "button", role: "switch", class: "switch", "aria-checked": String(on), "aria-label": label,
  }, h("span", { class: "switch-track", "aria-hidden": "true" }, h("span", { class: "switch-knob" })), state);
  button.addEventListener("click", async () => {
    if (button.getAttribute("aria-busy") === "true") return;
    const next = button.getAttribute("aria-checked") !== "true";
    button.setAttribute("aria-busy", "true");
    try {
      const confirmed = await change(next);
      const value = typeof confirmed === "boolean" ? confirmed : next;
      button.setAttribute("aria-checked", String(value));
      state.textContent = value ? "On" : "Off";
    } finally {
      button.removeAttribute("aria-busy");
    }
  });
  return button;
}

async function toolsPanel(agent) {
  const problem = h("div", { class: "outcome" });
  const path = `/agents/${encodeURIComponent(agent.id)}`;
  const overview = toolsOverview(agent.id);
  // A setting saved below changes what the model sees.
  const changed = () => overview.refresh();
  // The three listings load at once.
  const [, connectors, knowledge] = await Promise.all([
    overview.refresh(),
    connectorsSection(agent, problem, changed),
    knowledgeSection(agent, problem, changed),
  ]);
  const builtin = agent.builtin_tools.map((tool) => h("li", { class: "tool card" },
    h("div", { class: "tool-text" },
      h("h4", {}, tool.name),
      h("p", { class: "key" }, "Tool key ", h("code", {}, tool.key)),
      h("div", { class: "description markdown" }, renderMarkdown(tool.description))),
    toggle(`Enable: ${tool.name}`, tool.enabled, async (on) => {
      replace(problem);
      try {
        const next = await api("PATCH", path, { builtin_tools: { [tool.key]: on } });
        const now = next.builtin_tools.find((t) => t.key === tool.key)?.enabled ?? on;
        announce(`${tool.name} ${now ? "enabled" : "disabled"} for ${agent.id}; it applies to the next run.`);
        changed();
        return now;
      } catch (err) {
        replace(problem, errorBox(err));
        return !on;
      }
    })));
  return h("section", { role: "tabpanel", id: "panel-tools", "aria-labelledby": "tab-tools", tabindex: "0" },
    h("h2", { class: "visually-hidden" }, "Tools"),
    problem,
    overview,
    h("section", { class: "tools-section", id: "builtin-tools", "aria-labelledby": "builtin-tools-title" },
      h("h3", { id: "builtin-tools-title" }, "Built-in tools"),
      h("p", { class: "hint" }, "Platform tools. Each switch changes this agent only, from its next run."),
      h("ul", { class: "tools", "aria-label": "Built-in tools" }, builtin)),
    connectors,
    knowledge);
}

/**
 * The stored knowledge bases (`GET /v2/knowledge`), each with a checkbox: attaching the first
 * gives the agent `knowledge_search`, detaching the last takes it away.
 */
async function knowledgeSection(agent, problem, changed) {
  const section = h("section", { class: "tools-section", id: "knowledge-bases", "aria-labelledby": "knowledge-bases-title" },
    h("h3", { id: "knowledge-bases-title" }, "Knowledge bases"));
  let list;
  try {
    list = await api("GET", "/knowledge");
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) {
      section.append(h("p", {}, "This server keeps no knowledge bases."));
    } else {
      section.append(errorBox(err));
    }
    return section;
  }
  section.append(h("p", { class: "hint" }, "Attach knowledge bases to give this agent the ",
    h("code", {}, "knowledge_search"), " tool (read-only, it never asks); with none attached the tool goes away."));
  if (list.knowledge_bases.length === 0) {
    section.append(h("p", {}, "The server has no knowledge bases; create one on the ",
      h("a", { href: "#/knowledge" }, "Knowledge page"), "."));
    return section;
  }
  const attached = new Set(agent.knowledge_bases ?? []);
  const boxes = [];
  const items = list.knowledge_bases.map((kb) => {
    const id = `kb-${kb.name}`.replace(/[^A-Za-z0-9_-]/g, "_");
    const box = h("input", { type: "checkbox", id, name: id, checked: attached.has(kb.name), "aria-describedby": `${id}-about` });
    boxes.push([box, kb.name]);
    return h("li", { class: "connector-tool" },
      box,
      h("label", { for: id }, kb.name),
      h("p", { class: "description", id: `${id}-about` },
        `${kb.document_count} document${kb.document_count === 1 ? "" : "s"}${kb.description ? ` — ${kb.description}` : ""}`));
  });
  const form = h("form", { "aria-label": "Knowledge bases" },
    h("ul", { class: "connector-tools card", "aria-label": "Knowledge bases to attach" }, items),
    h("button", { type: "submit", class: "primary" }, "Save knowledge bases"));
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    replace(problem);
    const chosen = boxes.filter(([box]) => box.checked).map(([, name]) => name);
    try {
      await api("PATCH", `/agents/${encodeURIComponent(agent.id)}`, { knowledge_bases: chosen });
      announce(`Knowledge bases saved for ${agent.id}; they apply to the next run.`);
      replace(problem, h("p", { class: "ok", role: "status" }, "Knowledge bases saved."));
      changed();
    } catch (err) {
      replace(problem, errorBox(err));
    }
  });
  section.append(form);
  return section;
}

/**
 * The server's connectors with their tools (`GET /v2/connectors`). A server without that
 * route gives only the connectors this agent already uses, with the tools chosen from each.
 */
async function connectorCatalog(agent) {
  try {
    const list = await api("GET", "/connectors");
    return { complete: true, connectors: list.connectors };
  } catch (err) {
    if (!(err instanceof ApiError) || err.status !== 404) throw err;
    return {
      complete: false,
      connectors: agent.connectors.map((c) => ({
        name: c.name,
        tools: (c.tools ?? []).map((name) => ({ name })),
      })),
    };
  }
}

async function connectorsSection(agent, problem, changed) {
  const section = h("section", { class: "tools-section", id: "connectors", "aria-labelledby": "connectors-title" },
    h("h3", { id: "connectors-title" }, "Connectors"));
  let catalog;
  try {
    catalog = await connectorCatalog(agent);
  } catch (err) {
    section.append(errorBox(err));
    return section;
  }
  section.append(h("p", { class: "hint" },
    "MCP servers. Choose the tools this agent may use; a tool the server does not mark ",
    h("code", {}, "readOnlyHint: true"), " asks before it runs."));
  if (!catalog.complete) {
    section.append(h("p", { class: "hint" },
      "This server does not list its connectors' tools, so only the tools this agent already uses are shown."));
  }
  if (catalog.connectors.length === 0) {
    section.append(h("p", {}, catalog.complete
      ? "The server has no connectors; add them to its config file."
      : "This agent uses no connectors."));
    return section;
  }
  const chosen = new Map(agent.connectors.map((c) => [c.name, c.tools ?? null]));
  const list = h("ul", { class: "connectors", "aria-label": "Connectors" });
  const boxes = new Map();
  for (const connector of catalog.connectors) {
    const picked = chosen.get(connector.name);
    const items = connector.tools.map((tool) => {
      const id = `tool-${connector.name}-${tool.name}`.replace(/[^A-Za-z0-9_-]/g, "_");
      // `read_only` comes from the server's readOnlyHint; unknown, the console claims nothing.
      const asks = tool.read_only === false;
      const box = h("input", {
        type: "checkbox", id, name: id,
        checked: chosen.has(connector.name) && (picked === null || picked.includes(tool.name)),
        "aria-describedby": asks ? `${id}-asks` : undefined,
      });
      boxes.set(box, { connector: connector.name, tool: tool.name });
      return h("li", { class: "connector-tool" },
        box,
        h("label", { for: id }, h("code", {}, `mcp_${connector.name}_${tool.name}`)),
        asks ? h("span", { class: "badge asks", id: `${id}-asks` }, "Asks before running") : null,
        tool.read_only === true ? h("span", { class: "badge" }, "Read-only") : null,
        tool.description ? h("p", { class: "description" }, tool.description) : null);
    });
    list.append(h("li", { class: "connector card" },
      h("h4", {}, connector.name),
      picked === null && !catalog.complete ? h("p", {}, "All of this server's tools.") : null,
      connector.error ? h("p", { class: "error" }, `Its tools could not be listed: ${connector.error}`) : null,
      items.length ? h("ul", { class: "connector-tools", "aria-label": `Tools of ${connector.name}` }, items) : null));
  }
  const save = h("button", { type: "submit", class: "primary" }, "Save connector tools");
  const form = h("form", { "aria-label": "Connector tools" }, list, save);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    replace(problem);
    const per = new Map();
    for (const [box, { connector, tool }] of boxes) {
      if (!per.has(connector)) per.set(connector, []);
      if (box.checked) per.get(connector).push(tool);
    }
    const connectors = [];
    for (const connector of catalog.connectors) {
      const tools = per.get(connector.name) ?? [];
      if (connector.tools.length === 0 && chosen.has(connector.name)) {
        connectors.push({ name: connector.name, tools: chosen.get(connector.name) });
      } else if (tools.length) {
        connectors.push({ name: connector.name, tools });
      }
    }
    try {
      await api("PATCH", `/agents/${encodeURIComponent(agent.id)}`, { connectors });
      announce(`Connector tools saved for ${agent.id}; they apply to the next run.`);
      replace(problem, h("p", { class: "ok", role: "status" }, "Connector tools saved."));
      changed();
    } catch (err) {
      replace(problem, errorBox(err));
    }
  });
  section.append(form);
  return section;
}
