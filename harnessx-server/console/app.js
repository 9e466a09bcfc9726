// The console: a hash router over a few pages. Nothing but the sign-in page renders until this
// tab holds an API key, and every page gets its data from the /v2 API with that key.

import { apiKey, onUnauthorized, signOut } from "./api.js";
import { replace, errorBox } from "./dom.js";
import { signInPage } from "./signin.js";
import { agentsPage } from "./agents.js";
import { agentPage } from "./agent.js";
import { conversationsPage } from "./conversations.js";
import { conversationPage } from "./conversation.js";
import { connectorsPage } from "./connectors.js";
import { knowledgePage, knowledgeBasePage } from "./knowledge.js";
import { webhooksPage } from "./webhooks.js";

const main = document.getElementById("main");
const nav = document.getElementById("nav");
let leave = () => {};
let signingIn = false;

/**
 * The page for a hash: `#/agents`, `#/agents/{id}`, `#/agents/{id}/tools`, ... Each page
 * renders into a view of its own, so a page still loading when the person moves on writes into
 * a view no longer shown instead of over the next page.
 */
function route(hash) {
  const path = hash.replace(/^#\/?/, "").split("?")[0];
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  const query = new URLSearchParams(hash.split("?")[1] ?? "");
  if (parts[0] === "agents" && parts.length === 1) return (view) => agentsPage(view);
  if (parts[0] === "agents" && parts.length >= 2) return (view) => agentPage(view, parts[1], parts[2] ?? "settings");
  if (parts[0] === "conversations" && parts.length === 1) return (view) => conversationsPage(view, query);
  if (parts[0] === "conversations" && parts.length >= 2) return (view) => conversationPage(view, parts[1]);
  if (parts[0] === "connectors" && parts.length === 1) return (view) => connectorsPage(view, query);
  if (parts[0] === "knowledge" && parts.length === 1) return (view) => knowledgePage(view);
  if (parts[0] === "knowledge" && parts.length >= 2) return (view) => knowledgeBasePage(view, parts[1]);
  if (parts[0] === "webhooks" && parts.length === 1) return (view) => webhooksPage(view);
  return null;
}

async function render() {
  leave();
  leave = () => {};
  signingIn = !apiKey();
  if (signingIn) {
    nav.hidden = true;
    const target = location.hash.startsWith("#/sign-in") ? "#/agents" : location.hash || "#/agents";
    signInPage(main, () => {
      location.hash = target;
      if (location.hash === target) render();
    });
    return;
  }
  nav.hidden = false;
  for (const link of nav.querySelectorAll("a")) {
    const here = location.hash.startsWith(link.getAttribute("href"));
    if (here) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  const page = route(location.hash);
  if (!page) {
    location.replace("#/agents");
    return;
  }
  const view = document.createElement("div");
  replace(main, view);
  const left = (await page(view)) ?? (() => {});
  // Moved on meanwhile: this page's view is gone; let it go at once.
  if (view.isConnected) leave = left;
  else left();
}

// A refused key (the server restarted with another one, or the key was withdrawn) is forgotten
// and the sign-in form comes back at once, saying why; signing in again returns to the page the
// person was on. On the sign-in form itself the form shows the refusal.
onUnauthorized(() => {
  signOut();
  if (signingIn) return;
  render();
  const problem = document.getElementById("sign-in-problem");
  if (problem) {
    replace(problem, errorBox("The server no longer accepts the key this tab signed in with "
      + "(it may have restarted with another key). Sign in with its API key again."));
  }
});
document.getElementById("sign-out").addEventListener("click", () => {
  signOut();
  location.hash = "#/sign-in";
  render();
});
// A nav link to the page already shown loads it again (the address does not change, so no
// hashchange comes): the way to see what others changed meanwhile.
nav.addEventListener("click", (e) => {
  const link = e.target.closest("a");
  if (link && link.getAttribute("href") === location.hash) render();
});
window.addEventListener("hashchange", render);
render();
