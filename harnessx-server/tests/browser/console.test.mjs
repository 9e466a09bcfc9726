// The console in a real browser: Debian's chromium, headless, driven by playwright-core, against
// a real `harnessx serve` on 127.0.0.1 with scripted agents (started by tests/browser.rs, which
// passes its address and key). Controls are found by role and accessible name, as a person with a
// screen reader finds them.
//
// Environment: HARNESSX_URL, HARNESSX_KEY, CHROMIUM (path), SCREENSHOTS (folder), OAUTH_MCP_URL and
// OAUTH_ISSUER (an MCP server behind an OAuth authorization server, both on 127.0.0.1), and
// optionally DOCS_SCREENSHOT (a path to write the Tools tab screenshot shown in the README).

import { test as nodeTest, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, mkdirSync, rmSync, copyFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const BASE = process.env.HARNESSX_URL;
// The same agents on a server whose questions expire after 2 seconds.
const EXPIRY_BASE = process.env.HARNESSX_EXPIRY_URL;
const KEY = process.env.HARNESSX_KEY;
const SHOTS = process.env.SCREENSHOTS;
const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
const OAUTH_MCP_URL = process.env.OAUTH_MCP_URL;
const OAUTH_ISSUER = process.env.OAUTH_ISSUER;
assert.ok(BASE && EXPIRY_BASE && KEY && SHOTS && OAUTH_MCP_URL && OAUTH_ISSUER,
  "HARNESSX_URL, HARNESSX_EXPIRY_URL, HARNESSX_KEY, SCREENSHOTS, OAUTH_MCP_URL and OAUTH_ISSUER must be set");
mkdirSync(SHOTS, { recursive: true });

const WAIT = 20_000;

// The steps build on each other: after one fails the rest fail at once, naming the first.
let firstFailure = null;
function test(name, body) {
  nodeTest(name, async () => {
    if (firstFailure) throw new Error(`not run: the step "${firstFailure}" failed`);
    try {
      await body();
    } catch (err) {
      firstFailure = name;
      await shot(`failed-${name.slice(0, 40).replace(/[^A-Za-z0-9]+/g, "-")}`).catch(() => {});
      throw err;
    }
  });
}
let profile;
let context;
let page;

before(async () => {
  profile = mkdtempSync(join(tmpdir(), "harnessx-console-profile-"));
  context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync",
    ],
    viewport: { width: 1100, height: 900 },
  });
  context.setDefaultTimeout(WAIT);
  page = context.pages()[0] ?? await context.newPage();
  page.on("pageerror", (err) => { throw new Error(`page error: ${err.message}`); });
});

after(async () => {
  await context?.close();
  if (profile) rmSync(profile, { recursive: true, force: true });
});

async function shot(name) {
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

/** The API with the key, outside the page: to check what the console changed. */
async function api(method, path, body) {
  const res = await fetch(`${BASE}/v2${path}`, {
    method,
    headers: { Authorization: `Bearer ${KEY}`, ...(body ? { "Content-Type": "application/json" } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  assert.ok(res.ok, `${method} ${path}: ${res.status} ${await res.clone().text()}`);
  return res.json();
}

/** The status of an API call with the key, outside the page. */
async function apiStatus(method, path) {
  const res = await fetch(`${BASE}/v2${path}`, { method, headers: { Authorization: `Bearer ${KEY}` } });
  return res.status;
}

async function noHorizontalOverflow() {
  const { scroll, width } = await page.evaluate(() => ({
    scroll: document.documentElement.scrollWidth, width: document.documentElement.clientWidth,
  }));
  assert.ok(scroll <= width, `the page is ${scroll} px wide in a ${width} px viewport`);
}

async function startConversation(agent, message, base = BASE) {
  await page.goto(`${base}/console/#/conversations?agent=${agent}`);
  await page.getByRole("combobox", { name: "Agent" }).selectOption(agent);
  await page.getByRole("textbox", { name: "Message" }).fill(message);
  await page.getByRole("button", { name: "Start" }).click();
  await page.getByRole("heading", { level: 1, name: "Conversation" }).waitFor();
  await page.getByRole("log", { name: "Transcript" }).getByText(message).waitFor();
}

const transcript = () => page.getByRole("log", { name: "Transcript" });
/** The latest approval card: its group's name names the call, then what was decided. */
const approvalCard = () => transcript().locator("li.approval").last();
/** The assistant's replies in the transcript (not the tool results shown beside them). */
const replies = () => transcript().locator(".msg.assistant .text");

// Roles a person operates; each must have an accessible name (the label a screen reader says).
const CONTROL_ROLES = new Set([
  "button", "link", "textbox", "searchbox", "checkbox", "radio", "switch", "combobox", "listbox",
  "tab", "slider", "spinbutton", "menuitem", "DisclosureTriangle",
]);

/** The controls on the page without an accessible name, as Chromium's accessibility tree has
 * them (the names a screen reader announces), each as `role <tag id>`. */
async function unlabelledControls() {
  const cdp = await context.newCDPSession(page);
  try {
    const { nodes } = await cdp.send("Accessibility.getFullAXTree");
    const controls = nodes.filter((n) => !n.ignored && CONTROL_ROLES.has(n.role?.value));
    const unnamed = [];
    for (const n of controls.filter((c) => !String(c.name?.value ?? "").trim())) {
      let what = "";
      if (n.backendDOMNodeId) {
        const { node } = await cdp.send("DOM.describeNode", { backendNodeId: n.backendDOMNodeId });
        const attrs = node.attributes ?? [];
        const id = attrs[attrs.indexOf("id") + 1];
        what = ` <${node.localName}${attrs.includes("id") ? `#${id}` : ""}>`;
      }
      unnamed.push(`${n.role.value}${what}`);
    }
    return { count: controls.length, unnamed };
  } finally {
    await cdp.detach();
  }
}

/** Every control on the page has a label; `where` names the page in the failure. */
async function everyControlIsLabelled(where) {
  const { count, unnamed } = await unlabelledControls();
  assert.ok(count > 0, `${where}: no controls found in the accessibility tree`);
  assert.deepEqual(unnamed, [], `${where}: controls without a label`);
}

/** Presses Tab until `target` has the keyboard focus (at most 60 times); fails naming where the
 * focus went instead. */
async function tabTo(target, what) {
  await target.waitFor();
  for (let i = 0; i < 60; i++) {
    if (await target.evaluate((el) => el === document.activeElement)) return;
    await page.keyboard.press("Tab");
  }
  const seen = await page.evaluate(() => document.activeElement?.outerHTML.slice(0, 160));
  assert.fail(`Tab never reached ${what}; the focus is on ${seen}`);
}

test("without a key only the sign-in form shows, and the API refuses", async () => {
  await page.goto(`${BASE}/console/`);
  await page.getByRole("heading", { level: 1, name: "Sign in" }).waitFor();
  assert.equal(await page.getByRole("navigation", { name: "Console" }).count(), 0);
  const status = await page.evaluate(async () => (await fetch("/v2/agents")).status);
  assert.equal(status, 401);
  await shot("sign-in");
  await everyControlIsLabelled("sign-in");
  // The check can fail: an empty button added to the page is reported, by role and id.
  await page.evaluate(() => {
    const probe = document.createElement("button");
    probe.id = "unlabelled-probe";
    document.body.append(probe);
  });
  assert.deepEqual((await unlabelledControls()).unnamed, ["button <button#unlabelled-probe>"]);
  await page.evaluate(() => document.getElementById("unlabelled-probe").remove());

  await page.getByLabel("API key").fill("not-the-key-0123456789");
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("alert").filter({ hasText: "The server refused this key" }).waitFor();
  assert.equal(await page.evaluate(() => sessionStorage.getItem("harnessx.apiKey")), null);

  await page.getByLabel("API key").fill(KEY);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { level: 1, name: "Agents" }).waitFor();
});

test("the agents list and an agent page with its model and instructions", async () => {
  const list = page.getByRole("list", { name: "Agents" });
  for (const name of ["asker", "approver", "toolcheck"]) {
    await list.getByRole("link", { name, exact: true }).waitFor();
  }
  await shot("agents");
  await everyControlIsLabelled("agents");
  await list.getByRole("link", { name: "toolcheck", exact: true }).click();
  await page.getByRole("heading", { level: 1, name: "toolcheck" }).waitFor();
  assert.equal(await page.getByRole("tab", { name: "Settings" }).getAttribute("aria-selected"), "true");
  assert.equal(await page.getByRole("textbox", { name: "Model" }).inputValue(), "script");
  assert.equal(await page.getByRole("textbox", { name: "Instructions" }).inputValue(), "Report your tools.");
  await shot("agent-settings");
  await everyControlIsLabelled("agent settings");

  // Saving the instructions changes this agent through the API.
  await page.getByRole("textbox", { name: "Instructions" }).fill("Report your tools, briefly.");
  await page.getByRole("button", { name: "Save settings" }).click();
  await page.getByRole("status").filter({ hasText: "Saved" }).waitFor();
  assert.equal((await api("GET", "/agents/toolcheck")).instructions, "Report your tools, briefly.");
});

test("the Tools tab: Built-in tools directly above Connectors, ask_user with name, key, description, switch", async () => {
  await page.getByRole("tab", { name: "Tools" }).click();
  const panel = page.getByRole("tabpanel", { name: "Tools" });
  const builtin = panel.getByRole("heading", { name: "Built-in tools" });
  const connectors = panel.getByRole("heading", { name: "Connectors" });
  await builtin.waitFor();
  await connectors.waitFor();
  const [b, c] = [await builtin.boundingBox(), await connectors.boundingBox()];
  assert.ok(b.y + b.height <= c.y, `Built-in tools (y=${b.y}) must sit above Connectors (y=${c.y})`);
  // Directly above: the Connectors section is the next section after Built-in tools.
  const order = await page.evaluate(() => {
    const b = document.getElementById("builtin-tools");
    return { next: b.nextElementSibling?.id, before: !!(b.compareDocumentPosition(document.getElementById("connectors")) & Node.DOCUMENT_POSITION_FOLLOWING) };
  });
  assert.deepEqual(order, { next: "connectors", before: true });

  const tools = panel.getByRole("list", { name: "Built-in tools" });
  await tools.getByRole("heading", { name: "Ask user" }).waitFor();
  await tools.getByText("ask_user", { exact: true }).waitFor();
  const description = await tools.locator(".description").first().textContent();
  assert.match(description, /question/i);
  const toggle = panel.getByRole("switch", { name: "Enable: Ask user" });
  assert.equal(await toggle.getAttribute("aria-checked"), "true", "ask_user is on for a new agent");

  // The connector this agent uses is listed with its tools; tools not read-only ask first.
  await panel.getByRole("heading", { name: "notes" }).waitFor();
  // The whole catalog (GET /v2/connectors): the server's other tools too, unchosen.
  assert.equal(await panel.getByText("only the tools this agent already uses are shown").count(), 0);
  assert.ok(!(await panel.getByRole("checkbox", { name: "mcp_notes_search_nodes" }).isChecked()));
  const marks = await panel.locator(".connector-tool").evaluateAll((items) => Object.fromEntries(items.map((li) => [
    li.querySelector("code").textContent,
    [...li.querySelectorAll(".badge")].map((b) => b.textContent).join(" | "),
  ])));
  assert.equal(marks.mcp_notes_create_entities, "Asks before running");
  assert.equal(marks.mcp_notes_delete_entities, "Asks before running");
  assert.equal(marks.mcp_notes_read_graph, "Read-only");
  assert.equal(marks.mcp_notes_search_nodes, "Read-only");
  assert.equal(Object.keys(marks).length, 9, JSON.stringify(marks));
  // The mark is the checkbox's accessible description.
  const creates = panel.getByRole("checkbox", { name: "mcp_notes_create_entities" });
  const describedBy = await creates.getAttribute("aria-describedby");
  assert.equal(await panel.locator(`#${describedBy}`).textContent(), "Asks before running");
  // A connector that cannot be started is listed with why.
  await panel.getByRole("heading", { name: "offline" }).waitFor();
  await panel.getByText(/Its tools could not be listed: could not start MCP server `offline`/).waitFor();

  // Above the settings: every tool the model sees, by source, with what a call does.
  const overview = panel.getByRole("region", { name: "Tools the model sees" });
  const seen = await overview.locator(".model-tool").evaluateAll((items) => items.map((li) => [
    li.closest(".tool-group").querySelector("h4").firstChild.textContent,
    li.querySelector(".tool-name").textContent,
    [...li.querySelectorAll(".badge")].map((b) => b.textContent).join(" | "),
  ]));
  assert.deepEqual(seen, [
    ["Platform", "ask_user", "Runs"],
    ["Bundles", "fetch_url", "Runs | Read-only"],
    ["Planning", "write_todos", "Runs | Changes things"],
    ["Planning", "read_todos", "Runs | Read-only"],
    ["MCP servers", "mcp_notes_create_entities", "notes | Asks first | Changes things"],
    ["MCP servers", "mcp_notes_read_graph", "notes | Runs | Read-only"],
  ]);
  await overview.getByText("Version 1 gives the model 6 tools, 1 asks a person first.", { exact: false }).waitFor();
  // `offline` is the server's connector, not this agent's: nothing is missing from the count.
  assert.equal(await overview.getByText("Not counted").count(), 0);
  // A description is folded until asked for.
  const about = overview.locator(".model-tool").filter({ hasText: "fetch_url" }).locator("details");
  assert.equal(await about.getAttribute("open"), null);
  await about.getByText("What fetch_url does").click();
  await about.getByText(/^Fetch a web page over http or https/).waitFor();
  await about.getByText("What fetch_url does").click();
  await shot("agent-tools");
  await everyControlIsLabelled("Tools tab");
  if (process.env.DOCS_SCREENSHOT) {
    copyFileSync(join(SHOTS, "agent-tools.png"), process.env.DOCS_SCREENSHOT);
  }

  // Choosing a connector's tools: drop one, save, and the agent keeps only the other.
  const graph = panel.getByRole("checkbox", { name: "mcp_notes_read_graph" });
  const create = panel.getByRole("checkbox", { name: "mcp_notes_create_entities" });
  assert.ok(await graph.isChecked());
  await create.uncheck();
  await panel.getByRole("button", { name: "Save connector tools" }).click();
  await panel.getByRole("status").filter({ hasText: "Connector tools saved." }).waitFor();
  assert.deepEqual((await api("GET", "/agents/toolcheck")).connectors, [{ name: "notes", tools: ["read_graph"] }]);
});

/** The tool list each run of the conversation offered, from the scripted agent's replies. */
async function toolLists() {
  const texts = await replies().allTextContents();
  return texts.map((t) => /available tools: ([^.]*)\./.exec(t)?.[1]).filter(Boolean)
    .map((list) => list.split(", ").sort());
}

test("toggling ask_user changes this agent's next run and no other agent", async () => {
  await startConversation("toolcheck", "Which tools do you have?");
  await replies().filter({ hasText: /available tools:/ }).waitFor();
  // The call the engine refused (an unknown tool) is in the transcript too, its result folded.
  await transcript().locator(".tool-result").filter({ hasText: "Unknown tool `list_my_tools`" })
    .waitFor({ state: "attached" });
  const first = await toolLists();
  assert.equal(first.length, 1);
  assert.ok(first[0].includes("ask_user"), `first run: ${first[0]}`);
  assert.ok(first[0].includes("mcp_notes_read_graph"), `first run: ${first[0]}`);
  assert.ok(!first[0].includes("mcp_notes_create_entities"), `the dropped connector tool is gone: ${first[0]}`);
  const conversation = decodeURIComponent(page.url().split("#/conversations/")[1]);

  await page.goto(`${BASE}/console/#/agents/toolcheck/tools`);
  const toggle = page.getByRole("switch", { name: "Enable: Ask user" });
  await toggle.click();
  await page.waitForFunction(() => document.querySelector('[role="switch"]')?.getAttribute("aria-checked") === "false");
  const agent = await api("GET", "/agents/toolcheck");
  assert.equal(agent.builtin_tools.find((t) => t.key === "ask_user").enabled, false);
  const other = await api("GET", "/agents/asker");
  assert.equal(other.builtin_tools.find((t) => t.key === "ask_user").enabled, true, "another agent is untouched");

  // The next run of the same conversation is offered the same tools less ask_user.
  await page.goto(`${BASE}/console/#/conversations/${encodeURIComponent(conversation)}`);
  await replies().filter({ hasText: /available tools:/ }).waitFor();
  await page.getByRole("textbox", { name: "Message" }).fill("And now?");
  await page.getByRole("button", { name: "Send" }).click();
  await page.waitForFunction(() => document.querySelectorAll(".msg.assistant").length >= 2);
  const [before, now] = await toolLists();
  assert.deepEqual(now, before.filter((t) => t !== "ask_user"), `second run: ${now}`);

  // After a reload the switch still shows Off.
  await page.goto(`${BASE}/console/#/agents/toolcheck/tools`);
  assert.equal(await page.getByRole("switch", { name: "Enable: Ask user" }).getAttribute("aria-checked"), "false");
});

test("keyboard only: reach the Tools tab and the switch, and flip it with Space and Enter", async () => {
  await page.goto(`${BASE}/console/#/agents/toolcheck`);
  // Loaded: the tabs are there and the heading has the focus.
  await page.getByRole("tab", { name: "Settings" }).waitFor();
  await page.waitForFunction(() => document.activeElement?.tagName === "H1");
  const focused = () => page.evaluate(() => {
    const el = document.activeElement;
    return { role: el.getAttribute("role"), label: el.getAttribute("aria-label") ?? el.textContent.trim() };
  });
  // Tab from the heading to the selected tab, then the arrow key to Tools.
  let seen = await focused();
  for (let i = 0; i < 15 && seen.role !== "tab"; i++) {
    await page.keyboard.press("Tab");
    seen = await focused();
  }
  assert.deepEqual(seen, { role: "tab", label: "Settings" });
  await page.keyboard.press("ArrowRight");
  assert.deepEqual(await focused(), { role: "tab", label: "Tools" });
  assert.equal(await page.getByRole("tab", { name: "Tools" }).getAttribute("aria-selected"), "true");
  for (let i = 0; i < 15 && seen.role !== "switch"; i++) {
    await page.keyboard.press("Tab");
    seen = await focused();
  }
  assert.deepEqual(seen, { role: "switch", label: "Enable: Ask user" });
  const toggle = page.getByRole("switch", { name: "Enable: Ask user" });
  await page.keyboard.press("Space");
  await page.waitForFunction(() => document.activeElement.getAttribute("aria-checked") === "true");
  assert.equal((await api("GET", "/agents/toolcheck")).builtin_tools[0].enabled, true);
  await page.keyboard.press("Enter");
  await page.waitForFunction(() => document.activeElement.getAttribute("aria-checked") === "false");
  await page.keyboard.press("Space");
  await page.waitForFunction(() => document.activeElement.getAttribute("aria-checked") === "true");
  assert.equal(await toggle.getAttribute("aria-checked"), "true");
  assert.equal((await api("GET", "/agents/toolcheck")).builtin_tools[0].enabled, true);
});

test("a question answered by a click, with the message box open while it waits", async () => {
  await startConversation("asker", "Export my data");
  const card = transcript().getByRole("group", { name: "asker asks" });
  await card.getByRole("heading", { name: "Format" }).waitFor();
  await card.getByText("Which format?").waitFor();
  const box = page.getByRole("textbox", { name: "Message" });
  assert.ok(await box.isEditable(), "the message box is never locked while a question waits");
  await shot("conversation-question");
  await everyControlIsLabelled("a question");
  await card.getByRole("button", { name: "JSON", exact: true }).click();
  await card.getByText("Answered: JSON").waitFor();
  await transcript().getByText(/saw:[^]*JSON/).waitFor();
  assert.equal(await card.getByRole("button", { name: "JSON", exact: true }).count(), 0);
  await shot("conversation-answered");
});

test("a question answered in the person's own words from the message box", async () => {
  await startConversation("asker", "Export my data again");
  const card = transcript().getByRole("group", { name: "asker asks" });
  await card.getByRole("heading", { name: "Format" }).waitFor();
  await page.getByRole("textbox", { name: "Message" }).fill("Parquet, please");
  await page.getByRole("button", { name: "Send" }).click();
  await card.getByText("Answered in your words: “Parquet, please”").waitFor();
  await transcript().getByText(/saw:[^]*Parquet, please/).waitFor();
});

test("a multi-choice question answered with several options", async () => {
  await startConversation("picker", "Set up my alerts");
  const card = transcript().getByRole("group", { name: "picker asks" });
  const group = card.getByRole("group", { name: "Channels" });
  await group.getByRole("checkbox", { name: "Email" }).check();
  await group.getByRole("checkbox", { name: "SMS" }).check();
  await everyControlIsLabelled("a multi-choice question");
  await card.getByRole("button", { name: "Send answer" }).click();
  await card.getByText("Answered: Email, SMS").waitFor();
  await transcript().getByText(/saw:[^]*Email[^]*SMS/).waitFor();
});

test("an approval: allow once, the call runs and shows compactly", async () => {
  await startConversation("approver", "What is in my folder?");
  const card = approvalCard();
  await card.getByRole("heading", { name: "Approval needed: run list_directory?" }).waitFor();
  for (const name of ["Allow once", "Allow for this conversation", "Deny"]) {
    await card.getByRole("button", { name }).waitFor();
  }
  await shot("conversation-approval");
  await everyControlIsLabelled("an approval");
  await card.getByRole("button", { name: "Allow once" }).click();
  await card.getByText("Allowed once.").waitFor();
  await transcript().getByText(/saw:[^]*notes\.txt/).waitFor();
  const call = transcript().locator(".tool-call summary").filter({ hasText: "list_directory" });
  await call.filter({ hasText: "done" }).waitFor();
  assert.equal(await transcript().locator(".tool-call details[open]").count(), 0, "tool calls start folded");
});

test("allow for this conversation: the conversation's next call runs without asking; deny runs nothing", async () => {
  await startConversation("approver", "Look in my folder, and keep looking");
  const card = approvalCard();
  await card.getByRole("button", { name: "Allow for this conversation" }).click();
  await card.getByText("Allowed for this conversation.").waitFor();
  const saw = transcript().locator(".msg.assistant").filter({ hasText: /saw:[^]*notes\.txt/ });
  await saw.first().waitFor();
  // The next run of this conversation calls the tool again: the grant answers it, no card asks.
  await page.getByRole("textbox", { name: "Message" }).fill("Once more");
  await page.getByRole("button", { name: "Send" }).click();
  const asked = transcript().getByRole("button", { name: "Allow once" });
  await saw.nth(1).or(asked).first().waitFor();
  assert.equal(await asked.count(), 0, "the conversation's grant should have answered the second call");
  assert.equal(await saw.count(), 2);
  const ran = transcript().locator(".tool-call summary").filter({ hasText: "list_directory" }).filter({ hasText: "done" });
  assert.equal(await ran.count(), 2);

  // Another conversation is asked again (the grant was this conversation's), and denied.
  await startConversation("approver", "Look, but I will say no");
  const denied = approvalCard();
  await denied.getByRole("button", { name: "Deny" }).click();
  await denied.getByText("Denied.").waitFor();
  await transcript().getByText(/saw:[^]*Permission denied/).waitFor();
  assert.equal(await transcript().getByText(/notes\.txt/).count(), 0, "a denied call does not run");
});

/** The stored events of a finished run, from its event feed, as `{ event, data }`. */
async function runEvents(runId) {
  const res = await fetch(`${BASE}/v2/runs/${runId}/events`, { headers: { Authorization: `Bearer ${KEY}` } });
  assert.ok(res.ok, `events of run ${runId}: ${res.status}`);
  const text = await res.text();
  return text.split("\n\n").filter((f) => f.includes("data:")).map((frame) => {
    const lines = frame.split("\n");
    const event = lines.find((l) => l.startsWith("event:"))?.slice(6).trim();
    const data = JSON.parse(lines.filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trim()).join("\n"));
    return { event, data };
  });
}

/** The id of the last run shown in the transcript. */
async function lastRunId() {
  return Number(await transcript().locator("li.run").last().getAttribute("data-run"));
}

test("an approval shows its arguments first, and allowing edited arguments runs the call with them", async () => {
  await startConversation("approver", "What is in the sub folder?");
  const card = approvalCard();
  await card.getByRole("heading", { name: "Approval needed: run list_directory?" }).waitFor();
  // The arguments come first, field by field; what the tool does after, folded, its code rendered.
  const args = card.getByRole("definition").first();
  assert.equal(await card.locator("dl.arguments dt").allTextContents().then((t) => t.join()), "path");
  assert.equal(await args.textContent(), ".");
  const order = await card.evaluate((el) => {
    const a = el.querySelector("dl.arguments");
    const about = el.querySelector(".about-tool");
    return !!(a.compareDocumentPosition(about) & Node.DOCUMENT_POSITION_FOLLOWING);
  });
  assert.ok(order, "the arguments come before the description");
  await card.getByText("What list_directory does").click();
  const description = card.locator(".about-tool .markdown");
  assert.ok(!(await description.textContent()).includes("`"), "no raw backticks");
  assert.ok(await description.locator("code").count() >= 2, "inline code is rendered");
  await card.getByText("What list_directory does").click();

  // Edited arguments the tool's schema refuses: the server's reason, naming the field.
  const edit = card.getByRole("button", { name: "Edit arguments" });
  await edit.click();
  assert.equal(await edit.getAttribute("aria-expanded"), "true");
  const editor = card.getByRole("textbox", { name: "Arguments (JSON)" });
  assert.deepEqual(JSON.parse(await editor.inputValue()), { path: "." });
  await editor.fill("{ not json");
  await card.getByRole("button", { name: "Allow once" }).click();
  await card.getByRole("alert").filter({ hasText: "Arguments: not valid JSON" }).waitFor();
  await editor.fill(JSON.stringify({ path: 5 }));
  await card.getByRole("button", { name: "Allow once" }).click();
  await card.getByRole("alert").filter({ hasText: "`arguments.path`: 5 is not of types" }).waitFor();
  await everyControlIsLabelled("an approval with its arguments open");
  await editor.fill(JSON.stringify({ path: "sub" }, null, 2));
  await card.getByRole("button", { name: "Allow once" }).click();

  // The decision, named with its tool, who made it and when; the call ran with the edit.
  await card.getByRole("heading", { name: "list_directory: allowed once" }).waitFor();
  await card.getByText("Allowed once. It ran with edited arguments:").waitFor();
  assert.equal(await card.locator("dl.arguments dd").textContent(), "sub");
  await card.getByText(/^by API key …cdef at \d\d:\d\d:\d\d/).waitFor();
  assert.equal(await card.locator(".decided-by time").count(), 1);
  await transcript().getByText(/saw:[^]*inner\.txt/).waitFor();
  assert.equal(await transcript().getByText(/notes\.txt/).count(), 0, "the model's own arguments did not run");
  await shot("conversation-approval-edited");

  // The run's events say the same.
  const events = await runEvents(await lastRunId());
  const answered = events.find((e) => e.event === "answered").data;
  assert.deepEqual(answered.reply, { type: "decision", decision: "allow_once", arguments: { path: "sub" } });
  assert.equal(answered.by, "API key …cdef");
  assert.match(answered.at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
});

test("a run's timeline: model turns, tool calls with arguments, results and durations, folded", async () => {
  const run = transcript().locator("li.run").last();
  await run.locator(".state").filter({ hasText: "completed" }).waitFor();
  await run.locator(".run-head time").first().waitFor();
  assert.equal(await run.getByRole("button", { name: /Cancel run/ }).isVisible(), false, "a finished run has no Cancel");
  const turns = run.locator("li.turn summary");
  assert.deepEqual((await turns.allTextContents()).map((t) => t.replace(/ · [\d.]+ m?s/, "").trim()), [
    "◆ Model turn 1 · called list_directory",
    "◆ Model turn 2 · answered",
  ]);
  const call = run.locator("li.tool-call");
  const summary = await call.locator("summary").textContent();
  assert.match(summary, /Tool list_directory done · \d+(\.\d)? m?s$/);
  assert.equal(await run.locator("details[open]").count(), 0, "everything starts folded");
  await call.locator("summary").click();
  assert.equal(await call.locator("dl.arguments dd").textContent(), "sub");
  await call.getByRole("heading", { name: "Result" }).waitFor();
  await call.locator(".tool-result").getByText(/inner\.txt/).waitFor();
  await call.getByText(/^Started at \d\d:\d\d:\d\d/).waitFor();
  await turns.first().click();
  await run.locator("li.turn").first().getByText("Tokens in").waitFor();
  await everyControlIsLabelled("a run's timeline");
  await shot("conversation-timeline");

  // A refused call shows its error in the timeline.
  await startConversation("approver", "Look, but I will say no again");
  await approvalCard().getByRole("button", { name: "Deny" }).click();
  const denied = transcript().locator("li.tool-call").last();
  await denied.locator("summary").filter({ hasText: "failed" }).waitFor();
  await denied.locator("summary").click();
  await denied.getByRole("heading", { name: "Error (permission denied)" }).waitFor();
});

test("multi-line arguments show as a block, folded behind Show all", async () => {
  await startConversation("scribe", "Write the report file");
  const card = approvalCard();
  await card.getByRole("heading", { name: "Approval needed: run write_file?" }).waitFor();
  const field = (name) => card.locator("dl.arguments dt").filter({ hasText: name })
    .locator("xpath=following-sibling::dd[1]");
  assert.equal(await field("path").textContent(), "report.md");
  const block = field("content").locator("pre");
  const folded = await block.textContent();
  assert.ok(folded.startsWith("# Report\nline 2\n") && folded.endsWith("…"), folded);
  assert.ok(!folded.includes("line 20"), folded);
  const more = field("content").getByRole("button", { name: "Show all (21 lines)" });
  assert.equal(await more.getAttribute("aria-expanded"), "false");
  assert.equal(await more.getAttribute("aria-controls"), await block.getAttribute("id"));
  await more.click();
  const less = field("content").getByRole("button", { name: "Show less" });
  assert.equal(await less.getAttribute("aria-expanded"), "true");
  assert.ok((await block.textContent()).includes("line 19\nline 20\n"));
  await less.click();
  assert.equal(await block.textContent(), folded);
  await card.getByRole("button", { name: "Deny" }).click();
  await card.getByRole("heading", { name: "write_file: denied" }).waitFor();
  await transcript().getByText(/saw:[^]*Permission denied/).waitFor();
});

test("an answer in Markdown is rendered, and nothing in it runs", async () => {
  await startConversation("writer", "Write the report");
  const answer = replies().last();
  await answer.getByRole("heading", { name: "Report" }).waitFor();
  assert.equal(await answer.locator("strong").textContent(), "done");
  assert.equal(await answer.locator("em").textContent(), "care");
  assert.equal(await answer.locator("p code").first().textContent(), "code");
  assert.deepEqual(await answer.locator("li").allTextContents(), ["one", "two"]);
  assert.equal(await answer.locator("pre code").textContent(), "let x = 1;");
  const links = await answer.locator("a").evaluateAll((as) => as.map((a) => [a.textContent, a.getAttribute("href"), a.rel]));
  assert.deepEqual(links, [["guide", "https://example.com/guide", "noopener noreferrer nofollow"]]);
  // The link to javascript: and the markup stay text.
  await answer.getByText("[this](javascript:alert(1))", { exact: false }).waitFor();
  await answer.getByText("<img src=x onerror=alert(1)>", { exact: false }).waitFor();
  assert.equal(await answer.locator("img, script").count(), 0);
  await shot("conversation-markdown");

  // The renderer itself: only http(s) links, only text.
  const rendered = await page.evaluate(async () => {
    const { renderMarkdown, safeUrl } = await import("/console/markdown.js");
    const box = document.createElement("div");
    box.append(renderMarkdown("## T\n[a](http://x.test/a) [b](data:text/html,hi) [c](/relative) __bold__ _it_ snake_case_name\n\n1. x\n2. y"));
    return {
      html: box.innerHTML,
      urls: [safeUrl("https://a.test/"), safeUrl("javascript:alert(1)"), safeUrl("ftp://a.test/")],
    };
  });
  assert.equal(rendered.html,
    "<h4>T</h4><p><a href=\"http://x.test/a\" rel=\"noopener noreferrer nofollow\" target=\"_blank\">a</a> " +
    "[b](data:text/html,hi) [c](/relative) <strong>bold</strong> <em>it</em> snake_case_name</p><ol><li>x</li><li>y</li></ol>");
  assert.deepEqual(rendered.urls, ["https://a.test/", null, null]);
});

test("a waiting run is cancelled from the console", async () => {
  await startConversation("approver", "Ask me, then I will cancel");
  const card = approvalCard();
  await card.getByRole("button", { name: "Allow once" }).waitFor();
  const run = transcript().locator("li.run").last();
  const cancel = run.getByRole("button", { name: /^Cancel run \d+$/ });
  await cancel.click();
  await run.locator(".state").filter({ hasText: "cancelled" }).waitFor();
  await cancel.waitFor({ state: "hidden" });
  await card.getByText("The run was cancelled before this was answered.").waitFor();
  assert.equal(await card.getByRole("button").count(), 0);
  assert.equal((await api("GET", `/runs/${await lastRunId()}`)).state, "cancelled");
  await shot("conversation-cancelled");
});

test("the Conversations page lists conversations a page at a time and starts one", async () => {
  // More conversations than one page holds.
  for (let i = 0; i < 26; i++) {
    await api("POST", "/runs", { agent: "writer", input: `Filler conversation ${i}` });
  }
  await page.goto(`${BASE}/console/#/agents`);
  await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Conversations" }).click();
  const list = page.getByRole("list", { name: "Recent conversations" });
  await list.getByRole("link", { name: "Filler conversation 25" }).waitFor();
  assert.equal(await list.getByRole("listitem").count(), 25);
  const newest = list.getByRole("listitem").first();
  await newest.getByText(/^writer · 1 run · (completed|running|queued) · last activity \d/).waitFor();
  await newest.locator("time").waitFor();
  assert.equal(await list.getByRole("link", { name: "Ask me, then I will cancel" }).count(), 0);
  await everyControlIsLabelled("conversations");
  await shot("conversations");
  await page.getByRole("button", { name: "Show older conversations" }).click();
  await list.getByRole("link", { name: "Ask me, then I will cancel" }).waitFor();
  const older = list.getByRole("listitem").filter({ hasText: "Ask me, then I will cancel" });
  await older.getByText(/approver · 1 run · cancelled/).waitFor();
  // The first older conversation has the keyboard focus.
  assert.equal(await page.evaluate(() => document.activeElement?.textContent), "Filler conversation 0");

  // Starting one: pick the agent, post the first message; it heads the list afterwards.
  const form = page.getByRole("form", { name: "New conversation" });
  await form.getByRole("combobox", { name: "Agent" }).selectOption("writer");
  await form.getByRole("button", { name: "Start" }).click();
  await form.getByRole("alert").filter({ hasText: "Message: write the first message to send." }).waitFor();
  await form.getByRole("textbox", { name: "Message" }).fill("A fresh start");
  await form.getByRole("button", { name: "Start" }).click();
  await page.getByRole("heading", { level: 1, name: "Conversation" }).waitFor();
  await replies().getByRole("heading", { name: "Report" }).waitFor();
  await page.getByRole("link", { name: "Conversations" }).first().click();
  await list.getByRole("listitem").first().getByRole("link", { name: "A fresh start" }).waitFor();
});

test("a question nobody answers expires, and the card says so", async () => {
  // Another origin: this tab signs in there too.
  await page.goto(`${EXPIRY_BASE}/console/`);
  await page.getByLabel("API key").fill(KEY);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { level: 1, name: "Agents" }).waitFor();
  await startConversation("asker", "Export, but I will not answer", EXPIRY_BASE);
  const card = transcript().getByRole("group", { name: "asker asks" });
  await card.getByRole("heading", { name: "Format" }).waitFor();
  await card.getByText(/^This question expired after \d+ seconds? without an answer; the agent went on without it\.$/).waitFor();
  assert.equal(await card.getByRole("button").count(), 0, "an expired question offers no choices");
  await transcript().getByText(/saw:[^]*expired/i).waitFor();
  await shot("conversation-expired");
});

test("Knowledge: create a base, upload a Markdown file, attach it, and a run's knowledge_search finds it", async () => {
  await page.goto(`${BASE}/console/#/agents`);
  await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Knowledge" }).click();
  await page.getByRole("heading", { level: 1, name: "Knowledge" }).waitFor();
  const form = page.getByRole("form", { name: "New knowledge base" });
  await form.getByRole("textbox", { name: "Name" }).fill("handbook");
  await form.getByRole("textbox", { name: "Description" }).fill("How we work.");
  await everyControlIsLabelled("knowledge");
  await shot("knowledge");
  await form.getByRole("button", { name: "Create knowledge base" }).click();
  await page.getByRole("heading", { level: 1, name: "handbook" }).waitFor();
  await page.getByText("This knowledge base has no documents yet").waitFor();
  assert.equal((await api("GET", "/knowledge/handbook")).description, "How we work.");

  // A Markdown file: its name becomes the title and its extension the format.
  const upload = page.getByRole("form", { name: "Upload a document" });
  await upload.getByLabel("File").setInputFiles({
    name: "vpn.md",
    mimeType: "text/markdown",
    buffer: Buffer.from("# VPN access\n\nConnect to the VPN with the WireGuard profile from the portal.\n"),
  });
  assert.equal(await upload.getByRole("combobox", { name: "Format" }).inputValue(), "markdown");
  assert.equal(await upload.getByRole("textbox", { name: "Title" }).inputValue(), "vpn.md");
  await upload.getByRole("button", { name: "Upload" }).click();
  await page.getByRole("status").filter({ hasText: "Uploaded vpn.md." }).waitFor();
  const documents = page.getByRole("list", { name: "Documents" });
  await documents.getByRole("heading", { name: "vpn.md" }).waitFor();
  await shot("knowledge-base");
  await everyControlIsLabelled("a knowledge base");
  const stored = await api("GET", "/knowledge/handbook");
  assert.deepEqual(stored.documents.map((d) => [d.title, d.format]), [["vpn.md", "markdown"]]);

  // Attached on the agent's Tools tab.
  await page.goto(`${BASE}/console/#/agents/librarian/tools`);
  const panel = page.getByRole("tabpanel", { name: "Tools" });
  await panel.getByRole("heading", { name: "Knowledge bases" }).waitFor();
  const box = panel.getByRole("checkbox", { name: "handbook" });
  assert.ok(!(await box.isChecked()));
  await box.check();
  await panel.getByRole("button", { name: "Save knowledge bases" }).click();
  await panel.getByRole("status").filter({ hasText: "Knowledge bases saved." }).waitFor();
  assert.deepEqual((await api("GET", "/agents/librarian")).knowledge_bases, ["handbook"]);
  await everyControlIsLabelled("Tools tab with knowledge bases");
  await shot("agent-knowledge");

  // A run's knowledge_search finds the uploaded document.
  await startConversation("librarian", "How do I get on the VPN?");
  await replies().filter({ hasText: /found:[^]*WireGuard profile/ }).waitFor();
  await replies().filter({ hasText: "vpn.md" }).waitFor();

  // Attached, the base cannot be deleted: the page says which agent has it.
  await page.goto(`${BASE}/console/#/knowledge/handbook`);
  await page.getByText("Attached to librarian.").waitFor();
  page.once("dialog", (d) => d.accept());
  await page.getByRole("button", { name: "Delete knowledge base" }).click();
  await page.getByRole("alert").filter({ hasText: "attached to the agents `librarian`" }).waitFor();

  // A document is deleted from the base's page.
  page.once("dialog", (d) => d.accept());
  await page.getByRole("button", { name: "Delete document vpn.md" }).click();
  await page.getByText("This knowledge base has no documents yet").waitFor();
  assert.equal((await api("GET", "/knowledge/handbook")).document_count, 0);
});

test("a page that finishes loading after the person moved on changes neither the page nor the address", async () => {
  // The agent page's knowledge bases answer late; the person goes to the Agents list meanwhile.
  let release;
  const held = new Promise((resolve) => { release = resolve; });
  await page.route("**/v2/knowledge", async (route) => { await held; await route.continue(); });
  try {
    await page.goto(`${BASE}/console/#/agents/toolcheck/tools`);
    await page.getByRole("heading", { level: 1, name: "toolcheck" }).waitFor();
    await page.goto(`${BASE}/console/#/agents`);
    await page.getByRole("form", { name: "New agent" }).waitFor();
    release();
    await page.waitForLoadState("networkidle");
    assert.equal(new URL(page.url()).hash, "#/agents");
    await page.getByRole("form", { name: "New agent" }).waitFor();
    assert.equal(await page.getByRole("tab", { name: "Tools" }).count(), 0);
  } finally {
    release();
    await page.unroute("**/v2/knowledge");
  }
});

test("at 375 px wide nothing overflows sideways", async () => {
  await page.setViewportSize({ width: 375, height: 800 });
  try {
    for (const [hash, name] of [["#/agents", "agents"], ["#/agents/toolcheck/tools", "agent-tools"], ["#/conversations", "conversations"], ["#/knowledge", "knowledge"], ["#/knowledge/handbook", "knowledge-base"]]) {
      await page.goto(`${BASE}/console/${hash}`);
      await page.getByRole("heading", { level: 1 }).waitFor();
      await page.waitForLoadState("networkidle");
      await noHorizontalOverflow();
      await everyControlIsLabelled(`${name} at 375 px`);
      await shot(`${name}-375`);
    }
    await startConversation("approver", "List it on a phone");
    await transcript().getByRole("group", { name: "Approval needed" }).waitFor();
    await noHorizontalOverflow();
    await shot("conversation-375");
  } finally {
    await page.setViewportSize({ width: 1100, height: 900 });
  }
});

test("an agent is created from the Agents page and deleted from its own", async () => {
  await page.goto(`${BASE}/console/#/agents`);
  const form = page.getByRole("form", { name: "New agent" });
  await form.getByRole("textbox", { name: "Name" }).fill("made-here");
  await form.getByRole("textbox", { name: "Instructions" }).fill("Made in the console.");
  await form.getByRole("button", { name: "Create agent" }).click();
  await page.getByRole("heading", { level: 1, name: "made-here" }).waitFor();
  const made = await api("GET", "/agents/made-here");
  assert.equal(made.version, 1);
  assert.equal(made.instructions, "Made in the console.");
  assert.equal(made.builtin_tools[0].enabled, true);

  // A name taken already is refused with the server's reason.
  await page.goto(`${BASE}/console/#/agents`);
  await form.getByRole("textbox", { name: "Name" }).fill("made-here");
  await form.getByRole("button", { name: "Create agent" }).click();
  await page.getByRole("alert").filter({ hasText: "exists already" }).waitFor();

  await page.goto(`${BASE}/console/#/agents/made-here`);
  page.once("dialog", (d) => d.accept());
  await page.getByRole("button", { name: "Delete agent" }).click();
  await page.getByRole("heading", { level: 1, name: "Agents" }).waitFor();
  const list = page.getByRole("list", { name: "Agents" });
  await list.getByRole("link", { name: "toolcheck", exact: true }).waitFor();
  assert.equal(await list.getByRole("link", { name: "made-here", exact: true }).count(), 0);
  assert.equal((await apiStatus("GET", "/agents/made-here")), 404);
});

test("signing out forgets the key and shows nothing but the sign-in form", async () => {
  await page.goto(`${BASE}/console/#/agents`);
  await page.getByRole("button", { name: "Sign out" }).click();
  await page.getByRole("heading", { level: 1, name: "Sign in" }).waitFor();
  assert.equal(await page.evaluate(() => sessionStorage.getItem("harnessx.apiKey")), null);
  assert.equal(await page.getByRole("link", { name: "toolcheck" }).count(), 0);
  await page.goto(`${BASE}/console/#/agents/toolcheck/tools`);
  await page.getByRole("heading", { level: 1, name: "Sign in" }).waitFor();
  assert.equal(await page.getByRole("switch").count(), 0);
});

test("a key the server no longer accepts brings back the sign-in form, then the page", async () => {
  // As after the server restarted with another key: this tab still holds the old one.
  await page.goto(`${BASE}/console/`);
  await page.evaluate(() => sessionStorage.setItem("harnessx.apiKey", "a-key-this-server-never-had-0123"));
  await page.goto(`${BASE}/console/#/agents/toolcheck`);
  await page.getByRole("heading", { level: 1, name: "Sign in" }).waitFor();
  await page.getByRole("alert")
    .filter({ hasText: "The server no longer accepts the key this tab signed in with" }).waitFor();
  assert.equal(await page.evaluate(() => sessionStorage.getItem("harnessx.apiKey")), null);
  assert.equal(await page.getByRole("navigation", { name: "Console" }).isVisible(), false);
  await page.getByLabel("API key").fill(KEY);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { level: 1, name: "toolcheck" }).waitFor();
  await page.getByRole("button", { name: "Sign out" }).click();
  await page.getByRole("heading", { level: 1, name: "Sign in" }).waitFor();
});

/** Starts a conversation with `agent` from the Conversations page by keyboard alone. */
async function startByKeyboard(agent, message) {
  const nav = page.getByRole("navigation", { name: "Console" });
  await tabTo(nav.getByRole("link", { name: "Conversations" }), "the Conversations link");
  await page.keyboard.press("Enter");
  await page.getByRole("heading", { level: 1, name: "Conversations" }).waitFor();
  const select = page.getByRole("combobox", { name: "Agent" });
  await tabTo(select, "the Agent list");
  await page.keyboard.press("Home");
  for (let i = 0; i < 10 && (await select.inputValue()) !== agent; i++) {
    await page.keyboard.press("ArrowDown");
  }
  assert.equal(await select.inputValue(), agent);
  await tabTo(page.getByRole("textbox", { name: "Message" }), "the Message box");
  await page.keyboard.type(message);
  await tabTo(page.getByRole("button", { name: "Start" }), "the Start button");
  await page.keyboard.press("Enter");
  await page.getByRole("heading", { level: 1, name: "Conversation" }).waitFor();
  await transcript().getByText(message).waitFor();
}

test("keyboard only at 375 px: sign in, start conversations, answer a question, allow a call", async () => {
  await page.setViewportSize({ width: 375, height: 800 });
  try {
    await page.goto(`${BASE}/console/`);
    await page.getByRole("heading", { level: 1, name: "Sign in" }).waitFor();
    await noHorizontalOverflow();
    await shot("sign-in-375");
    await tabTo(page.getByLabel("API key"), "the API key field");
    await page.keyboard.type(KEY);
    await page.keyboard.press("Enter");
    await page.getByRole("heading", { level: 1, name: "Agents" }).waitFor();

    await startByKeyboard("asker", "Export, by keyboard");
    const card = transcript().getByRole("group", { name: "asker asks" });
    await card.getByRole("heading", { name: "Format" }).waitFor();
    await noHorizontalOverflow();
    await everyControlIsLabelled("a question at 375 px");
    await shot("conversation-question-375");
    await tabTo(card.getByRole("button", { name: "CSV", exact: true }), "the CSV option");
    await page.keyboard.press("Enter");
    await card.getByText("Answered: CSV").waitFor();
    await transcript().getByText(/saw:[^]*CSV/).waitFor();

    await startByKeyboard("approver", "My folder, by keyboard");
    const approval = approvalCard();
    await tabTo(approval.getByRole("button", { name: "Allow once" }), "Allow once");
    await page.keyboard.press("Space");
    await approval.getByText("Allowed once.").waitFor();
    await transcript().getByText(/saw:[^]*notes\.txt/).waitFor();
    await noHorizontalOverflow();
  } finally {
    await page.setViewportSize({ width: 1100, height: 900 });
  }
});

test("the Connectors page: add connectors with the form, sign one in through the authorization server", async () => {
  await page.goto(`${BASE}/console/#/agents`);
  await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Connectors" }).click();
  await page.getByRole("heading", { level: 1, name: "Connectors" }).waitFor();
  const list = page.getByRole("list", { name: "Connectors" });
  await list.getByRole("heading", { name: "notes" }).waitFor();
  const form = page.getByRole("form", { name: "New connector" });

  // A stdio connector whose program does not exist: added, and listed as unreachable.
  await form.getByRole("textbox", { name: "Name" }).fill("missing");
  await form.getByRole("radio", { name: "Command (stdio)" }).check();
  await form.getByRole("textbox", { name: "Command" }).fill("/nonexistent/harnessx-no-such-mcp-server");
  await form.getByRole("textbox", { name: "Arguments" }).fill("--flag\nvalue");
  await form.getByRole("button", { name: "Add connector" }).click();
  const missing = list.getByRole("listitem", { name: "missing" });
  await missing.getByText("Unreachable").waitFor();
  assert.deepEqual((await api("GET", "/connectors/missing")).args, ["--flag", "value"]);

  // A URL connector that signs in with OAuth.
  await form.getByRole("textbox", { name: "Name" }).fill("tickets");
  await form.getByRole("radio", { name: "URL (streamable HTTP)" }).check();
  await form.getByRole("textbox", { name: "URL" }).fill(OAUTH_MCP_URL);
  await form.getByRole("checkbox", { name: "Sign in with OAuth" }).check();
  await form.getByRole("button", { name: "Add connector" }).click();
  const tickets = list.getByRole("listitem", { name: "tickets" });
  await tickets.getByText("Needs sign-in").waitFor();
  assert.equal((await api("GET", "/connectors/tickets")).status, "needs_sign_in");
  await everyControlIsLabelled("Connectors page");
  await shot("connectors-needs-sign-in");

  // Sign in: the browser goes to the authorization server, is redirected to the server's
  // callback, and comes back to this page.
  const visited = [];
  const seen = (req) => { if (req.isNavigationRequest()) visited.push(req.url()); };
  page.on("request", seen);
  await tickets.getByRole("button", { name: "Sign in to tickets" }).click();
  await page.getByRole("status").filter({ hasText: "Signed in: tickets." }).waitFor();
  page.off("request", seen);
  assert.ok(visited.some((u) => u.startsWith(`${OAUTH_ISSUER}/authorize?`)), visited.join("\n"));
  assert.ok(visited.some((u) => u.startsWith(`${BASE}/v2/connectors/oauth/callback?`)), visited.join("\n"));
  assert.ok(page.url().startsWith(`${BASE}/console/#/connectors`), page.url());
  const signedIn = page.getByRole("list", { name: "Connectors" }).getByRole("listitem", { name: "tickets" });
  await signedIn.getByText("Ready").waitFor();
  await signedIn.getByText("whoami").waitFor();
  assert.equal(await signedIn.getByRole("button", { name: "Sign in to tickets" }).count(), 0);
  const listed = await api("GET", "/connectors/tickets");
  assert.equal(listed.status, "ready");
  assert.deepEqual(listed.tools.map((t) => t.name), ["whoami"]);
  await shot("connectors-signed-in");
});

test("the Webhooks page: add a webhook with its events, see its secret once and its delivery log, delete it", async () => {
  await page.goto(`${BASE}/console/#/agents`);
  await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Webhooks" }).click();
  await page.getByRole("heading", { level: 1, name: "Webhooks" }).waitFor();
  await page.getByText("The server has no webhooks yet; add one below.").waitFor();
  const form = page.getByRole("form", { name: "New webhook" });

  // Not a URL: the server's message, naming the field.
  await form.getByRole("textbox", { name: "URL" }).fill("not a url");
  await form.getByRole("button", { name: "Add webhook" }).click();
  await form.getByRole("alert").filter({ hasText: "url: `not a url` is not a URL" }).waitFor();

  // This server's /healthz takes no POST: each attempt is answered 405, and logged.
  await form.getByRole("textbox", { name: "URL" }).fill(`${BASE}/healthz`);
  assert.ok(await form.getByRole("checkbox", { name: "A run waits for a person (run.waiting_input)" }).isChecked());
  await form.getByRole("checkbox", { name: "A run failed (run.failed)" }).check();
  await form.getByRole("button", { name: "Add webhook" }).click();
  const notice = page.getByRole("status", { name: /^Secret of wh_/ });
  await notice.waitFor();
  const secret = (await notice.locator("code").textContent()).trim();
  assert.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
  const [hook] = (await api("GET", "/webhooks")).webhooks;
  assert.deepEqual(hook.events, ["run.waiting_input", "run.failed"]);
  assert.equal(hook.secret, undefined, "the API never returns the secret again");
  const card = page.getByRole("list", { name: "Webhooks" }).getByRole("listitem", { name: hook.id });
  await card.getByText("run.waiting_input, run.failed").waitFor();

  // A run waits for a person: its event is sent, refused, and logged.
  const run = await api("POST", "/runs", { agent: "asker", input: "for the webhook" });
  for (let i = 0; ; i++) {
    const log = await api("GET", `/webhooks/${hook.id}/deliveries`);
    if (log.deliveries[0]?.attempts.length) break;
    assert.ok(i < 200, "no attempt was logged");
    await new Promise((r) => setTimeout(r, 100));
  }
  await card.getByRole("button", { name: `Deliveries of ${hook.id}` }).click();
  const table = card.getByRole("table", { name: `Deliveries to ${hook.id}, newest first` });
  await table.getByText("HTTP 405 — the receiver answered 405 Method Not Allowed").waitFor();
  await table.getByRole("cell", { name: String(run.id), exact: true }).waitFor();
  await table.getByRole("cell", { name: "run.waiting_input", exact: true }).waitFor();
  await everyControlIsLabelled("Webhooks page");
  await shot("webhooks");

  // Deleted: gone from the page and from the API.
  await card.getByRole("button", { name: `Delete ${hook.id}` }).click();
  await page.getByText("The server has no webhooks yet; add one below.").waitFor();
  assert.equal(await apiStatus("GET", `/webhooks/${hook.id}`), 404);
});
