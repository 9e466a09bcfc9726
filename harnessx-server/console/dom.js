// Small DOM helpers. Data from the server only ever reaches the page as text (textContent),
// never as markup.

/**
 * Builds an element: `h("button", { type: "button", onclick: f, "aria-label": "Close" }, "x")`.
 * Attributes named `on…` become listeners, `class` sets the class, `hidden`/`disabled` are
 * booleans, anything else is set as an attribute. Children are nodes or strings (as text).
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on") && typeof value === "function") {
      el.addEventListener(name.slice(2), value);
    } else if (name === "class") {
      el.className = value;
    } else if (value === true) {
      el.setAttribute(name, "");
    } else {
      el.setAttribute(name, String(value));
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Replaces the children of `el`. */
export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** Says `text` to screen-reader users through the page's polite status region. */
export function announce(text) {
  const status = document.getElementById("status");
  if (!status) return;
  status.textContent = "";
  // A fresh text node after a tick makes repeated messages heard again.
  setTimeout(() => { status.textContent = text; }, 30);
}

/** An error box (role="alert") for a failed call. */
export function errorBox(error) {
  return h("p", { class: "error", role: "alert" }, error?.message ?? String(error));
}

/** Sets the document title and moves focus to the page's main heading. */
export function pageTitle(main, title) {
  document.title = `${title} — harnessx console`;
  const heading = main.querySelector("h1");
  if (heading) {
    heading.setAttribute("tabindex", "-1");
    heading.focus({ preventScroll: false });
  }
}
