// @ts-check
// Markdown for model answers, tool output and summaries, safe by construction: the source is
// never handed to an HTML parser. Blocks and inline marks become elements built with DOM calls
// and every piece of text goes in as a text node, so `<script>` or `<img onerror=…>` in a
// model's answer is shown as those characters. Links keep only absolute http(s) URLs and open
// in a new tab with rel="noopener noreferrer"; images are shown as links, never loaded.
//
// Supported: paragraphs (a newline is a line break), ATX headings, fenced code (highlighted,
// an unclosed fence runs to the end so a streaming answer renders as it grows), block quotes,
// nested bullet and numbered lists, GitHub tables, rules, `code`, **bold**, *italic*,
// ~~strike~~, [links](https://…), <https://…> and bare https:// URLs, backslash escapes.

import { copyButton, h } from "./dom.js";
import { highlight } from "./highlight.js";
import { t } from "./i18n.js";

const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([^\s`]*)[^`]*$/;
const HEADING = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;
const RULE = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/;
const QUOTE = /^ {0,3}>[ \t]?(.*)$/;
const ITEM = /^( *)([-*+]|\d{1,9}[.)])([ \t]+|$)(.*)$/;
const TABLE_RULE = /^[ \t]*\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$/;
const ESCAPABLE = /[\\`*_{}[\]()#+\-.!|~<>]/;
const EMPHASIS = [
  ["**", "strong"],
  ["__", "strong"],
  ["~~", "del"],
  ["*", "em"],
  ["_", "em"],
];
const LINK = /\[([^\]\n]*)\]\(\s*<?([^\s<>()]*(?:\([^\s<>()]*\)[^\s<>()]*)*)>?(?:\s+"[^"\n]*")?\s*\)/y;
const ANGLE_LINK = /<(https?:\/\/[^\s<>]+)>/y;
const BARE_URL = /https?:\/\/[^\s<>"'`]+/y;

/** The Markdown as a DocumentFragment of safe elements. */
export function renderMarkdown(source) {
  const fragment = document.createDocumentFragment();
  blocks(String(source).replace(/\r\n?/g, "\n").split("\n"), fragment);
  return fragment;
}

/** An absolute http(s) URL, or null for anything else (javascript:, data:, relative…). */
export function safeUrl(raw) {
  try {
    const url = new URL(raw);
    return url.protocol === "http:" || url.protocol === "https:" ? url.href : null;
  } catch {
    return null;
  }
}

function indentOf(line) {
  return line.length - line.trimStart().length;
}

function isTable(lines, i) {
  return lines[i].includes("|") && i + 1 < lines.length && TABLE_RULE.test(lines[i + 1])
    && lines[i + 1].includes("-");
}

function startsBlock(lines, i) {
  const line = lines[i];
  return FENCE.test(line) || HEADING.test(line) || RULE.test(line) || QUOTE.test(line)
    || ITEM.test(line) || isTable(lines, i);
}

function blocks(lines, parent) {
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    let m;
    if (!line.trim()) {
      i++;
    } else if ((m = FENCE.exec(line))) {
      const fence = m[1];
      const closing = new RegExp(`^ {0,3}${fence[0] === "`" ? "`" : "~"}{${fence.length},}[ \\t]*$`);
      const body = [];
      for (i++; i < lines.length && !closing.test(lines[i]); i++) body.push(lines[i]);
      i++;
      parent.append(codeBlock(body.join("\n"), m[2]));
    } else if ((m = HEADING.exec(line))) {
      parent.append(inline(h(`h${Math.min(m[1].length + 2, 6)}`), m[2] || ""));
      i++;
    } else if (RULE.test(line)) {
      parent.append(h("hr"));
      i++;
    } else if (QUOTE.test(line)) {
      const inner = [];
      for (; i < lines.length && (m = QUOTE.exec(lines[i])); i++) inner.push(m[1]);
      const quote = h("blockquote");
      blocks(inner, quote);
      parent.append(quote);
    } else if (ITEM.test(line)) {
      i = list(lines, i, parent);
    } else if (isTable(lines, i)) {
      i = table(lines, i, parent);
    } else {
      const paragraph = [line.trim()];
      for (i++; i < lines.length && lines[i].trim() && !startsBlock(lines, i); i++) {
        paragraph.push(lines[i].trim());
      }
      parent.append(inline(h("p"), paragraph.join("\n")));
    }
  }
}

function list(lines, i, parent) {
  const first = ITEM.exec(lines[i]);
  const ordered = /\d/.test(first[2]);
  const el = h(ordered ? "ol" : "ul");
  if (ordered && parseInt(first[2], 10) !== 1) el.start = parseInt(first[2], 10);
  const sibling = (line) => {
    const m = ITEM.exec(line);
    return m && /\d/.test(m[2]) === ordered && m[1].length <= first[1].length + 1 ? m : null;
  };
  while (i < lines.length) {
    let next = i;
    while (next < lines.length && !lines[next].trim()) next++;
    const m = next < lines.length ? sibling(lines[next]) : null;
    if (!m) break;
    i = next + 1;
    const indent = m[1].length + m[2].length + Math.max(m[3].length, 1);
    const content = [m[4]];
    while (i < lines.length) {
      const line = lines[i];
      if (!line.trim()) {
        if (i + 1 < lines.length && lines[i + 1].trim() && indentOf(lines[i + 1]) >= indent) {
          content.push("");
          i++;
          continue;
        }
        break;
      }
      if (indentOf(line) >= indent) content.push(line.slice(indent));
      else if (startsBlock(lines, i)) break;
      else content.push(line.trim()); // a lazy continuation of the item's paragraph
      i++;
    }
    const li = h("li");
    blocks(content, li);
    el.append(li);
  }
  parent.append(el);
  return i;
}

function cells(row) {
  return row.trim().replace(/^\|/, "").replace(/\|$/, "").split(/(?<!\\)\|/)
    .map((cell) => cell.trim().replace(/\\\|/g, "|"));
}

function table(lines, i, parent) {
  const head = cells(lines[i]);
  const aligns = cells(lines[i + 1]).map((c) =>
    c.endsWith(":") ? (c.startsWith(":") ? "center" : "right") : c.startsWith(":") ? "left" : null);
  const row = (values, tag) => h("tr", {}, head.map((_, col) => {
    const cell = inline(h(tag), values[col] || "");
    if (aligns[col]) cell.style.textAlign = aligns[col];
    return cell;
  }));
  const body = h("tbody");
  for (i += 2; i < lines.length && lines[i].trim() && lines[i].includes("|"); i++) {
    body.append(row(cells(lines[i]), "td"));
  }
  parent.append(h("div", { class: "table-wrap" }, h("table", {}, h("thead", {}, row(head, "th")), body)));
  return i;
}

function codeBlock(code, lang) {
  const copy = copyButton(t("copy"), t("copyCode"), () => code);
  const codeEl = h("code", { class: lang ? `language-${lang}` : "" });
  codeEl.append(highlight(code, lang));
  return h(
    "div",
    { class: "code-block" },
    h("div", { class: "code-head" }, h("span", {}, lang || t("code")), copy),
    h("pre", {}, codeEl),
  );
}

function emphasis(text, i) {
  for (const [mark, tag] of EMPHASIS) {
    if (!text.startsWith(mark, i)) continue;
    const open = i + mark.length;
    if (open >= text.length || /\s/.test(text[open])) continue;
    if (mark[0] === "_" && i > 0 && /\w/.test(text[i - 1])) continue; // snake_case stays text
    for (let from = open + 1; ;) {
      const close = text.indexOf(mark, from);
      if (close < 0) break;
      from = close + 1;
      if (/\s/.test(text[close - 1])) continue;
      if (mark[0] === "_" && /\w/.test(text[close + mark.length] || "")) continue;
      if (mark === "*" && (text[close + 1] === "*" || text[close - 1] === "*")) continue;
      return { tag, inner: text.slice(open, close), end: close + mark.length };
    }
  }
  return null;
}

function link(text, i) {
  LINK.lastIndex = i;
  const m = LINK.exec(text);
  if (!m) return null;
  const href = safeUrl(m[2]);
  return { label: m[1] || m[2], href, end: LINK.lastIndex };
}

function anchor(href, label) {
  return inline(h("a", { href, target: "_blank", rel: "noopener noreferrer" }), label, true);
}

function bareUrl(text, i) {
  if (i > 0 && /\w/.test(text[i - 1])) return null;
  const re = text[i] === "<" ? ANGLE_LINK : BARE_URL;
  re.lastIndex = i;
  const m = re.exec(text);
  if (!m) return null;
  if (re === ANGLE_LINK) return { url: m[1], end: re.lastIndex };
  let url = m[0].replace(/[.,;:!?]+$/, "");
  if (url.endsWith(")") && !url.includes("(")) url = url.slice(0, -1);
  return { url, end: i + url.length };
}

/** Inline marks of `text`, appended to `parent` (returned); no links inside a link. */
function inline(parent, text, inLink = false) {
  let plain = "";
  const flush = () => {
    if (plain) parent.append(document.createTextNode(plain));
    plain = "";
  };
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === "\\" && ESCAPABLE.test(text[i + 1] || "")) {
      plain += text[i + 1];
      i += 2;
      continue;
    }
    if (c === "\n") {
      flush();
      parent.append(h("br"));
      i++;
      continue;
    }
    if (c === "`") {
      const run = /^`+/.exec(text.slice(i))[0];
      const end = text.indexOf(run, i + run.length);
      if (end > 0) {
        flush();
        parent.append(h("code", {}, text.slice(i + run.length, end)));
        i = end + run.length;
      } else {
        plain += run;
        i += run.length;
      }
      continue;
    }
    if (c === "*" || c === "_" || c === "~") {
      const found = emphasis(text, i);
      if (found) {
        flush();
        parent.append(inline(h(found.tag), found.inner, inLink));
        i = found.end;
        continue;
      }
    }
    if (c === "!" && text[i + 1] === "[" && !inLink) {
      const found = link(text, i + 1);
      if (found) {
        flush();
        const label = t("imageLink", { alt: found.label });
        if (found.href) parent.append(anchor(found.href, label));
        else parent.append(label);
        i = found.end;
        continue;
      }
    }
    if (c === "[" && !inLink) {
      const found = link(text, i);
      if (found) {
        flush();
        if (found.href) parent.append(anchor(found.href, found.label));
        else inline(parent, found.label, true);
        i = found.end;
        continue;
      }
    }
    if (!inLink && (c === "<" || (c === "h" && text.startsWith("http", i)))) {
      const found = bareUrl(text, i);
      const href = found && safeUrl(found.url);
      if (href) {
        flush();
        parent.append(anchor(href, found.url));
        i = found.end;
        continue;
      }
    }
    plain += c;
    i++;
  }
  flush();
  return parent;
}
