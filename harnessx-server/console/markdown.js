// A small, safe Markdown renderer for what agents answer and what tools say about themselves:
// headings, lists, fenced code blocks, block quotes, rules, paragraphs; inline code, bold,
// italic and links. It builds DOM nodes: the text only ever reaches the page as text nodes, and
// a link is made only to an http(s) address (anything else stays visible as the text it was).

/** Headings start at this level, below the page's own `h1` and `h2`. */
const HEADING_BASE = 2;

const FENCE = /^\s{0,3}(```+|~~~+)\s*([\w+-]*)\s*$/;
const HEADING = /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
const BULLET = /^\s*[-*+]\s+(.*)$/;
const NUMBERED = /^\s*(\d{1,9})[.)]\s+(.*)$/;
const QUOTE = /^\s{0,3}>\s?(.*)$/;
const RULE = /^\s{0,3}([-*_])(\s*\1){2,}\s*$/;

/**
 * `text` as Markdown, in a `DocumentFragment`.
 *
 * ```js
 * element.append(renderMarkdown("# Done\n\n- **one**\n- `two`"));
 * ```
 */
export function renderMarkdown(text) {
  const out = document.createDocumentFragment();
  const lines = String(text ?? "").replace(/\r\n?/g, "\n").split("\n");
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (line.trim() === "") { i += 1; continue; }
    const fence = FENCE.exec(line);
    if (fence) {
      const body = [];
      i += 1;
      while (i < lines.length && !lines[i].trim().startsWith(fence[1])) body.push(lines[i++]);
      i += 1; // the closing fence (or the end)
      const code = el("code", body.join("\n"));
      if (fence[2]) code.dataset.language = fence[2];
      out.append(el("pre", code));
      continue;
    }
    const heading = HEADING.exec(line);
    if (heading) {
      const level = Math.min(heading[1].length + HEADING_BASE, 6);
      out.append(el(`h${level}`, ...renderInline(heading[2])));
      i += 1;
      continue;
    }
    if (RULE.test(line)) {
      out.append(document.createElement("hr"));
      i += 1;
      continue;
    }
    if (BULLET.test(line) || NUMBERED.test(line)) {
      const ordered = !BULLET.test(line);
      const pattern = ordered ? NUMBERED : BULLET;
      const list = document.createElement(ordered ? "ol" : "ul");
      const first = NUMBERED.exec(line);
      if (ordered && first && first[1] !== "1") list.start = Number(first[1]);
      while (i < lines.length && pattern.test(lines[i])) {
        const m = pattern.exec(lines[i]);
        list.append(el("li", ...renderInline(ordered ? m[2] : m[1])));
        i += 1;
      }
      out.append(list);
      continue;
    }
    if (QUOTE.test(line)) {
      const quoted = [];
      while (i < lines.length && QUOTE.test(lines[i])) quoted.push(QUOTE.exec(lines[i++])[1]);
      const quote = document.createElement("blockquote");
      quote.append(renderMarkdown(quoted.join("\n")));
      out.append(quote);
      continue;
    }
    // A paragraph: lines up to a blank line or another block; single line breaks are kept.
    const para = document.createElement("p");
    let first = true;
    while (i < lines.length && lines[i].trim() !== "" && !startsBlock(lines[i])) {
      if (!first) para.append(document.createElement("br"));
      para.append(...renderInline(lines[i].trim()));
      first = false;
      i += 1;
    }
    out.append(para);
  }
  return out;
}

function startsBlock(line) {
  return FENCE.test(line) || HEADING.test(line) || RULE.test(line) || BULLET.test(line)
    || NUMBERED.test(line) || QUOTE.test(line);
}

// One inline span, the earliest first: code, a link, bold, italic.
const INLINE = new RegExp([
  /`([^`\n]+)`/.source,
  /\[([^\]\n]+)\]\(([^()\s]+)\)/.source,
  /\*\*(\S(?:[^\n]*?\S)?)\*\*/.source,
  /(?<![\w])__(\S(?:[^\n]*?\S)?)__(?![\w])/.source,
  /\*([^*\s](?:[^*\n]*?[^*\s])?)\*/.source,
  /(?<![\w])_([^_\s](?:[^_\n]*?[^_\s])?)_(?![\w])/.source,
].join("|"), "g");

/**
 * The inline Markdown of one line as nodes: `code`, [links](https://…), **bold**, *italic*.
 * Everything else is text.
 */
export function renderInline(text) {
  const nodes = [];
  const source = String(text ?? "");
  let at = 0;
  // A copy per call: the spans inside a link or bold text are read with one of their own.
  const inline = new RegExp(INLINE);
  for (let m = inline.exec(source); m; m = inline.exec(source)) {
    if (m.index > at) nodes.push(document.createTextNode(source.slice(at, m.index)));
    const [whole, code, label, href, bold, bold2, italic, italic2] = m;
    if (code !== undefined) {
      nodes.push(el("code", code));
    } else if (label !== undefined) {
      const url = safeUrl(href);
      if (url) {
        const a = el("a", ...renderInline(label));
        a.href = url;
        a.rel = "noopener noreferrer nofollow";
        a.target = "_blank";
        nodes.push(a);
      } else {
        // Not an http(s) address: shown as written, never followed.
        nodes.push(document.createTextNode(whole));
      }
    } else if (bold !== undefined || bold2 !== undefined) {
      nodes.push(el("strong", ...renderInline(bold ?? bold2)));
    } else {
      nodes.push(el("em", ...renderInline(italic ?? italic2)));
    }
    at = m.index + whole.length;
  }
  if (at < source.length) nodes.push(document.createTextNode(source.slice(at)));
  return nodes;
}

/** `href` when it is an absolute http(s) address, else null. */
export function safeUrl(href) {
  try {
    const url = new URL(href);
    return url.protocol === "http:" || url.protocol === "https:" ? url.href : null;
  } catch {
    return null;
  }
}

function el(tag, ...children) {
  const node = document.createElement(tag);
  for (const child of children) node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  return node;
}
