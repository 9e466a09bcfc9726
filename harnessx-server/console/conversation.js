// A conversation: each run's transcript streamed from its event feed (tool calls compact),
// questions and approvals answered in place, and a message box that is never locked — while a
// question waits, what is sent there is its free-text answer.

import { api, runEvents } from "./api.js";
import { h, replace, pageTitle, errorBox, announce } from "./dom.js";

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
        if (now && TERMINAL.has(now.state)) { view.setState(now.state); return; }
        await sleep(1000);
      }
    })();
  }
}

class RunView {
  constructor(run, page) {
    this.run = run;
    this.page = page;
    this.calls = new Map();
    this.cards = new Map();
    this.bubble = null;
    this.state = h("span", { class: "state" });
    this.entries = h("ol", { class: "entries" });
    this.el = h("li", { class: "run", "data-run": run.id },
      h("p", { class: "run-head muted" }, `Run ${run.id} · ${run.agent} · `, this.state),
      this.entries);
    this.entries.append(h("li", { class: "msg user" }, h("p", { class: "who" }, "You"), h("p", { class: "text" }, run.input)));
    this.setState(run.state);
  }

  setState(state) {
    this.state.textContent = state.replace("_", " ");
    this.state.className = `state state-${state}`;
  }

  problem(err) {
    this.entries.append(h("li", {}, errorBox(err)));
  }

  say(text) {
    const bubble = h("li", { class: "msg assistant" }, h("p", { class: "who" }, this.run.agent), h("p", { class: "text" }, text));
    this.entries.append(bubble);
    return bubble;
  }

  apply(event) {
    switch (event.type) {
      case "text_delta":
        if (!this.bubble) this.bubble = this.say("");
        this.bubble.querySelector(".text").textContent += event.text;
        break;
      case "turn_completed": {
        const content = event.response?.content ?? "";
        if (this.bubble) this.bubble.querySelector(".text").textContent = content;
        else if (content) this.say(content);
        this.bubble = null;
        break;
      }
      case "tool_call_started":
        this.call(event.call_id, event.name, event.arguments);
        break;
      case "tool_result":
        this.result(event.result);
        break;
      case "todos_updated":
        this.entries.append(h("li", { class: "todos" }, h("p", { class: "muted" }, "Plan"),
          h("ul", {}, event.todos.map((t) => h("li", {}, `${t.status === "completed" ? "✓" : "•"} ${t.content ?? t.text ?? ""}`)))));
        break;
      case "question":
      case "approval":
      case "recovery":
        this.ask(event.pending);
        break;
      case "answered":
        this.answered(event.call_id, event.reply);
        break;
      case "state":
        this.setState(event.state);
        break;
      case "completed":
        this.setState("completed");
        break;
      case "failed":
        this.setState("failed");
        this.entries.append(h("li", { class: "error", role: "alert" }, `The run failed: ${event.error}`));
        break;
      default:
        break;
    }
  }

  call(callId, name, args) {
    let entry = this.calls.get(callId);
    if (entry) return entry;
    let pretty = args;
    try { pretty = JSON.stringify(JSON.parse(args), null, 2); } catch { /* keep the raw text */ }
    const status = h("span", { class: "tool-status" }, "running");
    const result = h("pre", { class: "tool-result", hidden: true });
    entry = h("li", { class: "tool-call" },
      h("details", {},
        h("summary", {}, h("span", { class: "tool-icon", "aria-hidden": "true" }, "⚙"), " Tool ",
          h("code", {}, name), " ", status),
        h("p", { class: "muted" }, "Arguments"), h("pre", {}, pretty),
        result));
    entry.status = status;
    entry.resultEl = result;
    this.calls.set(callId, entry);
    this.entries.append(entry);
    return entry;
  }

  result(result) {
    const entry = this.calls.get(result.call_id) ?? this.call(result.call_id, result.name, "{}");
    entry.status.textContent = result.is_error ? "failed" : "done";
    entry.status.className = `tool-status ${result.is_error ? "bad" : "good"}`;
    entry.resultEl.hidden = false;
    entry.resultEl.textContent = result.content;
  }

  post(path, body, card) {
    const problem = card.querySelector(".outcome");
    replace(problem);
    return api("POST", `/runs/${this.run.id}${path}`, body).catch((err) => {
      replace(problem, errorBox(err));
    });
  }

  ask(pending) {
    if (this.cards.has(pending.call_id)) return;
    let card;
    if (pending.kind === "question") card = this.questionCard(pending);
    else if (pending.kind === "approval") card = this.approvalCard(pending);
    else card = this.recoveryCard(pending);
    this.cards.set(pending.call_id, card);
    this.entries.append(card);
  }

  questionCard(pending) {
    const form = pending.form;
    const titleId = `q-${this.run.id}-${pending.call_id}`.replace(/[^A-Za-z0-9_-]/g, "_");
    const card = h("li", { class: "ask card", role: "group", "aria-labelledby": titleId });
    const controls = h("div", { class: "controls" });
    const questions = form.form === "simple"
      ? [{ header: "Question", question: form.question, options: (form.choices ?? []).map((label) => ({ label })), multi_select: false }]
      : form.questions;
    card.append(h("p", { class: "ask-kind", id: titleId }, `${this.run.agent} asks`));
    const send = (answers) => this.post("/answer", { answers }, card);
    if (questions.length === 1 && !questions[0].multi_select) {
      const q = questions[0];
      controls.append(h("h3", { class: "ask-header" }, q.header), h("p", { class: "ask-text" }, q.question));
      if (q.options.length) {
        controls.append(h("div", { class: "options", role: "group", "aria-label": `Options: ${q.header}` },
          q.options.map((o, i) => {
            const descId = o.description ? `${titleId}-d${i}` : undefined;
            return h("div", { class: "option" },
              h("button", { type: "button", class: "choice", "aria-describedby": descId,
                onclick: () => send([{ selected: [o.label] }]) }, o.label),
              o.description ? h("p", { class: "hint", id: descId }, o.description) : null);
          })));
      }
    } else {
      const fieldsets = questions.map((q, qi) => h("fieldset", {},
        h("legend", {}, h("span", { class: "ask-header" }, q.header)),
        h("p", { class: "ask-text" }, q.question),
        q.multi_select ? h("p", { class: "hint" }, "Choose one or more.") : null,
        q.options.map((o, oi) => {
          const id = `${titleId}-${qi}-${oi}`;
          return h("div", { class: "option" },
            h("input", { type: q.multi_select ? "checkbox" : "radio", id, name: `${titleId}-${qi}`, value: o.label }),
            h("label", { for: id }, o.label),
            o.description ? h("p", { class: "hint" }, o.description) : null);
        })));
      const chooser = h("form", {}, fieldsets, h("button", { type: "submit", class: "primary" }, "Send answer"));
      chooser.addEventListener("submit", (e) => {
        e.preventDefault();
        const answers = questions.map((_, qi) => ({
          selected: [...chooser.querySelectorAll(`input[name="${titleId}-${qi}"]:checked`)].map((i) => i.value),
        }));
        const last = answers.findLastIndex((a) => a.selected.length);
        send(answers.slice(0, Math.max(last + 1, 1)));
      });
      controls.append(chooser);
    }
    controls.append(h("p", { class: "hint" }, "Or type your own answer in the message box below."));
    card.append(controls, h("div", { class: "outcome" }));
    card.controls = controls;
    this.page.waiting(pending.call_id, true);
    announce(`${this.run.agent} asks: ${questions.map((q) => q.question).join(" ")}`);
    return card;
  }

  approvalCard(pending) {
    const req = pending;
    const titleId = `a-${this.run.id}-${pending.call_id}`.replace(/[^A-Za-z0-9_-]/g, "_");
    const card = h("li", { class: "ask approval card", role: "group", "aria-labelledby": titleId });
    const decide = (decision) => this.post("/approval", { decision }, card);
    const controls = h("div", { class: "controls" },
      h("p", {}, "Run ", h("code", {}, req.tool_name), "?"),
      req.description ? h("p", { class: "hint" }, req.description) : null,
      h("details", {}, h("summary", {}, "Arguments"), h("pre", {}, JSON.stringify(req.arguments, null, 2))),
      h("div", { class: "options", role: "group", "aria-label": "Decision" },
        h("button", { type: "button", class: "choice", onclick: () => decide("allow_once") }, "Allow once"),
        h("button", { type: "button", class: "choice", onclick: () => decide("allow_for_conversation") }, "Allow for this conversation"),
        h("button", { type: "button", class: "choice deny", onclick: () => decide("deny") }, "Deny")));
    card.append(h("h3", { id: titleId, class: "ask-header" }, "Approval needed"), controls, h("div", { class: "outcome" }));
    card.controls = controls;
    announce(`${this.run.agent} asks to run ${req.tool_name}.`);
    return card;
  }

  recoveryCard(pending) {
    const titleId = `r-${this.run.id}-${pending.call_id}`.replace(/[^A-Za-z0-9_-]/g, "_");
    const card = h("li", { class: "ask recovery card", role: "group", "aria-labelledby": titleId });
    const choose = (choice) => this.post("/answer", { recovery: choice }, card);
    const why = pending.reason === "timed_out" ? "timed out" : "was interrupted";
    const controls = h("div", { class: "controls" },
      h("p", {}, "The call of ", h("code", {}, pending.tool_name), ` ${why}; only you know whether it took effect.`),
      h("details", {}, h("summary", {}, "Arguments"), h("pre", {}, JSON.stringify(pending.arguments, null, 2))),
      h("div", { class: "options", role: "group", "aria-label": "Recovery" },
        h("button", { type: "button", class: "choice", onclick: () => choose({ choice: "took_effect" }) }, "It took effect"),
        h("button", { type: "button", class: "choice", onclick: () => choose({ choice: "run_again" }) }, "Run it again"),
        h("button", { type: "button", class: "choice", onclick: () => choose({ choice: "skip", note: "skipped from the console" }) }, "Skip it")));
    card.append(h("h3", { id: titleId, class: "ask-header" }, "Did it take effect?"), controls, h("div", { class: "outcome" }));
    card.controls = controls;
    return card;
  }

  answered(callId, reply) {
    const card = this.cards.get(callId);
    this.page.waiting(callId, false);
    if (!card) return;
    const hadFocus = card.contains(document.activeElement);
    let text;
    if (reply.type === "expired") {
      const n = reply.window_seconds;
      text = `This question expired after ${n} second${n === 1 ? "" : "s"} without an answer; the agent went on without it.`;
      card.classList.add("expired");
    } else if (reply.type === "decision") {
      text = { allow_once: "Allowed once.", allow_session: "Allowed for this conversation.", deny: "Denied." }[reply.decision] ?? `Decided: ${reply.decision}.`;
    } else if (reply.type === "recovery") {
      text = { took_effect: "Marked as done.", run_again: "Running it again.", skip: "Skipped." }[reply.choice?.choice] ?? "Answered.";
    } else if (reply.reply?.type === "free_text") {
      text = `Answered in your words: “${reply.reply.text}”`;
    } else {
      const parts = (reply.reply?.answers ?? []).map((a) => [...a.selected, ...(a.text ? [a.text] : [])].join(", "));
      text = `Answered: ${parts.join("; ")}`;
    }
    const note = h("p", { class: "answered", role: "status" }, text);
    const header = card.controls.querySelector(".ask-header");
    const question = card.controls.querySelector(".ask-text");
    replace(card.controls, header ? h("h3", { class: "ask-header" }, header.textContent) : null,
      question ? h("p", { class: "ask-text" }, question.textContent) : null, note);
    card.classList.add("resolved");
    if (hadFocus) this.page.input.focus();
  }
}
