// The Knowledge page: the platform's stored knowledge bases (GET /v2/knowledge) and one base's
// page with its documents. A base is created here, a text or Markdown file uploaded into it
// (read in the browser, sent as JSON to POST /v2/knowledge/{name}/documents), a document or the
// whole base deleted. Agents attach bases on their Tools tab.

import { api } from "./api.js";
import { h, replace, pageTitle, errorBox, announce } from "./dom.js";

/** The largest document the server takes: 1 MiB of text. */
const MAX_DOCUMENT_BYTES = 1024 * 1024;

export async function knowledgePage(main) {
  replace(main, h("h1", {}, "Knowledge"), h("p", { class: "muted" }, "Loading…"));
  pageTitle(main, "Knowledge");
  let list;
  try {
    list = await api("GET", "/knowledge");
  } catch (err) {
    replace(main, h("h1", {}, "Knowledge"), errorBox(err));
    return;
  }
  const items = list.knowledge_bases.map((kb) => h("li", { class: "card" },
    h("h2", {}, h("a", { href: `#/knowledge/${encodeURIComponent(kb.name)}` }, kb.name)),
    h("dl", { class: "facts" },
      h("dt", {}, "Documents"), h("dd", {}, String(kb.document_count)),
      h("dt", {}, "Attached to"), h("dd", {}, kb.agents.length ? kb.agents.join(", ") : "no agent")),
    kb.description ? h("p", { class: "instructions" }, kb.description) : null));
  replace(main,
    h("h1", {}, "Knowledge"),
    h("p", { class: "hint" }, "Knowledge bases hold text and Markdown documents. An agent with one attached (on its Tools tab) gets the ",
      h("code", {}, "knowledge_search"), " tool, which searches them."),
    items.length ? h("ul", { class: "cards", "aria-label": "Knowledge bases" }, items)
      : h("p", {}, "The server has no knowledge bases yet; create one below."),
    newBaseForm());
  pageTitle(main, "Knowledge");
}

/** Creates a knowledge base and opens its page. */
function newBaseForm() {
  const name = h("input", { id: "new-kb-name", name: "name", required: true, autocomplete: "off", "aria-describedby": "new-kb-name-hint" });
  const description = h("textarea", { id: "new-kb-description", name: "description", rows: "2" });
  const outcome = h("div", { class: "outcome" });
  const form = h("form", { class: "card", "aria-label": "New knowledge base" },
    h("h2", {}, "New knowledge base"),
    h("label", { for: "new-kb-name" }, "Name"),
    h("p", { class: "hint", id: "new-kb-name-hint" }, "1 to 64 letters, digits, _ or -."),
    name,
    h("label", { for: "new-kb-description" }, "Description"),
    description,
    outcome,
    h("button", { type: "submit", class: "primary" }, "Create knowledge base"));
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    replace(outcome);
    const text = description.value.trim();
    try {
      const kb = await api("POST", "/knowledge", {
        name: name.value.trim(),
        description: text === "" ? null : text,
      });
      location.hash = `#/knowledge/${encodeURIComponent(kb.name)}`;
    } catch (err) {
      replace(outcome, errorBox(err));
    }
  });
  return form;
}

function size(bytes) {
  if (bytes < 1024) return `${bytes} bytes`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(2)} MiB`;
}

/** One knowledge base: its documents, an upload form, and deleting it. `notice` is said first. */
export async function knowledgeBasePage(main, name, notice) {
  replace(main, h("h1", {}, name), h("p", { class: "muted" }, "Loading…"));
  let kb;
  try {
    kb = await api("GET", `/knowledge/${encodeURIComponent(name)}`);
  } catch (err) {
    replace(main, h("h1", {}, name), errorBox(err));
    pageTitle(main, name);
    return;
  }
  const path = `/knowledge/${encodeURIComponent(kb.name)}`;
  const reload = (text) => knowledgeBasePage(main, name, text);
  const problem = h("div", { class: "outcome" });
  const documents = kb.documents.map((doc) => {
    const remove = h("button", { type: "button", class: "danger", "aria-label": `Delete document ${doc.title}` }, "Delete");
    remove.addEventListener("click", async () => {
      replace(problem);
      if (!confirm(`Delete ${doc.title} from ${kb.name}? Runs no longer find it.`)) return;
      try {
        await api("DELETE", `${path}/documents/${doc.id}`);
        announce(`${doc.title} deleted.`);
        await reload(`Deleted ${doc.title}.`);
      } catch (err) {
        replace(problem, errorBox(err));
      }
    });
    return h("li", { class: "tool card" },
      h("div", { class: "tool-text" },
        h("h3", {}, doc.title),
        h("p", { class: "hint" }, `${doc.format === "markdown" ? "Markdown" : "Text"}, ${size(doc.bytes)}, added ${new Date(doc.created_ms).toLocaleString()}`)),
      remove);
  });
  const removeBase = h("button", { type: "button", class: "danger" }, "Delete knowledge base");
  const removed = h("div", { class: "outcome" });
  removeBase.addEventListener("click", async () => {
    replace(removed);
    if (!confirm(`Delete ${kb.name} and its ${kb.document_count} documents?`)) return;
    try {
      await api("DELETE", path);
      location.hash = "#/knowledge";
    } catch (err) {
      replace(removed, errorBox(err));
    }
  });
  replace(main,
    h("p", { class: "crumbs" }, h("a", { href: "#/knowledge" }, "Knowledge"), " / ", kb.name),
    h("h1", {}, kb.name),
    kb.description ? h("p", { class: "instructions" }, kb.description) : null,
    h("p", {}, kb.agents.length ? `Attached to ${kb.agents.join(", ")}.` : "Attached to no agent; attach it on an agent's Tools tab."),
    notice ? h("p", { class: "ok", role: "status" }, notice) : null,
    h("section", { "aria-labelledby": "documents-title" },
      h("h2", { id: "documents-title" }, "Documents"),
      problem,
      documents.length ? h("ul", { class: "cards", "aria-label": "Documents" }, documents)
        : h("p", {}, "This knowledge base has no documents yet; upload one below.")),
    uploadForm(path, reload),
    h("div", { class: "card" }, removed, removeBase));
  pageTitle(main, kb.name);
}

/** Reads a .txt or .md file and adds it as a document. */
function uploadForm(path, reload) {
  const file = h("input", { type: "file", id: "kb-file", name: "file", required: true, accept: ".txt,.md,.markdown,text/plain,text/markdown", "aria-describedby": "kb-file-hint" });
  const title = h("input", { id: "kb-title", name: "title", autocomplete: "off", "aria-describedby": "kb-title-hint" });
  const format = h("select", { id: "kb-format", name: "format" },
    h("option", { value: "text" }, "Text"),
    h("option", { value: "markdown" }, "Markdown"));
  const outcome = h("div", { class: "outcome" });
  file.addEventListener("change", () => {
    const chosen = file.files[0];
    if (!chosen) return;
    format.value = /\.(md|markdown)$/i.test(chosen.name) ? "markdown" : "text";
    if (title.value.trim() === "") title.value = chosen.name;
  });
  const form = h("form", { class: "card", "aria-label": "Upload a document" },
    h("h2", {}, "Upload a document"),
    h("label", { for: "kb-file" }, "File"),
    h("p", { class: "hint", id: "kb-file-hint" }, "A text (.txt) or Markdown (.md) file of at most 1 MiB."),
    file,
    h("label", { for: "kb-title" }, "Title"),
    h("p", { class: "hint", id: "kb-title-hint" }, "The file's name unless you give another."),
    title,
    h("label", { for: "kb-format" }, "Format"),
    format,
    outcome,
    h("button", { type: "submit", class: "primary" }, "Upload"));
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    replace(outcome);
    const chosen = file.files[0];
    if (!chosen) {
      replace(outcome, errorBox(new Error("Choose a file to upload first.")));
      return;
    }
    if (chosen.size > MAX_DOCUMENT_BYTES) {
      replace(outcome, errorBox(new Error(
        `${chosen.name} is ${size(chosen.size)}; a document may be at most 1 MiB. Split it into smaller files.`)));
      return;
    }
    try {
      const text = await chosen.text();
      const doc = await api("POST", `${path}/documents`, {
        title: title.value.trim() || chosen.name,
        text,
        format: format.value,
      });
      announce(`${doc.title} uploaded.`);
      await reload(`Uploaded ${doc.title}.`);
    } catch (err) {
      replace(outcome, errorBox(err));
    }
  });
  return form;
}
