// A conversation: each run's timeline streamed from its event feed (see `run.js`), questions
// and approvals answered in place, and a message box that is never locked — while a question
// waits, what is sent there is its free-text answer.

import { api, runEvents } from "./api.js";
import { h, replace, pageTitle, errorBox, announce } from "./dom.js";
import { RunView } from "./run.js";

const TERMINAL = new Set(["completed", "failed", "cancelled"]);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export async function conversationPage(main, id) {
  const stop = new AbortController();
  replace(main, h("h1", {}, "Conversation"), h("p", { class: "muted" }, "Loading…"));
  let conversation;
  try {
    conversation = await api("GET", `/conversations/${encodeURIComponent(id)}`);
  } catch (err) {
    replace(main, h("h1", {}, "Conversation"), errorBox(err));
    pageTitle(main, "Conversation");
    return () => stop.abort();
  }
  const transcript = h("ol", { class: "transcript", role: "log", "aria-label": "Transcript" });
  const page = new ConversationView(id, transcript, stop.signal);
  const composer = page.composer();
  replace(main,
    h("p", { class: "crumbs" }, h("a", { href: "#/conversations" }, "Conversations"), " / ", id),
    h("h1", {}, "Conversation"),
    transcript,
    composer);
  pageTitle(main, "Conversation");
  for (const runId of conversation.runs) {
    try {
      page.follow(await api("GET", `/runs/${runId}`));
    } catch (err) {
      transcript.append(h("li", {}, errorBox(err)));
    }
  }
  return () => stop.abort();
}

class ConversationView {
  constructor(id, transcript, signal) {
    this.id = id;
    this.transcript = transcript;
    this.signal = signal;
    this.pending = new Set();
    this.hint = h("p", { class: "hint", id: "message-hint" }, "Send a message to the agent.");
    this.input = h("textarea", { id: "message", name: "message", rows: "2", required: true, "aria-describedby": "message-hint" });
  }

  composer() {
    const problem = h("div", { class: "outcome" });
    const form = h("form", { class: "composer card", "aria-label": "Send a message" },
      h("label", { for: "message" }, "Message"), this.hint, this.input, problem,
      h("button", { type: "submit", class: "primary" }, "Send"));
    this.input.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); form.requestSubmit(); }
    });
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      replace(problem);
      const text = this.input.value;
      if (!text.trim()) return;
      try {
        const outcome = await api("POST", `/conversations/${encodeURIComponent(this.id)}/messages`, { text });
        this.input.value = "";
        if (outcome.answered) announce("Sent as your answer to the waiting question.");
        else { this.follow(outcome.run); announce("Message sent."); }
      } catch (err) {
        replace(problem, errorBox(err));
      }
    });
    return form;
  }

  /** A question is waiting (or no longer is): say so beside the message box. */
  waiting(callId, on) {
    if (on) this.pending.add(callId); else this.pending.delete(callId);
    this.hint.textContent = this.pending.size
      ? "A question is waiting: what you send here answers it in your own words."
      : "Send a message to the agent.";
  }

  follow(run) {
    const view = new RunView(run, this);
    this.transcript.append(view.el);
    (async () => {
      let after = 0;
      for (;;) {
        try {
          for await (const frame of runEvents(run.id, after, this.signal)) {
            if (frame.seq !== null && !Number.isNaN(frame.seq)) after = frame.seq;
            view.apply(frame.event);
          }
        } catch (err) {
          if (this.signal.aborted) return;
          view.problem(err);
          if (err.status === 401 || err.status === 404) return;
        }
        if (this.signal.aborted) return;
        // The feed ends when the run ends; otherwise it broke: look, then resume after `after`.
        const now = await api("GET", `/runs/${run.id}`).catch(() => null);
        if (now && TERMINAL.has(now.state)) { view.setState(now.state, now.updated_at); return; }
        await sleep(1000);
      }
    })();
  }
}
