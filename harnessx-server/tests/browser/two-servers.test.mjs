// Two people, two browsers, two servers, one PostgreSQL database: what one changes in the console
// against server A, the other sees in the console against server B (started by tests/browser.rs,
// which passes both addresses and the key).
//
// Environment: HARNESSX_A_URL, HARNESSX_B_URL, HARNESSX_KEY, CHROMIUM (path), SCREENSHOTS (folder).

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, mkdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const A = process.env.HARNESSX_A_URL;
const B = process.env.HARNESSX_B_URL;
const KEY = process.env.HARNESSX_KEY;
const SHOTS = process.env.SCREENSHOTS;
const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
assert.ok(A && B && KEY && SHOTS, "HARNESSX_A_URL, HARNESSX_B_URL, HARNESSX_KEY and SCREENSHOTS must be set");
assert.notEqual(A, B, "two servers");
mkdirSync(SHOTS, { recursive: true });

/** One person's browser: its own profile, so nothing is shared but the servers' database. */
async function browser() {
  const profile = mkdtempSync(join(tmpdir(), "harnessx-two-servers-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"],
    viewport: { width: 1100, height: 900 },
  });
  context.setDefaultTimeout(20_000);
  const page = context.pages()[0] ?? await context.newPage();
  page.on("pageerror", (err) => { throw new Error(`page error: ${err.message}`); });
  return { profile, context, page };
}

let ana;
let ben;

before(async () => {
  ana = await browser();
  ben = await browser();
});

after(async () => {
  for (const b of [ana, ben]) {
    await b?.context.close();
    if (b) rmSync(b.profile, { recursive: true, force: true });
  }
});

async function signIn(page, base) {
  await page.goto(`${base}/console/`);
  await page.getByLabel("API key").fill(KEY);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { level: 1, name: "Agents" }).waitFor();
}

test("an agent made in one browser on server A is seen and changed in another on server B", async () => {
  await signIn(ana.page, A);
  await signIn(ben.page, B);

  // Ana makes an agent on A.
  const form = ana.page.getByRole("form", { name: "New agent" });
  await form.getByRole("textbox", { name: "Name" }).fill("shared");
  await form.getByRole("textbox", { name: "Instructions" }).fill("Made on A.");
  await form.getByRole("button", { name: "Create agent" }).click();
  await ana.page.getByRole("heading", { level: 1, name: "shared" }).waitFor();

  // Ben, on B, was on the Agents page all along: its nav link loads the list again, with the
  // new agent. He changes its instructions and turns ask_user off.
  await ben.page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Agents" }).click();
  await ben.page.getByRole("list", { name: "Agents" }).getByRole("link", { name: "shared", exact: true }).click();
  await ben.page.getByRole("heading", { level: 1, name: "shared" }).waitFor();
  const instructions = ben.page.getByRole("textbox", { name: "Instructions" });
  assert.equal(await instructions.inputValue(), "Made on A.");
  await instructions.fill("Changed on B.");
  await ben.page.getByRole("button", { name: "Save settings" }).click();
  await ben.page.getByRole("status").filter({ hasText: "Saved" }).waitFor();
  await ben.page.getByRole("tab", { name: "Tools" }).click();
  const toggle = ben.page.getByRole("switch", { name: "Enable: Ask user" });
  assert.equal(await toggle.getAttribute("aria-checked"), "true");
  await toggle.click();
  await ben.page.waitForFunction(() => document.querySelector('[role="switch"]')?.getAttribute("aria-checked") === "false");
  await ben.page.screenshot({ path: join(SHOTS, "two-servers-b-tools.png"), fullPage: true });

  // Ana opens the agent again on A: both changes are there.
  await ana.page.goto(`${A}/console/#/agents`);
  await ana.page.getByRole("list", { name: "Agents" }).getByRole("link", { name: "shared", exact: true }).click();
  await ana.page.getByRole("heading", { level: 1, name: "shared" }).waitFor();
  assert.equal(await ana.page.getByRole("textbox", { name: "Instructions" }).inputValue(), "Changed on B.");
  await ana.page.getByRole("tab", { name: "Tools" }).click();
  const seen = ana.page.getByRole("switch", { name: "Enable: Ask user" });
  await seen.waitFor();
  assert.equal(await seen.getAttribute("aria-checked"), "false");
  await ana.page.screenshot({ path: join(SHOTS, "two-servers-a-tools.png"), fullPage: true });
});

test("a knowledge base made on A is listed on B, and deleted on B is gone from A", async () => {
  await ana.page.goto(`${A}/console/#/knowledge`);
  await ana.page.getByRole("heading", { level: 1, name: "Knowledge" }).waitFor();
  const form = ana.page.getByRole("form", { name: "New knowledge base" });
  await form.getByRole("textbox", { name: "Name" }).fill("runbook");
  await form.getByRole("button", { name: "Create knowledge base" }).click();
  await ana.page.getByRole("heading", { level: 1, name: "runbook" }).waitFor();

  await ben.page.goto(`${B}/console/#/knowledge`);
  await ben.page.getByRole("heading", { level: 1, name: "Knowledge" }).waitFor();
  await ben.page.getByRole("link", { name: "runbook", exact: true }).click();
  await ben.page.getByRole("heading", { level: 1, name: "runbook" }).waitFor();
  ben.page.once("dialog", (d) => d.accept());
  await ben.page.getByRole("button", { name: "Delete knowledge base" }).click();
  await ben.page.getByRole("heading", { level: 1, name: "Knowledge" }).waitFor();

  await ana.page.goto(`${A}/console/#/knowledge`);
  await ana.page.getByRole("heading", { level: 1, name: "Knowledge" }).waitFor();
  await ana.page.getByRole("form", { name: "New knowledge base" }).waitFor();
  assert.equal(await ana.page.getByRole("link", { name: "runbook", exact: true }).count(), 0);
});
