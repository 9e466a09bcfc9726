// One run in a conversation, as a timeline built from its events: the person's message, each
// model turn (how long it took, what it called, tokens), each tool call with its arguments,
// result or error and duration (folded), the agent's answers as Markdown, what the run asks
// people — and the run's state, times and a Cancel button while it is going.

import { api } from "./api.js";
import { h, replace, errorBox, announce } from "./dom.js";
import { renderMarkdown } from "./markdown.js";
import { argumentsView, between, durationText, folded, parseArguments, timeView } from "./values.js";
import { askCard, answeredCard } from "./cards.js";

const GOING = new Set(["queued", "running", "waiting_input"]);

export class RunView {
  constructor(run, page) {
    this.run = run;
    this.page = page;
    this.calls = new Map();
    this.cards = new Map();
    this.bubble = null;
    // The time of the last event that was not streamed text: a model turn took from there.
    this.since = run.created_at;
    this.state = h("span", { class: "state" });
    this.updated = h("span", { class: "updated" });
    this.cancelOutcome = h("div", { class: "outcome" });
    this.cancelButton = h("button", { type: "button", class: "danger cancel", "aria-label": `Cancel run ${run.id}` },
      "Cancel run");
    this.cancelButton.addEventListener("click", () => this.cancel());
    this.entries = h("ol", { class: "entries" });
    this.el = h("li", { class: "run", "data-run": run.id },
      h("div", { class: "run-head" },
        h("p", { class: "muted" }, `Run ${run.id} · ${run.agent} · started `, timeView(run.created_at),
          " · ", this.state, this.updated),
        this.cancelButton),
      this.cancelOutcome,
      this.entries);
    this.entries.append(h("li", { class: "msg user" }, h("p", { class: "who" }, "You"),
      h("div", { class: "text" }, run.input)));
    this.setState(run.state, run.updated_at);
  }

  setState(state, at) {
    this.current = state;
    this.state.textContent = state.replace("_", " ");
    this.state.className = `state state-${state}`;
    if (at) replace(this.updated, " · updated ", timeView(at));
    this.cancelButton.hidden = !GOING.has(state);
    if (!GOING.has(state)) {
      // What the run asked and nobody answered is moot once it ended.
      for (const [callId, card] of this.cards) {
        if (card.classList.contains("resolved")) continue;
        replace(card.controls, h("p", { class: "answered", role: "status" },
          `The run was ${state.replace("_", " ")} before this was answered.`));
        replace(card.querySelector(".outcome"));
        card.classList.add("resolved");
        this.page.waiting(callId, false);
      }
    }
  }

  async cancel() {
    replace(this.cancelOutcome);
    this.cancelButton.disabled = true;
    try {
      const now = await api("POST", `/runs/${this.run.id}/cancel`);
      this.setState(now.state, now.updated_at);
      announce(now.state === "cancelled" ? `Run ${this.run.id} cancelled.` : `Run ${this.run.id} is stopping.`);
    } catch (err) {
      replace(this.cancelOutcome, errorBox(err));
    } finally {
      this.cancelButton.disabled = false;
    }
  }

  problem(err) {
    this.entries.append(h("li", {}, errorBox(err)));
  }

  say(text) {
    const body = h("div", { class: "text" }, text);
    const bubble = h("li", { class: "msg assistant" }, h("p", { class: "who" }, this.run.agent), body);
    bubble.body = body;
    this.entries.append(bubble);
    return bubble;
  }

  apply(event) {
    switch (event.type) {
      case "text_delta":
        // Streamed as plain text; shown as Markdown once the turn is complete.
        if (!this.bubble) this.bubble = this.say("");
        this.bubble.body.append(event.text);
        return;
      case "turn_completed":
        this.turn(event);
        break;
      case "tool_call_started":
        this.call(event.call_id, event.name, parseArguments(event.arguments), event.at);
        break;
      case "tool_result":
        this.result(event.result, event.at);
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
        this.answered(event);
        break;
      case "state":
        this.setState(event.state, event.at);
        break;
      case "completed":
        this.setState("completed", event.at);
        break;
      case "failed":
        this.setState("failed", event.at);
        this.entries.append(h("li", { class: "error", role: "alert" }, `The run failed: ${event.error}`));
        break;
      default:
        break;
    }
    if (event.at) this.since = event.at;
  }

  /** A model turn: its answer as Markdown, and a folded line of what the turn was. */
  turn(event) {
    const response = event.response ?? {};
    const content = response.content ?? "";
    if (content && !this.bubble) this.bubble = this.say("");
    if (this.bubble) {
      replace(this.bubble.body, renderMarkdown(content || this.bubble.body.textContent));
      this.bubble.body.classList.add("markdown");
    }
    const took = durationText(between(this.since, event.at));
    const called = (response.tool_calls ?? []).map((c) => c.name);
    const usage = response.usage ?? {};
    const summary = [`Model turn ${event.turn}`, took, called.length ? `called ${called.join(", ")}` : "answered"]
      .filter(Boolean).join(" · ");
    const facts = [];
    if (response.model) facts.push(["Model", response.model]);
    if (usage.input_tokens !== undefined) facts.push(["Tokens in", String(usage.input_tokens)]);
    if (usage.output_tokens !== undefined) facts.push(["Tokens out", String(usage.output_tokens)]);
    if (response.stop_reason) facts.push(["Stopped", String(response.stop_reason).replace(/_/g, " ")]);
    const entry = h("li", { class: "turn" },
      h("details", {},
        h("summary", {}, h("span", { class: "turn-icon", "aria-hidden": "true" }, "◆"), " ", summary),
        h("dl", { class: "facts" }, facts.map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])),
        event.at ? h("p", { class: "muted" }, "Finished at ", timeView(event.at)) : null));
    // The turn's line comes before what it said.
    if (this.bubble) this.bubble.before(entry);
    else this.entries.append(entry);
    this.bubble = null;
  }

  call(callId, name, args, at) {
    let entry = this.calls.get(callId);
    if (entry) return entry;
    const status = h("span", { class: "tool-status" }, "running");
    const took = h("span", { class: "tool-duration" });
    const result = h("div", { class: "tool-result-box", hidden: true });
    entry = h("li", { class: "tool-call" },
      h("details", {},
        h("summary", {}, h("span", { class: "tool-icon", "aria-hidden": "true" }, "⚙"), " Tool ",
          h("code", {}, name), " ", status, took),
        h("h4", { class: "arguments-title" }, "Arguments"),
        argumentsView(args, `Arguments of ${name}`),
        at ? h("p", { class: "muted" }, "Started at ", timeView(at)) : null,
        result));
    Object.assign(entry, { status, took, resultBox: result, startedAt: at });
    this.calls.set(callId, entry);
    this.entries.append(entry);
    return entry;
  }

  result(result, at) {
    const entry = this.calls.get(result.call_id) ?? this.call(result.call_id, result.name, {}, null);
    const failed = result.is_error;
    entry.status.textContent = failed ? "failed" : "done";
    entry.status.className = `tool-status ${failed ? "bad" : "good"}`;
    const ms = between(entry.startedAt, at);
    entry.took.textContent = ms === null ? "" : ` · ${durationText(ms)}`;
    entry.resultBox.hidden = false;
    const kind = failed && result.error_kind ? ` (${String(result.error_kind).replace(/_/g, " ")})` : "";
    replace(entry.resultBox,
      h("h4", { class: failed ? "error-title" : "result-title" }, failed ? `Error${kind}` : "Result"),
      h("div", { class: "tool-result" }, folded(result.content, { block: true })),
      result.truncated ? h("p", { class: "hint" }, "The result was cut to the size limit.") : null);
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
    const card = askCard(this, pending);
    this.cards.set(pending.call_id, card);
    this.entries.append(card);
  }

  answered(event) {
    const card = this.cards.get(event.call_id);
    this.page.waiting(event.call_id, false);
    if (!card) return;
    const hadFocus = card.contains(document.activeElement);
    answeredCard(card, event);
    if (hadFocus) this.page.input.focus();
  }
}
