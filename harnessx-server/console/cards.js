// What a run asks a person, as cards in its timeline: a question (options to click, or the
// message box), an approval (the call's arguments first, readable and editable, then what the
// tool does), a recovery question; and, once answered, who answered what and when.

import { h, replace, announce } from "./dom.js";
import { renderMarkdown } from "./markdown.js";
import { argumentsView, timeView } from "./values.js";

const safeId = (text) => text.replace(/[^A-Za-z0-9_-]/g, "_");

/** The card for `pending` (a question, an approval or a recovery question) of `run`. */
export function askCard(run, pending) {
  if (pending.kind === "question") return questionCard(run, pending);
  if (pending.kind === "approval") return approvalCard(run, pending);
  return recoveryCard(run, pending);
}

function questionCard(run, pending) {
  const form = pending.form;
  const titleId = safeId(`q-${run.run.id}-${pending.call_id}`);
  const card = h("li", { class: "ask card", role: "group", "aria-labelledby": titleId });
  const controls = h("div", { class: "controls" });
  const questions = form.form === "simple"
    ? [{ header: "Question", question: form.question, options: (form.choices ?? []).map((label) => ({ label })), multi_select: false }]
    : form.questions;
  card.append(h("p", { class: "ask-kind", id: titleId }, `${run.run.agent} asks`));
  const send = (answers) => run.post("/answer", { answers }, card);
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
  card.kind = "question";
  run.page.waiting(pending.call_id, true);
  announce(`${run.run.agent} asks: ${questions.map((q) => q.question).join(" ")}`);
  return card;
}

/** Whether two JSON values are the same. */
function same(a, b) {
  return JSON.stringify(a) === JSON.stringify(b);
}

/**
 * An approval: the arguments first, readable; then what the tool does. "Edit arguments" opens
 * them as JSON: an allow then sends the edited arguments, which the server checks against the
 * tool's schema (its refusal, naming the field, shows in the card).
 */
function approvalCard(run, pending) {
  const req = pending;
  const base = safeId(`a-${run.run.id}-${pending.call_id}`);
  const titleId = `${base}-title`;
  const card = h("li", { class: "ask approval card", role: "group", "aria-labelledby": titleId });
  const outcome = h("div", { class: "outcome" });
  const editorId = `${base}-edit`;
  const editor = h("textarea", { id: editorId, class: "json-editor", rows: "8", spellcheck: "false",
    "aria-describedby": `${editorId}-hint` });
  editor.value = JSON.stringify(req.arguments, null, 2);
  const editing = h("div", { class: "edit-arguments", hidden: true },
    h("label", { for: editorId }, "Arguments (JSON)"),
    h("p", { class: "hint", id: `${editorId}-hint` },
      "Allowing runs the call with these arguments; the server checks them against the tool's schema first."),
    editor);
  const edit = h("button", { type: "button", class: "choice", "aria-expanded": "false", "aria-controls": editorId },
    "Edit arguments");
  edit.addEventListener("click", () => {
    const open = editing.hidden;
    editing.hidden = !open;
    // Closed again, the model's arguments stand.
    edit.setAttribute("aria-expanded", String(open));
    if (open) editor.focus();
    else editor.value = JSON.stringify(req.arguments, null, 2);
  });
  const decide = (decision) => {
    const body = { decision };
    if (!editing.hidden && decision !== "deny") {
      let edited;
      try {
        edited = JSON.parse(editor.value);
      } catch (err) {
        replace(outcome, h("p", { class: "error", role: "alert" }, `Arguments: not valid JSON (${err.message}).`));
        editor.focus();
        return;
      }
      if (!same(edited, req.arguments)) body.arguments = edited;
    }
    run.post("/approval", body, card);
  };
  const about = req.description
    ? h("details", { class: "about-tool" },
      h("summary", {}, "What ", h("code", {}, req.tool_name), " does"),
      h("div", { class: "markdown" }, renderMarkdown(req.description)))
    : null;
  const controls = h("div", { class: "controls" },
    h("h4", { class: "arguments-title" }, "Arguments"),
    argumentsView(req.arguments, `Arguments of ${req.tool_name}`),
    about,
    editing,
    h("div", { class: "options", role: "group", "aria-label": "Decision" },
      h("button", { type: "button", class: "choice", onclick: () => decide("allow_once") }, "Allow once"),
      h("button", { type: "button", class: "choice", onclick: () => decide("allow_for_conversation") }, "Allow for this conversation"),
      h("button", { type: "button", class: "choice deny", onclick: () => decide("deny") }, "Deny"),
      edit));
  card.append(
    h("h3", { id: titleId, class: "ask-header" }, "Approval needed: run ", h("code", {}, req.tool_name), "?"),
    controls, outcome);
  card.controls = controls;
  card.kind = "approval";
  card.request = req;
  announce(`${run.run.agent} asks to run ${req.tool_name}.`);
  return card;
}

function recoveryCard(run, pending) {
  const titleId = safeId(`r-${run.run.id}-${pending.call_id}`);
  const card = h("li", { class: "ask recovery card", role: "group", "aria-labelledby": titleId });
  const choose = (choice) => run.post("/answer", { recovery: choice }, card);
  const why = pending.reason === "timed_out" ? "timed out" : "was interrupted";
  const controls = h("div", { class: "controls" },
    h("p", {}, "The call of ", h("code", {}, pending.tool_name), ` ${why}; only you know whether it took effect.`),
    h("h4", { class: "arguments-title" }, "Arguments"),
    argumentsView(pending.arguments, `Arguments of ${pending.tool_name}`),
    h("div", { class: "options", role: "group", "aria-label": "Recovery" },
      h("button", { type: "button", class: "choice", onclick: () => choose({ choice: "took_effect" }) }, "It took effect"),
      h("button", { type: "button", class: "choice", onclick: () => choose({ choice: "run_again" }) }, "Run it again"),
      h("button", { type: "button", class: "choice", onclick: () => choose({ choice: "skip", note: "skipped from the console" }) }, "Skip it")));
  card.append(h("h3", { id: titleId, class: "ask-header" }, "Did it take effect?"), controls, h("div", { class: "outcome" }));
  card.controls = controls;
  card.kind = "recovery";
  return card;
}

const DECIDED = {
  allow_once: ["allowed once", "Allowed once."],
  allow_session: ["allowed for this conversation", "Allowed for this conversation."],
  deny: ["denied", "Denied."],
};

/**
 * Shows on `card` what answered it (`event`: the run's `answered` event, with `by` and `at`):
 * the choice, who made it and when; an approval names its tool and the arguments it ran with
 * when a person edited them.
 */
export function answeredCard(card, event) {
  const reply = event.reply;
  const who = event.by ? ["by ", h("span", { class: "actor" }, event.by)] : [];
  const when = event.at ? [" at ", timeView(event.at)] : [];
  const signed = who.length || when.length ? h("p", { class: "decided-by muted" }, ...who, ...when) : null;
  if (card.kind === "approval") {
    const [word, sentence] = DECIDED[reply.decision] ?? [reply.decision, `Decided: ${reply.decision}.`];
    const header = card.querySelector(".ask-header");
    replace(header, h("code", {}, card.request.tool_name), `: ${word}`);
    const edited = reply.arguments !== undefined && reply.arguments !== null;
    replace(card.controls,
      h("p", { class: "answered", role: "status" }, sentence, edited ? " It ran with edited arguments:" : ""),
      edited ? argumentsView(reply.arguments, `Edited arguments of ${card.request.tool_name}`) : null,
      signed);
    card.classList.add("resolved");
    return;
  }
  let text;
  if (reply.type === "expired") {
    const n = reply.window_seconds;
    text = `This question expired after ${n} second${n === 1 ? "" : "s"} without an answer; the agent went on without it.`;
    card.classList.add("expired");
  } else if (reply.type === "recovery") {
    text = { took_effect: "Marked as done.", run_again: "Running it again.", skip: "Skipped." }[reply.choice?.choice] ?? "Answered.";
  } else if (reply.reply?.type === "free_text") {
    text = `Answered in your words: “${reply.reply.text}”`;
  } else {
    const parts = (reply.reply?.answers ?? []).map((a) => [...a.selected, ...(a.text ? [a.text] : [])].join(", "));
    text = `Answered: ${parts.join("; ")}`;
  }
  const header = card.controls.querySelector(".ask-header");
  const question = card.controls.querySelector(".ask-text");
  replace(card.controls, header ? h("h3", { class: "ask-header" }, header.textContent) : null,
    question ? h("p", { class: "ask-text" }, question.textContent) : null,
    h("p", { class: "answered", role: "status" }, text),
    reply.type === "expired" ? null : signed);
  card.classList.add("resolved");
}
