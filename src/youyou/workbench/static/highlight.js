// @ts-check
// A small keyword highlighter for code blocks: comments, strings, numbers and keywords become
// <span class="tok-…"> around text nodes. It colours; it does not parse.

const JS = `await async break case catch class const continue debugger default delete do else enum
  export extends false finally for from function if implements import in instanceof interface let
  new null of private protected public readonly return static super switch this throw true try
  type typeof undefined var void while with yield`;
const PYTHON = `False None True and as assert async await break class continue def del elif else
  except finally for from global if import in is lambda match case nonlocal not or pass raise
  return self try while with yield`;
const SHELL = `if then else elif fi for while until do done case esac in function return export
  local readonly set unset echo exit cd sudo source alias trap shift`;
const GO = `break case chan const continue default defer else fallthrough for func go goto if
  import interface map package range return select struct switch type var nil true false`;
const RUST = `as async await break const continue crate else enum extern false fn for if impl in
  let loop match mod move mut pub ref return self Self static struct super trait true type unsafe
  use where while dyn`;
const C_LIKE = `auto break case catch char class const continue default delete do double else enum
  extends final finally float for goto if implements import int long namespace new null package
  private protected public return short signed sizeof static struct switch template this throw
  true false try typedef union unsigned using void volatile while`;
const SQL = `select from where and or not insert into values update set delete create table index
  drop alter add column join left right inner outer full cross on group by order having limit
  offset as distinct null is in like between case when then else end union all exists primary
  key foreign references default with returning explain analyze begin commit rollback`;
const DATA = "true false null yes no on off";

const LANGUAGES = {
  js: { words: JS, comments: ["//", "/*"], backtick: true },
  python: { words: PYTHON, comments: ["#"] },
  shell: { words: SHELL, comments: ["#"], backtick: true },
  go: { words: GO, comments: ["//", "/*"], backtick: true },
  rust: { words: RUST, comments: ["//", "/*"] },
  c: { words: C_LIKE, comments: ["//", "/*"] },
  sql: { words: SQL, comments: ["--", "/*"], anyCase: true },
  data: { words: DATA, comments: ["#"] },
  json: { words: DATA, comments: [] },
};
const ALIASES = {
  javascript: "js", jsx: "js", mjs: "js", ts: "js", tsx: "js", typescript: "js",
  py: "python", python3: "python",
  sh: "shell", bash: "shell", zsh: "shell", console: "shell", shellsession: "shell",
  golang: "go", rs: "rust",
  cpp: "c", "c++": "c", h: "c", java: "c", kotlin: "c", cs: "c", csharp: "c",
  postgres: "sql", postgresql: "sql", mysql: "sql", sqlite: "sql",
  yaml: "data", yml: "data", toml: "data", ini: "data", conf: "data", properties: "data",
};
const UNKNOWN = {
  words: `${JS} ${PYTHON} ${SHELL}`,
  comments: ["//", "/*", "#"],
  backtick: true,
};

const COMMENT_PATTERNS = {
  "//": String.raw`\/\/[^\n]*`,
  "#": String.raw`#[^\n]*`,
  "--": String.raw`--[^\n]*`,
  "/*": String.raw`\/\*[\s\S]*?(?:\*\/|$)`,
};
const STRING = String.raw`"(?:[^"\\\n]|\\.)*"?|'(?:[^'\\\n]|\\.)*'?`;
const NUMBER = String.raw`\b(?:0[xX][\da-fA-F]+|\d[\d_]*(?:\.\d+)?(?:[eE][+-]?\d+)?)\b`;
const WORD = String.raw`[A-Za-z_$][\w$]*`;

const compiled = new Map();

function grammar(lang) {
  const key = ALIASES[lang] || lang;
  if (!compiled.has(key)) {
    const spec = LANGUAGES[key] || UNKNOWN;
    const comments = spec.comments.map((c) => COMMENT_PATTERNS[c]).join("|") || "(?!)";
    const strings = spec.backtick ? `${STRING}|\`[^\`]*\`?` : STRING;
    const words = spec.words.split(/\s+/).filter(Boolean);
    compiled.set(key, {
      pattern: new RegExp(`(${comments})|(${strings})|(${NUMBER})|(${WORD})`, "g"),
      keywords: new Set(spec.anyCase ? words.map((w) => w.toLowerCase()) : words),
      anyCase: Boolean(spec.anyCase),
    });
  }
  return compiled.get(key);
}

function span(kind, text) {
  const el = document.createElement("span");
  el.className = `tok-${kind}`;
  el.textContent = text;
  return el;
}

/** The code as text nodes and token spans, for a <code> element. */
export function highlight(code, lang = "") {
  const { pattern, keywords, anyCase } = grammar(lang.toLowerCase());
  const fragment = document.createDocumentFragment();
  let last = 0;
  for (const match of code.matchAll(pattern)) {
    if (match.index > last) fragment.append(code.slice(last, match.index));
    const [text, comment, string, number] = match;
    if (comment) fragment.append(span("com", text));
    else if (string) fragment.append(span("str", text));
    else if (number) fragment.append(span("num", text));
    else if (keywords.has(anyCase ? text.toLowerCase() : text)) fragment.append(span("kw", text));
    else fragment.append(text);
    last = match.index + text.length;
  }
  if (last < code.length) fragment.append(code.slice(last));
  return fragment;
}
