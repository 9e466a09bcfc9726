// The Tools tab's overview: every tool the agent's model sees (`GET /v2/agents/{id}/tools`),
// grouped by where it comes from, each with what happens when the model calls it (it runs, asks
// a person first, or is denied) and whether it only reads.

import { api } from "./api.js";
import { h, replace, errorBox } from "./dom.js";
import { renderMarkdown } from "./markdown.js";

const GROUPS = [
  { source: "platform", title: "Platform", hint: "Built-in platform tools, switched below." },
  { source: "bundle", title: "Bundles", hint: "Library tools the agent loads (set with the API or the configuration file)." },
  { source: "planning", title: "Planning", hint: "The to-do list every agent keeps." },
  { source: "connector", title: "MCP servers", hint: "The connectors' tools chosen below." },
  { source: "knowledge", title: "Knowledge search", hint: "Searches the knowledge bases attached below." },
];

const PERMISSION = {
  allow: ["Runs", "perm-allow"],
  ask: ["Asks first", "perm-ask"],
  deny: ["Denied", "perm-deny"],
};

/**
 * The overview section for agent `id`; `section.refresh()` reads the tools again (after a
 * setting changed).
 */
export function toolsOverview(id) {
  const body = h("div", { class: "overview-body" }, h("p", { class: "muted" }, "Loading…"));
  const section = h("section", { class: "tools-section", id: "model-tools", "aria-labelledby": "model-tools-title" },
    h("h3", { id: "model-tools-title" }, "Tools the model sees"),
    body);
  section.refresh = async () => {
    let listing;
    try {
      listing = await api("GET", `/agents/${encodeURIComponent(id)}/tools`);
    } catch (err) {
      replace(body, errorBox(err));
      return;
    }
    replace(body, ...render(listing));
  };
  return section;
}

function render(listing) {
  const asks = listing.tools.filter((t) => t.permission === "ask").length;
  const denied = listing.tools.filter((t) => t.permission === "deny").length;
  const n = listing.tools.length;
  const counts = [`${n} tool${n === 1 ? "" : "s"}`];
  if (asks) counts.push(`${asks} ask${asks === 1 ? "s" : ""} a person first`);
  if (denied) counts.push(`${denied} denied`);
  const out = [h("p", { class: "hint", id: "model-tools-count" },
    `Version ${listing.version} gives the model ${counts.join(", ")}. `,
    "“Runs”: it runs when the model calls it; “Asks first”: the run waits for a person's approval; “Denied”: it never runs.")];
  for (const group of GROUPS) {
    const tools = listing.tools.filter((t) => t.source === group.source);
    if (!tools.length) continue;
    const titleId = `model-tools-${group.source}`;
    out.push(h("div", { class: "tool-group" },
      h("h4", { id: titleId }, group.title, h("span", { class: "muted" }, ` (${tools.length})`)),
      h("p", { class: "hint" }, group.hint),
      h("ul", { class: "model-tools", "aria-labelledby": titleId }, tools.map(toolItem))));
  }
  if (listing.unlisted_connectors.length) {
    out.push(h("div", { class: "tool-group" },
      h("p", { class: "error" }, "Not counted, because their tools could not be listed now:"),
      h("ul", { class: "unlisted" }, listing.unlisted_connectors.map((c) =>
        h("li", {}, h("strong", {}, c.name), `: ${c.error}`)))));
  }
  return out;
}

function toolItem(tool) {
  const [word, cls] = PERMISSION[tool.permission] ?? [tool.permission, ""];
  const reads = tool.read_only === true ? h("span", { class: "badge" }, "Read-only")
    : tool.read_only === false ? h("span", { class: "badge writes" }, "Changes things") : null;
  return h("li", { class: "model-tool" },
    h("div", { class: "model-tool-head" },
      h("code", { class: "tool-name" }, tool.name),
      // A single built-in loaded by its own name needs no second mention.
      tool.origin && tool.origin !== tool.name ? h("span", { class: "badge from" }, tool.origin) : null,
      h("span", { class: `badge ${cls}` }, word),
      reads),
    tool.description
      ? h("details", { class: "about-tool" },
        h("summary", {}, "What ", h("code", {}, tool.name), " does"),
        h("div", { class: "markdown" }, renderMarkdown(tool.description)))
      : null);
}
